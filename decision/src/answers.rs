//! The answers as the rules read them: each one given or, where the spec is silent, assumed the
//! way that cannot make a lock look safer than it is, with the assumption recorded.

use std::time::Duration;

use lockbench_core::{ClientChoice, Service, format_readable};
use lockbench_workloads::{DoubleRun, JobAnswers, PostgresVia, StepAnswers, Target};

use crate::evidence::Evidence;
pub(crate) use crate::prose::{effect, list};
use crate::record::Answer;

/// Every answer with a value.
#[derive(Clone, Debug)]
pub(crate) struct Resolved {
    pub(crate) double_run: DoubleRun,
    pub(crate) already_runs: Vec<Service>,
    pub(crate) databases: u32,
    pub(crate) one_transaction: bool,
    pub(crate) fenced: bool,
    pub(crate) crash_recovery: Option<Duration>,
    pub(crate) postgres_via: PostgresVia,
    /// What bench measured of the path to Postgres, when it did, as the record says it.
    pub(crate) postgres_via_measured: Option<String>,
    /// The Postgres the job locks on has a standby promoted when the primary fails.
    pub(crate) postgres_standby: bool,
    /// The client library the job locks with, as the spec names it.
    pub(crate) choice: Option<ClientChoice>,
    /// That library with what it does: a shipped adapter's, or a user's own as its measured
    /// cells describe it; `None` for an own adapter not measured (the record says so).
    pub(crate) client: Option<lockbench_core::Client>,
    /// The fields the spec gave (or a measurement stands for); the others are assumed.
    pub(crate) given: Vec<Field>,
    /// The service the job's named lock library locks on, when `already_runs` does not list it:
    /// a team that locks with Curator runs ZooKeeper, whatever else it lists.
    pub(crate) runs_through_client: Option<Service>,
}

/// A `[decision]` field the rules read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Field {
    DoubleRun,
    AlreadyRuns,
    Databases,
    OneTransaction,
    Fenced,
    CrashRecovery,
    PostgresVia,
    PostgresStandby,
}

impl Field {
    /// Every field, in the order the record lists them.
    pub(crate) const ALL: [Field; 8] = [
        Field::DoubleRun,
        Field::AlreadyRuns,
        Field::Databases,
        Field::OneTransaction,
        Field::Fenced,
        Field::CrashRecovery,
        Field::PostgresVia,
        Field::PostgresStandby,
    ];

    /// Its name in the spec.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Field::DoubleRun => "double_run",
            Field::AlreadyRuns => "already_runs",
            Field::Databases => "databases",
            Field::OneTransaction => "one_transaction",
            Field::Fenced => "fenced",
            Field::CrashRecovery => "crash_recovery",
            Field::PostgresVia => "postgres_via",
            Field::PostgresStandby => "postgres_standby",
        }
    }
}

impl Resolved {
    /// The answers of `job`, missing ones assumed.
    pub(crate) fn of(job: &JobAnswers) -> Self {
        let d = job.decision.clone().unwrap_or_default();
        // Every backend then counts as new infrastructure.
        let mut already_runs = d.already_runs.clone().unwrap_or_default();
        let client = d.client.as_ref().and_then(ClientChoice::shipped);
        let runs_through_client = client
            .and_then(|c| c.backend().service())
            .filter(|s| !already_runs.contains(s));
        already_runs.extend(runs_through_client);
        Resolved {
            // The worst a double run can do to the job's own data.
            double_run: d.double_run.unwrap_or(DoubleRun::Corrupts),
            already_runs,
            runs_through_client,
            databases: d.databases.unwrap_or(1),
            one_transaction: d.one_transaction.unwrap_or(false),
            fenced: d.fenced.unwrap_or(false),
            crash_recovery: d.crash_recovery,
            // As a connection string says: straight to the server. The record lists it as
            // assumed, with what a pooler would change.
            postgres_via: d.postgres_via.unwrap_or(PostgresVia::Direct),
            postgres_via_measured: None,
            // Production Postgres runs with a standby more often than not, and assuming none
            // would make a session lock look safer than a failover leaves it.
            postgres_standby: d.postgres_standby.unwrap_or(true),
            client,
            choice: d.client.clone(),
            given: Field::ALL
                .into_iter()
                .filter(|f| match f {
                    Field::DoubleRun => d.double_run.is_some(),
                    Field::AlreadyRuns => d.already_runs.is_some(),
                    Field::Databases => d.databases.is_some(),
                    Field::OneTransaction => d.one_transaction.is_some(),
                    Field::Fenced => d.fenced.is_some(),
                    Field::CrashRecovery => d.crash_recovery.is_some(),
                    Field::PostgresVia => d.postgres_via.is_some(),
                    Field::PostgresStandby => d.postgres_standby.is_some(),
                })
                .collect(),
        }
    }

    /// The answers with what bench measured of the path to Postgres. A transaction-mode pooler
    /// found overrides the answer. Finding none stands for an answer left out, but not against
    /// an answered pooler: the URL bench measured (staging's) may not be the job's.
    pub(crate) fn measured(mut self, ev: &Evidence) -> Self {
        if let Some(ClientChoice::Own(path)) = &self.choice {
            // A user's own adapter is known by what its cells say it is.
            let name = lockbench_core::own_name(path);
            self.client = ev
                .library_cells_named(&name)
                .first()
                .and_then(|c| c.client.as_ref())
                .map(|u| u.name);
        }
        let Some((backend, found)) = ev.transaction_pooler else {
            return self;
        };
        let answered = self.is_given(Field::PostgresVia);
        let note = match (
            found,
            answered && self.postgres_via != PostgresVia::TransactionPooler,
        ) {
            (true, true) => format!(
                "measured: bench found a transaction-mode pooler on {backend}'s URL, which overrides the answer `{}`",
                self.postgres_via.name()
            ),
            (true, false) => {
                format!("measured: bench found a transaction-mode pooler on {backend}'s URL")
            }
            (false, _) if answered => format!(
                "answered; bench found no transaction-mode pooler on {backend}'s URL, which may not be the job's"
            ),
            (false, _) => {
                format!("measured: bench found no transaction-mode pooler on {backend}'s URL")
            }
        };
        if found {
            self.postgres_via = PostgresVia::TransactionPooler;
        }
        if !answered {
            self.given.push(Field::PostgresVia);
        }
        self.postgres_via_measured = Some(note);
        self
    }

    /// True when the spec gave `field` (or a measurement stands for it).
    pub(crate) fn is_given(&self, field: Field) -> bool {
        self.given.contains(&field)
    }

    /// The client library the job locks on `kind` with, when it is one that hands out no
    /// fencing token: the resource's fence then has nothing to check on `kind`.
    pub(crate) fn tokenless_client(
        &self,
        kind: lockbench_core::BackendKind,
    ) -> Option<lockbench_core::Client> {
        self.client
            .filter(|c| c.backend() == kind && !c.gives_fencing_token())
    }

    /// True when the job already depends on `service`.
    pub(crate) fn runs(&self, service: Option<Service>) -> bool {
        service.is_some_and(|s| self.already_runs.contains(&s))
    }

    /// The `client` answer as the record lists it: a shipped adapter's name, or the team's own
    /// adapter's path with what its cells say it is, or that it is not measured.
    fn client_answer(&self) -> Option<Answer> {
        let choice = self.choice.as_ref()?;
        let value = match (choice, self.client) {
            (ClientChoice::Shipped(c), _) => c.name().to_string(),
            (ClientChoice::Own(path), Some(lockbench_core::Client::Own(own))) => format!(
                "`{path}`, the team's own adapter: {} {} on {}, as measured",
                own.library, own.version, own.backend
            ),
            (ClientChoice::Own(path), _) => {
                format!("`{path}`, the team's own adapter, not measured in these results")
            }
        };
        Some(Answer {
            field: "client".to_string(),
            value,
            given: true,
        })
    }

    /// A field's value as the record lists it.
    fn value(&self, field: Field) -> String {
        match field {
            Field::DoubleRun => self.double_run.name().to_string(),
            Field::AlreadyRuns if self.already_runs.is_empty() => "nothing".to_string(),
            Field::AlreadyRuns => {
                let listed = self
                    .already_runs
                    .iter()
                    .map(|s| s.name())
                    .collect::<Vec<_>>()
                    .join(", ");
                match (self.runs_through_client, self.client) {
                    (Some(s), Some(c)) => format!("{listed} ({} through client = {c})", s.name()),
                    _ => listed,
                }
            }
            Field::Databases => self.databases.to_string(),
            Field::OneTransaction => self.one_transaction.to_string(),
            Field::Fenced => self.fenced.to_string(),
            Field::CrashRecovery => self
                .crash_recovery
                .map_or("no bound".to_string(), format_readable),
            Field::PostgresVia => match &self.postgres_via_measured {
                Some(note) => format!("{} ({note})", self.postgres_via.name()),
                None => self.postgres_via.name().to_string(),
            },
            Field::PostgresStandby => self.postgres_standby.to_string(),
        }
    }

    /// The answers as the record lists them.
    pub(crate) fn listed(&self, job: &JobAnswers) -> Vec<Answer> {
        let mut out: Vec<Answer> = Field::ALL
            .into_iter()
            .map(|field| Answer {
                field: field.name().to_string(),
                value: self.value(field),
                given: self.is_given(field),
            })
            .collect();
        out.push(Answer {
            field: "schedule".to_string(),
            // An assumed one is marked so by the record, without the clause that says it again.
            value: if job.frequency.from.assumed() {
                format!("{} runs a year", job.frequency.runs_per_year)
            } else {
                job.frequency.from.runs_a_year(job.frequency.runs_per_year)
            },
            given: !job.frequency.from.assumed(),
        });
        out.extend(self.client_answer());
        for s in &job.steps {
            out.push(Answer {
                field: format!("steps.{}.idempotent", s.name),
                value: if s.idempotent == Some(true) {
                    "yes"
                } else {
                    "no"
                }
                .to_string(),
                given: s.idempotent.is_some(),
            });
            if s.idempotent != Some(true) {
                out.push(Answer {
                    field: format!("steps.{}.guard", s.name),
                    value: s.guard.map_or("none", |g| g.name()).to_string(),
                    given: s.guard.is_some(),
                });
            }
        }
        out
    }
}

/// The steps a double run harms through: not idempotent and with no guard of their own, split
/// into those that write to the database (a fence or the lock's transaction can cover them) and
/// those that reach outside it (only their own guard can).
pub(crate) struct Exposure<'a> {
    /// Unguarded database steps.
    pub(crate) inside: Vec<&'a StepAnswers>,
    /// Unguarded steps outside the database (API calls, local effects).
    pub(crate) outside: Vec<&'a StepAnswers>,
    /// Steps with a guard of their own (not idempotent).
    pub(crate) guarded: Vec<&'a StepAnswers>,
}

impl<'a> Exposure<'a> {
    /// The exposure of `job` when a double run does `double_run`: none when it does no harm.
    pub(crate) fn of(job: &'a JobAnswers, double_run: DoubleRun) -> Self {
        let harms = double_run.harms();
        let unguarded = |s: &&StepAnswers| harms && s.unguarded();
        Exposure {
            inside: job
                .steps
                .iter()
                .filter(unguarded)
                .filter(|s| s.target == Target::Db)
                .collect(),
            outside: job
                .steps
                .iter()
                .filter(unguarded)
                .filter(|s| s.target != Target::Db)
                .collect(),
            guarded: job
                .steps
                .iter()
                .filter(|s| s.idempotent != Some(true) && !s.unguarded())
                .collect(),
        }
    }
}

/// "`a`", "`a` and `b`", "`a`, `b` and `c`".
pub(crate) fn names(steps: &[&StepAnswers]) -> String {
    list(steps.iter().map(|s| format!("`{}`", s.name)).collect())
}
