//! A live replay's report as a results directory keeps it: the record beside the simulator's
//! figures, the histograms of its log, and the wall-time bound of one run.

use std::time::Duration;

use lockbench_core::RuntimeHistogram;
use lockbench_core::records::RuntimeSummary;
use lockbench_core::records::replay::{HoldMode, JobRunRecord, ReplayRecord, SimulatedComparison};
use lockbench_core::records::ttl::HeartbeatRecommendation;
use lockbench_workloads::JobModel;

use crate::plan::{LiveOptions, LiveReport, LockMode};

/// How long one run may take before it is given up: the TTL (a retry worker waiting it out) plus
/// two job runs back to back (`simulated_max` the simulator's longest), twice over for safety and
/// in compressed time, plus set-up time.
pub fn run_timeout(live: &LiveOptions, simulated_max: Duration) -> Duration {
    let lease = match live.mode {
        LockMode::FixedTtl(ttl) => ttl,
        LockMode::Heartbeat(p) => p.lease_ttl,
    };
    let real = lease + simulated_max * 2;
    real.mul_f64(live.time_scale * 2.0) + Duration::from_secs(30)
}

/// What the record names besides the report's figures.
#[derive(Clone, Debug)]
pub struct RecordContext<'a> {
    /// The spec's unit of volume.
    pub unit: &'a str,
    /// The heartbeat figures the replay held its lock with; `None` with a fixed TTL.
    pub heartbeat: Option<HeartbeatRecommendation>,
    /// The simulator's runtimes for the same model and seed, when a comparison was asked for.
    pub simulated: Option<&'a RuntimeHistogram>,
}

impl LiveReport {
    /// The replay's record: its counts summed over the runs, its runtimes beside the
    /// simulator's.
    pub fn record(
        &self,
        model: &JobModel,
        live: &LiveOptions,
        context: RecordContext<'_>,
    ) -> ReplayRecord {
        let (mode, ttl) = match live.mode {
            LockMode::FixedTtl(ttl) => (HoldMode::Ttl, ttl),
            LockMode::Heartbeat(p) => (HoldMode::Heartbeat, p.lease_ttl),
        };
        let runs = &self.runs;
        let sum = |f: fn(&JobRunRecord) -> u64| -> u64 { runs.iter().map(f).sum() };
        // A count the workload does not have (charges in a migration) stays absent, not 0.
        let optional_sum = |f: fn(&JobRunRecord) -> Option<u64>| {
            runs.iter()
                .map(f)
                .try_fold(0u64, |acc, v| v.map(|v| acc + v))
        };
        let simulated = context.simulated.map(|simulated| SimulatedComparison {
            replays: simulated.count(),
            runtime_s: RuntimeSummary::from_histogram(simulated),
            p50_ratio: self.runtimes.quantile(0.5).as_secs_f64()
                / simulated.quantile(0.5).as_secs_f64(),
            mean_ratio: self.runtimes.mean().as_secs_f64() / simulated.mean().as_secs_f64(),
        });
        ReplayRecord {
            workload: model.workload.clone(),
            profile: model.profile.clone(),
            backend: live.backend.kind.name().to_string(),
            scale: model.scale,
            volume: model.volume,
            unit: context.unit.to_string(),
            runs: runs.len() as u64,
            workers: live.workers,
            time_scale: live.time_scale,
            seed: live.seed,
            mode,
            ttl_s: ttl.as_secs_f64(),
            heartbeat: context.heartbeat,
            fencing: live.fencing,
            idempotency_keys: live.idempotency_keys,
            runtime_s: RuntimeSummary::from_histogram(&self.runtimes),
            simulated,
            double_executions: self.double_executions(),
            runs_with_double_execution: runs.iter().filter(|r| r.double_executions > 0).count()
                as u64,
            duplicate_charges_accepted: optional_sum(|r| r.duplicate_charges_accepted),
            stale_writes_rejected: sum(|r| r.stale_writes_rejected),
            out_of_order: optional_sum(|r| r.out_of_order),
            takeovers: sum(|r| r.takeovers),
            aborted_job_runs: sum(|r| r.aborted),
            releases_refused: sum(|r| r.releases_refused),
            injected_latency: self.injected.iter().map(|m| m.row.clone()).collect(),
            injected_latency_per_step: self.per_step.iter().map(|m| m.row.clone()).collect(),
            real_rows: self.real_rows,
            warnings: self.warnings.clone(),
            per_run: runs.clone(),
        }
    }

    /// The histograms of the replay's log, tagged: the live and `simulated` runtimes
    /// (real-equivalent time), then the requested and achieved call latency per target, in
    /// microseconds as the runtimes are (one unit in the log).
    pub fn log_entries(&self, simulated: &RuntimeHistogram) -> Vec<(String, RuntimeHistogram)> {
        let mut entries = vec![
            ("live".to_string(), self.runtimes.clone()),
            ("simulated".to_string(), simulated.clone()),
        ];
        for i in &self.injected {
            entries.push((
                format!("requested/{}", i.row.target),
                i.requested.in_microseconds(),
            ));
            entries.push((
                format!("achieved/{}", i.row.target),
                i.achieved.in_microseconds(),
            ));
        }
        entries
    }
}
