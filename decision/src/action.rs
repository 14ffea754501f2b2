//! The actions as values: what to change ([`Action`], [`Change`]) and an action assumed done, as
//! `decide --assume` takes it ([`Assumption`]). Which actions a decision has is `actions`'s; what
//! the record says of each is `verify`'s.

use lockbench_core::{BackendKind, Client, ClientChoice};
use lockbench_workloads::{Guard, JobAnswers, Target};
use serde::{Deserialize, Serialize};

use crate::mechanism::MechanismKind;

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
