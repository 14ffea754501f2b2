//! What the record asks people to change: one [`Action`] per residual risk not acceptable yet (the
//! decision is blocked on those) and per mechanism still to add, each with its owner and how to
//! verify it done. An action that changes an answer of the job (a step given a guard, another lock
//! library) is an [`Assumption`] too: `decide --assume` decides again as if it were done, and the
//! record shows the decision after the blocking ones.

use lockbench_core::{BackendKind, Client, ClientChoice};
use lockbench_workloads::{Guard, JobAnswers, Target};
use serde::{Deserialize, Serialize};

use crate::mechanism::{Mechanism, MechanismKind};
use crate::record::{Decision, Residual, RiskKind, Status};

/// One thing to change.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Action {
    /// What to change.
    pub change: Change,
    /// The step it is about, if one.
    pub step: Option<String>,
    /// Who changes it.
    pub owner: String,
    /// True when a residual risk stays not acceptable until it is done.
    pub blocking: bool,
    /// The answer it changes, for `decide --assume`; `None` when it changes none.
    pub assume: Option<Assumption>,
}

/// What an action changes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "change", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Change {
    /// Add a mechanism the design needs.
    Add {
        /// The mechanism.
        mechanism: MechanismKind,
    },
    /// Lock with another library, one that locks on the chosen backend.
    ChooseClient {
        /// The chosen backend.
        backend: BackendKind,
        /// The shipped adapters that fit (that hand out its token, where the resource checks one).
        candidates: Vec<Client>,
    },
    /// Measure the job's lock library in the fault lab.
    MeasureClient {
        /// The backend to measure it on.
        backend: BackendKind,
        /// What `faults --client` takes.
        argument: String,
    },
    /// Bound each write by a deadline of the job's own within the lease, or fence the resource.
    DeadlineOrFence,
    /// Make the resource check a fencing token.
    FenceResource,
    /// Shorten the lease or the keepalive, or raise the crash-recovery budget.
    ShortenRecovery,
}

/// An action assumed done, as `decide --assume` takes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "assume", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Assumption {
    /// The step has a guard of its own: a unique constraint (a database step) or an idempotency
    /// key (a call). `guard:STEP`.
    Guard {
        /// The step.
        step: String,
    },
    /// The job locks with this shipped library. `client:NAME`.
    Client {
        /// The library.
        client: Client,
    },
}

impl Assumption {
    /// `guard:STEP` or `client:NAME`.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text.split_once(':') {
            Some(("guard", step)) if !step.is_empty() => Ok(Assumption::Guard {
                step: step.to_string(),
            }),
            Some(("client", name)) => Client::parse(name)
                .map(|client| Assumption::Client { client })
                .ok_or_else(|| {
                    format!(
                        "unknown client {name:?} in {text:?}; expected one of {}",
                        Client::names()
                    )
                }),
            _ => Err(format!(
                "expected guard:STEP or client:NAME (an action of the record), got {text:?}"
            )),
        }
    }

    /// What `decide --assume` takes for it.
    pub fn argument(&self) -> String {
        match self {
            Assumption::Guard { step } => format!("guard:{step}"),
            Assumption::Client { client } => format!("client:{}", client.name()),
        }
    }

    /// The job's answers with the action done; an error naming the step when the job has none
    /// by that name.
    pub fn apply(&self, job: &JobAnswers) -> Result<JobAnswers, String> {
        let mut job = job.clone();
        match self {
            Assumption::Guard { step } => {
                let Some(s) = job.steps.iter_mut().find(|s| &s.name == step) else {
                    let steps: Vec<&str> = job.steps.iter().map(|s| s.name.as_str()).collect();
                    return Err(format!(
                        "guard:{step}: {} has no step {step:?}; its steps: {}",
                        job.job,
                        steps.join(", ")
                    ));
                };
                s.idempotent = Some(false);
                s.guard = Some(if s.target == Target::Api {
                    Guard::IdempotencyKey
                } else {
                    Guard::UniqueConstraint
                });
            }
            Assumption::Client { client } => {
                let d = job.decision.get_or_insert_with(Default::default);
                d.client = Some(ClientChoice::Shipped(*client));
            }
        }
        Ok(job)
    }
}

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
