//! `lockbench simulate`: runtime percentiles per workload, profile and scale.

use lockbench_core::RunKind;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Result;
use lockbench_core::records::simulate::SimulationRecord;
use lockbench_core::records::to_json;
use lockbench_workloads::{JobModel, WorkloadSpec};

use crate::cli::SimulateArgs;
use crate::failure::Outcome;
use crate::options::SimulateSettings;
use crate::output::{Simulated, prepare_out, simulate_one, write_results};
use crate::progress::Progress;
use crate::render;

pub fn run(args: &SimulateArgs) -> Outcome {
    let settings = SimulateSettings::resolve(args)?;
    let specs = settings
        .specs
        .iter()
        .map(|p| WorkloadSpec::load(p))
        .collect::<Result<Vec<_>, _>>()?;
    let out = prepare_out(&settings.simulation)?;
    // Compile every model first: a bad profile name or scale fails before any work is done.
    let mut models = Vec::new();
    for spec in &specs {
        let names: Vec<&str> = if settings.profiles.is_empty() {
            spec.profiles.iter().map(|p| p.name.as_str()).collect()
        } else {
            settings.profiles.iter().map(String::as_str).collect()
        };
        for name in names {
            for scale in &settings.scales {
                models.push((spec, JobModel::new(spec, name, *scale)?));
            }
        }
    }
    let per_model = settings
        .simulation
        .engine_shard()
        .replays_of(settings.simulation.replays);
    let progress = Progress::new(per_model * models.len() as u64);
    let started = Instant::now();
    let simulated: Vec<Simulated> = models
        .iter()
        .map(|(spec, model)| simulate_one(model, spec, &settings.simulation, &[], &progress))
        .collect();
    let elapsed = started.elapsed();
    progress.finish();
    // Latency draws made (steps x items x replays, constants excluded): the end-to-end figure
    // behind docs/PERFORMANCE.md, over the simulation's wall time alone.
    let samples: u64 = models
        .iter()
        .zip(&simulated)
        .map(|((_, m), s)| m.samples_per_replay() * s.histogram.count())
        .sum();
    let record = SimulationRecord {
        shards: 1,
        seed: settings.simulation.seed,
        threads: settings.simulation.threads,
        results: simulated.iter().map(|s| s.row.clone()).collect(),
        latency_samples: samples,
        elapsed_s: elapsed.as_secs_f64(),
        samples_per_s: samples as f64 / elapsed.as_secs_f64().max(1e-9),
        engine: settings
            .simulation
            .engine
            .ran(models.iter().map(|(_, m)| m)),
    };
    render::show(settings.simulation.json, &record, render::simulation_text)?;
    if let Some(out) = out {
        let spec_refs: Vec<&WorkloadSpec> = specs.iter().collect();
        let bytes = to_json(&record);
        write_results(
            out,
            RunKind::Simulate,
            &settings.simulation,
            &spec_refs,
            &simulated,
            bytes,
            Vec::new(),
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
