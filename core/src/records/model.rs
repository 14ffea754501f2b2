//! The records of `calibrate` (latencies fitted to observed durations, printed with `--json`) and
//! `check` (past job runs against the simulated distribution, `results.json` of a check
//! directory).

use serde::{Deserialize, Serialize};

use super::codec::present;

/// What `calibrate --json` prints: one fit per step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CalibrationRecord {
    /// The files read.
    pub inputs: Vec<String>,
    /// The spec written.
    pub out: String,
    /// One entry per calibrated step, in the order first observed.
    pub steps: Vec<StepFit>,
    /// Steps of `--spec` with no observed durations, written unchanged after the fitted ones.
    #[serde(default)]
    pub kept_steps: Vec<String>,
}

/// One step's fitted latency and how well it fits.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepFit {
    /// Step name.
    pub step: String,
    /// `db`, `api` or `cpu`.
    pub target: String,
    /// `lognormal`, `mixture`, `empirical` or `constant`.
    pub dist: String,
    /// Samples fitted.
    pub samples: u64,
    /// Observed P50, P90, P99, P99.9, seconds.
    pub observed_s: [f64; 4],
    /// The fitted latency's P50, P90, P99, P99.9, seconds.
    pub fitted_s: [f64; 4],
    /// Kolmogorov-Smirnov distance between the samples and the fitted latency.
    pub ks_distance: f64,
    /// The distance below which a family was said to fit.
    pub ks_tolerance: f64,
    /// The single lognormal's distance, whatever was chosen.
    pub lognormal_ks_distance: f64,
    /// Why this family.
    pub reason: String,
    /// The `latency = ...` value written for the step.
    pub latency_toml: String,
    /// For `empirical`, the samples file written beside the spec.
    #[serde(deserialize_with = "present")]
    pub samples_file: Option<String>,
    /// Tails claimed beyond what the samples show.
    pub warnings: Vec<String>,
    /// A generalized Pareto tail fitted to the step's latencies; `None` with too few above the
    /// threshold. Added without a schema bump: absent in records written before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail_fit: Option<TailFit>,
}

/// `results.json` of `check`: past job runs against the simulated distribution at their volumes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckRecord {
    /// Workload name.
    pub workload: String,
    /// Unit of volume.
    pub unit: String,
    /// The file of observed runs.
    pub observed: String,
    /// Observed runs checked.
    pub runs: u64,
    /// Replays simulated at each volume.
    pub replays: u64,
    /// Seed of the simulation.
    pub seed: u64,
    /// The simulated distribution at each (profile, volume) the runs were compared with.
    pub bands: Vec<CheckBand>,
    /// Kolmogorov-Smirnov distance of the runs' PIT values from uniform.
    pub ks_distance: f64,
    /// Its p-value.
    pub ks_p_value: f64,
    /// The median PIT value (0.5 when the typical run is where the model puts it).
    pub median_pit: f64,
    /// Runs beyond the simulated P99 at their volume.
    pub beyond_p99: u64,
    /// How many the model expects (1 % of the runs).
    pub expected_beyond_p99: f64,
    /// Binomial P(at least that many) if the model is right.
    pub p99_p_value: f64,
    /// Runs beyond the simulated P99.9.
    pub beyond_p999: u64,
    /// How many the model expects (0.1 % of the runs).
    pub expected_beyond_p999: f64,
    /// Binomial P(at least that many) if the model is right.
    pub p999_p_value: f64,
    /// Significance of each test.
    pub alpha: f64,
    /// True when no test rejects the model.
    pub consistent: bool,
    /// The verdict in words.
    pub verdict: String,
    /// A generalized Pareto tail fitted to the observed durations, as they are (runs at every
    /// volume together); `None` with too few runs above the threshold. Added without a schema
    /// bump: absent in records written before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail_fit: Option<TailFit>,
}

/// A generalized Pareto tail over a threshold (peaks over threshold), fitted by probability-
/// weighted moments, with bootstrap intervals.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TailFit {
    /// Durations fitted.
    pub runs: u64,
    /// The threshold, seconds: the empirical quantile `threshold_quantile`.
    pub threshold_s: f64,
    pub threshold_quantile: f64,
    /// Runs above it.
    pub exceedances: u64,
    /// Shape ξ (0: an exponential tail; above: heavier, a Pareto-like one), and its 95 %
    /// interval.
    pub shape: f64,
    pub shape_interval: [f64; 2],
    /// Scale, seconds.
    pub scale_s: f64,
    /// The largest run observed, seconds.
    pub largest_s: f64,
    /// The runtime exceeded with each chance per run, with its 95 % interval.
    pub quantiles: Vec<TailFitQuantile>,
    /// Bootstrap resamples behind the intervals.
    pub resamples: u64,
}

/// One quantile of a [`TailFit`].
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TailFitQuantile {
    /// Chance per run of exceeding it.
    pub p: f64,
    /// Seconds.
    pub seconds: f64,
    /// 95 % interval, seconds.
    pub interval_s: [f64; 2],
}

impl TailFit {
    /// The fit in one line: "tail fitted above 41.2 s (the 90th percentile, 1,000 runs): shape
    /// 0.18 (95 % interval 0.12 to 0.25); once in a million runs 74.0 s (61.3 s to 92.1 s),
    /// against a largest run of 30.2 s".
    pub fn said(&self) -> String {
        let s = |x: f64| crate::format_readable(std::time::Duration::from_secs_f64(x.max(0.0)));
        let at = |p: f64| {
            self.quantiles.iter().find(|q| q.p == p).map(|q| {
                format!(
                    "{} ({} to {})",
                    s(q.seconds),
                    s(q.interval_s[0]),
                    s(q.interval_s[1])
                )
            })
        };
        format!(
            "generalized Pareto tail fitted above {} (the {:.0}th percentile, {} runs over it): shape {:.2} (95 % interval {:.2} to {:.2}); exceeded once in 10,000 runs: {}; once in a million: {}; the largest observed run {}",
            s(self.threshold_s),
            self.threshold_quantile * 100.0,
            crate::format_count(self.exceedances),
            self.shape,
            self.shape_interval[0],
            self.shape_interval[1],
            at(1e-4).unwrap_or_default(),
            at(1e-6).unwrap_or_default(),
            s(self.largest_s)
        )
    }
}

/// The simulated runtime percentiles at one profile and volume.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckBand {
    /// Profile.
    pub profile: String,
    /// Volume.
    pub volume: u64,
    /// Simulated P50, seconds.
    pub p50_s: f64,
    /// Simulated P99, seconds.
    pub p99_s: f64,
    /// Simulated P99.9, seconds.
    pub p999_s: f64,
    /// Observed runs compared with this volume's simulation (by interpolation when between).
    pub runs: u64,
}

/// `runs.csv` of `check`: one observed run and where it fell.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckedRun {
    /// Line of the observed file.
    pub line: u64,
    /// Profile it was compared with.
    pub profile: String,
    /// Its volume.
    pub volume: u64,
    /// Its duration, seconds.
    pub duration_s: f64,
    /// Where it falls in the simulated distribution at its volume.
    pub pit: f64,
    /// Simulated P50 at its volume, seconds.
    pub sim_p50_s: f64,
    /// Simulated P99 at its volume, seconds.
    pub sim_p99_s: f64,
    /// Simulated P99.9 at its volume, seconds.
    pub sim_p999_s: f64,
}

/// The check a `ttl --observed` ran, carried in its recommendation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelCheck {
    /// The file of observed runs.
    pub observed: String,
    /// Runs checked.
    pub runs: u64,
    /// True when no test rejects the model.
    pub consistent: bool,
    /// The verdict in words.
    pub verdict: String,
}

/// File name of the checked runs.
pub const CHECK_CSV: &str = "runs.csv";
