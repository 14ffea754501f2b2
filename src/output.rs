//! The binary's output layer, where bytes go, shared by the commands: one model simulated with
//! progress (simulate, ttl, check), the model check against past runs (check, ttl --observed), a
//! review trigger searched, and a results directory assembled and committed (its manifest, the
//! simulate and bench files, the report).

use lockbench_core::RunKind;
use std::path::Path;

use anyhow::{Context, Result};
use lockbench_analysis::check::{CheckContext, CheckPlan, Checked, Quantiles, check};
use lockbench_analysis::rare::RareOptions;
use lockbench_analysis::{
    Budget, TTL_RARE, TailInputs, TriggerPlan, TtlRecommendation, price_tail, search_trigger,
};
use lockbench_bench::BenchResult;
use lockbench_core::records::bench::{self, BenchRecord};
use lockbench_core::records::simulate::{self, SimulationRow};
use lockbench_core::records::{RESULTS_JSON, SCHEMA_VERSION, to_json};
use lockbench_core::{
    Machine, Manifest, ResultsDir, RuntimeHistogram, ServerRecord, SpecRecord, TOOL_VERSION,
    unix_now_s,
};
use lockbench_workloads::observed::ObservedRun;
use lockbench_workloads::{JobModel, SimOptions, WorkloadSpec, simulate_leases};

use crate::options::SimulationSettings;
use crate::progress::Progress;

/// Simulates every (profile, volume) the runs need ([`CheckPlan`]) with progress, and checks the
/// runs against them (`check` and `ttl --observed`).
pub fn check_model(
    spec: &WorkloadSpec,
    observed: &Path,
    runs: &[ObservedRun],
    simulation: &SimulationSettings,
) -> Result<Checked> {
    let plan = CheckPlan::new(runs);
    let base = spec.workload.volume as f64;
    let models = plan
        .models()
        .map(|(p, v)| JobModel::new(spec, p, v as f64 / base))
        .collect::<Result<Vec<_>, _>>()?;
    let progress = Progress::new(simulation.replays * models.len() as u64);
    let quantiles: Vec<Quantiles> = models
        .iter()
        .map(|m| {
            let simulated = simulate_one(m, spec, simulation, &[], &progress);
            Quantiles::new(&simulated.histogram.recorded_s())
        })
        .collect();
    progress.finish();
    let context = CheckContext {
        workload: spec.workload.name.clone(),
        unit: spec.workload.unit.clone(),
        observed: observed.display().to_string(),
        replays: simulation.replays,
        seed: simulation.seed,
    };
    Ok(check(&plan, runs, &quantiles, &context))
}

pub use lockbench_analysis::Simulated;

/// Searches the first volume at which any profile's P99.9 reaches `r`'s alert threshold, by
/// simulating every profile of `spec` at rising scales (see [`search_trigger`]), and records it
/// in `r`. Unsharded: `ttl` searches in a whole run, `merge` after merging the shards.
pub fn search_review_trigger(
    spec: &WorkloadSpec,
    r: &mut TtlRecommendation,
    simulation: &SimulationSettings,
) -> Result<()> {
    let plan = TriggerPlan {
        target_scale: r.target_scale,
        target_volume: r.target_volume,
        threshold: r.alert_hold,
        replays: simulation.replays,
    };
    let whole = SimulationSettings {
        shard: None,
        ..simulation.clone()
    };
    let progress = Progress::bar(0, "replays (review trigger)");
    let found = search_trigger(&plan, &r.profiles_considered, |profile, scale, replays| {
        let model = JobModel::new(spec, profile, scale)?;
        progress.grow(replays);
        let (run, _) = simulate_priced(&model, spec, &whole, &[], replays, &[], &progress);
        anyhow::Ok((run.row.volume, run.row.runtime.p999))
    })?;
    progress.finish();
    r.review_trigger_volume = found.volume;
    r.review_trigger_from = found.search;
    Ok(())
}

/// Prices `r`'s tail for its schedule from the candidates' replays (every candidate profile at
/// the target) and sizes its TTL to `budget`, with a spinner saying which stage it is at.
pub fn price_tail_of(
    spec: &WorkloadSpec,
    r: &mut TtlRecommendation,
    candidates: &[Simulated],
    budget: Budget,
    simulation: &SimulationSettings,
) -> Result<()> {
    let replays: Vec<(&str, &lockbench_core::RuntimeHistogram)> = candidates
        .iter()
        .map(|c| (c.row.profile.as_str(), &c.histogram))
        .collect();
    let spinner = Progress::spinner("pricing the tail".to_string());
    price_tail(
        r,
        &TailInputs {
            spec,
            replays: &replays,
            budget,
            engine: simulation.engine,
            options: RareOptions {
                seed: simulation.seed,
                threads: simulation.threads,
                ..TTL_RARE
            },
        },
        &|stage| spinner.set_message(format!("pricing the tail: {stage}")),
    )?;
    spinner.finish();
    Ok(())
}

/// Simulates `model` under `simulation`'s replays, seed and threads.
pub fn simulate_one(
    model: &JobModel,
    spec: &WorkloadSpec,
    simulation: &SimulationSettings,
    thresholds: &[std::time::Duration],
    progress: &Progress,
) -> Simulated {
    simulate_priced(
        model,
        spec,
        simulation,
        thresholds,
        simulation.replays,
        &[],
        progress,
    )
    .0
}

/// [`simulate_one`] over `replays` replays, counting the replays that lost each heartbeat lease
/// in `leases` (see [`simulate_leases`]).
pub fn simulate_priced(
    model: &JobModel,
    spec: &WorkloadSpec,
    simulation: &SimulationSettings,
    thresholds: &[std::time::Duration],
    replays: u64,
    leases: &[std::time::Duration],
    progress: &Progress,
) -> (Simulated, Vec<u64>) {
    progress.set_message(format!(
        "{} / {} x{}",
        model.workload, model.profile, model.scale
    ));
    let options = SimOptions {
        replays,
        seed: simulation.seed,
        threads: simulation.threads,
        thresholds: thresholds.to_vec(),
        shard: simulation.engine_shard(),
        engine: simulation.engine,
    };
    let (histogram, lost) = simulate_leases(model, &options, leases, &|n| progress.advance(n));
    let row = SimulationRow::new(
        &model.workload,
        &model.profile,
        model.scale,
        model.volume,
        &spec.workload.unit,
        &histogram,
    );
    (Simulated { row, histogram }, lost)
}

/// Stages the files every simulation result directory has: the summary CSV, the histograms and
/// the record (`results.json`, what `--json` prints), then the manifest, and commits the
/// directory.
pub fn write_results(
    out: ResultsDir,
    command: RunKind,
    simulation: &SimulationSettings,
    specs: &[&WorkloadSpec],
    simulated: &[Simulated],
    record: Vec<u8>,
    merged_from: Vec<lockbench_core::ShardOrigin>,
) -> Result<()> {
    let mut out = out;
    let rows: Vec<SimulationRow> = simulated.iter().map(|s| s.row.clone()).collect();
    out.add(simulate::CSV, simulate::summary_csv(&rows))?;
    let entries: Vec<(String, &RuntimeHistogram)> = simulated
        .iter()
        .map(|s| (s.row.tag(), &s.histogram))
        .collect();
    add_histograms(
        &mut out,
        simulate::HISTOGRAMS,
        &format!("lockbench {command}: job runtimes, one histogram per workload/profile/scale"),
        &entries,
    )?;
    out.add(RESULTS_JSON, record)?;
    let specs = specs
        .iter()
        .map(|s| SpecRecord {
            path: s.path.display().to_string(),
            text: s.text.clone(),
        })
        .collect();
    let manifest = Manifest {
        shard: simulation.shard.clone(),
        merged_from,
        ..manifest(
            &out,
            command,
            Some(simulation.seed),
            simulation.threads,
            specs,
        )
    };
    commit(out, manifest)
}

/// The manifest of a results directory whose other files are staged already.
pub fn manifest(
    out: &ResultsDir,
    command: RunKind,
    seed: Option<u64>,
    threads: usize,
    specs: Vec<SpecRecord>,
) -> Manifest {
    Manifest {
        tool: "lockbench".to_string(),
        schema_version: SCHEMA_VERSION,
        version: TOOL_VERSION.to_string(),
        git_commit: Some(env!("LOCKBENCH_GIT_COMMIT").to_string()).filter(|c| !c.is_empty()),
        command,
        args: std::env::args().collect(),
        seed,
        threads,
        created_unix_s: unix_now_s(),
        machine: Machine::current(),
        specs,
        backends: Vec::new(),
        config: None,
        files: out.file_names().map(str::to_string).collect(),
        shard: None,
        merged_from: Vec::new(),
        build: Some(lockbench_core::BuildProfile::current()),
    }
}

/// [`manifest`] of a run against servers: which ones (passwords removed) and the config read.
pub fn manifest_with_servers(
    out: &ResultsDir,
    command: RunKind,
    seed: Option<u64>,
    specs: Vec<SpecRecord>,
    servers: Vec<ServerRecord>,
    config: &Path,
) -> Manifest {
    Manifest {
        backends: servers,
        config: Some(config.display().to_string()),
        ..manifest(out, command, seed, 0, specs)
    }
}

/// The servers a run used, as its manifest names them: passwords removed, so the config's URLs
/// never reach a file as given.
pub fn server_records(backends: &[lockbench_locks::BackendConfig]) -> Vec<ServerRecord> {
    backends
        .iter()
        .map(|c| ServerRecord {
            backend: c.id(),
            urls: c.display_url(),
            namespace: c.namespace.clone(),
        })
        .collect()
}

/// Adds the manifest last and moves the directory into place.
pub fn commit(out: ResultsDir, manifest: Manifest) -> Result<()> {
    // `run` stages its steps in a hidden folder and names the final one itself.
    commit_as(out, manifest, std::env::var_os(STAGED).is_none())
}

/// [`commit`], saying where the directory went only when `announce` is true.
pub fn commit_as(mut out: ResultsDir, manifest: Manifest, announce: bool) -> Result<()> {
    out.add(
        lockbench_core::records::MANIFEST,
        lockbench_core::records::to_json(&manifest),
    )?;
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
pub fn prepare_out(simulation: &SimulationSettings) -> Result<Option<ResultsDir>> {
    simulation
        .out
        .as_deref()
        .map(|p: &Path| ResultsDir::new(p))
        .transpose()
        .map_err(Into::into)
}

/// Stages `results.json`, `bench.csv`, `latency.hlog` and its `exact.json`, then the manifest
/// `manifest` makes once they are staged, and commits the directory.
pub fn write_bench_results(
    mut out: ResultsDir,
    results: &[BenchResult],
    record: &BenchRecord,
    manifest: impl FnOnce(&ResultsDir) -> lockbench_core::Manifest,
) -> Result<()> {
    out.add(RESULTS_JSON, to_json(record))?;
    out.add(bench::CSV, bench::bench_csv(&record.results))?;
    let entries: Vec<(String, &RuntimeHistogram)> =
        results.iter().flat_map(|r| r.tagged_histograms()).collect();
    add_histograms(
        &mut out,
        bench::HISTOGRAMS,
        "lockbench bench: operation latency per backend/mode/keys/contenders/metric",
        &entries,
    )?;
    let manifest = manifest(&out);
    commit(out, manifest)
}

/// Stages a histogram log (`file`, described by `comment`) and its `exact.json`: the exact
/// count, sum, extremes and threshold counts of each histogram, which merge adds.
fn add_histograms(
    out: &mut ResultsDir,
    file: &str,
    comment: &str,
    entries: &[(String, &RuntimeHistogram)],
) -> Result<()> {
    out.add(file, lockbench_core::interval_log(comment, entries))?;
    out.add(
        lockbench_core::records::exact::EXACT,
        to_json(&lockbench_core::records::exact::ExactRecord::of(entries)),
    )?;
    Ok(())
}

/// Loads `dirs`, builds the report and writes it to `out` (complete or not at all), saying where
/// when `announce` is true.
pub fn write_report(
    dirs: &[std::path::PathBuf],
    out: ResultsDir,
    announce: bool,
    options: &lockbench_analysis::report::ReportOptions,
) -> Result<()> {
    write_report_interim(dirs, out, announce, None, options)
}

/// [`write_report`], labelled as an interim record when `interim` says what is still being
/// measured (`lockbench run` between its steps).
pub fn write_report_interim(
    dirs: &[std::path::PathBuf],
    out: ResultsDir,
    announce: bool,
    interim: Option<&lockbench_analysis::report::Interim>,
    options: &lockbench_analysis::report::ReportOptions,
) -> Result<()> {
    let evidence = lockbench_analysis::report::load(dirs)?;
    if evidence.is_empty() {
        return Err(lockbench_analysis::report::ReportError::Input {
            path: dirs[0].clone(),
            message: "holds no results of simulate, ttl, bench or replay".to_string(),
        }
        .into());
    }
    let built = lockbench_analysis::report::build_interim(&evidence, interim, options)?;
    let mut out = out;
    out.add("report.md", built.markdown.into_bytes())?;
    out.add("report.html", built.html.into_bytes())?;
    out.add(
        lockbench_analysis::report::rules::RULES_FILE,
        built.rules.into_bytes(),
    )?;
    out.add(
        lockbench_analysis::report::rules::RULES_TEST_FILE,
        built.rules_test.into_bytes(),
    )?;
    for (name, chart) in &built.charts {
        out.add(&format!("charts/{name}.png"), chart.png.clone())?;
        out.add(
            &format!("charts/{name}.svg"),
            chart.svg.clone().into_bytes(),
        )?;
    }
    let manifest = manifest(&out, RunKind::Report, None, 1, Vec::new());
    commit_as(out, manifest, announce)
}
