//! The record of `ttl`: the recommendation in `results.json`, the runtime rows it simulated in
//! `summary.csv` and `runtimes.hlog` (see [`super::simulate`]).

use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use super::chance::{Chance, ChanceMethod};
use super::codec::present;
use super::seconds;

/// `results.json` of `ttl`: everything the command reports.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TtlRecommendation {
    /// Workload name.
    pub workload: String,
    /// Profile the recommendation comes from.
    pub profile: String,
    /// Every profile considered with its P99.9.
    pub profiles_considered: Vec<ProfileP999>,
    /// Target scale.
    pub target_scale: f64,
    /// Volume at the target scale.
    pub target_volume: u64,
    /// Where the target comes from. Added without a schema bump: absent means
    /// [`TargetFrom::Flag`], how every record before it got its target (`run` passed one).
    #[serde(default, skip_serializing_if = "TargetFrom::is_flag")]
    pub target_from: TargetFrom,
    /// Every profile at today's volume (scale 1), in the spec's order: what alert thresholds are
    /// sized against, since a page must stay quiet on a normal run today. Added without a schema
    /// bump: absent (empty) in records written before it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub today: Vec<ProfileRuntime>,
    /// Unit of volume.
    pub unit: String,
    /// Seed of the simulation.
    pub seed: u64,
    /// Replays per simulated scale.
    pub replays: u64,
    /// Measured P99.9 at the target scale.
    #[serde(rename = "measured_p999_s", with = "seconds")]
    pub measured_p999: Duration,
    /// Its 95 % confidence interval, seconds.
    pub p999_ci_s: [f64; 2],
    /// True when the interval's upper end ran past the largest sample.
    pub p999_ci_open: bool,
    /// The safety factor, kept apart from the measured value.
    pub safety_factor: f64,
    /// Fixed TTL = measured P99.9 x safety factor.
    #[serde(rename = "ttl_s", with = "seconds")]
    pub ttl: Duration,
    /// The heartbeat alternative.
    pub heartbeat: HeartbeatRecommendation,
    /// Alert when a run holds the lock longer than this.
    #[serde(rename = "alert_hold_s", with = "seconds")]
    pub alert_hold: Duration,
    /// Re-derive the TTL before the volume exceeds this: the first volume at which some profile's
    /// P99.9 reaches the alert threshold; `None` when none does up to the search's ceiling.
    #[serde(deserialize_with = "present")]
    pub review_trigger_volume: Option<u64>,
    /// How the trigger was found. Added without a schema bump: absent means
    /// [`TriggerSearch::Fit`], which is how every record written before the search found it.
    #[serde(default, skip_serializing_if = "TriggerSearch::is_fit")]
    pub review_trigger_from: TriggerSearch,
    /// P99.9 at each simulated volume.
    pub volume_points: Vec<VolumePoint>,
    /// The fitted growth of P99.9 with volume; `None` with fewer than two distinct volumes.
    #[serde(deserialize_with = "present")]
    pub growth: Option<GrowthFit>,
    /// Risk of the TTL in use today; `None` when no current TTL was given.
    #[serde(deserialize_with = "present")]
    pub current_ttl: Option<CurrentTtlRisk>,
    /// Runs per year used for the yearly figures.
    pub runs_per_year: f64,
    /// Where `runs_per_year` comes from. Added without a schema bump: absent means
    /// [`RunsPerYearFrom::Assumed`] (written so, and what a record from before it was), so every
    /// record of schema 4 reads and writes back as it was.
    #[serde(default, skip_serializing_if = "RunsPerYearFrom::assumed")]
    pub runs_per_year_from: RunsPerYearFrom,
    /// The check of the model against observed runs (`--observed`); `None` when none was given.
    #[serde(deserialize_with = "present")]
    pub model_check: Option<super::model::ModelCheck>,
    /// The simulator engine that drew every replay behind it, as `simulate`'s record says it
    /// (`blocks`, `exact`, or `blocks` with the models it left to `exact`). Added without a
    /// schema bump: absent means `exact`, what every record from before it was.
    #[serde(
        default = "super::simulate::exact_engine",
        skip_serializing_if = "super::simulate::is_exact"
    )]
    pub engine: String,
    /// The tail priced per run and per year, and the TTL the yearly budget needs; `None` in a
    /// shard's record (merged ones are priced by `merge`) and in records written before it
    /// (added without a schema bump).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail: Option<TailPricing>,
    /// The job's runner's own timeout, priced as a lease (the spec's `[runner]`); `None` when the
    /// spec names none, in a shard's record, and in records written before it (added without a
    /// schema bump).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner: Option<super::runner::RunnerPricing>,
}

impl TtlRecommendation {
    /// True when enough replays stand behind `measured_p999` for it to be printed as a figure.
    pub fn p999_reliable(&self) -> bool {
        self.replays >= super::tail_samples_needed(0.999)
    }

    /// The P99.9 runtime as a sentence may cite it: "P99.9 runtime 18.2 s", or, from too few
    /// replays, "P99.9 runtime 18.2 s (from only 2,000 replays)".
    pub fn p999_said(&self) -> String {
        let figure = crate::format_readable(self.measured_p999);
        if self.p999_reliable() {
            format!("P99.9 runtime {figure}")
        } else {
            format!(
                "P99.9 runtime {figure} (from only {} replays)",
                crate::format_count(self.replays)
            )
        }
    }
}

/// Where a TTL record's runs per year come from.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum RunsPerYearFrom {
    /// The spec's `schedule` (a period or a cron expression), as written.
    Schedule {
        /// The schedule's text.
        schedule: String,
    },
    /// The spec's `runs_per_year`.
    Spec,
    /// The `--runs-per-year` flag.
    Flag,
    /// Nothing said: a monthly job assumed.
    #[default]
    Assumed,
}

impl RunsPerYearFrom {
    /// True when the figure is an assumption, not the job's own.
    pub fn assumed(&self) -> bool {
        *self == RunsPerYearFrom::Assumed
    }

    /// `runs` with where they come from: "525,600 runs a year (the schedule `1m`)".
    pub fn runs_a_year(&self, runs: f64) -> String {
        format!(
            "{} runs a year ({})",
            crate::format_count(runs.round() as u64),
            self.describe()
        )
    }

    /// Where the figure comes from, as a clause: "the schedule `1m`", "assumed monthly: the spec
    /// gives no schedule".
    pub fn describe(&self) -> String {
        match self {
            RunsPerYearFrom::Schedule { schedule } => format!("the schedule `{schedule}`"),
            RunsPerYearFrom::Spec => "the spec's runs_per_year".to_string(),
            RunsPerYearFrom::Flag => "--runs-per-year".to_string(),
            RunsPerYearFrom::Assumed => "assumed monthly: the spec gives no schedule".to_string(),
        }
    }
}

/// Where a TTL record's target volume comes from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TargetFrom {
    /// The spec's `target_volume`.
    Spec,
    /// The `--target-scale` flag.
    #[default]
    Flag,
    /// Nothing said: today's volume.
    Assumed,
}

impl TargetFrom {
    /// True for a target given by the flag (absent from the record).
    pub fn is_flag(&self) -> bool {
        *self == TargetFrom::Flag
    }

    /// Where the target comes from, as a clause.
    pub fn describe(self) -> &'static str {
        match self {
            TargetFrom::Spec => "the spec's target_volume",
            TargetFrom::Flag => "--target-scale",
            TargetFrom::Assumed => "assumed today's: the spec gives no target_volume",
        }
    }
}

/// One profile's runtimes at one volume.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileRuntime {
    /// Profile name.
    pub profile: String,
    /// Units of volume.
    pub volume: u64,
    /// Replays behind the figures.
    pub replays: u64,
    /// Median runtime.
    #[serde(rename = "p50_s", with = "seconds")]
    pub p50: Duration,
    /// 99th percentile.
    #[serde(rename = "p99_s", with = "seconds")]
    pub p99: Duration,
    /// 99.9th percentile; see [`ProfileRuntime::p999_reliable`].
    #[serde(rename = "p999_s", with = "seconds")]
    pub p999: Duration,
    /// The longest replay.
    #[serde(rename = "max_s", with = "seconds")]
    pub max: Duration,
}

impl ProfileRuntime {
    /// True when enough replays stand behind the P99.9 for it to be printed as a figure.
    pub fn p999_reliable(&self) -> bool {
        self.replays >= super::tail_samples_needed(0.999)
    }

    /// Its tail as the record may cite it: "P99.9 5.92 s", or "slowest 6.6 s" from too few
    /// replays for a P99.9.
    pub fn tail_said(&self) -> String {
        if self.p999_reliable() {
            format!("P99.9 {}", crate::format_readable(self.p999))
        } else {
            format!("slowest {}", crate::format_readable(self.max))
        }
    }
}

/// How a review trigger was found.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum TriggerSearch {
    /// Extended from the power law fitted on the worst profile at half and double the target (the
    /// records written before the search).
    #[default]
    Fit,
    /// Not searched yet: a shard of a split run, whose `merge` searches.
    NotSearched,
    /// Searched by simulation: every profile simulated at rising volumes with few replays until
    /// its P99.9 reached the threshold, the crossing narrowed, then confirmed with full runs.
    Simulated {
        /// The profile whose P99.9 reaches the alert threshold first; `None` when none does up to
        /// the ceiling.
        profile: Option<String>,
        /// The alert threshold the runs were held against.
        #[serde(rename = "threshold_s", with = "seconds")]
        threshold: Duration,
        /// The largest scale and volume searched: the trigger is not looked for beyond them.
        ceiling_scale: f64,
        ceiling_volume: u64,
        /// Replays of a narrowing run and of a confirming run.
        narrowing_replays: u64,
        confirming_replays: u64,
        /// Every run of the search, in the order run.
        runs: Vec<TriggerSimulation>,
    },
}

impl TriggerSearch {
    /// True for a record whose trigger came from the growth fit.
    pub fn is_fit(&self) -> bool {
        *self == TriggerSearch::Fit
    }
}

/// One simulation of the trigger search: a profile at a scale, for some replays.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TriggerSimulation {
    /// Profile simulated.
    pub profile: String,
    /// Volume multiplier and the volume it means.
    pub scale: f64,
    pub volume: u64,
    /// Its replays: a narrowing simulation has few, a confirming one the full count.
    pub replays: u64,
    /// Its P99.9 runtime.
    #[serde(rename = "p999_s", with = "seconds")]
    pub p999: Duration,
}

/// A profile and its P99.9 at the target scale.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileP999 {
    /// Profile name.
    pub profile: String,
    /// Its P99.9.
    #[serde(rename = "p999_s", with = "seconds")]
    pub p999: Duration,
}

/// One simulated volume and its P99.9 runtime.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VolumePoint {
    /// Volume multiplier.
    pub scale: f64,
    /// Units of volume.
    pub volume: u64,
    /// P99.9 runtime at that volume.
    #[serde(rename = "p999_s", with = "seconds")]
    pub p999: Duration,
}

/// The heartbeat alternative to a long fixed TTL.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeartbeatRecommendation {
    /// Lease TTL: how long the lock outlives a crashed holder.
    #[serde(rename = "lease_ttl_s", with = "seconds")]
    pub lease_ttl: Duration,
    /// Renew this often.
    #[serde(rename = "renewal_interval_s", with = "seconds")]
    pub renewal_interval: Duration,
    /// Stop working when no renewal has succeeded for this long.
    #[serde(rename = "give_up_after_s", with = "seconds")]
    pub give_up_after: Duration,
    /// Failed renewals in a row that are tolerated before the give-up deadline.
    pub max_consecutive_failures: u32,
    /// The stall the lease was sized for (pause P99.9); `None` when the profile injects no
    /// pauses.
    #[serde(deserialize_with = "present")]
    pub sized_for_stall_s: Option<f64>,
    /// The profile whose stop-the-world pauses threaten the lease most, and which sized it;
    /// `None` when no profile pauses.
    #[serde(deserialize_with = "present")]
    pub sized_by_profile: Option<String>,
    /// Simulated chance per run that a pause outlasts what was left of the lease while the holder
    /// lives (another worker may then take the lock); `None` where the lease was not simulated (a
    /// live replay's own heartbeat).
    #[serde(deserialize_with = "present")]
    pub p_lease_lost: Option<f64>,
    /// Its one-sided 95 % upper bound (rule of three when no replay lost the lease).
    #[serde(deserialize_with = "present")]
    pub p_lease_lost_upper95: Option<f64>,
    /// How the lease was priced; `None` where it was not simulated.
    #[serde(deserialize_with = "present")]
    pub pricing: Option<LeasePricing>,
    /// The lease the replays sized, when the rare-event estimator found it lost more often than
    /// the yearly budget allows and the lease was lengthened until it was not. Added without a
    /// schema bump: absent in records written before it, and when the replays' lease stood.
    #[serde(
        default,
        rename = "lengthened_from_s",
        with = "super::seconds::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub lengthened_from: Option<Duration>,
}

/// How `ttl` priced the heartbeat lease: the simulated losses behind the figures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LeasePricing {
    /// The chance of losing the lease per run that the lease's upper bound must stay below.
    pub max_lease_risk: f64,
    /// True when the lease's 95 % upper bound is below `max_lease_risk`, or no profile pauses
    /// (the model cannot lose the lease, whatever the rule-of-three bound of its replays).
    pub risk_met: bool,
    /// Replays the lease's figures come from (of the profile that sized it, or of the worst
    /// runtime profile when none pauses).
    pub replays: u64,
    /// Of those, the replays that lost the lease.
    pub replays_lost: u64,
    /// Expected double executions per year from lost leases, assuming another worker waits.
    pub expected_double_runs_per_year: f64,
    /// The same at the upper bound.
    pub expected_double_runs_per_year_upper95: f64,
    /// The closed-form lease: 3 x the sizing profile's pause P99.9, at least the minimum.
    #[serde(rename = "closed_form_lease_s", with = "seconds")]
    pub closed_form_lease: Duration,
    /// The simulated chance per run of losing the closed-form lease.
    pub closed_form_p_lease_lost: f64,
    /// Its 95 % upper bound.
    pub closed_form_p_lease_lost_upper95: f64,
    /// Each pausing profile's losses at every whole-second candidate lease.
    pub curves: Vec<LeaseCurve>,
}

/// One profile's simulated lease losses: `lost[i]` of `replays` replays lost a lease of
/// `first_lease_s + i` seconds. Counts, so that shards add exactly.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LeaseCurve {
    /// Profile name.
    pub profile: String,
    /// Replays simulated.
    pub replays: u64,
    /// The shortest candidate lease, whole seconds.
    pub first_lease_s: u64,
    /// Replays that lost each candidate lease.
    pub lost: Vec<u64>,
}

impl LeaseCurve {
    /// The candidate leases, in seconds.
    pub fn leases_s(&self) -> std::ops::Range<u64> {
        self.first_lease_s..self.first_lease_s + self.lost.len() as u64
    }

    /// Replays that lost a lease of `lease_s` seconds; `None` outside the candidates.
    pub fn lost_at(&self, lease_s: u64) -> Option<u64> {
        let i = usize::try_from(lease_s.checked_sub(self.first_lease_s)?).ok()?;
        self.lost.get(i).copied()
    }
}

/// The risk of the TTL in use today.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CurrentTtlRisk {
    /// The TTL in use.
    #[serde(rename = "ttl_s", with = "seconds")]
    pub ttl: Duration,
    /// Replays that ran longer than it.
    pub replays_exceeding: u64,
    /// Estimated chance per run that the runtime exceeds it.
    pub p_exceed: f64,
    /// One-sided 95 % lower bound of that chance (Clopper-Pearson; 0 when no replay exceeded
    /// it). Added without a schema bump: absent in records written before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p_exceed_lower95: Option<f64>,
    /// One-sided 95 % upper bound of that chance (rule of three when no replay exceeded it).
    pub p_exceed_upper95: f64,
    /// Expected double executions per year, assuming another worker waits for the lock.
    pub expected_double_runs_per_year: f64,
    /// The same at the lower bound (absent before it was added).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_double_runs_per_year_lower95: Option<f64>,
    /// The same at the upper bound.
    pub expected_double_runs_per_year_upper95: f64,
    /// Where plain replays saw too few runs over it to say (fewer than
    /// [`RARE_BELOW_EXCEEDING`]), the rare-event estimate its figures above come from. Added
    /// without a schema bump: absent means the replays' count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimated: Option<Chance>,
    /// The profile that estimate is of: the candidate in which the chance is highest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimated_profile: Option<String>,
}

/// Fewer replays than this over a TTL and the count says too little: the chance is estimated by
/// subset simulation instead.
pub const RARE_BELOW_EXCEEDING: u64 = 10;

/// A runtime far in the tail, exceeded with chance `p` per run, with its 95 % interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TailQuantile {
    /// The chance per run of exceeding it.
    pub p: f64,
    /// The runtime, seconds.
    pub seconds: f64,
    /// Its 95 % interval, seconds.
    pub lower_s: f64,
    pub upper_s: f64,
    /// How it was found.
    pub method: ChanceMethod,
    /// Model runs it cost.
    pub runs: u64,
}

/// Where the accepted double executions a year come from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BudgetFrom {
    /// The spec's `[decision] accepted_double_runs_per_year`.
    Spec,
    /// The `--accepted-double-runs-per-year` flag.
    Flag,
    /// Nothing said: [`DEFAULT_ACCEPTED_PER_YEAR`].
    #[default]
    Default,
}

/// The double executions a year accepted when nobody says: one in a century.
pub const DEFAULT_ACCEPTED_PER_YEAR: f64 = 0.01;

/// Which rule sized the recommended TTL.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TtlRule {
    /// The P99.9 runtime x the safety factor.
    P999,
    /// The runtime the yearly budget allows x the safety factor.
    YearlyBudget,
}

/// The tail priced per run and per year for the profile the TTL is sized for, at the target.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TailPricing {
    /// Double executions a year the owners accept.
    pub accepted_per_year: f64,
    /// Where that figure comes from.
    pub accepted_from: BudgetFrom,
    /// The chance per run it allows at the job's runs per year.
    pub per_run_budget: f64,
    /// The runtime exceeded with that chance, in the profile where it is longest.
    pub budget_runtime: TailQuantile,
    /// That profile.
    pub budget_profile: String,
    /// That runtime x the safety factor.
    #[serde(rename = "budget_ttl_s", with = "seconds")]
    pub budget_ttl: Duration,
    /// The P99.9 runtime x the safety factor.
    #[serde(rename = "p999_ttl_s", with = "seconds")]
    pub p999_ttl: Duration,
    /// The longer of the two, which the recommended TTL is.
    pub governs: TtlRule,
    /// The chance per run that a run outlives the recommended TTL, in the profile where it is
    /// highest.
    pub recommended: Chance,
    /// That profile.
    pub recommended_profile: String,
    /// Every candidate profile's own figures.
    pub profiles: Vec<ProfileTail>,
    /// The chance per run that a stall loses the recommended heartbeat lease, for the profile
    /// that sized it; `None` when no profile pauses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease: Option<Chance>,
    /// The pausing profile the lease was priced for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_profile: Option<String>,
}

/// One profile's tail at the target: the runtime the budget allows, and its chances of
/// outliving the recommended TTL and the TTL in use.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileTail {
    pub profile: String,
    pub budget_runtime: TailQuantile,
    pub recommended: Chance,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current: Option<Chance>,
}

impl CurrentTtlRisk {
    /// Its chance as the replays counted it (with no lower bound, in a record from before they
    /// were kept, taken as 0).
    fn counted(&self, replays: u64) -> Chance {
        Chance {
            p: self.p_exceed,
            lower: self.p_exceed_lower95.unwrap_or(0.0),
            upper: self.p_exceed_upper95,
            method: ChanceMethod::Replays,
            runs: replays,
            seconds: 0.0,
        }
    }

    /// Its double executions a year in few words, as [`Chance::per_year_short`] says them: "at
    /// least 12.00 a year" when every replay outlived it.
    pub fn per_year_short(&self, replays: u64, runs_per_year: f64) -> String {
        if let Some(e) = &self.estimated {
            return e.per_year_short(runs_per_year);
        }
        if self.replays_exceeding > 0 && self.replays_exceeding >= replays {
            return format!(
                "at least {} a year",
                crate::format_per_year(
                    self.expected_double_runs_per_year_lower95
                        .unwrap_or(self.expected_double_runs_per_year)
                )
            );
        }
        if let (None, true) = (self.p_exceed_lower95, self.replays_exceeding > 0) {
            // A record from before lower bounds were kept.
            return format!(
                "{} a year (at most {})",
                crate::format_per_year(self.expected_double_runs_per_year),
                crate::format_per_year(self.expected_double_runs_per_year_upper95)
            );
        }
        self.counted(replays).per_year_short(runs_per_year)
    }

    /// The chance per run in words, with the bound that says something: "all 2,000 replays: at
    /// least 99.85 % per run (95 % lower bound)", "none of 2,000 replays: at most 0.15 % per run
    /// (95 % upper bound)", or the figure with both bounds.
    pub fn chance(&self, replays: u64) -> String {
        let pct = |p: f64| crate::format_percent(p);
        if let Some(e) = &self.estimated {
            return format!(
                "{} of {} replays; {}{}: {}",
                crate::format_count(self.replays_exceeding),
                crate::format_count(replays),
                e.method.said(),
                self.estimated_profile
                    .as_ref()
                    .map(|p| format!(" (highest in `{p}`)"))
                    .unwrap_or_default(),
                e.per_run_said()
            );
        }
        if self.replays_exceeding == 0 {
            format!(
                "none of {} replays: at most {} per run (95 % upper bound)",
                crate::format_count(replays),
                pct(self.p_exceed_upper95)
            )
        } else if self.replays_exceeding >= replays {
            match self.p_exceed_lower95 {
                Some(lower) => format!(
                    "all {} replays: at least {} per run (95 % lower bound)",
                    crate::format_count(replays),
                    pct(lower)
                ),
                None => format!("all {} replays", crate::format_count(replays)),
            }
        } else {
            match self.p_exceed_lower95 {
                Some(lower) => format!(
                    "{} of {} replays: {} per run (95 % interval {} to {})",
                    crate::format_count(self.replays_exceeding),
                    crate::format_count(replays),
                    pct(self.p_exceed),
                    pct(lower),
                    pct(self.p_exceed_upper95)
                ),
                None => format!(
                    "{} of {} replays: {} per run (95 % upper bound {})",
                    crate::format_count(self.replays_exceeding),
                    crate::format_count(replays),
                    pct(self.p_exceed),
                    pct(self.p_exceed_upper95)
                ),
            }
        }
    }
}

impl CurrentTtlRisk {
    /// The double executions a year it means, with the bound that says something, as
    /// [`CurrentTtlRisk::chance`] chooses it.
    pub fn per_year(&self, replays: u64, runs_per_year: f64) -> String {
        if let Some(e) = &self.estimated {
            return e.per_year_said(runs_per_year);
        }
        if self.replays_exceeding > 0 && self.replays_exceeding >= replays {
            return match self.expected_double_runs_per_year_lower95 {
                Some(lower) => format!(
                    "at least {} a year (95 % lower bound)",
                    crate::format_per_year(lower)
                ),
                None => format!(
                    "{} a year",
                    crate::format_per_year(self.expected_double_runs_per_year)
                ),
            };
        }
        if let (None, true) = (self.p_exceed_lower95, self.replays_exceeding > 0) {
            // A record from before lower bounds were kept.
            return format!(
                "{} a year (95 % upper bound {})",
                crate::format_per_year(self.expected_double_runs_per_year),
                crate::format_per_year(self.expected_double_runs_per_year_upper95)
            );
        }
        self.counted(replays).per_year_said(runs_per_year)
    }
}

/// `runtime = coefficient x volume ^ exponent`, fitted by least squares on logarithms.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrowthFit {
    /// Runtime in seconds of one unit of volume (the curve at volume 1).
    pub coefficient_s: f64,
    /// 1.0 means runtime doubles when volume doubles.
    pub exponent: f64,
}

impl GrowthFit {
    /// The fitted runtime in seconds at `volume`.
    pub fn runtime_s_at(&self, volume: f64) -> f64 {
        self.coefficient_s * volume.powf(self.exponent)
    }

    /// The volume at which the fitted runtime reaches `runtime_s`; `None` when runtime does not
    /// grow with volume (exponent below 0.05), so no volume triggers it.
    pub fn volume_reaching(&self, runtime_s: f64) -> Option<f64> {
        if self.exponent < 0.05 || runtime_s <= 0.0 {
            return None;
        }
        Some((runtime_s / self.coefficient_s).powf(1.0 / self.exponent))
    }
}
