//! `lockbench ttl`: the TTL recommendation.

use lockbench_core::RunKind;
use std::process::ExitCode;

use lockbench_analysis::{LeaseCurve, Simulated, TtlOptions, TtlPlan, TtlSimulations, derive};
use lockbench_core::records::to_json;
use lockbench_workloads::observed::read_runs;
use lockbench_workloads::{JobModel, WorkloadSpec};

use crate::cli::TtlArgs;
use crate::failure::Outcome;
use crate::options::TtlSettings;
use crate::output::{
    check_model, prepare_out, price_tail_of, search_review_trigger, simulate_one, simulate_priced,
    write_results,
};
use crate::progress::Progress;
use crate::render;

pub fn run(args: &TtlArgs) -> Outcome {
    let settings = TtlSettings::resolve(args)?;
    let spec = WorkloadSpec::load(&settings.spec)?;
    let out = prepare_out(&settings.simulation)?;
    // Past runs are read before anything is simulated, so bad input fails at once.
    let observed = match &settings.observed {
        Some(path) => {
            // Runs that name no profile are the one the TTL is asked for, else the spec's first.
            let profile = spec
                .profile_or_first(settings.profile.as_deref())?
                .name
                .clone();
            Some((
                path,
                read_runs(path, &spec, &profile, &args.runs.columns())?,
            ))
        }
        None => None,
    };
    let (target_scale, target_from) = settings.target(&spec);
    let current_ttl = settings.current_ttl.or(spec.workload.current_ttl);
    let plan = TtlPlan::new(
        &spec,
        settings.profile.as_deref(),
        target_scale,
        settings.simulation.replays,
        settings.max_lease_risk,
        settings.simulation.shard.is_some(),
    )?;
    let thresholds: Vec<_> = current_ttl.into_iter().collect();
    let shard = settings.simulation.engine_shard();
    let candidate_replays: u64 = plan
        .candidates
        .iter()
        .map(|m| shard.replays_of(plan.priced(m).0))
        .sum();
    let progress = Progress::new(
        candidate_replays + shard.replays_of(plan.replays) * plan.growth_simulations() as u64,
    );

    // 1. Every candidate profile at the target scale; the worst P99.9 decides. A profile that
    //    pauses also counts, per candidate lease, the replays that lost it.
    let mut candidates: Vec<Simulated> = Vec::new();
    let mut curves: Vec<LeaseCurve> = Vec::new();
    for model in &plan.candidates {
        let (replays, leases) = plan.priced(model);
        let (s, lost) = simulate_priced(
            model,
            &spec,
            &settings.simulation,
            &thresholds,
            replays,
            &leases,
            &progress,
        );
        if model.has_pauses() {
            curves.push(plan.curve(&s, lost));
        }
        candidates.push(s);
    }
    // 2. The worst profile (every profile, in a shard) at half and double the target, to see how
    //    runtime grows; then every profile at today's volume, which alert thresholds are sized
    //    against.
    let mut growth: Vec<Simulated> = Vec::new();
    for name in plan.growing(&candidates) {
        for scale in [plan.below, plan.above] {
            let model = JobModel::new(&spec, &name, scale)?;
            growth.push(simulate_one(
                &model,
                &spec,
                &settings.simulation,
                &[],
                &progress,
            ));
        }
    }
    for model in &plan.today {
        // A growth run at today's volume (a target of 2 has its half there) already is one.
        if growth
            .iter()
            .any(|g| g.row.profile == model.profile && g.row.scale == 1.0)
        {
            continue;
        }
        growth.push(simulate_one(
            model,
            &spec,
            &settings.simulation,
            &[],
            &progress,
        ));
    }
    progress.finish();

    let frequency = settings
        .runs_per_year
        .clone()
        .unwrap_or_else(|| spec.frequency());
    let params = TtlOptions {
        target_scale,
        target_from,
        safety_factor: settings.safety_factor,
        current_ttl,
        runs_per_year: frequency.runs_per_year,
        runs_per_year_from: frequency.from,
        max_lease_risk: settings.max_lease_risk,
        seed: settings.simulation.seed,
        engine: settings.simulation.engine.ran(plan.candidates.iter()),
    };
    let runs = TtlSimulations {
        candidates: &candidates,
        growth: &growth,
    };
    let mut recommendation = derive(&spec, &params, runs, curves)?.recommendation;
    // 3. The tail priced for the schedule, and the TTL the yearly budget needs: subset
    //    simulation where the replays saw too few runs over a TTL. A shard's record is not priced.
    if settings.simulation.shard.is_none() {
        price_tail_of(
            &spec,
            &mut recommendation,
            &candidates,
            settings.budget(&spec),
            &settings.simulation,
        )?;
    }
    // 4. The review trigger, searched by simulation; a shard leaves it to `merge`.
    if settings.simulation.shard.is_none() {
        search_review_trigger(&spec, &mut recommendation, &settings.simulation)?;
    }
    if let Some((path, runs)) = &observed {
        let checked = check_model(&spec, path, runs, &settings.simulation)?;
        recommendation.model_check = Some(checked.summary());
        if !checked.record.consistent && settings.simulation.json {
            eprintln!(
                "lockbench: ttl: warning: {}",
                render::rejected_model(&checked.summary())
            );
        }
    }
    // A whole run writes the candidates, then the growth runs.
    candidates.extend(growth);
    let record = to_json(&recommendation);
    render::show(
        settings.simulation.json,
        &recommendation,
        render::ttl_report,
    )?;
    if let Some(out) = out {
        write_results(
            out,
            RunKind::Ttl,
            &settings.simulation,
            &[&spec],
            &candidates,
            record,
            Vec::new(),
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
