//! The decision rules on a table of answer combinations: each row is a job a team could have, the
//! backend, lock model and failure policy the rules must give it, and the mechanisms it must be
//! told to keep or add. Rows without evidence test the rules from how each backend locks; the rows
//! after them give fault-lab cells and check that a measurement wins over a rule.

use lockbench_core::ClientChoice;
use std::path::PathBuf;
use std::time::Duration;

use lockbench_core::Service;
use lockbench_core::records::faults::FaultCell;
use lockbench_decision::{
    Decision, Evidence, FactBasis, ModelKind, PolicyKind, Status, VerdictKind, decide,
};
use lockbench_workloads::{
    DecisionAnswers, DoubleRun, Frequency, Guard, JobAnswers, PostgresVia, StepAnswers, Target,
};

/// A step: name, target, idempotent, guard.
type S = (&'static str, Target, Option<bool>, Option<Guard>);

fn job(d: DecisionAnswers, steps: &[S]) -> JobAnswers {
    JobAnswers {
        job: "job".into(),
        spec: PathBuf::from("job.toml"),
        decision: Some(d),
        steps: steps
            .iter()
            .map(|(name, target, idempotent, guard)| StepAnswers {
                name: name.to_string(),
                target: *target,
                idempotent: *idempotent,
                guard: *guard,
                alters_table: false,
            })
            .collect(),
        frequency: Frequency::of_workload(Some("@monthly"), None).unwrap(),
        target_volume: Some(10),
    }
}

fn answers(
    double_run: DoubleRun,
    already_runs: &[Service],
    databases: u32,
    one_transaction: bool,
    fenced: bool,
) -> DecisionAnswers {
    DecisionAnswers {
        double_run: Some(double_run),
        already_runs: Some(already_runs.to_vec()),
        databases: Some(databases),
        one_transaction: Some(one_transaction),
        fenced: Some(fenced),
        crash_recovery: Some(Duration::from_secs(900)),
        postgres_via: Some(PostgresVia::Direct),
        postgres_standby: Some(true),
        client: None,
    }
}

const IDEMPOTENT_DB: S = ("write", Target::Db, Some(true), None);
const UNGUARDED_DB: S = ("write", Target::Db, Some(false), Some(Guard::None));
const GUARDED_CHARGE: S = (
    "charge",
    Target::Api,
    Some(false),
    Some(Guard::IdempotencyKey),
);
const UNGUARDED_CHARGE: S = ("charge", Target::Api, Some(false), Some(Guard::None));
const CONDITIONAL_DB: S = (
    "update",
    Target::Db,
    Some(false),
    Some(Guard::ConditionalUpdate),
);

fn verdict(d: &Decision, backend: &str) -> VerdictKind {
    d.alternatives
        .iter()
        .find(|v| v.backend.name() == backend)
        .map(|v| v.verdict)
        .unwrap_or_else(|| panic!("{backend} has no verdict"))
}

fn fact(d: &Decision, backend: &str) -> String {
    d.alternatives
        .iter()
        .find(|v| v.backend.name() == backend)
        .map(|v| v.fact.clone())
        .unwrap_or_default()
}

/// `backend`'s deciding fact holds `needle`.
fn assert_fact(d: &Decision, backend: &str, needle: &str) {
    let fact = fact(d, backend);
    assert!(
        fact.contains(needle),
        "{backend}: {fact:?} lacks {needle:?}"
    );
}

fn mechanism<'a>(d: &'a Decision, name: &str) -> Option<&'a lockbench_decision::Mechanism> {
    d.mechanisms.iter().find(|m| m.name().contains(name))
}

struct Row {
    what: &'static str,
    job: JobAnswers,
    backend: &'static str,
    model: ModelKind,
    policy: PolicyKind,
    correctness: bool,
}

fn rows() -> Vec<Row> {
    use DoubleRun::*;
    use Service::*;
    vec![
        Row {
            what: "a cron trigger that may fire twice, on Redis",
            job: job(
                answers(Absorbed, &[Redis], 1, false, false),
                &[IDEMPOTENT_DB],
            ),
            backend: "redis",
            model: ModelKind::HeartbeatLease,
            policy: PolicyKind::RunUnlocked,
            correctness: false,
        },
        Row {
            what: "wasted work on Redis only",
            job: job(
                answers(WastedWork, &[Redis], 1, false, false),
                &[UNGUARDED_DB],
            ),
            backend: "redis",
            model: ModelKind::HeartbeatLease,
            policy: PolicyKind::Queue,
            correctness: false,
        },
        Row {
            what: "absorbed with every step idempotent, nothing run yet",
            job: job(answers(Absorbed, &[], 1, false, false), &[IDEMPOTENT_DB]),
            backend: "redis",
            model: ModelKind::HeartbeatLease,
            policy: PolicyKind::RunUnlocked,
            correctness: false,
        },
        Row {
            what: "charges on Postgres with a guarded charge (billing)",
            job: job(
                answers(Charges, &[Postgres], 1, false, false),
                &[
                    ("read", Target::Db, Some(true), None),
                    GUARDED_CHARGE,
                    CONDITIONAL_DB,
                ],
            ),
            backend: "pg-session",
            model: ModelKind::Session,
            policy: PolicyKind::RetryThenAlert,
            correctness: false,
        },
        Row {
            what: "charges with no guard and only Redis",
            job: job(
                answers(Charges, &[Redis], 1, false, false),
                &[UNGUARDED_CHARGE],
            ),
            backend: "redis",
            model: ModelKind::HeartbeatLease,
            policy: PolicyKind::SkipAndAlert,
            correctness: false,
        },
        Row {
            what: "corrupts across 3 databases, fenced (the ledger)",
            job: job(
                answers(Corrupts, &[Postgres], 3, false, true),
                &[UNGUARDED_DB],
            ),
            backend: "etcd",
            model: ModelKind::HeartbeatLease,
            policy: PolicyKind::RetryThenAlert,
            correctness: true,
        },
        Row {
            what: "one transaction on Postgres (the migration)",
            job: job(
                answers(Corrupts, &[Postgres], 1, true, false),
                &[UNGUARDED_DB],
            ),
            backend: "pg-xact",
            model: ModelKind::Transaction,
            policy: PolicyKind::RetryThenAlert,
            correctness: true,
        },
        Row {
            what: "corrupts with etcd already run",
            job: job(
                answers(Corrupts, &[Etcd, Redis], 2, false, true),
                &[UNGUARDED_DB],
            ),
            backend: "etcd",
            model: ModelKind::HeartbeatLease,
            policy: PolicyKind::RetryThenAlert,
            correctness: true,
        },
        Row {
            what: "corrupts on one Postgres, fenced, several transactions",
            job: job(
                answers(Corrupts, &[Postgres], 1, false, true),
                &[UNGUARDED_DB],
            ),
            backend: "pg-session",
            model: ModelKind::Session,
            policy: PolicyKind::RetryThenAlert,
            correctness: true,
        },
        Row {
            what: "corrupts on one Postgres with no fence and no transaction",
            job: job(
                answers(Corrupts, &[Postgres], 1, false, false),
                &[UNGUARDED_DB],
            ),
            backend: "pg-session",
            model: ModelKind::Session,
            policy: PolicyKind::RetryThenAlert,
            correctness: true,
        },
        Row {
            what: "an event pipeline, idempotent downstream, fenced, on Redis",
            job: job(
                answers(Absorbed, &[Redis], 1, false, true),
                &[IDEMPOTENT_DB],
            ),
            backend: "redis",
            model: ModelKind::HeartbeatLease,
            policy: PolicyKind::RunUnlocked,
            correctness: false,
        },
        Row {
            what: "wasted work across 2 databases, Postgres only",
            job: job(
                answers(WastedWork, &[Postgres], 2, false, false),
                &[UNGUARDED_DB],
            ),
            backend: "redis",
            model: ModelKind::HeartbeatLease,
            policy: PolicyKind::Queue,
            correctness: false,
        },
        Row {
            what: "wasted work with ZooKeeper already run",
            job: job(
                answers(WastedWork, &[Zookeeper], 1, false, false),
                &[UNGUARDED_DB],
            ),
            backend: "zookeeper",
            model: ModelKind::HeartbeatLease,
            policy: PolicyKind::Queue,
            correctness: false,
        },
        Row {
            what: "billing through a transaction-mode pooler: never a session lock there",
            job: job(
                DecisionAnswers {
                    postgres_via: Some(PostgresVia::TransactionPooler),
                    ..answers(Charges, &[Postgres], 1, false, false)
                },
                &[
                    ("read", Target::Db, Some(true), None),
                    GUARDED_CHARGE,
                    CONDITIONAL_DB,
                ],
            ),
            backend: "redis",
            model: ModelKind::HeartbeatLease,
            policy: PolicyKind::SkipAndAlert,
            correctness: false,
        },
        Row {
            what: "the migration, one transaction, through a transaction-mode pooler",
            job: job(
                DecisionAnswers {
                    postgres_via: Some(PostgresVia::TransactionPooler),
                    ..answers(Corrupts, &[Postgres], 1, true, false)
                },
                &[UNGUARDED_DB],
            ),
            backend: "pg-xact",
            model: ModelKind::Transaction,
            policy: PolicyKind::RetryThenAlert,
            correctness: true,
        },
        Row {
            what: "corrupts, nothing run yet, fenced",
            job: job(answers(Corrupts, &[], 1, false, true), &[UNGUARDED_DB]),
            backend: "pg-session",
            model: ModelKind::Session,
            policy: PolicyKind::RetryThenAlert,
            correctness: true,
        },
    ]
}

#[test]
fn every_row_of_the_table_gets_its_decision() {
    let rows = rows();
    assert!(rows.len() >= 12);
    for row in rows {
        let d = decide(&row.job, &Evidence::default());
        let got = (
            d.backend.map(|b| b.name()),
            d.lock_model.kind,
            d.failure_policy.kind,
            d.role.correctness,
        );
        assert_eq!(
            got,
            (Some(row.backend), row.model, row.policy, row.correctness),
            "{}: {:#?}",
            row.what,
            d.alternatives
        );
        // A risk not acceptable yet blocks the decision on the action that removes it.
        let blocked = d.residual.iter().any(|r| !r.accepted);
        assert_eq!(
            d.status,
            if blocked {
                Status::Blocked
            } else {
                Status::Proposed
            },
            "{}",
            row.what
        );
        assert_eq!(
            blocked,
            d.actions.iter().any(|a| a.blocking),
            "{}: {:#?}",
            row.what,
            d.actions
        );
        assert!(
            d.basis.starts_with("from how each backend locks"),
            "{}",
            row.what
        );
        assert_eq!(
            verdict(&d, row.backend),
            VerdictKind::Chosen,
            "{}",
            row.what
        );
        assert_eq!(verdict(&d, "memory"), VerdictKind::Rejected, "{}", row.what);
        for v in &d.alternatives {
            assert!(
                !v.fact.is_empty(),
                "{}: {} has no fact",
                row.what,
                v.backend
            );
            assert!(
                v.fact.len() < 260,
                "{}: {} says too much: {}",
                row.what,
                v.backend,
                v.fact
            );
        }
        // Never run without the lock when a step is not idempotent.
        if row.job.steps.iter().any(|s| s.idempotent != Some(true)) {
            assert_ne!(
                d.failure_policy.kind,
                PolicyKind::RunUnlocked,
                "{}",
                row.what
            );
        }
    }
}

#[test]
fn each_rejection_names_the_fact_that_decides_it() {
    let ledger = decide(
        &job(
            answers(DoubleRun::Corrupts, &[Service::Postgres], 3, false, true),
            &[UNGUARDED_DB],
        ),
        &Evidence::default(),
    );
    assert_fact(&ledger, "pg-session", "3 databases");
    assert_fact(&ledger, "redis", "asynchronous");
    assert_fact(&ledger, "redlock", "fencing token");
    assert!(
        mechanism(&ledger, "fencing token checked by the resource").is_some_and(|m| m.in_place)
    );

    let billing = decide(
        &job(
            answers(DoubleRun::Charges, &[Service::Postgres], 1, false, false),
            &[GUARDED_CHARGE, CONDITIONAL_DB],
        ),
        &Evidence::default(),
    );
    assert_fact(&billing, "pg-xact", "`charge` calls an API");
    // Not the correctness mechanism, so heavier backends are rejected for what they cost.
    assert_eq!(verdict(&billing, "etcd"), VerdictKind::Rejected);
    assert_fact(
        &billing,
        "etcd",
        "more infrastructure than `charges` calls for",
    );
    assert!(mechanism(&billing, "keep the idempotency-key").is_some_and(|m| m.in_place));
    assert!(mechanism(&billing, "pg_advisory_unlock_all").is_some());

    let unguarded = decide(
        &job(
            answers(DoubleRun::Charges, &[Service::Redis], 1, false, false),
            &[UNGUARDED_CHARGE],
        ),
        &Evidence::default(),
    );
    let key = mechanism(&unguarded, "an idempotency key").expect("a key on the charge");
    assert!(!key.in_place);
    assert_eq!(key.step.as_deref(), Some("charge"));
    assert!(
        unguarded
            .residual
            .iter()
            .any(|r| r.risk.contains("until `charge` has an idempotency key")),
        "{:#?}",
        unguarded.residual
    );

    let migration = decide(
        &job(
            answers(DoubleRun::Corrupts, &[Service::Postgres], 1, true, false),
            &[UNGUARDED_DB],
        ),
        &Evidence::default(),
    );
    assert_fact(&migration, "pg-session", "leaves `write` unprotected");
}

fn cell(label: &str, backend: &str, overlapped: u32, expected: &str) -> FaultCell {
    let variant = lockbench_core::Variant::parse_label(label).unwrap();
    FaultCell {
        scenario: variant.scenario(),
        variant,
        backend: lockbench_core::BackendId::parse(backend).unwrap(),
        client: None,
        injected: String::new(),
        expected: expected.into(),
        fencing: "sequence".into(),
        granted_ttl_s: 1.0,
        trials: 2,
        trials_with_overlap: overlapped,
        overlap_p50_s: (overlapped > 0).then_some(0.5),
        overlap_max_s: (overlapped > 0).then_some(0.6),
        stale_writes: u64::from(overlapped) * 3,
        stale_rejected_by_fence: Some(0),
        legitimate_rejected_by_fence: Some(0),
        recovery_p50_s: Some(0.02),
        recovery_max_s: Some(0.03),
        contender_timed_out: 0,
        not_granted_within_s: None,
        idle_session_advisory_locks_max: None,
        lost_told: None,
        new_leader_p50_s: None,
        new_leader_max_s: None,
        trials_ended_before_fault: 0,
    }
}

#[test]
fn a_measured_overlap_where_the_design_predicts_none_overrules_the_rule() {
    let fenced_postgres = job(
        answers(DoubleRun::Corrupts, &[Service::Postgres], 1, false, true),
        &[UNGUARDED_DB],
    );
    assert_eq!(
        decide(&fenced_postgres, &Evidence::default()).backend,
        Some(lockbench_core::BackendKind::PgSession)
    );
    let evidence = Evidence {
        cells: vec![
            cell("pause/naive", "pg-session", 1, "no overlap"),
            cell("crash/holder-killed", "pg-session", 0, "no overlap"),
        ],
        ..Evidence::default()
    };
    let d = decide(&fenced_postgres, &evidence);
    assert_eq!(
        d.backend.map(|b| b.name()),
        Some("etcd"),
        "{:#?}",
        d.alternatives
    );
    let pg = d
        .alternatives
        .iter()
        .find(|v| v.backend == lockbench_core::BackendKind::PgSession)
        .unwrap();
    assert_eq!(pg.verdict, VerdictKind::Rejected);
    assert_eq!(pg.basis, FactBasis::Measured);
    assert!(pg.fact.contains("the measurement wins"), "{}", pg.fact);
    assert_eq!(pg.overlapped_under, vec!["pause/naive".to_string()]);
    assert_eq!(pg.crash_recovery_s, Some(0.03));
    assert_eq!(d.overruled.len(), 1, "{:?}", d.overruled);
    assert!(
        d.basis.starts_with("measured: 2 fault-lab cells"),
        "{}",
        d.basis
    );
}

#[test]
fn a_measured_failure_is_cited_where_it_decides() {
    let ledger = job(
        answers(DoubleRun::Corrupts, &[Service::Postgres], 3, false, true),
        &[UNGUARDED_DB],
    );
    let evidence = Evidence {
        cells: vec![
            cell("restart/no-persistence", "redis", 2, "overlap"),
            // An expected overlap that the design's heartbeat prevents does not reject etcd.
            cell("pause/naive", "etcd", 2, "overlap"),
        ],
        ..Evidence::default()
    };
    let d = decide(&ledger, &evidence);
    assert_eq!(d.backend.map(|b| b.name()), Some("etcd"));
    let redis = d
        .alternatives
        .iter()
        .find(|v| v.backend == lockbench_core::BackendKind::Redis)
        .unwrap();
    assert_eq!(redis.basis, FactBasis::Measured);
    assert!(
        redis
            .fact
            .starts_with("restart/no-persistence (lab TTL 1.00 s): overlap in 2/2 trials (up to 600 ms), 6 stale writes, fence refused 0 of 6"),
        "{}",
        redis.fact
    );
}

#[test]
fn missing_answers_are_listed_with_what_each_would_change() {
    let mut j = job(
        answers(DoubleRun::Corrupts, &[Service::Postgres], 1, false, true),
        &[("write", Target::Db, None, None)],
    );
    j.decision.as_mut().unwrap().already_runs = None;
    let d = decide(&j, &Evidence::default());
    // The unanswered step may need a guard: blocked on it, whatever else is assumed.
    assert_eq!(d.status, Status::Blocked);
    let guarded = lockbench_decision::decide_assuming(
        &j,
        &Evidence::default(),
        &[lockbench_decision::Assumption::Guard {
            step: "write".into(),
        }],
    )
    .unwrap();
    assert_eq!(guarded.status, Status::Assumed);
    let runs = d
        .missing
        .iter()
        .find(|m| m.field == "decision.already_runs")
        .expect("already_runs listed");
    assert!(
        runs.would_change
            .contains("already_runs = [\"etcd\"]: etcd"),
        "{}",
        runs.would_change
    );
    assert!(d.missing.iter().any(|m| m.field.starts_with("steps.")));

    let none = JobAnswers {
        decision: None,
        ..j
    };
    let d = decide(&none, &Evidence::default());
    assert_eq!(d.status, Status::Undecided);
    let double_run = d
        .missing
        .iter()
        .find(|m| m.field == "decision.double_run")
        .expect("double_run listed");
    assert!(
        double_run
            .would_change
            .contains("double_run = absorbed: redis"),
        "{}",
        double_run.would_change
    );
    assert_eq!(d.missing.len(), 9, "{:#?}", d.missing);
    let standby = d
        .missing
        .iter()
        .find(|m| m.field == "decision.postgres_standby")
        .expect("postgres_standby listed");
    assert!(standby.assumed.starts_with("true"), "{standby:?}");
    assert!(
        standby
            .would_change
            .starts_with("postgres_standby = false: "),
        "{standby:?}"
    );
    let via = d
        .missing
        .iter()
        .find(|m| m.field == "decision.postgres_via")
        .expect("postgres_via listed");
    assert!(via.assumed.starts_with("direct"), "{via:?}");
    assert!(
        via.would_change
            .starts_with("postgres_via = \"transaction-pooler\": "),
        "{via:?}"
    );
}

/// A job across several databases cannot be one transaction: the missing answer says so instead
/// of listing no change at all.
#[test]
fn a_missing_one_transaction_across_databases_says_why_nothing_changes() {
    let mut j = job(
        answers(DoubleRun::Corrupts, &[Service::Postgres], 3, false, true),
        &[UNGUARDED_DB],
    );
    j.decision.as_mut().unwrap().one_transaction = None;
    let d = decide(&j, &Evidence::default());
    let one = d
        .missing
        .iter()
        .find(|m| m.field == "decision.one_transaction")
        .expect("one_transaction listed");
    assert_eq!(
        one.would_change,
        "nothing: one_transaction = true cannot hold for a job that writes to 3 databases"
    );
}

#[test]
fn the_record_round_trips_through_json() {
    let d = decide(
        &job(
            answers(DoubleRun::Charges, &[Service::Postgres], 1, false, false),
            &[GUARDED_CHARGE],
        ),
        &Evidence::default(),
    );
    let text = serde_json::to_string(&d).unwrap();
    let back: Decision = serde_json::from_str(&text).unwrap();
    assert_eq!(back, d);
}

/// A TTL derivation for `job`: the committed fixture's events run (TTL 54.5 s), renamed.
fn ttl_of(job: &str) -> lockbench_core::records::ttl::TtlRecommendation {
    let text = include_str!("../../analysis/tests/fixtures/run/ttl-events/results.json");
    let mut t: lockbench_core::records::ttl::TtlRecommendation =
        serde_json::from_str(text).expect("the fixture's ttl record reads");
    t.workload = job.to_string();
    t
}

#[test]
fn a_crash_then_a_rerun_needs_a_guard_whatever_the_lock() {
    // One database, fenced, several transactions: the fence stops a concurrent stale holder,
    // but a holder that crashed after its write leaves it done, and the next one repeats it.
    let d = decide(
        &job(
            answers(DoubleRun::Corrupts, &[Service::Postgres], 1, false, true),
            &[UNGUARDED_DB],
        ),
        &Evidence::default(),
    );
    let guard = d
        .mechanisms
        .iter()
        .find(|m| m.step.as_deref() == Some("write") && m.name().contains("resumable checkpoint"))
        .expect("a guard or a checkpoint on the unguarded write");
    assert!(!guard.in_place);
    assert!(
        guard.reason().contains("no lock prevents a rerun"),
        "{}",
        guard.reason()
    );
    assert!(
        d.role.reason.contains("A rerun after a crash repeats it"),
        "{}",
        d.role.reason
    );
    let residual = d
        .residual
        .iter()
        .find(|r| r.risk.contains("`write`"))
        .expect("the missing guard is a residual risk");
    assert!(!residual.accepted);
    // The same write inside the locking transaction rolls back with a crash: no guard asked.
    let d = decide(
        &job(
            answers(DoubleRun::Corrupts, &[Service::Postgres], 1, true, false),
            &[UNGUARDED_DB],
        ),
        &Evidence::default(),
    );
    assert_eq!(d.backend.map(|b| b.name()), Some("pg-xact"));
    assert!(
        d.mechanisms.iter().all(|m| m.step.is_none()),
        "{:#?}",
        d.mechanisms
    );
}

#[test]
fn a_fence_across_three_databases_needs_a_guard_per_operation() {
    let d = decide(
        &job(
            answers(DoubleRun::Corrupts, &[Service::Postgres], 3, false, true),
            &[UNGUARDED_DB],
        ),
        &Evidence::default(),
    );
    assert_eq!(d.backend.map(|b| b.name()), Some("etcd"));
    assert!(mechanism(&d, "the fencing token checked by the resource").is_some());
    let guard =
        mechanism(&d, "a guard per operation in each database").expect("per-operation guard");
    assert_eq!(guard.step.as_deref(), Some("write"));
    assert!(
        guard
            .reason()
            .contains("with 3 databases a stale holder's write lands"),
        "{}",
        guard.reason()
    );
    // With one database the fence is enough against a concurrent holder; the guard is asked for
    // the rerun alone.
    let one = decide(
        &job(
            answers(DoubleRun::Corrupts, &[Service::Etcd], 1, false, true),
            &[UNGUARDED_DB],
        ),
        &Evidence::default(),
    );
    assert!(mechanism(&one, "a guard per operation").is_none());
    assert!(mechanism(&one, "a guard of its own").is_some());
}

#[test]
fn a_session_lock_retries_within_the_budget_then_alerts() {
    let d = decide(
        &job(
            answers(DoubleRun::Charges, &[Service::Postgres], 1, false, false),
            &[GUARDED_CHARGE, CONDITIONAL_DB],
        ),
        &Evidence::default(),
    );
    assert_eq!(d.lock_model.kind, ModelKind::Session);
    assert_eq!(d.failure_policy.kind, PolicyKind::RetryThenAlert);
    assert_eq!(d.failure_policy.retry_for_s, Some(900.0));
    assert!(
        d.failure_policy
            .reason
            .contains("cannot run beside a live holder")
    );
    assert!(mechanism(&d, "a completion record per run window").is_some());
    // The keepalive is the job's own connection's, sized from the budget, never server-wide.
    let keepalive = mechanism(&d, "TCP keepalive on the job's own connection").expect("keepalive");
    assert!(
        keepalive.name().contains("tcp_keepalives_idle=60"),
        "{}",
        keepalive.name()
    );
    assert!(keepalive.name().contains("not server-wide"));
    assert_eq!(d.crash_recovery.chosen_s, Some(120.0));
    assert_eq!(d.crash_recovery.within, Some(true));
    // Without a budget there is nothing to retry within: skip and alert.
    let mut answers = answers(DoubleRun::Charges, &[Service::Postgres], 1, false, false);
    answers.crash_recovery = None;
    let d = decide(
        &job(answers, &[GUARDED_CHARGE, CONDITIONAL_DB]),
        &Evidence::default(),
    );
    assert_eq!(d.failure_policy.kind, PolicyKind::SkipAndAlert);
}

#[test]
fn a_fixed_ttl_is_never_retried() {
    // Charges guarded by the job's own steps, on Redis, with a measured TTL inside the budget:
    // a fixed TTL, whose expiry could let a retry in beside a holder that outlived it.
    let j = job(
        answers(DoubleRun::Charges, &[Service::Redis], 1, false, false),
        &[GUARDED_CHARGE, CONDITIONAL_DB],
    );
    let evidence = Evidence {
        ttls: vec![ttl_of("job")],
        ..Evidence::default()
    };
    let d = decide(&j, &evidence);
    assert_eq!(d.backend.map(|b| b.name()), Some("redis"));
    assert_eq!(d.lock_model.kind, ModelKind::FixedTtl);
    assert_eq!(d.failure_policy.kind, PolicyKind::SkipAndAlert);
    assert_eq!(d.failure_policy.retry_for_s, None);
    assert!(
        d.failure_policy.reason.contains("No retry"),
        "{}",
        d.failure_policy.reason
    );
    // Decided on Redis: a persistence setting and its data-loss window.
    let persistence = mechanism(&d, "Redis persistence").expect("persistence");
    assert!(persistence.name().contains("appendfsync always"));
    assert!(persistence.reason().contains("data-loss window: none"));
}

#[test]
fn every_residual_risk_says_why_it_is_acceptable_and_who_owns_it() {
    for row in rows() {
        let d = decide(&row.job, &Evidence::default());
        assert!(!d.residual.is_empty(), "{}", row.what);
        for r in &d.residual {
            assert!(
                !r.why.is_empty() && !r.owner.is_empty(),
                "{}: {r:?}",
                row.what
            );
        }
    }
}

/// Billing reaching Postgres through a transaction-mode pooler is never decided pg-session: the
/// rejection names the pooler and what works instead, from the answer alone and, with the lab's
/// `pooler/transaction-mode` cell, from the measurement.
#[test]
fn a_session_lock_is_never_chosen_through_a_transaction_mode_pooler() {
    let billing = || {
        job(
            DecisionAnswers {
                postgres_via: Some(PostgresVia::TransactionPooler),
                ..answers(DoubleRun::Charges, &[Service::Postgres], 1, false, false)
            },
            &[
                ("read", Target::Db, Some(true), None),
                GUARDED_CHARGE,
                CONDITIONAL_DB,
            ],
        )
    };
    let d = decide(&billing(), &Evidence::default());
    assert_ne!(d.backend.map(|b| b.name()), Some("pg-session"));
    assert_eq!(verdict(&d, "pg-session"), VerdictKind::Rejected);
    assert_fact(&d, "pg-session", "through a transaction-mode pooler");
    assert_fact(
        &d,
        "pg-session",
        "use pg-xact, or a direct connection for the lock",
    );
    let measured = Evidence {
        cells: vec![cell("pooler/transaction-mode", "pg-session", 3, "overlap")],
        ..Evidence::default()
    };
    let d = decide(&billing(), &measured);
    assert_eq!(verdict(&d, "pg-session"), VerdictKind::Rejected);
    assert_fact(&d, "pg-session", "pooler/transaction-mode (lab TTL ");
    let v = d
        .alternatives
        .iter()
        .find(|v| v.backend.name() == "pg-session")
        .unwrap();
    assert_eq!(v.basis, FactBasis::Measured);
    // Answered direct, the same job keeps its session lock.
    let mut direct = billing();
    direct.decision.as_mut().unwrap().postgres_via = Some(PostgresVia::Direct);
    let d = decide(&direct, &Evidence::default());
    assert_eq!(d.backend.map(|b| b.name()), Some("pg-session"));
    // A pooler bench found overrides the answer, and the record says so; finding none does not
    // override an answered pooler (staging's URL may not be the job's).
    let pg_xact = lockbench_core::BackendId::from(lockbench_core::BackendKind::PgXact);
    let found = Evidence {
        transaction_pooler: Some((pg_xact, true)),
        ..Evidence::default()
    };
    let d = decide(&direct, &found);
    assert_ne!(d.backend.map(|b| b.name()), Some("pg-session"));
    let via = d
        .answers
        .iter()
        .find(|a| a.field == "postgres_via")
        .unwrap();
    assert_eq!(
        via.value,
        "transaction-pooler (measured: bench found a transaction-mode pooler on pg-xact's URL, which overrides the answer `direct`)"
    );
    let none = Evidence {
        transaction_pooler: Some((pg_xact, false)),
        ..Evidence::default()
    };
    let d = decide(&billing(), &none);
    assert_ne!(d.backend.map(|b| b.name()), Some("pg-session"));
    let mut unanswered = billing();
    unanswered.decision.as_mut().unwrap().postgres_via = None;
    let d = decide(&unanswered, &none);
    assert_eq!(d.backend.map(|b| b.name()), Some("pg-session"));
    assert!(!d.missing.iter().any(|m| m.field == "decision.postgres_via"));
}

/// `[decision] client`: the library the job locks with decides what its resource can refuse. A
/// fenced job that already runs ZooKeeper keeps ZooKeeper through a client that hands out the
/// node sequence as a fencing token; through kazoo, which hands out none, ZooKeeper leaves the
/// write unprotected, the record says why in the library's name, and the job is sent to a
/// backend whose token its resource can check.
#[test]
fn a_library_without_fencing_tokens_takes_the_fence_away_and_the_record_says_why() {
    let on_zookeeper = |client: Option<lockbench_core::Client>| {
        job(
            DecisionAnswers {
                client: client.map(ClientChoice::Shipped),
                ..answers(DoubleRun::Corrupts, &[Service::Zookeeper], 1, false, true)
            },
            &[UNGUARDED_DB],
        )
    };
    let own = decide(&on_zookeeper(None), &Evidence::default());
    assert_eq!(own.backend.map(|b| b.name()), Some("zookeeper"));
    assert!(mechanism(&own, "the fencing token checked by the resource").is_some());

    let kazoo = decide(
        &on_zookeeper(Some(lockbench_core::Client::Kazoo)),
        &Evidence::default(),
    );
    assert_ne!(kazoo.backend.map(|b| b.name()), Some("zookeeper"));
    assert_eq!(verdict(&kazoo, "zookeeper"), VerdictKind::Rejected);
    assert_fact(
        &kazoo,
        "zookeeper",
        "the job locks with kazoo Lock (Python), which hands out no fencing token",
    );
    let client = kazoo
        .answers
        .iter()
        .find(|a| a.field == "client")
        .expect("the record lists the client");
    assert_eq!((client.value.as_str(), client.given), ("kazoo", true));
    // Moving off ZooKeeper moves off kazoo: the record says a new client is needed, and which
    // shipped one hands out the new backend's token.
    let chosen = kazoo.backend.expect("another backend is chosen");
    let moved = kazoo
        .residual
        .iter()
        .find(|r| r.risk.contains("which does not lock on"))
        .expect("the move to a new client is a residual risk");
    assert_eq!(
        moved.risk,
        format!(
            "the job locks with kazoo Lock (Python), which does not lock on {chosen}: the move needs a new lock client, not yet chosen or measured"
        )
    );
    assert!(!moved.accepted);
    assert!(moved.why.contains("fencing token"), "{}", moved.why);

    // A library for another backend changes nothing here.
    let redis_py = decide(
        &on_zookeeper(Some(lockbench_core::Client::RedisPy)),
        &Evidence::default(),
    );
    assert_eq!(redis_py.backend.map(|b| b.name()), Some("zookeeper"));

    // Curator's mutex hands out no token either; etcd's Go Mutex does (its revision at the
    // grant), so a fenced job on etcd keeps etcd and its fence through it.
    let curator = decide(
        &on_zookeeper(Some(lockbench_core::Client::Curator)),
        &Evidence::default(),
    );
    assert_eq!(verdict(&curator, "zookeeper"), VerdictKind::Rejected);
    assert_fact(
        &curator,
        "zookeeper",
        "the job locks with Curator InterProcessMutex (Java), which hands out no fencing token",
    );
    let on_etcd = |client: Option<lockbench_core::Client>| {
        job(
            DecisionAnswers {
                client: client.map(ClientChoice::Shipped),
                ..answers(DoubleRun::Corrupts, &[Service::Etcd], 1, false, true)
            },
            &[UNGUARDED_DB],
        )
    };
    let own = decide(&on_etcd(None), &Evidence::default());
    let etcd_go = decide(
        &on_etcd(Some(lockbench_core::Client::EtcdGo)),
        &Evidence::default(),
    );
    assert_eq!(own.backend.map(|b| b.name()), Some("etcd"));
    assert_eq!(etcd_go.backend.map(|b| b.name()), Some("etcd"));
    assert!(mechanism(&etcd_go, "the fencing token checked by the resource").is_some());
}

/// A fenced job moved off its library's backend needs a new client: `replacement_clients`
/// names the shipped one that hands out the chosen backend's token (what `lockbench run`
/// measures), and once its cells are in the evidence the record cites what it did.
#[test]
fn the_library_a_fenced_job_moves_to_is_named_and_cited_once_measured() {
    let on_zookeeper = job(
        DecisionAnswers {
            client: Some(ClientChoice::Shipped(lockbench_core::Client::Curator)),
            ..answers(
                DoubleRun::Corrupts,
                &[Service::Zookeeper, Service::Etcd],
                1,
                false,
                true,
            )
        },
        &[UNGUARDED_DB],
    );
    let unmeasured = decide(&on_zookeeper, &Evidence::default());
    assert_eq!(unmeasured.backend.map(|b| b.name()), Some("etcd"));
    assert_eq!(
        lockbench_decision::replacement_clients(&on_zookeeper, &unmeasured, &Evidence::default()),
        vec![lockbench_core::Client::EtcdGo]
    );
    let moved = |d: &lockbench_decision::Decision| {
        d.residual
            .iter()
            .find(|r| r.risk.contains("which does not lock on etcd"))
            .cloned()
            .expect("the move to a new client is a residual risk")
    };
    assert!(
        moved(&unmeasured)
            .risk
            .ends_with("not yet chosen or measured")
    );

    let mut paused = cell("pause/naive", "etcd", 2, "overlap");
    paused.client = Some(lockbench_core::ClientUsed {
        name: lockbench_core::Client::EtcdGo,
        version: "3.4.23".into(),
    });
    let measured = Evidence {
        library_cells: vec![paused],
        ..Evidence::default()
    };
    let d = decide(&on_zookeeper, &measured);
    let r = moved(&d);
    assert!(r.risk.ends_with("not yet chosen"), "{}", r.risk);
    assert!(
        r.why
            .contains("etcd concurrency.Mutex (Go) (`etcd-go`; measured through it here, pause/naive (lab TTL "),
        "{}",
        r.why
    );
    assert!(!r.accepted);
    // A job without a fence, or one whose library already locks on the chosen backend, is
    // moved to no new library.
    let unfenced = job(
        DecisionAnswers {
            client: Some(ClientChoice::Shipped(lockbench_core::Client::Curator)),
            ..answers(DoubleRun::Corrupts, &[Service::Zookeeper], 1, false, false)
        },
        &[UNGUARDED_DB],
    );
    let d = decide(&unfenced, &Evidence::default());
    assert!(
        lockbench_decision::replacement_clients(&unfenced, &d, &Evidence::default()).is_empty()
    );
}

/// A team's own adapter (`client = "./adapters/zk_lock.py"`) is judged by what its measured cells
/// say it is, as a shipped library is; not measured, no verdict leans on it and the record says
/// what it assumed and how to measure it.
#[test]
fn a_teams_own_adapter_is_judged_by_its_measured_description() {
    let on_zookeeper = job(
        DecisionAnswers {
            client: Some(ClientChoice::Own("./adapters/zk_lock.py".into())),
            ..answers(DoubleRun::Corrupts, &[Service::Zookeeper], 1, false, true)
        },
        &[UNGUARDED_DB],
    );
    let unmeasured = decide(&on_zookeeper, &Evidence::default());
    assert_eq!(unmeasured.backend.map(|b| b.name()), Some("zookeeper"));
    let r = unmeasured
        .residual
        .iter()
        .find(|r| r.risk.contains("`./adapters/zk_lock.py`"))
        .expect("the unmeasured adapter is a residual risk");
    assert!(
        r.risk.contains("not measured in these results"),
        "{}",
        r.risk
    );
    assert!(
        r.risk
            .contains("as if it handed out zookeeper's fencing token"),
        "{}",
        r.risk
    );
    assert!(
        r.why
            .contains("lockbench faults --client ./adapters/zk_lock.py --backend zookeeper"),
        "{}",
        r.why
    );
    assert!(!r.accepted);

    let measured_as = |fencing: bool| {
        let own = lockbench_core::OwnClient::new(
            "./adapters/zk_lock.py",
            &lockbench_core::OwnDescription {
                library: "zk-lock",
                version: "0.3",
                backend: lockbench_core::BackendKind::Zookeeper,
                fencing,
                renews: true,
                tells: false,
            },
        );
        let mut c = cell("pause/naive", "zookeeper", 0, "overlap");
        c.client = Some(lockbench_core::ClientUsed {
            name: lockbench_core::Client::Own(own),
            version: "0.3".into(),
        });
        Evidence {
            library_cells: vec![c],
            ..Evidence::default()
        }
    };
    // Measured, and handing out no token: ZooKeeper leaves the write unprotected, in its name.
    let tokenless = decide(&on_zookeeper, &measured_as(false));
    assert_eq!(verdict(&tokenless, "zookeeper"), VerdictKind::Rejected);
    assert_fact(
        &tokenless,
        "zookeeper",
        "the job locks with the team's own adapter `zk_lock` of zk-lock, which hands out no fencing token",
    );
    let listed = tokenless
        .answers
        .iter()
        .find(|a| a.field == "client")
        .expect("the record lists the client");
    assert_eq!(
        listed.value,
        "`./adapters/zk_lock.py`, the team's own adapter: zk-lock 0.3 on zookeeper, as measured"
    );
    // Measured, and handing out one: ZooKeeper and its fence stay.
    let tokened = decide(&on_zookeeper, &measured_as(true));
    assert_eq!(tokened.backend.map(|b| b.name()), Some("zookeeper"));
    assert!(mechanism(&tokened, "the fencing token checked by the resource").is_some());
    assert!(
        !tokened
            .residual
            .iter()
            .any(|r| r.risk.contains("not measured")),
        "{:?}",
        tokened.residual
    );
}

/// A job that ships a library is judged through the library's measured cells: when the lab
/// saw it tell its holder of a lost lock only after the next holder's grant, the record says
/// so and says to stop at the job's own deadline; not measured, the record says to measure it.
#[test]
fn the_record_judges_the_shipped_library_by_its_measured_telling() {
    let kazoo_job = job(
        DecisionAnswers {
            client: Some(ClientChoice::Shipped(lockbench_core::Client::Kazoo)),
            ..answers(
                DoubleRun::WastedWork,
                &[Service::Zookeeper],
                1,
                false,
                false,
            )
        },
        &[IDEMPOTENT_DB],
    );
    let residual = |d: &lockbench_decision::Decision| {
        d.residual
            .iter()
            .find(|r| r.risk.contains("kazoo Lock (Python)"))
            .cloned()
    };
    let unmeasured = decide(&kazoo_job, &Evidence::default());
    assert_eq!(unmeasured.backend.map(|b| b.name()), Some("zookeeper"));
    let r = residual(&unmeasured).expect("the unmeasured library is a residual risk");
    assert!(r.risk.contains("not measured"), "{}", r.risk);
    assert!(
        r.why.contains("lockbench faults --client kazoo"),
        "{}",
        r.why
    );
    assert!(!r.accepted);

    let mut told_late = cell("pause/naive", "zookeeper", 2, "overlap");
    told_late.client = Some(lockbench_core::ClientUsed {
        name: lockbench_core::Client::Kazoo,
        version: "2.11.0".into(),
    });
    told_late.lost_told = Some(lockbench_core::records::faults::LostTold {
        told: 2,
        by_event: 0,
        never_told_overlaps: 0,
        after_next_grant_p50_s: Some(3.1),
        after_next_grant_max_s: Some(4.2),
    });
    let measured = Evidence {
        library_cells: vec![told_late],
        ..Evidence::default()
    };
    let d = decide(&kazoo_job, &measured);
    let r = residual(&d).expect("the late telling is a residual risk");
    assert!(
        r.risk
            .contains("kazoo Lock (Python) 2.11.0 tells its holder of a lost lock late")
            && r.risk
                .contains("up to 4.20 s after the next holder was granted in `pause/naive`"),
        "{}",
        r.risk
    );
    assert!(
        r.why.contains("not at the library's notification"),
        "{}",
        r.why
    );
    // Lockbench's own cells decide the backend; the library's do not stand in for them.
    assert_eq!(d.backend, unmeasured.backend);
}

/// A ledger: three databases, a fence, two unguarded writes and Curator as its library.
fn ledger() -> JobAnswers {
    let mut d = answers(DoubleRun::Corrupts, &[Service::Postgres], 3, false, true);
    d.client = Some(ClientChoice::Shipped(lockbench_core::Client::Curator));
    job(
        d,
        &[
            ("debit", Target::Db, Some(false), Some(Guard::None)),
            ("credit", Target::Db, Some(false), Some(Guard::None)),
            (
                "post",
                Target::Db,
                Some(false),
                Some(Guard::UniqueConstraint),
            ),
        ],
    )
}

#[test]
fn a_risk_not_acceptable_yet_blocks_the_decision_and_the_record_shows_it_after_the_guards() {
    let d = decide(&ledger(), &Evidence::default());
    assert_eq!(d.status, Status::Blocked);
    let blocking: Vec<String> = d
        .actions
        .iter()
        .filter(|a| a.blocking)
        .filter_map(|a| a.assume.as_ref().map(|x| x.argument()))
        .collect();
    assert!(
        blocking.contains(&"guard:debit".to_string())
            && blocking.contains(&"guard:credit".to_string()),
        "{blocking:?}"
    );
    // The lease's risk is not accepted for a fence that cannot cover three databases.
    let lease = d
        .residual
        .iter()
        .filter(|r| r.kind == lockbench_decision::RiskKind::LeaseLost)
        .collect::<Vec<_>>();
    assert!(
        lease
            .iter()
            .all(|r| !r.accepted && !r.why.contains("the fence and the guards")),
        "{lease:#?}"
    );
    let after = d.after.as_ref().expect("the decision after the guards");
    // Without results nothing of Curator is measured: that alone still blocks it.
    let still: Vec<&lockbench_decision::Change> = after
        .actions
        .iter()
        .filter(|a| a.blocking)
        .map(|a| &a.change)
        .collect();
    assert!(
        matches!(
            still.as_slice(),
            [lockbench_decision::Change::MeasureClient { .. }]
        ),
        "{still:#?}"
    );
    assert!(!after.role.correctness, "{}", after.role.reason);
    // Curator locks on ZooKeeper, which the team therefore runs: once the guards keep the job
    // correct, no new infrastructure is needed.
    assert_eq!(after.backend.map(|b| b.name()), Some("zookeeper"));
    assert_eq!(
        after.assumed,
        vec![
            lockbench_decision::Assumption::Guard {
                step: "debit".into()
            },
            lockbench_decision::Assumption::Guard {
                step: "credit".into()
            },
        ]
    );
    // An assumption naming a step the job does not have is refused, naming it.
    let err = lockbench_decision::decide_assuming(
        &ledger(),
        &Evidence::default(),
        &[lockbench_decision::Assumption::parse("guard:refund").unwrap()],
    )
    .unwrap_err();
    assert!(
        err.contains("no step \"refund\"") && err.contains("debit"),
        "{err}"
    );
    assert!(lockbench_decision::Assumption::parse("fence:debit").is_err());
}

/// What a decision's mechanisms and actions may mention, given its lock model and backend: a
/// token only where the lock has one, a renewal only where it is renewed, a Postgres setting only
/// on Postgres, Redis's only on Redis.
fn told_only_what_its_model_has(d: &Decision) -> Result<(), String> {
    use lockbench_core::BackendKind as B;
    use lockbench_decision::MechanismKind as K;
    let model = d.lock_model.kind;
    let backend = d.backend;
    let postgres = matches!(backend, Some(B::PgSession | B::PgXact));
    for m in &d.mechanisms {
        let fits = match &m.kind {
            K::KeepGuard { .. } | K::OwnGuard { .. } | K::RerunGuard { .. } => true,
            K::FencingToken { backend: b, .. } => {
                Some(*b) == backend && b.fencing() != lockbench_core::FencingSource::None
            }
            K::WritesInTransaction { .. } => model == ModelKind::Transaction,
            K::Heartbeat { .. } => model == ModelKind::HeartbeatLease,
            K::OwnConnection => model == ModelKind::Session,
            K::Keepalive { .. } => postgres,
            K::TableLocksFirst { .. } => model == ModelKind::Transaction,
            K::ValidityCheck => matches!(backend, Some(B::Redis | B::Redlock)),
            K::RedisPersistence { .. } => backend == Some(B::Redis),
            K::CompletionRecord => true,
            K::TokenRelease { renew, .. } => {
                matches!(model, ModelKind::FixedTtl | ModelKind::HeartbeatLease)
                    && (!renew || model == ModelKind::HeartbeatLease)
            }
            K::DieWithHolder => backend.is_some(),
        };
        if !fits {
            return Err(format!(
                "{} on {backend:?} ({model:?}): {}",
                d.job,
                m.name()
            ));
        }
        if m.kind.renews() && model != ModelKind::HeartbeatLease {
            return Err(format!("{}: renews without a lease: {}", d.job, m.name()));
        }
    }
    let listed_pooler = d.answers.iter().any(|a| a.field == "postgres_via");
    if listed_pooler && !postgres && !d.alternatives.iter().any(|v| v.fact.contains("pooler")) {
        return Err(format!("{}: a pooler line for {backend:?}", d.job));
    }
    Ok(())
}

#[test]
fn no_job_is_told_of_a_mechanism_its_model_does_not_have() {
    let mut jobs: Vec<JobAnswers> = rows().into_iter().map(|r| r.job).collect();
    jobs.push(ledger());
    for j in jobs {
        let d = decide(&j, &Evidence::default());
        told_only_what_its_model_has(&d).unwrap();
        if let Some(after) = &d.after {
            told_only_what_its_model_has(after).unwrap();
        }
    }
    // The check itself: a session lock told to release by token is caught.
    let mut session = decide(
        &job(
            answers(DoubleRun::Charges, &[Service::Postgres], 1, false, false),
            &[GUARDED_CHARGE, CONDITIONAL_DB],
        ),
        &Evidence::default(),
    );
    assert_eq!(session.lock_model.kind, ModelKind::Session);
    session.mechanisms.push(lockbench_decision::Mechanism {
        kind: lockbench_decision::MechanismKind::TokenRelease {
            backend: lockbench_core::BackendKind::PgSession,
            renew: true,
        },
        step: None,
        in_place: false,
        measured: None,
    });
    assert!(told_only_what_its_model_has(&session).is_err());
    // With measured TTLs the models change (fixed TTLs, leases): the same holds.
    for r in rows() {
        let mut ev = Evidence::default();
        ev.ttls.push(ttl_of("job"));
        let d = decide(&r.job, &ev);
        told_only_what_its_model_has(&d).unwrap();
    }
}

/// "Survives a failover" is said only where a cluster cell measured it, and cites it; a promoted
/// standby's overlap is said beside a Postgres lock the fence keeps correct.
#[test]
fn a_failover_is_said_survived_only_where_a_cluster_cell_measured_it() {
    let ledger = job(
        answers(DoubleRun::Corrupts, &[Service::Postgres], 3, false, true),
        &[UNGUARDED_DB],
    );
    let d = decide(&ledger, &Evidence::default());
    assert_eq!(d.backend.map(|b| b.name()), Some("etcd"));
    assert_fact(
        &d,
        "etcd",
        "that it survives a failover is not measured here",
    );
    let mut killed = cell("cluster/leader-killed", "etcd", 0, "no overlap");
    killed.new_leader_p50_s = Some(1.2);
    let evidence = Evidence {
        cells: vec![
            killed,
            cell("cluster/leader-isolated", "etcd", 0, "no overlap"),
            cell("cluster/member-restarted", "etcd", 0, "no overlap"),
        ],
        ..Evidence::default()
    };
    let d = decide(&ledger, &evidence);
    assert_eq!(d.backend.map(|b| b.name()), Some("etcd"));
    assert_fact(
        &d,
        "etcd",
        "its lock survived the loss of its leader in the lab (cluster/leader-killed on three members: 2 of 2 trials without overlap, 1.2 s to a new leader)",
    );
    assert_fact(
        &d,
        "etcd",
        "(cluster/leader-isolated: 2 of 2 trials without overlap)",
    );
    assert_fact(
        &d,
        "etcd",
        "a member restarted as the lock changed hands granted its waiting client nothing early (cluster/member-restarted: 2 of 2 trials without overlap)",
    );

    let fenced_postgres = job(
        answers(DoubleRun::Corrupts, &[Service::Postgres], 1, false, true),
        &[UNGUARDED_DB],
    );
    let mut promoted = cell("cluster/primary-promoted", "pg-session", 2, "overlap");
    promoted.stale_rejected_by_fence = Some(promoted.stale_writes);
    let evidence = Evidence {
        cells: vec![promoted],
        ..Evidence::default()
    };
    let d = decide(&fenced_postgres, &evidence);
    assert_eq!(d.backend.map(|b| b.name()), Some("pg-session"));
    assert_fact(
        &d,
        "pg-session",
        "a promoted standby does not have it and grants it at once (cluster/primary-promoted: 2 of 2 trials overlapped, the fence refused 6 of 6 stale writes), so across a failover only the fence keeps the job correct",
    );
    // Unfenced, the promotion's stale writes reject the session lock where a standby exists,
    // and do not where the job's Postgres has none.
    let unfenced = job(
        answers(DoubleRun::Corrupts, &[Service::Postgres], 1, false, false),
        &[UNGUARDED_DB],
    );
    let d = decide(&unfenced, &evidence);
    assert_eq!(verdict(&d, "pg-session"), VerdictKind::Rejected);
    assert_fact(&d, "pg-session", "cluster/primary-promoted");
    let mut alone = unfenced.clone();
    alone.decision.as_mut().unwrap().postgres_standby = Some(false);
    let d = decide(&alone, &evidence);
    assert_ne!(verdict(&d, "pg-session"), VerdictKind::Rejected);
    assert!(
        !fact(&d, "pg-session").contains("promoted"),
        "{}",
        fact(&d, "pg-session")
    );

    // Redis chosen: what a Sentinel failover did is said only where its cells measured it.
    let wasted = job(
        answers(DoubleRun::WastedWork, &[Service::Redis], 1, false, false),
        &[UNGUARDED_DB],
    );
    let d = decide(&wasted, &Evidence::default());
    assert_eq!(d.backend.map(|b| b.name()), Some("redis"));
    assert!(
        !fact(&d, "redis").contains("Sentinel"),
        "{}",
        fact(&d, "redis")
    );
    let mut waited = cell("cluster/sentinel-failover-wait", "redis", 0, "no overlap");
    waited.new_leader_p50_s = Some(2.2);
    let evidence = Evidence {
        cells: vec![
            cell("cluster/sentinel-failover", "redis", 2, "overlap"),
            cell(
                "cluster/sentinel-failover-min-replicas",
                "redis",
                2,
                "overlap",
            ),
            waited,
        ],
        ..Evidence::default()
    };
    let d = decide(&wasted, &evidence);
    assert_eq!(d.backend.map(|b| b.name()), Some("redis"));
    assert_fact(
        &d,
        "redis",
        "a Sentinel failover from a primary killed before its replicas had the key granted the lock again (cluster/sentinel-failover: 2 of 2 trials overlapped)",
    );
    assert_fact(
        &d,
        "redis",
        "with WAIT 1 the holder lost nothing to it (cluster/sentinel-failover-wait: 2 of 2 trials without overlap, 2.2 s to a promoted replica)",
    );
    assert_fact(
        &d,
        "redis",
        "min-replicas-to-write 1 did not prevent it (cluster/sentinel-failover-min-replicas: 2 of 2 trials overlapped): it counts replicas that answer, not replicas that have the key",
    );
}
