//! The review trigger: the first volume at which any profile's P99.9 reaches the alert threshold,
//! found by simulating at rising volumes rather than by extending a curve fitted on one profile.
//!
//! A profile's P99.9 need not follow a power law: a billing run whose incident profile is a fixed
//! outage grows slower than its baseline, which grows with every customer. So every profile is
//! searched, the worst at the target first: stepped up with few replays until its P99.9 reaches the
//! threshold, the crossing narrowed by bisection, then settled with runs of the full replay count.
//! A later profile is searched only below the crossing found so far. The search stops at
//! [`CEILING`] times the target: past it the record says no profile crosses where it looked.

use std::time::Duration;

use lockbench_core::records::ttl::{TriggerSearch, TriggerSimulation};
use lockbench_core::{format_count, format_duration_s};

use crate::{ProfileP999, TtlRecommendation};

/// How far above the target the trigger is looked for: ten times the target volume. A job whose
/// volume grows tenfold is a different job; its TTL is re-derived at a new target anyway.
pub const CEILING: f64 = 10.0;
/// Replays of a narrowing run: the fewest that support a P99.9 (see
/// [`lockbench_core::stats::percentile_supported`]).
pub const NARROWING_REPLAYS: u64 = 1_000;
/// The crossing is narrowed until the volumes on either side of it are within 2 % of each other.
pub const RESOLUTION: f64 = 1.02;
/// The first step above the target while bracketing a crossing; each further step squares it.
const FIRST_STEP: f64 = 2.0;
/// Steps of the full-count runs around the narrowed crossing before they give up (each squares
/// the last, so eight steps cover any factor a narrowing run could be off by).
const MAX_STEPS: usize = 8;

/// What the search needs to know before it runs.
#[derive(Clone, Debug)]
pub struct TriggerPlan {
    /// The target scale: every profile's P99.9 there is known, from the full-count candidates.
    pub target_scale: f64,
    /// Its volume.
    pub target_volume: u64,
    /// The alert threshold a profile's P99.9 is held against.
    pub threshold: Duration,
    /// Replays of a full run (the candidates').
    pub replays: u64,
}

impl TriggerPlan {
    /// Replays of a narrowing run: [`NARROWING_REPLAYS`], or fewer if the full count is smaller.
    pub fn narrowing_replays(&self) -> u64 {
        NARROWING_REPLAYS.min(self.replays)
    }

    /// The largest scale searched.
    pub fn ceiling_scale(&self) -> f64 {
        self.target_scale * CEILING
    }
}

/// The trigger found: its volume (`None` when no profile crosses up to the ceiling) and how.
#[derive(Clone, Debug, PartialEq)]
pub struct Trigger {
    pub volume: Option<u64>,
    pub search: TriggerSearch,
}

/// Searches every profile of `at_target` (their P99.9 at the target, full count) for the first
/// volume whose P99.9 reaches the threshold. `simulate(profile, scale, replays)` returns the
/// volume of that scale and its P99.9.
pub fn search_trigger<E>(
    plan: &TriggerPlan,
    at_target: &[ProfileP999],
    simulate: impl FnMut(&str, f64, u64) -> Result<(u64, Duration), E>,
) -> Result<Trigger, E> {
    let mut search = Search {
        plan,
        simulate,
        runs: Vec::new(),
    };
    let ceiling_volume = search.ceiling_volume();
    let mut order: Vec<&ProfileP999> = at_target.iter().collect();
    order.sort_by_key(|p| std::cmp::Reverse(p.p999));
    // The crossing so far: its scale, volume and profile.
    let mut best: Option<(f64, u64, String)> = None;
    if let Some(already) = order.iter().find(|p| p.p999 >= plan.threshold) {
        // With a safety factor below 1.25 the alert fires at the target itself.
        best = Some((
            plan.target_scale,
            plan.target_volume,
            already.profile.clone(),
        ));
    } else {
        for p in order {
            let ceiling = best.as_ref().map_or(plan.ceiling_scale(), |b| b.0);
            if let Some(found) = search.profile(&p.profile, ceiling)? {
                best = Some((found.0, found.1, p.profile.clone()));
            }
        }
    }
    let (ceiling_scale, threshold) = (plan.ceiling_scale(), plan.threshold);
    Ok(Trigger {
        volume: best.as_ref().map(|b| b.1),
        search: TriggerSearch::Simulated {
            profile: best.map(|b| b.2),
            threshold,
            ceiling_scale,
            ceiling_volume,
            narrowing_replays: plan.narrowing_replays(),
            confirming_replays: plan.replays,
            runs: search.runs,
        },
    })
}

struct Search<'a, F> {
    plan: &'a TriggerPlan,
    simulate: F,
    runs: Vec<TriggerSimulation>,
}

impl<E, F: FnMut(&str, f64, u64) -> Result<(u64, Duration), E>> Search<'_, F> {
    /// Whether `profile`'s P99.9 at `scale` over `replays` reaches the threshold; recorded.
    fn crosses(&mut self, profile: &str, scale: f64, replays: u64) -> Result<bool, E> {
        if scale <= self.plan.target_scale {
            // Known from the candidates: no profile crosses at the target when searched.
            return Ok(false);
        }
        let (volume, p999) = (self.simulate)(profile, scale, replays)?;
        self.runs.push(TriggerSimulation {
            profile: profile.to_string(),
            scale,
            volume,
            replays,
            p999,
        });
        Ok(p999 >= self.plan.threshold)
    }

    /// The volume the ceiling scale means, from the ratio of the target's: the search does not
    /// need a run there to name it.
    fn ceiling_volume(&self) -> u64 {
        (self.plan.target_volume as f64 * CEILING).round() as u64
    }

    /// The lowest scale (and its volume) below `ceiling` at which `profile` crosses, narrowed
    /// with few replays and settled with the full count; `None` when it does not cross there.
    fn profile(&mut self, profile: &str, ceiling: f64) -> Result<Option<(f64, u64)>, E> {
        let narrowing = self.plan.narrowing_replays();
        let target = self.plan.target_scale;
        let Some((lo, hi)) = self.bracket(profile, target, FIRST_STEP, ceiling, narrowing)? else {
            return Ok(None);
        };
        let mut hi = self.bisect(profile, lo, hi, narrowing)?;
        if narrowing < self.plan.replays {
            let full = self.plan.replays;
            let settled = if self.crosses(profile, hi, full)? {
                let lo = self.bracket_down(profile, hi, full)?;
                Some((lo, hi))
            } else {
                self.bracket(profile, hi, RESOLUTION, ceiling, full)?
            };
            let Some((lo, above)) = settled else {
                return Ok(None);
            };
            hi = self.bisect(profile, lo, above, full)?;
        }
        let volume = self
            .runs
            .iter()
            .rev()
            .find(|r| r.profile == profile && r.scale == hi)
            .map_or(self.plan.target_volume, |r| r.volume);
        Ok(Some((hi, volume)))
    }

    /// Steps up from `from` (known below the threshold) by `step`, then its square, and so on,
    /// up to `ceiling`; the last scale below and the first at or above, or `None`.
    fn bracket(
        &mut self,
        profile: &str,
        from: f64,
        step: f64,
        ceiling: f64,
        replays: u64,
    ) -> Result<Option<(f64, f64)>, E> {
        let (mut lo, mut step) = (from, step);
        for _ in 0..MAX_STEPS {
            if lo >= ceiling {
                return Ok(None);
            }
            let next = (lo * step).min(ceiling);
            if self.crosses(profile, next, replays)? {
                return Ok(Some((lo, next)));
            }
            lo = next;
            step *= step;
        }
        Ok(None)
    }

    /// Steps down from `from` (at or above the threshold) until a run falls below it or the
    /// target is reached; that scale.
    fn bracket_down(&mut self, profile: &str, from: f64, replays: u64) -> Result<f64, E> {
        let (mut at, mut step) = (from, RESOLUTION);
        for _ in 0..MAX_STEPS {
            let next = (at / step).max(self.plan.target_scale);
            if !self.crosses(profile, next, replays)? {
                return Ok(next);
            }
            at = next;
            step *= step;
        }
        Ok(self.plan.target_scale)
    }

    /// Bisects `(lo, hi)`, below and at or above the threshold, on a log scale until the two are
    /// within [`RESOLUTION`]; the scale at or above.
    fn bisect(&mut self, profile: &str, lo: f64, hi: f64, replays: u64) -> Result<f64, E> {
        let (mut lo, mut hi) = (lo, hi);
        while hi / lo > RESOLUTION {
            let mid = (lo * hi).sqrt();
            if self.crosses(profile, mid, replays)? {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        Ok(hi)
    }
}

/// The review trigger of `r` in words: its value ("44,707 customers", or why there is none) and
/// how it was found, for the CLI and the record alike.
pub fn describe_trigger(r: &TtlRecommendation) -> (String, String) {
    let unit = &r.unit;
    let fmt_volume = |v: u64| format!("{} {unit}", format_count(v));
    match (&r.review_trigger_from, r.review_trigger_volume) {
        (
            TriggerSearch::Simulated {
                profile,
                threshold,
                ceiling_volume,
                narrowing_replays,
                confirming_replays,
                runs,
                ..
            },
            volume,
        ) => {
            let how = format!(
                "every profile simulated at rising volumes, {} runs: narrowed with {} replays each, settled with {}",
                runs.len(),
                format_count(*narrowing_replays),
                format_count(*confirming_replays)
            );
            match (volume, profile) {
                (Some(v), Some(p)) if v <= r.target_volume => (
                    format!("{} (the target)", fmt_volume(v)),
                    format!(
                        "{p}'s P99.9 is past the alert threshold ({}) at the target already: the safety factor leaves no room for growth",
                        format_duration_s(threshold.as_secs_f64())
                    ),
                ),
                (Some(v), Some(p)) => (
                    fmt_volume(v),
                    format!(
                        "the first volume at which a profile's P99.9 reaches the alert threshold ({}): {p}'s, {:.1}x the target; {how}",
                        format_duration_s(threshold.as_secs_f64()),
                        v as f64 / r.target_volume.max(1) as f64
                    ),
                ),
                _ => (
                    format!("none up to {}", fmt_volume(*ceiling_volume)),
                    format!(
                        "no profile's P99.9 reaches the alert threshold ({}) up to {CEILING:.0}x the target, the furthest searched; re-derive the TTL if the volume grows past that; {how}",
                        format_duration_s(threshold.as_secs_f64())
                    ),
                ),
            }
        }
        (TriggerSearch::NotSearched, _) => (
            "not searched".to_string(),
            "a shard of a split run: `lockbench merge` searches the trigger over the merged runs".to_string(),
        ),
        (TriggerSearch::Fit, Some(v)) => (
            fmt_volume(v),
            "extended from a power law fitted on the worst profile at 0.5x, 1x and 2x the target (a record from before the trigger was searched by simulation): re-run ttl".to_string(),
        ),
        (TriggerSearch::Fit, None) => (
            "none".to_string(),
            "the power law fitted on the worst profile does not grow (a record from before the trigger was searched by simulation): re-run ttl".to_string(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A profile's name and its P99.9 seconds as a function of scale.
    type Curve = (&'static str, fn(f64) -> f64);

    /// A model of P99.9 against scale per profile, counting the runs asked of it.
    fn model(curves: Vec<Curve>) -> impl FnMut(&str, f64, u64) -> Result<(u64, Duration), ()> {
        move |profile, scale, _replays| {
            let f = curves.iter().find(|c| c.0 == profile).unwrap().1;
            Ok(((scale * 1000.0) as u64, Duration::from_secs_f64(f(scale))))
        }
    }

    fn plan(threshold_s: f64) -> TriggerPlan {
        TriggerPlan {
            target_scale: 1.0,
            target_volume: 1000,
            threshold: Duration::from_secs_f64(threshold_s),
            replays: 20_000,
        }
    }

    fn at_target(curves: &[Curve]) -> Vec<ProfileP999> {
        curves
            .iter()
            .map(|(name, f)| ProfileP999 {
                profile: name.to_string(),
                p999: Duration::from_secs_f64(f(1.0)),
            })
            .collect()
    }

    #[test]
    fn a_linear_baseline_under_a_flat_worst_profile_sets_the_trigger() {
        // The worst profile is a fixed 500 s outage; the baseline grows with every unit. At the
        // target the worst decides the TTL (3 x 500 s, alert at 1,200 s); the baseline reaches
        // 1,200 s at 12 x the target, past the ceiling, and 900 s at 9 x.
        let curves: Vec<Curve> = vec![("baseline", |s| 100.0 * s), ("outage", |_| 500.0)];
        let found =
            search_trigger(&plan(900.0), &at_target(&curves), model(curves.clone())).unwrap();
        let volume = found.volume.unwrap();
        assert!((volume as f64 / 9000.0 - 1.0).abs() < 0.02, "{volume}");
        let TriggerSearch::Simulated { profile, runs, .. } = &found.search else {
            panic!("{:?}", found.search)
        };
        assert_eq!(profile.as_deref(), Some("baseline"));
        // The flat profile was looked at up to the ceiling, and found not to cross.
        assert!(
            runs.iter()
                .any(|r| r.profile == "outage" && r.scale == 10.0)
        );
        // Narrowed with few replays, then settled with the full count.
        assert!(runs.iter().any(|r| r.replays == NARROWING_REPLAYS));
        assert!(runs.iter().any(|r| r.replays == 20_000));

        let none = search_trigger(&plan(1200.0), &at_target(&curves), model(curves)).unwrap();
        assert_eq!(none.volume, None);
    }

    #[test]
    fn a_later_profile_is_searched_only_below_the_crossing_found() {
        let curves: Vec<Curve> = vec![("steep", |s| 200.0 * s * s), ("slow", |s| 100.0 * s)];
        let found =
            search_trigger(&plan(800.0), &at_target(&curves), model(curves.clone())).unwrap();
        // steep reaches 800 s at 2 x; slow would at 8 x, and is never run above 2 x.
        assert!((found.volume.unwrap() as f64 / 2000.0 - 1.0).abs() < 0.02);
        let TriggerSearch::Simulated { runs, .. } = &found.search else {
            panic!()
        };
        assert!(
            runs.iter()
                .filter(|r| r.profile == "slow")
                .all(|r| r.scale <= 2.0 + 1e-9)
        );
    }

    #[test]
    fn narrowing_simulations_that_read_high_are_corrected_by_full_ones() {
        // Few replays read 10 % high; the full count tells the truth: linear, 100 s per scale.
        let noisy = |_: &str, scale: f64, replays: u64| -> Result<(u64, Duration), ()> {
            let bias = if replays < 20_000 { 1.1 } else { 1.0 };
            Ok((
                (scale * 1000.0) as u64,
                Duration::from_secs_f64(100.0 * scale * bias),
            ))
        };
        let at = vec![ProfileP999 {
            profile: "baseline".into(),
            p999: Duration::from_secs(100),
        }];
        let found = search_trigger(&plan(500.0), &at, noisy).unwrap();
        let volume = found.volume.unwrap() as f64;
        assert!(
            volume >= 5000.0 && volume / 5000.0 < RESOLUTION + 1e-9,
            "{volume}"
        );
        // And reading low: the full runs step up past the narrowed crossing.
        let low = |_: &str, scale: f64, replays: u64| -> Result<(u64, Duration), ()> {
            let bias = if replays < 20_000 { 0.9 } else { 1.0 };
            Ok((
                (scale * 1000.0) as u64,
                Duration::from_secs_f64(100.0 * scale * bias),
            ))
        };
        let volume = search_trigger(&plan(500.0), &at, low)
            .unwrap()
            .volume
            .unwrap() as f64;
        assert!(
            volume >= 5000.0 && volume / 5000.0 < RESOLUTION + 1e-9,
            "{volume}"
        );
    }

    #[test]
    fn a_profile_already_past_the_threshold_triggers_at_the_target() {
        let curves: Vec<Curve> = vec![("baseline", |s| 1000.0 * s)];
        let found = search_trigger(&plan(800.0), &at_target(&curves), model(curves)).unwrap();
        assert_eq!(found.volume, Some(1000));
    }
}
