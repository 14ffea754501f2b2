//! Each job's alerts and monitoring (its part 5): the rules its decided lock model needs, each
//! with when it fires at the latest and what it fires before, the deadlines no page can guard and
//! why, and how to find and clear a stale lock on its backend. The metrics the rules read are
//! listed once, in the shared evidence. The rules themselves come from
//! `lockbench_decision::alerts`; the files Prometheus loads are `report::rules`'.

use lockbench_core::BackendKind;
use lockbench_decision::Decision;
use lockbench_decision::alerts::{AlertPlan, AlertSettings, Severity, Signal};

use super::common::{Doc, secs};
use crate::report::doc::Block;

/// The heading of a job's alerts.
pub(super) fn heading(job: &str) -> String {
    format!("{job} 5: alerts and monitoring")
}

/// One job's alerts.
pub(super) fn write_job(d: &Decision, plan: &AlertPlan, settings: &AlertSettings, doc: &mut Doc) {
    doc.push(Block::Heading(3, heading(&d.job)));
    // A blocked decision is monitored as the decision after its blocking actions.
    let blocked = d.status == lockbench_decision::Status::Blocked && d.after.is_some();
    let implemented = d.after.as_deref().filter(|_| blocked).unwrap_or(d);
    doc.push(Block::Para(format!(
        "Derived from the {} ({}) with a {} scrape, a {} rule evaluation and {} for the person paged to act{}. A page's latest firing time is its threshold plus its `for`, a scrape and an evaluation; with the time to act, it comes before the deadline it guards. {}",
        if blocked {
            "decision after its blocking actions"
        } else {
            "decided lock model"
        },
        implemented.lock_model.kind.name(),
        secs(settings.scrape),
        secs(settings.evaluation),
        secs(settings.act),
        plan.normal_profile
            .as_ref()
            .map(|p| format!("; thresholds stay above a normal run at today's volume (`{p}`)"))
            .unwrap_or_default(),
        match plan.pages_from_volume {
            Some(v) => format!(
                "**Review trigger**: a normal run's P99.9 would reach the page's threshold at about {} {} (a power law through the simulated volumes): size the thresholds again before then.",
                lockbench_core::format_count(v),
                plan.unit
            ),
            None => String::new(),
        }
    )));
    let rows = plan
        .alerts
        .iter()
        .map(|a| {
            vec![
                format!("`{}`", a.name),
                match a.severity {
                    Severity::Page => "**page**".to_string(),
                    Severity::Ticket => "ticket".to_string(),
                },
                match (a.signal, a.threshold) {
                    (Signal::Hold, Some(t)) => format!("held > {}", secs(t)),
                    (Signal::SinceRenewal, Some(t)) => format!("no renewal for > {}", secs(t)),
                    _ => a.summary.clone(),
                },
                match a.deadline {
                    Some(deadline) => format!(
                        "by {} after acquiring; {} before {}",
                        secs(a.fires_by(settings)),
                        secs(deadline.after().saturating_sub(a.fires_by(settings))),
                        deadline.describe()
                    ),
                    None if a.signal.is_timer() => {
                        format!("by {} after acquiring", secs(a.fires_by(settings)))
                    }
                    None => format!("within {} of the event", secs(a.fires_by(settings))),
                },
                a.from.clone(),
            ]
        })
        .collect();
    doc.push(Block::Table {
        head: [
            "rule",
            "reaches",
            "fires when",
            "fires at the latest",
            "from",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    });
    for n in &plan.no_page {
        doc.push(Block::Para(format!(
            "**No page on {}**: {}.",
            n.deadline.describe(),
            n.why
        )));
    }
    doc.push(Block::List(
        plan.alerts
            .iter()
            .map(|a| format!("`{}`: {}", a.name, a.runbook))
            .collect(),
    ));
    if let Some((lang, text)) = implemented.backend.and_then(stale_lock) {
        doc.push(Block::Para(format!(
            "A stale lock on `{}`: how to find one, and clear it:",
            implemented.backend.map_or("", BackendKind::name)
        )));
        doc.push(Block::Code {
            lang: lang.to_string(),
            text,
        });
    }
}

/// The metrics the rules read, once for every job.
pub(super) fn metrics(doc: &mut Doc) {
    doc.push(Block::Heading(3, "The metrics the rules read".to_string()));
    doc.push(Block::List(vec![
        "`lock_hold_seconds{workload}` (gauge): time since the current holder acquired the lock; 0 when free. Exported by the holder.".to_string(),
        "`lock_acquire_total{workload, outcome}` (counter): attempts by outcome: `granted`, `busy` (another holder has it: expected for a waiting worker, never alerted on) or `error` (the backend failed or timed out).".to_string(),
        "`lock_wait_gave_up_total{workload}` (counter): a worker that gave up waiting (the failure policy's alert).".to_string(),
        "`lock_release_refused_total{workload}` (counter): releases that found the lock no longer the holder's: its TTL or lease passed on while it worked.".to_string(),
        "`lock_renewal_failures_total`, `lock_gave_up_total` (counters) and `lock_last_renewal_timestamp_seconds` (gauge), per workload with a heartbeat lease.".to_string(),
        "The label is `workload`, not `job`: Prometheus sets `job` to the scrape job's name.".to_string(),
    ]));
}

/// How to find and clear a stale lock on a backend.
fn stale_lock(backend: BackendKind) -> Option<(&'static str, String)> {
    Some(match backend {
        BackendKind::Redis | BackendKind::Redlock => (
            "shell",
            format!(
                "# {backend}: a lock key lives under the job's key prefix{}; one without an expiry (PTTL -1) is stale.\nredis-cli --scan --pattern '<prefix>:*' | while read k; do echo \"$k $(redis-cli PTTL \"$k\")\"; done\n# Clear one only once its holder is known gone: compare-and-delete with the holder's token, or DEL.\nredis-cli DEL '<prefix>:<job>'",
                if backend == BackendKind::Redlock {
                    ", on each of the five nodes"
                } else {
                    ""
                }
            ),
        ),
        BackendKind::PgSession => (
            "sql",
            "-- pg-session: advisory locks and the sessions that hold them; an idle holder is a leak.\nSELECT l.objid, a.pid, a.state, now() - a.state_change AS idle_for, a.application_name, a.client_addr\n  FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid\n WHERE l.locktype = 'advisory' AND l.granted AND a.state <> 'active';\n-- Clear: end the holder's session, which frees its locks.\nSELECT pg_terminate_backend(<pid>);".to_string(),
        ),
        BackendKind::PgXact => (
            "sql",
            "-- pg-xact: advisory locks with the age of the transactions that hold them.\nSELECT l.objid, a.pid, a.state, now() - a.xact_start AS open_for\n  FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid\n WHERE l.locktype = 'advisory' AND l.granted ORDER BY open_for DESC;\n-- Clear: end the holder's transaction (it rolls back and frees the lock).\nSELECT pg_terminate_backend(<pid>);\n-- Prevent: ALTER ROLE <job_role> SET idle_in_transaction_session_timeout = '5min';".to_string(),
        ),
        BackendKind::Etcd => (
            "shell",
            "# etcd: each lock key carries its lease; a lease whose holder is gone runs out by itself.\nETCDCTL_API=3 etcdctl get --prefix '<prefix>/' -w json\nETCDCTL_API=3 etcdctl lease timetolive <lease-id> --keys\n# Clear one only once its holder is known gone:\nETCDCTL_API=3 etcdctl lease revoke <lease-id>".to_string(),
        ),
        BackendKind::Zookeeper => (
            "shell",
            "# zookeeper: each lock node is ephemeral; stat's ephemeralOwner names the holder's session, which the node ends with.\nzkCli.sh -server <host:port> ls /<prefix>/<job>\nzkCli.sh -server <host:port> stat /<prefix>/<job>/<node>\n# Clear one only once its session is known dead (it goes by itself at the session timeout):\nzkCli.sh -server <host:port> delete /<prefix>/<job>/<node>".to_string(),
        ),
        BackendKind::Memory => return None,
    })
}
