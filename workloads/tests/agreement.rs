//! The block engine against the per-call engine, on every shipped spec and profile at 1x, 10x and
//! 100x: the two draw independently, so they are held to the same law by what independent samples
//! of one law must satisfy.
//!
//! - The Kolmogorov-Smirnov distance stays below its critical value at a 0.1 % level.
//! - The mean differs by at most four standard errors; the standard deviation by at most four of
//!   its own (the surrogate keeps each call's mean and variance, so neither may drift).
//! - P50, P99 and P99.9 differ by at most 0.5 % of their value, beyond four standard errors of
//!   the difference (a percentile's from the order statistics around it): at 100x the runtimes
//!   spread so little that 0.5 % is the binding term, at 1x the samples' noise is.
//!
//! The replays per row are sized so that the per-call engine's share stays near 40 s on two cores.
//! `LOCKBENCH_AGREEMENT_REPLAYS=N` multiplies them (the figures in docs/PERFORMANCE.md came from
//! `LOCKBENCH_AGREEMENT_REPLAYS=10 cargo test -p lockbench-workloads --test agreement --
//! --nocapture`).

use std::path::Path;

use lockbench_workloads::{Engine, JobModel, Shard, SimOptions, WorkloadSpec, simulate};

const SPECS: [&str; 4] = ["billing", "migration", "events", "ledger"];
/// Scales and the replays of each row at that scale (per-call cost grows with the volume).
const SCALES: [(f64, u64); 3] = [(1.0, 40_000), (10.0, 4_000), (100.0, 400)];
/// Tolerance on a percentile beyond its sampling noise: 0.5 % of its value.
const PERCENTILE_TOLERANCE: f64 = 0.005;
/// Standard errors a difference may reach by chance.
const STANDARD_ERRORS: f64 = 4.0;
/// The Kolmogorov-Smirnov coefficient at a 0.1 % level: c(α) = sqrt(-ln(α/2)/2).
const KS_COEFFICIENT: f64 = 1.949;

fn simulated(model: &JobModel, engine: Engine, replays: u64) -> Vec<(f64, u64)> {
    let options = SimOptions {
        replays,
        seed: 20261204,
        threads: 2,
        thresholds: Vec::new(),
        shard: Shard::WHOLE,
        engine,
    };
    simulate(model, &options, &|_| {}).recorded_s()
}

/// A sample held as (value, count) pairs in increasing order.
struct Sample {
    values: Vec<(f64, u64)>,
    count: u64,
}

impl Sample {
    fn new(values: Vec<(f64, u64)>) -> Self {
        let count = values.iter().map(|(_, c)| c).sum();
        Sample { values, count }
    }

    fn mean(&self) -> f64 {
        self.values.iter().map(|(v, c)| v * *c as f64).sum::<f64>() / self.count as f64
    }

    fn sd(&self) -> f64 {
        let mean = self.mean();
        let square: f64 = self
            .values
            .iter()
            .map(|(v, c)| (v - mean).powi(2) * *c as f64)
            .sum();
        (square / (self.count - 1) as f64).sqrt()
    }

    /// Fourth central moment over the variance squared (for the standard error of the sd).
    fn kurtosis(&self) -> f64 {
        let mean = self.mean();
        let fourth: f64 = self
            .values
            .iter()
            .map(|(v, c)| (v - mean).powi(4) * *c as f64)
            .sum::<f64>()
            / self.count as f64;
        fourth / self.sd().powi(4)
    }

    fn quantile(&self, q: f64) -> f64 {
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0;
        for (v, c) in &self.values {
            seen += c;
            if seen >= rank {
                return *v;
            }
        }
        self.values.last().map_or(0.0, |(v, _)| *v)
    }

    /// The standard error of the q-quantile, from the order statistics one binomial standard
    /// deviation either side of it.
    fn quantile_error(&self, q: f64) -> f64 {
        let step = (q * (1.0 - q) / self.count as f64).sqrt();
        (self.quantile((q + step).min(1.0)) - self.quantile((q - step).max(0.0))) / 2.0
    }

    /// The largest gap between the two samples' distribution functions.
    fn ks_distance(&self, other: &Sample) -> f64 {
        let (mut i, mut j) = (0, 0);
        let (mut a, mut b) = (0u64, 0u64);
        let mut distance = 0.0f64;
        while i < self.values.len() || j < other.values.len() {
            let x = match (self.values.get(i), other.values.get(j)) {
                (Some(p), Some(q)) => p.0.min(q.0),
                (Some(p), None) => p.0,
                (None, Some(q)) => q.0,
                (None, None) => unreachable!(),
            };
            while i < self.values.len() && self.values[i].0 <= x {
                a += self.values[i].1;
                i += 1;
            }
            while j < other.values.len() && other.values[j].0 <= x {
                b += other.values[j].1;
                j += 1;
            }
            let gap = a as f64 / self.count as f64 - b as f64 / other.count as f64;
            distance = distance.max(gap.abs());
        }
        distance
    }
}

/// What failed for one row, or nothing.
fn compare(row: &str, blocks: &Sample, exact: &Sample) -> Vec<String> {
    let mut failures = Vec::new();
    let n = exact.count as f64;
    let m = blocks.count as f64;
    let ks = blocks.ks_distance(exact);
    let ks_limit = KS_COEFFICIENT * ((n + m) / (n * m)).sqrt();
    let mean_error = (exact.sd().powi(2) / n + blocks.sd().powi(2) / m).sqrt();
    let sd_error = exact.sd() * ((exact.kurtosis() - 1.0) / 4.0 * (1.0 / n + 1.0 / m)).sqrt();
    let mut line = format!(
        "{row:<42} KS {ks:.4} (limit {ks_limit:.4})  mean {:+.3} %",
        100.0 * (blocks.mean() / exact.mean() - 1.0)
    );
    if ks > ks_limit {
        failures.push(format!("{row}: KS distance {ks:.4} above {ks_limit:.4}"));
    }
    if (blocks.mean() - exact.mean()).abs() > STANDARD_ERRORS * mean_error {
        failures.push(format!(
            "{row}: mean {:.4} s against {:.4} s (standard error {mean_error:.4})",
            blocks.mean(),
            exact.mean()
        ));
    }
    if (blocks.sd() - exact.sd()).abs() > STANDARD_ERRORS * sd_error {
        failures.push(format!(
            "{row}: standard deviation {:.4} s against {:.4} s (standard error {sd_error:.4})",
            blocks.sd(),
            exact.sd()
        ));
    }
    for q in [0.5, 0.99, 0.999] {
        let (b, e) = (blocks.quantile(q), exact.quantile(q));
        let noise = STANDARD_ERRORS
            * (exact.quantile_error(q).powi(2) + blocks.quantile_error(q).powi(2)).sqrt();
        line += &format!("  P{} {:+.3} %", q * 100.0, 100.0 * (b / e - 1.0));
        if (b - e).abs() > PERCENTILE_TOLERANCE * e + noise {
            failures.push(format!(
                "{row}: P{} {b:.3} s against {e:.3} s (0.5 % is {:.3} s, noise {noise:.3} s)",
                q * 100.0,
                PERCENTILE_TOLERANCE * e
            ));
        }
    }
    println!("{line}");
    failures
}

#[test]
fn the_block_engine_agrees_with_the_per_call_engine_on_every_shipped_spec() {
    let factor: u64 = std::env::var("LOCKBENCH_AGREEMENT_REPLAYS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let mut failures = Vec::new();
    let (mut rows, mut blocked_rows) = (0, 0);
    for name in SPECS {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("specs/{name}.toml"));
        let spec = WorkloadSpec::load(&path).expect("a shipped spec");
        for profile in spec.profiles.iter().map(|p| p.name.clone()) {
            for (scale, replays) in SCALES {
                let model = JobModel::new(&spec, &profile, scale).expect("the profile compiles");
                rows += 1;
                blocked_rows += usize::from(Engine::Blocks.for_model(&model) == Engine::Blocks);
                let replays = replays * factor;
                let blocks = Sample::new(simulated(&model, Engine::Blocks, replays));
                let exact = Sample::new(simulated(&model, Engine::Exact, replays));
                let row = format!("{name}/{profile} x{scale}");
                failures.extend(compare(&row, &blocks, &exact));
            }
        }
    }
    assert_eq!(
        blocked_rows, rows,
        "every shipped row runs on the block engine"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
