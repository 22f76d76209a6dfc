//! The capacity experiment's search for the highest sustainable arrival rate, as a pure
//! decision from the probes so far: up a geometric ladder of rates (doubling past its last
//! rung, up to a cap) until one fails, then geometric bisection between the highest passing
//! and the lowest failing rate until their ratio is within the precision asked for.

use serde::Serialize;

/// Probed rates are multiples of this (per second), so that each is a whole number of
/// arrivals per minute (the capacity samples' level).
pub const RATE_STEP: f64 = 0.1;

/// How the search goes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchPlan {
    /// Rates tried first, ascending (arrivals per second).
    pub ladder: Vec<f64>,
    /// While every rate passes, rates double past the ladder's last rung up to this one.
    pub cap: f64,
    /// Bisection stops once lowest failing ÷ highest passing ≤ this; None: no bisection.
    pub precision: Option<f64>,
}

/// One probed rate and whether the platform sustained it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Probe {
    pub rate: f64,
    pub passed: bool,
}

/// What the probes tell: the sustainable rate lies in [sustained, first_failing).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bracket {
    /// The highest passing rate below every failing one; None when none passed.
    pub sustained: Option<f64>,
    /// The lowest failing rate; None when none failed.
    pub first_failing: Option<f64>,
}

impl Bracket {
    pub fn of(probes: &[Probe]) -> Bracket {
        let first_failing = probes
            .iter()
            .filter(|p| !p.passed)
            .map(|p| p.rate)
            .reduce(f64::min);
        let sustained = probes
            .iter()
            .filter(|p| p.passed && first_failing.is_none_or(|fail| p.rate < fail))
            .map(|p| p.rate)
            .reduce(f64::max);
        Bracket {
            sustained,
            first_failing,
        }
    }
}

/// The next rate to probe after `probes` (in the order they ran), or None when the search is
/// done: a rate failed and the bracket is within the precision (or no bisection is asked for,
/// or the ladder's first rung failed, or no multiple of [`RATE_STEP`] lies inside it), or every
/// rate passed up to the cap.
pub fn next_rate(plan: &SearchPlan, probes: &[Probe]) -> Option<f64> {
    let bracket = Bracket::of(probes);
    let Some(fail) = bracket.first_failing else {
        return climb(plan, probes);
    };
    let precision = plan.precision?;
    let pass = bracket.sustained?;
    // The tolerance keeps 2.2 / 2.0 (1.1000000000000001) within a precision of 1.1.
    if fail / pass <= precision + 1e-9 {
        return None;
    }
    let middle = round_rate((pass * fail).sqrt());
    (middle > pass && middle < fail).then_some(middle)
}

/// While nothing failed: the ladder's next rung above the highest rate probed, then doubling
/// up to the cap.
fn climb(plan: &SearchPlan, probes: &[Probe]) -> Option<f64> {
    let Some(highest) = probes.iter().map(|p| p.rate).reduce(f64::max) else {
        return plan.ladder.first().copied();
    };
    if let Some(&rung) = plan.ladder.iter().find(|&&rung| rung > highest) {
        return Some(rung);
    }
    (highest < plan.cap).then(|| round_rate((highest * 2.0).min(plan.cap)))
}

/// `rate` to the nearest multiple of [`RATE_STEP`].
pub fn round_rate(rate: f64) -> f64 {
    (rate / RATE_STEP).round() / (1.0 / RATE_STEP)
}

/// `rate` in whole arrivals per minute (exact for multiples of [`RATE_STEP`]).
pub fn per_minute(rate: f64) -> u32 {
    (rate * 60.0).round() as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full() -> SearchPlan {
        SearchPlan {
            ladder: vec![2.0, 5.0, 10.0, 20.0, 40.0],
            cap: 160.0,
            precision: Some(1.10),
        }
    }

    /// Runs the search against a platform that sustains every rate up to `limit`.
    fn search(plan: &SearchPlan, limit: f64) -> Vec<Probe> {
        let mut probes = Vec::new();
        while let Some(rate) = next_rate(plan, &probes) {
            assert!(probes.len() < 50, "the search does not end: {probes:?}");
            assert!(
                probes.iter().all(|p: &Probe| p.rate != rate),
                "{rate} probed twice: {probes:?}"
            );
            probes.push(Probe {
                rate,
                passed: rate <= limit,
            });
        }
        probes
    }

    fn rates(probes: &[Probe]) -> Vec<f64> {
        probes.iter().map(|p| p.rate).collect()
    }

    #[test]
    fn climbs_the_ladder_until_a_rate_fails_then_bisects() {
        let probes = search(&full(), 13.0);
        // √(10·20) = 14.1 fails, √(10·14.1) = 11.9 and √(11.9·14.1) = 13 pass: 14.1 / 13 ≤ 1.1.
        assert_eq!(rates(&probes), [2.0, 5.0, 10.0, 20.0, 14.1, 11.9, 13.0]);
        let bracket = Bracket::of(&probes);
        assert_eq!(bracket.sustained, Some(13.0));
        assert_eq!(bracket.first_failing, Some(14.1));
    }

    #[test]
    fn the_bracket_ends_within_the_precision_and_holds_the_limit() {
        for limit in [2.0, 2.3, 3.7, 4.99, 5.0, 7.3, 19.9, 27.0, 41.0, 99.0, 150.0] {
            let probes = search(&full(), limit);
            let bracket = Bracket::of(&probes);
            let (pass, fail) = (bracket.sustained.unwrap(), bracket.first_failing.unwrap());
            assert!(pass <= limit && limit < fail, "{limit}: {probes:?}");
            assert!(fail / pass <= 1.10 + 1e-9, "{limit}: {probes:?}");
            // Every bisection probe halved the bracket's logarithm: no wasted probe.
            let last = probes.len() - 1;
            let before = Bracket::of(&probes[..last]);
            if let (Some(p), Some(f)) = (before.sustained, before.first_failing) {
                assert!(f / p > 1.10 + 1e-9, "{limit}: {probes:?}");
            }
            assert!(probes.len() <= 12, "{limit}: {} probes", probes.len());
        }
    }

    #[test]
    fn doubles_past_the_ladder_up_to_the_cap() {
        let probes = search(&full(), 1000.0);
        assert_eq!(rates(&probes), [2.0, 5.0, 10.0, 20.0, 40.0, 80.0, 160.0]);
        let bracket = Bracket::of(&probes);
        assert_eq!(bracket.sustained, Some(160.0));
        assert_eq!(bracket.first_failing, None);
        // A cap off the doubling is probed itself.
        let plan = SearchPlan {
            cap: 100.0,
            ..full()
        };
        assert_eq!(
            rates(&search(&plan, 1000.0)),
            [2.0, 5.0, 10.0, 20.0, 40.0, 80.0, 100.0]
        );
    }

    #[test]
    fn a_failing_first_rung_ends_the_search() {
        let probes = search(&full(), 1.0);
        assert_eq!(rates(&probes), [2.0]);
        let bracket = Bracket::of(&probes);
        assert_eq!(bracket.sustained, None);
        assert_eq!(bracket.first_failing, Some(2.0));
    }

    #[test]
    fn quick_mode_takes_one_or_two_probes() {
        let quick = SearchPlan {
            ladder: vec![4.0],
            cap: 8.0,
            precision: None,
        };
        assert_eq!(rates(&search(&quick, 100.0)), [4.0, 8.0]);
        assert_eq!(rates(&search(&quick, 5.0)), [4.0, 8.0]);
        assert_eq!(rates(&search(&quick, 3.0)), [4.0]);
    }

    #[test]
    fn a_passing_rate_above_a_failing_one_is_not_sustained() {
        // Noise can make a rate pass above one that failed; the bracket stays below the
        // lowest failure, and bisection goes on inside it.
        let probes = [
            Probe {
                rate: 10.0,
                passed: true,
            },
            Probe {
                rate: 20.0,
                passed: false,
            },
            Probe {
                rate: 30.0,
                passed: true,
            },
        ];
        let bracket = Bracket::of(&probes);
        assert_eq!(bracket.sustained, Some(10.0));
        assert_eq!(bracket.first_failing, Some(20.0));
        assert_eq!(next_rate(&full(), &probes), Some(14.1));
    }

    #[test]
    fn rates_are_whole_arrivals_per_minute() {
        assert_eq!(round_rate(14.142), 14.1);
        assert_eq!(round_rate(3.1623), 3.2);
        assert_eq!(per_minute(14.1), 846);
        assert_eq!(per_minute(2.0), 120);
        assert_eq!(per_minute(0.1), 6);
    }
}
