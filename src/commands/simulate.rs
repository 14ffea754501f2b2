//! `lockbench simulate`: runtime percentiles per workload, profile and scale.

use std::process::ExitCode;

use anyhow::Result;
use lockbench_workloads::{ReplayModel, WorkloadSpec};

use crate::cli::SimulateArgs;
use crate::commands::shared::{Simulated, prepare_out, simulate_one, write_results};
use crate::options::SimulateOptions;
use crate::progress::Progress;
use crate::render;

pub fn run(args: &SimulateArgs) -> Result<ExitCode> {
    let options = SimulateOptions::resolve(args)?;
    let specs = options
        .specs
        .iter()
        .map(|p| WorkloadSpec::load(p))
        .collect::<Result<Vec<_>, _>>()?;
    let out = prepare_out(&options.run)?;
    // Compile every model first: a bad profile name or scale fails before any work is done.
    let mut models = Vec::new();
    for spec in &specs {
        let names: Vec<&str> = if options.profiles.is_empty() {
            spec.profiles.iter().map(|p| p.name.as_str()).collect()
        } else {
            options.profiles.iter().map(String::as_str).collect()
        };
        for name in names {
            for scale in &options.scales {
                models.push((spec, ReplayModel::new(spec, name, *scale)?));
            }
        }
    }
    let progress = Progress::new(options.run.replays * models.len() as u64);
    let simulated: Vec<Simulated> = models
        .iter()
        .map(|(spec, model)| simulate_one(model, spec, &options.run, &[], &progress))
        .collect();
    progress.finish();

    let json = serde_json::json!({
        "seed": options.run.seed,
        "threads": options.run.threads,
        "results": simulated.iter().map(|s| &s.row).collect::<Vec<_>>(),
    });
    if options.run.json {
        println!("{}", serde_json::to_string_pretty(&json)?);
    } else {
        print!("{}", render::simulation_table(&options.run, &simulated));
    }
    if let Some(out) = out {
        let spec_refs: Vec<&WorkloadSpec> = specs.iter().collect();
        write_results(out, "simulate", &options.run, &spec_refs, &simulated, &json)?;
    }
    Ok(ExitCode::SUCCESS)
}
