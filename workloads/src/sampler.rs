//! The sampling kernel: turns one random 64-bit word into one latency, fast.
//!
//! Hand-written because no crate offers what the simulator needs: `rand_distr::LogNormal` costs an
//! `exp` and a ziggurat normal per draw (about 55 M draws/s on one core here), and empirical files
//! and mixtures have no sampler at all. Instead every distribution is inverted through a table of
//! its quantile function: the top bits of the word pick a segment, the rest interpolate inside it.
//! That is one load pair and one fused multiply-add per draw, whatever the distribution. In the
//! outermost segments, where quantile functions bend sharply (and the upper tail matters most for
//! P99.9), the draw falls back to the distribution's exact quantile, so tails are not truncated.

use rand::Rng;

use crate::latency::Latency;

const TABLE_BITS: u32 = 11;
const SEGMENTS: usize = 1 << TABLE_BITS;
/// Segments at each end that use the exact quantile: 4 of 2048 keeps the interpolation error below
/// 0.1 % of the value for the exponential (the worst shape we have) and costs 0.4 % slow draws.
const EXACT_SEGMENTS: usize = 4;
const FRACTION_BITS: u32 = 53;
const FRACTION_SCALE: f64 = 1.0 / (1u64 << FRACTION_BITS) as f64;

/// Draws latencies (seconds) from one distribution, scaled by a constant factor.
#[derive(Clone, Debug)]
pub struct Sampler {
    draw: Draw,
}

/// How a sampler draws: a constant, an inverse-CDF table, or a mixture of samplers.
#[derive(Clone, Debug)]
enum Draw {
    Constant(f64),
    Table(Box<Table>),
    /// Components with the cumulative weight, as a 64-bit threshold, that ends each one.
    Mixture(Box<[(u64, Sampler)]>),
}

#[derive(Clone, Debug)]
struct Table {
    values: Box<[f64]>,
    exact: Latency,
    scale: f64,
}

impl Sampler {
    /// A sampler for `latency` with every value multiplied by `scale`.
    pub fn new(latency: &Latency, scale: f64) -> Self {
        let draw = match latency {
            Latency::Constant(v) => Draw::Constant(v * scale),
            Latency::Mixture(parts) => {
                let mut cumulative = 0.0;
                let mut components: Vec<(u64, Sampler)> = parts
                    .iter()
                    .map(|(w, l)| {
                        cumulative += w;
                        (threshold(cumulative), Sampler::new(l, scale))
                    })
                    .collect();
                if let Some(last) = components.last_mut() {
                    last.0 = u64::MAX;
                }
                Draw::Mixture(components.into_boxed_slice())
            }
            other => {
                let mut values: Vec<f64> = (0..=SEGMENTS)
                    .map(|i| other.quantile(i as f64 / SEGMENTS as f64) * scale)
                    .collect();
                // The last point is the quantile at 1 (infinite for unbounded tails); the exact
                // path serves that segment, so the table only needs a finite placeholder.
                values[SEGMENTS] = values[SEGMENTS - 1];
                Draw::Table(Box::new(Table {
                    values: values.into_boxed_slice(),
                    exact: other.clone(),
                    scale,
                }))
            }
        };
        Sampler { draw }
    }

    /// True when every draw gives the same value (no randomness consumed).
    pub fn is_constant(&self) -> bool {
        matches!(self.draw, Draw::Constant(_))
    }

    /// One latency in seconds.
    #[inline(always)]
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        match &self.draw {
            Draw::Constant(v) => *v,
            Draw::Table(table) => table.sample(rng.next_u64()),
            Draw::Mixture(components) => sample_mixture(components, rng),
        }
    }
}

/// Out of line: mixtures recurse, and keeping the recursion here lets the common table case inline
/// into the simulator's loops.
#[inline(never)]
fn sample_mixture<R: Rng + ?Sized>(components: &[(u64, Sampler)], rng: &mut R) -> f64 {
    let pick = rng.next_u64();
    let component = components
        .iter()
        .find(|(end, _)| pick <= *end)
        .map_or(&components[components.len() - 1].1, |(_, s)| s);
    component.sample(rng)
}

impl Table {
    #[inline(always)]
    fn sample(&self, word: u64) -> f64 {
        let segment = (word >> (64 - TABLE_BITS)) as usize;
        let fraction = ((word << TABLE_BITS) >> (64 - FRACTION_BITS)) as f64 * FRACTION_SCALE;
        // One unsigned comparison tests both ends: segments below EXACT_SEGMENTS wrap around.
        if segment.wrapping_sub(EXACT_SEGMENTS) < SEGMENTS - 2 * EXACT_SEGMENTS {
            let lo = self.values[segment];
            let hi = self.values[segment + 1];
            fraction.mul_add(hi - lo, lo)
        } else {
            self.sample_exact(segment, fraction)
        }
    }

    #[cold]
    #[inline(never)]
    fn sample_exact(&self, segment: usize, fraction: f64) -> f64 {
        let u = (segment as f64 + fraction) / SEGMENTS as f64;
        self.exact.quantile(u) * self.scale
    }
}

fn threshold(cumulative: f64) -> u64 {
    if cumulative >= 1.0 {
        u64::MAX
    } else {
        (cumulative * 18_446_744_073_709_551_616.0) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::SmallRng;

    fn empirical_quantiles(s: &Sampler, n: usize, qs: &[f64]) -> Vec<f64> {
        let mut rng = SmallRng::seed_from_u64(7);
        let mut v: Vec<f64> = (0..n).map(|_| s.sample(&mut rng)).collect();
        v.sort_by(f64::total_cmp);
        qs.iter().map(|q| v[(q * n as f64) as usize]).collect()
    }

    #[test]
    fn table_matches_exact_quantiles() {
        let qs = [0.01, 0.5, 0.9, 0.99, 0.999];
        for latency in [
            Latency::Exponential { mean: 1.0 },
            Latency::lognormal(0.110, 0.340),
            Latency::Pareto {
                scale: 0.2,
                shape: 1.5,
                max: f64::INFINITY,
            },
            Latency::Uniform { min: 1.0, max: 3.0 },
        ] {
            let got = empirical_quantiles(&Sampler::new(&latency, 2.0), 2_000_000, &qs);
            for (q, g) in qs.iter().zip(got) {
                let want = latency.quantile(*q) * 2.0;
                assert!(
                    (g / want - 1.0).abs() < 0.02,
                    "{latency:?} q={q}: got {g}, want {want}"
                );
            }
        }
    }

    #[test]
    fn tails_are_not_truncated() {
        let latency = Latency::Exponential { mean: 1.0 };
        let s = Sampler::new(&latency, 1.0);
        let mut rng = SmallRng::seed_from_u64(3);
        let max = (0..2_000_000)
            .map(|_| s.sample(&mut rng))
            .fold(0.0, f64::max);
        // The largest of 2 M exponentials is about ln(2e6) = 14.5; a table truncated at its last
        // interpolated point would stop near ln(512) = 6.2.
        assert!(max > 12.0, "max {max}");
    }

    #[test]
    fn mixture_picks_components_by_weight() {
        let latency = Latency::Mixture(vec![
            (0.9, Latency::Constant(1.0)),
            (0.1, Latency::Constant(10.0)),
        ]);
        let s = Sampler::new(&latency, 1.0);
        let mut rng = SmallRng::seed_from_u64(11);
        let n = 1_000_000;
        let slow = (0..n).filter(|_| s.sample(&mut rng) > 5.0).count();
        let share = slow as f64 / n as f64;
        assert!((share - 0.1).abs() < 0.002, "share {share}");
    }
}
