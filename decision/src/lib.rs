//! The decision rules: a job's answers and the measured evidence in, one typed [`Decision`] out.
//!
//! The answers enter as a [`lockbench_workloads::JobAnswers`] (the spec's `[decision]` table and
//! each step's `idempotent` and `guard`); the evidence as an [`Evidence`] built from the typed
//! records of `faults`, `bench`, `ttl` and `replay` results. [`decide`] is a pure function of the
//! two: no I/O, nothing printed. Inside, `answers` resolves what the spec leaves out (and says
//! so), `rules` gives every backend a verdict with the one fact that decides it and picks one,
//! `design` turns the pick into a lock model, mechanisms, a failure policy, a crash-recovery check
//! and the residual risk, `lab` says what each fault-lab variant means to the rules, and `missing`
//! decides again with each unanswered answer to show what it would change. docs/DECISION.md gives
//! every rule a sentence and a source.

mod action;
mod actions;
pub mod alerts;
mod answers;
mod design;
mod evidence;
pub mod lab;
mod mechanism;
mod missing;
mod prose;
mod record;
mod rules;
mod verify;
mod words;

pub use action::{Action, Assumption, Change};
pub use design::describe_vanished;
pub use evidence::{AcquireCost, Evidence, describe, fence_held};
pub use mechanism::{Mechanism, MechanismKind};
pub use missing::brief;
pub use prose::{effect, list};
pub use record::{
    Answer, CrashRecovery, Decision, FactBasis, FailurePolicy, LockModel, MissingAnswer, ModelKind,
    PolicyKind, Reason, Residual, RiskKind, Role, Status, StepRow, Verdict, VerdictKind,
};

use lockbench_core::BackendKind;
use lockbench_workloads::JobAnswers;

use crate::answers::Resolved;

/// The decision for `job` on `evidence`, with the decision after its blocking actions when they
/// change an answer.
pub fn decide(job: &JobAnswers, evidence: &Evidence) -> Decision {
    let mut decision = decide_once(job, evidence);
    decision.after = actions::after(job, &decision, |j| decide_once(j, evidence));
    decision
}

/// The decision for `job` with `assumed` actions done (`decide --assume`); an error naming the
/// step when an assumption names one the job does not have.
pub fn decide_assuming(
    job: &JobAnswers,
    evidence: &Evidence,
    assumed: &[Assumption],
) -> Result<Decision, String> {
    let mut changed = job.clone();
    for a in assumed {
        changed = a.apply(&changed)?;
    }
    let mut decision = decide(&changed, evidence);
    decision.assumed = assumed.to_vec();
    Ok(decision)
}

/// The decision on the answers as they are, without the decision after its actions.
fn decide_once(job: &JobAnswers, evidence: &Evidence) -> Decision {
    let resolved = Resolved::of(job).measured(evidence);
    let mut decision = decide_resolved(job, &resolved, evidence);
    decision.missing = missing::missing(job, &resolved, evidence, &decision);
    if job.frequency.from.assumed() {
        decision.missing.push(MissingAnswer {
            field: "workload.schedule".into(),
            assumed: format!(
                "monthly ({} runs a year)",
                job.frequency.runs_per_year
            ),
            would_change: "every yearly figure (double executions a year, today's TTL priced, a lost lease a year); not the choice of lock".into(),
        });
    }
    if job.target_volume.is_none() {
        decision.missing.push(MissingAnswer {
            field: "workload.target_volume".into(),
            assumed: "today's volume (no growth)".into(),
            would_change: "the TTL and the lease are sized at today's volume, and the review trigger says when to size them again; not the choice of lock".into(),
        });
    }
    decision.status = if !resolved.is_given(answers::Field::DoubleRun) {
        Status::Undecided
    } else if decision.residual.iter().any(|r| !r.accepted) {
        Status::Blocked
    } else if decision.missing.is_empty() {
        Status::Proposed
    } else {
        Status::Assumed
    };
    decision
}

/// The shipped client libraries a job would move to: when its decision chooses a backend its
/// named library does not lock on and its resource checks a fencing token, the shipped adapters
/// on the chosen backend that hand one out. `lockbench run` measures them, so that the record
/// can say what the candidate does rather than only that one is needed.
pub fn replacement_clients(
    job: &JobAnswers,
    decision: &Decision,
    evidence: &Evidence,
) -> Vec<lockbench_core::Client> {
    let resolved = Resolved::of(job).measured(evidence);
    let (Some(client), Some(chosen)) = (resolved.client, decision.backend) else {
        return Vec::new();
    };
    if client.backend() == chosen || !resolved.fenced {
        return Vec::new();
    }
    design::tokened_on(chosen)
}

/// The decision on answers already resolved (missing ones assumed), without the list of what
/// each missing answer would change.
pub(crate) fn decide_resolved(job: &JobAnswers, r: &Resolved, ev: &Evidence) -> Decision {
    let role = rules::role(job, r);
    let policy = design::policy(job, r);
    let skip = policy.kind == PolicyKind::SkipAndAlert;
    let (alternatives, chosen) = rules::verdicts(job, r, ev, &role, skip);
    let ttl = ev.ttl(&job.job);
    let model = design::lock_model(chosen, r, &role, ttl);
    let fenced_lease = chosen.is_some_and(|k| rules::by_fence(k, r));
    let mut policy = design::within_budget(policy, r, &model, fenced_lease);
    policy.measured = design::outage_measured(ev, chosen);
    let mechanisms = design::mechanisms(job, r, ev, chosen, &model, &policy);
    let recovery = design::crash_recovery(r, ev, chosen, &model, ttl);
    let overruled = ev
        .cells
        .iter()
        .filter(|c| c.trials_with_overlap > 0 && c.expected == "no overlap")
        .map(|c| {
            format!(
                "{} on {}: overlapped where the backend's design predicts none; {}",
                describe(c),
                c.backend,
                if c.stale_writes > 0 {
                    "the rules follow the measurement"
                } else {
                    "no stale write reached the resource, so it decides nothing"
                }
            )
        })
        .collect();
    let mut decision = Decision {
        job: job.job.clone(),
        spec: job.spec.display().to_string(),
        status: Status::Proposed,
        basis: ev.basis(&job.job),
        answers: r
            .listed(job)
            .into_iter()
            // The path to Postgres is said only of a job whose lock is there, or that it kept
            // from there (a transaction-mode pooler rules the session lock out).
            .filter(|a| {
                a.field != "postgres_via"
                    || matches!(chosen, Some(BackendKind::PgSession | BackendKind::PgXact))
                    || r.postgres_via == lockbench_workloads::PostgresVia::TransactionPooler
            })
            .collect(),
        double_run: r.double_run,
        role,
        backend: chosen,
        adds_infrastructure: chosen.is_some_and(|k| rules::weight(k, r) > 0),
        lock_model: model,
        mechanisms,
        failure_policy: policy,
        alternatives,
        crash_recovery: recovery,
        residual: Vec::new(),
        steps: design::steps(job, r.double_run),
        missing: Vec::new(),
        overruled,
        actions: Vec::new(),
        assumed: Vec::new(),
        after: None,
    };
    decision.residual = design::residual(job, r, ev, chosen, &decision);
    decision.actions = actions::actions(job, &decision);
    decision
}
