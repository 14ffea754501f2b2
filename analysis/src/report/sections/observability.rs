//! Section 5: what to monitor and where to alert, with the thresholds filled in from the TTL
//! derivations and the benchmark, and a Prometheus rule.

use super::common::{Doc, bench_rows, secs, us, worst_networked};
use crate::report::doc::Block;
use crate::report::load::Evidence;

/// `billing-run` -> `BillingRun`, for an alert name.
fn camel_case(workload: &str) -> String {
    workload
        .split(|c: char| !c.is_ascii_alphanumeric())
        .map(|p| {
            let mut c = p.chars();
            c.next().map_or(String::new(), |f| {
                f.to_ascii_uppercase().to_string() + c.as_str()
            })
        })
        .collect()
}

pub(super) fn write(evidence: &Evidence, doc: &mut Doc) {
    doc.push(Block::Heading(
        2,
        "5. Lock observability and monitoring".to_string(),
    ));
    doc.push(Block::List(vec![
        "`lock_hold_seconds` (gauge, per job): time since the current holder acquired the lock; 0 when free.".to_string(),
        "`lock_ttl_seconds` (gauge, per job): the TTL or lease in force.".to_string(),
        "`lock_acquire_failures_total` and `lock_acquire_attempts_total` (counters): acquisition failure rate.".to_string(),
        "`lock_renewals_total` and `lock_renewal_failures_total` (counters): renewal success rate for heartbeat locks.".to_string(),
        "`lock_release_refused_total` (counter): releases that found the lock no longer theirs, each one a lost lease.".to_string(),
    ]));
    let mut rows = Vec::new();
    let mut rules = String::from("groups:\n  - name: lockbench-locks\n    rules:\n");
    for t in &evidence.ttls {
        let r = &t.record;
        let w = &r.workload;
        rows.push(vec![
            format!("{w}: hold time above 80 % of the TTL"),
            format!("> {}", secs(r.alert_hold)),
            format!("TTL {} (section 2)", secs(r.ttl)),
        ]);
        rows.push(vec![
            format!("{w}: runtime above the measured P99.9"),
            format!("> {}", secs(r.measured_p999)),
            "a run slower than 999 in 1,000 simulated: investigate before it nears the TTL"
                .to_string(),
        ]);
        rows.push(vec![
            format!("{w}: renewal failures in a row (heartbeat)"),
            format!("> {}", r.heartbeat.max_consecutive_failures),
            format!(
                "the give-up deadline of {} allows this many",
                secs(r.heartbeat.give_up_after)
            ),
        ]);
        rules += &format!(
            "      - alert: {}LockHoldNearTtl\n        expr: lock_hold_seconds{{job=\"{w}\"}} > {:.1}\n        for: 1m\n        labels:\n          severity: page\n        annotations:\n          summary: \"{w} has held its lock for more than 80 % of its {} TTL\"\n          runbook: \"A second worker gets the lock at {}: check the job's progress, then extend or stop it.\"\n",
            camel_case(w),
            r.alert_hold.as_secs_f64(),
            secs(r.ttl),
            secs(r.ttl),
        );
    }
    if let Some(p999) = worst_networked(&bench_rows(evidence), |r| r.acquire_us.p999) {
        rows.push(vec![
            "acquisition failure rate".to_string(),
            "> 1 % of attempts over 15 minutes".to_string(),
            format!(
                "the backends measured acquired within {} at P99.9: failures mean an outage or a stuck holder",
                us(p999)
            ),
        ]);
    }
    if rows.is_empty() {
        doc.push(Block::Para(
            "No TTL derivation in these results, so no thresholds to fill in: run `lockbench ttl`."
                .to_string(),
        ));
        return;
    }
    doc.push(Block::Table {
        head: vec!["alert".into(), "threshold".into(), "from".into()],
        rows,
    });
    if !evidence.ttls.is_empty() {
        doc.push(Block::Para(
            "A Prometheus alerting rule for hold time above 80 % of the TTL, with the figures above:".to_string(),
        ));
        doc.push(Block::Code {
            lang: "yaml".to_string(),
            text: rules,
        });
    }
}
