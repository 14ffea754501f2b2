//! A generalized Pareto tail fitted to observed durations (peaks over threshold: Pickands 1975;
//! Davison & Smith 1990), so that a team with 10,000 logged runs gets a 1e-6 quantile with an
//! honest interval instead of its largest run.
//!
//! - **Threshold**: the empirical 90th percentile, so that a tenth of the runs are exceedances
//!   (at least [`MIN_EXCEEDANCES`] of them, else no fit: too few to say anything past the data).
//!   A fixed fraction is the usual rule of thumb (DuMouchel 1983); it is stated in the record.
//! - **Estimator**: probability-weighted moments (Hosking & Wallis 1987), which behave well in
//!   small samples where maximum likelihood does not, and need no optimiser. Valid for shapes
//!   below 1/2 (a tail heavier than that has no variance, and the fit says so).
//! - **Interval**: a nonparametric bootstrap over the runs (threshold re-chosen in each
//!   resample), 95 % percentile interval, [`RESAMPLES`] resamples with a fixed seed.
//!
//! A quantile at chance p per run is `u + σ/ξ ((ζ/p)^ξ - 1)`, ζ the fraction of runs above the
//! threshold u (`u + σ ln(ζ/p)` as ξ goes to 0).

use lockbench_core::records::model::{TailFit, TailFitQuantile};
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

/// The fraction of runs above the threshold.
pub const EXCEEDANCE_FRACTION: f64 = 0.10;
/// Fewest exceedances a fit is made from.
pub const MIN_EXCEEDANCES: usize = 30;
/// Bootstrap resamples behind each interval.
pub const RESAMPLES: usize = 400;
/// The chances per run a fit reports quantiles at.
pub const FIT_CHANCES: [f64; 4] = [1e-3, 1e-4, 1e-6, 1e-9];

/// Threshold, shape and scale of a fit, and the fraction of runs above the threshold.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Gpd {
    threshold: f64,
    zeta: f64,
    shape: f64,
    scale: f64,
}

impl Gpd {
    fn quantile(&self, p: f64) -> f64 {
        let ratio = self.zeta / p;
        if self.shape.abs() < 1e-6 {
            self.threshold + self.scale * ratio.ln()
        } else {
            self.threshold + self.scale / self.shape * (ratio.powf(self.shape) - 1.0)
        }
    }
}

/// The PWM fit of `sorted` (ascending); `None` with too few exceedances or a degenerate tail.
fn fit_sorted(sorted: &[f64]) -> Option<Gpd> {
    let n = sorted.len();
    let k = ((n as f64) * EXCEEDANCE_FRACTION).floor() as usize;
    if k < MIN_EXCEEDANCES {
        return None;
    }
    let threshold = sorted[n - k - 1];
    let y: Vec<f64> = sorted[n - k..].iter().map(|x| x - threshold).collect();
    let m = y.len() as f64;
    let a0 = y.iter().sum::<f64>() / m;
    // a1 = E[Y (1 - F(Y))], with plotting positions (i - 0.35) / m (Hosking & Wallis 1987).
    let a1 = y
        .iter()
        .enumerate()
        .map(|(i, v)| (1.0 - (i as f64 + 0.65) / m) * v)
        .sum::<f64>()
        / m;
    let denominator = a0 - 2.0 * a1;
    if a0 <= 0.0 || denominator <= 0.0 {
        return None;
    }
    // Hosking's k is minus the shape.
    let hosking_k = a0 / denominator - 2.0;
    let scale = 2.0 * a0 * a1 / denominator;
    Some(Gpd {
        threshold,
        zeta: k as f64 / n as f64,
        shape: -hosking_k,
        scale,
    })
}

/// The 2.5 % and 97.5 % points of `values`.
fn percentile_interval(values: &mut [f64]) -> (f64, f64) {
    values.sort_by(f64::total_cmp);
    let at = |q: f64| values[((values.len() - 1) as f64 * q).round() as usize];
    (at(0.025), at(0.975))
}

/// The tail fitted to `durations` (seconds, any order); `None` with fewer than
/// [`MIN_EXCEEDANCES`] runs above the 90th percentile, or a tail the estimator cannot fit.
pub fn fit_tail(durations: &[f64], seed: u64) -> Option<TailFit> {
    let mut sorted: Vec<f64> = durations
        .iter()
        .copied()
        .filter(|d| d.is_finite())
        .collect();
    sorted.sort_by(f64::total_cmp);
    let fit = fit_sorted(&sorted)?;
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut shapes = Vec::with_capacity(RESAMPLES);
    let mut quantiles: Vec<Vec<f64>> = vec![Vec::with_capacity(RESAMPLES); FIT_CHANCES.len()];
    let mut resample = vec![0.0; sorted.len()];
    for _ in 0..RESAMPLES {
        for x in resample.iter_mut() {
            *x = sorted[rng.random_range(0..sorted.len())];
        }
        resample.sort_by(f64::total_cmp);
        if let Some(f) = fit_sorted(&resample) {
            shapes.push(f.shape);
            for (q, p) in quantiles.iter_mut().zip(FIT_CHANCES) {
                q.push(f.quantile(p));
            }
        }
    }
    if shapes.len() < RESAMPLES / 2 {
        return None;
    }
    let (shape_lower, shape_upper) = percentile_interval(&mut shapes);
    Some(TailFit {
        runs: sorted.len() as u64,
        threshold_s: fit.threshold,
        threshold_quantile: 1.0 - EXCEEDANCE_FRACTION,
        exceedances: (fit.zeta * sorted.len() as f64).round() as u64,
        shape: fit.shape,
        shape_interval: [shape_lower, shape_upper],
        scale_s: fit.scale,
        largest_s: *sorted.last().expect("a fit has runs"),
        quantiles: FIT_CHANCES
            .iter()
            .zip(quantiles.iter_mut())
            .map(|(p, q)| {
                let (lower, upper) = percentile_interval(q);
                TailFitQuantile {
                    p: *p,
                    seconds: fit.quantile(*p),
                    interval_s: [lower, upper],
                }
            })
            .collect(),
        resamples: RESAMPLES as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` draws of a generalized Pareto of shape `xi` and scale 1 above 0.
    fn gpd_sample(n: usize, xi: f64, seed: u64) -> Vec<f64> {
        let mut rng = SmallRng::seed_from_u64(seed);
        (0..n)
            .map(|_| {
                let u: f64 = rng.random_range(1e-12..1.0);
                if xi.abs() < 1e-9 {
                    -u.ln()
                } else {
                    (u.powf(-xi) - 1.0) / xi
                }
            })
            .collect()
    }

    #[test]
    fn a_known_tail_gives_its_one_in_a_million_runtime() {
        // Shape 0.2: the runtime exceeded once in a million runs is (1e6^0.2 - 1) / 0.2 = 74.2,
        // where 10,000 runs' largest is about 30.
        let truth = (1e6f64.powf(0.2) - 1.0) / 0.2;
        let fit = fit_tail(&gpd_sample(10_000, 0.2, 3), 3).unwrap();
        let q = fit.quantiles.iter().find(|q| q.p == 1e-6).unwrap();
        assert!(
            q.interval_s[0] <= truth && truth <= q.interval_s[1],
            "{q:?} against {truth}"
        );
        assert!(
            (q.seconds / truth - 1.0).abs() < 0.3,
            "{q:?} against {truth}"
        );
        assert!(fit.largest_s < truth);
        assert!(
            fit.shape_interval[0] <= 0.2 && 0.2 <= fit.shape_interval[1],
            "{fit:?}"
        );
        assert_eq!(fit.exceedances, 1_000);
    }

    #[test]
    fn too_few_runs_are_not_fitted() {
        assert!(fit_tail(&gpd_sample(200, 0.1, 1), 1).is_none());
    }

    #[test]
    fn an_exponential_tail_has_shape_near_zero() {
        let fit = fit_tail(&gpd_sample(10_000, 0.0, 2), 2).unwrap();
        assert!(fit.shape.abs() < 0.1, "{fit:?}");
        assert!(fit.shape_interval[0] <= 0.0 && 0.0 <= fit.shape_interval[1]);
    }
}
