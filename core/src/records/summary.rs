//! Percentiles of one set of runtimes, as every record stores them.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::seconds;
use crate::histogram::RuntimeHistogram;

/// Samples wanted beyond a percentile before it is trusted: with 10 runs above it, a P99.9 is an
/// estimate; with 1 it is an anecdote.
const TAIL_SAMPLES: u64 = 10;

/// Replays needed for `TAIL_SAMPLES` runs above quantile `q` (10,000 for P99.9).
pub fn tail_samples_needed(q: f64) -> u64 {
    (TAIL_SAMPLES as f64 / (1.0 - q)).round() as u64
}

/// Percentiles of one set of runtimes, in seconds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuntimeSummary {
    /// Number of runtimes.
    pub replays: u64,
    /// Median.
    #[serde(with = "seconds")]
    pub p50: Duration,
    /// 90th percentile.
    #[serde(with = "seconds")]
    pub p90: Duration,
    /// 99th percentile.
    #[serde(with = "seconds")]
    pub p99: Duration,
    /// 99.9th percentile.
    #[serde(with = "seconds")]
    pub p999: Duration,
    /// Largest runtime seen.
    #[serde(with = "seconds")]
    pub max: Duration,
    /// Exact mean.
    #[serde(with = "seconds")]
    pub mean: Duration,
}

impl RuntimeSummary {
    /// Summarises a histogram.
    pub fn from_histogram(h: &RuntimeHistogram) -> Self {
        RuntimeSummary {
            replays: h.count(),
            p50: h.quantile(0.5),
            p90: h.quantile(0.9),
            p99: h.quantile(0.99),
            p999: h.quantile(0.999),
            max: h.max(),
            mean: h.mean(),
        }
    }

    /// True when there are enough replays for P99.9 to mean something.
    pub fn p999_is_reliable(&self) -> bool {
        self.replays >= tail_samples_needed(0.999)
    }
}

/// Two-sided 95 % normal quantile.
const Z95: f64 = 1.959_963_984_540_054;

/// The 95 % confidence interval of quantile `q` and whether its upper end ran past the largest
/// sample: the order statistics whose ranks bracket `n q` by 1.96 binomial standard deviations.
/// Needs no assumption about the runtime distribution.
pub fn quantile_interval(h: &RuntimeHistogram, q: f64) -> (Duration, Duration, bool) {
    let n = h.count();
    if n == 0 {
        return (Duration::ZERO, Duration::ZERO, true);
    }
    let nf = n as f64;
    let half_width = Z95 * (nf * q * (1.0 - q)).sqrt();
    let lo_rank = (nf * q - half_width).floor().max(1.0) as u64;
    let hi_rank = (nf * q + half_width).ceil() as u64 + 1;
    let open = hi_rank > n;
    (
        h.value_at_rank(lo_rank),
        h.value_at_rank(hi_rank.min(n)),
        open,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_brackets_the_percentile() {
        let mut h = RuntimeHistogram::new();
        for i in 1..=100_000u64 {
            h.record(Duration::from_millis(i));
        }
        let (lo, hi, open) = quantile_interval(&h, 0.999);
        let p999 = h.quantile(0.999);
        assert!(lo <= p999 && p999 <= hi);
        // ranks 99,900 ± 1.96 * sqrt(99.9) ≈ ± 20, i.e. 99.88 s to 99.92 s, seen through
        // buckets 0.1 % wide
        assert!((99.78..=99.98).contains(&lo.as_secs_f64()), "lo {lo:?}");
        assert!((99.82..=100.0).contains(&hi.as_secs_f64()), "hi {hi:?}");
        assert!(!open && RuntimeSummary::from_histogram(&h).p999_is_reliable());
    }

    #[test]
    fn small_samples_are_flagged() {
        let mut h = RuntimeHistogram::new();
        for i in 1..=500u64 {
            h.record(Duration::from_secs(i));
        }
        assert!(!RuntimeSummary::from_histogram(&h).p999_is_reliable());
        assert!(
            quantile_interval(&h, 0.999).2,
            "500 samples cannot bound P99.9 from above"
        );
        assert_eq!(tail_samples_needed(0.999), 10_000);
    }
}
