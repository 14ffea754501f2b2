//! `lockbench ttl`: the TTL recommendation.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, Result};
use lockbench_analysis::{
    DEFAULT_MAX_LEASE_RISK, LeaseCurve, LeaseInputs, MAX_LEASE, MIN_LEASE, ProfileP999, TtlInputs,
    VolumePoint, lease_replays, price_heartbeat, recommend, review_scales,
};
use lockbench_core::records::to_json;
use lockbench_core::records::ttl::TtlRecommendation;
use lockbench_workloads::observed::read_runs;
use lockbench_workloads::{JobModel, WorkloadSpec};

use crate::cli::TtlArgs;
use crate::commands::shared::{
    Simulated, check_model, default_profile, prepare_out, simulate_one, simulate_priced,
    write_results,
};
use crate::options::TtlOptions;
use crate::progress::Progress;
use crate::render;

/// What the derivation takes besides the simulated runtimes.
#[derive(Clone, Debug, PartialEq)]
pub struct TtlParams {
    pub target_scale: f64,
    pub safety_factor: f64,
    pub current_ttl: Option<Duration>,
    pub runs_per_year: f64,
    pub max_lease_risk: f64,
    pub seed: u64,
}

impl TtlParams {
    /// The parameters a recommendation was derived with, read back from it.
    pub fn of(r: &TtlRecommendation) -> Self {
        TtlParams {
            target_scale: r.target_scale,
            safety_factor: r.safety_factor,
            current_ttl: r.current_ttl.as_ref().map(|c| c.ttl),
            runs_per_year: r.runs_per_year,
            max_lease_risk: r
                .heartbeat
                .pricing
                .as_ref()
                .map_or(DEFAULT_MAX_LEASE_RISK, |p| p.max_lease_risk),
            seed: r.seed,
        }
    }
}

pub fn run(args: &TtlArgs) -> Result<ExitCode> {
    let options = TtlOptions::resolve(args)?;
    let spec = WorkloadSpec::load(&options.spec)?;
    let out = prepare_out(&options.simulation)?;
    // Past runs are read before anything is simulated, so bad input fails at once.
    let observed = match &options.observed {
        Some(path) => {
            // Runs that name no profile are the one the TTL is asked for, else the spec's first.
            let profile = default_profile(&spec, options.profile.as_deref())?;
            Some((
                path,
                read_runs(path, &spec, &profile, &args.runs.columns())?,
            ))
        }
        None => None,
    };
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
    // A shard cannot know which profile the whole run will find worst, so it simulates every
    // profile at half and double the target too; `merge` keeps what the whole run would have.
    let sharded = options.simulation.shard.is_some();
    let growth_runs = if sharded { 2 * names.len() } else { 2 };
    let shard = options.simulation.engine_shard();
    let replays = options.simulation.replays;
    // A profile that pauses runs enough replays to show its lease below --max-lease-risk.
    let priced_replays = replays.max(lease_replays(options.max_lease_risk));
    let leases = candidate_leases(&spec, &names, options.max_lease_risk);
    let lease_durations: Vec<Duration> = leases.clone().map(Duration::from_secs).collect();
    // A pausing model's runs: its replays and the leases it counts.
    let priced = |m: &JobModel| -> (u64, &[Duration]) {
        if m.has_pauses() {
            (priced_replays, &lease_durations)
        } else {
            (replays, &[])
        }
    };
    let at_target_replays: u64 = at_target
        .iter()
        .map(|m| shard.replays_of(priced(m).0))
        .sum();
    let progress =
        Progress::new(at_target_replays + shard.replays_of(replays) * growth_runs as u64);

    // 1. Every candidate profile at the target scale; the worst P99.9 decides. A profile that
    //    pauses also counts, per candidate lease, the replays that lost it.
    let mut simulated: Vec<Simulated> = Vec::new();
    let mut curves: Vec<LeaseCurve> = Vec::new();
    for model in &at_target {
        let (n, model_leases) = priced(model);
        let (s, lost) = simulate_priced(
            model,
            &spec,
            &options.simulation,
            &thresholds,
            n,
            model_leases,
            &progress,
        );
        if model.has_pauses() {
            curves.push(LeaseCurve {
                profile: model.profile.clone(),
                replays: s.histogram.count(),
                first_lease_s: *leases.start(),
                lost,
            });
        }
        simulated.push(s);
    }
    // 2. The chosen profile (every profile, in a shard) at half and double the target, to see
    //    how runtime grows.
    let growing: Vec<String> = if sharded {
        names.clone()
    } else {
        vec![names[worst(&simulated)].clone()]
    };
    for name in &growing {
        for scale in [below, above] {
            let model = JobModel::new(&spec, name, scale)?;
            simulated.push(simulate_one(
                &model,
                &spec,
                &options.simulation,
                &[],
                &progress,
            ));
        }
    }
    progress.finish();

    let params = TtlParams {
        target_scale: target,
        safety_factor: options.safety_factor,
        current_ttl: options.current_ttl,
        runs_per_year: options.runs_per_year,
        max_lease_risk: options.max_lease_risk,
        seed: options.simulation.seed,
    };
    let (mut recommendation, _) = derive(&spec, names.len(), &params, &simulated, curves)?;
    if let Some((path, runs)) = &observed {
        let checked = check_model(&spec, path, runs, &options.simulation)?;
        recommendation.model_check = Some(checked.summary());
        if !checked.record.consistent && options.simulation.json {
            eprintln!(
                "lockbench: ttl: warning: {}",
                render::rejected_model(&checked.summary())
            );
        }
    }
    let record = to_json(&recommendation);
    render::show(options.simulation.json, &recommendation, render::ttl_report)?;
    if let Some(out) = out {
        write_results(
            out,
            "ttl",
            &options.simulation,
            &[&spec],
            &simulated,
            record,
            Vec::new(),
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The whole-second heartbeat leases `ttl` prices: from the minimum to past where the longest pause
/// a profile draws (beyond its quantile 1 - P/1000, so that a run of up to a hundred pauses is
/// covered) could still take it, and at least the closed form; at most [`MAX_LEASE`] unless the
/// closed form is longer (up to an hour). A pause of length d loses a lease L only if d > 2L/3.
fn candidate_leases(
    spec: &WorkloadSpec,
    profiles: &[String],
    max_risk: f64,
) -> std::ops::RangeInclusive<u64> {
    let first = MIN_LEASE.as_secs();
    let last = profiles
        .iter()
        .filter_map(|name| spec.profile(name).ok()?.pauses.as_ref())
        .map(|p| {
            let longest = p.duration.quantile(1.0 - max_risk / 1000.0).min(1e9);
            let closed_form = (3.0 * p.duration.quantile(0.999).min(1e9)).ceil() as u64;
            let last = ((1.5 * longest).ceil() as u64 + 1).min(MAX_LEASE.as_secs());
            last.max(closed_form.min(3600))
        })
        .max()
        .unwrap_or(first);
    first..=last.max(first)
}

/// The candidate with the worst P99.9 among the first entries (the last of equals).
fn worst(candidates: &[Simulated]) -> usize {
    (0..candidates.len())
        .max_by_key(|i| candidates[*i].row.runtime.p999)
        .expect("a spec has at least one profile")
}

/// The recommendation from simulated runtimes: the first `profiles` entries are every candidate
/// profile at the target scale (counted above the current TTL), the others hold the profiles at
/// half and double the target; `curves` are the pausing profiles' lease losses. Returns it with
/// the entries it used, in the order a whole run writes them: the candidates, then the chosen
/// profile below and above the target.
pub fn derive(
    spec: &WorkloadSpec,
    profiles: usize,
    params: &TtlParams,
    simulated: &[Simulated],
    curves: Vec<LeaseCurve>,
) -> Result<(TtlRecommendation, Vec<usize>)> {
    let worst = worst(&simulated[..profiles]);
    let chosen = simulated[worst].row.profile.clone();
    let [below, _, above] = review_scales(params.target_scale);
    let at = |scale: f64| {
        (profiles..simulated.len())
            .find(|&i| simulated[i].row.profile == chosen && simulated[i].row.scale == scale)
            .with_context(|| format!("no run of profile {chosen} at scale {scale}"))
    };
    let used: Vec<usize> = (0..profiles).chain([at(below)?, at(above)?]).collect();
    let target_row = &simulated[worst].row;
    let exceeding = params
        .current_ttl
        .and_then(|ttl| simulated[worst].histogram.count_above(ttl));
    let mut volume_points: Vec<VolumePoint> = used
        .iter()
        .map(|&i| &simulated[i].row)
        .filter(|row| row.profile == chosen)
        .map(|row| VolumePoint {
            scale: row.scale,
            volume: row.volume,
            p999: row.runtime.p999,
        })
        .collect();
    volume_points.sort_by_key(|p| p.volume);
    let recommendation = recommend(TtlInputs {
        workload: spec.workload.name.clone(),
        profile: chosen.clone(),
        profiles_considered: simulated[..profiles]
            .iter()
            .map(|s| ProfileP999 {
                profile: s.row.profile.clone(),
                p999: s.row.runtime.p999,
            })
            .collect(),
        unit: spec.workload.unit.clone(),
        target_scale: params.target_scale,
        target_volume: target_row.volume,
        seed: params.seed,
        replays: simulated[worst].histogram.count(),
        measured_p999: target_row.runtime.p999,
        p999_ci_s: target_row.p999_ci_s,
        p999_ci_open: target_row.p999_ci_open,
        safety_factor: params.safety_factor,
        volume_points,
        heartbeat: price_heartbeat(&LeaseInputs {
            pause_p999: curves
                .iter()
                .filter_map(|c| {
                    Some((
                        c.profile.clone(),
                        spec.profile(&c.profile).ok()?.pause_p999()?,
                    ))
                })
                .collect(),
            curves,
            max_lease_risk: params.max_lease_risk,
            runs_per_year: params.runs_per_year,
            replays_without_pauses: simulated[worst].histogram.count(),
        }),
        current_ttl: params.current_ttl.zip(exceeding),
        runs_per_year: params.runs_per_year,
    });
    Ok((recommendation, used))
}
