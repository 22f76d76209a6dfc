//! The cells of the evaluation's tables: per experiment with cells, the statistics of every
//! platform, scenario and level (`summary.cells` in summary.json), and lookups into them for
//! the sections of summary.md.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{Results, experiment::Experiment, sample::Sample};
use crate::stats;

#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    pub platform: String,
    pub scenario: String,
    pub level: u32,
    pub requests: usize,
    pub errors: usize,
    pub cold: usize,
    /// Successful measured activations per second: the mean over the level's measured windows
    /// for closed-loop load, over the whole run for open-loop load.
    pub rate: Option<f64>,
    /// Half-width of the rate's 95 % confidence interval over the windows.
    pub rate_ci95: Option<f64>,
    /// The rate in each measured window.
    pub window_rates: Vec<f64>,
    pub p50_ms: Option<f64>,
    /// 95 % confidence interval of the median latency (order statistics).
    pub p50_ci95_ms: Option<(f64, f64)>,
    pub p90_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub mean_ms: Option<f64>,
    /// Cold start only: until ready.
    pub ready_p50_ms: Option<f64>,
    pub ready_p99_ms: Option<f64>,
}

/// How the rate of an experiment's cells is known.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CellRate {
    /// Closed-loop levels: the rate of each measured window, by platform, scenario and level.
    Windows,
    /// Open-loop load: successful activations over this many seconds.
    Span(f64),
    /// No rate: latencies only.
    None,
}

/// Statistics of the measured samples of one platform, scenario and level.
fn cell(
    samples: &[&Sample],
    rate: CellRate,
    results: &Results,
    experiment: &'static str,
) -> Option<Cell> {
    let first = samples.first()?;
    let measured: Vec<&&Sample> = samples.iter().filter(|s| !s.warmup).collect();
    let ok: Vec<&&Sample> = measured.iter().copied().filter(|s| s.ok()).collect();
    let mut sorted: Vec<u64> = ok.iter().map(|s| s.latency_ns).collect();
    sorted.sort_unstable();
    let latency = stats::Summary::of_ns(sorted.iter().copied());
    let ready = stats::Summary::of_ns(measured.iter().filter_map(|s| s.ready_ns));
    let window_rates = match rate {
        CellRate::Windows => results
            .rates
            .get(&(
                experiment,
                (first.platform.clone(), first.scenario.clone(), first.level),
            ))
            .cloned()
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    let (rate, rate_ci95) = match rate {
        CellRate::Windows => {
            stats::mean_ci95(&window_rates).map_or((None, None), |(m, h)| (Some(m), h))
        }
        CellRate::Span(secs) => (Some(ok.len() as f64 / secs), None),
        CellRate::None => (None, None),
    };
    let ms = |ns: u64| ns as f64 / 1e6;
    Some(Cell {
        platform: first.platform.clone(),
        scenario: first.scenario.clone(),
        level: first.level,
        requests: measured.len(),
        errors: measured.len() - ok.len(),
        cold: measured.iter().filter(|s| s.cold).count(),
        rate,
        rate_ci95,
        window_rates,
        p50_ms: latency.as_ref().map(|l| l.p50_us / 1e3),
        p50_ci95_ms: stats::median_ci95(&sorted).map(|(lo, hi)| (ms(lo), ms(hi))),
        p90_ms: latency.as_ref().map(|l| l.p90_us / 1e3),
        p99_ms: latency.as_ref().map(|l| l.p99_us / 1e3),
        mean_ms: latency.as_ref().map(|l| l.mean_us / 1e3),
        ready_p50_ms: ready.as_ref().map(|r| r.p50_us / 1e3),
        ready_p99_ms: ready.as_ref().map(|r| r.p99_us / 1e3),
    })
}

/// Cells by (platform, scenario, level), in that order.
fn cells(results: &Results, experiment: &'static str, rate: CellRate) -> Vec<Cell> {
    let mut groups: BTreeMap<(String, String, u32), Vec<&Sample>> = BTreeMap::new();
    for s in results.of(experiment) {
        groups
            .entry((s.platform.clone(), s.scenario.clone(), s.level))
            .or_default()
            .push(s);
    }
    groups
        .values()
        .filter_map(|g| cell(g, rate, results, experiment))
        .collect()
}

/// Every experiment's cells, by experiment name.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(transparent)]
pub struct Cells(BTreeMap<String, Vec<Cell>>);

impl Cells {
    /// The cells of every experiment of `experiments` that has cells (empty ones too).
    pub fn of(results: &Results, experiments: &[&dyn Experiment], ctx: &super::Context) -> Cells {
        Cells(
            experiments
                .iter()
                .filter_map(|e| {
                    let rate = e.cells(ctx)?;
                    Some((e.name().to_owned(), cells(results, e.name(), rate)))
                })
                .collect(),
        )
    }

    /// The cells of `experiment`, in the order of platform, scenario and level.
    pub fn all(&self, experiment: &str) -> &[Cell] {
        self.0.get(experiment).map_or(&[], Vec::as_slice)
    }

    pub fn find(
        &self,
        experiment: &str,
        platform: &str,
        scenario: &str,
        level: u32,
    ) -> Option<&Cell> {
        self.0
            .get(experiment)?
            .iter()
            .find(|c| c.platform == platform && c.scenario == scenario && c.level == level)
    }

    pub fn levels(&self, experiment: &str, scenario: &str) -> Vec<u32> {
        let mut levels: Vec<u32> = self
            .0
            .get(experiment)
            .map(|cells| {
                cells
                    .iter()
                    .filter(|c| c.scenario == scenario)
                    .map(|c| c.level)
                    .collect()
            })
            .unwrap_or_default();
        levels.sort_unstable();
        levels.dedup();
        levels
    }

    /// Measured windows per level of a closed-loop experiment (the most any cell had).
    pub fn windows(&self, experiment: &str) -> usize {
        self.0
            .get(experiment)
            .into_iter()
            .flatten()
            .map(|c| c.window_rates.len())
            .max()
            .unwrap_or(0)
    }

    pub fn has(&self, experiment: &str) -> bool {
        self.0.get(experiment).is_some_and(|c| !c.is_empty())
    }
}
