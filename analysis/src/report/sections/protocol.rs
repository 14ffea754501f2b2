//! Section 3: how to acquire, renew and release, with the round trips the benchmark measured.

use std::time::Duration;

use lockbench_core::BackendKind;
use lockbench_decision::{Decision, ModelKind};

use super::common::{Doc, bench_rows, decision_of, p999_or_max, secs, us, worst_networked};
use crate::report::doc::Block;
use crate::report::load::Inputs;

pub(super) fn write(evidence: &Inputs, decisions: &[Decision], doc: &mut Doc) {
    doc.push(Block::Heading(
        2,
        "3. Lock acquisition and release protocol".to_string(),
    ));
    let rows = bench_rows(evidence);
    let mut items = vec![
        "Acquire with a bounded wait and a unique token per acquisition. What a worker does when the wait ends without the lock is each job's failure policy, below.".to_string(),
        "Release on the success path and in every failure path, and only by token: compare-and-delete (Redis), `pg_advisory_unlock` on the session that locked plus `pg_advisory_unlock_all()` before a pooled connection goes back (Postgres), lease revoke (etcd), deleting one's own node (ZooKeeper). A release that finds the lock gone is a lost lease: log it as an incident.".to_string(),
        "Renew by token only (compare-and-expire): a stale holder must never extend the next holder's lock.".to_string(),
    ];
    if let Some(acquire) = worst_networked(&rows, |r| p999_or_max(&r.acquire_us)) {
        let worst = |metric: fn(&lockbench_core::records::bench::BenchRow) -> f64| {
            worst_networked(&rows, metric).unwrap_or(0.0)
        };
        items.push(format!(
            "Measured (bench; the P99.9, or the maximum where fewer than 1,000 operations were timed): the slowest networked acquire tail was {}, release {}, renew {}. An acquisition wait of 10 x that acquire tail ({}) or 1 s, whichever is longer, rides out contention without hiding an outage.",
            us(acquire),
            us(worst(|r| p999_or_max(&r.release_us))),
            us(worst(|r| p999_or_max(&r.renew_us))),
            secs(Duration::from_secs_f64((acquire * 10.0 / 1e6).max(1.0)))
        ));
    }
    // The path to Postgres, for each job that locks there.
    for d in decisions.iter().filter(|d| {
        matches!(
            d.backend,
            Some(BackendKind::PgSession | BackendKind::PgXact)
        )
    }) {
        items.push(format!(
            "{}: the lock's connection to Postgres is {}; {}",
            d.job,
            super::common::postgres_via(d),
            if d.backend == Some(BackendKind::PgSession) {
                "a session lock holds only on a connection that is the job's for its whole run: open it direct to the server or through a session-mode pooler, never through a transaction-mode one (PgBouncer `pool_mode = transaction`), where lockbench refuses it."
            } else {
                "a transaction lock holds through any pooler mode: its transaction pins the server connection until COMMIT."
            }
        ));
    }
    // Renewal only for a job whose decided lock is renewed (or that no decision covers).
    for t in evidence.ttls.iter().filter(|t| {
        decision_of(decisions, &t.record.workload)
            .is_none_or(|d| d.lock_model.kind == ModelKind::HeartbeatLease)
    }) {
        let r = &t.record;
        items.push(format!(
            "{}: with a heartbeat, renew every {} and stop work when no renewal has succeeded for {}; renewal round trips measured above are far below the interval.",
            r.workload,
            secs(r.heartbeat.renewal_interval),
            secs(r.heartbeat.give_up_after)
        ));
    }
    doc.push(Block::List(items));
}
