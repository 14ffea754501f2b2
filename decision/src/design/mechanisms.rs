//! Which mechanisms the design needs besides the lock: the steps' own guards, what protects the
//! database writes, what the lock model needs, and what the backend and the failure policy need.
//! The rules pick each [`MechanismKind`] and the measurement that shows it working; what the record
//! says of each is `crate::mechanism`'s.

use lockbench_core::fault::{Persistence, PoolMode, Variant};
use lockbench_core::{BackendKind, FencingSource, format_count};
use lockbench_workloads::{Guard, JobAnswers, StepAnswers};

use crate::answers::{Exposure, Resolved};
use crate::evidence::{Evidence, describe};
use crate::mechanism::{Mechanism, MechanismKind};
use crate::record::{FailurePolicy, LockModel, ModelKind, PolicyKind};

use super::recovery::keepalive;

/// A mechanism to add (not in place), on no step.
fn add(kind: MechanismKind, measured: Option<String>) -> Mechanism {
    Mechanism {
        kind,
        step: None,
        in_place: false,
        measured,
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

/// Everything the design needs besides the lock.
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
    out.extend(backend_mechanisms(ev, kind, r, model, policy));
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
            kind: MechanismKind::KeepGuard {
                guard,
                target: s.target,
            },
            step: Some(s.name.clone()),
            in_place: true,
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
            kind: MechanismKind::OwnGuard { target: s.target },
            step: Some(s.name.clone()),
            in_place: false,
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
            && kind.fencing() != FencingSource::None
            && r.tokenless_client(kind).is_none()
        {
            vec![fence(kind, ev, Vec::new())]
        } else {
            Vec::new()
        };
    }
    if crate::rules::by_transaction(kind, r) {
        return vec![Mechanism {
            kind: MechanismKind::WritesInTransaction {
                steps: names(&x.inside),
            },
            step: None,
            in_place: true,
            measured: ev
                .cell(Variant::PoolLeak(PoolMode::Xact), BackendKind::PgSession)
                .map(describe),
        }];
    }
    let mut out = Vec::new();
    if by_fence {
        out.push(fence(kind, ev, names(&x.inside)));
    }
    for s in &x.inside {
        out.push(rerun_guard(s, r, by_fence, ev, kind));
    }
    out
}

fn names(steps: &[&StepAnswers]) -> Vec<String> {
    steps.iter().map(|s| s.name.clone()).collect()
}

/// What the lock model needs: a heartbeat's renewal and give-up deadline, or a session's own
/// connection, its keepalive and (a transaction that alters a table) its table locks first.
fn model_mechanisms(
    job: &JobAnswers,
    r: &Resolved,
    ev: &Evidence,
    kind: BackendKind,
    model: &LockModel,
) -> Vec<Mechanism> {
    let mut out = Vec::new();
    match model.kind {
        ModelKind::HeartbeatLease => out.push(add(
            MechanismKind::Heartbeat {
                session: kind == BackendKind::Zookeeper,
                renew_every_s: model.renew_every_s,
                give_up_after_s: model.give_up_after_s,
            },
            joined([
                pair(ev, kind, Variant::Overrun { heartbeat: false }),
                pair(ev, kind, Variant::PauseNaive)
                    .or_else(|| pair(ev, kind, Variant::PartitionNoGiveUp)),
            ]),
        )),
        ModelKind::Session | ModelKind::Transaction => {
            if model.kind == ModelKind::Session {
                out.push(add(
                    MechanismKind::OwnConnection,
                    pair(ev, kind, Variant::PoolLeak(PoolMode::NoReset)),
                ));
            }
            out.push(session_keepalive(r, ev, kind));
            if model.kind == ModelKind::Transaction {
                out.extend(table_locks_first(job, r, ev));
            }
        }
        ModelKind::FixedTtl => {}
    }
    out
}

/// What the backend and the failure policy need: Redlock's and Redis's validity check, Redis's
/// persistence, a completion record for a retry, token-checked release where the lock has a
/// token, and processes that die with the holder.
fn backend_mechanisms(
    ev: &Evidence,
    kind: BackendKind,
    r: &Resolved,
    model: &LockModel,
    policy: &FailurePolicy,
) -> Vec<Mechanism> {
    let mut out = Vec::new();
    if matches!(kind, BackendKind::Redlock | BackendKind::Redis) {
        out.push(add(
            MechanismKind::ValidityCheck,
            joined([
                pair(ev, kind, Variant::RedlockLateStart { checked: false }),
                pair(ev, kind, Variant::SlowReply { checked: false }),
            ]),
        ));
    }
    if kind == BackendKind::Redis {
        out.push(redis_persistence(r, ev));
    }
    if policy.kind == PolicyKind::RetryThenAlert {
        out.push(add(MechanismKind::CompletionRecord, None));
    }
    // A session or a transaction lock is released by its own session, and nothing renews it: it
    // has no token to release or renew by.
    if matches!(model.kind, ModelKind::FixedTtl | ModelKind::HeartbeatLease) {
        out.push(add(
            MechanismKind::TokenRelease {
                backend: kind,
                // ZooKeeper's session pings are the renewal: no token to renew by.
                renew: model.kind == ModelKind::HeartbeatLease && kind != BackendKind::Zookeeper,
            },
            // A plain delete and the client's own release, where the lock is one key anyone
            // can delete; the client's own release alone elsewhere.
            pair(ev, kind, Variant::ReleaseAfterExpiry { checked: false }).or_else(|| {
                ev.cell(Variant::ReleaseAfterExpiry { checked: true }, kind)
                    .map(describe)
            }),
        ));
    }
    out.push(add(
        MechanismKind::DieWithHolder,
        pair(ev, kind, Variant::CrashWorkSurvives),
    ));
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
    Mechanism {
        kind: MechanismKind::RerunGuard {
            across_databases: (by_fence && r.databases > 1).then_some(r.databases),
            tokenless_client: r.tokenless_client(kind).filter(|_| r.fenced),
            fenced: by_fence,
        },
        step: Some(s.name.clone()),
        in_place: false,
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
    let (idle_s, interval_s, count) = keepalive(r.crash_recovery);
    add(
        MechanismKind::Keepalive {
            idle_s,
            interval_s,
            count,
            budget_s: r.crash_recovery.map(|c| c.as_secs_f64()),
        },
        super::recovery::vanished_host(ev, kind).or_else(|| {
            ev.cell(Variant::PartitionKeepalive, kind).map(|c| {
                format!(
                    "{}: next grant {} after the partition began",
                    c.label(),
                    c.recovery_p50_s
                        .map_or("-".to_string(), lockbench_core::format_readable_s)
                )
            })
        }),
    )
}

/// `lock_timeout` on each attempt at an altered table's lock, for a job whose locking
/// transaction alters a table (its `alters_table` steps): `None` for one that alters none.
fn table_locks_first(job: &JobAnswers, r: &Resolved, ev: &Evidence) -> Option<Mechanism> {
    let steps: Vec<String> = job
        .steps
        .iter()
        .filter(|s| s.alters_table)
        .map(|s| s.name.clone())
        .collect();
    (!steps.is_empty()).then(|| {
        add(
            MechanismKind::TableLocksFirst {
                lock_timeout_s: 5.0,
                steps,
                retry_for_s: r.crash_recovery.map(|c| c.as_secs_f64()),
                // A P99.9 from too few replays is no figure to cite.
                held_p999_s: ev
                    .ttl(&job.job)
                    .filter(|t| t.p999_reliable())
                    .map(|t| t.measured_p999.as_secs_f64()),
            },
            None,
        )
    })
}

/// Redis persistence for a job decided on Redis: a job whose double run does harm cannot carry
/// everysec's one-second window.
fn redis_persistence(r: &Resolved, ev: &Evidence) -> Mechanism {
    let restart = ev.cell(Variant::Restart(Persistence::None), BackendKind::Redis);
    let refused = restart.and_then(|c| c.legitimate_rejected_by_fence.filter(|n| *n > 0));
    add(
        MechanismKind::RedisPersistence {
            always: r.double_run.harms(),
            fenced: r.fenced,
        },
        restart.map(|c| {
            format!(
                "{}{}",
                describe(c),
                refused.map_or(String::new(), |n| format!(
                    "; the fence refused the new holder's legitimate writes {n} times"
                ))
            )
        }),
    )
}

/// The resource's fence on the writes of `steps` (every write when empty), in place: the answers
/// say the resource checks it.
fn fence(kind: BackendKind, ev: &Evidence, steps: Vec<String>) -> Mechanism {
    Mechanism {
        kind: MechanismKind::FencingToken {
            backend: kind,
            steps,
        },
        step: None,
        in_place: true,
        measured: ev
            .cell(Variant::PauseNaive, kind)
            .or_else(|| ev.cell(Variant::PauseHeartbeatLong, kind))
            .map(describe),
    }
}
