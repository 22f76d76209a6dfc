//! Experiment 12's section of summary.md: per platform and sizing the pool, every probe in
//! order, the bracket of the sustainable rate, and the ratio to Docker's of the same sizing
//! with the bounds both brackets allow.

use std::fmt::Write as _;

use super::{CapacityRow, passes};

/// Experiment 12's section: per platform and sizing the pool, every probe in order, the
/// bracket of the sustainable rate, and the ratio to Docker's of the same sizing with the
/// bounds both brackets allow.
pub fn markdown(rows: &[CapacityRow], p99_target_ms: f64) -> String {
    let mut md = String::new();
    let _ = writeln!(
        md,
        "\n## 12. Capacity in 1 GiB of user memory (the realistic workload through the pool): the sustainable arrival rate, searched\n"
    );
    let _ = writeln!(
        md,
        "Sizing `reservation`: every container reserves the action's 256 MB, as OpenWhisk's invoker does, so every platform gets the same slots; `measured`: every platform's container takes its own measured memory per warm container of `hash`, Docker's included. A rate passes when no activation failed and the p99 stayed within {p99_target_ms} ms; the search climbs a ladder of rates until one fails (✗), then bisects; the sustainable rate lies in [sustained, first failing).\n"
    );
    let _ = writeln!(
        md,
        "| platform | sizing | MB per container | containers in 1 GiB | probes in order: rate → p99 ms | sustained rate | first failing rate | vs docker, same sizing: sustained ÷ docker's sustained (bounds of the true ratio: sustained ÷ docker's first failing – first failing ÷ docker's sustained) |\n|---|---|---|---|---|---|---|---|"
    );
    let per_second = |rate: Option<f64>| rate.map_or("none".to_owned(), |r| format!("{r}/s"));
    for row in rows {
        let slots = if row.slots > 1_000_000 {
            "unbounded".to_owned()
        } else {
            row.slots.to_string()
        };
        let probes: Vec<String> = row
            .levels
            .iter()
            .map(|&(rate, p99, failed)| {
                let verdict = match failed {
                    _ if passes(p99, failed, p99_target_ms) => String::new(),
                    0 => " ✗".to_owned(),
                    failed => format!(" ✗ ({failed} failed)"),
                };
                let p99 = p99.map_or("–".to_owned(), |p| format!("{p:.1}"));
                format!("{rate}/s → {p99}{verdict}")
            })
            .collect();
        let docker = rows
            .iter()
            .find(|d| d.platform == "docker" && d.sizing == row.sizing);
        let versus = match docker {
            Some(docker) if row.platform != "docker" => ratio_with_bounds(row, docker),
            _ => "–".to_owned(),
        };
        let first_failing = row
            .first_failing_rate
            .map_or("none up to the cap".to_owned(), |r| format!("{r}/s"));
        let _ = writeln!(
            md,
            "| {} | {} | {:.2} | {slots} | {} | {} | {first_failing} | {versus} |",
            row.platform,
            row.sizing,
            row.container_mb,
            probes.join(" · "),
            per_second(row.sustainable_rate),
        );
    }
    md
}

/// `row`'s sustained rate over `docker`'s, then the interval the true ratio lies in: above
/// sustained ÷ docker's first failing, below first failing ÷ docker's sustained (an end the
/// brackets leave open is left out).
fn ratio_with_bounds(row: &CapacityRow, docker: &CapacityRow) -> String {
    let quotient = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    };
    let ratio = quotient(row.sustainable_rate, docker.sustainable_rate);
    let lower = quotient(row.sustainable_rate, docker.first_failing_rate);
    let upper = quotient(row.first_failing_rate, docker.sustainable_rate);
    let bounds = match (lower, upper) {
        (Some(lower), Some(upper)) => format!("{lower:.2}–{upper:.2}×"),
        (Some(lower), None) => format!("> {lower:.2}×"),
        (None, Some(upper)) => format!("< {upper:.2}×"),
        (None, None) => return "–".to_owned(),
    };
    match ratio {
        Some(ratio) => format!("{ratio:.2}× ({bounds})"),
        None => format!("({bounds})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluation::{
        capacity::Sizing,
        rate_search::{Bracket, Probe},
    };

    fn row(platform: &str, sizing: Sizing, levels: &[(f64, f64, usize)]) -> CapacityRow {
        let probes: Vec<_> = levels
            .iter()
            .map(|&(rate, p99, failed)| Probe {
                rate,
                passed: passes(Some(p99), failed, 1000.0),
            })
            .collect();
        let bracket = Bracket::of(&probes);
        CapacityRow {
            platform: platform.into(),
            sizing,
            container_mb: 256.0,
            slots: 4,
            levels: levels.iter().map(|&(r, p, f)| (r, Some(p), f)).collect(),
            sustainable_rate: bracket.sustained,
            first_failing_rate: bracket.first_failing,
        }
    }

    #[test]
    fn the_ratio_to_docker_comes_with_the_bounds_of_both_brackets() {
        let wasm = row(
            "wasmtime",
            Sizing::Reservation,
            &[(10.0, 500.0, 0), (20.0, 3000.0, 0), (14.1, 900.0, 0)],
        );
        let docker = row(
            "docker",
            Sizing::Reservation,
            &[(2.0, 800.0, 0), (5.0, 9000.0, 3), (3.2, 950.0, 0)],
        );
        // 14.1 / 3.2 sustained; 14.1 / 5 < true ratio < 20 / 3.2.
        assert_eq!(ratio_with_bounds(&wasm, &docker), "4.41× (2.82–6.25×)");
        let unbounded = row("wasmtime", Sizing::Reservation, &[(160.0, 10.0, 0)]);
        assert_eq!(ratio_with_bounds(&unbounded, &docker), "50.00× (> 32.00×)");
        let none = row("wasmtime", Sizing::Reservation, &[(2.0, 5000.0, 0)]);
        assert_eq!(ratio_with_bounds(&none, &docker), "(< 0.62×)");
    }

    #[test]
    fn the_capacity_table_shows_sizing_probes_and_bracket() {
        let rows = [
            row(
                "wasmtime",
                Sizing::Measured,
                &[(2.0, 300.0, 0), (5.0, 2000.0, 0), (3.2, 400.0, 0)],
            ),
            row("docker", Sizing::Measured, &[(2.0, 1200.0, 7)]),
        ];
        let md = markdown(&rows, 1000.0);
        assert!(
            md.contains(
                "| wasmtime | measured | 256.00 | 4 | 2/s → 300.0 · 5/s → 2000.0 ✗ · 3.2/s → 400.0 | 3.2/s | 5/s | (> 1.60×) |"
            ),
            "{md}"
        );
        assert!(
            md.contains(
                "| docker | measured | 256.00 | 4 | 2/s → 1200.0 ✗ (7 failed) | none | 2/s | – |"
            ),
            "{md}"
        );
    }
}
