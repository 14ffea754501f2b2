//! A live replay's report as a results directory keeps it: the record beside the simulator's
//! figures, the histograms of its log, and the wall-time bound of one run.

use std::borrow::Cow;
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
            backend: live.backend.id(),
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
    /// (real-equivalent time, as they are), then the requested and achieved call latency per
    /// target, in microseconds as the runtimes are (one unit in the log).
    pub fn log_entries<'a>(
        &'a self,
        simulated: &'a RuntimeHistogram,
    ) -> Vec<(String, Cow<'a, RuntimeHistogram>)> {
        let mut entries = vec![
            ("live".to_string(), Cow::Borrowed(&self.runtimes)),
            ("simulated".to_string(), Cow::Borrowed(simulated)),
        ];
        for i in &self.injected {
            entries.push((
                format!("requested/{}", i.row.target),
                Cow::Owned(i.requested.in_microseconds()),
            ));
            entries.push((
                format!("achieved/{}", i.row.target),
                Cow::Owned(i.achieved.in_microseconds()),
            ));
        }
        entries
    }
}

#[cfg(test)]
mod tests {
    use lockbench_core::BackendKind;
    use lockbench_locks::{BackendConfig, HeartbeatPolicy};
    use lockbench_workloads::WorkloadSpec;

    use super::*;

    fn live(mode: LockMode) -> LiveOptions {
        LiveOptions {
            runs: 3,
            workers: 2,
            time_scale: 0.01,
            seed: 7,
            mode,
            fencing: true,
            idempotency_keys: false,
            database_url: "postgres://postgres@127.0.0.1:5442/postgres".to_string(),
            backend: BackendConfig::new(BackendKind::Redis, vec![], "t"),
            run_timeout: Duration::ZERO,
        }
    }

    #[test]
    fn a_run_may_take_its_lease_and_two_job_runs_twice_over_in_compressed_time() {
        let simulated_max = Duration::from_secs(100);
        let fixed = run_timeout(
            &live(LockMode::FixedTtl(Duration::from_secs(300))),
            simulated_max,
        );
        // (300 s + 2 x 100 s) x 0.01 x 2 + 30 s.
        assert_eq!(fixed, Duration::from_secs(40));
        let lease = HeartbeatPolicy::for_lease(Duration::from_secs(30));
        let beat = run_timeout(&live(LockMode::Heartbeat(lease)), simulated_max);
        assert_eq!(beat, Duration::from_millis(34_600));
    }

    #[test]
    fn the_record_sets_the_live_runtimes_beside_the_simulated_ones() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../workloads/specs/billing.toml"
        );
        let spec = WorkloadSpec::load(std::path::Path::new(path)).unwrap();
        let model = JobModel::new(&spec, &spec.profiles[0].name, 0.01).unwrap();
        let mut runtimes = RuntimeHistogram::new();
        let mut simulated = RuntimeHistogram::new();
        for i in 1..=100 {
            runtimes.record(Duration::from_millis(30 * i));
            simulated.record(Duration::from_millis(20 * i));
        }
        let report = LiveReport {
            runs: Vec::new(),
            runtimes,
            injected: Vec::new(),
            per_step: Vec::new(),
            real_rows: None,
            warnings: vec!["a note".to_string()],
        };
        let options = live(LockMode::FixedTtl(Duration::from_secs(300)));
        let context = |simulated| RecordContext {
            unit: "customers",
            heartbeat: None,
            simulated,
        };
        let r = report.record(&model, &options, context(Some(&simulated)));
        assert_eq!(
            (r.mode, r.ttl_s, r.backend.name()),
            (HoldMode::Ttl, 300.0, "redis")
        );
        assert_eq!(
            (r.runs, r.double_executions, r.duplicate_charges_accepted),
            (0, 0, Some(0))
        );
        let compared = r.simulated.unwrap();
        assert_eq!(compared.replays, 100);
        assert!(
            (compared.p50_ratio - 1.5).abs() < 0.02,
            "{}",
            compared.p50_ratio
        );
        assert_eq!(r.warnings, vec!["a note".to_string()]);
        assert!(
            report
                .record(&model, &options, context(None))
                .simulated
                .is_none()
        );
        let tags: Vec<String> = report
            .log_entries(&simulated)
            .into_iter()
            .map(|(t, _)| t)
            .collect();
        assert_eq!(tags, ["live", "simulated"]);
    }
}
