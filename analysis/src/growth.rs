//! How a job's runtime grows with its volume: a power law fitted on a log-log scale.

use lockbench_core::records::ttl::GrowthFit;

/// Fits the power law through `(volume, runtime seconds)` points; needs two distinct volumes.
pub fn fit_growth(points: &[(f64, f64)]) -> Option<GrowthFit> {
    let logs: Vec<(f64, f64)> = points
        .iter()
        .filter(|(v, r)| *v > 0.0 && *r > 0.0)
        .map(|(v, r)| (v.ln(), r.ln()))
        .collect();
    let n = logs.len() as f64;
    if logs.len() < 2 {
        return None;
    }
    let mean_x = logs.iter().map(|p| p.0).sum::<f64>() / n;
    let mean_y = logs.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = logs.iter().map(|p| (p.0 - mean_x).powi(2)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let sxy: f64 = logs.iter().map(|p| (p.0 - mean_x) * (p.1 - mean_y)).sum();
    let exponent = sxy / sxx;
    Some(GrowthFit {
        coefficient_s: (mean_y - exponent * mean_x).exp(),
        exponent,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn recovers_an_exact_power_law(c in 0.001f64..10.0, k in 0.1f64..2.0) {
            let pts: Vec<_> = [900.0, 1800.0, 3600.0].iter().map(|v: &f64| (*v, c * v.powf(k))).collect();
            let fit = fit_growth(&pts).unwrap();
            prop_assert!((fit.exponent - k).abs() < 1e-9);
            let target = c * 5000f64.powf(k);
            prop_assert!((fit.volume_reaching(target).unwrap() / 5000.0 - 1.0).abs() < 1e-6);
        }
    }

    #[test]
    fn flat_runtime_has_no_trigger() {
        let fit = fit_growth(&[(100.0, 50.0), (200.0, 50.0)]).unwrap();
        assert_eq!(fit.volume_reaching(100.0), None);
    }
}
