//! Statistics over sets of samples: nearest-rank percentiles, mean, extremes, and 95 %
//! confidence intervals (of a mean over repetitions, of a median by order statistics).

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

/// Two-sided 95 % quantile of Student's t distribution with `df` degrees of freedom.
fn t95(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    TABLE.get(df.wrapping_sub(1)).copied().unwrap_or(1.960)
}

/// Mean of repeated measurements and the half-width of its 95 % confidence interval (Student's
/// t; `None` with fewer than two repetitions).
pub fn mean_ci95(values: &[f64]) -> Option<(f64, Option<f64>)> {
    if values.is_empty() {
        return None;
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    if values.len() < 2 {
        return Some((mean, None));
    }
    let variance = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    Some((mean, Some(t95(values.len() - 1) * (variance / n).sqrt())))
}

/// 95 % confidence interval of the median of sorted samples, by order statistics (no
/// assumption about their distribution): the ranks n/2 ∓ 0.98·√n. `None` below 6 samples, where
/// no pair of ranks covers the median with 95 % confidence.
pub fn median_ci95(sorted: &[u64]) -> Option<(u64, u64)> {
    let n = sorted.len();
    if n < 6 {
        return None;
    }
    let half = 0.98 * (n as f64).sqrt();
    let low = ((n as f64 / 2.0 - half).floor() as usize).max(1);
    let high = ((n as f64 / 2.0 + 1.0 + half).ceil() as usize).min(n);
    Some((sorted[low - 1], sorted[high - 1]))
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

    #[test]
    fn confidence_intervals() {
        // Mean 10, sample standard deviation 1.58, five values: t(4) = 2.776.
        let (mean, half) = mean_ci95(&[8.0, 9.0, 10.0, 11.0, 12.0]).unwrap();
        assert_eq!(mean, 10.0);
        assert!((half.unwrap() - 2.776 * (2.5f64 / 5.0).sqrt()).abs() < 1e-9);
        assert_eq!(mean_ci95(&[3.0]), Some((3.0, None)));
        assert_eq!(mean_ci95(&[]), None);
        // 100 samples 1..=100: ranks 40 and 61 (the binomial interval around rank 50.5).
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(median_ci95(&v), Some((40, 61)));
        assert_eq!(median_ci95(&v[..5]), None);
    }
}
