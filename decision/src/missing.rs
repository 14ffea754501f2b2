//! Answers a spec does not give: what was assumed, and what each other answer would change,
//! found by deciding again with it.

use std::time::Duration;

use lockbench_core::Service;
use lockbench_workloads::{DoubleRun, JobAnswers, PostgresVia};

use crate::answers::{Field, Resolved};
use crate::evidence::Evidence;
use crate::record::{Decision, MissingAnswer};

/// "redis (heartbeat lease), skip and alert".
pub fn brief(d: &Decision) -> String {
    format!(
        "{} ({}), {}",
        d.backend.map_or("no backend", |b| b.name()),
        d.lock_model.kind.name(),
        d.failure_policy.kind.name()
    )
}

/// Each missing answer with what answering it would change.
pub(crate) fn missing(
    job: &JobAnswers,
    r: &Resolved,
    ev: &Evidence,
    current: &Decision,
) -> Vec<MissingAnswer> {
    let now = brief(current);
    let mut out = Vec::new();
    for f in Field::ALL.into_iter().filter(|f| !r.is_given(*f)) {
        let field = f.name();
        let assumed = match f {
            Field::DoubleRun => format!(
                "{} (the worst a second run can do to the job's own data)",
                r.double_run.name()
            ),
            Field::AlreadyRuns => {
                "nothing (every backend counts as new infrastructure)".to_string()
            }
            Field::Databases => "1".to_string(),
            Field::OneTransaction | Field::Fenced => "false".to_string(),
            Field::CrashRecovery => "no bound".to_string(),
            Field::PostgresVia => "direct (no pooler between the job and Postgres)".to_string(),
            Field::PostgresStandby => {
                "true (a standby promoted when the primary fails)".to_string()
            }
        };
        let mut changes: Vec<String> = alternatives(r, f)
            .into_iter()
            .map(|(value, alt)| {
                let d = crate::decide_resolved(job, &alt, ev);
                let b = brief(&d);
                if b == now {
                    format!("{field} = {value}: no change")
                } else {
                    format!("{field} = {value}: {b}")
                }
            })
            .collect();
        if changes.is_empty() {
            changes.push(format!(
                "nothing: {field} = true cannot hold for a job that writes to {} databases",
                r.databases
            ));
        }
        out.push(MissingAnswer {
            field: format!("decision.{field}"),
            assumed,
            would_change: changes.join("; "),
        });
    }
    let unanswered: Vec<String> = job
        .steps
        .iter()
        .filter(|s| s.idempotent.is_none() || (s.idempotent == Some(false) && s.guard.is_none()))
        .map(|s| format!("`{}`", s.name))
        .collect();
    if !unanswered.is_empty() {
        out.push(MissingAnswer {
            field: "steps.idempotent, steps.guard".to_string(),
            assumed: format!(
                "{} not idempotent, with no guard",
                crate::answers::list(unanswered)
            ),
            would_change: "a step marked idempotent, or given a guard, no longer needs the lock to keep it single; the role and the mechanisms follow".to_string(),
        });
    }
    out
}

/// The other values of `field` worth deciding again with, each with the answers it makes.
fn alternatives(r: &Resolved, field: Field) -> Vec<(String, Resolved)> {
    let with = |f: &dyn Fn(&mut Resolved)| {
        let mut alt = r.clone();
        f(&mut alt);
        alt
    };
    match field {
        Field::DoubleRun => DoubleRun::ALL
            .iter()
            .filter(|d| **d != r.double_run)
            .map(|d| (d.name().to_string(), with(&|a| a.double_run = *d)))
            .collect(),
        Field::AlreadyRuns => Service::ALL
            .iter()
            .map(|s| {
                (
                    format!("[\"{}\"]", s.name()),
                    with(&|a| a.already_runs = vec![*s]),
                )
            })
            .collect(),
        Field::Databases => vec![("3".to_string(), with(&|a| a.databases = 3))],
        // One transaction spans one database: no alternative with several.
        Field::OneTransaction if r.databases > 1 => Vec::new(),
        Field::OneTransaction => vec![("true".to_string(), with(&|a| a.one_transaction = true))],
        Field::Fenced => vec![("true".to_string(), with(&|a| a.fenced = true))],
        Field::PostgresVia => vec![(
            format!("\"{}\"", PostgresVia::TransactionPooler.name()),
            with(&|a| a.postgres_via = PostgresVia::TransactionPooler),
        )],
        Field::PostgresStandby => vec![(
            (!r.postgres_standby).to_string(),
            with(&|a| a.postgres_standby = !r.postgres_standby),
        )],
        Field::CrashRecovery => vec![(
            "\"1m\"".to_string(),
            with(&|a| a.crash_recovery = Some(Duration::from_secs(60))),
        )],
    }
}
