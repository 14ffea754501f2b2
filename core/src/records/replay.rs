//! The record of `replay`: `results.json`, `replay.csv` (one line per job run) and
//! `replay.hlog`.

use serde::{Deserialize, Serialize};

use crate::backend::BackendId;

use super::codec::present;
use super::summary::RuntimeSummary;
use super::ttl::HeartbeatRecommendation;

/// The job runs' CSV file.
pub const CSV: &str = "replay.csv";
/// Live and simulated runtimes, requested and achieved latency per target.
pub const HISTOGRAMS: &str = "replay.hlog";

/// How the job held its lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HoldMode {
    /// One acquisition with a fixed TTL, never renewed.
    Ttl,
    /// A short lease renewed on a heartbeat.
    Heartbeat,
}

/// `results.json` of `replay`: what `--json` prints.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplayRecord {
    /// Workload name.
    pub workload: String,
    /// Profile name.
    pub profile: String,
    /// Lock backend.
    pub backend: BackendId,
    /// Volume multiplier.
    pub scale: f64,
    /// Units of volume.
    pub volume: u64,
    /// What a unit of volume is.
    pub unit: String,
    /// Job runs.
    pub runs: u64,
    /// Workers racing for the lock.
    pub workers: usize,
    /// Multiplier on every injected latency, episode, pause and TTL.
    pub time_scale: f64,
    /// Seed of the episodes.
    pub seed: u64,
    /// Fixed TTL or heartbeat.
    pub mode: HoldMode,
    /// The TTL (fixed) or the lease (heartbeat), real-equivalent seconds.
    pub ttl_s: f64,
    /// The heartbeat figures; `None` with a fixed TTL.
    #[serde(deserialize_with = "present")]
    pub heartbeat: Option<HeartbeatRecommendation>,
    /// Writes carried the fencing token.
    pub fencing: bool,
    /// Charges carried an idempotency key.
    pub idempotency_keys: bool,
    /// The first workers' runtimes, real-equivalent.
    pub runtime_s: RuntimeSummary,
    /// The same spec in the simulator; `None` when `--compare-replays 0`.
    #[serde(deserialize_with = "present")]
    pub simulated: Option<SimulatedComparison>,
    /// Items more than one worker executed, over all runs.
    pub double_executions: u64,
    /// Runs with at least one double execution.
    pub runs_with_double_execution: u64,
    /// Charges accepted beyond the first per customer and period; `None` for a workload without
    /// charges.
    #[serde(deserialize_with = "present")]
    pub duplicate_charges_accepted: Option<u64>,
    /// Writes refused by fencing.
    pub stale_writes_rejected: u64,
    /// Migrations applied at or behind the pointer; `None` for a workload without migrations.
    #[serde(deserialize_with = "present")]
    pub out_of_order: Option<u64>,
    /// Retry workers that got the lock while the job was unfinished.
    pub takeovers: u64,
    /// Job runs that stopped early.
    pub aborted_job_runs: u64,
    /// Releases refused because the lease was gone.
    pub releases_refused: u64,
    /// Requested against achieved latency per target.
    pub injected_latency: Vec<InjectedLatency>,
    /// The same per step.
    pub injected_latency_per_step: Vec<InjectedLatency>,
    /// Rows in the migration's real table; `None` for a workload without one.
    #[serde(deserialize_with = "present")]
    pub real_rows: Option<u64>,
    /// Things the user should know about the figures.
    pub warnings: Vec<String>,
    /// Every job run.
    pub per_run: Vec<JobRunRecord>,
}

impl ReplayRecord {
    /// Neither fencing nor idempotency keys: the lock alone.
    pub fn undefended(&self) -> bool {
        !self.fencing && !self.idempotency_keys
    }
}

/// How closely `replay` holds each live call to the latency it asked for (5 %; 100 us for the
/// shortest calls): a live runtime further than this from the simulated one is a disagreement
/// the record reports, not noise.
pub const LIVE_AGREEMENT: f64 = 0.05;

/// The live runtimes beside the simulator's for the same spec, profile and scale.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimulatedComparison {
    /// Simulated replays.
    pub replays: u64,
    /// Their runtimes.
    pub runtime_s: RuntimeSummary,
    /// Live P50 / simulated P50.
    pub p50_ratio: f64,
    /// Live mean / simulated mean.
    pub mean_ratio: f64,
}

/// Requested against achieved latency for one target (`db`, `api`, `cpu`) or one step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InjectedLatency {
    /// What the calls went to.
    pub target: String,
    /// The step, for a per-step row; `None` for a target's row.
    #[serde(deserialize_with = "present")]
    pub step: Option<String>,
    /// Calls measured.
    pub calls: u64,
    /// Median of the latency the model asked for (real-equivalent ms).
    pub requested_p50_ms: f64,
    /// Median of what the job saw (real-equivalent ms).
    pub achieved_p50_ms: f64,
    /// 99th percentile asked for.
    pub requested_p99_ms: f64,
    /// 99th percentile seen.
    pub achieved_p99_ms: f64,
    /// Mean asked for.
    pub requested_mean_ms: f64,
    /// Mean seen.
    pub achieved_mean_ms: f64,
    /// Mean real cost of a call (the round trip and the server's work, not injected), in
    /// compressed microseconds: what the injection subtracts from each request.
    pub real_cost_us: f64,
    /// Both percentiles within 5 % or 100 us (compressed) of the request.
    pub within_tolerance: bool,
}

/// One job run's outcome: an element of `per_run` and a line of `replay.csv`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobRunRecord {
    /// Run index (its seed stream).
    pub run: u64,
    /// The first worker's job run, acquisition to release (real-equivalent seconds).
    pub runtime_s: f64,
    /// Items more than one worker executed.
    pub double_executions: u64,
    /// Charges accepted beyond the first per customer and period (billing).
    #[serde(deserialize_with = "present")]
    pub duplicate_charges_accepted: Option<u64>,
    /// Writes refused by fencing.
    pub stale_writes_rejected: u64,
    /// Migrations applied when the pointer was already at or past them.
    #[serde(deserialize_with = "present")]
    pub out_of_order: Option<u64>,
    /// Retry workers that got the lock while the job was unfinished and ran it.
    pub takeovers: u64,
    /// Job runs that stopped early (heartbeat lost or a fenced write refused).
    pub aborted: u64,
    /// Releases the backend refused because the lease was no longer the holder's.
    pub releases_refused: u64,
}
