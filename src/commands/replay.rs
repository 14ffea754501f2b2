//! `lockbench replay`: a workload run for real with racing workers, compared with the simulator.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use lockbench_analysis::RuntimeSummary;
use lockbench_core::{ResultsDir, RuntimeHistogram, SpecRecord};
use lockbench_workloads::live::{LiveError, LiveReplay, LiveReport, LockMode};
use lockbench_workloads::{ReplayModel, SimOptions, simulate};
use serde_json::json;

use crate::cli::ReplayArgs;
use crate::commands::{Interrupted, shared};
use crate::options::{ReplayCommand, usage};
use crate::progress::Progress;
use crate::render;

/// Simulated replays run only to bound a live run's wall time when no comparison is asked for.
const TIMEOUT_REPLAYS: u64 = 2_000;

pub fn run(args: &ReplayArgs) -> Result<ExitCode> {
    let mut command = ReplayCommand::resolve(args)?;
    let out = command.out.as_deref().map(ResultsDir::new).transpose()?;
    let model = ReplayModel::new(&command.spec, &command.profile, command.scale)?;
    let simulated = simulate(
        &model,
        &SimOptions {
            replays: command.compare_replays.max(TIMEOUT_REPLAYS),
            seed: command.live.seed,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            thresholds: Vec::new(),
        },
        &|_| {},
    );
    command.live.run_timeout = run_timeout(&command, &simulated);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let report = runtime.block_on(replay(&model, &command))?;
    let json = to_json(&command, &model, &report, &simulated);
    if command.json {
        println!("{}", serde_json::to_string_pretty(&json)?);
    } else {
        print!("{}", render::replay_summary(&json));
    }
    for warning in &report.warnings {
        eprintln!("lockbench: replay: note: {warning}");
    }
    if let Some(out) = out {
        write_results(out, &command, &report, &simulated, &json)?;
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

async fn replay(model: &ReplayModel, command: &ReplayCommand) -> Result<LiveReport> {
    let live = &command.live;
    // Listening from here on: a Ctrl-C during the set-up waits for it to finish (it is bounded by
    // connection timeouts), then stops the run before it starts, with the same cleanup.
    let mut interrupt = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
        .context("listening for Ctrl-C")?;
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
        r = replay.run(&advance) => Some(r),
        _ = interrupt.recv() => None,
    };
    progress.finish();
    let cleaned = replay.cleanup().await;
    match outcome {
        None => {
            let what = match cleaned {
                Ok(()) => "removed the replay's tables, lock keys and leases; no results written"
                    .to_string(),
                Err(e) => format!("cleanup failed: {e}"),
            };
            Err(Interrupted(what).into())
        }
        Some(result) => {
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

fn summary_json(h: &RuntimeHistogram) -> serde_json::Value {
    serde_json::to_value(RuntimeSummary::from_histogram(h)).expect("a summary serialises")
}

fn to_json(
    command: &ReplayCommand,
    model: &ReplayModel,
    report: &LiveReport,
    simulated: &RuntimeHistogram,
) -> serde_json::Value {
    let live = &command.live;
    let (mode, ttl_s) = match live.mode {
        LockMode::FixedTtl(ttl) => ("ttl", Some(ttl.as_secs_f64())),
        LockMode::Heartbeat(p) => ("heartbeat", Some(p.lease_ttl.as_secs_f64())),
    };
    let sum = |f: fn(&lockbench_workloads::live::RunRecord) -> u64| -> u64 {
        report.runs.iter().map(f).sum()
    };
    let optional_sum = |f: fn(&lockbench_workloads::live::RunRecord) -> Option<u64>| {
        report
            .runs
            .iter()
            .map(f)
            .try_fold(0u64, |acc, v| v.map(|v| acc + v))
    };
    let comparison = (command.compare_replays > 0).then(|| {
        let live_mean = report.runtimes.mean().as_secs_f64();
        let live_p50 = report.runtimes.quantile(0.5).as_secs_f64();
        let sim_mean = simulated.mean().as_secs_f64();
        let sim_p50 = simulated.quantile(0.5).as_secs_f64();
        json!({
            "replays": simulated.count(),
            "runtime_s": summary_json(simulated),
            "p50_ratio": live_p50 / sim_p50,
            "mean_ratio": live_mean / sim_mean,
        })
    });
    json!({
        "workload": model.workload,
        "profile": model.profile,
        "backend": live.backend.kind.name(),
        "scale": model.scale,
        "volume": model.volume,
        "unit": command.spec.workload.unit,
        "runs": report.runs.len(),
        "workers": live.workers,
        "time_scale": live.time_scale,
        "seed": live.seed,
        "mode": mode,
        "ttl_s": ttl_s,
        "heartbeat": command.heartbeat,
        "fencing": live.fencing,
        "idempotency_keys": live.idempotency_keys,
        "runtime_s": summary_json(&report.runtimes),
        "simulated": comparison,
        "double_executions": report.double_executions(),
        "runs_with_double_execution": report.runs.iter().filter(|r| r.double_executions > 0).count(),
        "duplicate_charges_accepted": optional_sum(|r| r.duplicate_charges_accepted),
        "stale_writes_rejected": sum(|r| r.stale_writes_rejected),
        "out_of_order": optional_sum(|r| r.out_of_order),
        "takeovers": sum(|r| r.takeovers),
        "aborted_job_runs": sum(|r| r.aborted),
        "releases_refused": sum(|r| r.releases_refused),
        "injected_latency": report.injected,
        "injected_latency_per_step": report.per_step,
        "real_rows": report.real_rows,
        "warnings": report.warnings,
        "per_run": report.runs,
    })
}

fn write_results(
    out: ResultsDir,
    command: &ReplayCommand,
    report: &LiveReport,
    simulated: &RuntimeHistogram,
    json: &serde_json::Value,
) -> Result<()> {
    let mut out = out;
    let mut csv = String::from(
        "run,runtime_s,double_executions,duplicate_charges_accepted,stale_writes_rejected,out_of_order,takeovers,aborted,releases_refused\n",
    );
    let opt = |v: Option<u64>| v.map_or(String::new(), |v| v.to_string());
    for r in &report.runs {
        csv += &format!(
            "{},{:.6},{},{},{},{},{},{},{}\n",
            r.run,
            r.runtime_s,
            r.double_executions,
            opt(r.duplicate_charges_accepted),
            r.stale_writes_rejected,
            opt(r.out_of_order),
            r.takeovers,
            r.aborted,
            r.releases_refused
        );
    }
    out.add("replay.csv", csv.into_bytes())?;
    let mut entries: Vec<(String, &RuntimeHistogram)> = vec![
        ("live".to_string(), &report.runtimes),
        ("simulated".to_string(), simulated),
    ];
    for i in &report.injected {
        entries.push((format!("requested/{}", i.target), &i.requested));
        entries.push((format!("achieved/{}", i.target), &i.achieved));
    }
    out.add(
        "replay.hlog",
        lockbench_core::interval_log(
            "lockbench replay: live and simulated runtimes (real-equivalent), requested and achieved call latency per target (compressed)",
            &entries,
        ),
    )?;
    out.add("results.json", serde_json::to_vec_pretty(json)?)?;
    let spec = SpecRecord {
        path: command.spec.path.display().to_string(),
        text: command.spec.text.clone(),
    };
    let manifest = shared::manifest(&out, "replay", Some(command.live.seed), 2, vec![spec]);
    shared::commit(out, &manifest)
}
