//! The chosen backend made into a design: how the lock lasts, what it needs besides itself, what
//! a worker does when it cannot get it, how long a crash blocks the job, and what is left.

use lockbench_core::fault::{Persistence, PoolMode, Variant};
use lockbench_core::records::faults::FaultCell;
use lockbench_core::records::ttl::TtlRecommendation;
use lockbench_core::{
    BackendKind, ClientChoice, format_chance, format_count, format_readable, format_readable_s,
};
use lockbench_workloads::{DoubleRun, Guard, JobAnswers, StepAnswers, Target};

use crate::answers::{Exposure, Resolved, effect, names};
use crate::evidence::{Evidence, describe};
use crate::record::{
    CrashRecovery, Decision, FailurePolicy, LockModel, Mechanism, ModelKind, PolicyKind, Residual,
    Role, StepRow,
};

/// The acquisition-failure policy, from the answers alone: a job whose double run does harm
/// never runs without the lock; one whose steps are all idempotent and whose double run is
/// absorbed may; the rest wait for the next window.
pub(crate) fn policy(job: &JobAnswers, r: &Resolved) -> FailurePolicy {
    let all_idempotent = job.steps.iter().all(|s| s.idempotent == Some(true));
    let (kind, reason) = if r.double_run.harms() {
        (
            PolicyKind::SkipAndAlert,
            format!(
                "A second run {}, so the job never runs without the lock. A missed run waits for the next window or a person; a double run cannot be undone",
                effect(r.double_run)
            ),
        )
    } else if r.double_run == DoubleRun::Absorbed && all_idempotent {
        (
            PolicyKind::RunUnlocked,
            "Every step is idempotent and a double run is absorbed, so a missed run costs more than an overlap".to_string(),
        )
    } else {
        (
            PolicyKind::Queue,
            format!(
                "A second run {}{}. Retry with backoff until the next window rather than miss the run",
                effect(r.double_run),
                if all_idempotent {
                    ""
                } else {
                    ", but not every step is idempotent, so it never runs without the lock"
                }
            ),
        )
    };
    FailurePolicy {
        kind,
        reason,
        retry_for_s: None,
        measured: Vec::new(),
    }
}

/// What the lab's `outage` cells measured of each policy on the chosen backend (a cell on
/// another backend says nothing of this job's lock).
pub(crate) fn outage_measured(ev: &Evidence, kind: Option<BackendKind>) -> Vec<String> {
    let Some(kind) = kind else {
        return Vec::new();
    };
    [
        PolicyKind::SkipAndAlert,
        PolicyKind::Queue,
        PolicyKind::RunUnlocked,
    ]
    .iter()
    .filter_map(|p| {
        ev.cell(p.outage_variant(), kind)
            .map(|c| outage_line(*p, c))
    })
    .collect()
}

/// The policy once the lock model is known (docs/DECISION.md, "retry within the budget"): a job
/// that must not run twice retries for as long as its crash-recovery budget allows where the lock
/// cannot be granted while its holder lives (a session or a transaction, or a lease whose fence
/// refuses the old holder), and never retries a fixed TTL, whose expiry can let a retry in beside
/// a holder that outlived it.
pub(crate) fn within_budget(
    policy: FailurePolicy,
    r: &Resolved,
    model: &LockModel,
    fenced_lease: bool,
) -> FailurePolicy {
    if policy.kind != PolicyKind::SkipAndAlert {
        return policy;
    }
    let holder_excludes = match model.kind {
        ModelKind::Session => Some("a session lock is held as long as its holder's session"),
        ModelKind::Transaction => {
            Some("a transaction lock is held as long as its holder's transaction")
        }
        ModelKind::HeartbeatLease if fenced_lease => Some(
            "a renewed lease does not pass while its holder renews, and the fence refuses a holder that stopped renewing",
        ),
        ModelKind::HeartbeatLease => None,
        ModelKind::FixedTtl => {
            return FailurePolicy {
                reason: format!(
                    "{}. No retry: a fixed TTL runs out under a holder that outlives it, and a retry granted then runs beside it",
                    policy.reason
                ),
                ..policy
            };
        }
    };
    let (Some(why), Some(budget)) = (holder_excludes, r.crash_recovery) else {
        return policy;
    };
    FailurePolicy {
        kind: PolicyKind::RetryThenAlert,
        reason: format!(
            "A second run {}, but {why}, so a retry cannot run beside a live holder. Retry with backoff for up to the {} the job allows after a crash, then alert. Once granted, check that this window's run has not already completed",
            effect(r.double_run),
            format_readable(budget)
        ),
        retry_for_s: Some(budget.as_secs_f64()),
        measured: policy.measured,
    }
}

/// The keepalive on the job's own connection that ends a vanished holder's session, and frees
/// its lock, within a quarter of the crash-recovery budget (at most 2 min): idle, interval, count.
pub(crate) fn keepalive(budget: Option<std::time::Duration>) -> (u64, u64, u32) {
    let target = budget.map_or(120, |b| (b.as_secs() / 4).clamp(8, 120));
    (target / 2, (target / 8).max(1), 4)
}

/// The keepalive's bound: how long after its host vanished the server ends the holder's session.
pub(crate) fn keepalive_bound_s(budget: Option<std::time::Duration>) -> u64 {
    let (idle, interval, count) = keepalive(budget);
    idle + interval * u64::from(count)
}

fn outage_line(policy: PolicyKind, c: &FaultCell) -> String {
    let overlapped = format!("overlap in {}/{} trials", c.trials_with_overlap, c.trials);
    match policy {
        PolicyKind::SkipAndAlert => format!(
            "{} on {}: {overlapped}, {} of {} runs missed",
            c.label(),
            c.backend,
            c.contender_timed_out,
            c.trials
        ),
        PolicyKind::Queue | PolicyKind::RetryThenAlert => format!(
            "{} on {}: {overlapped}, the run {}",
            c.label(),
            c.backend,
            c.recovery_p50_s
                .map_or("never ran".to_string(), |s| format!(
                    "began {} after the outage did",
                    format_readable_s(s)
                ))
        ),
        PolicyKind::RunUnlocked => format!("{} on {}: {overlapped}", c.label(), c.backend),
    }
}

/// How the chosen lock lasts.
pub(crate) fn lock_model(
    kind: Option<BackendKind>,
    r: &Resolved,
    role: &Role,
    ttl: Option<&TtlRecommendation>,
) -> LockModel {
    let none = LockModel {
        kind: ModelKind::HeartbeatLease,
        ttl_s: None,
        lease_s: None,
        renew_every_s: None,
        give_up_after_s: None,
        reason: String::new(),
    };
    match kind {
        Some(BackendKind::PgXact) => {
            return LockModel {
                kind: ModelKind::Transaction,
                reason: "pg_advisory_xact_lock inside the job's transaction: COMMIT or ROLLBACK frees it, a crash too (the session ends, the transaction rolls back); no TTL to outlive".into(),
                ..none
            };
        }
        Some(BackendKind::PgSession) => {
            return LockModel {
                kind: ModelKind::Session,
                reason: "pg_advisory_lock on a connection held for the whole job: no TTL to outlive; the server frees it when the session ends".into(),
                ..none
            };
        }
        None => {
            return LockModel {
                reason: "no backend fits the answers".into(),
                ..none
            };
        }
        Some(_) => {}
    }
    let Some(t) = ttl else {
        return LockModel {
            reason: "the job's runtime is not measured here (run `lockbench ttl SPEC`): a lease renewed on a heartbeat does not depend on it".into(),
            ..none
        };
    };
    let fits = r.crash_recovery.is_some_and(|c| t.ttl <= c);
    if fits && !role.correctness {
        return LockModel {
            kind: ModelKind::FixedTtl,
            ttl_s: Some(t.ttl.as_secs_f64()),
            reason: format!(
                "the fixed TTL of {} (P99.9 runtime {} x safety factor {}) is within the crash recovery allowed ({}): nothing to renew",
                format_readable(t.ttl),
                format_readable(t.measured_p999),
                t.safety_factor,
                r.crash_recovery.map_or(String::new(), format_readable),
            ),
            ..none
        };
    }
    heartbeat_lease(kind, r, role, t)
}

/// The heartbeat lease a TTL backend holds when a fixed TTL will not do, and why not.
fn heartbeat_lease(
    kind: Option<BackendKind>,
    r: &Resolved,
    role: &Role,
    t: &TtlRecommendation,
) -> LockModel {
    let hb = &t.heartbeat;
    let why = match r.crash_recovery {
        Some(c) if t.ttl > c => format!(
            "a fixed TTL of {} would also block the job for {} after a crash, more than the {} allowed",
            format_readable(t.ttl),
            format_readable(t.ttl),
            format_readable(c)
        ),
        _ if role.correctness => {
            "the lock must not pass to another worker while its holder works: a fixed TTL is outlived by a slow run, a renewed lease is not".to_string()
        }
        _ => format!(
            "the crash recovery allowed is not answered: a lease of {} bounds it whatever the runtime",
            format_readable(hb.lease_ttl)
        ),
    };
    LockModel {
        kind: ModelKind::HeartbeatLease,
        ttl_s: None,
        lease_s: Some(hb.lease_ttl.as_secs_f64()),
        renew_every_s: Some(hb.renewal_interval.as_secs_f64()),
        give_up_after_s: Some(hb.give_up_after.as_secs_f64()),
        reason: format!(
            "{why}; lease {} renewed every {}, sized by `ttl`{}{}",
            format_readable(hb.lease_ttl),
            format_readable(hb.renewal_interval),
            hb.sized_by_profile
                .as_ref()
                .map(|p| format!(" from the pauses of `{p}`"))
                .unwrap_or_default(),
            if kind == Some(BackendKind::Zookeeper) {
                " (ZooKeeper: the session timeout is the lease, the client's pings its heartbeat)"
            } else {
                ""
            }
        ),
    }
}

/// A failure's cell on a backend, then the cell of the variant that shows its mitigation working
/// ([`crate::lab::mitigation`]): "X; Y".
fn pair(ev: &Evidence, kind: BackendKind, failure: Variant) -> Option<String> {
    let f = ev.cell(failure, kind)?;
    let control = crate::lab::mitigation(failure).and_then(|(_, control)| ev.cell(control, kind));
    Some(match control {
        Some(c) => format!("{}; {}", describe(f), describe(c)),
        None => describe(f),
    })
}

/// The measurements there are, joined by "; "; `None` when there is none.
fn joined<const N: usize>(measured: [Option<String>; N]) -> Option<String> {
    let there: Vec<String> = measured.into_iter().flatten().collect();
    (!there.is_empty()).then(|| there.join("; "))
}

/// Everything the design needs besides the lock: the steps' own guards, what protects the
/// database writes, what the lock model needs, and what the backend and the policy need.
pub(crate) fn mechanisms(
    job: &JobAnswers,
    r: &Resolved,
    ev: &Evidence,
    kind: Option<BackendKind>,
    model: &LockModel,
    policy: &FailurePolicy,
) -> Vec<Mechanism> {
    let x = Exposure::of(job, r.double_run);
    let mut out = step_guards(job, r, ev, &x);
    let Some(kind) = kind else {
        return out;
    };
    out.extend(write_protection(r, ev, kind, &x));
    out.extend(model_mechanisms(job, r, ev, kind, model));
    out.extend(backend_mechanisms(ev, kind, r, policy));
    out
}

/// The guards the steps keep (in place) and the ones the steps outside the database need.
fn step_guards(job: &JobAnswers, r: &Resolved, ev: &Evidence, x: &Exposure) -> Vec<Mechanism> {
    let mut out = Vec::new();
    let replay = |keys: bool| {
        ev.replays_of(&job.job)
            .find(|rec| rec.idempotency_keys == keys && rec.fencing != keys)
            .cloned()
    };
    for s in x.guarded.iter().filter(|_| r.double_run.harms()) {
        let guard = s.guard.unwrap_or(Guard::None);
        out.push(Mechanism {
            name: format!("keep the {}", guard.name()),
            step: Some(s.name.clone()),
            in_place: true,
            reason: format!(
                "it, not the lock, keeps `{}` single: a second run's {} is refused",
                s.name,
                if s.target == Target::Api { "call" } else { "write" }
            ),
            measured: replay(true).filter(|_| guard == Guard::IdempotencyKey).and_then(|rec| {
                rec.duplicate_charges_accepted.map(|dup| {
                    format!(
                        "live replay on {}: {} items ran twice and the payment API accepted {} duplicate charges",
                        rec.backend,
                        format_count(rec.double_executions),
                        format_count(dup)
                    )
                })
            }),
        });
    }
    for s in &x.outside {
        out.push(Mechanism {
            name: if s.target == Target::Api {
                "an idempotency key".into()
            } else {
                "a guard of its own".into()
            },
            step: Some(s.name.clone()),
            in_place: false,
            reason: format!(
                "no lock keeps `{}` single: a holder that lost its lock still makes the call, and nothing outside the database checks a fencing token",
                s.name
            ),
            measured: replay(false).map(|rec| {
                format!(
                    "live replay with fencing on {}: {} stale writes refused, yet {} items still ran twice",
                    rec.backend,
                    format_count(rec.stale_writes_rejected),
                    format_count(rec.double_executions)
                )
            }),
        });
    }
    out
}

/// What protects the unguarded database writes on `kind`: the locking transaction, or a fence
/// and a guard per write against a rerun.
fn write_protection(
    r: &Resolved,
    ev: &Evidence,
    kind: BackendKind,
    x: &Exposure,
) -> Vec<Mechanism> {
    let by_fence = crate::rules::by_fence(kind, r);
    if x.inside.is_empty() {
        return if r.fenced
            && kind.fencing() != lockbench_core::FencingSource::None
            && r.tokenless_client(kind).is_none()
        {
            vec![fence(kind, ev, "every write")]
        } else {
            Vec::new()
        };
    }
    if crate::rules::by_transaction(kind, r) {
        return vec![Mechanism {
            name: "every write in the locking transaction".into(),
            step: None,
            in_place: true,
            reason: format!(
                "{} commit or roll back with the lock: a lost lock cannot leave a stale write, and a crash rolls them back, so a rerun starts clean",
                names(&x.inside)
            ),
            measured: ev
                .cell(Variant::PoolLeak(PoolMode::Xact), BackendKind::PgSession)
                .map(describe),
        }];
    }
    let mut out = Vec::new();
    if by_fence {
        out.push(fence(
            kind,
            ev,
            &format!("every write of {}", names(&x.inside)),
        ));
    }
    for s in &x.inside {
        out.push(rerun_guard(s, r, by_fence, ev, kind));
    }
    out
}

/// What the lock model needs: a heartbeat's renewal and give-up deadline, or a session's own
/// connection, its keepalive and (a transaction) its lock timeout.
fn model_mechanisms(
    job: &JobAnswers,
    r: &Resolved,
    ev: &Evidence,
    kind: BackendKind,
    model: &LockModel,
) -> Vec<Mechanism> {
    let mut out = Vec::new();
    match model.kind {
        ModelKind::HeartbeatLease => out.push(Mechanism {
            name: format!(
                "renew every {}; stop work at the give-up deadline ({})",
                model
                    .renew_every_s
                    .map_or("third of the lease".to_string(), format_readable_s),
                model
                    .give_up_after_s
                    .map_or("two thirds of the lease".to_string(), format_readable_s)
            ),
            step: None,
            in_place: false,
            reason: "a live job that outlasts its TTL keeps its lease, and a holder that cannot renew stops before its lease can pass to another worker"
                .into(),
            measured: joined([
                pair(ev, kind, Variant::Overrun { heartbeat: false }),
                pair(ev, kind, Variant::PauseNaive)
                    .or_else(|| pair(ev, kind, Variant::PartitionNoGiveUp)),
            ]),
        }),
        ModelKind::Session | ModelKind::Transaction => {
            if model.kind == ModelKind::Session {
                out.push(Mechanism {
                    name: "a connection of its own for the whole job; pg_advisory_unlock_all() (or DISCARD ALL) before it goes back to a pool".into(),
                    step: None,
                    in_place: false,
                    reason: "the lock belongs to the session and is re-entrant: a pool that lends the session while the job runs lends the lock".into(),
                    measured: pair(ev, kind, Variant::PoolLeak(PoolMode::NoReset)),
                });
            }
            out.push(session_keepalive(r, ev, kind));
            if model.kind == ModelKind::Transaction {
                out.push(lock_timeout(job, ev));
            }
        }
        ModelKind::FixedTtl => {}
    }
    out
}

/// What the backend and the failure policy need: Redlock's validity check, Redis's persistence,
/// a completion record for a retry, token-checked release, and processes that die with the
/// holder.
fn backend_mechanisms(
    ev: &Evidence,
    kind: BackendKind,
    r: &Resolved,
    policy: &FailurePolicy,
) -> Vec<Mechanism> {
    let mut out = Vec::new();
    if matches!(kind, BackendKind::Redlock | BackendKind::Redis) {
        out.push(Mechanism {
            name: "check the validity left before the critical section".into(),
            step: None,
            in_place: false,
            reason: "a slow acquisition can return with its key about to expire, or expired".into(),
            measured: joined([
                pair(ev, kind, Variant::RedlockLateStart { checked: false }),
                pair(ev, kind, Variant::SlowReply { checked: false }),
            ]),
        });
    }
    if kind == BackendKind::Redis {
        out.push(redis_persistence(r, ev));
    }
    if policy.kind == PolicyKind::RetryThenAlert {
        out.push(Mechanism {
            name: "a completion record per run window, checked once the lock is granted".into(),
            step: None,
            in_place: false,
            reason: "a retry granted after the holder finished would run the job again: it must find the window done and stop".into(),
            measured: None,
        });
    }
    if kind != BackendKind::PgXact {
        out.push(Mechanism {
            name: "release and renew only by token".into(),
            step: None,
            in_place: false,
            reason: "a holder whose lock passed on must not free or extend the next holder's"
                .into(),
            // A plain delete and the client's own release, where the lock is one key anyone
            // can delete; the client's own release alone elsewhere.
            measured: pair(ev, kind, Variant::ReleaseAfterExpiry { checked: false }).or_else(
                || {
                    ev.cell(Variant::ReleaseAfterExpiry { checked: true }, kind)
                        .map(describe)
                },
            ),
        });
    }
    out.push(Mechanism {
        name: "the job's processes die with the lock holder".into(),
        step: None,
        in_place: false,
        reason: "a crash frees the lock; work that outlives the process holding it runs unlocked"
            .into(),
        measured: pair(ev, kind, Variant::CrashWorkSurvives),
    });
    out
}

/// A guard on an unguarded database step that the lock's transaction does not cover: no lock stops
/// a rerun after a crash, and a fence stops a stale write only in a database that has seen the
/// newer token (docs/DECISION.md, "a crash then a rerun" and "a fence across databases").
fn rerun_guard(
    s: &StepAnswers,
    r: &Resolved,
    by_fence: bool,
    ev: &Evidence,
    kind: BackendKind,
) -> Mechanism {
    let mut why = vec![format!(
        "a holder that crashes after `{}` leaves it done, and the next holder, correctly alone, runs it again: no lock prevents a rerun",
        s.name
    )];
    let across = by_fence && r.databases > 1;
    if across {
        why.push(format!(
            "and the fence protects only a database that has already seen the newer token: with {} databases a stale holder's write lands on those the new holder has not written to yet",
            r.databases
        ));
    } else if let Some(client) = r.tokenless_client(kind).filter(|_| r.fenced) {
        why.push(format!(
            "and {} gives no fencing token, so the resource's fence has nothing to check: nothing else stops a holder that lost its lock from writing it while the next holder does",
            client.library()
        ));
    } else if !by_fence {
        why.push(
            "and nothing else stops a holder that lost its lock from writing it while the next holder does"
                .to_string(),
        );
    }
    Mechanism {
        name: if across {
            "a guard per operation in each database (a unique constraint on the operation's id), or a resumable checkpoint".into()
        } else {
            "a guard of its own (a unique constraint, a conditional update or a version check), or a resumable checkpoint".into()
        },
        step: Some(s.name.clone()),
        in_place: false,
        reason: why.join(" "),
        measured: if by_fence {
            None
        } else {
            ev.cell(Variant::PauseHeartbeatLong, kind).map(describe)
        },
    }
}

/// Keepalive on the job's own Postgres connection, sized from the crash-recovery budget: never a
/// server-wide setting (docs/DECISION.md, "a vanished holder").
fn session_keepalive(r: &Resolved, ev: &Evidence, kind: BackendKind) -> Mechanism {
    let (idle, interval, count) = keepalive(r.crash_recovery);
    Mechanism {
        name: format!(
            "TCP keepalive on the job's own connection, not server-wide: options='-c tcp_keepalives_idle={idle} -c tcp_keepalives_interval={interval} -c tcp_keepalives_count={count} -c client_connection_check_interval=10s'"
        ),
        step: None,
        in_place: false,
        reason: format!(
            "a holder whose host vanished keeps its session, and the lock, until the server's TCP gives up: about 2 h 11 min with Linux's defaults (7,200 s idle, then 9 probes 75 s apart); these end it within {}{}, and the check interval ends a query still running for a client that is gone",
            format_readable_s(keepalive_bound_s(r.crash_recovery) as f64),
            r.crash_recovery
                .map(|c| format!(", inside the {} allowed", format_readable(c)))
                .unwrap_or_default()
        ),
        measured: vanished_host(ev, kind).or_else(|| {
            ev.cell(Variant::PartitionKeepalive, kind).map(|c| {
                format!(
                    "{}: next grant {} after the partition began",
                    c.label(),
                    c.recovery_p50_s.map_or("-".to_string(), format_readable_s)
                )
            })
        }),
    }
}

/// The lab's vanished-host cells of `kind`, in words ([`describe_vanished`]).
pub(crate) fn vanished_host(ev: &Evidence, kind: BackendKind) -> Option<String> {
    describe_vanished(
        ev.cell(Variant::CrashHostVanished { keepalive: true }, kind),
        ev.cell(Variant::CrashHostVanished { keepalive: false }, kind),
    )
}

/// A vanished host as measured, in words: with the per-connection keepalive (`kept`, Postgres)
/// and then with Linux's defaults, or with the backend as configured; `None` when neither ran.
pub fn describe_vanished(kept: Option<&FaultCell>, defaults: Option<&FaultCell>) -> Option<String> {
    let trials = |n: u32| format!("{n} trial{}", if n == 1 { "" } else { "s" });
    let granted = |c: &FaultCell| match (c.recovery_p50_s, c.recovery_max_s) {
        (Some(p50), Some(max)) if c.contender_timed_out == 0 => format!(
            "the next worker granted {} after the host vanished (longest {}, {})",
            format_readable_s(p50),
            format_readable_s(max),
            trials(c.trials)
        ),
        _ => format!(
            "{} in {} of {}",
            c.not_granted(),
            c.contender_timed_out,
            trials(c.trials)
        ),
    };
    match kept {
        Some(kept) => Some(format!(
            "{} on {}, per-connection keepalive scaled to the lab: {}{}",
            kept.label(),
            kept.backend,
            granted(kept),
            defaults.map_or(String::new(), |d| format!(
                "; with Linux's default keepalive ({}): {}",
                d.label(),
                granted(d)
            ))
        )),
        None => defaults.map(|d| {
            format!(
                "{} on {}, lab TTL {}: {}",
                d.label(),
                d.backend,
                format_readable_s(d.granted_ttl_s),
                granted(d)
            )
        }),
    }
}

/// `lock_timeout` for a job whose locking transaction may take table locks.
fn lock_timeout(job: &JobAnswers, ev: &Evidence) -> Mechanism {
    Mechanism {
        name: "SET LOCAL lock_timeout = '5s' in the job's transaction".into(),
        step: None,
        in_place: false,
        reason: format!(
            "if the transaction alters a table, its ALTER waits for an ACCESS EXCLUSIVE lock and every later query on that table queues behind the wait; lock_timeout makes it fail fast instead. Once granted, that lock is held until COMMIT{}: every read and write of the altered table waits that long",
            ev.ttl(&job.job)
                .map(|t| format!(
                    ", up to the job's P99.9 runtime ({})",
                    format_readable(t.measured_p999)
                ))
                .unwrap_or_default()
        ),
        measured: None,
    }
}

/// Redis persistence for a job decided on Redis, and its data-loss window.
fn redis_persistence(r: &Resolved, ev: &Evidence) -> Mechanism {
    // A job whose double run is absorbed can carry everysec's one-second window.
    let strict = r.double_run.harms();
    let restart = ev.cell(Variant::Restart(Persistence::None), BackendKind::Redis);
    let stalls = restart.is_some_and(|c| c.legitimate_rejected_by_fence.unwrap_or(0) > 0);
    Mechanism {
        name: if strict {
            "Redis persistence: appendonly yes, appendfsync always".into()
        } else {
            "Redis persistence: appendonly yes, appendfsync everysec".into()
        },
        step: None,
        in_place: false,
        reason: format!(
            "without persistence, or with RDB snapshots only, a restart forgets the key and grants the lock again{}; {}",
            if r.fenced {
                ", and the fencing counter restarts from zero, so the resource refuses the new holder's legitimate writes until the counter passes the highest token it saw"
            } else {
                ""
            },
            if strict {
                "appendfsync always writes every acquisition to disk before the reply: no acknowledged lock is lost (data-loss window: none), at one fsync per acquisition"
            } else {
                "appendfsync everysec keeps a lock through a process crash and loses at most the last second of acquisitions on an OS crash or power loss (data-loss window: 1 s), which a job whose double run is absorbed can carry"
            }
        ),
        measured: restart.map(|c| {
            format!(
                "{}{}",
                describe(c),
                if stalls {
                    format!(
                        "; the fence refused the new holder's legitimate writes {} times",
                        c.legitimate_rejected_by_fence.unwrap_or(0)
                    )
                } else {
                    String::new()
                }
            )
        }),
    }
}

fn fence(kind: BackendKind, ev: &Evidence, writes: &str) -> Mechanism {
    Mechanism {
        name: "the fencing token checked by the resource".into(),
        step: None,
        in_place: true,
        reason: format!(
            "{writes} carries the {} ({}); the resource refuses one below the highest it has seen, so a holder that lost its lock cannot write",
            kind.fencing().describe(),
            kind.name()
        ),
        measured: ev
            .cell(Variant::PauseNaive, kind)
            .or_else(|| ev.cell(Variant::PauseHeartbeatLong, kind))
            .map(describe),
    }
}

/// Crash recovery against what the job allows.
pub(crate) fn crash_recovery(
    r: &Resolved,
    ev: &Evidence,
    kind: Option<BackendKind>,
    model: &LockModel,
    ttl: Option<&TtlRecommendation>,
) -> CrashRecovery {
    let allowed = r.crash_recovery.map(|c| c.as_secs_f64());
    let fixed = ttl.map(|t| t.ttl.as_secs_f64());
    let measured = kind.and_then(|k| ev.cell(Variant::CrashKilled, k));
    let vanished = kind.and_then(|k| vanished_host(ev, k));
    let chosen = match model.kind {
        ModelKind::FixedTtl => model.ttl_s,
        ModelKind::HeartbeatLease => model.lease_s,
        // The worst crash is a vanished host, not a killed process: the keepalive decides it.
        ModelKind::Session | ModelKind::Transaction => {
            Some(keepalive_bound_s(r.crash_recovery) as f64)
        }
    };
    let mut notes = Vec::new();
    match (fixed, allowed) {
        (Some(f), Some(a)) if f > a => notes.push(format!(
            "A fixed TTL of {} is also a {} crash-recovery delay, above the {} allowed.",
            format_readable_s(f),
            format_readable_s(f),
            format_readable_s(a)
        )),
        (Some(f), Some(a)) => notes.push(format!(
            "The fixed TTL of {} is within the {} allowed for crash recovery.",
            format_readable_s(f),
            format_readable_s(a)
        )),
        (Some(f), None) => notes.push(format!(
            "A fixed TTL of {} would also block the job that long after a crash; `crash_recovery` is not answered.",
            format_readable_s(f)
        )),
        _ => {}
    }
    notes.push(match model.kind {
        ModelKind::FixedTtl => "The design keeps the fixed TTL.".to_string(),
        ModelKind::HeartbeatLease => match model.lease_s {
            Some(l) => format!(
                "The heartbeat lease frees the lock within {} of a crash.",
                format_readable_s(l)
            ),
            None => "A heartbeat lease frees the lock within one lease of a crash.".to_string(),
        },
        ModelKind::Session | ModelKind::Transaction => format!(
            "The server frees the lock when the holder's session ends: at once when its process dies (the kernel closes the socket), and, when its host vanishes, once the keepalive on the job's own connection gives up: within {} with the settings under Mechanisms (a bound computed from them{}), against about 2 h 11 min with Linux's defaults.",
            format_readable_s(keepalive_bound_s(r.crash_recovery) as f64),
            if vanished.is_some() {
                "; the lab measured the mechanism, below"
            } else {
                "; the lab's vanished-host variant is not in these results"
            }
        ),
    });
    if let Some(v) = &vanished {
        notes.push(format!("Host vanished, measured ({v})."));
    }
    if let Some(c) = measured {
        notes.push(format!(
            "Process killed, measured ({} on {}, lab TTL {}): the next worker was granted {} after the kill (longest {}).",
            c.label(),
            c.backend,
            format_readable_s(c.granted_ttl_s),
            c.recovery_p50_s.map_or("-".to_string(), format_readable_s),
            c.recovery_max_s.map_or("-".to_string(), format_readable_s)
        ));
    }
    CrashRecovery {
        allowed_s: allowed,
        fixed_ttl_s: fixed,
        chosen_s: chosen,
        within: match (chosen, allowed) {
            (Some(c), Some(a)) => Some(c <= a),
            _ => None,
        },
        note: notes.join(" "),
    }
}

/// What the design still does not prevent, why the job can carry it, and who owns it.
pub(crate) fn residual(
    job: &JobAnswers,
    r: &Resolved,
    ev: &Evidence,
    kind: Option<BackendKind>,
    d: &Decision,
) -> Vec<Residual> {
    let (model, recovery, policy) = (&d.lock_model, &d.crash_recovery, &d.failure_policy);
    let team = format!("the {} job's owners", job.job);
    let mut out: Vec<Residual> = d
        .mechanisms
        .iter()
        .filter(|m| !m.in_place && m.step.is_some())
        .map(|m| Residual {
            risk: format!(
                "until `{}` has {}, a rerun after a crash, or a second run that gets in, {}",
                m.step.as_deref().unwrap_or_default(),
                m.name,
                effect(r.double_run)
            ),
            accepted: false,
            why: "adding it is this record's first action".into(),
            owner: team.clone(),
        })
        .collect();
    if model.kind == ModelKind::HeartbeatLease
        && let Some(lease) = lease_residual(job, r, ev, &team)
    {
        out.push(lease);
    }
    if let Some(backend) = backend_residual(job, r, ev, kind, policy) {
        out.push(backend);
    }
    if let Some(library) = library_residual(job, r, ev, kind, model.kind) {
        out.push(library);
    }
    if recovery.within == Some(false) {
        out.push(Residual {
            risk: format!(
                "a crashed holder blocks the job for up to {}, more than the {} allowed",
                recovery.chosen_s.map_or("-".to_string(), format_readable_s),
                recovery
                    .allowed_s
                    .map_or("-".to_string(), format_readable_s)
            ),
            accepted: false,
            why: "shorten the lease or the keepalive, or raise the budget with the job's owners"
                .into(),
            owner: team.clone(),
        });
    }
    out.push(policy_residual(policy, r));
    out
}

/// What a heartbeat lease leaves: a stall longer than what is left of it, priced by `ttl`.
fn lease_residual(job: &JobAnswers, r: &Resolved, ev: &Evidence, team: &str) -> Option<Residual> {
    let t = ev.ttl(&job.job)?;
    let p = t.heartbeat.p_lease_lost_upper95?;
    Some(Residual {
        risk: format!(
            "a stall longer than what is left of the lease lets a second worker in: in at most {} of runs by `ttl` (simulated), about {:.2} times a year at {} runs a year",
            format_chance(p),
            p * job.frequency.runs_per_year,
            format_count(job.frequency.runs_per_year.round() as u64)
        ),
        accepted: true,
        why: if r.double_run.harms() {
            "the fence and the guards refuse what a second worker writes; the lease was sized to keep this below the risk `ttl` was given".into()
        } else {
            format!("a second run {}", effect(r.double_run))
        },
        owner: team.to_string(),
    })
}

/// What the failure policy leaves, and who owns it.
fn policy_residual(policy: &FailurePolicy, r: &Resolved) -> Residual {
    match policy.kind {
    PolicyKind::SkipAndAlert => Residual {
        risk: "a run skipped while the lock cannot be had waits for the next window or a person".into(),
        accepted: true,
        why: format!("a late run can be made up; a second run that {} cannot be undone", effect(r.double_run)),
        owner: "on-call".into(),
    },
    PolicyKind::RetryThenAlert => Residual {
        risk: format!(
            "a run whose lock is still held when the {} budget runs out alerts and waits for a person",
            policy.retry_for_s.map_or("-".to_string(), format_readable_s)
        ),
        accepted: true,
        why: "the budget is what the job's owners said a crash may cost; past it a person decides".into(),
        owner: "on-call".into(),
    },
    PolicyKind::Queue => Residual {
        risk: "a run queued through an outage runs late".into(),
        accepted: true,
        why: format!("a second run {}: lateness is the only cost", effect(r.double_run)),
        owner: "on-call".into(),
    },
    PolicyKind::RunUnlocked => Residual {
        risk: "a run during a lock-server outage may overlap another".into(),
        accepted: true,
        why: "every step is idempotent and a double run is absorbed downstream".into(),
        owner: "on-call".into(),
    },
    }
}

/// What the job's lock library adds on the chosen backend, from its measured cells: when it
/// tells its holder of a lost lock (after the next holder's grant, or never), so that the job
/// stops writing at its own deadline rather than at the library's word. `None` when the job
/// names no library for the chosen backend.
fn library_residual(
    job: &JobAnswers,
    r: &Resolved,
    ev: &Evidence,
    kind: Option<BackendKind>,
    model: ModelKind,
) -> Option<Residual> {
    let team = format!("the {} job's owners", job.job);
    let chosen = kind?;
    let Some(client) = r.client else {
        return unmeasured_own(r.choice.as_ref()?, chosen, team);
    };
    if client.backend() != chosen {
        return Some(passed_over(client, chosen, r.fenced, team, ev));
    }
    let cells = ev.library_cells(client);
    let Some(version) = cells.first().and_then(|c| c.client.as_ref()) else {
        return Some(Residual {
            risk: format!(
                "how {} behaves under faults is not measured in these results",
                client.library()
            ),
            accepted: false,
            why: format!(
                "measure it before relying on it: `lockbench faults --client {client}` (docs/CLIENTS.md)"
            ),
            owner: team,
        });
    };
    let library = format!("{} {}", client.library(), version.version);
    // The latest telling after another holder was granted, and the overlaps never told.
    let late = cells
        .iter()
        .filter_map(|c| {
            let t = c.lost_told.as_ref()?;
            Some((c, t.after_next_grant_max_s.filter(|s| *s > 0.0)?))
        })
        .max_by(|a, b| a.1.total_cmp(&b.1));
    let never: Vec<String> = cells
        .iter()
        .filter(|c| {
            c.lost_told
                .as_ref()
                .is_some_and(|t| t.never_told_overlaps > 0)
        })
        .map(|c| format!("`{}`", c.label()))
        .collect();
    if late.is_none() && never.is_empty() {
        return None;
    }
    let mut risk = format!("{library} tells its holder of a lost lock late or never (lab)");
    if let Some((c, s)) = late {
        risk.push_str(&format!(
            ": up to {} after the next holder was granted in `{}` ({} trials)",
            format_readable_s(s),
            c.label(),
            c.trials
        ));
    }
    if !never.is_empty() {
        risk.push_str(&format!(
            "{} never told in {}",
            if late.is_some() { "; " } else { ": " },
            never.join(", ")
        ));
    }
    let stops_itself = matches!(model, ModelKind::HeartbeatLease);
    Some(Residual {
        risk,
        accepted: stops_itself,
        why: if stops_itself {
            "the job stops writing at the heartbeat's give-up deadline, not at the library's notification: keep it so".into()
        } else {
            "by the library's word another holder may already have written: fence the resource, or bound each write by a deadline of the job's own within the lease, not by the notification".into()
        },
        owner: team,
    })
}

/// A team's own adapter with no cells in the evidence: nothing is known of it, so no verdict
/// leans on it, and the record says what that assumes and how to measure it.
fn unmeasured_own(choice: &ClientChoice, chosen: BackendKind, team: String) -> Option<Residual> {
    let path = choice.argument();
    Some(Residual {
        risk: format!(
            "the job locks with the team's own adapter `{path}`, not measured in these results: this record judges {chosen} as if it handed out {chosen}'s fencing token and renewed as lockbench's client does"
        ),
        accepted: false,
        why: format!(
            "measure it before relying on this record: `lockbench faults --client {path} --backend {chosen}` and `lockbench clients check --backend {chosen} {path}` (docs/CLIENTS.md)"
        ),
        owner: team,
    })
}

/// The shipped adapters on `chosen` that hand out its fencing token with the lock.
pub(crate) fn tokened_on(chosen: BackendKind) -> Vec<lockbench_core::Client> {
    lockbench_core::Client::ALL
        .into_iter()
        .filter(|c| c.backend() == chosen && c.gives_fencing_token())
        .collect()
}

/// A candidate library as the record names it, with what the lab measured through it when it
/// did (its first cell, a paused holder in `lockbench run`).
fn candidate(c: lockbench_core::Client, ev: &Evidence) -> String {
    match ev.library_cells(c).first() {
        Some(cell) => format!(
            "{} (`{c}`; measured through it here, {})",
            c.library(),
            describe(cell)
        ),
        None => format!("{} (`{c}`)", c.library()),
    }
}

/// The job's lock library does not lock on the chosen backend: the move needs a new client,
/// and with a fence, one that hands out the chosen backend's token. A candidate the lab measured
/// is cited with what it did.
fn passed_over(
    client: lockbench_core::Client,
    chosen: BackendKind,
    fenced: bool,
    team: String,
    ev: &Evidence,
) -> Residual {
    let on_chosen = lockbench_core::Client::ALL
        .into_iter()
        .filter(|c| c.backend() == chosen);
    let tokened: Vec<String> = tokened_on(chosen)
        .into_iter()
        .map(|c| candidate(c, ev))
        .collect();
    let measured = tokened_on(chosen)
        .into_iter()
        .any(|c| !ev.library_cells(c).is_empty());
    let shipped: Vec<String> = on_chosen.map(|c| format!("`{c}`")).collect();
    Residual {
        risk: format!(
            "the job locks with {}, which does not lock on {chosen}: the move needs a new lock client, not yet chosen{}",
            client.library(),
            if fenced && measured {
                ""
            } else {
                " or measured"
            }
        ),
        accepted: false,
        why: if fenced {
            format!(
                "choose one that hands out {chosen}'s fencing token with the lock ({}), then measure {} through the fault lab (`lockbench faults --client`)",
                if tokened.is_empty() {
                    "none of lockbench's shipped adapters does".to_string()
                } else {
                    format!("of lockbench's shipped adapters, {}", tokened.join(", "))
                },
                if measured {
                    "the one adopted, as the job calls it,"
                } else {
                    "it"
                }
            )
        } else {
            format!(
                "choose it, then measure it through the fault lab (`lockbench faults --client`{})",
                if shipped.is_empty() {
                    String::new()
                } else {
                    format!("; shipped for {chosen}: {}", shipped.join(", "))
                }
            )
        },
        owner: team,
    }
}

/// The risk the chosen backend itself carries.
fn backend_residual(
    job: &JobAnswers,
    r: &Resolved,
    ev: &Evidence,
    kind: Option<BackendKind>,
    policy: &FailurePolicy,
) -> Option<Residual> {
    let team = format!("the {} job's owners", job.job);
    Some(match kind? {
        BackendKind::Redis => Residual {
            risk: format!(
                "a failover to a replica that lacked the key, or a restart under weaker persistence than prescribed, grants the lock twice{}",
                ev.cell(Variant::Failover { wait: false }, BackendKind::Redis)
                    .or_else(|| ev.cell(Variant::Restart(Persistence::None), BackendKind::Redis))
                    .map(|c| format!(" ({})", describe(c)))
                    .unwrap_or_default()
            ),
            accepted: !r.double_run.harms() || r.fenced,
            why: match (r.double_run.harms(), r.fenced) {
                (false, _) => format!("a second run {}", effect(r.double_run)),
                (true, true) => "the resource checks the fencing token and refuses the stale holder's writes".into(),
                (true, false) => "a second run does harm and nothing refuses it: the resource must check a fencing token first".into(),
            },
            owner: "whoever runs Redis (its persistence and replication settings)".into(),
        },
        BackendKind::PgXact => Residual {
            risk: format!(
                "the transaction stays open for the whole job{}: it holds back vacuum on every table and blocks DDL on the ones it touched",
                ev.ttl(&job.job)
                    .map(|t| format!(" (P99.9 {})", format_readable(t.measured_p999)))
                    .unwrap_or_default()
            ),
            accepted: true,
            why: format!(
                "it runs about {} times a year, in a window the database's operators plan for",
                format_count(job.frequency.runs_per_year.round() as u64)
            ),
            owner: "the database's operators".into(),
        },
        BackendKind::PgSession => {
            let guarded = Exposure::of(job, r.double_run).outside.is_empty();
            Residual {
                risk: "a holder whose connection died keeps working until its next statement on that session fails".into(),
                accepted: guarded,
                why: if guarded {
                    "its database writes fail with the dead connection, and its other steps are idempotent or guarded".into()
                } else {
                    "its calls outside the database need a guard of their own first (above)".into()
                },
                owner: team,
            }
        }
        k @ (BackendKind::Etcd | BackendKind::Zookeeper) => Residual {
            risk: format!(
                "without a quorum {} grants no lock: runs are {}",
                k.name(),
                match policy.kind {
                    PolicyKind::SkipAndAlert | PolicyKind::RetryThenAlert => "alerted and wait",
                    PolicyKind::Queue => "late",
                    PolicyKind::RunUnlocked => "run without it",
                }
            ),
            accepted: true,
            why: format!("a late run can be made up; a second run that {} cannot be undone", effect(r.double_run)),
            owner: format!("whoever runs {}", k.name()),
        },
        _ => return None,
    })
}

/// One row per step.
pub(crate) fn steps(job: &JobAnswers, double_run: DoubleRun) -> Vec<StepRow> {
    job.steps
        .iter()
        .map(|s: &StepAnswers| StepRow {
            step: s.name.clone(),
            target: s.target.name().to_string(),
            idempotent: match s.idempotent {
                Some(true) => "yes",
                Some(false) => "no",
                None => "not answered",
            }
            .to_string(),
            guard: s.guard.map_or("not answered", |g| g.name()).to_string(),
            double_run: if s.idempotent == Some(true) {
                "nothing: twice has the effect of once".to_string()
            } else if let Some(g) = s.guard.filter(|g| *g != Guard::None) {
                format!("refused by its {}", g.name())
            } else {
                match (double_run, s.target) {
                    (DoubleRun::Absorbed, _) => "runs twice; absorbed downstream".to_string(),
                    (DoubleRun::WastedWork, _) => "runs twice; wasted work".to_string(),
                    (DoubleRun::Charges, Target::Api) => "charges twice".to_string(),
                    (_, Target::Db) => "writes twice: corrupts the job's data".to_string(),
                    _ => format!("runs twice: a second run {}", effect(double_run)),
                }
            },
        })
        .collect()
}
