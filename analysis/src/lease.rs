//! The heartbeat lease, priced: from each pausing profile's simulated lease losses, the shortest
//! whole-second lease whose chance of being lost while its holder lives is below a bound, and the
//! profile whose stalls made it that long.

use std::time::Duration;

use lockbench_core::records::ttl::{LeaseCurve, LeasePricing};

use crate::HeartbeatRecommendation;
use crate::ttl::{exceedance, heartbeat, heartbeat_with_lease};

/// Default bound on the chance per run of losing the heartbeat lease to a stall (95 % upper
/// bound): one run in ten thousand, a billing job run monthly for 800 years.
pub const DEFAULT_MAX_LEASE_RISK: f64 = 1e-4;
/// Longest lease `ttl` considers: a heartbeat lease longer than ten minutes keeps a crashed
/// holder's lock about as long as a fixed TTL would, and is no longer worth its renewals.
pub const MAX_LEASE: Duration = Duration::from_secs(600);

/// Replays a pausing profile needs so that a lease no replay lost has a 95 % upper bound of half
/// `max_risk` (the rule of three: about 6 / `max_risk`, rounded up to a thousand), and a lease
/// that lost a few can still be shown below it.
pub fn lease_replays(max_risk: f64) -> u64 {
    let half = (max_risk / 2.0).clamp(1e-12, 0.5);
    let needed = (0.05f64.ln() / (1.0 - half).ln()).ceil() as u64;
    needed.div_ceil(1000) * 1000
}

/// What pricing the lease needs.
#[derive(Clone, Debug)]
pub struct LeaseInputs {
    /// Each pausing profile's losses at the candidate leases (none when no profile pauses).
    pub curves: Vec<LeaseCurve>,
    /// Each pausing profile's pause P99.9, by name, for the closed form.
    pub pause_p999: Vec<(String, Duration)>,
    /// The bound the lease's upper bound must stay below.
    pub max_lease_risk: f64,
    /// Job runs per year.
    pub runs_per_year: f64,
    /// Replays of the worst runtime profile: the rule-of-three bound when no profile pauses.
    pub replays_without_pauses: u64,
}

/// The shortest candidate lease from which on every longer candidate's 95 % upper bound is below
/// `max_risk`, or `None` when even the longest is not. A longer lease is not always lost less
/// often (a stall's phase in the renewal cycle moves with the lease), so a lease counts only when
/// no longer one fails the bound.
pub fn shortest_safe_lease(curve: &LeaseCurve, max_risk: f64) -> Option<u64> {
    let mut shortest = None;
    for (i, lost) in curve.lost.iter().enumerate().rev() {
        if exceedance(*lost, curve.replays).1 < max_risk {
            shortest = Some(curve.first_lease_s + i as u64);
        } else {
            break;
        }
    }
    shortest
}

/// The heartbeat from the profiles' simulated losses: the lease is the longest of the profiles'
/// shortest safe leases (the longest candidate when one profile has none), sized by that
/// profile; renewal and give-up follow from it as in [`heartbeat`].
pub fn price_heartbeat(inputs: &LeaseInputs) -> HeartbeatRecommendation {
    let sizing = inputs
        .curves
        .iter()
        .map(|c| {
            let safe = shortest_safe_lease(c, inputs.max_lease_risk);
            let last = c.first_lease_s + c.lost.len().saturating_sub(1) as u64;
            (c, safe, safe.unwrap_or(last))
        })
        .max_by_key(|(c, safe, lease)| (safe.is_none(), *lease, c.lost_at(*lease)));
    let Some((curve, safe, lease_s)) = sizing else {
        let n = inputs.replays_without_pauses;
        let (p, upper) = exceedance(0, n);
        let mut h = heartbeat(None);
        h.p_lease_lost = Some(p);
        h.p_lease_lost_upper95 = Some(upper);
        h.pricing = Some(LeasePricing {
            max_lease_risk: inputs.max_lease_risk,
            // No pause, no lost lease: the model cannot lose it, whatever the replays' bound.
            risk_met: true,
            replays: n,
            replays_lost: 0,
            expected_double_runs_per_year: 0.0,
            expected_double_runs_per_year_upper95: upper * inputs.runs_per_year,
            closed_form_lease: h.lease_ttl,
            closed_form_p_lease_lost: p,
            closed_form_p_lease_lost_upper95: upper,
            curves: Vec::new(),
        });
        return h;
    };
    let stall = inputs
        .pause_p999
        .iter()
        .find(|(name, _)| *name == curve.profile)
        .map(|(_, d)| *d);
    let closed_form = heartbeat(stall).lease_ttl;
    let at = |lease_s: u64| {
        // A lease past the candidates (a closed form over an hour) takes the longest candidate's
        // count: a longer lease is lost no more often, up to the phase of a stall.
        let lost = curve
            .lost_at(lease_s)
            .unwrap_or_else(|| curve.lost.last().copied().unwrap_or(0));
        (lost, exceedance(lost, curve.replays))
    };
    let (lost, (p, upper)) = at(lease_s);
    let (_, (closed_p, closed_upper)) = at(closed_form.as_secs());
    let mut h = heartbeat_with_lease(Duration::from_secs(lease_s), stall);
    h.sized_by_profile = Some(curve.profile.clone());
    h.p_lease_lost = Some(p);
    h.p_lease_lost_upper95 = Some(upper);
    h.pricing = Some(LeasePricing {
        max_lease_risk: inputs.max_lease_risk,
        risk_met: safe.is_some(),
        replays: curve.replays,
        replays_lost: lost,
        expected_double_runs_per_year: p * inputs.runs_per_year,
        expected_double_runs_per_year_upper95: upper * inputs.runs_per_year,
        closed_form_lease: closed_form,
        closed_form_p_lease_lost: closed_p,
        closed_form_p_lease_lost_upper95: closed_upper,
        curves: inputs.curves.clone(),
    });
    h
}

/// Adds `other`'s counts to `total`, curve by curve (the shards of one run simulated the same
/// profiles at the same candidate leases). Returns false when the curves do not line up.
pub fn add_curves(total: &mut [LeaseCurve], other: &[LeaseCurve]) -> bool {
    if total.len() != other.len() {
        return false;
    }
    for (t, o) in total.iter_mut().zip(other) {
        if t.profile != o.profile
            || t.first_lease_s != o.first_lease_s
            || t.lost.len() != o.lost.len()
        {
            return false;
        }
        t.replays += o.replays;
        t.lost.iter_mut().zip(&o.lost).for_each(|(a, b)| *a += b);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn curve(profile: &str, replays: u64, first: u64, lost: &[u64]) -> LeaseCurve {
        LeaseCurve {
            profile: profile.into(),
            replays,
            first_lease_s: first,
            lost: lost.to_vec(),
        }
    }

    fn inputs(curves: Vec<LeaseCurve>) -> LeaseInputs {
        LeaseInputs {
            pause_p999: curves
                .iter()
                .map(|c| (c.profile.clone(), Duration::from_secs(11)))
                .collect(),
            curves,
            max_lease_risk: 1e-4,
            runs_per_year: 12.0,
            replays_without_pauses: 20_000,
        }
    }

    #[test]
    fn enough_replays_for_the_rule_of_three() {
        let n = lease_replays(1e-4);
        assert_eq!(n, 60_000);
        assert!(exceedance(0, n).1 <= 0.5e-4 * 1.001);
    }

    #[test]
    fn the_lease_is_the_shortest_from_which_on_every_bound_holds() {
        // 30..=36 s: 36 s and 35 s lost none, 34 s lost 3 of 60,000 (bound about 1.3e-4).
        let c = curve("gc", 60_000, 30, &[900, 400, 100, 20, 3, 0, 0]);
        assert_eq!(shortest_safe_lease(&c, 1e-4), Some(35));
        // a longer lease that fails the bound disqualifies the shorter ones below it
        let bumpy = curve("gc", 60_000, 30, &[0, 0, 9, 0, 0]);
        assert_eq!(shortest_safe_lease(&bumpy, 1e-4), Some(33));
        let never = curve("gc", 60_000, 30, &[10, 10]);
        assert_eq!(shortest_safe_lease(&never, 1e-4), None);
    }

    #[test]
    fn the_profile_needing_the_longest_lease_sizes_it() {
        let h = price_heartbeat(&inputs(vec![
            curve("mild", 60_000, 30, &[0, 0, 0, 0, 0, 0, 0]),
            curve("gc", 60_000, 30, &[900, 400, 100, 20, 3, 0, 0]),
        ]));
        assert_eq!(h.lease_ttl, Duration::from_secs(35));
        assert_eq!(h.sized_by_profile.as_deref(), Some("gc"));
        assert_eq!(h.p_lease_lost, Some(0.0));
        let pricing = h.pricing.unwrap();
        assert!(pricing.risk_met);
        // 3 x 11 s = 33 s lost 20 of 60,000 runs
        assert_eq!(pricing.closed_form_lease, Duration::from_secs(33));
        assert!((pricing.closed_form_p_lease_lost - 20.0 / 60_000.0).abs() < 1e-12);
    }

    #[test]
    fn an_unmet_bound_takes_the_longest_candidate_and_says_so() {
        let h = price_heartbeat(&inputs(vec![curve("gc", 1_000, 30, &[50, 20, 1])]));
        assert_eq!(h.lease_ttl, Duration::from_secs(32));
        let pricing = h.pricing.unwrap();
        assert!(!pricing.risk_met);
        assert_eq!(pricing.replays_lost, 1);
        assert!((h.p_lease_lost.unwrap() - 0.001).abs() < 1e-12);
    }

    #[test]
    fn no_pauses_is_zero_with_the_rule_of_three() {
        let h = price_heartbeat(&inputs(Vec::new()));
        assert_eq!(h.lease_ttl, crate::MIN_LEASE);
        assert_eq!(h.sized_by_profile, None);
        assert_eq!(h.p_lease_lost, Some(0.0));
        let upper = h.p_lease_lost_upper95.unwrap();
        assert!((upper - 3.0 / 20_000.0).abs() / upper < 0.01, "{upper}");
        assert!(h.pricing.unwrap().risk_met, "the model cannot lose it");
    }

    #[test]
    fn curves_add_exactly_or_refuse() {
        let mut total = vec![curve("gc", 10, 30, &[3, 1])];
        assert!(add_curves(&mut total, &[curve("gc", 12, 30, &[2, 0])]));
        assert_eq!(total[0].replays, 22);
        assert_eq!(total[0].lost, vec![5, 1]);
        assert!(!add_curves(&mut total, &[curve("gc", 12, 31, &[2, 0])]));
        assert!(!add_curves(&mut total, &[curve("other", 12, 30, &[2, 0])]));
    }
}
