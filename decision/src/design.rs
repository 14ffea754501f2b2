//! The chosen backend made into a design: how the lock lasts, what it needs besides itself, what
//! a worker does when it cannot get it, how long a crash blocks the job, and what is left.

use lockbench_core::records::faults::FaultCell;
use lockbench_core::records::ttl::TtlRecommendation;
use lockbench_core::{
    BackendKind, format_chance, format_count, format_readable, format_readable_s,
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
pub(crate) fn policy(job: &JobAnswers, r: &Resolved, ev: &Evidence) -> FailurePolicy {
    let all_idempotent = job.steps.iter().all(|s| s.idempotent == Some(true));
    let (kind, reason) = if r.double_run.harms() {
        (
            PolicyKind::SkipAndAlert,
            format!(
                "a second run {}: never run without the lock; a missed run waits for the next window or a person, a double run cannot be undone",
                effect(r.double_run)
            ),
        )
    } else if r.double_run == DoubleRun::Absorbed && all_idempotent {
        (
            PolicyKind::RunUnlocked,
            "every step is idempotent and a double run is absorbed: a missed run costs more than an overlap".to_string(),
        )
    } else {
        (
            PolicyKind::Queue,
            format!(
                "a second run {}{}: retry with backoff until the next window rather than miss the run",
                effect(r.double_run),
                if all_idempotent {
                    ""
                } else {
                    ", but not every step is idempotent, so it never runs without the lock"
                }
            ),
        )
    };
    let measured = [
        PolicyKind::SkipAndAlert,
        PolicyKind::Queue,
        PolicyKind::RunUnlocked,
    ]
    .iter()
    .filter_map(|p| {
        let label = p.outage_variant();
        ev.scenario("outage")
            .find(|c| c.label() == label)
            .map(|c| outage_line(*p, c))
    })
    .collect();
    FailurePolicy {
        kind,
        reason,
        measured,
    }
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
        PolicyKind::Queue => format!(
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
fn pair(ev: &Evidence, kind: BackendKind, failure: &str) -> Option<String> {
    let f = ev.cell(failure, kind)?;
    let control = crate::lab::mitigation(failure).and_then(|(_, control)| ev.cell(control, kind));
    Some(match control {
        Some(c) => format!("{}; {}", describe(f), describe(c)),
        None => describe(f),
    })
}

/// Everything the design needs besides the lock.
pub(crate) fn mechanisms(
    job: &JobAnswers,
    r: &Resolved,
    ev: &Evidence,
    kind: Option<BackendKind>,
    model: &LockModel,
) -> Vec<Mechanism> {
    let x = Exposure::of(job, r.double_run);
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
    let Some(kind) = kind else {
        return out;
    };
    let by_fence = crate::rules::by_fence(kind, r);
    let by_transaction = crate::rules::by_transaction(kind, r);
    if !x.inside.is_empty() {
        out.push(if by_transaction {
            Mechanism {
                name: "every write in the locking transaction".into(),
                step: None,
                in_place: true,
                reason: format!(
                    "{} commit or roll back with the lock: a lost lock cannot leave a stale write",
                    names(&x.inside)
                ),
                measured: ev.cell("pool-leak/xact", BackendKind::PgSession).map(describe),
            }
        } else if by_fence {
            fence(kind, ev, &format!("every write of {}", names(&x.inside)))
        } else {
            Mechanism {
                name: "a guard, or the fencing token checked by the resource".into(),
                step: None,
                in_place: false,
                reason: format!(
                    "nothing else stops a holder that lost its lock from writing {} twice: add a unique constraint, a conditional update or a version check, or have the resource refuse a stale token",
                    names(&x.inside)
                ),
                measured: ev.cell("pause/heartbeat-long", kind).map(describe),
            }
        });
    } else if r.fenced && kind.fencing() != lockbench_core::FencingSource::None {
        out.push(fence(kind, ev, "every write"));
    }
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
            reason: "a holder that cannot renew stops before its lease can pass to another worker"
                .into(),
            measured: pair(ev, kind, "pause/naive")
                .or_else(|| pair(ev, kind, "partition/no-give-up")),
        }),
        ModelKind::Session => {
            out.push(Mechanism {
                name: "a connection of its own for the whole job; pg_advisory_unlock_all() (or DISCARD ALL) before it goes back to a pool".into(),
                step: None,
                in_place: false,
                reason: "the lock belongs to the session and is re-entrant: a pool that lends the session while the job runs lends the lock".into(),
                measured: pair(ev, kind, "pool-leak/no-reset"),
            });
            out.push(Mechanism {
                name: "a server TCP keepalive of seconds (tcp_keepalives_idle 1, interval 1, count 2)".into(),
                step: None,
                in_place: false,
                reason: "a holder whose machine vanished keeps its session, and the lock, for the system's default of two hours".into(),
                measured: ev.cell("partition/keepalive", kind).map(|c| {
                    format!(
                        "{}: next grant {} after the partition began",
                        c.label(),
                        c.recovery_p50_s.map_or("-".to_string(), format_readable_s)
                    )
                }),
            });
        }
        ModelKind::Transaction | ModelKind::FixedTtl => {}
    }
    if kind == BackendKind::Redlock {
        out.push(Mechanism {
            name: "check the validity left before the critical section".into(),
            step: None,
            in_place: false,
            reason: "a slow acquisition can return with its keys about to expire".into(),
            measured: pair(ev, kind, "redlock/late-start"),
        });
    }
    if kind != BackendKind::PgXact {
        out.push(Mechanism {
            name: "release and renew only by token".into(),
            step: None,
            in_place: false,
            reason: "a holder whose lock passed on must not free or extend the next holder's"
                .into(),
            measured: None,
        });
    }
    out.push(Mechanism {
        name: "the job's processes die with the lock holder".into(),
        step: None,
        in_place: false,
        reason: "a crash frees the lock; work that outlives the process holding it runs unlocked"
            .into(),
        measured: pair(ev, kind, "crash/work-survives"),
    });
    out
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
            .cell("pause/naive", kind)
            .or_else(|| ev.cell("pause/heartbeat-long", kind))
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
    let measured = kind.and_then(|k| ev.cell("crash/holder-killed", k));
    let chosen = match model.kind {
        ModelKind::FixedTtl => model.ttl_s,
        ModelKind::HeartbeatLease => model.lease_s,
        ModelKind::Session | ModelKind::Transaction => measured.and_then(|c| c.recovery_max_s),
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
        ModelKind::Session | ModelKind::Transaction => {
            "The server frees the lock when the holder's session ends: at once when its process dies, within the TCP keepalive when its machine vanishes.".to_string()
        }
    });
    if let Some(c) = measured {
        notes.push(format!(
            "Measured ({} on {}, lab TTL {}): the next worker was granted {} after the kill (longest {}).",
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

/// What the design still does not prevent.
pub(crate) fn residual(
    job: &JobAnswers,
    r: &Resolved,
    ev: &Evidence,
    kind: Option<BackendKind>,
    d: &Decision,
) -> Vec<Residual> {
    let (model, mechanisms, recovery, policy) = (
        &d.lock_model,
        &d.mechanisms,
        &d.crash_recovery,
        &d.failure_policy,
    );
    let mut out = Vec::new();
    let team = format!("the {} job's owners", job.job);
    for m in mechanisms
        .iter()
        .filter(|m| !m.in_place && m.step.is_some())
    {
        out.push(Residual {
            risk: format!(
                "until `{}` has {}, a second run that gets in {}",
                m.step.as_deref().unwrap_or_default(),
                m.name,
                effect(r.double_run)
            ),
            owner: team.clone(),
        });
    }
    if model.kind == ModelKind::HeartbeatLease
        && let Some(t) = ev.ttl(&job.job)
        && let Some(p) = t.heartbeat.p_lease_lost_upper95
    {
        out.push(Residual {
            risk: format!(
                "a stall longer than what is left of the lease lets a second worker in: at most {} of runs by `ttl`{}",
                format_chance(p),
                if r.double_run.harms() {
                    ", for the guards or the fence to refuse"
                } else {
                    ""
                }
            ),
            owner: team.clone(),
        });
    }
    match kind {
        Some(BackendKind::Redis) => out.push(Residual {
            risk: format!(
                "a Redis restart without appendfsync always, or a failover to a replica that lacked the key, grants the lock twice{}",
                ev.cell("restart/no-persistence", BackendKind::Redis)
                    .or_else(|| ev.cell("failover/no-wait", BackendKind::Redis))
                    .map(|c| format!(" ({})", describe(c)))
                    .unwrap_or_default()
            ),
            owner: "whoever runs Redis (its persistence and replication settings)".into(),
        }),
        Some(BackendKind::PgXact) => out.push(Residual {
            risk: format!(
                "the transaction stays open for the whole job{}: it holds back vacuum on every table and blocks DDL on the ones it touched",
                ev.ttl(&job.job)
                    .map(|t| format!(" (P99.9 {})", format_readable(t.measured_p999)))
                    .unwrap_or_default()
            ),
            owner: "the database's operators".into(),
        }),
        Some(BackendKind::PgSession) => out.push(Residual {
            risk: "a holder whose connection died keeps working until its next check of the session".into(),
            owner: team.clone(),
        }),
        Some(k @ (BackendKind::Etcd | BackendKind::Zookeeper)) => out.push(Residual {
            risk: format!("without a quorum {} grants no lock: runs are {}", k.name(), match policy.kind {
                PolicyKind::SkipAndAlert => "skipped and alerted",
                PolicyKind::Queue => "late",
                PolicyKind::RunUnlocked => "run without it",
            }),
            owner: format!("whoever runs {}", k.name()),
        }),
        _ => {}
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
            owner: team.clone(),
        });
    }
    out.push(Residual {
        risk: match policy.kind {
            PolicyKind::SkipAndAlert => {
                "a run skipped while the lock server is unreachable waits for the next window or a person".into()
            }
            PolicyKind::Queue => "a run queued through an outage runs late".into(),
            PolicyKind::RunUnlocked => {
                "a run during a lock-server outage may overlap another (absorbed by design)".into()
            }
        },
        owner: "on-call".into(),
    });
    out
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
