//! The replay's plan and the types every other module shares: what the user asked for
//! ([`LiveOptions`], [`LockMode`]), what a spec becomes ([`JobKind`], [`Action`], [`classify`]),
//! what the workers share for the whole replay ([`ReplayPlan`]), a worker and a run's state, and what
//! a replay reports ([`LiveReport`]). A leaf: it imports no module of this crate but the leaf
//! clients it holds (the stub's ledger and client, a worker's call costs).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lockbench_core::RuntimeHistogram;
use lockbench_core::records::replay::{InjectedLatency, JobRunRecord};
use lockbench_locks::{BackendConfig, HeartbeatPolicy, LockBackend, LockError};
use lockbench_workloads::{JobModel, LiveScenario, Target};
use sqlx::PgConnection;
use sqlx::postgres::PgConnectOptions;
use tokio::sync::watch;

use crate::costs::CallCosts;
use crate::stub::{Ledger, StubClient};

/// Most items (customers) one live run may have: each is several real round trips.
pub const MAX_LIVE_ITEMS: u64 = 200_000;
/// Rows of a migration's real table at most: the injected latency carries the rest of the volume.
pub(crate) const MAX_REAL_ROWS: u64 = 20_000;
pub(crate) const MIN_REAL_ROWS: u64 = 100;

/// How the job holds its lock.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LockMode {
    /// One acquisition with this TTL (real-equivalent), never renewed: what the story did.
    FixedTtl(Duration),
    /// A short lease renewed on a heartbeat (real-equivalent figures); the job stops when the
    /// heartbeat says the lease may be gone.
    Heartbeat(HeartbeatPolicy),
}

/// What a live replay needs besides the model.
#[derive(Clone, Debug)]
pub struct LiveOptions {
    /// Job runs.
    pub runs: u32,
    /// Workers racing for the lock (the first starts the job, the others retry).
    pub workers: usize,
    /// Multiplier on every injected latency, episode, pause and TTL.
    pub time_scale: f64,
    /// Seed: run `i` has the episodes the simulator draws for replay `i`.
    pub seed: u64,
    /// Fixed TTL or heartbeat.
    pub mode: LockMode,
    /// Writes carry the fencing token and Postgres refuses stale ones.
    pub fencing: bool,
    /// Charges carry an idempotency key (period and customer).
    pub idempotency_keys: bool,
    /// Where the job's tables live (plain-text connection: the proxy reads the protocol).
    pub database_url: String,
    /// The lock backend under test.
    pub backend: BackendConfig,
    /// Most wall time one run may take before it is abandoned as an error.
    pub run_timeout: Duration,
}

/// Why a live replay could not run.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    /// The database could not be reached or refused a statement.
    #[error("{0}")]
    Database(String),
    /// The lock backend failed.
    #[error(transparent)]
    Lock(#[from] LockError),
    /// The spec or an option cannot run live.
    #[error("{}{message}", input.map_or(String::new(), |i| format!("{i}: ")))]
    Unsupported {
        /// What the user would change: a flag (`--fencing`), or `None` for the spec itself.
        input: Option<&'static str>,
        /// What is wrong and what was expected.
        message: String,
    },
    /// Something else (a run that did not finish, a socket).
    #[error("{0}")]
    Run(String),
}

/// Requested against achieved latency for one target or step: the record's row and the
/// histograms behind it (compressed nanoseconds).
#[derive(Clone, Debug)]
pub struct MeasuredLatency {
    /// What `results.json` holds.
    pub row: InjectedLatency,
    /// The latency the model asked for.
    pub requested: RuntimeHistogram,
    /// The latency the job saw.
    pub achieved: RuntimeHistogram,
}

/// What a live replay measured.
#[derive(Clone, Debug)]
pub struct LiveReport {
    /// Job runs.
    pub runs: Vec<JobRunRecord>,
    /// First workers' runtimes (real-equivalent nanoseconds).
    pub runtimes: RuntimeHistogram,
    /// Per target.
    pub injected: Vec<MeasuredLatency>,
    /// Per step: a target's calls can mix steps of very different lengths, whose median then
    /// falls in the gap between them.
    pub per_step: Vec<MeasuredLatency>,
    /// Rows in the migration's real table (it carries the volume's injected latency).
    pub real_rows: Option<u64>,
    /// Things the user should know about the figures.
    pub warnings: Vec<String>,
}

impl LiveReport {
    /// Items executed by more than one worker, over all runs.
    pub fn double_executions(&self) -> u64 {
        self.runs.iter().map(|r| r.double_executions).sum()
    }
}

/// What kind of job a spec becomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum JobKind {
    /// One item per unit of volume: customers.
    Billing,
    /// A fixed number of items on the whole volume: migrations.
    Migration,
}

/// What one step does for real.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Action {
    /// Read the customer's subscription.
    Read,
    /// Charge the customer through the stub.
    Charge,
    /// Another API call (no charge).
    Call,
    /// Write the customer's status (fenced on request).
    Write,
    /// Local work: a wait.
    Local,
    /// Part of a migration: which statements this step sends.
    Migrate {
        open: bool,
        backfill: bool,
        verify: bool,
        advance: bool,
    },
}

/// Everything the workers share for the whole replay.
pub(crate) struct ReplayPlan {
    pub model: JobModel,
    pub options: LiveOptions,
    pub schema: String,
    pub key: String,
    pub kind: JobKind,
    pub actions: Vec<Action>,
    pub real_rows: Option<u64>,
    pub worker_db: PgConnectOptions,
    pub admin_db: PgConnectOptions,
    pub database: String,
    pub ledger: Arc<Mutex<Ledger>>,
}

impl ReplayPlan {
    pub(crate) fn f(&self) -> f64 {
        self.options.time_scale
    }

    /// The TTL each acquisition asks for, compressed.
    pub(crate) fn lease_ttl(&self) -> Duration {
        match self.options.mode {
            LockMode::FixedTtl(ttl) => ttl.mul_f64(self.f()),
            LockMode::Heartbeat(p) => p.lease_ttl.mul_f64(self.f()),
        }
    }

    pub(crate) fn heartbeat(&self) -> Option<HeartbeatPolicy> {
        match self.options.mode {
            LockMode::FixedTtl(_) => None,
            LockMode::Heartbeat(p) => Some(p.scaled(self.f())),
        }
    }
}

/// One worker: its own lock client, database connection (through the proxy) and API connection.
pub(crate) struct Worker {
    pub(crate) index: u64,
    pub(crate) backend: Arc<dyn LockBackend>,
    pub(crate) db: PgConnection,
    pub(crate) api: StubClient,
    pub(crate) costs: CallCosts,
    pub(crate) stats: Vec<TargetStats>,
}

/// What a worker did in one run.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    pub(crate) runtime: Option<Duration>,
    pub(crate) takeover: bool,
    pub(crate) aborted: bool,
    pub(crate) stale: u64,
    pub(crate) release_refused: bool,
    pub(crate) granted_ttl: Option<Duration>,
}

/// Where the run stands, as the retry workers see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Start {
    Waiting,
    Started(Instant),
    Failed,
}

/// One run's shared state.
pub(crate) struct RunContext {
    pub(crate) run: u64,
    pub(crate) scenario: LiveScenario,
    pub(crate) start: watch::Sender<Start>,
}

/// What the replay accumulates over its runs.
pub(crate) struct Accumulator {
    pub runs: Vec<JobRunRecord>,
    pub(crate) warnings: Vec<String>,
}

impl Accumulator {
    pub(crate) fn warn(&mut self, message: String) {
        if !self.warnings.contains(&message) {
            self.warnings.push(message);
        }
    }
}

/// Requested and achieved latency of one target, from one worker.
#[derive(Clone, Debug)]
pub(crate) struct TargetStats {
    pub(crate) requested: RuntimeHistogram,
    pub(crate) achieved: RuntimeHistogram,
    pub(crate) hold_ns: f64,
    pub(crate) achieved_ns: f64,
}

impl Default for TargetStats {
    fn default() -> Self {
        TargetStats {
            requested: RuntimeHistogram::for_latency(),
            achieved: RuntimeHistogram::for_latency(),
            hold_ns: 0.0,
            achieved_ns: 0.0,
        }
    }
}

/// Turns the spec's steps into real work (see the module documentation of `live`).
pub(crate) fn classify(model: &JobModel) -> Result<(JobKind, Vec<Action>), LiveError> {
    let steps = model.steps();
    let db: Vec<usize> = (0..steps.len())
        .filter(|&i| steps[i].target == Target::Db)
        .collect();
    if model.fixed_items() {
        let (Some(&first), Some(&last)) = (db.first(), db.last()) else {
            return Err(LiveError::Unsupported {
                input: None,
                message:
                    "a spec with a fixed item count runs live as migrations, which need a db step"
                        .to_string(),
            });
        };
        let actions = steps
            .iter()
            .enumerate()
            .map(|(i, s)| match s.target {
                Target::Db => {
                    let backfill = s.scales_with_volume();
                    Action::Migrate {
                        open: i == first,
                        backfill,
                        advance: i == last,
                        verify: i != first && i != last && !backfill,
                    }
                }
                Target::Api => Action::Call,
                Target::Cpu => Action::Local,
            })
            .collect();
        return Ok((JobKind::Migration, actions));
    }
    let first_api = steps.iter().position(|s| s.target == Target::Api);
    let last_db = db.last().copied();
    let actions = steps
        .iter()
        .enumerate()
        .map(|(i, s)| match s.target {
            Target::Db => {
                let writes = match first_api {
                    Some(a) => i > a,
                    None => Some(i) == last_db,
                };
                if writes { Action::Write } else { Action::Read }
            }
            Target::Api if Some(i) == first_api => Action::Charge,
            Target::Api => Action::Call,
            Target::Cpu => Action::Local,
        })
        .collect();
    Ok((JobKind::Billing, actions))
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockbench_workloads::WorkloadSpec;

    fn model(file: &str, profile: &str) -> JobModel {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../workloads/specs")
            .join(file);
        JobModel::new(&WorkloadSpec::load(&path).unwrap(), profile, 0.1).unwrap()
    }

    #[test]
    fn shipped_specs_become_billing_and_migration_jobs() {
        let (kind, actions) = classify(&model("billing.toml", "baseline")).unwrap();
        assert_eq!(kind, JobKind::Billing);
        assert_eq!(actions, [Action::Read, Action::Charge, Action::Write]);
        let (kind, actions) = classify(&model("migration.toml", "baseline")).unwrap();
        assert_eq!(kind, JobKind::Migration);
        let flags: Vec<(bool, bool, bool, bool)> = actions
            .iter()
            .map(|a| match a {
                Action::Migrate {
                    open,
                    backfill,
                    verify,
                    advance,
                } => (*open, *backfill, *verify, *advance),
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        assert_eq!(
            flags,
            [
                (true, false, false, false),
                (false, true, false, false),
                (false, false, true, false),
                (false, false, false, true)
            ]
        );
    }
}
