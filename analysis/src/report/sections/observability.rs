//! Section 5: what to monitor and where to alert, per job as its decided lock model has it (a
//! TTL's alert only where there is a TTL, renewal alerts only where the lock is renewed, the age
//! of a session or transaction lock where there is none), the Prometheus rules with runbooks that
//! say what is true of that model, and how to find and clear a stale lock on each decided backend.

use std::time::Duration;

use lockbench_core::BackendKind;
use lockbench_core::records::ttl::TtlRecommendation;
use lockbench_decision::{Decision, ModelKind};

use super::common::{Doc, bench_rows, decision_of, p999_or_max, secs, secs_f, us, worst_networked};
use crate::report::doc::Block;
use crate::report::load::Inputs;

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

/// One alert: its table row and, where it pages, its Prometheus rule.
struct Alert {
    what: String,
    threshold: String,
    from: String,
    rule: Option<Rule>,
}

/// A Prometheus alerting rule.
struct Rule {
    name: String,
    expr: String,
    severity: &'static str,
    summary: String,
    runbook: String,
}

impl Rule {
    fn yaml(&self) -> String {
        format!(
            "      - alert: {}\n        expr: {}\n        for: 1m\n        labels:\n          severity: {}\n        annotations:\n          summary: \"{}\"\n          runbook: \"{}\"\n",
            self.name, self.expr, self.severity, self.summary, self.runbook
        )
    }
}

/// The alerts of one job, as its decided lock model has them; a job no decision covers gets the
/// TTL's and the heartbeat's, as before a decision.
fn alerts(r: &TtlRecommendation, d: Option<&Decision>) -> Vec<Alert> {
    let w = &r.workload;
    let name = camel_case(w);
    let runtime = Alert {
        what: format!("{w}: hold time above the P99.9 runtime"),
        threshold: format!("> {}", secs(r.measured_p999)),
        from:
            "a run slower than 999 in 1,000 simulated: investigate before it nears the limit below"
                .into(),
        rule: None,
    };
    let decided = d.filter(|d| d.backend.is_some());
    match decided.map(|d| (d, d.lock_model.kind)) {
        None | Some((_, ModelKind::FixedTtl)) => {
            let mut out = vec![
                Alert {
                    what: format!("{w}: hold time above 80 % of the TTL"),
                    threshold: format!("> {}", secs(r.alert_hold)),
                    from: format!("TTL {} (section 2)", secs(r.ttl)),
                    rule: Some(Rule {
                        name: format!("{name}LockHoldNearTtl"),
                        expr: format!(
                            "lock_hold_seconds{{job=\"{w}\"}} > {:.1}",
                            r.alert_hold.as_secs_f64()
                        ),
                        severity: "page",
                        summary: format!(
                            "{w} has held its lock for more than 80 % of its {} TTL",
                            secs(r.ttl)
                        ),
                        runbook: format!(
                            "A second worker gets the lock at {}: check the job's progress, then extend or stop it.",
                            secs(r.ttl)
                        ),
                    }),
                },
                runtime,
            ];
            if decided.is_none() {
                out.extend(renewal(r, &name, None));
            }
            out
        }
        Some((d, ModelKind::HeartbeatLease)) => {
            let mut out = renewal(r, &name, d.lock_model.lease_s);
            out.push(runtime);
            out
        }
        Some((d, model @ (ModelKind::Session | ModelKind::Transaction))) => {
            held(r, d, model, &name, runtime)
        }
    }
}

/// A renewed lease's alerts: renewals failing, and the holder past its give-up deadline.
fn renewal(r: &TtlRecommendation, name: &str, lease_s: Option<f64>) -> Vec<Alert> {
    let w = &r.workload;
    let hb = &r.heartbeat;
    let lease = lease_s.map_or(hb.lease_ttl, Duration::from_secs_f64);
    vec![
        Alert {
            what: format!("{w}: renewal failures in a row"),
            threshold: format!("> {}", hb.max_consecutive_failures),
            from: format!(
                "the give-up deadline of {} allows this many",
                secs(hb.give_up_after)
            ),
            rule: None,
        },
        Alert {
            what: format!("{w}: time since the last successful renewal"),
            threshold: format!("> {}", secs(hb.give_up_after)),
            from: format!(
                "the give-up deadline: the holder must have stopped work; the lease of {} passes on after it",
                secs(lease)
            ),
            rule: Some(Rule {
                name: format!("{name}LockRenewalStale"),
                expr: format!(
                    "time() - lock_last_renewal_timestamp_seconds{{job=\"{w}\"}} > {:.1} and lock_hold_seconds{{job=\"{w}\"}} > 0",
                    hb.give_up_after.as_secs_f64()
                ),
                severity: "page",
                summary: format!(
                    "{w}'s holder has not renewed its lease for {}",
                    secs(hb.give_up_after)
                ),
                runbook: format!(
                    "The holder should have stopped at its give-up deadline; another worker may be granted the lock {} after the last renewal. Check that the old holder stopped writing.",
                    secs(lease)
                ),
            }),
        },
    ]
}

/// A session or transaction lock's alerts: it never expires, so what is watched is how long it
/// is held against the runtime and the crash-recovery budget, and locks held by idle sessions.
fn held(
    r: &TtlRecommendation,
    d: &Decision,
    model: ModelKind,
    name: &str,
    runtime: Alert,
) -> Vec<Alert> {
    let w = &r.workload;
    let scope = if model == ModelKind::Session {
        "session"
    } else {
        "transaction"
    };
    let mut out = vec![runtime];
    if let Some(budget) = d.crash_recovery.allowed_s {
        out.push(Alert {
            what: format!("{w}: hold time above the crash-recovery budget"),
            threshold: format!("> {}", secs_f(budget)),
            from: "`crash_recovery`: the longest the job's owners allow it to be blocked".into(),
            rule: Some(Rule {
                name: format!("{name}LockHeldPastBudget"),
                expr: format!("lock_hold_seconds{{job=\"{w}\"}} > {budget:.1}"),
                severity: "page",
                summary: format!(
                    "{w} has held its {scope} lock for more than the {} its owners allow",
                    secs_f(budget)
                ),
                runbook: format!(
                    "A {scope} lock has no TTL: no second worker gets it while the holder's {scope} lives. Find the holder with the pg_locks query of section 5. If it is working, let it finish; if it hangs, pg_terminate_backend(pid) frees the lock; if its host is gone, the keepalive the decision prescribes ends its session within {}.",
                    d.crash_recovery.chosen_s.map_or("-".to_string(), secs_f)
                ),
            }),
        });
    }
    out.push(Alert {
        what: format!("{w}: an advisory lock held by an idle {}", if model == ModelKind::Session { "session" } else { "transaction (idle in transaction)" }),
        threshold: "> 1 min".into(),
        from: "pg_locks joined with pg_stat_activity (below): a leaked lock, or a holder that stopped without ending its session".into(),
        rule: None,
    });
    out
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

pub(super) fn write(evidence: &Inputs, decisions: &[Decision], doc: &mut Doc) {
    doc.push(Block::Heading(
        2,
        "5. Lock observability and monitoring".to_string(),
    ));
    doc.push(Block::List(metrics(evidence, decisions)));
    let mut rows = Vec::new();
    let mut rules = String::from("groups:\n  - name: lockbench-locks\n    rules:\n");
    let mut paging = 0;
    for t in &evidence.ttls {
        let r = &t.record;
        for a in alerts(r, decision_of(decisions, &r.workload)) {
            if let Some(rule) = &a.rule {
                rules += &rule.yaml();
                paging += 1;
            }
            rows.push(vec![a.what, a.threshold, a.from]);
        }
    }
    if let Some(p999) = worst_networked(&bench_rows(evidence), |r| p999_or_max(&r.acquire_us)) {
        rows.push(vec![
            "acquisition failure rate".to_string(),
            "> 1 % of attempts over 15 minutes".to_string(),
            format!(
                "the backends measured acquired within {} at their worst tail: failures mean an outage or a stuck holder",
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
    if paging > 0 {
        doc.push(Block::Para(
            "The alerts that page, as Prometheus alerting rules with the figures above; each runbook says what is true of that job's lock model:".to_string(),
        ));
        doc.push(Block::Code {
            lang: "yaml".to_string(),
            text: rules,
        });
    }
    stale_locks(decisions, doc);
}

/// The metrics to export, for the lock models the jobs are decided on (every one when no job is).
fn metrics(evidence: &Inputs, decisions: &[Decision]) -> Vec<String> {
    let kinds: Vec<Option<ModelKind>> = evidence
        .ttls
        .iter()
        .map(|t| {
            decision_of(decisions, &t.record.workload)
                .filter(|d| d.backend.is_some())
                .map(|d| d.lock_model.kind)
        })
        .collect();
    let any =
        |f: &dyn Fn(Option<ModelKind>) -> bool| kinds.is_empty() || kinds.iter().any(|k| f(*k));
    let mut metrics = vec![
        "`lock_hold_seconds` (gauge, per job): time since the current holder acquired the lock; 0 when free.".to_string(),
        "`lock_acquire_failures_total` and `lock_acquire_attempts_total` (counters): acquisition failure rate.".to_string(),
    ];
    if any(&|k| {
        matches!(
            k,
            None | Some(ModelKind::FixedTtl | ModelKind::HeartbeatLease)
        )
    }) {
        metrics.push(
            "`lock_ttl_seconds` (gauge, per job with a TTL or a lease): the TTL or lease in force."
                .to_string(),
        );
        metrics.push("`lock_release_refused_total` (counter): releases that found the lock no longer theirs, each one a lost lease.".to_string());
    }
    if any(&|k| matches!(k, None | Some(ModelKind::HeartbeatLease))) {
        metrics.push("`lock_renewals_total`, `lock_renewal_failures_total` (counters) and `lock_last_renewal_timestamp_seconds` (gauge), per job with a heartbeat lease.".to_string());
    }
    if any(&|k| matches!(k, Some(ModelKind::Session | ModelKind::Transaction))) {
        metrics.push("For a session or transaction lock: the advisory locks in `pg_locks`, with the state and age of the session or transaction that holds each (the query below).".to_string());
    }
    metrics
}

/// How to find and clear a stale lock on each decided backend.
fn stale_locks(decisions: &[Decision], doc: &mut Doc) {
    let mut backends: Vec<BackendKind> = Vec::new();
    for b in decisions.iter().filter_map(|d| d.backend) {
        if !backends.contains(&b) {
            backends.push(b);
        }
    }
    let stale: Vec<Block> = backends
        .into_iter()
        .filter_map(stale_lock)
        .map(|(lang, text)| Block::Code {
            lang: lang.to_string(),
            text,
        })
        .collect();
    if !stale.is_empty() {
        doc.push(Block::Para(
            "Stale locks: how to find one, and how to clear it, on each decided backend:"
                .to_string(),
        ));
        doc.blocks.extend(stale);
    }
}
