//! The summary: each TTL, the cheapest backend, and the story a live replay reproduced.

use lockbench_core::records::replay::HoldMode;
use lockbench_core::{BackendId, BackendKind, format_chance, format_count};

use lockbench_core::records::replay::LIVE_AGREEMENT;
use lockbench_core::records::ttl::TtlRecommendation;
use lockbench_decision::{Decision, ModelKind};

use super::common::{
    Doc, bench_rows, decision_of, number, secs, secs_f, simulated_at, today_against, us, yearly,
};
use crate::report::doc::Block;
use crate::report::load::Inputs;

pub(super) fn write(evidence: &Inputs, decisions: &[Decision], doc: &mut Doc) {
    let mut items = job_lines(evidence, decisions);
    items.extend(cheapest_line(evidence));
    items.extend(replay_lines(evidence, decisions));
    items.extend(live_against_simulated(evidence));
    if !items.is_empty() {
        doc.push(Block::Heading(2, "Summary".to_string()));
        doc.push(Block::List(items));
    }
}

/// Each job's lock with today's TTL priced, and its model checks; then the checks of a workload
/// without a TTL derivation.
fn job_lines(evidence: &Inputs, decisions: &[Decision]) -> Vec<String> {
    let mut items = Vec::new();
    for t in &evidence.ttls {
        let r = &t.record;
        let d = decision_of(decisions, &r.workload);
        let mut line = job_line(r, d);
        if let Some(current) = &r.current_ttl {
            line += &format!(
                " Today's lock, a TTL of {}{}; at {} {} it is outlived in {:.2} % of simulated runs (95 % upper bound {:.2} %), about {} double executions a year at {}.",
                secs(current.ttl),
                today_against(evidence, r, current.ttl)
                    .map(|(how, figures)| format!(
                        ", is outlived {how} at today's volume ({figures})"
                    ))
                    .unwrap_or_default(),
                format_count(r.target_volume),
                r.unit,
                current.p_exceed * 100.0,
                current.p_exceed_upper95 * 100.0,
                yearly(current),
                r.runs_per_year_from.runs_a_year(r.runs_per_year),
            );
        }
        items.push(line);
        items.extend(
            evidence
                .checks
                .iter()
                .filter(|c| c.record.workload == r.workload)
                .map(check_line),
        );
    }
    let with_ttl: Vec<&str> = evidence
        .ttls
        .iter()
        .map(|t| t.record.workload.as_str())
        .collect();
    items.extend(
        evidence
            .checks
            .iter()
            .filter(|c| !with_ttl.contains(&c.record.workload.as_str()))
            .map(check_line),
    );
    items
}

/// The cheapest networked acquisition, uncontended.
fn cheapest_line(evidence: &Inputs) -> Option<String> {
    let uncontended: Vec<_> = bench_rows(evidence)
        .into_iter()
        .filter(|r| r.contenders == 1 && !r.backend.in_process())
        .collect();
    let fastest = uncontended
        .iter()
        .min_by(|a, b| a.acquire_us.p50.total_cmp(&b.acquire_us.p50))?;
    Some(format!(
        "Cheapest networked acquisition, uncontended: **{}** at {} P50 (bench: {} operations; {} networked backends measured).",
        fastest.backend,
        us(fastest.acquire_us.p50),
        format_count(fastest.ops),
        uncontended.len()
    ))
}

/// What the live replays reproduced: a fixed TTL's double executions, and the incident on the
/// backend each job is decided on, held as decided.
fn replay_lines(evidence: &Inputs, decisions: &[Decision]) -> Vec<String> {
    let mut items = Vec::new();
    for replay in &evidence.replays {
        let r = &replay.record;
        if r.undefended() && r.mode == HoldMode::Ttl && r.double_executions > 0 {
            items.push(format!(
                "Live replay: a fixed TTL of {} under a runtime of {} (P50) double-executed {} items in {} of {} runs on {}.",
                secs_f(r.ttl_s),
                secs(r.runtime_s.p50),
                format_count(r.double_executions),
                r.runs_with_double_execution,
                r.runs,
                r.backend
            ));
        }
    }
    // The incident replayed on the backend the job is decided on, held as the decision holds it.
    for replay in &evidence.replays {
        let r = &replay.record;
        let Some(d) = decision_of(decisions, &r.workload) else {
            continue;
        };
        let held_as_decided = matches!(
            d.lock_model.kind,
            ModelKind::Session | ModelKind::Transaction | ModelKind::HeartbeatLease
        );
        if d.backend.map(BackendId::of) != Some(r.backend) || !held_as_decided || !r.undefended() {
            continue;
        }
        items.push(format!(
            "Live replay on {}'s decided backend, `{}` ({}): {} items ran twice, in {} of {} runs of `{}` at {} {} (live).",
            r.workload,
            r.backend,
            d.lock_model.kind.name(),
            format_count(r.double_executions),
            r.runs_with_double_execution,
            r.runs,
            r.profile,
            format_count(r.volume),
            r.unit,
        ));
    }
    items
}

/// A job's lock in one sentence, as its decision has it: the TTL only for a fixed TTL, the lease
/// for a heartbeat, neither for a session or a transaction (their derived TTL stays in section 2,
/// as the alternative considered).
fn job_line(r: &TtlRecommendation, d: Option<&Decision>) -> String {
    let runtime = format!(
        "P99.9 runtime {} ({})",
        secs(r.measured_p999),
        simulated_at(r)
    );
    let lease = format!(
        "a heartbeat lease of {} renewed every {}, given up after {}{}",
        secs(r.heartbeat.lease_ttl),
        secs(r.heartbeat.renewal_interval),
        secs(r.heartbeat.give_up_after),
        match (
            &r.heartbeat.sized_by_profile,
            r.heartbeat.p_lease_lost_upper95
        ) {
            (Some(by), Some(upper)) => format!(
                ", sized by the pauses of `{by}`: lost to a stall in at most {} of runs (95 % upper bound, simulated)",
                format_chance(upper)
            ),
            _ => String::new(),
        }
    );
    let ttl = format!(
        "TTL **{}** = {runtime} x safety factor {}",
        secs(r.ttl),
        number(r.safety_factor)
    );
    let Some(d) = d.filter(|d| d.backend.is_some()) else {
        return format!("**{}**: {ttl}; or {lease}.", r.workload);
    };
    let head = format!(
        "**{}** (`{}`, {})",
        r.workload,
        d.backend.map_or("", BackendKind::name),
        d.lock_model.kind.name()
    );
    match d.lock_model.kind {
        ModelKind::FixedTtl => format!(
            "{head}: {ttl}; alert when a run holds it past {} (80 %).",
            secs(r.alert_hold)
        ),
        ModelKind::HeartbeatLease => {
            format!("{head}: {lease}. The job's {runtime} needs no TTL of its own.")
        }
        ModelKind::Session => format!(
            "{head}: no TTL; the lock lasts as long as the job's database session. Hold time is watched against the {runtime} (section 5)."
        ),
        ModelKind::Transaction => format!(
            "{head}: no TTL; the lock lasts as long as the job's transaction. Hold time is watched against the {runtime} (section 5)."
        ),
    }
}

/// A check of the model against past runs, in one line.
fn check_line(c: &crate::report::load::Check) -> String {
    let r = &c.record;
    format!(
        "**{}**: the model checked against {} past runs (`{}`) is {}.",
        r.workload,
        format_count(r.runs),
        r.observed,
        if r.consistent {
            "consistent with them".to_string()
        } else {
            format!("**rejected**: {}", r.verdict)
        }
    )
}

/// Per workload replayed live, where its live P50 runtime and the simulator's at the same volume
/// disagree by more than `replay` holds each call to ([`LIVE_AGREEMENT`]): by how much, and what
/// it means for the TTL derived from the simulation.
fn live_against_simulated(evidence: &Inputs) -> Vec<String> {
    let mut seen: Vec<&str> = Vec::new();
    let mut out = Vec::new();
    // A heartbeat replay first: one holder at a time, as one simulated run has (under a TTL that
    // runs out, a second worker's run shares the servers with the first).
    let mut replays: Vec<_> = evidence.replays.iter().map(|x| &x.record).collect();
    replays.sort_by_key(|r| r.mode != HoldMode::Heartbeat);
    for r in replays {
        let Some(sim) = &r.simulated else { continue };
        if seen.contains(&r.workload.as_str()) {
            continue;
        }
        seen.push(&r.workload);
        let off = sim.p50_ratio - 1.0;
        if off.abs() <= LIVE_AGREEMENT {
            continue;
        }
        let meaning = if off > 0.0 {
            format!(
                "the spec underestimates this job's runtime by about {:.0} %, so a TTL or hold-time alert derived from the simulation is that much too short until the spec is recalibrated (`lockbench calibrate`, or `ttl --observed`)",
                off * 100.0
            )
        } else {
            format!(
                "the spec overestimates this job's runtime by about {:.0} %, which errs toward a longer TTL; recalibrate the spec before shortening anything on its figures",
                -off * 100.0
            )
        };
        out.push(format!(
            "Live against simulated: {}'s live P50 runtime, {} over {} runs on {} at {} {}, is {:.1} % {} the simulated {} ({} replays of `{}` at the same volume), beyond the {:.0} % `replay` holds each call to: {meaning}.",
            r.workload,
            secs(r.runtime_s.p50),
            r.runs,
            r.backend,
            format_count(r.volume),
            r.unit,
            off.abs() * 100.0,
            if off > 0.0 { "above" } else { "below" },
            secs(sim.runtime_s.p50),
            format_count(sim.replays),
            r.profile,
            LIVE_AGREEMENT * 100.0,
        ));
        if !r.warnings.is_empty() {
            let last = out.last_mut().expect("pushed above");
            last.push_str(&format!(
                " The replay itself could not hold every call to the latency it asked for ({} warning{}; its directory has them), so part of the gap is the replay's, not the spec's; and {} runs are few.",
                r.warnings.len(),
                if r.warnings.len() == 1 { "" } else { "s" },
                r.runs
            ));
        }
    }
    out
}
