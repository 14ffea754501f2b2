//! `lockbench faults`: the fault lab's matrix (`fault_worker.rs` is one worker of a trial).

use lockbench_core::RunKind;
use std::process::ExitCode;

use anyhow::{Context, Result};
use lockbench_core::ResultsDir;
use lockbench_core::records::faults::{self, FaultsRecord};
use lockbench_core::records::{RESULTS_JSON, to_csv, to_json};
use lockbench_faults::{FaultLab, LabOptions, LabOutput};

use crate::cli::FaultsArgs;
use crate::exit::Exit;
use crate::failure::Outcome;
use crate::options::FaultsSettings;
use crate::output;
use crate::progress::Progress;
use crate::render;
use crate::signals::{Interrupted, StopSignals};

pub fn run(args: &FaultsArgs) -> Outcome {
    if args.clean {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("starting the async runtime")?;
        let swept = runtime.block_on(lockbench_faults::leftovers::sweep());
        if swept.is_empty() {
            eprintln!("lockbench: faults: nothing left behind by a fault lab that is gone");
        }
        return Ok(if say_swept(&swept) {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        });
    }
    let settings = FaultsSettings::resolve(args)?;
    let out = settings.out.as_deref().map(ResultsDir::new).transpose()?;
    let options = LabOptions {
        backends: settings.backends.clone(),
        resource_url: settings.resource_url.clone(),
        variants: settings.variants.clone(),
        ttl: settings.ttl,
        trials: settings.trials,
        seed: settings.seed,
        worker_exe: std::env::current_exe().context("finding the lockbench binary")?,
        redis_server: lockbench_faults::redis_server_on_path(),
        client: settings.client.clone(),
        lanes: settings.lanes,
        runners: settings.runners,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let output = runtime.block_on(run_lab(options))?;
    let record = &output.record;
    render::show(settings.json, record, render::fault_matrix)?;
    let skipped = !record.skipped.is_empty() || !record.runners_not_run.is_empty();
    if let Some(out) = out {
        write_results(out, &settings, &output)?;
    }
    Ok(if skipped {
        Exit::Partial.into()
    } else {
        ExitCode::SUCCESS
    })
}

/// Says what a gone lab left and was removed, or could not be; false if any could not.
fn say_swept(swept: &[lockbench_faults::leftovers::Swept]) -> bool {
    let (lines, all) = render::swept(swept);
    for line in lines {
        eprintln!("lockbench: faults: {line}");
    }
    all
}

async fn run_lab(mut options: LabOptions) -> Result<LabOutput> {
    // A user's own adapter says what its library is before its cells are named after it.
    if let (Some(program), Some(config)) = (&options.client, options.backends.first()) {
        options.client = Some(lockbench_clients::describe(program, config).await?);
    }
    // What labs killed with SIGKILL left (a namespace can hold a subnet this lab would need).
    say_swept(&lockbench_faults::leftovers::sweep().await);
    // Listening from here on: a Ctrl-C (or a SIGTERM, as a job runner sends) stops the trial in
    // flight (its processes are killed by pid when dropped), then the same cleanup as at the end.
    let mut signals = StopSignals::listen()?;
    let mut lab = FaultLab::prepare(options).await?;
    eprintln!(
        "fault lab: keys under {}, protected resource in schema {}; both removed at the end",
        lab.namespace(),
        lab.resource_schema()
    );
    let progress = Progress::bar(lab.total_trials(), "trials");
    let tick = |cell: &str| {
        progress.set_message(cell.to_string());
        progress.advance(1);
    };
    let note = |line: &str| progress.println(&format!("lockbench: faults: {line}"));
    let outcome = tokio::select! {
        r = lab.run(&tick, &note) => Ok(r),
        stop = signals.recv() => Err(stop),
    };
    progress.finish();
    let cleaned = lab.cleanup().await;
    match outcome {
        Err(by) => {
            let what = match cleaned {
                Ok(()) => "stopped the lab's processes and servers, removed its keys and tables; no results written".to_string(),
                Err(e) => format!("cleanup failed: {e}"),
            };
            Err(Interrupted { by, what }.into())
        }
        Ok(result) => {
            let output = result?;
            cleaned.context("removing the fault lab's tables and keys")?;
            Ok(output)
        }
    }
}

fn write_results(mut out: ResultsDir, settings: &FaultsSettings, output: &LabOutput) -> Result<()> {
    out.add(faults::CSV, to_csv(&output.trials))?;
    out.add(faults::EVENTS_CSV, to_csv(&output.events))?;
    if !output.runner_trials.is_empty() {
        out.add(faults::RUNNERS_CSV, to_csv(&output.runner_trials))?;
    }
    out.add(RESULTS_JSON, to_json::<FaultsRecord>(&output.record))?;
    let servers = output::server_records(&settings.backends);
    let manifest = output::manifest_with_servers(
        &out,
        RunKind::Faults,
        Some(settings.seed),
        Vec::new(),
        servers,
        &settings.config_path,
    );
    output::commit(out, manifest)
}
