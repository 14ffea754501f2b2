//! The tail priced for the job's schedule: the chance per run that a run outlives the TTL in use
//! and the recommended one, and that a stall loses the heartbeat lease, with their double
//! executions a year; and the TTL a yearly budget of double executions needs, beside the P99.9 x
//! factor rule. Plain replays count a chance where they saw at least
//! [`RARE_BELOW_EXCEEDING`] runs over it; below that, subset simulation ([`crate::rare`]) climbs
//! the tail of the same model, one climb for every threshold.

use std::time::Duration;

use lockbench_core::RuntimeHistogram;
use lockbench_core::records::runner::{ImplicitLease, RunnerPricing};
use lockbench_core::records::ttl::{
    BudgetFrom, Chance, ChanceMethod, ProfileTail, RARE_BELOW_EXCEEDING, TailPricing, TailQuantile,
    TtlRule,
};
use lockbench_workloads::{Engine, JobModel, Runner, SpecError, WorkloadSpec};

use crate::TtlRecommendation;
use crate::lease::MAX_LEASE;
use crate::rare::{ModelScore, RareOptions, Score, Tail, tail};
use crate::runner::{RunnerModel, price_runner};
use crate::ttl::{ALERT_SHARE, exceedance, exceedance_lower, heartbeat_with_lease};

/// The double executions a year the owners accept, and where the figure comes from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Budget {
    pub per_year: f64,
    pub from: BudgetFrom,
}

impl Budget {
    /// The budget from `--accepted-double-runs-per-year` (`flag`), else the spec's, else the
    /// default.
    pub fn of(flag: Option<f64>, spec: &WorkloadSpec) -> Budget {
        match (flag, spec.workload.accepted_double_runs_per_year) {
            (Some(flag), _) => Budget {
                per_year: flag,
                from: BudgetFrom::Flag,
            },
            (None, Some(answered)) => Budget {
                per_year: answered,
                from: BudgetFrom::Spec,
            },
            (None, None) => Budget {
                per_year: lockbench_core::records::ttl::DEFAULT_ACCEPTED_PER_YEAR,
                from: BudgetFrom::Default,
            },
        }
    }
}

/// What the pricing takes besides the recommendation.
#[derive(Clone, Copy, Debug)]
pub struct TailInputs<'a> {
    pub spec: &'a WorkloadSpec,
    /// Every candidate profile's replays at the target, by name: counted where they saw enough.
    pub replays: &'a [(&'a str, &'a RuntimeHistogram)],
    pub budget: Budget,
    pub engine: Engine,
    pub options: RareOptions,
}

/// Model runs per level and repetitions `ttl` prices a tail with: enough for an interval well
/// inside a decade at 1e-9 on the shipped specs (about ±60 %), in seconds per profile.
pub const TTL_RARE: RareOptions = RareOptions {
    samples: 500,
    repetitions: 8,
    seed: 0,
    threads: 1,
};

/// The chance per run over `limit` counted over `replays`, when they saw enough runs over it.
fn counted(replays: &RuntimeHistogram, limit: Duration) -> Option<Chance> {
    let over = count_where(replays, |s| s > limit.as_secs_f64());
    (over >= RARE_BELOW_EXCEEDING).then(|| replay_chance(over, replays.count()))
}

/// The replays whose runtime (seconds) `hit` holds for.
fn count_where(replays: &RuntimeHistogram, hit: impl Fn(f64) -> bool) -> u64 {
    replays
        .recorded_s()
        .iter()
        .filter(|(s, _)| hit(*s))
        .map(|(_, c)| *c)
        .sum()
}

/// `k` runs in `n` replays as a chance per run with its Clopper-Pearson interval.
fn replay_chance(k: u64, n: u64) -> Chance {
    let (p, upper) = exceedance(k, n);
    Chance {
        p,
        lower: exceedance_lower(k, n),
        upper,
        method: ChanceMethod::Replays,
        runs: n,
        seconds: 0.0,
    }
}

/// One profile's tail: the runtime at `per_run` and the climb that found it.
struct Climbed<'a> {
    profile: &'a str,
    replays: &'a RuntimeHistogram,
    tail: Tail,
    budget_runtime: TailQuantile,
}

impl Climbed<'_> {
    /// The chance per run over `limit`: counted over the replays where they saw enough.
    fn over(&self, limit: Duration) -> Chance {
        counted(self.replays, limit).unwrap_or_else(|| self.tail.exceedance(limit.as_secs_f64()))
    }
}

/// The chance that decides among profiles: the highest upper end (a bound is all some have).
fn highest<'a>(chances: impl Iterator<Item = (&'a str, Chance)>) -> Option<(&'a str, Chance)> {
    chances.max_by(|a, b| {
        a.1.upper
            .total_cmp(&b.1.upper)
            .then(a.1.p.total_cmp(&b.1.p))
    })
}

/// Prices `r`'s tail for its schedule in every candidate profile and sizes its TTL to the
/// budget: the recommended TTL becomes the longer of the P99.9 rule's and the budget's (the
/// runtime the budget allows in the profile where it is longest, x the factor), its alert
/// threshold following it; the TTL in use gets its chance from the rare-event estimator where
/// its replays saw too few runs over it. `progress` is told each stage.
pub fn price_tail(
    r: &mut TtlRecommendation,
    inputs: &TailInputs<'_>,
    progress: &dyn Fn(&str),
) -> Result<(), SpecError> {
    let per_run_budget = (inputs.budget.per_year / r.runs_per_year.max(1e-9)).min(0.5);
    let p999_ttl = r.measured_p999.mul_f64(r.safety_factor);
    let current = r.current_ttl.as_ref().map(|c| c.ttl);
    // The climb goes past a runner's fixed timeout too, so that one climb prices all of them.
    let fixed = inputs
        .spec
        .runner()
        .and_then(|runner| match runner.lease() {
            ImplicitLease::Fixed { lease } => Some(lease),
            _ => None,
        });
    let past = [current, fixed]
        .into_iter()
        .flatten()
        .fold(p999_ttl, Duration::max)
        .as_secs_f64();
    let mut climbed = Vec::new();
    for (profile, replays) in inputs.replays {
        progress(&format!("the tail of `{profile}`"));
        let model = JobModel::new(inputs.spec, profile, r.target_scale)?;
        let runtime = ModelScore {
            model: &model,
            engine: inputs.engine,
            score: Score::Runtime,
        };
        let tail = tail(&runtime, past, per_run_budget, &inputs.options);
        // The runtime the budget allows: counted where the replays see that far.
        let budget_runtime =
            if per_run_budget * replays.count() as f64 >= RARE_BELOW_EXCEEDING as f64 {
                let s = replays.quantile(1.0 - per_run_budget).as_secs_f64();
                TailQuantile {
                    p: per_run_budget,
                    seconds: s,
                    lower_s: s,
                    upper_s: s,
                    method: ChanceMethod::Replays,
                    runs: replays.count(),
                }
            } else {
                tail.quantile(per_run_budget)
            };
        climbed.push(Climbed {
            profile,
            replays,
            tail,
            budget_runtime,
        });
    }
    let longest = climbed
        .iter()
        .max_by(|a, b| {
            a.budget_runtime
                .seconds
                .total_cmp(&b.budget_runtime.seconds)
        })
        .expect("a spec has at least one profile");
    let (budget_runtime, budget_profile) = (longest.budget_runtime, longest.profile.to_string());
    let budget_ttl = Duration::from_secs_f64(budget_runtime.seconds * r.safety_factor);
    let (ttl, governs) = if budget_ttl > p999_ttl {
        (budget_ttl, TtlRule::YearlyBudget)
    } else {
        (p999_ttl, TtlRule::P999)
    };
    r.ttl = ttl;
    r.alert_hold = ttl.mul_f64(ALERT_SHARE);
    let profiles: Vec<ProfileTail> = climbed
        .iter()
        .map(|c| ProfileTail {
            profile: c.profile.to_string(),
            budget_runtime: c.budget_runtime,
            recommended: c.over(ttl),
            current: current.map(|t| c.over(t)),
        })
        .collect();
    let (recommended_profile, recommended) =
        highest(profiles.iter().map(|p| (p.profile.as_str(), p.recommended)))
            .expect("a spec has at least one profile");
    let recommended_profile = recommended_profile.to_string();
    let worst_current = highest(
        profiles
            .iter()
            .filter_map(|p| Some((p.profile.as_str(), p.current?))),
    );
    if let (Some(c), Some((profile, e))) = (r.current_ttl.as_mut(), worst_current)
        && c.replays_exceeding < RARE_BELOW_EXCEEDING
    {
        c.p_exceed = e.p;
        c.p_exceed_lower95 = Some(e.lower);
        c.p_exceed_upper95 = e.upper;
        c.expected_double_runs_per_year = e.p * r.runs_per_year;
        c.expected_double_runs_per_year_lower95 = Some(e.lower * r.runs_per_year);
        c.expected_double_runs_per_year_upper95 = e.upper * r.runs_per_year;
        c.estimated = Some(e);
        c.estimated_profile = Some(profile.to_string());
    }

    // The heartbeat lease, for the pausing profile that sized it.
    let (lease, lease_profile) = match r.heartbeat.sized_by_profile.clone() {
        Some(profile) => {
            progress(&format!(
                "the heartbeat lease's loss to `{profile}`'s stalls"
            ));
            let pausing = JobModel::new(inputs.spec, &profile, r.target_scale)?;
            let lost_at = |lease: Duration| {
                let margin = ModelScore {
                    model: &pausing,
                    engine: inputs.engine,
                    score: Score::LeaseMargin(lease.as_secs_f64()),
                };
                tail(&margin, 0.0, per_run_budget, &inputs.options).exceedance(0.0)
            };
            // The lease follows the schedule as the TTL does: lengthened by half at a time
            // (whole seconds, up to the longest lease considered) until its chance of being
            // lost, at its upper end, is within the budget's chance per run.
            let sized = r.heartbeat.lease_ttl;
            let mut lease = sized;
            let mut lost = lost_at(lease);
            while lost.upper > per_run_budget && lease < MAX_LEASE {
                lease = Duration::from_secs_f64((lease.as_secs_f64() * 1.5).ceil()).min(MAX_LEASE);
                progress(&format!(
                    "the heartbeat lease lengthened to {}",
                    lockbench_core::format_duration(lease)
                ));
                lost = lost_at(lease);
            }
            if lease != sized {
                let kept = r.heartbeat.clone();
                r.heartbeat = heartbeat_with_lease(
                    lease,
                    kept.sized_for_stall_s.map(Duration::from_secs_f64),
                );
                r.heartbeat.sized_by_profile = kept.sized_by_profile;
                r.heartbeat.pricing = kept.pricing;
                r.heartbeat.p_lease_lost = Some(lost.p);
                r.heartbeat.p_lease_lost_upper95 = Some(lost.upper);
                r.heartbeat.lengthened_from = Some(sized);
            }
            (Some(lost), Some(profile))
        }
        None => (None, None),
    };
    if let (Some(runner), Some(table)) = (inputs.spec.runner(), inputs.spec.runner.as_ref()) {
        let priced = runner_pricing(
            &runner,
            table.setting_defaulted(),
            r,
            inputs,
            &climbed,
            per_run_budget,
            progress,
        )?;
        r.runner = Some(priced);
    }
    r.tail = Some(TailPricing {
        accepted_per_year: inputs.budget.per_year,
        accepted_from: inputs.budget.from,
        per_run_budget,
        budget_runtime,
        budget_profile,
        budget_ttl,
        p999_ttl,
        governs,
        recommended,
        recommended_profile,
        profiles,
        lease,
        lease_profile,
    });
    Ok(())
}

/// The job's runner priced over the same model: a fixed timeout from the climbed tails, a
/// renewed lease from a climb of each stalling profile's margin, a cron slot from the replays'
/// runs shorter than the skew.
fn runner_pricing(
    runner: &Runner,
    defaulted: bool,
    r: &TtlRecommendation,
    inputs: &TailInputs<'_>,
    climbed: &[Climbed<'_>],
    per_run_budget: f64,
    progress: &dyn Fn(&str),
) -> Result<RunnerPricing, SpecError> {
    let named = |found: Option<(&str, Chance)>| {
        let (profile, chance) = found.expect("a spec has at least one profile");
        (profile.to_string(), chance)
    };
    let outlived = |d: Duration| named(highest(climbed.iter().map(|c| (c.profile, c.over(d)))));
    // Only a renewed lease is lost to stalls: the pausing profiles' models are built for it alone.
    let renewed = matches!(runner.lease(), ImplicitLease::Renewed { .. });
    let mut stalling = Vec::new();
    for c in climbed.iter().filter(|_| renewed) {
        if inputs.spec.profile(c.profile)?.pauses.is_some() {
            stalling.push((
                c.profile,
                JobModel::new(inputs.spec, c.profile, r.target_scale)?,
            ));
        }
    }
    let stalled = |lease: Duration, every: Duration| {
        let lost = stalling.iter().map(|(profile, model)| {
            let margin = ModelScore {
                model,
                engine: inputs.engine,
                score: Score::RenewedLeaseMargin {
                    lease: lease.as_secs_f64(),
                    every: every.as_secs_f64(),
                },
            };
            let c = tail(&margin, 0.0, per_run_budget, &inputs.options).exceedance(0.0);
            (*profile, c)
        });
        highest(lost).map(|(p, c)| (p.to_string(), c))
    };
    let ended_before = |d: Duration| {
        named(highest(climbed.iter().map(|c| {
            let shorter = count_where(c.replays, |s| s < d.as_secs_f64());
            (c.profile, replay_chance(shorter, c.replays.count()))
        })))
    };

    let model = RunnerModel {
        outlived: &outlived,
        stalled: &stalled,
        ended_before: &ended_before,
        period: Duration::from_secs_f64(SECONDS_A_YEAR / r.runs_per_year.max(1e-9)),
        ttl: r.ttl,
        per_run_budget,
        progress,
    };
    Ok(price_runner(runner, defaulted, &model))
}

/// Seconds in a (365-day) year, as the schedule's runs a year count them.
const SECONDS_A_YEAR: f64 = 365.0 * 86_400.0;

/// Where the yearly budget comes from, in words.
pub fn budget_from_said(from: BudgetFrom) -> &'static str {
    match from {
        BudgetFrom::Spec => "the spec's accepted_double_runs_per_year",
        BudgetFrom::Flag => "--accepted-double-runs-per-year",
        BudgetFrom::Default => "assumed: nobody said, so one in a century",
    }
}

/// How the recommended TTL was sized: "measured P99.9 x safety factor", or the budget's runtime
/// x the factor, with the P99.9 rule's shorter figure beside it.
pub fn ttl_rule_said(r: &TtlRecommendation) -> String {
    match r.tail.as_ref().map(|t| (t.governs, t)) {
        Some((TtlRule::YearlyBudget, t)) => format!(
            "the runtime outlived {} per run (the yearly budget) x safety factor; longer than P99.9 x safety factor, {}",
            lockbench_core::format_percent(t.per_run_budget),
            lockbench_core::format_long(t.p999_ttl)
        ),
        _ => "measured P99.9 x safety factor".to_string(),
    }
}
