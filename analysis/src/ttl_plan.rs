//! What `ttl` simulates and how the recommendation is derived from it: the [`TtlPlan`] (every
//! candidate profile at the target scale, then the worst one, or in a shard every one, at half and
//! double it, and the heartbeat leases a pausing profile is priced at), and [`derive`], a pure
//! function of the simulated runs that `ttl` and `merge` share.

use std::ops::RangeInclusive;
use std::time::Duration;

use lockbench_core::RuntimeHistogram;
use lockbench_core::records::simulate::SimulationRow;
use lockbench_core::records::ttl::{ProfileRuntime, RunsPerYearFrom, TargetFrom};
use lockbench_workloads::{JobModel, SpecError, WorkloadSpec};

use crate::lease::{
    DEFAULT_MAX_LEASE_RISK, LeaseInputs, MAX_LEASE, lease_replays, price_heartbeat,
};
use crate::ttl::{MIN_LEASE, TtlInputs, recommend, review_scales};
use crate::{LeaseCurve, ProfileP999, TtlRecommendation, VolumePoint};

/// One simulated (workload, profile, scale): its row and its runtimes.
#[derive(Clone, Debug)]
pub struct Simulated {
    pub row: SimulationRow,
    pub histogram: RuntimeHistogram,
}

/// What the derivation takes besides the simulated runtimes.
#[derive(Clone, Debug, PartialEq)]
pub struct TtlOptions {
    pub target_scale: f64,
    /// Where the target comes from (the spec's `target_volume`, the flag, or today's assumed).
    pub target_from: TargetFrom,
    pub safety_factor: f64,
    pub current_ttl: Option<Duration>,
    pub runs_per_year: f64,
    /// Where `runs_per_year` comes from (the spec's schedule, a flag, or assumed monthly).
    pub runs_per_year_from: RunsPerYearFrom,
    pub max_lease_risk: f64,
    pub seed: u64,
    /// The engine that drew the replays (`Engine::ran`).
    pub engine: String,
}

impl TtlOptions {
    /// The parameters a recommendation was derived with, read back from it.
    pub fn of(r: &TtlRecommendation) -> Self {
        TtlOptions {
            target_scale: r.target_scale,
            target_from: r.target_from,
            safety_factor: r.safety_factor,
            current_ttl: r.current_ttl.as_ref().map(|c| c.ttl),
            runs_per_year: r.runs_per_year,
            runs_per_year_from: r.runs_per_year_from.clone(),
            max_lease_risk: r
                .heartbeat
                .pricing
                .as_ref()
                .map_or(DEFAULT_MAX_LEASE_RISK, |p| p.max_lease_risk),
            seed: r.seed,
            engine: r.engine.clone(),
        }
    }
}

/// What `ttl` simulates, decided before any replay runs.
#[derive(Clone, Debug)]
pub struct TtlPlan {
    /// Every candidate profile compiled at the target scale, in the spec's order.
    pub candidates: Vec<JobModel>,
    /// Every profile at today's volume, when the target is not today's: what alert thresholds are
    /// sized against (a page must stay quiet on a normal run today).
    pub today: Vec<JobModel>,
    /// Half and double the target scale: where runtime growth is measured.
    pub below: f64,
    pub above: f64,
    /// Whether every candidate is simulated below and above (a shard, which cannot know which
    /// profile the whole run will find worst; `merge` keeps what a whole run would have), or
    /// only the worst.
    pub grow_every_candidate: bool,
    /// Replays per run, and per run of a profile that pauses (enough to show a lease's chance
    /// below the risk asked for).
    pub replays: u64,
    pub priced_replays: u64,
    /// The whole-second heartbeat leases a pausing profile's replays are counted against.
    pub leases: RangeInclusive<u64>,
}

impl TtlPlan {
    /// The plan for `profiles` of `spec` (every one when `None`) at `target_scale`. Every model
    /// is compiled here, at the target and at double it, so that bad input fails before a replay.
    pub fn new(
        spec: &WorkloadSpec,
        profile: Option<&str>,
        target_scale: f64,
        replays: u64,
        max_lease_risk: f64,
        sharded: bool,
    ) -> Result<Self, SpecError> {
        let names: Vec<String> = match profile {
            Some(name) => vec![spec.profile(name)?.name.clone()],
            None => spec.profiles.iter().map(|p| p.name.clone()).collect(),
        };
        let [below, _, above] = review_scales(target_scale);
        let candidates = names
            .iter()
            .map(|n| JobModel::new(spec, n, target_scale))
            .collect::<Result<Vec<_>, _>>()?;
        for n in &names {
            JobModel::new(spec, n, above)?;
        }
        let today = if target_scale == 1.0 {
            Vec::new()
        } else {
            names
                .iter()
                .map(|n| JobModel::new(spec, n, 1.0))
                .collect::<Result<Vec<_>, _>>()?
        };
        Ok(TtlPlan {
            candidates,
            today,
            below,
            above,
            grow_every_candidate: sharded,
            replays,
            priced_replays: replays.max(lease_replays(max_lease_risk)),
            leases: candidate_leases(spec, &names, max_lease_risk),
        })
    }

    /// The replays of a candidate and the leases they are counted against.
    pub fn priced(&self, model: &JobModel) -> (u64, Vec<Duration>) {
        if model.has_pauses() {
            (
                self.priced_replays,
                self.leases.clone().map(Duration::from_secs).collect(),
            )
        } else {
            (self.replays, Vec::new())
        }
    }

    /// How many runs of [`TtlPlan::replays`] follow the candidates: two per growing profile, and
    /// each profile at today's volume.
    pub fn growth_simulations(&self) -> usize {
        2 * if self.grow_every_candidate {
            self.candidates.len()
        } else {
            1
        } + self.today.len()
    }

    /// The profiles simulated below and above the target, given the candidates' runs.
    pub fn growing(&self, candidates: &[Simulated]) -> Vec<String> {
        if self.grow_every_candidate {
            self.candidates.iter().map(|m| m.profile.clone()).collect()
        } else {
            vec![candidates[worst(candidates)].row.profile.clone()]
        }
    }

    /// The lease curve of a pausing candidate, from the replays that lost each lease.
    pub fn curve(&self, run: &Simulated, lost: Vec<u64>) -> LeaseCurve {
        LeaseCurve {
            profile: run.row.profile.clone(),
            replays: run.histogram.count(),
            first_lease_s: *self.leases.start(),
            lost,
        }
    }
}

/// The whole-second heartbeat leases `ttl` prices: from the minimum to past where the longest
/// pause a profile draws (beyond its quantile 1 - P/1000, so that a run of up to a hundred pauses
/// is covered) could still take it, and at least the closed form; at most [`MAX_LEASE`] unless the
/// closed form is longer (up to an hour). A pause of length d loses a lease L only if d > 2L/3.
fn candidate_leases(
    spec: &WorkloadSpec,
    profiles: &[String],
    max_risk: f64,
) -> RangeInclusive<u64> {
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

/// The candidate with the worst P99.9 (the last of equals).
fn worst(candidates: &[Simulated]) -> usize {
    (0..candidates.len())
        .max_by_key(|i| candidates[*i].row.runtime.p999)
        .expect("a spec has at least one profile")
}

/// The runs a recommendation is derived from.
#[derive(Clone, Copy, Debug)]
pub struct TtlSimulations<'a> {
    /// Every candidate profile at the target scale (counted above the current TTL).
    pub candidates: &'a [Simulated],
    /// Every other run: profiles at half and double the target (the worst candidate's at least),
    /// and every profile at today's volume when the target is not today's.
    pub growth: &'a [Simulated],
}

/// Each candidate profile's runtimes at today's volume (scale 1), in the candidates' order, from
/// the first run of it at scale 1 among `runs`; a profile without one is left out.
fn today_of(runs: TtlSimulations<'_>) -> Vec<ProfileRuntime> {
    runs.candidates
        .iter()
        .filter_map(|c| {
            let s = runs
                .candidates
                .iter()
                .chain(runs.growth)
                .find(|s| s.row.profile == c.row.profile && s.row.scale == 1.0)?;
            let r = &s.row.runtime;
            Some(ProfileRuntime {
                profile: s.row.profile.clone(),
                volume: s.row.volume,
                replays: s.histogram.count(),
                p50: r.p50,
                p99: r.p99,
                p999: r.p999,
                max: r.max,
            })
        })
        .collect()
}

/// A recommendation and which growth runs it used (indexes into [`TtlSimulations::growth`]): a whole
/// run writes the candidates, then the chosen profile below and above the target.
#[derive(Clone, Debug)]
pub struct Derived {
    pub recommendation: TtlRecommendation,
    pub below: usize,
    pub above: usize,
}

/// The growth runs lack the worst candidate at half or double the target.
#[derive(Debug, thiserror::Error)]
#[error("no run of profile {profile} at scale {scale}")]
pub struct MissingSimulation {
    pub profile: String,
    pub scale: f64,
}

/// The recommendation from simulated runtimes: the worst candidate's P99.9, its growth between
/// half and double the target, and the pausing profiles' lease losses in `curves`.
pub fn derive(
    spec: &WorkloadSpec,
    params: &TtlOptions,
    runs: TtlSimulations<'_>,
    curves: Vec<LeaseCurve>,
) -> Result<Derived, MissingSimulation> {
    let worst = &runs.candidates[worst(runs.candidates)];
    let chosen = &worst.row.profile;
    let [below, _, above] = review_scales(params.target_scale);
    let at = |scale: f64| {
        runs.growth
            .iter()
            .position(|s| &s.row.profile == chosen && s.row.scale == scale)
            .ok_or_else(|| MissingSimulation {
                profile: chosen.clone(),
                scale,
            })
    };
    let (below, above) = (at(below)?, at(above)?);
    let target_row = &worst.row;
    let exceeding = params
        .current_ttl
        .and_then(|ttl| worst.histogram.count_above(ttl));
    let mut volume_points: Vec<VolumePoint> = runs
        .candidates
        .iter()
        .chain([&runs.growth[below], &runs.growth[above]])
        .map(|s| &s.row)
        .filter(|row| &row.profile == chosen)
        .map(|row| VolumePoint {
            scale: row.scale,
            volume: row.volume,
            p999: row.runtime.p999,
        })
        .collect();
    volume_points.sort_by_key(|p| p.volume);
    let mut recommendation = recommend(TtlInputs {
        workload: spec.workload.name.clone(),
        profile: chosen.clone(),
        profiles_considered: runs
            .candidates
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
        replays: worst.histogram.count(),
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
            replays_without_pauses: worst.histogram.count(),
        }),
        current_ttl: params.current_ttl.zip(exceeding),
        runs_per_year: params.runs_per_year,
        engine: params.engine.clone(),
    });
    recommendation.runs_per_year_from = params.runs_per_year_from.clone();
    recommendation.target_from = params.target_from;
    recommendation.today = today_of(runs);
    Ok(Derived {
        recommendation,
        below,
        above,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn billing() -> WorkloadSpec {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../workloads/specs/billing.toml"
        );
        WorkloadSpec::load(std::path::Path::new(path)).unwrap()
    }

    /// A run of `profile` at `scale` whose `n` runtimes are `secs`, 2 x secs, ... (so its P99.9
    /// grows with `secs`).
    fn run(profile: &str, scale: f64, secs: u64) -> Simulated {
        let mut histogram = RuntimeHistogram::with_thresholds(&[Duration::from_secs(120)]);
        for i in 1..=100 {
            histogram.record(Duration::from_secs(secs * i / 10));
        }
        let row = SimulationRow::new(
            "billing",
            profile,
            scale,
            (scale * 1000.0) as u64,
            "customers",
            &histogram,
        );
        Simulated { row, histogram }
    }

    fn params() -> TtlOptions {
        TtlOptions {
            target_scale: 1.0,
            target_from: TargetFrom::Flag,
            safety_factor: 3.0,
            current_ttl: Some(Duration::from_secs(120)),
            runs_per_year: 12.0,
            runs_per_year_from: RunsPerYearFrom::Assumed,
            max_lease_risk: DEFAULT_MAX_LEASE_RISK,
            seed: 7,
            engine: "blocks".into(),
        }
    }

    #[test]
    fn a_whole_run_grows_the_worst_candidate_and_a_shard_every_one() {
        let spec = billing();
        let whole = TtlPlan::new(&spec, None, 1.0, 1000, DEFAULT_MAX_LEASE_RISK, false).unwrap();
        assert_eq!(whole.candidates.len(), spec.profiles.len());
        assert_eq!((whole.below, whole.above), (0.5, 2.0));
        assert_eq!(whole.growth_simulations(), 2);
        let candidates: Vec<Simulated> = whole
            .candidates
            .iter()
            .enumerate()
            .map(|(i, m)| run(&m.profile, 1.0, [10, 30, 20][i % 3]))
            .collect();
        assert_eq!(
            whole.growing(&candidates),
            vec![candidates[1].row.profile.clone()]
        );
        let shard = TtlPlan::new(&spec, None, 1.0, 1000, DEFAULT_MAX_LEASE_RISK, true).unwrap();
        assert_eq!(shard.growth_simulations(), 2 * spec.profiles.len());
        assert_eq!(shard.growing(&candidates).len(), spec.profiles.len());
        let one = TtlPlan::new(
            &spec,
            Some("baseline"),
            1.0,
            1000,
            DEFAULT_MAX_LEASE_RISK,
            false,
        )
        .unwrap();
        assert_eq!(one.candidates.len(), 1);
        assert!(TtlPlan::new(&spec, Some("no-such"), 1.0, 1000, 0.001, false).is_err());
    }

    #[test]
    fn a_pausing_profile_is_priced_with_more_replays_and_every_lease() {
        let spec = billing();
        let plan = TtlPlan::new(&spec, None, 1.0, 1000, DEFAULT_MAX_LEASE_RISK, false).unwrap();
        assert_eq!(*plan.leases.start(), MIN_LEASE.as_secs());
        for model in &plan.candidates {
            let (replays, leases) = plan.priced(model);
            if model.has_pauses() {
                assert_eq!(replays, plan.priced_replays);
                assert_eq!(
                    leases.len() as u64,
                    plan.leases.end() - plan.leases.start() + 1
                );
            } else {
                assert_eq!((replays, leases.len()), (1000, 0));
            }
        }
        assert!(plan.priced_replays >= 1000);
    }

    #[test]
    fn derive_takes_the_worst_candidate_and_its_runs_at_half_and_double() {
        let spec = billing();
        let names: Vec<String> = spec.profiles.iter().map(|p| p.name.clone()).collect();
        let candidates: Vec<Simulated> = names.iter().map(|n| run(n, 1.0, 10)).collect();
        let mut candidates = candidates;
        candidates[0] = run(&names[0], 1.0, 40);
        // Another profile's growth first: derive must find the chosen one's by name.
        let growth = vec![
            run(&names[1], 0.5, 5),
            run(&names[0], 2.0, 80),
            run(&names[0], 0.5, 20),
        ];
        let derived = derive(
            &spec,
            &params(),
            TtlSimulations {
                candidates: &candidates,
                growth: &growth,
            },
            Vec::new(),
        )
        .unwrap();
        let r = &derived.recommendation;
        assert_eq!((derived.below, derived.above), (2, 1));
        assert_eq!(r.profile, names[0]);
        assert_eq!(r.profiles_considered.len(), names.len());
        assert_eq!(r.measured_p999, candidates[0].row.runtime.p999);
        // The worst candidate's runtimes are 4 s, 8 s, ... 400 s: 70 of the 100 exceed 120 s.
        let current = r.current_ttl.as_ref().unwrap();
        assert_eq!(
            (current.ttl, current.replays_exceeding),
            (Duration::from_secs(120), 70)
        );
        assert_eq!(TtlOptions::of(r), params());
    }

    #[test]
    fn derive_names_the_growth_run_it_lacks() {
        let spec = billing();
        let name = spec.profiles[0].name.clone();
        let candidates = vec![run(&name, 1.0, 10)];
        let growth = vec![run(&name, 0.5, 5)];
        let err = derive(
            &spec,
            &params(),
            TtlSimulations {
                candidates: &candidates,
                growth: &growth,
            },
            Vec::new(),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("no run of profile {name} at scale 2")
        );
    }
}
