//! The rules that pick a backend: the lock's role from the answers, then each backend's verdict
//! from one deciding fact (an answer, a measured fault cell, a cost, or how it locks), then the
//! choice among those left. docs/DECISION.md states each rule with its source.

use lockbench_core::BackendKind;
use lockbench_core::fault::{PoolerMode, ReplicaGuard, Scenario, Variant};
use lockbench_core::records::faults::FaultCell;
use lockbench_workloads::{JobAnswers, PostgresVia, Target};

use crate::answers::{Exposure, Resolved, effect, list, names};
use crate::evidence::{Evidence, describe, fence_held};
use crate::lab::{designed, linearizable, mitigation};
use crate::record::{FactBasis, Reason, Role, Verdict, VerdictKind};

/// Where the record lists a backend among the rejected ones: every backend is a candidate, so a
/// new one is weighed as soon as it is a `BackendKind` (and this match asks for its place).
fn listed_at(kind: BackendKind) -> u32 {
    match kind {
        BackendKind::Redis => 0,
        BackendKind::PgSession => 1,
        BackendKind::PgXact => 2,
        BackendKind::Etcd => 3,
        BackendKind::Zookeeper => 4,
        BackendKind::Redlock => 5,
        BackendKind::Memory => 6,
    }
}

/// The backends a job can choose from, in the order the record lists the rejected ones.
fn candidates_in_order() -> Vec<BackendKind> {
    let mut all = BackendKind::ALL.to_vec();
    all.sort_by_key(|k| listed_at(*k));
    all
}

/// The lock's role for the job.
pub(crate) fn role(job: &JobAnswers, r: &Resolved) -> Role {
    let x = Exposure::of(job, r.double_run);
    let harm = effect(r.double_run);
    if !r.double_run.harms() {
        return Role {
            correctness: false,
            reason: format!(
                "A second run {harm}, so the lock saves work and keeps nothing correct"
            ),
        };
    }
    if !x.inside.is_empty() {
        let cover = if r.one_transaction {
            "its transaction"
        } else if r.fenced {
            "a fencing token the resource checks"
        } else {
            "a fence or a transaction"
        };
        let (it, they) = if x.inside.len() == 1 {
            ("it", "it needs")
        } else {
            ("them", "they need")
        };
        return Role {
            correctness: true,
            reason: format!(
                "{} write{} to the database with no guard of {}. The lock, with {cover}, is what keeps a concurrent second run from doing harm (a second run {harm}){}",
                names(&x.inside),
                if x.inside.len() == 1 { "s" } else { "" },
                if x.inside.len() == 1 {
                    "its own"
                } else {
                    "their own"
                },
                if r.one_transaction {
                    String::new()
                } else {
                    format!(
                        ". A rerun after a crash repeats {it} whatever the lock, so {they} a guard or a checkpoint as well"
                    )
                }
            ),
        };
    }
    if !x.outside.is_empty() {
        return Role {
            correctness: false,
            reason: format!(
                "{} reach{} outside the database with no guard. No lock keeps such a call single (a holder that lost its lock under a stall still makes it, and nothing outside checks a fencing token), so it needs a guard of its own (below); with it the lock only saves work",
                names(&x.outside),
                if x.outside.len() == 1 { "es" } else { "" },
            ),
        };
    }
    let guards: Vec<String> = x
        .guarded
        .iter()
        .map(|s| format!("`{}` by {}", s.name, s.guard.map_or("none", |g| g.name())))
        .collect();
    Role {
        correctness: false,
        reason: format!(
            "A second run {harm} only through steps that guard themselves ({}). The guards keep the job correct; the lock saves the work a second run would waste",
            list(guards)
        ),
    }
}

/// A backend on its way to a verdict.
pub(crate) struct Candidate {
    pub(crate) kind: BackendKind,
    pub(crate) rejected: Option<(Reason, String, FactBasis)>,
    /// How much infrastructure it adds (0: the job already runs it).
    pub(crate) weight: u32,
    /// Its fence or transaction covers the unguarded database steps.
    pub(crate) covers: bool,
}

/// Infrastructure a backend adds to a job, roughly in servers to run: nothing for a service the
/// job already depends on, one Redis, a Postgres, a quorum of three, five Redlock nodes.
pub(crate) fn weight(kind: BackendKind, r: &Resolved) -> u32 {
    let runs = r.runs(kind.service());
    match kind {
        BackendKind::Redlock if runs => 4,
        BackendKind::Redlock => 5,
        _ if runs => 0,
        BackendKind::Redis => 1,
        BackendKind::PgSession | BackendKind::PgXact => 2,
        // A quorum of three; the in-process baseline is never a job's lock (always rejected).
        BackendKind::Etcd | BackendKind::Zookeeper | BackendKind::Memory => 3,
    }
}

/// True when a stale holder's writes are refused by the resource's fence: the job's resource
/// checks the token, `kind`'s token still rises after its server fails, and the client library
/// the job locks with hands the token out (docs/DECISION.md).
pub(crate) fn by_fence(kind: BackendKind, r: &Resolved) -> bool {
    r.fenced && linearizable(kind) && r.tokenless_client(kind).is_none()
}

/// True when the job's writes commit or roll back with `kind`'s lock (one transaction on pg-xact).
pub(crate) fn by_transaction(kind: BackendKind, r: &Resolved) -> bool {
    kind == BackendKind::PgXact && r.one_transaction
}

/// The cells where `kind` overlapped.
fn overlaps(ev: &Evidence, kind: BackendKind) -> impl Iterator<Item = &FaultCell> {
    ev.cells_on(kind).filter(|c| c.trials_with_overlap > 0)
}

/// Every backend's verdict, the chosen one first; the chosen kind.
pub(crate) fn verdicts(
    job: &JobAnswers,
    r: &Resolved,
    ev: &Evidence,
    role: &Role,
    skip_policy: bool,
) -> (Vec<Verdict>, Option<BackendKind>) {
    let api: Vec<&str> = job
        .steps
        .iter()
        .filter(|s| s.target == Target::Api)
        .map(|s| s.name.as_str())
        .collect();
    let mut candidates: Vec<Candidate> = candidates_in_order()
        .into_iter()
        .map(|kind| Candidate {
            kind,
            rejected: rejection(kind, r, ev, role, &api, skip_policy),
            weight: weight(kind, r),
            covers: by_fence(kind, r) || by_transaction(kind, r),
        })
        .collect();
    if role.correctness && candidates.iter().any(|c| c.rejected.is_none() && c.covers) {
        reject_uncovering(&mut candidates, &Exposure::of(job, r.double_run), r);
    }
    let chosen = choose(&candidates, r, ev, role);
    if !role.correctness
        && let Some(best) = chosen
    {
        let floor = weight(best, r);
        for c in candidates
            .iter_mut()
            .filter(|c| c.rejected.is_none() && c.weight > floor)
        {
            c.rejected = Some((
                Reason::Cost,
                cost_fact(c.kind, best, r, ev),
                FactBasis::Cost,
            ));
        }
    }
    let mut out: Vec<Verdict> = candidates
        .iter()
        .map(|c| verdict_of(c, &candidates, chosen, r, ev, role))
        .collect();
    out.sort_by_key(|v| match v.verdict {
        VerdictKind::Chosen => 0,
        VerdictKind::Acceptable => 1,
        VerdictKind::Rejected => 2,
    });
    (out, chosen)
}

/// Where some candidate's fence or transaction covers the unguarded database steps, a lock that
/// keeps the job correct must: every other is rejected, saying what it leaves unprotected.
fn reject_uncovering(candidates: &mut [Candidate], x: &Exposure<'_>, r: &Resolved) {
    for c in candidates
        .iter_mut()
        .filter(|c| c.rejected.is_none() && !c.covers)
    {
        let why = match r.tokenless_client(c.kind) {
            Some(client) if r.fenced => format!(
                "the job locks with {}, which hands out no fencing token for the resource to check",
                client.library()
            ),
            _ if r.fenced => {
                "it gives no fencing token that survives its server's failure".to_string()
            }
            _ => "the resource checks no fencing token and the writes are not in this lock's transaction"
                .to_string(),
        };
        c.rejected = Some((
            if r.fenced {
                Reason::NoToken
            } else {
                Reason::Uncovered
            },
            format!("leaves {} unprotected: {why}", names(&x.inside)),
            FactBasis::Answer,
        ));
    }
}

/// `c`'s row of the decision: its verdict and the fact behind it, with the figures the lab and
/// the bench measured for its backend.
fn verdict_of(
    c: &Candidate,
    candidates: &[Candidate],
    chosen: Option<BackendKind>,
    r: &Resolved,
    ev: &Evidence,
    role: &Role,
) -> Verdict {
    let (verdict, fact, basis) = match (&c.rejected, chosen) {
        (Some((_, fact, basis)), _) => (VerdictKind::Rejected, fact.clone(), *basis),
        (None, Some(best)) if best == c.kind => (
            VerdictKind::Chosen,
            why_chosen(c, candidates, r, ev, role),
            FactBasis::Design,
        ),
        (None, Some(best)) => (
            VerdictKind::Acceptable,
            why_not_chosen(c, best, r, ev),
            FactBasis::Cost,
        ),
        (None, None) => (VerdictKind::Acceptable, String::new(), FactBasis::Design),
    };
    Verdict {
        backend: c.kind,
        verdict,
        reason: c.rejected.as_ref().map(|(reason, _, _)| *reason),
        fact,
        basis,
        acquire_p99_us: ev.acquire_p99_us(c.kind),
        acquire_samples: ev.acquire_cost(c.kind).map(|a| a.samples),
        overlapped_under: overlaps(ev, c.kind)
            .filter(|c| !crate::lab::about_the_job(c.variant))
            .map(FaultCell::label)
            .collect(),
        crash_recovery_s: ev
            .cell(Variant::CrashKilled, c.kind)
            .and_then(|cell| cell.recovery_max_s),
        vanished_host_s: ev.vanished_recovery_s(c.kind),
    }
}

/// The first fact that rules `kind` out, if one does: an answer or how it locks, then (when the
/// lock keeps the job correct) what its server loses or what the lab measured.
fn rejection(
    kind: BackendKind,
    r: &Resolved,
    ev: &Evidence,
    role: &Role,
    api: &[&str],
    skip_policy: bool,
) -> Option<(Reason, String, FactBasis)> {
    rejected_by_answers(kind, r, ev, api).or_else(|| {
        role.correctness
            .then(|| rejected_for_safety(kind, r, ev, skip_policy))
            .flatten()
    })
}

/// What rules `kind` out whatever the lock's role: the in-process baseline, an answer it cannot
/// serve (several databases, a transaction-mode pooler, a critical section of several
/// transactions).
fn rejected_by_answers(
    kind: BackendKind,
    r: &Resolved,
    ev: &Evidence,
    api: &[&str],
) -> Option<(Reason, String, FactBasis)> {
    let postgres = matches!(kind, BackendKind::PgSession | BackendKind::PgXact);
    if kind == BackendKind::Memory {
        return Some((
            Reason::InProcess,
            "in-process only: it excludes nothing outside one process (the zero-network baseline)"
                .into(),
            FactBasis::Design,
        ));
    }
    if postgres && r.databases > 1 {
        return Some((
            Reason::Databases,
            format!(
                "the workers write to {} databases: an advisory lock is scoped to one Postgres instance",
                r.databases
            ),
            FactBasis::Answer,
        ));
    }
    if kind == BackendKind::PgSession && r.postgres_via == PostgresVia::TransactionPooler {
        let measured = ev
            .cell(Variant::Pooler(PoolerMode::Transaction), kind)
            .filter(|c| c.trials_with_overlap > 0);
        let instead = "use pg-xact, or a direct connection for the lock";
        return Some(match measured {
            Some(cell) => (
                Reason::TransactionPooler,
                format!(
                    "through a transaction-mode pooler, {}: {instead}",
                    describe(cell)
                ),
                FactBasis::Measured,
            ),
            None => (
                Reason::TransactionPooler,
                format!(
                    "reaches Postgres through a transaction-mode pooler, which hands the server connection holding a session lock to other clients: {instead}"
                ),
                FactBasis::Answer,
            ),
        });
    }
    if kind == BackendKind::PgXact && !r.one_transaction {
        let calls = if api.is_empty() {
            String::new()
        } else {
            format!(
                " ({} call{} an API)",
                list(api.iter().map(|s| format!("`{s}`")).collect()),
                if api.len() == 1 { "s" } else { "" }
            )
        };
        return Some((
            Reason::NotOneTransaction,
            format!(
                "the critical section is not one transaction{calls}: a transaction-scoped lock would end at its first COMMIT"
            ),
            FactBasis::Answer,
        ));
    }
    None
}

/// What rules `kind` out when the lock keeps the job correct: a server that loses the key, or a
/// measured overlap its design does not prevent.
fn rejected_for_safety(
    kind: BackendKind,
    r: &Resolved,
    ev: &Evidence,
    skip_policy: bool,
) -> Option<(Reason, String, FactBasis)> {
    if !linearizable(kind) {
        // The server lost the key (a restart, a failover, a Redlock node), not the client.
        let lost = overlaps(ev, kind).find(|c| {
            matches!(
                c.variant.scenario(),
                Scenario::Restart | Scenario::Failover | Scenario::Redlock
            )
        });
        return Some(match lost {
            Some(cell) => (
                Reason::LosesKey,
                format!(
                    "{}{}",
                    describe(cell),
                    if kind == BackendKind::Redis {
                        " (asynchronous persistence and replication)"
                    } else {
                        " (no safe fencing token)"
                    }
                ),
                FactBasis::Measured,
            ),
            None if kind == BackendKind::Redis => (
                Reason::LosesKey,
                "a restart or failover that lost the key grants it again, and the fencing counter goes back with the key (Redis persistence and replication are asynchronous)".into(),
                FactBasis::Design,
            ),
            None => (
                Reason::LosesKey,
                "no safe fencing token, and a node restarted empty or a clock jump gives a second majority".into(),
                FactBasis::Design,
            ),
        });
    }
    let includes = designed(kind, skip_policy);
    // An overlap in which nothing stale reached the resource (a heartbeat stopped the holder
    // before it wrote) did no harm: it is noted, it does not decide. A promotion counts only
    // where the job's Postgres has a standby, and not for a transaction's lock that holds every
    // write the job makes: the old primary's transaction dies with what it wrote.
    for cell in overlaps(ev, kind)
        .filter(|c| c.stale_writes > 0)
        .filter(|c| c.variant != Variant::ClusterPrimaryPromoted || promotion_harms(kind, r))
    {
        if cell.expected == "no overlap" {
            return Some((
                Reason::Overlapped,
                format!(
                    "{}, where its design predicts none: the measurement wins",
                    describe(cell)
                ),
                FactBasis::Measured,
            ));
        }
        let prevented = mitigation(cell.variant).is_some_and(|(m, _)| includes.contains(&m));
        if !(prevented || r.fenced && fence_held(cell)) {
            return Some((Reason::Overlapped, describe(cell), FactBasis::Measured));
        }
    }
    None
}

/// The best of the backends not rejected: least new infrastructure, then (when the lock keeps
/// the job correct) a transaction's lock before a session's before a consensus store's, then the
/// lowest measured acquire P99, then a fixed order.
fn choose(
    candidates: &[Candidate],
    r: &Resolved,
    ev: &Evidence,
    role: &Role,
) -> Option<BackendKind> {
    // The last tie-break between equals.
    let order = |k: BackendKind| match k {
        BackendKind::Redis => 0,
        BackendKind::PgXact => 1,
        BackendKind::PgSession => 2,
        BackendKind::Etcd => 3,
        BackendKind::Zookeeper => 4,
        BackendKind::Redlock => 5,
        BackendKind::Memory => 9,
    };
    let class = |k: BackendKind| match (role.correctness, k) {
        (true, BackendKind::PgXact) => 0,
        (true, BackendKind::PgSession) => 1,
        (
            true,
            BackendKind::Redis
            | BackendKind::Redlock
            | BackendKind::Etcd
            | BackendKind::Zookeeper
            | BackendKind::Memory,
        ) => 2,
        // A resource that checks tokens should get one.
        (false, BackendKind::Redlock) if r.fenced => 1,
        (
            false,
            BackendKind::Redis
            | BackendKind::Redlock
            | BackendKind::PgSession
            | BackendKind::PgXact
            | BackendKind::Etcd
            | BackendKind::Zookeeper
            | BackendKind::Memory,
        ) => 0,
    };
    candidates
        .iter()
        .filter(|c| c.rejected.is_none())
        .min_by(|a, b| {
            let p99 = |k| ev.acquire_p99_us(k).unwrap_or(f64::INFINITY);
            (a.weight, class(a.kind))
                .cmp(&(b.weight, class(b.kind)))
                .then(p99(a.kind).total_cmp(&p99(b.kind)))
                .then(order(a.kind).cmp(&order(b.kind)))
        })
        .map(|c| c.kind)
}

/// "acquire P99 7.07 ms against `redis`'s 101 us", when both were measured.
fn latency_against(kind: BackendKind, best: BackendKind, ev: &Evidence) -> Option<String> {
    let (a, b) = (ev.acquire_cost(kind)?, ev.acquire_cost(best)?);
    Some(format!(
        "acquire {} against {}'s {}",
        a.figure(),
        best.name(),
        b.figure()
    ))
}

fn adds(kind: BackendKind, r: &Resolved) -> String {
    match kind {
        BackendKind::Redlock => "five independent Redis nodes".to_string(),
        _ if r.runs(kind.service()) => format!("{}, which the job already runs", kind.name()),
        _ => format!(
            "{}, which the job does not run yet",
            kind.service().map_or("a server", |s| s.name())
        ),
    }
}

fn cost_fact(kind: BackendKind, best: BackendKind, r: &Resolved, ev: &Evidence) -> String {
    format!(
        "more infrastructure than `{}` calls for: it adds {}{}",
        r.double_run.name(),
        adds(kind, r),
        latency_against(kind, best, ev)
            .map(|l| format!(" ({l})"))
            .unwrap_or_default()
    )
}

/// Why `c` was chosen, as sentences. A lab cell is cited only where it tells `c` apart: `c` came
/// through it and another candidate the job weighed did not (a cell every candidate passes
/// decides nothing).
fn why_chosen(
    c: &Candidate,
    weighed: &[Candidate],
    r: &Resolved,
    ev: &Evidence,
    role: &Role,
) -> String {
    let infrastructure = if c.weight == 0 {
        format!(
            "the job already runs {}, so it adds no infrastructure",
            c.kind.service().map_or("it", |s| s.name())
        )
    } else {
        format!("it adds {}", adds(c.kind, r))
    };
    let how = match c.kind {
        BackendKind::PgXact => {
            "the lock ends with the transaction that holds the job's writes".to_string()
        }
        BackendKind::PgSession => {
            "the lock lasts as long as the job's session and ends with it when the holder dies"
                .to_string()
        }
        BackendKind::Redis if r.double_run.harms() => {
            "one key is enough once the guards keep the job correct".to_string()
        }
        BackendKind::Redis => "one key is enough for a job whose double run is cheap".to_string(),
        BackendKind::Etcd | BackendKind::Zookeeper => String::new(),
        BackendKind::Redlock | BackendKind::Memory => "the lightest that fits".to_string(),
    };
    let how = match failover(c.kind, r, ev, role.correctness) {
        Some(failover) if how.is_empty() => failover,
        Some(failover) => format!("{how}; {failover}"),
        None => how,
    };
    let clean: Vec<String> = ev
        .cells_on(c.kind)
        .filter(|cell| cell.trials_with_overlap == 0 && mitigation(cell.variant).is_none())
        .filter_map(|cell| {
            let label = cell.label();
            let failed: Vec<&str> = weighed
                .iter()
                .filter(|o| o.kind != c.kind)
                .filter(|o| {
                    ev.cell(cell.variant, o.kind)
                        .is_some_and(|x| x.trials_with_overlap > 0)
                })
                .map(|o| o.kind.name())
                .collect();
            (!failed.is_empty()).then(|| {
                format!(
                    "{label} ({} of {} trials clean, where {} overlapped)",
                    cell.trials,
                    cell.trials,
                    list(failed.iter().map(|f| format!("`{f}`")).collect())
                )
            })
        })
        .take(3)
        .collect();
    let measured = if clean.is_empty() || !role.correctness {
        String::new()
    } else {
        format!(". Measured in the lab: no overlap under {}", list(clean))
    };
    format!("{infrastructure}; {how}{measured}")
}

/// True when a standby's promotion can let a second run's writes land beside the first's: the
/// job's Postgres has a standby, and its writes are not all in the lock's own transaction.
fn promotion_harms(kind: BackendKind, r: &Resolved) -> bool {
    r.postgres_standby && !by_transaction(kind, r)
}

/// What a failover does to the lock on `kind`, as the lab's cluster cells measured it: a
/// consensus store's lock through its leader's loss (`cluster/leader-killed`), a Postgres
/// advisory lock through a standby's promotion (`cluster/primary-promoted`), a Redis lock
/// through a Sentinel failover (`cluster/sentinel-failover*`). A consensus store with no such
/// cell says that its surviving a failover is unmeasured; Postgres and Redis without one say
/// nothing of failovers.
fn failover(kind: BackendKind, r: &Resolved, ev: &Evidence, correctness: bool) -> Option<String> {
    let variant = match kind {
        BackendKind::Etcd | BackendKind::Zookeeper => Variant::ClusterLeaderKilled,
        BackendKind::PgSession | BackendKind::PgXact if promotion_harms(kind, r) => {
            Variant::ClusterPrimaryPromoted
        }
        BackendKind::Redis => return sentinel_failover(ev),
        BackendKind::PgSession
        | BackendKind::PgXact
        | BackendKind::Redlock
        | BackendKind::Memory => {
            return None;
        }
    };
    let cell = ev.cell(variant, kind);
    let elected = |cell: &FaultCell| elected(cell, "a new leader");
    Some(match (variant, cell) {
        (Variant::ClusterLeaderKilled, None) => {
            "as a consensus store its lock is replicated to a quorum; that it survives a failover \
             is not measured here (`lockbench faults --scenario cluster` measures it)"
                .to_string()
        }
        (Variant::ClusterLeaderKilled, Some(cell)) if cell.trials_with_overlap == 0 => format!(
            "its lock survived the loss of its leader in the lab (cluster/leader-killed on three \
             members: {} of {} trials without overlap{}){}{}",
            cell.trials,
            cell.trials,
            elected(cell),
            ev.cell(Variant::ClusterLeaderIsolated { give_up: true }, kind)
                .filter(|c| c.trials_with_overlap == 0)
                .map(|c| format!(
                    ", and a leader cut off in a minority with its holder let the lock go only \
                     after the holder's heartbeat had stopped its job (cluster/leader-isolated: \
                     {} of {} trials without overlap)",
                    c.trials, c.trials
                ))
                .unwrap_or_default(),
            ev.cell(Variant::ClusterMemberRestarted, kind)
                .filter(|c| c.trials_with_overlap == 0)
                .map(|c| format!(
                    "; a member restarted as the lock changed hands granted its waiting client \
                     nothing early (cluster/member-restarted: {} of {} trials without overlap)",
                    c.trials, c.trials
                ))
                .unwrap_or_default()
        ),
        (Variant::ClusterLeaderKilled, Some(cell)) => format!(
            "yet the lab saw two holders at once when its leader was lost (cluster/leader-killed: \
             {} of {} trials overlapped)",
            cell.trials_with_overlap, cell.trials
        ),
        (_, Some(cell)) if cell.trials_with_overlap > 0 => format!(
            "a promoted standby does not have it and grants it at once (cluster/primary-promoted: \
             {} of {} trials overlapped{}), so across a failover {}",
            cell.trials_with_overlap,
            cell.trials,
            match cell.stale_rejected_by_fence {
                Some(n) if cell.stale_writes > 0 => {
                    format!(
                        ", the fence refused {n} of {} stale writes",
                        cell.stale_writes
                    )
                }
                _ => String::new(),
            },
            if r.fenced {
                "only the fence keeps the job correct"
            } else if !correctness {
                "the steps' own guards keep the job correct"
            } else {
                "nothing refuses the old holder's writes"
            }
        ),
        _ => return None,
    })
}

/// `, T to WHAT` from a cell's median time to a new leader or primary; empty without one.
fn elected(cell: &FaultCell, what: &str) -> String {
    cell.new_leader_p50_s
        .map(|s| format!(", {} to {what}", lockbench_core::format_duration_s(s)))
        .unwrap_or_default()
}

/// What a Sentinel failover did to a Redis lock, where the lab's Sentinel cells measured it: a
/// primary killed before it replicated the key (`cluster/sentinel-failover`, and with
/// `min-replicas-to-write 1`: `-min-replicas`) or cut off with its holder
/// (`cluster/sentinel-primary-isolated`), and each with `WAIT 1` (`-wait`); `None` without any.
fn sentinel_failover(ev: &Evidence) -> Option<String> {
    let mut said = Vec::new();
    let cells = [
        (
            Variant::ClusterSentinelFailover {
                guard: ReplicaGuard::None,
            },
            Some(Variant::ClusterSentinelFailover {
                guard: ReplicaGuard::MinReplicas,
            }),
            Variant::ClusterSentinelFailover {
                guard: ReplicaGuard::Wait,
            },
            "a primary killed before its replicas had the key",
        ),
        (
            Variant::ClusterSentinelPrimaryIsolated { wait: false },
            None,
            Variant::ClusterSentinelPrimaryIsolated { wait: true },
            "a primary cut off with its holder (which went on renewing there)",
        ),
    ];
    for (bare, min_replicas, waited, what) in cells {
        let bare = ev.cell(bare, BackendKind::Redis);
        if let Some(cell) = bare.filter(|c| c.trials_with_overlap > 0) {
            said.push(format!(
                "a Sentinel failover from {what} granted the lock again ({}: {} of {} trials \
                 overlapped{})",
                cell.label(),
                cell.trials_with_overlap,
                cell.trials,
                elected(cell, "a promoted replica")
            ));
        }
        match min_replicas.and_then(|v| ev.cell(v, BackendKind::Redis)) {
            Some(cell) if cell.trials_with_overlap > 0 => said.push(format!(
                "min-replicas-to-write 1 did not prevent it ({}: {} of {} trials overlapped): \
                 it counts replicas that answer, not replicas that have the key",
                cell.label(),
                cell.trials_with_overlap,
                cell.trials
            )),
            Some(cell) => said.push(format!(
                "with min-replicas-to-write 1 the holder lost nothing to it ({}: {} of {} \
                 trials without overlap)",
                cell.label(),
                cell.trials,
                cell.trials
            )),
            None => {}
        }
        match ev.cell(waited, BackendKind::Redis) {
            Some(cell) if cell.trials_with_overlap == 0 => said.push(format!(
                "with WAIT 1 the holder lost nothing to it ({}: {} of {} trials without \
                 overlap{})",
                cell.label(),
                cell.trials,
                cell.trials,
                elected(cell, "a promoted replica")
            )),
            Some(cell) => said.push(format!(
                "even with WAIT 1 it let the lock go to a second holder ({}: {} of {} trials \
                 overlapped)",
                cell.label(),
                cell.trials_with_overlap,
                cell.trials
            )),
            None => {}
        }
    }
    (!said.is_empty()).then(|| said.join("; "))
}

fn why_not_chosen(c: &Candidate, best: BackendKind, r: &Resolved, ev: &Evidence) -> String {
    let best_weight = weight(best, r);
    let latency = latency_against(c.kind, best, ev);
    if c.weight > best_weight {
        format!(
            "would do, but adds {}{}",
            adds(c.kind, r),
            latency.map(|l| format!(" ({l})")).unwrap_or_default()
        )
    } else {
        match latency {
            Some(l) => format!("would do; {l}"),
            None => format!(
                "would do; `{}` comes first in the rules' order",
                best.name()
            ),
        }
    }
}
