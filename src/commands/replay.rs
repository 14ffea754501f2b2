//! `lockbench replay`: a workload run for real with racing workers, compared with the simulator.

use lockbench_core::RunKind;
use std::process::ExitCode;

use anyhow::{Context, Result};
use lockbench_core::records::replay::{self, ReplayRecord};
use lockbench_core::records::{RESULTS_JSON, to_csv, to_json};
use lockbench_core::{ResultsDir, RuntimeHistogram, SpecRecord};
use lockbench_replay::{LiveError, LiveReplay, LiveReport, RecordContext, run_timeout};
use lockbench_workloads::{Engine, JobModel, Shard, SimOptions, simulate};

use crate::cli::ReplayArgs;
use crate::failure::Outcome;
use crate::options::{Refusal, ReplaySettings};
use crate::output;
use crate::progress::Progress;
use crate::render;
use crate::signals::{Interrupted, StopSignals};

/// Simulated replays run only to bound a live run's wall time when no comparison is asked for.
const TIMEOUT_REPLAYS: u64 = 2_000;

pub fn run(args: &ReplayArgs) -> Outcome {
    let mut settings = ReplaySettings::resolve(args)?;
    let out = settings.out.as_deref().map(ResultsDir::new).transpose()?;
    let model = JobModel::new(&settings.spec, &settings.profile, settings.scale)?;
    let simulated = simulate(
        &model,
        &SimOptions {
            replays: settings.compare_replays.max(TIMEOUT_REPLAYS),
            seed: settings.live.seed,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            thresholds: Vec::new(),
            shard: Shard::WHOLE,
            engine: Engine::default(),
        },
        &|_| {},
    );
    settings.live.run_timeout = run_timeout(&settings.live, simulated.max());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let report = runtime.block_on(replay(&model, &settings))?;
    let record = report.record(
        &model,
        &settings.live,
        RecordContext {
            unit: &settings.spec.workload.unit,
            heartbeat: settings.heartbeat.clone(),
            simulated: (settings.compare_replays > 0).then_some(&simulated),
        },
    );
    render::show(settings.json, &record, render::replay_summary)?;
    for warning in &report.warnings {
        eprintln!("lockbench: replay: note: {warning}");
    }
    if let Some(out) = out {
        write_results(out, &settings, &report, &simulated, &record)?;
    }
    Ok(ExitCode::SUCCESS)
}

async fn replay(model: &JobModel, settings: &ReplaySettings) -> Result<LiveReport> {
    let live = &settings.live;
    // Listening from here on: a Ctrl-C during the set-up waits for it to finish (it is bounded by
    // connection timeouts), then stops the run before it starts, with the same cleanup.
    let mut signals = StopSignals::listen()?;
    let mut replay = LiveReplay::prepare(model, live)
        .await
        .map_err(|e| live_error(e, settings))?;
    let progress = Progress::bar(u64::from(live.runs), "runs");
    progress.set_message(format!(
        "{} / {} x{} on {}",
        model.workload,
        model.profile,
        model.scale,
        live.backend.label()
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
            let report = result.map_err(|e| live_error(e, settings))?;
            cleaned.context("removing the replay's tables and lock keys")?;
            Ok(report)
        }
    }
}

/// What the user can fix is a usage error (exit 2); the rest names the server.
fn live_error(e: LiveError, settings: &ReplaySettings) -> anyhow::Error {
    match e {
        LiveError::Unsupported { input, message } => {
            let spec = settings.spec.path.display().to_string();
            Refusal::new(input.unwrap_or(&spec), message).into()
        }
        other => anyhow::Error::new(other),
    }
}

fn write_results(
    out: ResultsDir,
    settings: &ReplaySettings,
    report: &LiveReport,
    simulated: &RuntimeHistogram,
    record: &ReplayRecord,
) -> Result<()> {
    let mut out = out;
    out.add(replay::CSV, to_csv(&record.per_run))?;
    let entries = report.log_entries(simulated);
    let entries: Vec<(String, &RuntimeHistogram)> = entries
        .iter()
        .map(|(tag, h)| (tag.clone(), h.as_ref()))
        .collect();
    out.add(
        replay::HISTOGRAMS,
        lockbench_core::interval_log(
            "lockbench replay: live and simulated runtimes (real-equivalent time), requested and achieved call latency per target (compressed time, as the proxy and stub held it)",
            &entries,
        ),
    )?;
    out.add(RESULTS_JSON, to_json(record))?;
    let spec = SpecRecord {
        path: settings.spec.path.display().to_string(),
        text: settings.spec.text.clone(),
    };
    let manifest = output::manifest(
        &out,
        RunKind::Replay,
        Some(settings.live.seed),
        2,
        vec![spec],
    );
    output::commit(out, manifest)
}
