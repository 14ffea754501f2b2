//! `lockbench replay`: a workload run for real with racing workers, compared with the simulator.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use lockbench_core::records::replay::{self, HoldMode, ReplayRecord, SimulatedComparison};
use lockbench_core::records::{RESULTS_JSON, RuntimeSummary, to_csv, to_json};
use lockbench_core::{ResultsDir, RuntimeHistogram, SpecRecord};
use lockbench_replay::{LiveError, LiveReplay, LiveReport, LockMode};
use lockbench_workloads::{JobModel, Shard, SimOptions, simulate};

use crate::cli::ReplayArgs;
use crate::commands::{Interrupted, StopSignals, shared};
use crate::options::{ReplayCommand, usage};
use crate::progress::Progress;
use crate::render;

/// Simulated replays run only to bound a live run's wall time when no comparison is asked for.
const TIMEOUT_REPLAYS: u64 = 2_000;

pub fn run(args: &ReplayArgs) -> Result<ExitCode> {
    let mut command = ReplayCommand::resolve(args)?;
    let out = command.out.as_deref().map(ResultsDir::new).transpose()?;
    let model = JobModel::new(&command.spec, &command.profile, command.scale)?;
    let simulated = simulate(
        &model,
        &SimOptions {
            replays: command.compare_replays.max(TIMEOUT_REPLAYS),
            seed: command.live.seed,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            thresholds: Vec::new(),
            shard: Shard::WHOLE,
        },
        &|_| {},
    );
    command.live.run_timeout = run_timeout(&command, &simulated);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let report = runtime.block_on(replay(&model, &command))?;
    let record = record(&command, &model, &report, &simulated);
    render::show(command.json, &record, render::replay_summary)?;
    for warning in &report.warnings {
        eprintln!("lockbench: replay: note: {warning}");
    }
    if let Some(out) = out {
        write_results(out, &command, &report, &simulated, &record)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// A run may take the TTL (a retry worker waiting it out) plus two job runs back to back, twice
/// over for safety, plus set-up time.
fn run_timeout(command: &ReplayCommand, simulated: &RuntimeHistogram) -> Duration {
    let lease = match command.live.mode {
        LockMode::FixedTtl(ttl) => ttl,
        LockMode::Heartbeat(p) => p.lease_ttl,
    };
    let real = lease + simulated.max() * 2;
    real.mul_f64(command.live.time_scale * 2.0) + Duration::from_secs(30)
}

async fn replay(model: &JobModel, command: &ReplayCommand) -> Result<LiveReport> {
    let live = &command.live;
    // Listening from here on: a Ctrl-C during the set-up waits for it to finish (it is bounded by
    // connection timeouts), then stops the run before it starts, with the same cleanup.
    let mut signals = StopSignals::listen()?;
    let mut replay = LiveReplay::prepare(model, live)
        .await
        .map_err(|e| live_error(e, command))?;
    let progress = Progress::bar(u64::from(live.runs), "runs");
    progress.set_message(format!(
        "{} / {} x{} on {}",
        model.workload,
        model.profile,
        model.scale,
        live.backend.kind.name()
    ));
    let advance = |n| progress.advance(n);
    let outcome = tokio::select! {
        r = replay.run(&advance) => Ok(r),
        stop = signals.recv() => Err(stop),
    };
    progress.finish();
    let cleaned = replay.cleanup().await;
    match outcome {
        Err(by) => {
            let what = match cleaned {
                Ok(()) => "removed the replay's tables, lock keys and leases; no results written"
                    .to_string(),
                Err(e) => format!("cleanup failed: {e}"),
            };
            Err(Interrupted { by, what }.into())
        }
        Ok(result) => {
            let report = result.map_err(|e| live_error(e, command))?;
            cleaned.context("removing the replay's tables and lock keys")?;
            Ok(report)
        }
    }
}

/// What the user can fix is a usage error (exit 2); the rest names the server.
fn live_error(e: LiveError, command: &ReplayCommand) -> anyhow::Error {
    match e {
        LiveError::Unsupported { input, message } => {
            let spec = command.spec.path.display().to_string();
            usage(input.unwrap_or(&spec), message).into()
        }
        other => anyhow::Error::new(other),
    }
}

fn record(
    command: &ReplayCommand,
    model: &JobModel,
    report: &LiveReport,
    simulated: &RuntimeHistogram,
) -> ReplayRecord {
    let live = &command.live;
    let (mode, ttl) = match live.mode {
        LockMode::FixedTtl(ttl) => (HoldMode::Ttl, ttl),
        LockMode::Heartbeat(p) => (HoldMode::Heartbeat, p.lease_ttl),
    };
    let runs = &report.runs;
    let sum = |f: fn(&replay::JobRunRecord) -> u64| -> u64 { runs.iter().map(f).sum() };
    // A count the workload does not have (charges in a migration) stays absent, not 0.
    let optional_sum = |f: fn(&replay::JobRunRecord) -> Option<u64>| {
        runs.iter()
            .map(f)
            .try_fold(0u64, |acc, v| v.map(|v| acc + v))
    };
    let simulated_comparison = (command.compare_replays > 0).then(|| SimulatedComparison {
        replays: simulated.count(),
        runtime_s: RuntimeSummary::from_histogram(simulated),
        p50_ratio: report.runtimes.quantile(0.5).as_secs_f64()
            / simulated.quantile(0.5).as_secs_f64(),
        mean_ratio: report.runtimes.mean().as_secs_f64() / simulated.mean().as_secs_f64(),
    });
    ReplayRecord {
        workload: model.workload.clone(),
        profile: model.profile.clone(),
        backend: live.backend.kind.name().to_string(),
        scale: model.scale,
        volume: model.volume,
        unit: command.spec.workload.unit.clone(),
        runs: runs.len() as u64,
        workers: live.workers,
        time_scale: live.time_scale,
        seed: live.seed,
        mode,
        ttl_s: ttl.as_secs_f64(),
        heartbeat: command.heartbeat.clone(),
        fencing: live.fencing,
        idempotency_keys: live.idempotency_keys,
        runtime_s: RuntimeSummary::from_histogram(&report.runtimes),
        simulated: simulated_comparison,
        double_executions: report.double_executions(),
        runs_with_double_execution: runs.iter().filter(|r| r.double_executions > 0).count() as u64,
        duplicate_charges_accepted: optional_sum(|r| r.duplicate_charges_accepted),
        stale_writes_rejected: sum(|r| r.stale_writes_rejected),
        out_of_order: optional_sum(|r| r.out_of_order),
        takeovers: sum(|r| r.takeovers),
        aborted_job_runs: sum(|r| r.aborted),
        releases_refused: sum(|r| r.releases_refused),
        injected_latency: report.injected.iter().map(|m| m.row.clone()).collect(),
        injected_latency_per_step: report.per_step.iter().map(|m| m.row.clone()).collect(),
        real_rows: report.real_rows,
        warnings: report.warnings.clone(),
        per_run: runs.clone(),
    }
}

fn write_results(
    out: ResultsDir,
    command: &ReplayCommand,
    report: &LiveReport,
    simulated: &RuntimeHistogram,
    record: &ReplayRecord,
) -> Result<()> {
    let mut out = out;
    out.add(replay::CSV, to_csv(&record.per_run))?;
    // One unit in the log: call latencies (recorded in nanoseconds) go in microseconds too.
    let calls: Vec<(String, RuntimeHistogram)> = report
        .injected
        .iter()
        .flat_map(|i| {
            [
                (
                    format!("requested/{}", i.row.target),
                    i.requested.in_microseconds(),
                ),
                (
                    format!("achieved/{}", i.row.target),
                    i.achieved.in_microseconds(),
                ),
            ]
        })
        .collect();
    let mut entries: Vec<(String, &RuntimeHistogram)> = vec![
        ("live".to_string(), &report.runtimes),
        ("simulated".to_string(), simulated),
    ];
    entries.extend(calls.iter().map(|(tag, h)| (tag.clone(), h)));
    out.add(
        replay::HISTOGRAMS,
        lockbench_core::interval_log(
            "lockbench replay: live and simulated runtimes (real-equivalent time), requested and achieved call latency per target (compressed time, as the proxy and stub held it)",
            &entries,
        ),
    )?;
    out.add(RESULTS_JSON, to_json(record))?;
    let spec = SpecRecord {
        path: command.spec.path.display().to_string(),
        text: command.spec.text.clone(),
    };
    let manifest = shared::manifest(&out, "replay", Some(command.live.seed), 2, vec![spec]);
    shared::commit(out, manifest)
}
