//! The model checked against past job runs: where each observed run falls in the simulated
//! distribution at its volume (its probability-integral transform), a Kolmogorov-Smirnov test of
//! those values against uniform, and binomial tests of the runs beyond the simulated P99 and
//! P99.9.

use lockbench_core::records::model::{CheckBand, CheckRecord, CheckedRun, ModelCheck};
use lockbench_core::stats::{ks_distance, quantile_sorted};
use lockbench_workloads::observed::ObservedRun;
use statrs::distribution::{Binomial, Discrete, DiscreteCDF};

/// Significance of each test (the KS test, runs beyond P99 too many or too few, beyond P99.9 too
/// many): a model that is right is rejected in at most about 4 % of checks.
pub const CHECK_ALPHA: f64 = 0.01;

/// Most volumes simulated per profile: beyond, eight volumes spread over the observed range and
/// each run compared with the distribution interpolated between its two neighbours.
pub const MAX_VOLUMES: usize = 8;

/// What a check simulates: for each profile the runs name (in name order), the volumes.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckPlan {
    /// (profile, volumes ascending).
    pub grids: Vec<(String, Vec<u64>)>,
}

impl CheckPlan {
    /// The volumes needed for `runs`: every distinct volume of a profile when there are few,
    /// else [`MAX_VOLUMES`] spread evenly from its smallest to its largest.
    pub fn new(runs: &[ObservedRun]) -> Self {
        let mut profiles: Vec<&str> = runs.iter().map(|r| r.profile.as_str()).collect();
        profiles.sort_unstable();
        profiles.dedup();
        let grids = profiles
            .into_iter()
            .map(|p| {
                let volumes: Vec<u64> = runs
                    .iter()
                    .filter(|r| r.profile == p)
                    .map(|r| r.volume)
                    .collect();
                (p.to_string(), grid(&volumes))
            })
            .collect();
        CheckPlan { grids }
    }

    /// Every (profile, volume) to simulate, in the order [`check`] expects their quantiles.
    pub fn models(&self) -> impl Iterator<Item = (&str, u64)> {
        self.grids
            .iter()
            .flat_map(|(p, g)| g.iter().map(move |v| (p.as_str(), *v)))
    }

    fn index_of(&self, profile: &str, volume: u64) -> usize {
        self.models()
            .position(|m| m == (profile, volume))
            .expect("a volume of the plan")
    }
}

/// The volumes simulated for runs of these volumes (see [`CheckPlan::new`]).
fn grid(volumes: &[u64]) -> Vec<u64> {
    let mut distinct = volumes.to_vec();
    distinct.sort_unstable();
    distinct.dedup();
    if distinct.len() <= MAX_VOLUMES {
        return distinct;
    }
    let (lo, hi) = (distinct[0] as f64, distinct[distinct.len() - 1] as f64);
    let mut g: Vec<u64> = (0..MAX_VOLUMES)
        .map(|i| (lo + (hi - lo) * i as f64 / (MAX_VOLUMES - 1) as f64).round() as u64)
        .collect();
    g.dedup();
    g
}

/// What a check record names besides its figures.
#[derive(Clone, Debug)]
pub struct CheckContext {
    /// Workload name and its unit of volume.
    pub workload: String,
    pub unit: String,
    /// The file of observed runs, as given.
    pub observed: String,
    /// Replays per simulated volume, and the seed.
    pub replays: u64,
    pub seed: u64,
}

/// The outcome of a check.
#[derive(Clone, Debug)]
pub struct Checked {
    pub record: CheckRecord,
    pub runs: Vec<CheckedRun>,
}

impl Checked {
    /// What `ttl --observed` carries.
    pub fn summary(&self) -> ModelCheck {
        ModelCheck {
            observed: self.record.observed.clone(),
            runs: self.record.runs,
            consistent: self.record.consistent,
            verdict: self.record.verdict.clone(),
        }
    }
}

/// Places one run in the simulated distribution at its volume: interpolated between the two
/// nearest volumes of its profile's grid, and counted for the nearer one in `nearest_counts`.
fn place(
    plan: &CheckPlan,
    r: &ObservedRun,
    simulated: &[Quantiles],
    nearest_counts: &mut [u64],
) -> CheckedRun {
    let g = &plan
        .grids
        .iter()
        .find(|(p, _)| *p == r.profile)
        .expect("a profile of the plan")
        .1;
    let upper = g.partition_point(|&v| v < r.volume).min(g.len() - 1);
    let lower = if g[upper] == r.volume || upper == 0 {
        upper
    } else {
        upper - 1
    };
    let (a, b) = (
        plan.index_of(&r.profile, g[lower]),
        plan.index_of(&r.profile, g[upper]),
    );
    let t = if g[upper] == g[lower] {
        0.0
    } else {
        ((r.volume - g[lower]) as f64 / (g[upper] - g[lower]) as f64).clamp(0.0, 1.0)
    };
    let q = |u: f64| (1.0 - t) * simulated[a].at(u) + t * simulated[b].at(u);
    nearest_counts[if t < 0.5 { a } else { b }] += 1;
    CheckedRun {
        line: r.line,
        profile: r.profile.clone(),
        volume: r.volume,
        duration_s: r.seconds,
        pit: pit_of(q, r.seconds),
        sim_p50_s: q(0.5),
        sim_p99_s: q(0.99),
        sim_p999_s: q(0.999),
    }
}

/// Places each run in the simulated distribution at its volume (interpolated between the plan's
/// two nearest volumes of its profile) and tests where they fall. `simulated` holds the
/// quantiles of each of `plan.models()`, in that order; every run's profile is in the plan.
pub fn check(
    plan: &CheckPlan,
    runs: &[ObservedRun],
    simulated: &[Quantiles],
    context: &CheckContext,
) -> Checked {
    assert_eq!(
        simulated.len(),
        plan.models().count(),
        "one simulation per model"
    );
    let mut nearest_counts = vec![0u64; simulated.len()];
    let checked: Vec<CheckedRun> = runs
        .iter()
        .map(|r| place(plan, r, simulated, &mut nearest_counts))
        .collect();
    let pits: Vec<f64> = checked.iter().map(|c| c.pit).collect();
    let beyond = |limit: fn(&CheckedRun) -> f64| {
        checked.iter().filter(|c| c.duration_s > limit(c)).count() as u64
    };
    let (beyond_p99, beyond_p999) = (beyond(|c| c.sim_p99_s), beyond(|c| c.sim_p999_s));
    let figures = check_figures(&pits, beyond_p99, beyond_p999);
    let (consistent, words) = verdict(&figures);
    let n = runs.len() as f64;
    let record = CheckRecord {
        workload: context.workload.clone(),
        unit: context.unit.clone(),
        observed: context.observed.clone(),
        runs: runs.len() as u64,
        replays: context.replays,
        seed: context.seed,
        bands: plan
            .models()
            .zip(simulated)
            .zip(&nearest_counts)
            .map(|(((profile, volume), q), runs)| CheckBand {
                profile: profile.to_string(),
                volume,
                p50_s: q.at(0.5),
                p99_s: q.at(0.99),
                p999_s: q.at(0.999),
                runs: *runs,
            })
            .collect(),
        ks_distance: figures.ks_distance,
        ks_p_value: figures.ks_p,
        median_pit: figures.median_pit,
        beyond_p99,
        expected_beyond_p99: n * 0.01,
        p99_p_value: figures.p99_p,
        beyond_p999,
        expected_beyond_p999: n * 0.001,
        p999_p_value: figures.p999_p,
        alpha: CHECK_ALPHA,
        consistent,
        verdict: words,
        tail_fit: lockbench_workloads::tail_fit::fit_tail(
            &runs.iter().map(|r| r.seconds).collect::<Vec<_>>(),
            context.seed,
        ),
    };
    Checked {
        record,
        runs: checked,
    }
}

/// A simulated distribution as a step function: quantiles by binary search.
#[derive(Clone, Debug)]
pub struct Quantiles {
    values: Vec<f64>,
    cumulative: Vec<u64>,
}

impl Quantiles {
    /// From (value, count) pairs, ascending (see `RuntimeHistogram::recorded_s`).
    pub fn new(recorded: &[(f64, u64)]) -> Self {
        let mut total = 0;
        let cumulative = recorded
            .iter()
            .map(|(_, c)| {
                total += c;
                total
            })
            .collect();
        Quantiles {
            values: recorded.iter().map(|(v, _)| *v).collect(),
            cumulative,
        }
    }

    /// The value at quantile `u`: the smallest whose cumulative count reaches u x total.
    pub fn at(&self, u: f64) -> f64 {
        let Some(&total) = self.cumulative.last() else {
            return 0.0;
        };
        let rank = ((u.clamp(0.0, 1.0) * total as f64).ceil() as u64).max(1);
        let i = self.cumulative.partition_point(|&c| c < rank);
        self.values[i.min(self.values.len() - 1)]
    }
}

/// The value u in [0, 1] at which the quantile function `quantile` reaches `x`: where `x` falls in
/// the distribution (bisection; `quantile` must not decrease).
pub fn pit_of(quantile: impl Fn(f64) -> f64, x: f64) -> f64 {
    if x <= quantile(0.0) {
        return 0.0;
    }
    if x >= quantile(1.0) {
        return 1.0;
    }
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    for _ in 0..40 {
        let mid = 0.5 * (lo + hi);
        if quantile(mid) < x {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// Kolmogorov-Smirnov distance of `u` (values in [0, 1]) from the uniform distribution, and its
/// p-value (the Kolmogorov distribution with Stephens' correction for small n).
pub fn ks_uniform(u: &[f64]) -> (f64, f64) {
    let mut sorted = u.to_vec();
    sorted.sort_by(f64::total_cmp);
    ks_uniform_sorted(&sorted)
}

/// [`ks_uniform`] of values already in ascending order.
fn ks_uniform_sorted(sorted: &[f64]) -> (f64, f64) {
    let n = sorted.len();
    if n == 0 {
        return (0.0, 1.0);
    }
    let d = ks_distance(sorted, |x| x);
    let root = (n as f64).sqrt();
    let lambda = (root + 0.12 + 0.11 / root) * d;
    (d, kolmogorov_q(lambda))
}

/// P(K > lambda) for the Kolmogorov distribution.
fn kolmogorov_q(lambda: f64) -> f64 {
    if lambda < 0.2 {
        return 1.0;
    }
    let mut sum = 0.0;
    for k in 1..=100 {
        let k = k as f64;
        let term = 2.0 * (-1f64).powf(k - 1.0) * (-2.0 * k * k * lambda * lambda).exp();
        sum += term;
        if term.abs() < 1e-12 {
            break;
        }
    }
    sum.clamp(0.0, 1.0)
}

/// P(X >= k) for X ~ Binomial(n, p). Beyond the mean it sums the upper terms, so a far tail
/// keeps its digits instead of cancelling to 0 in 1 - cdf.
pub fn binomial_at_least(k: u64, n: u64, p: f64) -> f64 {
    if k == 0 {
        return 1.0;
    }
    if k > n {
        return 0.0;
    }
    let Ok(b) = Binomial::new(p, n) else {
        return 1.0;
    };
    if (k as f64) <= n as f64 * p {
        return (1.0 - b.cdf(k - 1)).clamp(0.0, 1.0);
    }
    let mut sum = 0.0;
    for j in k..=n {
        let term = b.pmf(j);
        sum += term;
        if term < sum * 1e-17 {
            break;
        }
    }
    sum.clamp(0.0, 1.0)
}

/// P(X <= k) for X ~ Binomial(n, p).
pub fn binomial_at_most(k: u64, n: u64, p: f64) -> f64 {
    Binomial::new(p, n).map_or(1.0, |b| b.cdf(k).clamp(0.0, 1.0))
}

/// What the three tests say.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckFigures {
    /// Observed runs.
    pub runs: u64,
    /// KS distance of the PIT values from uniform, and its p-value.
    pub ks_distance: f64,
    /// Its p-value.
    pub ks_p: f64,
    /// The median PIT value: 0.5 when the typical run is where the model puts it.
    pub median_pit: f64,
    /// The share of PIT values between 0.25 and 0.75: 0.5 when the runs spread as the model's.
    pub central_share: f64,
    /// Runs beyond the simulated P99 at their volume.
    pub beyond_p99: u64,
    /// P(at least that many) if the model is right.
    pub p99_p: f64,
    /// P(at most that many) if the model is right: too few means the model overstates the tail.
    pub p99_low_p: f64,
    /// Runs beyond the simulated P99.9.
    pub beyond_p999: u64,
    /// P(at least that many).
    pub p999_p: f64,
}

/// The three tests of `pits` (each run's PIT value) and of the runs beyond P99 and P99.9.
pub fn check_figures(pits: &[f64], beyond_p99: u64, beyond_p999: u64) -> CheckFigures {
    let n = pits.len() as u64;
    // Sorted once, for the KS test and the median.
    let mut sorted = pits.to_vec();
    sorted.sort_by(f64::total_cmp);
    let (ks_distance, ks_p) = ks_uniform_sorted(&sorted);
    let median_pit = if sorted.is_empty() {
        0.5
    } else {
        quantile_sorted(&sorted, 0.5)
    };
    CheckFigures {
        runs: n,
        ks_distance,
        ks_p,
        median_pit,
        central_share: if pits.is_empty() {
            0.5
        } else {
            pits.iter().filter(|u| (0.25..=0.75).contains(*u)).count() as f64 / pits.len() as f64
        },
        beyond_p99,
        p99_p: binomial_at_least(beyond_p99, n, 0.01),
        p99_low_p: binomial_at_most(beyond_p99, n, 0.01),
        beyond_p999,
        p999_p: binomial_at_least(beyond_p999, n, 0.001),
    }
}

/// The verdict in words, and whether the model is consistent with the runs. The tail comes
/// first: it is what a TTL rests on.
pub fn verdict(f: &CheckFigures) -> (bool, String) {
    let n = f.runs as f64;
    if f.p999_p < CHECK_ALPHA {
        return (
            false,
            format!(
                "the model underestimates the tail: {} of {} runs beyond the simulated P99.9 ({:.1} expected, p = {})",
                f.beyond_p999,
                f.runs,
                n * 0.001,
                p_text(f.p999_p)
            ),
        );
    }
    if f.p99_p < CHECK_ALPHA {
        return (
            false,
            format!(
                "the model underestimates the tail: {} of {} runs beyond the simulated P99 ({:.1} expected, p = {})",
                f.beyond_p99,
                f.runs,
                n * 0.01,
                p_text(f.p99_p)
            ),
        );
    }
    if f.ks_p < CHECK_ALPHA {
        let how = if (f.median_pit - 0.5).abs() >= 0.05 {
            format!(
                "the model {} runtimes: the median run falls at the simulated P{:.0}",
                if f.median_pit > 0.5 {
                    "underestimates"
                } else {
                    "overestimates"
                },
                f.median_pit * 100.0
            )
        } else {
            // The middle is right; the spread is not.
            format!(
                "the runs spread {} than the model: {:.0} % of them fall between the simulated P25 and P75 (50 % expected)",
                if f.central_share > 0.5 {
                    "less"
                } else {
                    "more"
                },
                f.central_share * 100.0
            )
        };
        return (
            false,
            format!(
                "{how} (KS distance {:.3}, p = {})",
                f.ks_distance,
                p_text(f.ks_p)
            ),
        );
    }
    if f.p99_low_p < CHECK_ALPHA {
        return (
            false,
            format!(
                "the model overestimates the tail: {} of {} runs beyond the simulated P99 ({:.1} expected, p = {})",
                f.beyond_p99,
                f.runs,
                n * 0.01,
                p_text(f.p99_low_p)
            ),
        );
    }
    (
        true,
        format!(
            "consistent: the runs fall where the model puts them (KS distance {:.3}, p = {}; {} of {} beyond the simulated P99, {:.1} expected; {} beyond P99.9, {:.1} expected)",
            f.ks_distance,
            p_text(f.ks_p),
            f.beyond_p99,
            f.runs,
            n * 0.01,
            f.beyond_p999,
            n * 0.001
        ),
    )
}

fn p_text(p: f64) -> String {
    if p >= 0.01 {
        format!("{p:.2}")
    } else {
        format!("{p:.1e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(line: u64, profile: &str, volume: u64, seconds: f64) -> ObservedRun {
        ObservedRun {
            line,
            profile: profile.into(),
            volume,
            seconds,
        }
    }

    #[test]
    fn few_volumes_are_simulated_as_they_are_many_on_a_grid() {
        assert_eq!(grid(&[1800, 1700, 1800]), vec![1700, 1800]);
        let g = grid(&(1000..2000).collect::<Vec<_>>());
        assert_eq!(g.len(), MAX_VOLUMES);
        assert_eq!((g[0], g[MAX_VOLUMES - 1]), (1000, 1999));
        let plan = CheckPlan::new(&[
            run(2, "b", 10, 1.0),
            run(3, "a", 20, 1.0),
            run(4, "b", 5, 1.0),
        ]);
        let models: Vec<(&str, u64)> = plan.models().collect();
        assert_eq!(models, vec![("a", 20), ("b", 5), ("b", 10)]);
    }

    /// Uniform on [lo, hi] as a histogram of 1,000 steps.
    fn uniform(lo: f64, hi: f64) -> Quantiles {
        let steps: Vec<(f64, u64)> = (0..1000)
            .map(|i| (lo + (hi - lo) * (i as f64 + 0.5) / 1000.0, 1))
            .collect();
        Quantiles::new(&steps)
    }

    #[test]
    fn a_run_between_two_volumes_is_placed_in_their_interpolation() {
        // Volumes 100 and 200: uniform on [1, 2] s and on [3, 4] s. A run at volume 150 meets
        // uniform on [2, 3]: 2.5 s is its median, and it counts as nearest to 200 (t = 0.5).
        let runs = vec![
            run(2, "p", 100, 1.5),
            run(3, "p", 200, 3.9),
            run(4, "p", 150, 2.5),
        ];
        // As a plan of many volumes would simulate them: 100 and 200 only, 150 between.
        let plan = CheckPlan {
            grids: vec![("p".to_string(), vec![100, 200])],
        };
        let context = CheckContext {
            workload: "w".into(),
            unit: "items".into(),
            observed: "runs.csv".into(),
            replays: 1000,
            seed: 7,
        };
        let checked = check(
            &plan,
            &runs,
            &[uniform(1.0, 2.0), uniform(3.0, 4.0)],
            &context,
        );
        let pit: Vec<f64> = checked.runs.iter().map(|c| c.pit).collect();
        assert!((pit[0] - 0.5).abs() < 0.01, "{pit:?}");
        assert!((pit[1] - 0.9).abs() < 0.01, "{pit:?}");
        assert!((pit[2] - 0.5).abs() < 0.01, "{pit:?}");
        assert!((checked.runs[2].sim_p50_s - 2.5).abs() < 0.01);
        let nearest: Vec<u64> = checked.record.bands.iter().map(|b| b.runs).collect();
        assert_eq!(nearest, vec![1, 2]);
        assert_eq!(checked.record.runs, 3);
        assert_eq!((checked.record.seed, checked.record.beyond_p99), (7, 0));
        assert_eq!(checked.summary().runs, 3);
    }

    #[test]
    fn pit_inverts_a_quantile_function() {
        let q = |u: f64| 10.0 + 5.0 * u;
        assert!((pit_of(q, 12.5) - 0.5).abs() < 1e-9);
        assert_eq!(pit_of(q, 9.0), 0.0);
        assert_eq!(pit_of(q, 20.0), 1.0);
    }

    #[test]
    fn ks_p_values_are_those_pinned_before_the_distance_moved_to_core() {
        // Computed by this crate's own KS distance before it became core::stats::ks_distance.
        let a: Vec<f64> = (0..40)
            .map(|i| ((i * 37 % 40) as f64 + 0.5) / 40.0)
            .collect();
        let b: Vec<f64> = a.iter().map(|u| u.powf(1.6)).collect();
        let c = [0.02, 0.11, 0.35, 0.36, 0.9];
        let pinned = [
            (&a[..], 0.012500000000000067, 1.0),
            (&b[..], 0.1838084425191947, 0.11900211990025557),
            (&c[..], 0.44000000000000006, 0.21264709273544205),
        ];
        for (u, d, p) in pinned {
            let (got_d, got_p) = ks_uniform(u);
            assert!(
                (got_d - d).abs() < 1e-12 && (got_p - p).abs() < 1e-12,
                "{got_d} {got_p}"
            );
        }
    }

    #[test]
    fn ks_accepts_uniform_and_rejects_a_shift() {
        let even: Vec<f64> = (0..400).map(|i| (i as f64 + 0.5) / 400.0).collect();
        let (d, p) = ks_uniform(&even);
        assert!(d < 0.01 && p > 0.99, "{d} {p}");
        let shifted: Vec<f64> = even.iter().map(|u| u.powf(0.5)).collect();
        let (_, p) = ks_uniform(&shifted);
        assert!(p < 1e-6, "{p}");
    }

    #[test]
    fn binomial_tails() {
        // 9 of 400 beyond P99.9 with 0.4 expected is far out.
        assert!(binomial_at_least(9, 400, 0.001) < 1e-8);
        assert_eq!(binomial_at_least(0, 400, 0.001), 1.0);
        let p1 = binomial_at_least(1, 400, 0.001);
        let none = Binomial::new(0.001, 400).unwrap().pmf(0);
        assert!((p1 - (1.0 - none)).abs() < 1e-12);
        assert!(
            (binomial_at_most(3, 400, 0.01) + binomial_at_least(4, 400, 0.01) - 1.0).abs() < 1e-12
        );
        // A far tail keeps its digits.
        let far = binomial_at_least(60, 400, 0.001);
        assert!(far > 0.0 && far < 1e-60, "{far}");
        let near = binomial_at_least(9, 400, 0.001);
        assert!((near - (1.0 - binomial_at_most(8, 400, 0.001))).abs() < 1e-12);
    }

    #[test]
    fn the_verdict_names_the_tail() {
        let pits: Vec<f64> = (0..400).map(|i| (i as f64 + 0.5) / 400.0).collect();
        let (ok, text) = verdict(&check_figures(&pits, 4, 0));
        assert!(ok && text.starts_with("consistent"), "{text}");
        let (ok, text) = verdict(&check_figures(&pits, 12, 9));
        assert!(!ok);
        assert!(
            text.contains(
                "underestimates the tail: 9 of 400 runs beyond the simulated P99.9 (0.4 expected"
            ),
            "{text}"
        );
        // The right middle with half the spread: a spread, not a shift.
        let narrow: Vec<f64> = pits.iter().map(|u| 0.5 + (u - 0.5) * 0.5).collect();
        let (ok, text) = verdict(&check_figures(&narrow, 4, 0));
        assert!(
            !ok && text.starts_with("the runs spread less than the model"),
            "{text}"
        );
    }
}
