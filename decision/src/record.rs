//! The decision as a value: what `lockbench decide --json` prints and what the report renders.
//! Every choice carries its reason and, where the evidence holds one, the measurement behind it.

use lockbench_core::BackendKind;
use serde::{Deserialize, Serialize};

/// The decision for one job.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Decision {
    /// The workload's name.
    pub job: String,
    /// The spec the answers came from.
    pub spec: String,
    /// `proposed`, or why it is not yet.
    pub status: Status,
    /// What the decision rests on besides the answers, in one line ("measured: ..." or "from how
    /// each backend locks: no results given").
    pub basis: String,
    /// Every answer the rules read, as given or as assumed.
    pub answers: Vec<Answer>,
    /// What a second concurrent run does, as the rules read it (given or assumed).
    pub double_run: lockbench_workloads::DoubleRun,
    /// Whether the lock is the job's correctness mechanism or a serialization aid, and why.
    pub role: Role,
    /// The chosen backend; `None` when every backend is rejected.
    pub backend: Option<BackendKind>,
    /// True when the chosen backend is infrastructure the job does not run yet.
    pub adds_infrastructure: bool,
    /// How the chosen lock lasts: a fixed TTL, a heartbeat lease, a session or a transaction.
    pub lock_model: LockModel,
    /// What the design needs besides the lock, each with its reason.
    pub mechanisms: Vec<crate::mechanism::Mechanism>,
    /// What a worker does when it cannot get the lock.
    pub failure_policy: FailurePolicy,
    /// Every backend with its verdict and the one fact that decides it, the chosen one first.
    pub alternatives: Vec<Verdict>,
    /// The two jobs of a TTL reconciled: how long a crash blocks the job, against what is allowed.
    pub crash_recovery: CrashRecovery,
    /// What the chosen design still does not prevent, and who must handle it.
    pub residual: Vec<Residual>,
    /// Each step: what a double run of it does, given its answers.
    pub steps: Vec<StepRow>,
    /// Answers the spec does not give, what was assumed and what each would change.
    pub missing: Vec<MissingAnswer>,
    /// Where a measurement overruled what the rules predicted.
    pub overruled: Vec<String>,
    /// What to change, each with its owner and whether the decision is blocked on it; the ones
    /// that block come first.
    pub actions: Vec<crate::action::Action>,
    /// The actions this decision assumes done (`decide --assume`, or the record's decision after
    /// its blocking actions); empty for the decision on the answers as given.
    pub assumed: Vec<crate::action::Assumption>,
    /// The decision once the actions it is blocked on are done (decided again with them
    /// assumed); `None` when it is not blocked, or when no answer of the job's changes with them.
    pub after: Option<Box<Decision>>,
}

/// Whether the decision can be acted on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Every answer given: ready for review.
    Proposed,
    /// A residual risk is not acceptable yet: the decision waits for the actions that remove it.
    Blocked,
    /// Some answers missing: decided under the assumptions listed.
    Assumed,
    /// `double_run` is not answered: without it no choice is defensible.
    Undecided,
}

impl Status {
    /// How the record names it.
    pub fn name(self) -> &'static str {
        match self {
            Status::Proposed => "proposed",
            Status::Blocked => "blocked on its actions",
            Status::Assumed => "proposed on assumptions",
            Status::Undecided => "undecided",
        }
    }
}

/// One answer as the rules read it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Answer {
    /// The spec field (`double_run`, `steps.charge_payment.guard`).
    pub field: String,
    /// Its value as the rules used it.
    pub value: String,
    /// False when the spec does not give it and the value is an assumption.
    pub given: bool,
}

/// The lock's role for this job.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Role {
    /// True when the lock (with a fence or a transaction) is what keeps the job correct; false
    /// when it only saves the work a second run would waste.
    pub correctness: bool,
    /// Why, in one sentence.
    pub reason: String,
}

impl Role {
    /// What the lock is for this job, in words.
    pub fn name(&self) -> &'static str {
        if self.correctness {
            "the correctness mechanism"
        } else {
            "a serialization aid"
        }
    }
}

/// How the chosen lock lasts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ModelKind {
    /// One acquisition with a TTL that covers the job's measured worst case.
    FixedTtl,
    /// A short lease renewed on a heartbeat; the job stops at the give-up deadline.
    HeartbeatLease,
    /// Held as long as the job's database session (Postgres session advisory lock).
    Session,
    /// Held as long as the job's transaction (Postgres transaction advisory lock).
    Transaction,
}

impl ModelKind {
    /// How the record names it.
    pub fn name(self) -> &'static str {
        match self {
            ModelKind::FixedTtl => "fixed TTL",
            ModelKind::HeartbeatLease => "heartbeat lease",
            ModelKind::Session => "session lifetime",
            ModelKind::Transaction => "transaction lifetime",
        }
    }
}

/// The lock model with its figures where `ttl` measured them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockModel {
    /// Which model.
    pub kind: ModelKind,
    /// Fixed TTL; `None` for other models or when not measured.
    pub ttl_s: Option<f64>,
    /// Heartbeat lease; `None` for other models or when not measured.
    pub lease_s: Option<f64>,
    /// Renew this often; `None` as above.
    pub renew_every_s: Option<f64>,
    /// Stop work when no renewal succeeded for this long; `None` as above.
    pub give_up_after_s: Option<f64>,
    /// Why this model, in one sentence, with where its figures come from.
    pub reason: String,
}

/// What a worker does when it cannot get the lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PolicyKind {
    /// Skip this run and alert; the next window (or a person) runs it.
    SkipAndAlert,
    /// Retry with backoff until the next window.
    Queue,
    /// Run without the lock.
    RunUnlocked,
    /// Retry with backoff for as long as the crash-recovery budget allows, then alert: for a lock
    /// that cannot be granted while its holder lives, so a retry cannot overlap it.
    RetryThenAlert,
}

impl PolicyKind {
    /// How the record names it.
    pub fn name(self) -> &'static str {
        match self {
            PolicyKind::SkipAndAlert => "skip and alert",
            PolicyKind::Queue => "queue for the next window",
            PolicyKind::RunUnlocked => "run without the lock",
            PolicyKind::RetryThenAlert => "retry within the crash-recovery budget, then alert",
        }
    }

    /// The fault lab's `outage` variant that measures it.
    pub fn outage_variant(self) -> lockbench_core::Variant {
        use lockbench_core::fault::OnFailure;
        lockbench_core::Variant::Outage(match self {
            PolicyKind::SkipAndAlert => OnFailure::Skip,
            PolicyKind::Queue | PolicyKind::RetryThenAlert => OnFailure::Queue,
            PolicyKind::RunUnlocked => OnFailure::RunUnlocked,
        })
    }
}

/// The acquisition-failure policy.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FailurePolicy {
    /// Which policy.
    pub kind: PolicyKind,
    /// Why, from the answers.
    pub reason: String,
    /// How long to retry before alerting (the crash-recovery budget), seconds; `None` for a
    /// policy that does not retry or retries until the next window.
    pub retry_for_s: Option<f64>,
    /// What the lab measured for each policy, where it ran `outage`.
    pub measured: Vec<String>,
}

/// A backend's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VerdictKind {
    /// The decision.
    Chosen,
    /// Would do, but another fits better.
    Acceptable,
    /// Does not fit this job.
    Rejected,
}

impl VerdictKind {
    /// How the record names it.
    pub fn name(self) -> &'static str {
        match self {
            VerdictKind::Chosen => "chosen",
            VerdictKind::Acceptable => "acceptable",
            VerdictKind::Rejected => "rejected",
        }
    }
}

/// What rules a backend out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reason {
    /// In-process only (the zero-network baseline).
    InProcess,
    /// The workers write to several databases; an advisory lock is scoped to one.
    Databases,
    /// A session lock through a transaction-mode pooler.
    TransactionPooler,
    /// The critical section is not one transaction.
    NotOneTransaction,
    /// Its server loses the key on a restart or a failover (or a node, for Redlock).
    LosesKey,
    /// It overlapped in the lab where nothing the design includes prevents it.
    Overlapped,
    /// No fencing token the resource can check reaches the unguarded writes.
    NoToken,
    /// Neither a fence nor the lock's transaction covers the unguarded writes.
    Uncovered,
    /// More infrastructure than the double run calls for.
    Cost,
}

impl Reason {
    /// A few words for a table cell.
    pub fn short(self) -> &'static str {
        match self {
            Reason::InProcess => "in-process only",
            Reason::Databases => "one database only",
            Reason::TransactionPooler => "a transaction-mode pooler",
            Reason::NotOneTransaction => "not one transaction",
            Reason::LosesKey => "loses the key",
            Reason::Overlapped => "overlapped (lab)",
            Reason::NoToken => "no token to check",
            Reason::Uncovered => "writes unprotected",
            Reason::Cost => "more infrastructure",
        }
    }
}

/// Where a deciding fact comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FactBasis {
    /// One of the job's answers.
    Answer,
    /// A fault-lab cell.
    Measured,
    /// What it costs (infrastructure, measured latency).
    Cost,
    /// How the backend locks (docs/BACKENDS.md).
    Design,
}

/// One backend and the fact that decides it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Verdict {
    /// The backend.
    pub backend: BackendKind,
    /// Its verdict.
    pub verdict: VerdictKind,
    /// Why it was rejected, as a kind; `None` when it was not.
    pub reason: Option<Reason>,
    /// The one fact that decides it.
    pub fact: String,
    /// Where that fact comes from.
    pub basis: FactBasis,
    /// Uncontended acquire P99 measured by `bench`; `None` when not measured.
    pub acquire_p99_us: Option<f64>,
    /// The acquisitions behind it; below 100, `acquire_p99_us` is their maximum, not a P99.
    pub acquire_samples: Option<u64>,
    /// The lab's `scenario/variant`s under which it overlapped.
    pub overlapped_under: Vec<String>,
    /// How long a crashed holder blocked the next grant in the lab (`crash`), seconds.
    pub crash_recovery_s: Option<f64>,
    /// How long a holder whose host vanished blocked the next grant in the lab, with the
    /// design's settings (Postgres: the per-connection keepalive), the longest over the trials,
    /// seconds; `None` when not measured, or not granted within the wait.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vanished_host_s: Option<f64>,
}

impl Verdict {
    /// Its uncontended acquisition as the record cites it: "P99 421 us", or "max of 60: 1.20 ms"
    /// when too few were timed for a P99; `None` when not measured.
    pub fn acquire_figure(&self) -> Option<String> {
        let (us, samples) = self.acquire_p99_us.zip(self.acquire_samples)?;
        // Below 100 samples `acquire_p99_us` already holds their maximum.
        Some(crate::evidence::p99_figure(us, samples, us))
    }
}

/// Crash recovery against what the job allows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrashRecovery {
    /// `crash_recovery` from the answers; `None` when not answered.
    pub allowed_s: Option<f64>,
    /// The fixed TTL `ttl` measured for the job; `None` when not measured.
    pub fixed_ttl_s: Option<f64>,
    /// How long the chosen design blocks the job after its holder dies, at most; `None` when
    /// not known.
    pub chosen_s: Option<f64>,
    /// True when `chosen_s` is within `allowed_s`; `None` when either is unknown.
    pub within: Option<bool>,
    /// The reconciliation, in words.
    pub note: String,
}

/// A risk the chosen design still carries.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Residual {
    /// Which kind of risk: what removes it follows from it.
    pub kind: RiskKind,
    /// The step it is about, if one.
    pub step: Option<String>,
    /// The risk.
    pub risk: String,
    /// True when the job can carry it as the design stands; false for a risk that must be
    /// removed first (a mechanism still to add, a budget exceeded).
    pub accepted: bool,
    /// Why it is acceptable for this job, or what must change before it is.
    pub why: String,
    /// Who must handle it.
    pub owner: String,
}

/// What a residual risk is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RiskKind {
    /// A step that a rerun or a second run repeats, until it has a guard of its own.
    Unguarded,
    /// A heartbeat lease lost to a stall.
    LeaseLost,
    /// What the chosen backend itself cannot prevent.
    Backend,
    /// The job's lock library tells its holder of a lost lock late or never.
    LibraryLate,
    /// The job's lock library is not measured in these results.
    LibraryNotMeasured,
    /// The job's lock library does not lock on the chosen backend.
    ClientMismatch,
    /// A crash blocks the job for longer than its owners allow.
    RecoveryExceeded,
    /// What the acquisition-failure policy leaves.
    Policy,
}

/// One step of the job.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepRow {
    /// The step's name.
    pub step: String,
    /// `db`, `api` or `cpu`.
    pub target: String,
    /// `yes`, `no`, or `not answered`.
    pub idempotent: String,
    /// Its guard, `none`, or `not answered`.
    pub guard: String,
    /// What a double run of this step does.
    pub double_run: String,
}

/// An answer the spec does not give.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MissingAnswer {
    /// The spec field.
    pub field: String,
    /// What the rules assumed.
    pub assumed: String,
    /// What answering it would change (computed by deciding again with each other value).
    pub would_change: String,
}
