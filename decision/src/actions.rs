//! Which actions a decision has: one per residual risk not acceptable yet (the decision is blocked
//! on those) and per mechanism still to add, each with its owner. An action that changes an answer
//! of the job (a step given a guard, another lock library) is an assumption too: `decide --assume`
//! decides again as if it were done, and the record shows the decision after the blocking ones.

use lockbench_core::{BackendKind, Client};
use lockbench_workloads::JobAnswers;

use crate::action::{Action, Assumption, Change};
use crate::mechanism::{Mechanism, MechanismKind};
use crate::record::{Decision, Residual, RiskKind, Status};

/// The actions of a decision: the blocking ones first (one per risk not acceptable yet that an
/// action removes), then every mechanism still to add.
pub(crate) fn actions(job: &JobAnswers, d: &Decision) -> Vec<Action> {
    let team = format!("the {} job's owners", job.job);
    let mut out: Vec<Action> = d
        .residual
        .iter()
        .filter(|r| !r.accepted)
        .filter_map(|r| removing(r, job, d, &team))
        .collect();
    for m in d.mechanisms.iter().filter(|m| !m.in_place) {
        let done = out.iter().any(|a| {
            a.step == m.step
                && matches!(&a.change, Change::Add { mechanism } if *mechanism == m.kind)
        });
        if !done {
            out.push(Action {
                change: Change::Add {
                    mechanism: m.kind.clone(),
                },
                step: m.step.clone(),
                owner: owner(m, &team),
                blocking: false,
                assume: None,
            });
        }
    }
    out
}

/// Who adds a mechanism: the servers' operators for a server setting, the job's owners otherwise.
fn owner(m: &Mechanism, team: &str) -> String {
    match m.kind {
        MechanismKind::RedisPersistence { .. } => "whoever runs Redis".to_string(),
        _ => team.to_string(),
    }
}

/// The action that removes the risk `r`; `None` for a risk that others remove (a lost lease, a
/// dead connection: the steps' guards) or that is the policy's.
fn removing(r: &Residual, job: &JobAnswers, d: &Decision, team: &str) -> Option<Action> {
    let action = |change: Change, assume: Option<Assumption>| Action {
        change,
        step: r.step.clone(),
        owner: team.to_string(),
        blocking: true,
        assume,
    };
    match r.kind {
        RiskKind::Unguarded => {
            let step = r.step.clone()?;
            let mechanism = d
                .mechanisms
                .iter()
                .find(|m| m.step.as_ref() == Some(&step) && !m.in_place)?;
            Some(action(
                Change::Add {
                    mechanism: mechanism.kind.clone(),
                },
                Some(Assumption::Guard { step }),
            ))
        }
        RiskKind::ClientMismatch => {
            let backend = d.backend?;
            let fenced = d.mechanisms.iter().any(|m| m.kind.uses_token());
            let candidates: Vec<Client> = if fenced {
                crate::design::tokened_on(backend)
            } else {
                Client::ALL
                    .into_iter()
                    .filter(|c| c.backend() == backend)
                    .collect()
            };
            let assume = candidates
                .first()
                .map(|c| Assumption::Client { client: *c });
            Some(action(
                Change::ChooseClient {
                    backend,
                    candidates,
                },
                assume,
            ))
        }
        RiskKind::LibraryNotMeasured => {
            let backend = d.backend?;
            let argument = job
                .decision
                .as_ref()?
                .client
                .as_ref()?
                .argument()
                .to_string();
            Some(action(Change::MeasureClient { backend, argument }, None))
        }
        RiskKind::LibraryLate => Some(action(Change::DeadlineOrFence, None)),
        RiskKind::Backend if d.backend == Some(BackendKind::Redis) => {
            Some(action(Change::FenceResource, None))
        }
        RiskKind::RecoveryExceeded => Some(action(Change::ShortenRecovery, None)),
        RiskKind::Backend | RiskKind::LeaseLost | RiskKind::Policy => None,
    }
}

/// The assumptions the next round of "after the actions" takes: the blocking guards first (they
/// change the lock's role, and with it what else is needed), else the blocking library choice.
fn next_round(d: &Decision) -> Vec<Assumption> {
    let blocking = || {
        d.actions
            .iter()
            .filter(|a| a.blocking)
            .filter_map(|a| a.assume.clone())
    };
    let guards: Vec<Assumption> = blocking()
        .filter(|a| matches!(a, Assumption::Guard { .. }))
        .collect();
    if guards.is_empty() {
        blocking().take(1).collect()
    } else {
        guards
    }
}

/// The decision once the blocking actions that change an answer are done: decided again with
/// them assumed, a round at a time (at most three), until it is no longer blocked; `None` when no
/// blocking action changes an answer.
pub(crate) fn after(
    job: &JobAnswers,
    d: &Decision,
    decide: impl Fn(&JobAnswers) -> Decision,
) -> Option<Box<Decision>> {
    let mut job = job.clone();
    let mut assumed: Vec<Assumption> = Vec::new();
    let mut current = d.clone();
    for _ in 0..3 {
        if current.status != Status::Blocked {
            break;
        }
        let round = next_round(&current);
        if round.is_empty() {
            break;
        }
        for a in round {
            // The steps and clients named come from the decision itself: they exist.
            job = a.apply(&job).ok()?;
            assumed.push(a);
        }
        current = decide(&job);
        current.assumed = assumed.clone();
    }
    (!assumed.is_empty()).then(|| Box::new(current))
}
