//! The TTL recommender: measured runtime and safety factor in, TTL, heartbeat, alert and review
//! trigger out.

use std::time::Duration;

use lockbench_core::records::round_micro;
use lockbench_core::records::ttl::TriggerSearch;
use lockbench_core::{
    format_chance, format_count, format_duration, format_duration_s, format_per_year,
};
use statrs::distribution::{Beta, ContinuousCDF};

use crate::growth::fit_growth;
use crate::{CurrentTtlRisk, HeartbeatRecommendation, ProfileP999, TtlRecommendation, VolumePoint};

/// Default safety factor: the seed's guidance is 2-3x the P99.9 at maximum load. We take the top
/// of that range because the measured P99.9 comes from a model whose tail is only as good as its
/// profiles, and an unmodelled incident is exactly what a TTL must survive.
pub const DEFAULT_SAFETY_FACTOR: f64 = 3.0;
/// Alert when a run holds the lock longer than this share of the TTL.
pub const ALERT_SHARE: f64 = 0.8;
/// Shortest heartbeat lease we recommend: the 30 s lease renewed every 10 s that Redisson's lock
/// watchdog uses, a figure operators already know. Shorter leases recover faster after a crash
/// but turn every network hiccup into a lost lock.
pub const MIN_LEASE: Duration = Duration::from_secs(30);

/// What the recommender needs.
#[derive(Clone, Debug)]
pub struct TtlInputs {
    /// Workload name.
    pub workload: String,
    /// Name of the profile the recommendation comes from.
    pub profile: String,
    /// Every profile considered, with its P99.9 at the target scale.
    pub profiles_considered: Vec<ProfileP999>,
    /// Unit of volume ("customers").
    pub unit: String,
    /// Target scale and the volume it means.
    pub target_scale: f64,
    /// Volume at the target scale.
    pub target_volume: u64,
    /// Seed of the simulation.
    pub seed: u64,
    /// Replays at each scale.
    pub replays: u64,
    /// Measured P99.9 at the target scale and its 95 % interval.
    pub measured_p999: Duration,
    /// Its 95 % confidence interval in seconds.
    pub p999_ci_s: [f64; 2],
    /// True when the interval's upper end ran past the largest replay.
    pub p999_ci_open: bool,
    /// Safety factor to apply.
    pub safety_factor: f64,
    /// P99.9 at every simulated volume, the target included, for the growth fit.
    pub volume_points: Vec<VolumePoint>,
    /// The heartbeat, priced by [`crate::price_heartbeat`] (or [`heartbeat`]'s closed form).
    pub heartbeat: HeartbeatRecommendation,
    /// The TTL in use today with the number of replays that exceeded it at the target scale.
    pub current_ttl: Option<(Duration, u64)>,
    /// Job runs per year, to turn a per-run chance into a yearly count.
    pub runs_per_year: f64,
    /// The engine that drew the replays (`Engine::ran`).
    pub engine: String,
}

/// The scales simulated around a target to fit runtime growth: half, the target, double.
pub fn review_scales(target: f64) -> [f64; 3] {
    [target / 2.0, target, target * 2.0]
}

/// Derives the recommendation.
pub fn recommend(inputs: TtlInputs) -> TtlRecommendation {
    let ttl = inputs.measured_p999.mul_f64(inputs.safety_factor);
    let alert_hold = ttl.mul_f64(ALERT_SHARE);
    let points: Vec<(f64, f64)> = inputs
        .volume_points
        .iter()
        .map(|p| (p.volume as f64, p.p999.as_secs_f64()))
        .collect();
    // How runtime grows around the target, described; the review trigger is searched for by
    // simulation ([`crate::search_trigger`]) once the alert threshold is known.
    let growth = fit_growth(&points);
    let current_ttl = inputs.current_ttl.map(|(ttl, exceeding)| {
        let (p, upper) = exceedance(exceeding, inputs.replays);
        let lower = exceedance_lower(exceeding, inputs.replays);
        CurrentTtlRisk {
            ttl,
            replays_exceeding: exceeding,
            p_exceed: p,
            p_exceed_lower95: Some(lower),
            p_exceed_upper95: upper,
            expected_double_runs_per_year_lower95: Some(lower * inputs.runs_per_year),
            expected_double_runs_per_year: p * inputs.runs_per_year,
            expected_double_runs_per_year_upper95: upper * inputs.runs_per_year,
            estimated: None,
            estimated_profile: None,
        }
    });
    TtlRecommendation {
        workload: inputs.workload,
        profile: inputs.profile,
        profiles_considered: inputs.profiles_considered,
        target_scale: inputs.target_scale,
        target_volume: inputs.target_volume,
        target_from: Default::default(),
        today: Vec::new(),
        unit: inputs.unit,
        seed: inputs.seed,
        replays: inputs.replays,
        measured_p999: inputs.measured_p999,
        p999_ci_s: inputs.p999_ci_s,
        p999_ci_open: inputs.p999_ci_open,
        safety_factor: inputs.safety_factor,
        ttl,
        heartbeat: inputs.heartbeat,
        alert_hold,
        review_trigger_volume: None,
        review_trigger_from: TriggerSearch::NotSearched,
        volume_points: inputs.volume_points,
        growth,
        current_ttl,
        runs_per_year: inputs.runs_per_year,
        runs_per_year_from: Default::default(),
        model_check: None,
        engine: inputs.engine,
        tail: None,
        runner: None,
    }
}

/// The heartbeat lease for a process that may stall for `stall` (a stop-the-world pause also
/// stops its renewal thread). Renewing every lease/3 and giving up at 2/3 of the lease, a stall
/// that begins just before a renewal is due must end before the give-up deadline:
/// lease/3 + stall <= 2 lease/3, so lease >= 3 x stall. The last third of the lease is the margin
/// for the renewal round trip and clock drift before the backend frees the lock.
pub fn heartbeat(stall: Option<Duration>) -> HeartbeatRecommendation {
    let needed = stall.map_or(Duration::ZERO, |s| s * 3);
    // Whole seconds: a lease of 31.27 s reads as false precision.
    let lease = needed.max(MIN_LEASE).as_secs_f64().ceil();
    heartbeat_with_lease(Duration::from_secs_f64(lease), stall)
}

/// The renewal figures of a lease of `lease_ttl`, recorded as sized for `stall`; not priced.
pub fn heartbeat_with_lease(
    lease_ttl: Duration,
    stall: Option<Duration>,
) -> HeartbeatRecommendation {
    let renewal_interval = lease_ttl / 3;
    let give_up_after = lease_ttl * 2 / 3;
    let renewals_before_give_up =
        (give_up_after.as_secs_f64() / renewal_interval.as_secs_f64()).floor() as u32;
    HeartbeatRecommendation {
        lease_ttl,
        renewal_interval,
        give_up_after,
        max_consecutive_failures: renewals_before_give_up.saturating_sub(1),
        sized_for_stall_s: stall.map(|s| round_micro(s.as_secs_f64())),
        sized_by_profile: None,
        p_lease_lost: None,
        p_lease_lost_upper95: None,
        pricing: None,
        lengthened_from: None,
    }
}

/// How each heartbeat figure was derived, in words: one text for the terminal and the report.
#[derive(Clone, Debug, PartialEq)]
pub struct HeartbeatDerivation {
    /// Why the lease is as long as it is.
    pub lease: String,
    /// The chance per run of losing it, simulated; `None` when it was not priced.
    pub risk: Option<String>,
    /// What the closed form (3 x pause P99.9) would have given, and its simulated risk; `None`
    /// when it was not priced or no profile pauses.
    pub closed_form: Option<String>,
    /// Why the renewal interval.
    pub renewal: String,
    /// Why the give-up deadline, and the failed renewals it tolerates.
    pub give_up: String,
}

/// The derivation of `h`, as [`heartbeat`] or [`crate::price_heartbeat`] computed it.
pub fn heartbeat_derivation(h: &HeartbeatRecommendation) -> HeartbeatDerivation {
    let stall = h.sized_for_stall_s.map(format_duration_s);
    let pricing = h.pricing.as_ref();
    let by = h.sized_by_profile.as_deref().unwrap_or("the profile");
    let lease = match (pricing, &stall) {
        (Some(_), Some(_)) if h.lengthened_from.is_some() => format!(
            "the {} the replays sized (below {:e} per run), lengthened by half at a time until subset simulation put its chance of being lost to `{by}`'s stalls within the yearly budget",
            format_duration(h.lengthened_from.unwrap_or_default()),
            pricing.map_or(0.0, |p| p.max_lease_risk)
        ),
        (Some(p), Some(_)) if p.risk_met => format!(
            "the shortest whole second whose chance of being lost to a stall stays below {:e} per run (95 % upper bound), sized by `{by}`, the profile whose stalls threaten it most",
            p.max_lease_risk
        ),
        (Some(p), Some(_)) => format!(
            "the longest lease considered: no lease up to it brought the 95 % upper bound on losing it below {:e} per run in {} replays of `{by}`; give more --replays or a larger --max-lease-risk",
            p.max_lease_risk,
            format_count(p.replays)
        ),
        (Some(_), None) => format!(
            "the {} minimum: no profile injects stop-the-world pauses",
            format_duration(MIN_LEASE)
        ),
        (None, Some(stall)) => format!(
            "3 x the profile's pause P99.9 ({stall}), at least {}: a stall must end before the give-up deadline",
            format_duration(MIN_LEASE)
        ),
        (None, None) => format!(
            "the {} minimum: the profile injects no stop-the-world pauses",
            format_duration(MIN_LEASE)
        ),
    };
    let risk = pricing.map(|p| {
        let upper = format_chance(h.p_lease_lost_upper95.unwrap_or(1.0));
        let whose = match &h.sized_by_profile {
            Some(name) => format!("replays of `{name}`"),
            None => "replays, none of which can pause".to_string(),
        };
        let counted = format!(
            "{} of {} {whose}",
            format_count(p.replays_lost),
            format_count(p.replays)
        );
        if let Some(from) = h.lengthened_from {
            format!(
                "estimated by subset simulation at the lengthened lease: {} per run (95 % upper bound {upper}); at the replays' {} it was lost more often than the yearly budget allows",
                format_chance(h.p_lease_lost.unwrap_or(0.0)),
                format_duration(from)
            )
        } else if p.replays_lost == 0 {
            format!(
                "no replay lost it ({counted}); 95 % upper bound {upper}{}: at most {} double executions a year",
                if h.sized_by_profile.is_none() {
                    " by the rule of three"
                } else {
                    ""
                },
                format_per_year(p.expected_double_runs_per_year_upper95)
            )
        } else {
            format!(
                "lost while its holder lives in {} of runs ({counted}; 95 % upper bound {upper}): {} double executions a year expected (upper bound {})",
                format_chance(h.p_lease_lost.unwrap_or(0.0)),
                format_per_year(p.expected_double_runs_per_year),
                format_per_year(p.expected_double_runs_per_year_upper95)
            )
        }
    });
    let closed_form = pricing.zip(stall.as_ref()).map(|(p, stall)| {
        format!(
            "3 x `{by}`'s pause P99.9 ({stall}), at least {}: {}, lost in {} of runs (95 % bound {}); a run pauses more than once, and late in a renewal cycle",
            format_duration(MIN_LEASE),
            format_duration(p.closed_form_lease),
            format_chance(p.closed_form_p_lease_lost),
            format_chance(p.closed_form_p_lease_lost_upper95)
        )
    });
    HeartbeatDerivation {
        lease,
        risk,
        closed_form,
        renewal: "a third of the lease".to_string(),
        give_up: format!(
            "two thirds of the lease: stop work when no renewal succeeded for this long ({} failed renewal{} in a row tolerated)",
            h.max_consecutive_failures,
            if h.max_consecutive_failures == 1 {
                ""
            } else {
                "s"
            }
        ),
    }
}

/// The chance per run of exceeding a limit when `exceeding` of `replays` did, and its one-sided
/// 95 % upper bound: Clopper-Pearson, which for zero exceedances is the exact form of the rule of
/// three (1 - 0.05^(1/n), about 3/n).
/// The one-sided 95 % Clopper-Pearson lower bound of a chance seen `exceeding` times in
/// `replays`: 0 when none exceeded, 0.05^(1/n) when all did.
pub fn exceedance_lower(exceeding: u64, replays: u64) -> f64 {
    if replays == 0 || exceeding == 0 {
        return 0.0;
    }
    let n = replays as f64;
    let k = exceeding.min(replays) as f64;
    if exceeding >= replays {
        return 0.05f64.powf(1.0 / n);
    }
    Beta::new(k, n - k + 1.0)
        .map(|b| b.inverse_cdf(0.05))
        .unwrap_or(0.0)
}

pub fn exceedance(exceeding: u64, replays: u64) -> (f64, f64) {
    if replays == 0 {
        return (0.0, 1.0);
    }
    let n = replays as f64;
    let k = exceeding.min(replays) as f64;
    let p = k / n;
    let upper = if exceeding >= replays {
        1.0
    } else if exceeding == 0 {
        1.0 - 0.05f64.powf(1.0 / n)
    } else {
        Beta::new(k + 1.0, n - k)
            .map(|b| b.inverse_cdf(0.95))
            .unwrap_or(1.0)
    };
    (p, upper)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn inputs(p999_s: f64) -> TtlInputs {
        TtlInputs {
            workload: "billing".into(),
            profile: "month-end-incident".into(),
            profiles_considered: vec![],
            unit: "customers".into(),
            target_scale: 1.0,
            target_volume: 1800,
            seed: 1,
            replays: 20_000,
            measured_p999: Duration::from_secs_f64(p999_s),
            p999_ci_s: [p999_s * 0.98, p999_s * 1.02],
            p999_ci_open: false,
            safety_factor: 3.0,
            volume_points: [900u64, 1800, 3600]
                .iter()
                .map(|v| VolumePoint {
                    scale: *v as f64 / 1800.0,
                    volume: *v,
                    p999: Duration::from_secs_f64(p999_s * *v as f64 / 1800.0),
                })
                .collect(),
            heartbeat: heartbeat(Some(Duration::from_secs(20))),
            current_ttl: Some((Duration::from_secs(300), 20_000)),
            runs_per_year: 12.0,
            engine: "blocks".into(),
        }
    }

    #[test]
    fn billing_incident_figures() {
        let r = recommend(inputs(500.0));
        assert_eq!(r.ttl, Duration::from_secs(1500));
        assert_eq!(r.alert_hold, Duration::from_secs(1200));
        // Linear growth, described; the trigger is left to the search.
        assert!((r.growth.unwrap().exponent - 1.0).abs() < 1e-9);
        assert_eq!(r.review_trigger_volume, None);
        assert_eq!(r.review_trigger_from, TriggerSearch::NotSearched);
        assert_eq!(r.heartbeat.lease_ttl, Duration::from_secs(60));
        assert_eq!(r.heartbeat.renewal_interval, Duration::from_secs(20));
        assert_eq!(r.heartbeat.give_up_after, Duration::from_secs(40));
        assert_eq!(r.heartbeat.max_consecutive_failures, 1);
        let current = r.current_ttl.unwrap();
        assert_eq!(current.p_exceed, 1.0);
        assert_eq!(current.expected_double_runs_per_year, 12.0);
    }

    /// A per-minute job's yearly double executions are 43,800 times a monthly job's for the same
    /// chance per run (525,600 runs a year against 12), each from its spec's schedule.
    #[test]
    fn yearly_figures_follow_the_schedule() {
        let priced = |schedule: &str| {
            let f = lockbench_workloads::Frequency::of_workload(Some(schedule), None).unwrap();
            let mut i = inputs(500.0);
            // One replay in 20,000 outlives today's TTL.
            i.current_ttl = Some((Duration::from_secs(300), 1));
            i.runs_per_year = f.runs_per_year;
            recommend(i).current_ttl.unwrap()
        };
        let (minute, monthly) = (priced("1m"), priced("0 2 1 * *"));
        assert_eq!(minute.p_exceed, monthly.p_exceed);
        let ratio = minute.expected_double_runs_per_year / monthly.expected_double_runs_per_year;
        assert!((ratio - 43_800.0).abs() < 1e-6, "{ratio}");
        let upper = minute.expected_double_runs_per_year_upper95
            / monthly.expected_double_runs_per_year_upper95;
        assert!((upper - 43_800.0).abs() < 1e-6, "{upper}");
    }

    #[test]
    fn the_derivation_names_the_pause_it_was_sized_for() {
        let sized = heartbeat_derivation(&heartbeat(Some(Duration::from_secs(20))));
        assert!(
            sized
                .lease
                .contains("3 x the profile's pause P99.9 (20.0 s)"),
            "{}",
            sized.lease
        );
        assert!(
            sized.give_up.contains("1 failed renewal in a row"),
            "{}",
            sized.give_up
        );
        let floor = heartbeat_derivation(&heartbeat(None));
        assert!(
            floor.lease.contains("no stop-the-world pauses"),
            "{}",
            floor.lease
        );
    }

    #[test]
    fn short_stalls_get_the_minimum_lease() {
        assert_eq!(heartbeat(None).lease_ttl, MIN_LEASE);
        assert_eq!(
            heartbeat(Some(Duration::from_millis(200))).lease_ttl,
            MIN_LEASE
        );
    }

    #[test]
    fn zero_exceedances_use_the_rule_of_three() {
        let (p, upper) = exceedance(0, 20_000);
        assert_eq!(p, 0.0);
        assert!((upper - 3.0 / 20_000.0).abs() / upper < 0.01, "{upper}");
    }

    proptest! {
        #[test]
        fn ttl_is_measured_times_factor(p999 in 1.0f64..100_000.0, factor in 1.0f64..10.0) {
            let mut i = inputs(p999);
            i.safety_factor = factor;
            let r = recommend(i);
            prop_assert!((r.ttl.as_secs_f64() / (p999 * factor) - 1.0).abs() < 1e-6);
            prop_assert!((r.alert_hold.as_secs_f64() / r.ttl.as_secs_f64() - ALERT_SHARE).abs() < 1e-6);
            prop_assert!(r.heartbeat.renewal_interval < r.heartbeat.give_up_after);
            prop_assert!(r.heartbeat.give_up_after < r.heartbeat.lease_ttl);
        }

        #[test]
        fn upper_bound_is_above_the_estimate(k in 0u64..1000, extra in 1u64..100_000) {
            let n = k + extra;
            let (p, upper) = exceedance(k, n);
            prop_assert!(upper >= p);
            prop_assert!(upper <= 1.0);
        }

        #[test]
        fn lower_bound_is_below_the_estimate(k in 0u64..1000, extra in 0u64..100_000) {
            let n = (k + extra).max(1);
            let (p, _) = exceedance(k, n);
            let lower = exceedance_lower(k, n);
            prop_assert!((0.0..=p).contains(&lower), "{lower} above {p}");
        }
    }

    #[test]
    fn every_replay_exceeding_gives_the_lower_bound_that_says_something() {
        // All of n: P(all n | p) = p^n = 0.05 at the bound.
        let lower = exceedance_lower(2_000, 2_000);
        assert!((lower.powi(2_000) - 0.05).abs() < 1e-9, "{lower}");
        assert!(lower > 0.998);
        // Half of 100: the 95 % one-sided Clopper-Pearson bound is about 0.413.
        assert!((exceedance_lower(50, 100) - 0.4135).abs() < 0.002);
    }
}
