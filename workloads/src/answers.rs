//! The job's answers: what the decision rules must know about a job that no runtime measurement
//! can tell them. They live in the spec, as a `[decision]` table and two fields per step, and are
//! typed and checked here, in one place, whether they come from a spec file
//! ([`crate::WorkloadSpec::answers`]) or from a spec recorded in a results directory's manifest
//! ([`JobAnswers::from_spec_text`]).

use std::path::{Path, PathBuf};
use std::time::Duration;

use lockbench_core::Service;
use serde::{Deserialize, Deserializer, Serialize};

use crate::duration;
use crate::error::SpecError;
use crate::schedule::Frequency;
use crate::target::Target;

/// What a second run of the job, concurrent with the first, does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DoubleRun {
    /// Nothing anyone notices: downstream deduplication absorbs the duplicate rows.
    Absorbed,
    /// The work is done twice and thrown away once: a cost, not a fault.
    WastedWork,
    /// The job's own data is corrupted (a running total counted twice, a migration applied
    /// twice).
    Corrupts,
    /// Customers are charged twice (an external effect no rollback undoes).
    Charges,
}

impl DoubleRun {
    /// Every answer, from the mildest.
    pub const ALL: [DoubleRun; 4] = [
        DoubleRun::Absorbed,
        DoubleRun::WastedWork,
        DoubleRun::Corrupts,
        DoubleRun::Charges,
    ];

    /// Its name in specs and reports.
    pub fn name(self) -> &'static str {
        match self {
            DoubleRun::Absorbed => "absorbed",
            DoubleRun::WastedWork => "wasted-work",
            DoubleRun::Corrupts => "corrupts",
            DoubleRun::Charges => "charges",
        }
    }

    /// True when a double run does harm that outlives it (corrupted data, a double charge).
    pub fn harms(self) -> bool {
        matches!(self, DoubleRun::Corrupts | DoubleRun::Charges)
    }
}

/// A step's own protection against running twice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Guard {
    /// The callee deduplicates by a key the caller sends (a payment processor's idempotency key).
    IdempotencyKey,
    /// A unique constraint refuses the second insert.
    UniqueConstraint,
    /// An update that applies only from the expected state (`... WHERE status = 'due'`).
    ConditionalUpdate,
    /// Optimistic concurrency: a version column checked and bumped by the write.
    VersionCheck,
    /// No protection of its own.
    None,
}

impl Guard {
    /// Its name in specs and reports.
    pub fn name(self) -> &'static str {
        match self {
            Guard::IdempotencyKey => "idempotency-key",
            Guard::UniqueConstraint => "unique-constraint",
            Guard::ConditionalUpdate => "conditional-update",
            Guard::VersionCheck => "version-check",
            Guard::None => "none",
        }
    }
}

/// What the job's Postgres URL goes through to reach the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PostgresVia {
    /// Straight to the server (or a connection of the lock's own that bypasses any pooler).
    Direct,
    /// A pooler that gives each client connection one server connection for its life (PgBouncer
    /// `pool_mode = session`).
    SessionPooler,
    /// A pooler that hands server connections out per transaction (PgBouncer `pool_mode =
    /// transaction` or `statement`, and most managed poolers' default).
    TransactionPooler,
}

impl PostgresVia {
    /// Every answer.
    pub const ALL: [PostgresVia; 3] = [
        PostgresVia::Direct,
        PostgresVia::SessionPooler,
        PostgresVia::TransactionPooler,
    ];

    /// Its name in specs and reports.
    pub fn name(self) -> &'static str {
        match self {
            PostgresVia::Direct => "direct",
            PostgresVia::SessionPooler => "session-pooler",
            PostgresVia::TransactionPooler => "transaction-pooler",
        }
    }
}

/// The `[decision]` table of a spec. Every answer may be left out: the decision then says which
/// are missing and what each would change.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DecisionAnswers {
    /// What a second concurrent run does.
    #[serde(default)]
    pub double_run: Option<DoubleRun>,
    /// Services the job already depends on.
    #[serde(default)]
    pub already_runs: Option<Vec<Service>>,
    /// Separate databases the coordinating workers write to.
    #[serde(default, deserialize_with = "at_least_one")]
    pub databases: Option<u32>,
    /// The whole critical section is one database transaction.
    #[serde(default)]
    pub one_transaction: Option<bool>,
    /// The protected resource rejects a write carrying a stale fencing token.
    #[serde(default)]
    pub fenced: Option<bool>,
    /// The longest the job may stay blocked after its lock holder dies.
    #[serde(
        default,
        deserialize_with = "duration::deserialize_option",
        serialize_with = "seconds_option"
    )]
    pub crash_recovery: Option<Duration>,
    /// What the job's Postgres URL goes through: a session lock through a transaction-mode
    /// pooler stays on a server connection the pooler hands to other clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub postgres_via: Option<PostgresVia>,
    /// The Postgres the job locks on has a streaming standby that is promoted when the primary
    /// fails: an advisory lock is in the primary's memory and the promoted standby grants it
    /// at once, which the fault lab's `cluster/primary-promoted` measures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub postgres_standby: Option<bool>,
    /// The client library the job locks with (`redis-py`, `pottery`, `kazoo`, or the path of the
    /// team's own adapter; docs/CLIENTS.md). What it hands out decides what the resource can
    /// refuse: a library without fencing tokens leaves the fence nothing to check. Absent: a
    /// client that gives the backend's tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<lockbench_core::ClientChoice>,
}

/// One step's answers (read as they are from a recorded spec's `[[steps]]`, other fields ignored).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepAnswers {
    /// The step's name.
    pub name: String,
    /// What it calls: a database step can be covered by a fence or a transaction, an API call
    /// only by its own guard.
    pub target: Target,
    /// Running it twice has the effect of running it once; `None` when not answered.
    #[serde(default)]
    pub idempotent: Option<bool>,
    /// Its own protection; `None` when not answered.
    #[serde(default)]
    pub guard: Option<Guard>,
    /// It alters a table (ACCESS EXCLUSIVE until COMMIT): a lock held in its transaction blocks
    /// every read and write of that table until the job commits.
    #[serde(default)]
    pub alters_table: bool,
}

impl StepAnswers {
    /// True when running the step twice does harm its own guard does not stop: not idempotent
    /// (or not said to be) and no guard (or none said).
    pub fn unguarded(&self) -> bool {
        self.idempotent != Some(true) && matches!(self.guard, None | Some(Guard::None))
    }
}

/// Everything a job answers, with where it came from.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct JobAnswers {
    /// The workload's name.
    pub job: String,
    /// The spec file (as given, or as recorded).
    pub spec: PathBuf,
    /// The `[decision]` table; `None` when the spec has none.
    pub decision: Option<DecisionAnswers>,
    /// Every step, in order.
    pub steps: Vec<StepAnswers>,
    /// How often the job runs (`[workload] schedule` or `runs_per_year`; monthly assumed).
    pub frequency: Frequency,
    /// The volume the lock must hold at (`[workload] target_volume`); `None` when not answered.
    pub target_volume: Option<u64>,
}

/// The parts of a spec the answers need, read leniently (a recorded spec's latency files may be
/// gone; its answers are still readable).
#[derive(Deserialize)]
struct RecordedSpec {
    workload: RecordedWorkload,
    #[serde(default)]
    decision: Option<DecisionAnswers>,
    #[serde(default)]
    steps: Vec<StepAnswers>,
}

#[derive(Deserialize)]
struct RecordedWorkload {
    name: String,
    #[serde(default)]
    schedule: Option<String>,
    #[serde(default)]
    runs_per_year: Option<f64>,
    #[serde(default)]
    target_volume: Option<u64>,
}

impl JobAnswers {
    /// The answers of a spec's text as a results directory recorded it: only the workload's name,
    /// the `[decision]` table and the steps' names, targets and answers are read, and checked as
    /// [`crate::WorkloadSpec::load`] checks them.
    pub fn from_spec_text(text: &str, path: &Path) -> Result<Self, SpecError> {
        let invalid = |field: String, message: String| SpecError::Invalid {
            file: path.to_path_buf(),
            line: None,
            field,
            message,
        };
        let deserializer = toml::Deserializer::parse(text)
            .map_err(|e| invalid(String::new(), e.message().to_string()))?;
        let recorded: RecordedSpec = serde_path_to_error::deserialize(deserializer)
            .map_err(|e| invalid(e.path().to_string(), e.into_inner().message().to_string()))?;
        let w = recorded.workload;
        let frequency = Frequency::of_workload(w.schedule.as_deref(), w.runs_per_year)
            .map_err(|(field, message)| invalid(field, message))?;
        let answers = JobAnswers {
            job: w.name,
            spec: path.to_path_buf(),
            decision: recorded.decision,
            steps: recorded.steps,
            frequency,
            target_volume: w.target_volume,
        };
        answers
            .check()
            .map_err(|(field, message)| invalid(field, message))?;
        Ok(answers)
    }

    /// The answers that contradict each other or the steps, as (field, message): the same
    /// checks whichever way the answers were read.
    pub(crate) fn check(&self) -> Result<(), (String, String)> {
        for (i, step) in self.steps.iter().enumerate() {
            if step.alters_table && step.target != Target::Db {
                return Err((
                    format!("steps[{i}].alters_table"),
                    format!(
                        "step \"{}\" calls {}: only a database step alters a table; remove alters_table or set target = \"db\"",
                        step.name,
                        step.target.name()
                    ),
                ));
            }
            if step.idempotent == Some(true)
                && let Some(guard) = step.guard.filter(|g| *g != Guard::None)
            {
                return Err((
                    format!("steps[{i}].guard"),
                    format!(
                        "step \"{}\" is marked idempotent = true, so it needs no guard (got \"{}\"); remove the guard or set idempotent = false",
                        step.name,
                        guard.name()
                    ),
                ));
            }
        }
        let Some(d) = &self.decision else {
            return Ok(());
        };
        if let Some(services) = &d.already_runs {
            for (i, s) in services.iter().enumerate() {
                if services[..i].contains(s) {
                    return Err((
                        format!("decision.already_runs[{i}]"),
                        format!("\"{}\" is listed twice", s.name()),
                    ));
                }
            }
        }
        if d.crash_recovery.is_some_and(|c| c.is_zero()) {
            return Err((
                "decision.crash_recovery".into(),
                "expected a duration above zero, like \"15m\": no lock frees itself the instant its holder dies".into(),
            ));
        }
        if d.one_transaction == Some(true)
            && let Some(n) = d.databases.filter(|n| *n > 1)
        {
            return Err((
                "decision.one_transaction".into(),
                format!(
                    "one database transaction cannot span the {n} databases of decision.databases; set one_transaction = false or databases = 1"
                ),
            ));
        }
        if d.double_run.is_some_and(DoubleRun::harms)
            && !self.steps.is_empty()
            && self.steps.iter().all(|s| s.idempotent == Some(true))
        {
            let double_run = d.double_run.map_or("", DoubleRun::name);
            return Err((
                "decision.double_run".into(),
                format!(
                    "\"{double_run}\" says a second run does harm, yet every step is marked idempotent = true; mark the step that does it idempotent = false"
                ),
            ));
        }
        Ok(())
    }
}

fn at_least_one<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    let v = i64::deserialize(d)?;
    u32::try_from(v)
        .ok()
        .filter(|v| *v >= 1)
        .map(Some)
        .ok_or_else(|| {
            serde::de::Error::custom(format!(
                "expected a whole number of databases, at least 1, got {v}"
            ))
        })
}

fn seconds_option<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_some(&d.as_secs_f64()),
        None => s.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: &str = r#"
[workload]
name = "billing"
volume = 10

[decision]
double_run = "charges"
already_runs = ["postgres"]
databases = 1
crash_recovery = "15m"

[[steps]]
name = "charge"
target = "api"
latency = "100ms"
idempotent = false
guard = "idempotency-key"
"#;

    #[test]
    fn a_recorded_spec_gives_its_answers_whatever_else_it_holds() {
        let a = JobAnswers::from_spec_text(SPEC, Path::new("billing.toml")).unwrap();
        assert_eq!(a.job, "billing");
        let d = a.decision.unwrap();
        assert_eq!(d.double_run, Some(DoubleRun::Charges));
        assert_eq!(d.already_runs, Some(vec![Service::Postgres]));
        assert_eq!(d.crash_recovery, Some(Duration::from_secs(900)));
        assert_eq!(d.fenced, None);
        assert_eq!(a.steps[0].guard, Some(Guard::IdempotencyKey));
        assert!(!a.steps[0].unguarded());
    }

    #[test]
    fn a_step_with_no_answers_counts_as_unguarded() {
        let step = StepAnswers {
            name: "x".into(),
            target: Target::Db,
            idempotent: None,
            guard: None,
            alters_table: false,
        };
        assert!(step.unguarded());
        let idempotent = StepAnswers {
            idempotent: Some(true),
            ..step.clone()
        };
        assert!(!idempotent.unguarded());
    }
}
