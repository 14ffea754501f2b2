//! Section 3: how to acquire, renew and release, with the round trips the benchmark measured.

use std::time::Duration;

use super::common::{Doc, bench_rows, secs, us, worst_networked};
use crate::report::doc::Block;
use crate::report::load::Evidence;

pub(super) fn write(evidence: &Evidence, doc: &mut Doc) {
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
    if let Some(acquire) = worst_networked(&rows, |r| r.acquire_us.p999) {
        let worst = |metric: fn(&lockbench_core::records::bench::BenchRow) -> f64| {
            worst_networked(&rows, metric).unwrap_or(0.0)
        };
        items.push(format!(
            "Measured: the slowest networked acquire P99.9 was {}, release P99.9 {}, renew P99.9 {}. An acquisition wait of 10 x the acquire P99.9 ({}) or 1 s, whichever is longer, rides out contention without hiding an outage.",
            us(acquire),
            us(worst(|r| r.release_us.p999)),
            us(worst(|r| r.renew_us.p999)),
            secs(Duration::from_secs_f64((acquire * 10.0 / 1e6).max(1.0)))
        ));
    }
    for t in &evidence.ttls {
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
