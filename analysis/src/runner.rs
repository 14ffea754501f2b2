//! The job's runner priced like a TTL: the chance per run that its own timeout starts a living
//! job a second time (a renewed lease lost to a stall, a fixed lease outlived, a cron slot fired
//! again after a run that ended before the other node's clock reached it), and the setting that
//! keeps that chance within the yearly budget.

use std::time::Duration;

use lockbench_core::format_duration;
use lockbench_core::records::runner::{ImplicitLease, RunnerKind, RunnerPricing, spec_duration};
use lockbench_core::records::ttl::{Chance, ChanceMethod};
use lockbench_workloads::Runner;

/// The longest lease setting considered: past ten minutes a runner's lease keeps a dead worker's
/// job waiting about as long as a fixed timeout would.
pub const MAX_RUNNER_LEASE: Duration = Duration::from_secs(600);

/// How the pricing reaches the model: each answers for the profile where the chance is highest,
/// and names it.
pub struct RunnerModel<'a> {
    /// The chance per run that a run outlives `d`.
    pub outlived: &'a dyn Fn(Duration) -> (String, Chance),
    /// The chance per run that a stall loses a lease of `lease` renewed every `every`; `None`
    /// when no profile stalls.
    pub stalled: &'a dyn Fn(Duration, Duration) -> Option<(String, Chance)>,
    /// The chance per run that a run ends before `d`.
    pub ended_before: &'a dyn Fn(Duration) -> (String, Chance),
    /// The schedule's period: a cron hold must stay shorter.
    pub period: Duration,
    /// The recommended TTL: the runtime the budget allows x the safety factor.
    pub ttl: Duration,
    /// The yearly budget's chance per run.
    pub per_run_budget: f64,
    /// Told each stage.
    pub progress: &'a dyn Fn(&str),
}

/// A chance the model has none of: no profile stalls, or a hold that covers the skew.
fn none_in_model() -> Chance {
    Chance {
        p: 0.0,
        lower: 0.0,
        upper: 0.0,
        method: ChanceMethod::NotInModel,
        runs: 0,
        seconds: 0.0,
    }
}

/// The chance per run that `runner` starts the job twice, and the profile it is highest in.
fn chance_of(runner: &Runner, m: &RunnerModel<'_>) -> Option<(Option<String>, Chance)> {
    match runner.lease() {
        ImplicitLease::Never { .. } => None,
        ImplicitLease::Fixed { lease } => {
            let (profile, c) = (m.outlived)(lease);
            Some((Some(profile), c))
        }
        ImplicitLease::Renewed { lease, every } => Some(match (m.stalled)(lease, every) {
            Some((profile, c)) => (Some(profile), c),
            None => (None, none_in_model()),
        }),
        ImplicitLease::Slot { skew, hold } if hold >= skew => Some((None, none_in_model())),
        ImplicitLease::Slot { skew, .. } => {
            let (profile, c) = (m.ended_before)(skew);
            Some((Some(profile), c))
        }
    }
}

/// Whole seconds, rounded up.
fn whole_seconds(d: Duration) -> Duration {
    Duration::from_secs_f64(d.as_secs_f64().ceil())
}

/// Prices `runner` (its lease setting left at the runner's default when `default`) and
/// recommends the setting that keeps its chance within the budget: a renewed lease lengthened by
/// half at a time, a fixed one set to the recommended TTL, a cron hold twice the skew (within the
/// schedule's period).
pub fn price_runner(runner: &Runner, default: bool, m: &RunnerModel<'_>) -> RunnerPricing {
    let (setting, value) = runner.setting();
    (m.progress)(&format!(
        "{}'s {} ({})",
        runner.kind().name(),
        setting.field(),
        format_duration(value)
    ));
    let now = chance_of(runner, m);
    let within = |c: &Option<(Option<String>, Chance)>| {
        c.as_ref().is_none_or(|(_, c)| c.upper <= m.per_run_budget)
    };
    let mut recommended = value;
    let mut recommended_chance = now.clone();
    let mut unreachable = false;
    if !within(&now) {
        match runner.lease() {
            ImplicitLease::Never { .. } => {}
            ImplicitLease::Fixed { .. } => {
                recommended = whole_seconds(m.ttl).max(value);
                recommended_chance = chance_of(&runner.with_setting(recommended), m);
                while !within(&recommended_chance) && recommended < MAX_RUNNER_LEASE.max(value) {
                    recommended = whole_seconds(recommended.mul_f64(1.5));
                    recommended_chance = chance_of(&runner.with_setting(recommended), m);
                }
                unreachable = !within(&recommended_chance);
            }
            ImplicitLease::Renewed { .. } => {
                while !within(&recommended_chance) && recommended < MAX_RUNNER_LEASE {
                    recommended = whole_seconds(recommended.mul_f64(1.5)).min(MAX_RUNNER_LEASE);
                    (m.progress)(&format!(
                        "{} lengthened to {}",
                        setting.field(),
                        format_duration(recommended)
                    ));
                    recommended_chance = chance_of(&runner.with_setting(recommended), m);
                }
                unreachable = !within(&recommended_chance);
            }
            ImplicitLease::Slot { skew, .. } => {
                // The skew as measured is a snapshot of clocks that drift: twice it, but a hold
                // as long as the period would block the next slot's run.
                let twice = whole_seconds(skew * 2);
                if skew < m.period {
                    recommended = twice.min(skew + (m.period - skew) / 2).max(skew);
                    recommended_chance = chance_of(&runner.with_setting(recommended), m);
                } else {
                    unreachable = true;
                }
            }
        }
    }
    let (profile, chance) = match now {
        Some((profile, c)) => (profile, Some(c)),
        None => (None, None),
    };
    RunnerPricing {
        kind: runner.kind(),
        setting,
        value,
        default,
        lease: runner.lease(),
        chance,
        profile,
        recommended,
        recommended_chance: recommended_chance.map(|(_, c)| c),
        unreachable,
    }
}

/// The runner and its setting: "BullMQ, lockDuration 30 s (its default)".
pub fn setting_said(p: &RunnerPricing) -> String {
    format!(
        "{}, {} {}{}",
        p.kind.name(),
        p.setting.native(),
        format_duration(p.value),
        if p.default { " (its default)" } else { "" }
    )
}

/// What the setting amounts to, in a sentence.
pub fn lease_said(p: &RunnerPricing) -> String {
    let name = p.kind.name();
    match p.lease {
        ImplicitLease::Renewed { lease, every } => format!(
            "a lease of {} renewed every {} while the worker's process runs: a stall (a pause, a blocked event loop) longer than what is left of it lets {name} hand the living job to another worker",
            format_duration(lease),
            format_duration(every)
        ),
        ImplicitLease::Fixed { lease } => format!(
            "a lease of {} from the job's start, never renewed: {name} starts a run longer than it again while the first still runs",
            format_duration(lease)
        ),
        ImplicitLease::Slot { skew, hold } => format!(
            "the same slot fired again by a node whose clock is up to {} behind, the slot's lock held {} from the run's start: a run that ends before the other node fires runs twice, one after the other, with no overlap for a lock or an overlap counter to see",
            format_duration(skew),
            if hold.is_zero() {
                "only while it runs".to_string()
            } else {
                format!("at least {}", format_duration(hold))
            }
        ),
        ImplicitLease::Never { why } => why.said().to_string(),
    }
}

/// Whether the job's own lock protects against it.
pub fn lock_said(kind: RunnerKind) -> String {
    match kind {
        RunnerKind::Cron => "a lock released when the run ends does not: the second node takes it after the first released it. A hold of at least the skew (lockAtLeastFor), the database's clock for the slot, or a completion record per slot does".to_string(),
        _ => format!(
            "a lock taken inside the task does not stop {} from starting the job again: it makes the second start wait or skip while the first holds it, and only while the lock outlives the first run (a heartbeat lost to the same stall, or a TTL shorter than the runner's timeout, lets both run)",
            kind.name()
        ),
    }
}

/// The change in few words, for the record's actions table: "set Celery's visibility_timeout to
/// 2853s (now 600.0 s; started twice 12.00 a year (12.00 to 12.00))".
pub fn action_said(p: &RunnerPricing, runs_per_year: f64) -> String {
    let whose = match p.kind {
        RunnerKind::Cron => "the cron slot's".to_string(),
        kind => format!("{}'s", kind.name()),
    };
    let now = p
        .chance
        .map(|c| format!("; started twice {}", c.per_year_short(runs_per_year)))
        .unwrap_or_default();
    if p.unreachable {
        return format!(
            "{whose} {}: {}",
            p.setting.field(),
            advice_said(p, runs_per_year)
        );
    }
    format!(
        "set {whose} {} to {} (now {}{now})",
        p.setting.field(),
        spec_duration(p.recommended),
        format_duration(p.value)
    )
}

/// What to set, and why.
pub fn advice_said(p: &RunnerPricing, runs_per_year: f64) -> String {
    let field = p.setting.field();
    let Some(now) = p.chance else {
        return format!("nothing to set: {}", lease_said(p));
    };
    if p.recommended == p.value && !p.unreachable {
        return format!(
            "keep it: {} {} keeps the chance within the yearly budget",
            field,
            format_duration(p.value)
        );
    }
    if p.unreachable {
        return match p.lease {
            ImplicitLease::Slot { skew, .. } => format!(
                "no hold shorter than the schedule's period covers a skew of {}: decide the slot on the database's clock (slot_clock = \"database\") or write a completion record per slot",
                format_duration(skew)
            ),
            _ => format!(
                "no {field} up to {} keeps the chance within the budget ({} at {}): shorten the job or its stalls",
                format_duration(MAX_RUNNER_LEASE),
                now.per_run_said(),
                format_duration(p.recommended)
            ),
        };
    }
    let why = match p.lease {
        ImplicitLease::Fixed { .. } => {
            "the recommended TTL: the runtime the yearly budget allows x the safety factor"
        }
        ImplicitLease::Renewed { .. } => {
            "lengthened by half at a time until stalls lose it within the yearly budget; a dead worker's job waits that long before another takes it"
        }
        ImplicitLease::Slot { .. } => {
            "twice the skew (clocks drift from the figure measured), shorter than the schedule's period"
        }
        ImplicitLease::Never { .. } => "",
    };
    let then = p
        .recommended_chance
        .map(|c| {
            format!(
                ": {}, {}",
                c.per_run_said(),
                c.per_year_short(runs_per_year)
            )
        })
        .unwrap_or_default();
    format!(
        "set {field} = \"{}\" ({}), {why}{then}",
        spec_duration(p.recommended),
        p.setting.native_value(p.recommended)
    )
}

#[cfg(test)]
mod tests {
    use lockbench_workloads::SlotClock;

    use super::*;

    fn counted(p: f64) -> Chance {
        Chance {
            p,
            lower: p * 0.8,
            upper: p * 1.2,
            method: ChanceMethod::Replays,
            runs: 10_000,
            seconds: 0.0,
        }
    }

    /// A model whose runs take 40 s give or take, with stalls whose chance falls tenfold with
    /// every 10 s of lease.
    fn model<'a>(
        outlived: &'a dyn Fn(Duration) -> (String, Chance),
        stalled: &'a dyn Fn(Duration, Duration) -> Option<(String, Chance)>,
        ended_before: &'a dyn Fn(Duration) -> (String, Chance),
    ) -> RunnerModel<'a> {
        RunnerModel {
            outlived,
            stalled,
            ended_before,
            period: Duration::from_secs(60),
            ttl: Duration::from_millis(90_500),
            per_run_budget: 1e-6,
            progress: &|_| {},
        }
    }

    #[test]
    fn a_fixed_lease_shorter_than_the_job_is_set_to_the_recommended_ttl() {
        let outlived = |d: Duration| {
            let p = if d.as_secs() < 60 { 0.5 } else { 1e-8 };
            ("slow".to_string(), counted(p))
        };
        let stalled = |_: Duration, _: Duration| None;
        let ended = |_: Duration| ("fast".to_string(), counted(0.0));
        let m = model(&outlived, &stalled, &ended);
        let celery = Runner::Celery {
            visibility_timeout: Duration::from_secs(30),
            acks_late: true,
        };
        let priced = price_runner(&celery, false, &m);
        assert_eq!(priced.chance.unwrap().p, 0.5);
        assert_eq!(priced.profile.as_deref(), Some("slow"));
        assert_eq!(priced.recommended, Duration::from_secs(91));
        assert!(priced.recommended_chance.unwrap().upper <= 1e-6);
        // Acknowledged on receipt: nothing to price.
        let early = Runner::Celery {
            visibility_timeout: Duration::from_secs(30),
            acks_late: false,
        };
        let priced = price_runner(&early, true, &m);
        assert_eq!(
            (priced.chance, priced.recommended),
            (None, Duration::from_secs(30))
        );
    }

    #[test]
    fn a_renewed_lease_is_lengthened_until_stalls_lose_it_within_the_budget() {
        let outlived = |_: Duration| ("slow".to_string(), counted(0.0));
        let asked = std::cell::RefCell::new(Vec::new());
        let stalled = |lease: Duration, every: Duration| {
            asked.borrow_mut().push((lease, every));
            let p = 10f64.powf(-(lease.as_secs_f64() / 10.0));
            Some(("gc".to_string(), counted(p)))
        };
        let ended = |_: Duration| ("fast".to_string(), counted(0.0));
        let m = model(&outlived, &stalled, &ended);
        let bull = Runner::Bullmq {
            lock_duration: Duration::from_secs(30),
            stalled_interval: Duration::from_secs(30),
            max_stalled_count: 1,
        };
        let priced = price_runner(&bull, true, &m);
        // 30 s: 1e-3; 45: 3e-5; 68: 1.6e-7 x 1.2 within 1e-6.
        assert_eq!(priced.recommended, Duration::from_secs(68));
        assert_eq!(
            asked.borrow()[0],
            (Duration::from_secs(30), Duration::from_secs(15))
        );
        assert!(!priced.unreachable);
    }

    #[test]
    fn a_cron_slot_is_held_twice_the_skew_within_the_period() {
        let outlived = |_: Duration| ("slow".to_string(), counted(0.0));
        let stalled = |_: Duration, _: Duration| None;
        let ended = |d: Duration| {
            let p = if d.as_secs() >= 20 { 0.99 } else { 0.1 };
            ("fast".to_string(), counted(p))
        };
        let m = model(&outlived, &stalled, &ended);
        let cron = |skew: u64| Runner::Cron {
            clock_skew: Duration::from_secs(skew),
            hold: Duration::ZERO,
            slot_clock: SlotClock::Node,
            completion_record: false,
        };
        let priced = price_runner(&cron(20), true, &m);
        assert_eq!(priced.chance.unwrap().p, 0.99);
        assert_eq!(priced.recommended, Duration::from_secs(40));
        assert_eq!(priced.recommended_chance.unwrap().p, 0.0);
        // Twice 40 s would block the next minute's slot: halfway to it.
        let priced = price_runner(&cron(40), true, &m);
        assert_eq!(priced.recommended, Duration::from_secs(50));
        let priced = price_runner(&cron(90), true, &m);
        assert!(priced.unreachable);
    }
}
