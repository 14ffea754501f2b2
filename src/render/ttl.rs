//! `ttl`'s recommendation as people read it.

use std::fmt::Write as _;

use lockbench_analysis::{
    ALERT_SHARE, TtlRecommendation, budget_from_said, describe_trigger, heartbeat_derivation,
    runner, ttl_rule_said,
};
use lockbench_core::records::runner::RunnerPricing;
use lockbench_core::records::tail_samples_needed;
use lockbench_core::records::ttl::{TailPricing, TtlRule};
use lockbench_core::{
    format_chance, format_count, format_duration, format_long, format_per_year, format_percent,
    format_readable, format_seconds,
};

use super::table::seconds;

/// The `ttl` recommendation, each figure with how it was derived.
pub fn ttl_report(r: &TtlRecommendation) -> String {
    let mut o = String::new();
    let unit = &r.unit;
    if let Some(check) = r.model_check.as_ref().filter(|c| !c.consistent) {
        let _ = writeln!(o, "WARNING: {}", rejected_model(check));
    }
    let _ = writeln!(
        o,
        "TTL for {} at scale {} ({} {unit}: {}), profile {}",
        r.workload,
        r.target_scale,
        format_count(r.target_volume),
        r.target_from.describe(),
        r.profile
    );
    if let Some(check) = r.model_check.as_ref().filter(|c| c.consistent) {
        let _ = writeln!(
            o,
            "  model checked against {} past runs in {}: {}",
            format_count(check.runs),
            check.observed,
            check.verdict
        );
    }
    if r.profiles_considered.len() > 1 {
        let list: Vec<String> = r
            .profiles_considered
            .iter()
            .map(|p| format!("{} {}", p.profile, format_readable(p.p999)))
            .collect();
        let _ = writeln!(o, "  chosen as the highest P99.9 of: {}", list.join(", "));
    }
    let _ = writeln!(
        o,
        "  seed {}, {} replays per scale",
        r.seed,
        format_count(r.replays)
    );
    for t in &r.today {
        let _ = writeln!(
            o,
            "  today, {} {unit}: {} P50 {}, P99 {}, {}{}",
            format_count(t.volume),
            t.profile,
            format_readable(t.p50),
            format_readable(t.p99),
            t.tail_said(),
            if t.p999_reliable() {
                String::new()
            } else {
                format!(
                    " of {} replays (too few for a P99.9)",
                    format_count(t.replays)
                )
            }
        );
    }
    o.push('\n');

    let ci = format!(
        "95% CI {} - {}{}",
        format_seconds(seconds(r.p999_ci_s[0])),
        format_seconds(seconds(r.p999_ci_s[1])),
        if r.p999_ci_open {
            " (upper end unbounded)"
        } else {
            ""
        }
    );
    let _ = writeln!(
        o,
        "  measured P99.9 runtime   {}   ({ci})",
        format_long(r.measured_p999)
    );
    let _ = writeln!(o, "  safety factor            {}", r.safety_factor);
    let _ = writeln!(
        o,
        "  fixed TTL                {}   = {}",
        format_long(r.ttl),
        ttl_rule_said(r)
    );
    if r.replays < tail_samples_needed(0.999) {
        let _ = writeln!(
            o,
            "  warning: {} replays are too few for P99.9; use --replays {} or more",
            format_count(r.replays),
            tail_samples_needed(0.999)
        );
    }

    let hb = &r.heartbeat;
    let _ = writeln!(
        o,
        "\n  heartbeat alternative (for jobs whose runtime has no safe bound)"
    );
    let derivation = heartbeat_derivation(hb);
    let _ = writeln!(
        o,
        "    lease TTL              {}   = {}",
        format_duration(hb.lease_ttl),
        derivation.lease
    );
    // A priced lease (the only kind with a risk line) always has its chance.
    if let (Some(risk), Some(p)) = (&derivation.risk, hb.p_lease_lost) {
        let _ = writeln!(
            o,
            "    lease risk per run     {}   {risk}",
            format_chance(p)
        );
    }
    if let Some(closed) = &derivation.closed_form {
        let _ = writeln!(o, "    closed form            {closed}");
    }
    let _ = writeln!(
        o,
        "    renewal interval       {}   = {}",
        format_duration(hb.renewal_interval),
        derivation.renewal
    );
    let _ = writeln!(
        o,
        "    give up after          {}   = {}",
        format_duration(hb.give_up_after),
        derivation.give_up
    );
    let _ = writeln!(
        o,
        "    a crashed holder frees the lock within {}; the last third of the lease covers the renewal round trip and clock drift",
        format_duration(hb.lease_ttl)
    );

    let _ = writeln!(
        o,
        "\n  alert threshold          {}   = {:.0} % of the TTL: a run holding the lock longer is investigated",
        format_long(r.alert_hold),
        ALERT_SHARE * 100.0
    );
    let (mut trigger, how) = describe_trigger(r);
    if r.review_trigger_volume.is_some_and(|v| v > r.target_volume) {
        trigger = format!("re-derive before volume exceeds {trigger}");
    }
    let _ = writeln!(
        o,
        "  review trigger           {trigger}\n                           {how}"
    );
    if let Some(c) = &r.current_ttl {
        let _ = writeln!(o, "\n  current TTL {}", format_duration(c.ttl));
        let _ = writeln!(
            o,
            "    chance per run that the job outlives it   {}",
            c.chance(r.replays)
        );
        let _ = writeln!(
            o,
            "    expected double executions per year       {}   ({}, a second worker waiting)",
            c.per_year(r.replays, r.runs_per_year),
            r.runs_per_year_from.runs_a_year(r.runs_per_year)
        );
        if c.ttl < r.ttl {
            let _ = writeln!(
                o,
                "    it is shorter than the recommended {}",
                format_long(r.ttl)
            );
        }
        if let Some(e) = &c.estimated {
            let _ = writeln!(
                o,
                "    cost                                      {}",
                e.cost_said()
            );
        }
    }
    if let Some(t) = &r.tail {
        tail_block(&mut o, r, t);
    }
    if let Some(p) = &r.runner {
        runner_block(&mut o, r, p);
    }
    o
}

/// The job's runner priced like a TTL: what its setting amounts to, its chance of starting the
/// job twice, what to set it to, and what the job's lock does about it.
fn runner_block(o: &mut String, r: &TtlRecommendation, p: &RunnerPricing) {
    let _ = writeln!(
        o,
        "\n  runs twice without a lock: {}",
        runner::setting_said(p)
    );
    let _ = writeln!(o, "    {}", runner::lease_said(p));
    if let Some(c) = &p.chance {
        let profile = p
            .profile
            .as_deref()
            .map(|profile| format!(" in `{profile}`"))
            .unwrap_or_default();
        let _ = writeln!(
            o,
            "    started twice{profile}: {}, {}\n    {}\n    ({})",
            c.method.said(),
            c.per_run_said(),
            c.per_year_said(r.runs_per_year),
            c.cost_said()
        );
    }
    let _ = writeln!(o, "    {}", runner::advice_said(p, r.runs_per_year));
    let _ = writeln!(o, "    the job's lock: {}", runner::lock_said(p.kind));
}

/// The tail priced for the schedule: the budget, the TTL it needs, and the chances of the
/// recommended TTL and lease.
fn tail_block(o: &mut String, r: &TtlRecommendation, t: &TailPricing) {
    let _ = writeln!(
        o,
        "\n  yearly budget            {} double executions a year ({}) = {} per run at {}",
        format_per_year(t.accepted_per_year),
        budget_from_said(t.accepted_from),
        format_percent(t.per_run_budget),
        r.runs_per_year_from.runs_a_year(r.runs_per_year)
    );
    let q = &t.budget_runtime;
    let _ = writeln!(
        o,
        "    runtime at that chance {} (95 % interval {} - {}), {}",
        format_seconds(seconds(q.seconds)),
        format_seconds(seconds(q.lower_s)),
        format_seconds(seconds(q.upper_s)),
        q.method.said()
    );
    let mark = |rule: TtlRule| {
        if t.governs == rule {
            "   <- governs"
        } else {
            ""
        }
    };
    let _ = writeln!(
        o,
        "    TTL from the budget    {}   = that runtime x safety factor{}",
        format_long(t.budget_ttl),
        mark(TtlRule::YearlyBudget)
    );
    let _ = writeln!(
        o,
        "    TTL from P99.9         {}   = measured P99.9 x safety factor{}",
        format_long(t.p999_ttl),
        mark(TtlRule::P999)
    );
    let _ = writeln!(
        o,
        "  recommended TTL {} outlived: {}, {}\n    {}\n    ({})",
        format_long(r.ttl),
        t.recommended.method.said(),
        t.recommended.per_run_said(),
        t.recommended.per_year_said(r.runs_per_year),
        t.recommended.cost_said()
    );
    if let (Some(lease), Some(profile)) = (&t.lease, &t.lease_profile) {
        let within = lease.upper * r.runs_per_year <= t.accepted_per_year;
        let _ = writeln!(
            o,
            "  heartbeat lease {} lost to `{profile}`'s stalls: {}, {}\n    {}: {} the budget\n    ({})",
            format_duration(r.heartbeat.lease_ttl),
            lease.method.said(),
            lease.per_run_said(),
            lease.per_year_said(r.runs_per_year),
            if within { "within" } else { "NOT within" },
            lease.cost_said()
        );
    }
}

/// The first line of a TTL whose model the observed runs reject.
pub fn rejected_model(check: &lockbench_core::records::model::ModelCheck) -> String {
    format!(
        "the model behind this TTL is rejected by the {} past runs in {}: {}. The figures below come from that model; recalibrate the spec (lockbench calibrate) before filing them",
        format_count(check.runs),
        check.observed,
        check.verdict
    )
}
