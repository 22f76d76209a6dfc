//! Latency statistics over a set of samples: nearest-rank percentiles, mean, extremes.

use serde::Serialize;

/// Summary of latency samples, in microseconds (fractional).
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub count: usize,
    pub min_us: f64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
    pub mean_us: f64,
}

impl Summary {
    /// Summary of samples given in nanoseconds; `None` when there are none.
    pub fn of_ns(samples: impl IntoIterator<Item = u64>) -> Option<Summary> {
        let mut sorted: Vec<u64> = samples.into_iter().collect();
        if sorted.is_empty() {
            return None;
        }
        sorted.sort_unstable();
        let us = |ns: u64| ns as f64 / 1000.0;
        let sum: u128 = sorted.iter().map(|&v| u128::from(v)).sum();
        Some(Summary {
            count: sorted.len(),
            min_us: us(sorted[0]),
            p50_us: us(percentile(&sorted, 0.50)),
            p90_us: us(percentile(&sorted, 0.90)),
            p99_us: us(percentile(&sorted, 0.99)),
            max_us: us(sorted[sorted.len() - 1]),
            mean_us: sum as f64 / sorted.len() as f64 / 1000.0,
        })
    }

    /// Summary of samples given in microseconds.
    pub fn of_us(samples: impl IntoIterator<Item = u64>) -> Option<Summary> {
        Summary::of_ns(samples.into_iter().map(|v| v * 1000))
    }
}

/// Nearest-rank percentile of sorted, non-empty samples: the smallest value with at least
/// `q` of the samples at or below it.
pub fn percentile(sorted: &[u64], q: f64) -> u64 {
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 0.5), 50);
        assert_eq!(percentile(&v, 0.99), 99);
        assert_eq!(percentile(&v, 1.0), 100);
        assert_eq!(percentile(&[7], 0.99), 7);
        let s = Summary::of_ns([1000, 3000]).unwrap();
        assert_eq!((s.p50_us, s.max_us, s.mean_us), (1.0, 3.0, 2.0));
    }
}
