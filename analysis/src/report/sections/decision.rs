//! A job's decision in its evidence: the decision in full, and the parts 1 to 4 it writes (its
//! alternatives and what the chosen backend must document, the crash-recovery reconciliation,
//! the acquisition protocol and failure policy, the steps).

use lockbench_core::BackendKind;
use lockbench_core::fault::{Persistence, PoolMode, PoolerMode, Variant};
use lockbench_core::format_readable_s;
use lockbench_core::records::faults::FaultCell;
use lockbench_decision::{Decision, FactBasis, ModelKind, Status, VerdictKind};

use super::common::Doc;
use super::faults::overlapped;
use crate::report::doc::{Block, slug};
use crate::report::load::Inputs;

/// The heading of a job's decision in full (its anchor is the slug).
pub(super) fn heading(d: &Decision) -> String {
    format!("{}: the decision in full", d.job)
}

/// The heading of a job's alternatives (its part 1).
pub(super) fn alternatives_heading(job: &str) -> String {
    format!("{job} 1: backend and failure model")
}

/// A job's decision in full, as its evidence opens: every mechanism with its reason, the
/// answers, the residual risks, and the decision after the blocking actions.
pub(super) fn full(d: &Decision, date: &str, server: Option<String>, doc: &mut Doc) {
    let mut inner = vec![Block::Heading(3, heading(d))];
    inner.push(Block::List(summary_items(d, date, server)));
    if !d.missing.is_empty() {
        inner.push(Block::Para(
            "Not answered, with what each answer would change:".to_string(),
        ));
        inner.push(Block::List(
            d.missing
                .iter()
                .map(|m| format!("`{}`: assumed {}; {}", m.field, m.assumed, m.would_change))
                .collect(),
        ));
    }
    for o in &d.overruled {
        inner.push(Block::Para(format!("**Measurement over rule**: {o}")));
    }
    if let Some(after) = &d.after {
        inner.push(Block::Para(format!(
            "**After the blocking actions** (`lockbench decide {} {}`): {}, {}. {}",
            d.spec,
            after.assumed_flags(),
            lockbench_decision::brief(after),
            after.status.name(),
            sentence(&after.role.reason)
        )));
    }
    inner.push(Block::Para(format!(
        "Parts: [1 backend](#{}) · [2 runtime](#{}) · [2 crash recovery](#{}) · [3 acquisition](#{}) · [4 steps](#{}) · [5 alerts](#{}) · [fault grid](#{})",
        slug(&alternatives_heading(&d.job)),
        slug(&super::ttl::heading(&d.job)),
        slug(&reconciliation_heading(&d.job)),
        slug(&policy_heading(&d.job)),
        slug(&steps_heading(&d.job)),
        slug(&super::observability::heading(&d.job)),
        slug(super::faults::GRID_HEADING),
    )));
    doc.push(Block::Boxed(inner));
}

/// The block's list: status, backend, model, policy, role, mechanisms, the answers it rests
/// on, its residual risk and what it was measured against.
fn summary_items(d: &Decision, date: &str, server: Option<String>) -> Vec<String> {
    let backend = match (&d.backend, d.status) {
        (None, _) => "no backend fits the answers".to_string(),
        (Some(b), Status::Undecided) => {
            format!("`{b}` if a second run corrupts the job's data; `double_run` is not answered")
        }
        (Some(b), _) => format!("`{b}`"),
    };
    let chosen_fact = d
        .alternatives
        .iter()
        .find(|v| v.verdict == VerdictKind::Chosen)
        .map(|v| v.fact.clone())
        .unwrap_or_default();
    let mut items = vec![
        format!("**Status**: {}, {date}", d.status.name()),
        format!("**Backend**: {backend}. {}", sentence(&chosen_fact)),
        format!(
            "**Lock model**: {}{}",
            d.lock_model.kind.name(),
            model_figures(d)
        ),
        format!(
            "**On acquisition failure**: {}. {}",
            d.failure_policy.kind.name(),
            sentence(&d.failure_policy.reason)
        ),
        format!(
            "**The lock is** {}. {}",
            d.role.name(),
            sentence(&d.role.reason)
        ),
    ];
    let required: Vec<String> = d
        .mechanisms
        .iter()
        .map(|m| {
            format!(
                "{}{}{}",
                m.name(),
                m.step
                    .as_ref()
                    .map(|s| format!(" on `{s}`"))
                    .unwrap_or_default(),
                if m.in_place { " (in place)" } else { "" }
            )
        })
        .collect();
    items.push(format!("**Mechanisms**: {}", required.join("; ")));
    let given: Vec<String> = d
        .answers
        .iter()
        .filter(|a| !a.field.starts_with("steps."))
        .map(|a| {
            format!(
                "{} = {}{}",
                a.field,
                a.value,
                if a.given { "" } else { " (assumed)" }
            )
        })
        .collect();
    items.push(format!("**Rests on the answers**: {}", given.join(", ")));
    if !d.residual.is_empty() {
        items.push(format!(
            "**Residual risk** (what the design does not prevent, why it is acceptable for {}, and who owns it): {}",
            d.job,
            d.residual
                .iter()
                .map(|r| format!(
                    "{}. {} {}. Owner: {}.",
                    capitalise(&r.risk),
                    if r.accepted { "Acceptable because" } else { "Not acceptable yet:" },
                    r.why,
                    r.owner
                ))
                .collect::<Vec<_>>()
                .join(" ")
        ));
    }
    if let Some(server) = server {
        items.push(format!("**Measured against**: {server}"));
    }
    items.push(format!("**And on**: {}", d.basis));
    items
}

fn model_figures(d: &Decision) -> String {
    let m = &d.lock_model;
    let mut parts = Vec::new();
    if let Some(t) = m.ttl_s {
        parts.push(format!("TTL {}", format_readable_s(t)));
    }
    if let Some(l) = m.lease_s {
        parts.push(format!("lease {}", format_readable_s(l)));
    }
    if let Some(r) = m.renew_every_s {
        parts.push(format!("renewed every {}", format_readable_s(r)));
    }
    if let Some(g) = m.give_up_after_s {
        parts.push(format!("give up after {}", format_readable_s(g)));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join(", "))
    }
}

/// Section 1's part for one job: every backend's verdict and the points the record must document
/// for the chosen one.
pub(super) fn alternatives(d: &Decision, evidence: &Inputs, doc: &mut Doc) {
    doc.push(Block::Heading(3, alternatives_heading(&d.job)));
    let measured = super::faults::own_runs(evidence).next().is_some();
    let covered = |backend: BackendKind| {
        evidence.faults.iter().any(|f| {
            f.record
                .cells
                .iter()
                .any(|c| c.backend == backend && c.client.is_none())
        })
    };
    let rows = d
        .alternatives
        .iter()
        .map(|v| {
            vec![
                format!("`{}`", v.backend),
                if v.verdict == VerdictKind::Chosen {
                    "**chosen**".to_string()
                } else {
                    v.verdict.name().to_string()
                },
                format!(
                    "{}{}",
                    match v.basis {
                        FactBasis::Answer => "answer: ",
                        FactBasis::Measured => "measured: ",
                        FactBasis::Cost => "",
                        FactBasis::Design => "",
                    },
                    v.fact
                ),
                // Below 100 samples the figure is their maximum (the rules' bound).
                v.acquire_p99_us
                    .zip(v.acquire_samples)
                    .map_or("not measured".to_string(), |(x, n)| {
                        lockbench_core::format_tail_us(0.99, x, n, x)
                    }),
                recovery(v, evidence, measured),
                match (measured, covered(v.backend)) {
                    (false, _) => "no fault run".to_string(),
                    (true, false) => "not measured".to_string(),
                    (true, true) => overlapped(&v.overlapped_under),
                },
            ]
        })
        .collect();
    doc.push(Block::Table {
        head: [
            "backend",
            "verdict",
            "the deciding fact",
            "acquire P99",
            "a crashed holder's lock free after (lab, at the lab's TTL for that backend): process killed / host vanished",
            "cannot prevent, measured",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    });
    let points = chosen_points(d, evidence);
    if !points.is_empty() {
        doc.push(Block::Para(format!(
            "What the record must say about `{}`:",
            d.backend.map_or("", BackendKind::name)
        )));
        doc.push(Block::List(points));
    }
}

/// The lab's cell of `variant` on `backend`, from any faults result of the run.
fn cell_of(evidence: &Inputs, variant: Variant, backend: BackendKind) -> Option<&FaultCell> {
    super::faults::cells(evidence)
        .map(|(_, c)| c)
        .find(|c| c.is(variant, backend))
}

/// A verdict's crash recovery as the lab measured it: after a killed process, and after a vanished
/// host with the design's settings (Postgres: the per-connection keepalive, and what Linux's
/// defaults gave).
fn recovery(v: &lockbench_decision::Verdict, evidence: &Inputs, measured: bool) -> String {
    let none = if measured {
        "not measured"
    } else {
        "no fault run"
    };
    let cell = |variant: Variant| cell_of(evidence, variant, v.backend);
    let Some(killed) = v.crash_recovery_s.map(format_readable_s) else {
        return none.to_string();
    };
    let vanished = match (
        v.vanished_host_s,
        cell(Variant::CrashHostVanished { keepalive: true }),
        cell(Variant::CrashHostVanished { keepalive: false }),
    ) {
        (Some(s), Some(_), defaults) => format!(
            "{} with its keepalive{}",
            format_readable_s(s),
            defaults
                .filter(|d| d.contender_timed_out > 0)
                .map_or(String::new(), |d| format!(" ({} without)", d.not_granted()))
        ),
        (Some(s), None, _) => format_readable_s(s),
        (None, _, Some(d)) if d.contender_timed_out > 0 => d.not_granted(),
        _ => none.to_string(),
    };
    // Lab TTLs differ by backend (a consensus store's minimum lease is longer): each figure
    // names the one it was measured at, so that no reader compares them across backends as if
    // they were the backends' own.
    let ttl = cell(Variant::CrashKilled)
        .map(|c| format!(" at lab TTL {}", format_readable_s(c.granted_ttl_s)))
        .unwrap_or_default();
    format!("{killed} / {vanished}{ttl}")
}

/// The points the literature asks a locking decision record to document for the chosen backend,
/// each with what the lab measured of it.
fn chosen_points(d: &Decision, evidence: &Inputs) -> Vec<String> {
    let Some(backend) = d.backend else {
        return Vec::new();
    };
    match backend {
        BackendKind::Redis => redis_points(d, evidence),
        BackendKind::Redlock => redlock_points(evidence),
        BackendKind::PgSession => pg_session_points(d, evidence),
        BackendKind::PgXact => pg_xact_points(d, evidence),
        BackendKind::Etcd | BackendKind::Zookeeper => quorum_points(evidence, backend),
        BackendKind::Memory => Vec::new(),
    }
}

/// " Measured: ..." of the lab's cells of `variants` on `backend`, or nothing.
fn measured(evidence: &Inputs, variants: &[Variant], backend: BackendKind) -> String {
    let found: Vec<String> = variants
        .iter()
        .filter_map(|v| cell_of(evidence, *v, backend).map(lockbench_decision::describe))
        .collect();
    if found.is_empty() {
        String::new()
    } else {
        format!(" Measured: {}.", found.join("; "))
    }
}

/// A session ends, and frees its locks, when the server's TCP gives up on a vanished peer.
fn vanished_point(evidence: &Inputs, backend: BackendKind) -> String {
    let found = lockbench_decision::describe_vanished(
        cell_of(
            evidence,
            Variant::CrashHostVanished { keepalive: true },
            backend,
        ),
        cell_of(
            evidence,
            Variant::CrashHostVanished { keepalive: false },
            backend,
        ),
    );
    format!(
        "A vanished holder: the server ends its session, and frees the lock, only when its TCP gives up on the silent peer (about 2 h 11 min with Linux's defaults): the job's own connection sets `tcp_keepalives_idle`, `_interval` and `_count` for itself (its mechanisms), never server-wide.{}",
        match found {
            Some(text) => format!(" Measured: {text}."),
            None => measured(evidence, &[Variant::PartitionKeepalive], backend),
        }
    )
}

/// The path to Postgres: what the answer (or bench) says, and what the lab measured through its
/// own PgBouncer.
fn path_point(d: &Decision, evidence: &Inputs, backend: BackendKind) -> String {
    let via = super::common::postgres_via(d);
    let pooled = [
        Variant::Pooler(PoolerMode::Transaction),
        Variant::Pooler(PoolerMode::Session),
        Variant::Pooler(PoolerMode::SessionNoReset),
    ];
    match backend {
        BackendKind::PgSession => format!(
            "The path to Postgres: {via}. A session lock holds only on a connection that is the job's for its whole run (direct, or through a session-mode pooler with its reset): through a transaction-mode pooler the server connection holding it is handed to other clients.{}",
            measured(evidence, &pooled, backend)
        ),
        _ => format!(
            "The path to Postgres: {via}. A transaction lock holds through any pooler mode: its transaction pins the server connection.{}",
            measured(evidence, &pooled[..1], backend)
        ),
    }
}

fn redis_points(d: &Decision, evidence: &Inputs) -> Vec<String> {
    let backend = BackendKind::Redis;
    vec![
        format!(
            "Persistence and its loss window on a crash: without persistence, or with RDB snapshots only, a restart forgets the key; `appendfsync everysec` loses what was not yet fsynced on a power loss (up to a second); `appendfsync always` keeps an acknowledged lock.{}",
            measured(
                evidence,
                &[
                    Variant::Restart(Persistence::None),
                    Variant::RestartPowerLoss,
                    Variant::Restart(Persistence::AofAlways)
                ],
                backend
            )
        ),
        format!(
            "Replica promotion: replication is asynchronous, so a replica promoted before it received the key grants the lock again; `WAIT 1` after acquiring closes that window at the cost of a replica round trip.{}",
            measured(
                evidence,
                &[
                    Variant::Failover { wait: false },
                    Variant::Failover { wait: true }
                ],
                backend
            )
        ),
        format!(
            "Redis unreachable: the job {} (the failure policy, part 3).",
            d.failure_policy.kind.name()
        ),
    ]
}

fn redlock_points(evidence: &Inputs) -> Vec<String> {
    let backend = BackendKind::Redlock;
    vec![
        format!(
            "Five independent nodes, a majority of three; each node's persistence decides whether a restart gives a second majority.{}",
            measured(
                evidence,
                &[Variant::RedlockRestart, Variant::RedlockRestartAndClockJump],
                backend
            )
        ),
        format!(
            "The client checks the validity left (TTL minus the acquisition's time minus drift) before its critical section.{}",
            measured(
                evidence,
                &[
                    Variant::RedlockLateStart { checked: false },
                    Variant::RedlockLateStart { checked: true }
                ],
                backend
            )
        ),
    ]
}

fn pg_session_points(d: &Decision, evidence: &Inputs) -> Vec<String> {
    let backend = BackendKind::PgSession;
    vec![
        format!(
            "Scope: session (`pg_advisory_lock`), held on one connection for the whole job; the lock is re-entrant per session, so a pool that lends that connection lends the lock.{}",
            measured(evidence,
                &[
                    Variant::PoolLeak(PoolMode::NoReset),
                    Variant::PoolLeak(PoolMode::UnlockAll)
                ],
                backend
            )
        ),
        "The pool's reset on return: `pg_advisory_unlock_all()` (or `DISCARD ALL`) before a connection goes back, and `pg_locks` watched for advisory locks held by idle sessions (part 5).".to_string(),
        path_point(d, evidence, backend),
        vanished_point(evidence, backend),
    ]
}

fn pg_xact_points(d: &Decision, evidence: &Inputs) -> Vec<String> {
    let backend = BackendKind::PgXact;
    vec![
        format!(
            "Scope: transaction (`pg_advisory_xact_lock`), taken inside the transaction that does the job's writes; COMMIT or ROLLBACK frees it, and nothing outside that transaction is protected.{}",
            measured(evidence, &[Variant::PoolLeak(PoolMode::Xact)], BackendKind::PgSession)
        ),
        "The transaction's length: it stays open for the whole job, holding back vacuum; the database's operators must know its P99.9 (part 2).".to_string(),
        path_point(d, evidence, backend),
        vanished_point(evidence, backend),
    ]
}

/// etcd's and ZooKeeper's: a quorum, and the fencing token that goes with every write.
fn quorum_points(evidence: &Inputs, backend: BackendKind) -> Vec<String> {
    vec![
        format!(
            "A quorum: a three- or five-node cluster; without a majority no lock is granted and the failure policy applies. The {} is the lease the holder renews.",
            if backend == BackendKind::Etcd {
                "lease TTL"
            } else {
                "session timeout"
            }
        ),
        format!(
            "The fencing token ({}) goes with every write the resource checks.{}",
            if backend == BackendKind::Etcd {
                "the key's create revision"
            } else {
                "the lock node's sequence number"
            },
            measured(
                evidence,
                &[Variant::PauseNaive, Variant::ClockJump],
                backend
            )
        ),
    ]
}

/// The heading of a job's crash-recovery reconciliation (its part 2).
pub(super) fn reconciliation_heading(job: &str) -> String {
    format!("{job} 2: crash recovery")
}

/// Section 2's part: the two jobs of a TTL reconciled.
pub(super) fn reconciliation(d: &Decision, doc: &mut Doc) {
    doc.push(Block::Heading(3, reconciliation_heading(&d.job)));
    let c = &d.crash_recovery;
    let mut text = match d.lock_model.kind {
        ModelKind::FixedTtl | ModelKind::HeartbeatLease => format!(
            "A TTL does two jobs: it frees the lock when the holder crashes, and it bounds how long the holder may work alone. {}",
            c.note
        ),
        ModelKind::Session | ModelKind::Transaction => c.note.clone(),
    };
    match (c.within, c.chosen_s, c.allowed_s) {
        (Some(true), Some(chosen), Some(allowed)) => {
            text += &format!(
                " The decision's {} recovers within {}, inside the {} allowed.",
                d.lock_model.kind.name(),
                format_readable_s(chosen),
                format_readable_s(allowed)
            )
        }
        (Some(false), Some(chosen), Some(allowed)) => {
            text += &format!(
                " **The decision's {} may block the job for {}, more than the {} allowed.**",
                d.lock_model.kind.name(),
                format_readable_s(chosen),
                format_readable_s(allowed)
            )
        }
        _ => {}
    }
    doc.push(Block::Para(text));
}

/// The heading of a job's acquisition, release and failure policy (its part 3).
pub(super) fn policy_heading(job: &str) -> String {
    format!("{job} 3: acquisition and release")
}

/// Part 3: the protocol on the decided backend, the failure policy and what the lab measured of
/// each policy.
pub(super) fn policy(d: &Decision, evidence: &Inputs, doc: &mut Doc) {
    doc.push(Block::Heading(3, policy_heading(&d.job)));
    super::protocol::write_job(evidence, d, doc);
    let p = &d.failure_policy;
    doc.push(Block::Para(format!(
        "When the lock cannot be had, **{}**: {}.",
        p.kind.name(),
        p.reason
    )));
    if p.measured.is_empty() {
        doc.push(Block::Para(
            format!(
                "The fault lab's `outage` scenario measures each policy (`lockbench faults --scenario outage`); these results hold no `outage` cell on {}, so nothing here measures this policy on the job's lock.",
                d.backend
                    .map_or("the chosen backend".to_string(), |b| format!("`{b}`"))
            ),
        ));
    } else {
        doc.push(Block::Para(
            format!(
                "What the fault lab measured on `{}` with the lock server unreachable as the job starts, under each policy:",
                d.backend.map_or("", BackendKind::name)
            ),
        ));
        doc.push(Block::List(p.measured.clone()));
    }
}

/// The heading of a job's steps (its part 4).
pub(super) fn steps_heading(job: &str) -> String {
    format!("{job} 4: idempotency, step by step")
}

/// Section 4's part: each step, and the lock's role.
pub(super) fn steps(d: &Decision, doc: &mut Doc) {
    doc.push(Block::Heading(3, steps_heading(&d.job)));
    doc.push(Block::Table {
        head: [
            "step",
            "target",
            "idempotent",
            "guard",
            "what a double run of it does",
        ]
        .map(String::from)
        .to_vec(),
        rows: d
            .steps
            .iter()
            .map(|s| {
                vec![
                    format!("`{}`", s.step),
                    s.target.clone(),
                    s.idempotent.clone(),
                    s.guard.clone(),
                    s.double_run.clone(),
                ]
            })
            .collect(),
    });
    doc.push(Block::Para(format!(
        "For {} the lock is **{}**: {}.",
        d.job,
        d.role.name(),
        d.role.reason
    )));
}

/// `text` with its first letter in capitals, to open a sentence.
fn capitalise(text: &str) -> String {
    let mut c = text.chars();
    c.next().map_or(String::new(), |f| {
        f.to_uppercase().collect::<String>() + c.as_str()
    })
}

/// `text` as a sentence: its first letter capitalised and a full stop at its end.
fn sentence(text: &str) -> String {
    let text = text.trim();
    let mut chars = text.chars();
    let Some(first) = chars.next() else {
        return String::new();
    };
    let end = if text.ends_with('.') { "" } else { "." };
    format!("{}{}{end}", first.to_uppercase(), chars.as_str())
}
