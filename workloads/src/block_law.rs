//! The law of a sum of k calls, drawn at once: what lets the block engine's cost follow events
//! rather than calls.
//!
//! A call's latency is replaced, for the calls a block covers, by its surrogate: a shifted Gamma
//! with the same mean, variance and skewness (a Normal when the skewness is nil). A sum of k
//! independent Gamma(a, s) draws is exactly Gamma(k·a, s), so the sum of k surrogate calls is one
//! Gamma draw, whatever k. The block engine is therefore exact for the surrogate, and the only
//! error against the per-call engine is the surrogate's own: the cumulants of a job's runtime from
//! the fourth on. Those grow linearly with the calls while the variance's square grows with their
//! square, so the error of the runtime's standardised shape shrinks as 1/calls. Exponential calls
//! are their own surrogate (Gamma(1)), and constants need none: those sums are exact. A mixture is
//! split first: how many of the k calls fall in each component is drawn exactly (binomials), then
//! each component's share as its own sum, so a rare slow component is never smoothed into the
//! fast one. A distribution without a finite third moment (a Pareto with shape at most 3 and no
//! cap) has no surrogate: its steps stay with the per-call engine.

use rand::Rng;
use rand_distr::{Binomial, Distribution, Gamma, StandardNormal};

use crate::latency::Latency;

/// Points of the midpoint rule that integrates a quantile function into moments, for the
/// distributions without closed-form moments (a capped Pareto, an empirical file).
const INTEGRATION_POINTS: usize = 1 << 16;
/// Below this skewness a Normal stands for the Gamma (whose shape would overflow).
const NORMAL_SKEW: f64 = 1e-6;

/// How the sum of k calls of one distribution is drawn.
#[derive(Clone, Debug)]
pub(crate) enum BlockLaw {
    /// Every call takes the same time: k times it.
    Constant(f64),
    /// `sign` · Gamma(k·`shape`, `scale`) + k·`shift`: mean, variance and skewness of one call.
    Gamma {
        shape: f64,
        scale: f64,
        shift: f64,
        sign: f64,
    },
    /// Normal(k·`mean`, k·`variance`): a call without skew.
    Normal { mean: f64, sd: f64 },
    /// Components with their weights (summing to one): the count per component is drawn first.
    Mixture(Box<[(f64, BlockLaw)]>),
}

/// Mean and variance of one call, what the engine sizes a block by.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct CallMoments {
    pub mean: f64,
    pub variance: f64,
}

impl BlockLaw {
    /// The law of `latency` with every value multiplied by `scale`; `None` when it has no finite
    /// third moment, so that its calls must be drawn one by one.
    pub fn new(latency: &Latency, scale: f64) -> Option<Self> {
        if let Latency::Mixture(parts) = latency {
            let total: f64 = parts.iter().map(|(w, _)| w).sum();
            let parts = parts
                .iter()
                .map(|(w, l)| Some((w / total, BlockLaw::new(l, scale)?)))
                .collect::<Option<Vec<_>>>()?;
            return Some(BlockLaw::Mixture(parts.into_boxed_slice()));
        }
        if let Latency::Constant(v) = latency {
            return Some(BlockLaw::Constant(v * scale));
        }
        let [m1, m2, m3] = raw_moments(latency)?;
        let mean = m1;
        let variance = (m2 - m1 * m1).max(0.0);
        let third = m3 - 3.0 * m1 * m2 + 2.0 * m1.powi(3);
        Some(BlockLaw::from_cumulants(
            mean * scale,
            variance * scale * scale,
            third * scale.powi(3),
        ))
    }

    /// The surrogate with these first three cumulants.
    fn from_cumulants(mean: f64, variance: f64, third: f64) -> Self {
        if variance <= 0.0 {
            return BlockLaw::Constant(mean);
        }
        let skew = third / variance.powf(1.5);
        if skew.abs() < NORMAL_SKEW {
            return BlockLaw::Normal {
                mean,
                sd: variance.sqrt(),
            };
        }
        let sign = skew.signum();
        let scale = third.abs() / (2.0 * variance);
        let shape = 4.0 / (skew * skew);
        BlockLaw::Gamma {
            shape,
            scale,
            shift: mean - sign * shape * scale,
            sign,
        }
    }

    /// Mean and variance of one call.
    pub fn moments(&self) -> CallMoments {
        match self {
            BlockLaw::Constant(v) => CallMoments {
                mean: *v,
                variance: 0.0,
            },
            BlockLaw::Gamma {
                shape,
                scale,
                shift,
                sign,
            } => CallMoments {
                mean: shift + sign * shape * scale,
                variance: shape * scale * scale,
            },
            BlockLaw::Normal { mean, sd } => CallMoments {
                mean: *mean,
                variance: sd * sd,
            },
            BlockLaw::Mixture(parts) => {
                let (m1, m2) = parts.iter().fold((0.0, 0.0), |(m1, m2), (w, law)| {
                    let c = law.moments();
                    (m1 + w * c.mean, m2 + w * (c.variance + c.mean * c.mean))
                });
                CallMoments {
                    mean: m1,
                    variance: (m2 - m1 * m1).max(0.0),
                }
            }
        }
    }

    /// The sum of `k` calls.
    pub fn sum<R: Rng + ?Sized>(&self, k: u64, rng: &mut R) -> f64 {
        if k == 0 {
            return 0.0;
        }
        let n = k as f64;
        match self {
            BlockLaw::Constant(v) => n * v,
            BlockLaw::Gamma {
                shape,
                scale,
                shift,
                sign,
            } => {
                let gamma = Gamma::new(n * shape, *scale).expect("a positive shape and scale");
                sign * gamma.sample(rng) + n * shift
            }
            BlockLaw::Normal { mean, sd } => {
                let z: f64 = StandardNormal.sample(rng);
                n * mean + n.sqrt() * sd * z
            }
            BlockLaw::Mixture(parts) => {
                let mut left = k;
                let mut weight_left = 1.0;
                let mut total = 0.0;
                for (i, (w, law)) in parts.iter().enumerate() {
                    let count = if i + 1 == parts.len() || weight_left <= *w {
                        left
                    } else {
                        Binomial::new(left, (w / weight_left).clamp(0.0, 1.0))
                            .expect("a probability in [0, 1]")
                            .sample(rng)
                    };
                    total += law.sum(count, rng);
                    left -= count;
                    weight_left -= w;
                    if left == 0 {
                        break;
                    }
                }
                total
            }
        }
    }
}

/// E[X], E[X²], E[X³] in seconds; `None` when the third is infinite.
fn raw_moments(latency: &Latency) -> Option<[f64; 3]> {
    let moments = match latency {
        Latency::Constant(v) => [*v, v * v, v.powi(3)],
        Latency::Uniform { min, max } => {
            let power = |n: i32| {
                if max > min {
                    (max.powi(n + 1) - min.powi(n + 1)) / (f64::from(n + 1) * (max - min))
                } else {
                    min.powi(n)
                }
            };
            [power(1), power(2), power(3)]
        }
        Latency::Exponential { mean } => [*mean, 2.0 * mean * mean, 6.0 * mean.powi(3)],
        Latency::LogNormal { mu, sigma } => {
            let power = |n: f64| (n * mu + n * n * sigma * sigma / 2.0).exp();
            [power(1.0), power(2.0), power(3.0)]
        }
        Latency::Pareto { scale, shape, max } if max.is_infinite() => {
            if *shape <= 3.0 {
                return None;
            }
            let power = |n: i32| scale.powi(n) * shape / (shape - f64::from(n));
            [power(1), power(2), power(3)]
        }
        Latency::Pareto { .. } | Latency::Empirical { .. } => integrate(latency),
        Latency::Mixture(_) => unreachable!("mixtures are split into their components"),
    };
    moments.iter().all(|m| m.is_finite()).then_some(moments)
}

/// The first three moments of a bounded distribution, from its quantile function (midpoint rule).
fn integrate(latency: &Latency) -> [f64; 3] {
    let mut sums = [0.0f64; 3];
    for i in 0..INTEGRATION_POINTS {
        let x = latency.quantile((i as f64 + 0.5) / INTEGRATION_POINTS as f64);
        sums[0] += x;
        sums[1] += x * x;
        sums[2] += x * x * x;
    }
    sums.map(|s| s / INTEGRATION_POINTS as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::SmallRng;

    /// Mean, variance and skewness of `n` draws of the sum of `k` calls.
    fn shape_of_sums(law: &BlockLaw, k: u64, n: usize) -> (f64, f64, f64) {
        let mut rng = SmallRng::seed_from_u64(5);
        let v: Vec<f64> = (0..n).map(|_| law.sum(k, &mut rng)).collect();
        let mean = v.iter().sum::<f64>() / n as f64;
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
        let third = v.iter().map(|x| (x - mean).powi(3)).sum::<f64>() / n as f64;
        (mean, var, third / var.powf(1.5))
    }

    #[test]
    fn a_lognormal_sum_keeps_the_calls_mean_variance_and_skewness() {
        let latency = Latency::lognormal(0.110, 0.340);
        let law = BlockLaw::new(&latency, 2.0).unwrap();
        let [m1, m2, m3] = raw_moments(&latency).unwrap();
        let (mean, var) = (2.0 * m1, 4.0 * (m2 - m1 * m1));
        let skew = (m3 - 3.0 * m1 * m2 + 2.0 * m1.powi(3)) / (m2 - m1 * m1).powf(1.5);
        let k = 50;
        let (got_mean, got_var, got_skew) = shape_of_sums(&law, k, 400_000);
        let n = k as f64;
        assert!((got_mean / (n * mean) - 1.0).abs() < 0.002, "{got_mean}");
        assert!((got_var / (n * var) - 1.0).abs() < 0.02, "{got_var}");
        // The sum's skewness is the call's over sqrt(k).
        assert!(
            (got_skew / (skew / n.sqrt()) - 1.0).abs() < 0.1,
            "{got_skew}"
        );
    }

    #[test]
    fn exponential_calls_sum_to_their_exact_gamma() {
        let law = BlockLaw::new(&Latency::Exponential { mean: 0.5 }, 1.0).unwrap();
        let BlockLaw::Gamma {
            shape,
            scale,
            shift,
            sign,
        } = law
        else {
            panic!("{law:?}")
        };
        assert!((shape - 1.0).abs() < 1e-9 && (scale - 0.5).abs() < 1e-9);
        assert!(shift.abs() < 1e-12 && sign == 1.0);
    }

    #[test]
    fn a_mixture_is_split_by_exact_counts() {
        let latency = Latency::Mixture(vec![
            (0.98, Latency::Constant(1.0)),
            (0.02, Latency::Constant(100.0)),
        ]);
        let law = BlockLaw::new(&latency, 1.0).unwrap();
        let mut rng = SmallRng::seed_from_u64(9);
        // 100 calls: the sum is 100 + 99 · (slow calls), a whole number of slow calls.
        for _ in 0..1000 {
            let slow = (law.sum(100, &mut rng) - 100.0) / 99.0;
            assert!((slow - slow.round()).abs() < 1e-9, "{slow}");
        }
        let (mean, var, _) = shape_of_sums(&law, 100, 200_000);
        assert!((mean / (100.0 + 99.0 * 2.0) - 1.0).abs() < 0.01, "{mean}");
        // Binomial(100, 0.02) slow calls, each 99 s more.
        assert!(
            (var / (99.0 * 99.0 * 100.0 * 0.02 * 0.98) - 1.0).abs() < 0.03,
            "{var}"
        );
    }

    #[test]
    fn moments_come_from_the_quantile_where_no_closed_form_exists() {
        let capped = Latency::Pareto {
            scale: 0.15,
            shape: 1.6,
            max: 60.0,
        };
        let [m1, ..] = raw_moments(&capped).unwrap();
        assert!((m1 / capped.mean() - 1.0).abs() < 0.001, "{m1}");
        let uncapped = Latency::Pareto {
            scale: 0.15,
            shape: 2.5,
            max: f64::INFINITY,
        };
        assert!(BlockLaw::new(&uncapped, 1.0).is_none());
    }

    #[test]
    fn uniform_calls_have_no_skew_and_sum_as_a_normal() {
        let law = BlockLaw::new(&Latency::Uniform { min: 1.0, max: 3.0 }, 1.0).unwrap();
        assert!(matches!(law, BlockLaw::Normal { .. }), "{law:?}");
        let c = law.moments();
        assert!((c.mean - 2.0).abs() < 1e-12 && (c.variance - 1.0 / 3.0).abs() < 1e-12);
    }
}
