//! The sample statistics more than one crate needs, each in one convention: the interpolated
//! quantile of sorted samples, the median (the mean of the middle two of an even count) and the
//! Kolmogorov-Smirnov distance to a distribution function.

/// The quantile `u` (in [0, 1]) of sorted samples, interpolated linearly between the two order
/// statistics around position `u (n - 1)` (Hyndman and Fan's rule 7, R's and numpy's default);
/// 0 when there are none.
pub fn quantile_sorted(sorted: &[f64], u: f64) -> f64 {
    match sorted.len() {
        0 => 0.0,
        1 => sorted[0],
        n => {
            let pos = u.clamp(0.0, 1.0) * (n - 1) as f64;
            let i = (pos as usize).min(n - 2);
            let frac = pos - i as f64;
            sorted[i] + frac * (sorted[i + 1] - sorted[i])
        }
    }
}

/// The median of `values` in any order (the mean of the middle two of an even count); `None`
/// when there are none.
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    Some(quantile_sorted(&sorted, 0.5))
}

/// The Kolmogorov-Smirnov distance between sorted samples and the distribution function `cdf`:
/// the largest gap between `cdf` and the samples' step function, on either side of each step.
pub fn ks_distance(sorted: &[f64], cdf: impl Fn(f64) -> f64) -> f64 {
    let n = sorted.len() as f64;
    sorted
        .iter()
        .enumerate()
        .map(|(i, &x)| {
            let f = cdf(x);
            (f - i as f64 / n).abs().max(((i + 1) as f64 / n - f).abs())
        })
        .fold(0.0, f64::max)
}

/// True when `count` samples support printing percentile `q`: at least one sample lies beyond it
/// (100 for P99, 1,000 for P99.9). Below that the record prints the maximum with its count.
pub fn percentile_supported(q: f64, count: u64) -> bool {
    count as f64 * (1.0 - q) >= 1.0 - 1e-9
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_interpolate_between_order_statistics() {
        let s = [1.0, 2.0, 4.0, 8.0];
        assert_eq!(quantile_sorted(&s, 0.0), 1.0);
        assert_eq!(quantile_sorted(&s, 1.0), 8.0);
        // Position 0.5 x 3 = 1.5: halfway from 2 to 4.
        assert_eq!(quantile_sorted(&s, 0.5), 3.0);
        assert_eq!(quantile_sorted(&[], 0.5), 0.0);
        assert_eq!(quantile_sorted(&[7.0], 0.9), 7.0);
    }

    #[test]
    fn the_median_of_an_even_count_is_the_mean_of_the_middle_two() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
    }

    #[test]
    fn ks_distance_is_the_largest_gap_on_either_side_of_a_step() {
        // Uniform on [0, 1]: samples at 0.1 and 0.2 leave the step function at 1 from 0.2
        // where the cdf is 0.2, a gap of 0.8.
        assert!((ks_distance(&[0.1, 0.2], |x| x) - 0.8).abs() < 1e-12);
        assert!((ks_distance(&[0.25, 0.75], |x| x) - 0.25).abs() < 1e-12);
        assert_eq!(ks_distance(&[], |x| x), 0.0);
    }
}
