//! How figures read in the tables of summary.md: one decimal, ratios, a rate with its
//! interval, a median's interval, failed activations, and a row of dashes under a header.

use super::cells::Cell;

/// One decimal, or a dash.
pub fn opt(v: Option<f64>) -> String {
    v.map_or("–".to_owned(), |v| format!("{v:.1}"))
}

/// Milliseconds with three decimals (/init times go down to tenths of a millisecond).
pub fn opt3(v: Option<f64>) -> String {
    v.map_or("–".to_owned(), |v| format!("{v:.3}"))
}

/// `a / b` with two decimals, or a dash when either is missing or `b` is not positive.
pub fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}", a / b),
        _ => "–".to_owned(),
    }
}

/// `rate ± half-width` (the rate alone with one window).
pub fn rate_ci(c: &Cell) -> String {
    match (c.rate, c.rate_ci95) {
        (Some(rate), Some(half)) => format!("{rate:.1} ± {half:.1}"),
        (Some(rate), None) => format!("{rate:.1}"),
        _ => "–".to_owned(),
    }
}

/// ` [low–high]`: the 95 % interval of the median latency, when there are samples enough.
pub fn median_ci(c: &Cell) -> String {
    c.p50_ci95_ms
        .map_or(String::new(), |(lo, hi)| format!(" [{lo:.1}–{hi:.1}]"))
}

/// ` (n failed)` when activations failed.
pub fn failed(c: &Cell) -> String {
    if c.errors > 0 {
        format!(" ({} failed)", c.errors)
    } else {
        String::new()
    }
}
