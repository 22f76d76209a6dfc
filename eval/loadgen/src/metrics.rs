//! The executor's `GET /metrics`: the run-duration histogram's sum and count, so the mean
//! executor-side run time over a scenario is the difference of two scrapes.

use anyhow::{Context, bail};

use crate::http::Client;

const SUM: &str = "wasm_executor_run_duration_seconds_sum";
const COUNT: &str = "wasm_executor_run_duration_seconds_count";

/// Sum (seconds) and count of `wasm_executor_run_duration_seconds` at one scrape.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunHistogram {
    pub sum_seconds: f64,
    pub count: u64,
}

impl RunHistogram {
    pub fn scrape(client: &mut Client) -> anyhow::Result<RunHistogram> {
        let response = client.get("/metrics")?;
        if response.status != 200 {
            bail!("GET /metrics answered {}", response.status);
        }
        RunHistogram::parse(&response.body_text())
    }

    pub fn parse(text: &str) -> anyhow::Result<RunHistogram> {
        let value = |name: &str| -> anyhow::Result<f64> {
            text.lines()
                .find_map(|line| {
                    let rest = line.strip_prefix(name)?;
                    let rest = rest
                        .strip_prefix(' ')
                        .or_else(|| rest.split_once("} ").map(|(_, v)| v))?;
                    rest.split_whitespace().next()?.parse().ok()
                })
                .with_context(|| format!("{name} not found in /metrics"))
        };
        Ok(RunHistogram {
            sum_seconds: value(SUM)?,
            count: value(COUNT)? as u64,
        })
    }

    /// Mean run duration (µs) of the runs between `earlier` and this scrape.
    pub fn mean_us_since(&self, earlier: &RunHistogram) -> Option<f64> {
        let runs = self.count.checked_sub(earlier.count)?;
        (runs > 0).then(|| (self.sum_seconds - earlier.sum_seconds) / runs as f64 * 1e6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sum_and_count() {
        let text = "# TYPE wasm_executor_run_duration_seconds histogram\n\
                    wasm_executor_run_duration_seconds_sum 0.5\n\
                    wasm_executor_run_duration_seconds_count 10\n\
                    wasm_executor_run_duration_seconds_bucket{le=\"0.00005\"} 3\n";
        let h = RunHistogram::parse(text).unwrap();
        assert_eq!((h.sum_seconds, h.count), (0.5, 10));
        let later = RunHistogram {
            sum_seconds: 0.6,
            count: 20,
        };
        assert!((later.mean_us_since(&h).unwrap() - 10_000.0).abs() < 1e-6);
    }
}
