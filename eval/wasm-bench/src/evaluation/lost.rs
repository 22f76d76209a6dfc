//! Lost activations fail an evaluation, after every result is written: too many failed on a
//! platform, none recorded where some were due, or containers left behind.

use std::collections::BTreeMap;

use anyhow::bail;

use super::{EvaluateArgs, Results, experiment::Experiment, registry, runner::applicable};
use crate::failures;

/// The (experiment, platform) pairs that must have recorded activations: every platform each
/// of `experiments` that expects activations applies to.
pub fn expected<'a>(
    experiments: &[&'static dyn Experiment],
    args: &'a EvaluateArgs,
) -> Vec<(&'static str, &'a str)> {
    experiments
        .iter()
        .filter(|e| e.expects_activations())
        .flat_map(|e| {
            applicable(*e, args)
                .into_iter()
                .map(move |platform| (e.name(), platform))
        })
        .collect()
}

/// Fails when an experiment lost activations on a platform: more than `max_error_pct` percent
/// failed (experiments whose failures are what they measure aside: capacity's search raises
/// the arrival rate until activations fail), or `expected` (experiment, platform) pairs have no
/// activation at all, or containers could not be removed (a failed pause does not count: the
/// container stays warm). The error lists every such finding.
pub fn check_failures(
    results: &Results,
    expected: &[(&str, &str)],
    max_error_pct: f64,
) -> anyhow::Result<()> {
    let mut counts: BTreeMap<(&str, &str), (usize, usize)> = BTreeMap::new();
    for (experiment, samples) in &results.samples {
        for sample in samples {
            let (failed, total) = counts
                .entry((experiment, sample.platform.as_str()))
                .or_default();
            *total += 1;
            *failed += usize::from(!sample.ok());
        }
    }
    let mut problems = Vec::new();
    for &(experiment, platform) in expected {
        if !counts.contains_key(&(experiment, platform)) {
            problems.push(format!(
                "{experiment} on {platform}: no activation recorded"
            ));
        }
    }
    for ((experiment, platform), (failed, total)) in &counts {
        if registry::find(experiment).is_some_and(|e| e.failures_measured()) {
            continue;
        }
        let pct = 100.0 * *failed as f64 / *total as f64;
        if pct > max_error_pct || failed == total {
            problems.push(format!(
                "{experiment} on {platform}: {failed} of {total} activations failed ({pct:.1} %)"
            ));
        }
    }
    let housekeeping = failures::housekeeping_count();
    if housekeeping > 0 {
        problems.push(format!(
            "{housekeeping} container(s) could not be removed (see the log)"
        ));
    }
    if problems.is_empty() {
        return Ok(());
    }
    bail!(
        "the evaluation lost activations (allowed: {max_error_pct} %):\n  {}",
        problems.join("\n  ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evaluation::sample::Sample;

    fn sample(platform: &str, status: u16) -> Sample {
        Sample {
            platform: platform.into(),
            status,
            ..Sample::default()
        }
    }

    #[test]
    fn lost_activations_fail_the_run() {
        let mut results = Results::default();
        results.add("cold", vec![sample("wasmtime", 200), sample("docker", 200)]);
        results.add("io", vec![sample("wasmtime", 200), sample("wasmtime", 0)]);
        let expected = [("cold", "wasmtime"), ("cold", "docker"), ("io", "wasmtime")];
        // One failure in two: fails at 0 % and at 10 %, passes at 50 %.
        let error = check_failures(&results, &expected, 0.0)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("io on wasmtime: 1 of 2 activations failed (50.0 %)"),
            "{error}"
        );
        assert!(check_failures(&results, &expected, 10.0).is_err());
        check_failures(&results, &expected, 50.0).unwrap();
        // A platform that recorded nothing has lost everything.
        let error = check_failures(&results, &[("io", "docker")], 50.0)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("io on docker: no activation recorded"),
            "{error}"
        );
        // So has one whose every activation failed, whatever the allowance.
        results.add("mixed", vec![sample("wamr", 502)]);
        assert!(check_failures(&results, &expected, 100.0).is_err());
    }

    #[test]
    fn the_capacity_search_may_fail_activations() {
        let mut results = Results::default();
        results.add("cold", vec![sample("wasmtime", 200)]);
        results.add(
            "capacity",
            vec![sample("wasmtime", 200), sample("wasmtime", 503)],
        );
        check_failures(&results, &[("cold", "wasmtime")], 0.0).unwrap();
    }

    #[test]
    fn a_failed_pause_loses_nothing() {
        let mut results = Results::default();
        results.add("realistic", vec![sample("docker", 200)]);
        let before = failures::suspensions_failed_count();
        failures::suspension_failed(&anyhow::anyhow!("unable to freeze"));
        assert_eq!(failures::suspensions_failed_count(), before + 1);
        check_failures(&results, &[("realistic", "docker")], 0.0).unwrap();
    }
}
