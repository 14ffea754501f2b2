//! The summary: each TTL, the cheapest backend, and the story a live replay reproduced.

use lockbench_core::records::replay::HoldMode;
use lockbench_core::{format_chance, format_count};

use super::common::{Doc, bench_rows, number, secs, secs_f, us};
use crate::report::doc::Block;
use crate::report::load::Evidence;

pub(super) fn write(evidence: &Evidence, doc: &mut Doc) {
    let mut items = Vec::new();
    for t in &evidence.ttls {
        let r = &t.record;
        let mut line = format!(
            "**{}**: TTL **{}** = P99.9 runtime {} ({}, {} {}) x safety factor {}; or a heartbeat lease of {} renewed every {}{}.",
            r.workload,
            secs(r.ttl),
            secs(r.measured_p999),
            r.profile,
            format_count(r.target_volume),
            r.unit,
            number(r.safety_factor),
            secs(r.heartbeat.lease_ttl),
            secs(r.heartbeat.renewal_interval),
            match (
                &r.heartbeat.sized_by_profile,
                r.heartbeat.p_lease_lost_upper95
            ) {
                (Some(by), Some(upper)) => format!(
                    ", sized by the pauses of `{by}`: lost to a stall in at most {} of runs (95 % upper bound)",
                    format_chance(upper)
                ),
                _ => String::new(),
            }
        );
        if let Some(current) = &r.current_ttl {
            line += &format!(
                " Today's TTL of {} is outlived in {:.2} % of simulated runs (95 % upper bound {:.2} %), about {:.1} double executions a year.",
                secs(current.ttl),
                current.p_exceed * 100.0,
                current.p_exceed_upper95 * 100.0,
                current.expected_double_runs_per_year,
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
    let uncontended: Vec<_> = bench_rows(evidence)
        .into_iter()
        .filter(|r| r.contenders == 1 && r.backend != "memory")
        .collect();
    if let Some(fastest) = uncontended
        .iter()
        .min_by(|a, b| a.acquire_us.p50.total_cmp(&b.acquire_us.p50))
    {
        items.push(format!(
            "Cheapest networked acquisition, uncontended: **{}** at {} P50 ({} networked backends measured).",
            fastest.backend,
            us(fastest.acquire_us.p50),
            uncontended.len()
        ));
    }
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
    if !items.is_empty() {
        doc.push(Block::Heading(2, "Summary".to_string()));
        doc.push(Block::List(items));
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
