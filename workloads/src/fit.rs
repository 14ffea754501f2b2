//! Latency distributions fitted to observed durations: a lognormal when one fits, a two-component
//! lognormal mixture when a second mode is clearly there, else the samples themselves.

use std::sync::Arc;

use crate::latency::{Latency, empirical_quantile, standard_normal_quantile};

/// The quantiles a fit is shown at.
pub const SHOWN_QUANTILES: [f64; 4] = [0.5, 0.9, 0.99, 0.999];
/// Smallest duration taken as a duration, seconds: a zero is recorded as a nanosecond so that its
/// logarithm exists.
const FLOOR_S: f64 = 1e-9;

/// Which family was chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// Every sample the same: a constant.
    Constant,
    /// One lognormal.
    LogNormal,
    /// Two lognormal components.
    Mixture,
    /// The samples, replayed through their quantile function.
    Empirical,
}

impl Family {
    /// The spec's `dist` name.
    pub fn name(self) -> &'static str {
        match self {
            Family::Constant => "constant",
            Family::LogNormal => "lognormal",
            Family::Mixture => "mixture",
            Family::Empirical => "empirical",
        }
    }
}

/// One step's fit.
#[derive(Clone, Debug)]
pub struct Fit {
    /// The family chosen.
    pub family: Family,
    /// The fitted latency (for `empirical`, the samples with no file yet).
    pub latency: Latency,
    /// Samples it was fitted to.
    pub samples: usize,
    /// Observed quantiles at [`SHOWN_QUANTILES`], seconds.
    pub observed: [f64; 4],
    /// The fitted latency's quantiles there.
    pub fitted: [f64; 4],
    /// Kolmogorov-Smirnov distance between the samples and the fitted latency.
    pub ks: f64,
    /// The single lognormal's distance, whatever was chosen.
    pub lognormal_ks: f64,
    /// Why this family, in words.
    pub reason: String,
}

/// The KS distance a fitted family may reach and still be said to fit `n` samples: the 1 %
/// critical value 1.63 / sqrt(n), but never below 0.01: with a million samples any real latency
/// differs measurably from every textbook shape, and one point of cumulative probability is a
/// difference a TTL derivation does not feel.
pub fn ks_tolerance(n: usize) -> f64 {
    (1.63 / (n.max(1) as f64).sqrt()).max(0.01)
}

/// Fits `samples` (seconds, non-negative; any order).
pub fn fit(samples: &[f64]) -> Fit {
    let mut sorted: Vec<f64> = samples.iter().map(|x| x.max(0.0)).collect();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let observed = SHOWN_QUANTILES.map(|q| empirical_quantile(&sorted, q));
    let shown = |latency: &Latency| SHOWN_QUANTILES.map(|q| latency.quantile(q));
    if n == 0 || sorted[0] == sorted[n - 1] {
        let value = sorted.first().copied().unwrap_or(0.0);
        let latency = Latency::Constant(value);
        return Fit {
            family: Family::Constant,
            fitted: shown(&latency),
            latency,
            samples: n,
            observed,
            ks: 0.0,
            lognormal_ks: 0.0,
            reason: "every sample is the same".to_string(),
        };
    }
    let logs: Vec<f64> = sorted.iter().map(|x| x.max(FLOOR_S).ln()).collect();
    let tolerance = ks_tolerance(n);
    let (mu, sigma) = mean_sd(&logs);
    let single = lognormal(mu, sigma.max(1e-9));
    let single_ks = ks_distance(&sorted, &single);
    let two = two_modes(&logs);
    if let Some(m) = &two {
        let mixture = Latency::Mixture(
            m.components
                .iter()
                .map(|c| (c.weight, lognormal(c.mu, c.sigma)))
                .collect(),
        );
        let ks = ks_distance(&sorted, &mixture);
        if ks <= tolerance && single_ks > ks {
            return Fit {
                family: Family::Mixture,
                fitted: shown(&mixture),
                latency: mixture,
                samples: n,
                observed,
                ks,
                lognormal_ks: single_ks,
                reason: format!(
                    "a second mode: {:.1} % of the samples around {} against {} (separation {:.1}, BIC better by {:.0})",
                    m.components[1].weight * 100.0,
                    lockbench_core::format_duration_s(m.components[1].mu.exp()),
                    lockbench_core::format_duration_s(m.components[0].mu.exp()),
                    m.separation,
                    m.bic_gain
                ),
            };
        }
    }
    if single_ks <= tolerance {
        return Fit {
            family: Family::LogNormal,
            fitted: shown(&single),
            latency: single,
            samples: n,
            observed,
            ks: single_ks,
            lognormal_ks: single_ks,
            reason: format!("KS distance {single_ks:.4} within {tolerance:.4}"),
        };
    }
    let latency = Latency::Empirical {
        file: std::path::PathBuf::new(),
        unit: Some(1e-6),
        samples: Arc::from(sorted.clone()),
    };
    Fit {
        family: Family::Empirical,
        fitted: shown(&latency),
        ks: ks_distance(&sorted, &latency),
        latency,
        samples: n,
        observed,
        lognormal_ks: single_ks,
        reason: format!(
            "no lognormal fits (KS distance {single_ks:.4}, over {tolerance:.4}){}",
            if two.is_some() {
                " and neither does a two-component mixture"
            } else {
                ", and no second mode is clearly there"
            }
        ),
    }
}

/// The lognormal with `mu` and `sigma` of the underlying normal.
fn lognormal(mu: f64, sigma: f64) -> Latency {
    Latency::LogNormal { mu, sigma }
}

/// A lognormal's median and 99th percentile, seconds: how a spec writes it.
pub fn lognormal_p50_p99(mu: f64, sigma: f64) -> (f64, f64) {
    (
        mu.exp(),
        (mu + standard_normal_quantile(0.99) * sigma).exp(),
    )
}

/// The Kolmogorov-Smirnov distance between sorted samples and a latency's CDF.
pub fn ks_distance(sorted: &[f64], latency: &Latency) -> f64 {
    lockbench_core::stats::ks_distance(sorted, |x| latency.cdf(x))
}

fn mean_sd(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
    (mean, var.sqrt())
}

/// One component of a mixture in log space.
#[derive(Clone, Copy, Debug)]
pub struct Component {
    /// Its weight.
    pub weight: f64,
    /// Mean of the logarithms.
    pub mu: f64,
    /// Standard deviation of the logarithms.
    pub sigma: f64,
}

/// Two modes found in the logarithms, the main one first.
#[derive(Clone, Debug)]
pub struct TwoModes {
    /// The components, heavier first.
    pub components: [Component; 2],
    /// Ashman's D: |mu1 - mu2| sqrt(2) / sqrt(sigma1^2 + sigma2^2); above 2 the modes are apart.
    pub separation: f64,
    /// BIC of one normal minus BIC of the two-component mixture, on the logarithms.
    pub bic_gain: f64,
}

/// A second mode, when one is clearly there: EM for two normals on the logarithms, kept when the
/// modes are apart (Ashman's D over 2), the mixture's BIC beats one normal's by more than 10, and
/// the smaller component holds at least 0.1 % of the samples and 10 of them.
pub fn two_modes(logs: &[f64]) -> Option<TwoModes> {
    let n = logs.len();
    if n < 50 {
        return None;
    }
    // Start from the split that best separates the sorted logarithms into two groups (Otsu's
    // criterion on the empirical distribution), so a small far mode is not averaged away.
    let mut sorted = logs.to_vec();
    sorted.sort_by(f64::total_cmp);
    let prefix: Vec<f64> = std::iter::once(0.0)
        .chain(sorted.iter().scan(0.0, |s, x| {
            *s += x;
            Some(*s)
        }))
        .collect();
    let total = prefix[n];
    let min_side = 10.max(n / 1000);
    let split = (min_side..=n - min_side).max_by(|&a, &b| {
        let between = |k: usize| {
            let (w0, w1) = (k as f64, (n - k) as f64);
            let m0 = prefix[k] / w0;
            let m1 = (total - prefix[k]) / w1;
            w0 * w1 * (m0 - m1).powi(2)
        };
        between(a).total_cmp(&between(b))
    })?;
    let (mu0, s0) = mean_sd(&sorted[..split]);
    let (mu1, s1) = mean_sd(&sorted[split..]);
    let mut c = [
        Component {
            weight: split as f64 / n as f64,
            mu: mu0,
            sigma: s0.max(1e-6),
        },
        Component {
            weight: (n - split) as f64 / n as f64,
            mu: mu1,
            sigma: s1.max(1e-6),
        },
    ];
    let mut loglik = f64::NEG_INFINITY;
    let mut r = vec![0.0f64; n];
    for _ in 0..200 {
        // E step: responsibility of component 1.
        let mut ll = 0.0;
        for (x, ri) in logs.iter().zip(r.iter_mut()) {
            let p0 = c[0].weight * normal_pdf(*x, c[0].mu, c[0].sigma);
            let p1 = c[1].weight * normal_pdf(*x, c[1].mu, c[1].sigma);
            let sum = (p0 + p1).max(1e-300);
            *ri = p1 / sum;
            ll += sum.ln();
        }
        // M step.
        let w1: f64 = r.iter().sum();
        let w0 = n as f64 - w1;
        if w0 < 1.0 || w1 < 1.0 {
            return None;
        }
        let m0 = logs
            .iter()
            .zip(&r)
            .map(|(x, ri)| (1.0 - ri) * x)
            .sum::<f64>()
            / w0;
        let m1 = logs.iter().zip(&r).map(|(x, ri)| ri * x).sum::<f64>() / w1;
        let v0 = logs
            .iter()
            .zip(&r)
            .map(|(x, ri)| (1.0 - ri) * (x - m0).powi(2))
            .sum::<f64>()
            / w0;
        let v1 = logs
            .iter()
            .zip(&r)
            .map(|(x, ri)| ri * (x - m1).powi(2))
            .sum::<f64>()
            / w1;
        c = [
            Component {
                weight: w0 / n as f64,
                mu: m0,
                sigma: v0.sqrt().max(1e-6),
            },
            Component {
                weight: w1 / n as f64,
                mu: m1,
                sigma: v1.sqrt().max(1e-6),
            },
        ];
        let done = (ll - loglik).abs() < 1e-9 * ll.abs().max(1.0);
        loglik = ll;
        if done {
            break;
        }
    }
    let (mu, sd) = mean_sd(logs);
    let single: f64 = logs
        .iter()
        .map(|x| normal_pdf(*x, mu, sd.max(1e-9)).max(1e-300).ln())
        .sum();
    let ln_n = (n as f64).ln();
    let bic_gain = (-2.0 * single + 2.0 * ln_n) - (-2.0 * loglik + 5.0 * ln_n);
    if c[1].weight > c[0].weight {
        c.swap(0, 1);
    }
    let separation =
        (c[0].mu - c[1].mu).abs() * 2f64.sqrt() / (c[0].sigma.powi(2) + c[1].sigma.powi(2)).sqrt();
    let minor = c[1].weight * n as f64;
    (separation > 2.0
        && bic_gain > 10.0
        && c[1].weight >= 0.001
        && minor >= 10.0
        && has_dip(&sorted, &c))
    .then_some(TwoModes {
        components: c,
        separation,
        bic_gain,
    })
}

/// True when the samples themselves thin out between the two modes: around the fitted mixture's
/// lowest point in the middle 60 % between the means, a window of a tenth of their distance either
/// side holds at most half as many logarithms as the same window around the emptier mode. Two normals fit a flat or skewed shape (a uniform latency)
/// with modes apart on paper; a real second mode has a valley in the data.
fn has_dip(sorted_logs: &[f64], c: &[Component; 2]) -> bool {
    let (lo, hi) = (c[0].mu.min(c[1].mu), c[0].mu.max(c[1].mu));
    let density = |x: f64| {
        c.iter()
            .map(|k| k.weight * normal_pdf(x, k.mu, k.sigma))
            .sum::<f64>()
    };
    // Between the modes' own windows, so that the valley's window overlaps neither.
    let valley = (40..=160)
        .map(|i| lo + (hi - lo) * f64::from(i) / 200.0)
        .min_by(|a, b| density(*a).total_cmp(&density(*b)))
        .unwrap_or(0.5 * (lo + hi));
    let half = 0.1 * (hi - lo);
    let within = |x: f64| {
        let from = sorted_logs.partition_point(|v| *v < x - half);
        let to = sorted_logs.partition_point(|v| *v <= x + half);
        (to - from) as f64
    };
    let emptier = within(c[0].mu).min(within(c[1].mu));
    within(valley) <= 0.5 * emptier
}

fn normal_pdf(x: f64, mu: f64, sigma: f64) -> f64 {
    let z = (x - mu) / sigma;
    (-0.5 * z * z).exp() / (sigma * (2.0 * std::f64::consts::PI).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    fn draws(latency: &Latency, n: usize, seed: u64) -> Vec<f64> {
        let mut rng = SmallRng::seed_from_u64(seed);
        (0..n)
            .map(|_| latency.quantile(((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64))
            .collect()
    }

    #[test]
    fn a_lognormal_is_recovered_within_three_percent() {
        let truth = Latency::lognormal(0.110, 0.340);
        for seed in 0..20 {
            let f = fit(&draws(&truth, 10_000, seed));
            assert_eq!(f.family, Family::LogNormal, "seed {seed}: {}", f.reason);
            let Latency::LogNormal { mu, sigma } = f.latency else {
                unreachable!()
            };
            let (p50, p99) = lognormal_p50_p99(mu, sigma);
            assert!((p50 / 0.110 - 1.0).abs() < 0.03, "seed {seed}: p50 {p50}");
            assert!((p99 / 0.340 - 1.0).abs() < 0.03, "seed {seed}: p99 {p99}");
        }
    }

    #[test]
    fn a_second_mode_is_found() {
        // The billing spec's degraded payment API: 1.7 % of charges take seconds.
        let truth = Latency::Mixture(vec![
            (0.983, Latency::lognormal(0.115, 0.360)),
            (0.017, Latency::lognormal(4.5, 9.0)),
        ]);
        for seed in 0..10 {
            let f = fit(&draws(&truth, 10_000, seed));
            assert_eq!(f.family, Family::Mixture, "seed {seed}: {}", f.reason);
            let Latency::Mixture(parts) = &f.latency else {
                unreachable!()
            };
            let (w, Latency::LogNormal { mu, .. }) = &parts[1] else {
                unreachable!()
            };
            assert!((w - 0.017).abs() < 0.004, "seed {seed}: weight {w}");
            assert!(
                (mu.exp() / 4.5 - 1.0).abs() < 0.1,
                "seed {seed}: p50 {}",
                mu.exp()
            );
        }
    }

    #[test]
    fn a_shape_no_family_fits_stays_empirical() {
        // Uniform between 10 and 20 ms: no lognormal, no two modes.
        let truth = Latency::Uniform {
            min: 0.010,
            max: 0.020,
        };
        let f = fit(&draws(&truth, 20_000, 1));
        assert_eq!(f.family, Family::Empirical, "{}", f.reason);
        assert!(f.ks < 0.001);
    }

    #[test]
    fn identical_samples_are_a_constant() {
        let f = fit(&[0.005; 100]);
        assert_eq!(f.family, Family::Constant);
        assert_eq!(f.fitted[3], 0.005);
    }

    #[test]
    fn a_flat_shape_is_not_two_modes() {
        let truth = Latency::Uniform {
            min: 0.005,
            max: 0.010,
        };
        for seed in 0..10 {
            let logs: Vec<f64> = draws(&truth, 2_000, seed).iter().map(|x| x.ln()).collect();
            assert!(two_modes(&logs).is_none(), "seed {seed}");
        }
    }

    #[test]
    fn one_lognormal_has_no_second_mode() {
        let truth = Latency::lognormal(0.004, 0.015);
        let logs: Vec<f64> = draws(&truth, 10_000, 5).iter().map(|x| x.ln()).collect();
        assert!(two_modes(&logs).is_none());
    }
}
