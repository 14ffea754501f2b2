//! The record of `simulate` (and the runtime rows `ttl` also writes): `results.json`,
//! `summary.csv` and `runtimes.hlog`.

use serde::{Deserialize, Serialize};

use super::codec::round_micro;
use super::summary::RuntimeSummary;
use super::summary::quantile_interval;
use crate::histogram::RuntimeHistogram;

/// The runtime rows' CSV file.
pub const CSV: &str = "summary.csv";
/// The runtime histograms, tagged `workload/profile/scale=X`.
pub const HISTOGRAMS: &str = "runtimes.hlog";

/// `results.json` of `simulate`: what `--json` prints.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimulationRecord {
    /// Seed of every random stream.
    pub seed: u64,
    /// Worker threads of one process (results do not depend on it); for a merged run the most any
    /// shard had, each shard's own being in the manifest's `merged_from`.
    pub threads: usize,
    /// The processes that ran it: 1 for a whole run, the shards' count for a merged one.
    pub shards: u64,
    /// One row per workload, profile and scale.
    pub results: Vec<SimulationRow>,
    /// Latency draws made.
    pub latency_samples: u64,
    /// Wall time of the simulation alone; for a merged run the sum of its shards' (process
    /// seconds: shards may have run side by side or one after another, their records do not say).
    pub elapsed_s: f64,
    /// Draws per second of one process, `latency_samples / elapsed_s`: comparable with a whole
    /// run of the same threads, never a sum of rates of shards that overlapped in time.
    pub samples_per_s: f64,
    /// The simulator engine that drew the replays: `blocks` (the calls between events drawn as
    /// sums, the default since December 2026), `exact` (every call drawn), or `blocks` with the
    /// rows it left to `exact` named. Added without a schema bump: absent means `exact` (written
    /// so, and what every record from before it was), so every record of schema 4 reads and
    /// writes back as it was.
    #[serde(default = "exact_engine", skip_serializing_if = "is_exact")]
    pub engine: String,
}

pub(crate) fn exact_engine() -> String {
    "exact".into()
}

pub(crate) fn is_exact(engine: &str) -> bool {
    engine == "exact"
}

/// One simulated workload, profile and scale, and its runtimes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimulationRow {
    /// Workload name.
    pub workload: String,
    /// Profile name.
    pub profile: String,
    /// Volume multiplier.
    pub scale: f64,
    /// Units of volume per run.
    pub volume: u64,
    /// What a unit of volume is.
    pub unit: String,
    /// Replays run.
    pub replays: u64,
    /// Runtime percentiles in seconds.
    #[serde(rename = "runtime_s")]
    pub runtime: RuntimeSummary,
    /// 95 % confidence interval of P99.9 in seconds.
    pub p999_ci_s: [f64; 2],
    /// True when the interval's upper end ran past the largest sample: the true P99.9 may be
    /// higher than anything observed.
    pub p999_ci_open: bool,
    /// False when there were too few replays for P99.9 to be trusted.
    pub p999_reliable: bool,
}

impl SimulationRow {
    /// The row of one simulated (workload, profile, scale) from its runtime histogram.
    pub fn new(
        workload: &str,
        profile: &str,
        scale: f64,
        volume: u64,
        unit: &str,
        runtimes: &RuntimeHistogram,
    ) -> Self {
        let runtime = RuntimeSummary::from_histogram(runtimes);
        let (lo, hi, open) = quantile_interval(runtimes, 0.999);
        SimulationRow {
            workload: workload.to_string(),
            profile: profile.to_string(),
            scale,
            volume,
            unit: unit.to_string(),
            replays: runtime.replays,
            p999_ci_s: [round_micro(lo.as_secs_f64()), round_micro(hi.as_secs_f64())],
            p999_ci_open: open,
            p999_reliable: runtime.p999_is_reliable(),
            runtime,
        }
    }

    /// The histogram tag of this row in `runtimes.hlog`.
    pub fn tag(&self) -> String {
        format!("{}/{}/scale={}", self.workload, self.profile, self.scale)
    }
}

/// One line of `summary.csv`: a [`SimulationRow`] flattened, seconds as numbers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimulationCsvRow {
    /// Workload name.
    pub workload: String,
    /// Profile name.
    pub profile: String,
    /// Volume multiplier.
    pub scale: f64,
    /// Units of volume per run.
    pub volume: u64,
    /// What a unit of volume is.
    pub unit: String,
    /// Replays run.
    pub replays: u64,
    /// Median runtime.
    pub runtime_p50_s: f64,
    /// 90th percentile.
    pub runtime_p90_s: f64,
    /// 99th percentile.
    pub runtime_p99_s: f64,
    /// 99.9th percentile.
    pub runtime_p999_s: f64,
    /// Largest runtime.
    pub runtime_max_s: f64,
    /// Mean runtime.
    pub runtime_mean_s: f64,
    /// Lower end of P99.9's 95 % interval.
    pub p999_ci_lo_s: f64,
    /// Upper end.
    pub p999_ci_hi_s: f64,
    /// The upper end ran past the largest sample.
    pub p999_ci_open: bool,
    /// Enough replays for P99.9.
    pub p999_reliable: bool,
}

impl From<&SimulationRow> for SimulationCsvRow {
    fn from(r: &SimulationRow) -> Self {
        let s = |d: std::time::Duration| round_micro(d.as_secs_f64());
        let t = &r.runtime;
        SimulationCsvRow {
            workload: r.workload.clone(),
            profile: r.profile.clone(),
            scale: r.scale,
            volume: r.volume,
            unit: r.unit.clone(),
            replays: r.replays,
            runtime_p50_s: s(t.p50),
            runtime_p90_s: s(t.p90),
            runtime_p99_s: s(t.p99),
            runtime_p999_s: s(t.p999),
            runtime_max_s: s(t.max),
            runtime_mean_s: s(t.mean),
            p999_ci_lo_s: r.p999_ci_s[0],
            p999_ci_hi_s: r.p999_ci_s[1],
            p999_ci_open: r.p999_ci_open,
            p999_reliable: r.p999_reliable,
        }
    }
}

/// `summary.csv` of `rows`.
pub fn summary_csv(rows: &[SimulationRow]) -> Vec<u8> {
    let rows: Vec<SimulationCsvRow> = rows.iter().map(SimulationCsvRow::from).collect();
    super::codec::to_csv(&rows)
}
