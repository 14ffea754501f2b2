//! A job's acquisition and release protocol (its part 3): how its decided backend is acquired,
//! released and (where the lock is renewed) renewed, with the round trips the benchmark measured
//! on that backend; then its failure policy (`decision::policy`).

use std::time::Duration;

use lockbench_core::BackendKind;
use lockbench_core::records::bench::BenchRow;
use lockbench_decision::{Decision, ModelKind};

use super::common::{Doc, bench_rows, p999_or_max, secs, us};
use crate::report::doc::Block;
use crate::report::load::Inputs;

/// How `backend` releases only its holder's lock.
fn release(backend: BackendKind, model: ModelKind) -> &'static str {
    match (backend, model) {
        (BackendKind::Redis | BackendKind::Redlock, _) => {
            "compare-and-delete with the holder's token, in one script (on each node, for Redlock)"
        }
        (BackendKind::Etcd, _) => "revoke the holder's own lease",
        (BackendKind::Zookeeper, _) => "delete the holder's own sequential node",
        (BackendKind::PgSession, _) => {
            "`pg_advisory_unlock` on the session that locked, then `pg_advisory_unlock_all()` before the connection goes back to any pool"
        }
        (BackendKind::PgXact, _) => "COMMIT or ROLLBACK: nothing else releases it",
        (BackendKind::Memory, _) => "drop the guard",
    }
}

/// One job's protocol, as its decided backend and lock model have it.
pub(super) fn write_job(evidence: &Inputs, d: &Decision, doc: &mut Doc) {
    let Some(backend) = d.backend else {
        return;
    };
    let rows: Vec<&BenchRow> = bench_rows(evidence)
        .into_iter()
        .filter(|r| r.backend.kind == backend && r.client.is_none() && r.contenders == 1)
        .collect();
    let mut items = Vec::new();
    match rows.first() {
        Some(r) => {
            let acquire = p999_or_max(&r.acquire_us);
            items.push(format!(
                "Acquire with a bounded wait and a unique token per acquisition: bench measured `{backend}`'s uncontended acquire tail at {} ({} operations; the P99.9, or the slowest where fewer than 1,000 were timed), so a wait of {} (ten times that, at least 1 s) rides out contention without hiding an outage.",
                us(acquire),
                lockbench_core::format_count(r.ops),
                secs(Duration::from_secs_f64((acquire * 10.0 / 1e6).max(1.0)))
            ));
        }
        None => items.push(format!(
            "Acquire with a bounded wait and a unique token per acquisition (`{backend}` not benchmarked in these results)."
        )),
    }
    items.push(format!(
        "Release on the success path and on every failure path: {}.{}",
        release(backend, d.lock_model.kind),
        if matches!(d.lock_model.kind, ModelKind::FixedTtl | ModelKind::HeartbeatLease) {
            " A release that finds the lock gone is a lost lease: it counts in `lock_release_refused_total` (part 5)."
        } else {
            ""
        }
    ));
    if d.lock_model.kind == ModelKind::HeartbeatLease
        && let (Some(renew), Some(give_up)) =
            (d.lock_model.renew_every_s, d.lock_model.give_up_after_s)
    {
        items.push(format!(
            "{} every {}, by token only (a stale holder must never extend the next holder's lock), and stop work when no renewal has succeeded for {}{}.",
            if backend == BackendKind::Zookeeper {
                "The client pings its session"
            } else {
                "Renew"
            },
            lockbench_core::format_readable_s(renew),
            lockbench_core::format_readable_s(give_up),
            rows.first()
                .filter(|r| r.renew_us.count > 0)
                .map(|r| format!(
                    "; a renewal's round trip measured at {}, far below the interval",
                    us(p999_or_max(&r.renew_us))
                ))
                .unwrap_or_default()
        ));
    }
    if matches!(backend, BackendKind::PgSession | BackendKind::PgXact) {
        items.push(format!(
            "The lock's connection to Postgres is {}; {}",
            super::common::postgres_via(d),
            if backend == BackendKind::PgSession {
                "a session lock holds only on a connection that is the job's for its whole run: direct to the server or through a session-mode pooler, never a transaction-mode one (PgBouncer `pool_mode = transaction`), where lockbench refuses it."
            } else {
                "a transaction lock holds through any pooler mode: its transaction pins the server connection until COMMIT."
            }
        ));
    }
    doc.push(Block::List(items));
}
