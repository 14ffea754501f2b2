//! What `simulate` and `ttl` share: running one model with progress, and assembling a results
//! directory.

use std::path::Path;

use anyhow::{Context, Result};
use lockbench_analysis::RuntimeSummary;
use lockbench_analysis::export::SimulationRow;
use lockbench_core::{
    Machine, Manifest, ResultsDir, RuntimeHistogram, SpecRecord, TOOL_VERSION, unix_now_s,
};
use lockbench_workloads::{ReplayModel, SimOptions, WorkloadSpec, simulate};

use crate::options::RunOptions;
use crate::progress::Progress;

/// One simulated (workload, profile, scale) with its runtimes.
pub struct Simulated {
    pub row: SimulationRow,
    pub histogram: RuntimeHistogram,
}

/// Simulates `model` under `run`'s replays, seed and threads.
pub fn simulate_one(
    model: &ReplayModel,
    spec: &WorkloadSpec,
    run: &RunOptions,
    thresholds: &[std::time::Duration],
    progress: &Progress,
) -> Simulated {
    progress.set_message(format!(
        "{} / {} x{}",
        model.workload, model.profile, model.scale
    ));
    let options = SimOptions {
        replays: run.replays,
        seed: run.seed,
        threads: run.threads,
        thresholds: thresholds.to_vec(),
    };
    let histogram = simulate(model, &options, &|n| progress.advance(n));
    let row = SimulationRow::new(
        &model.workload,
        &model.profile,
        model.scale,
        model.volume,
        &spec.workload.unit,
        RuntimeSummary::from_histogram(&histogram),
    );
    Simulated { row, histogram }
}

/// Stages the files every simulation result directory has: the summary CSV, the histograms and
/// the JSON printed by `--json`, then the manifest, and commits the directory.
pub fn write_results(
    out: ResultsDir,
    command: &str,
    run: &RunOptions,
    specs: &[&WorkloadSpec],
    simulated: &[Simulated],
    json: &serde_json::Value,
) -> Result<()> {
    let mut out = out;
    let rows: Vec<SimulationRow> = simulated.iter().map(|s| s.row.clone()).collect();
    out.add(
        "summary.csv",
        lockbench_analysis::export::simulation_csv(&rows),
    )?;
    let entries: Vec<(String, &RuntimeHistogram)> = simulated
        .iter()
        .map(|s| {
            (
                format!("{}/{}/scale={}", s.row.workload, s.row.profile, s.row.scale),
                &s.histogram,
            )
        })
        .collect();
    out.add(
        "runtimes.hlog",
        lockbench_core::interval_log(
            &format!("lockbench {command}: job runtimes, one histogram per workload/profile/scale"),
            &entries,
        ),
    )?;
    out.add("results.json", serde_json::to_vec_pretty(json)?)?;
    let specs = specs
        .iter()
        .map(|s| SpecRecord {
            path: s.path.display().to_string(),
            text: s.text.clone(),
        })
        .collect();
    let manifest = manifest(&out, command, Some(run.seed), run.threads, specs);
    commit(out, &manifest)
}

/// The manifest of a results directory whose other files are staged already.
pub fn manifest(
    out: &ResultsDir,
    command: &str,
    seed: Option<u64>,
    threads: usize,
    specs: Vec<SpecRecord>,
) -> Manifest {
    Manifest {
        tool: "lockbench",
        version: TOOL_VERSION,
        git_commit: Some(env!("LOCKBENCH_GIT_COMMIT").to_string()).filter(|c| !c.is_empty()),
        command: command.to_string(),
        args: std::env::args().collect(),
        seed,
        threads,
        created_unix_s: unix_now_s(),
        machine: Machine::current(),
        specs,
        files: out.file_names().map(str::to_string).collect(),
    }
}

/// Adds the manifest last and moves the directory into place.
pub fn commit(out: ResultsDir, manifest: &impl serde::Serialize) -> Result<()> {
    // `run` stages its steps in a hidden folder and names the final one itself.
    commit_as(out, manifest, std::env::var_os(STAGED).is_none())
}

/// [`commit`], saying where the directory went only when `announce` is true.
pub fn commit_as(
    mut out: ResultsDir,
    manifest: &impl serde::Serialize,
    announce: bool,
) -> Result<()> {
    out.add("manifest.json", serde_json::to_vec_pretty(manifest)?)?;
    let path = out.commit().context("writing the results directory")?;
    if announce {
        eprintln!("results written to {}", path.display());
    }
    Ok(())
}

/// Set by `run` for its steps: their results directories are staged, so their paths are not
/// worth printing.
pub const STAGED: &str = "LOCKBENCH_STAGED";

/// Checks `--out` before any work, so a long run cannot fail at its end.
pub fn prepare_out(run: &RunOptions) -> Result<Option<ResultsDir>> {
    run.out
        .as_deref()
        .map(|p: &Path| ResultsDir::new(p))
        .transpose()
        .map_err(Into::into)
}
