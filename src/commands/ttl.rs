//! `lockbench ttl`: the TTL recommendation.

use std::io::Write as _;
use std::process::ExitCode;

use anyhow::Result;
use lockbench_analysis::{ProfileP999, TtlInputs, VolumePoint, recommend, review_scales};
use lockbench_core::records::to_json;
use lockbench_workloads::{JobModel, WorkloadSpec};

use crate::cli::TtlArgs;
use crate::commands::shared::{Simulated, prepare_out, simulate_one, write_results};
use crate::options::TtlOptions;
use crate::progress::Progress;
use crate::render;

pub fn run(args: &TtlArgs) -> Result<ExitCode> {
    let options = TtlOptions::resolve(args)?;
    let spec = WorkloadSpec::load(&options.spec)?;
    let out = prepare_out(&options.simulation)?;
    let names: Vec<String> = match &options.profile {
        Some(name) => vec![spec.profile(name)?.name.clone()],
        None => spec.profiles.iter().map(|p| p.name.clone()).collect(),
    };
    let target = options.target_scale;
    let [below, _, above] = review_scales(target);
    // Every model is compiled before any replay runs, so bad input fails at once.
    let at_target = names
        .iter()
        .map(|n| JobModel::new(&spec, n, target))
        .collect::<Result<Vec<_>, _>>()?;
    for n in &names {
        JobModel::new(&spec, n, above)?;
    }
    let thresholds: Vec<_> = options.current_ttl.into_iter().collect();
    let progress = Progress::new(options.simulation.replays * (names.len() as u64 + 2));

    // 1. Every candidate profile at the target scale; the worst P99.9 decides.
    let mut simulated: Vec<Simulated> = at_target
        .iter()
        .map(|m| simulate_one(m, &spec, &options.simulation, &thresholds, &progress))
        .collect();
    let worst = (0..simulated.len())
        .max_by_key(|i| simulated[*i].row.runtime.p999)
        .expect("a spec has at least one profile");
    let chosen = names[worst].clone();
    let exceeding = options
        .current_ttl
        .and_then(|ttl| simulated[worst].histogram.count_above(ttl));

    // 2. The chosen profile at half and double the target, to see how runtime grows.
    for scale in [below, above] {
        let model = JobModel::new(&spec, &chosen, scale)?;
        simulated.push(simulate_one(
            &model,
            &spec,
            &options.simulation,
            &[],
            &progress,
        ));
    }
    progress.finish();

    let target_row = &simulated[worst].row;
    let mut volume_points: Vec<VolumePoint> = simulated
        .iter()
        .filter(|s| s.row.profile == chosen)
        .map(|s| VolumePoint {
            scale: s.row.scale,
            volume: s.row.volume,
            p999: s.row.runtime.p999,
        })
        .collect();
    volume_points.sort_by_key(|p| p.volume);
    let recommendation = recommend(TtlInputs {
        workload: spec.workload.name.clone(),
        profile: chosen.clone(),
        profiles_considered: simulated[..names.len()]
            .iter()
            .map(|s| ProfileP999 {
                profile: s.row.profile.clone(),
                p999: s.row.runtime.p999,
            })
            .collect(),
        unit: spec.workload.unit.clone(),
        target_scale: target,
        target_volume: target_row.volume,
        seed: options.simulation.seed,
        replays: options.simulation.replays,
        measured_p999: target_row.runtime.p999,
        p999_ci_s: target_row.p999_ci_s,
        p999_ci_open: target_row.p999_ci_open,
        safety_factor: options.safety_factor,
        volume_points,
        pause_p999: spec.profile(&chosen)?.pause_p999(),
        current_ttl: options.current_ttl.zip(exceeding),
        runs_per_year: options.runs_per_year,
    });

    let record = to_json(&recommendation);
    if options.simulation.json {
        std::io::stdout().write_all(&record)?;
    } else {
        print!("{}", render::ttl_report(&recommendation));
    }
    if let Some(out) = out {
        write_results(
            out,
            "ttl",
            &options.simulation,
            &[&spec],
            &simulated,
            record,
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
