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
}
