//! The executor's `GET /metrics`: a duration histogram's sum and count (/init's or /run's), so
//! the mean executor-side duration over a scenario is the difference of two scrapes.

use anyhow::{Context, bail};

use crate::http::Client;

/// Which of the executor's duration histograms.
#[derive(Debug, Clone, Copy)]
pub enum Phase {
    Init,
    Run,
}

impl Phase {
    fn histogram(self) -> &'static str {
        match self {
            Phase::Init => "wasm_executor_init_duration_seconds",
            Phase::Run => "wasm_executor_run_duration_seconds",
        }
    }
}

/// Sum (seconds) and count of one duration histogram at one scrape.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Histogram {
    pub sum_seconds: f64,
    pub count: u64,
}

impl Histogram {
    pub fn scrape(client: &mut Client, phase: Phase) -> anyhow::Result<Histogram> {
        let response = client.get("/metrics")?;
        if response.status != 200 {
            bail!("GET /metrics answered {}", response.status);
        }
        Histogram::parse(&response.text(), phase)
    }

    pub fn parse(text: &str, phase: Phase) -> anyhow::Result<Histogram> {
        let name = phase.histogram();
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
        Ok(Histogram {
            sum_seconds: value(&format!("{name}_sum"))?,
            count: value(&format!("{name}_count"))? as u64,
        })
    }

    /// Mean duration (µs) of what was observed between `earlier` and this scrape.
    pub fn mean_us_since(&self, earlier: &Histogram) -> Option<f64> {
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
                    wasm_executor_run_duration_seconds_bucket{le=\"0.00005\"} 3\n\
                    wasm_executor_init_duration_seconds_sum 2\n\
                    wasm_executor_init_duration_seconds_count 4\n";
        let h = Histogram::parse(text, Phase::Run).unwrap();
        assert_eq!((h.sum_seconds, h.count), (0.5, 10));
        let init = Histogram::parse(text, Phase::Init).unwrap();
        assert_eq!((init.sum_seconds, init.count), (2.0, 4));
        let later = Histogram {
            sum_seconds: 0.6,
            count: 20,
        };
        assert!((later.mean_us_since(&h).unwrap() - 10_000.0).abs() < 1e-6);
    }
}
