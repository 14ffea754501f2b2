//! The live executor: a workload run for real, against a real Postgres, a local payment-API stub
//! and a real lock backend, by several workers racing for one lock, counting what went wrong.
//!
//! Set-up ([`LiveReplay::prepare`]): a schema of its own under the namespace with the job's tables,
//! a latency-injecting proxy in front of Postgres ([`proxy`]), the payment stub ([`stub`]), and one
//! lock client, one database connection and one API connection per worker. Each run
//! ([`LiveReplay::run`]): the tables are reset, the first worker takes the lock and runs the job;
//! every other worker is a retry worker that keeps trying the lock and, when the backend grants it,
//! runs the job too unless it finds it finished. Every call's latency is drawn from the model as
//! the simulator draws it, in a scenario (episodes) the workers share, and compressed by the time
//! scale. [`LiveReplay::cleanup`] removes the schema, the lock keys and the leases, also after an
//! interrupted run.
//!
//! How a spec's steps become real work (documented in docs/SPECS.md):
//! - One item per unit of volume (billing): `db` steps before the first `api` step read the
//!   customer, the first `api` step charges it through the stub, `db` steps after it write the
//!   customer's status (fenced with `--fencing`), `cpu` steps wait locally.
//! - A fixed number of items, each on the whole volume (migrations): the first `db` step begins a
//!   transaction and locks the table, `db` steps with a per-unit latency alter it and backfill
//!   every row, other `db` steps verify the schema, the last `db` step advances the migration
//!   pointer (fenced with `--fencing`) and commits.

mod clock;
mod fidelity;
mod hold;
mod job;
mod proxy;
mod stub;
mod tables;

use std::sync::Arc;
use std::time::Duration;

use lockbench_core::RuntimeHistogram;
pub use lockbench_core::records::replay::{InjectedLatency, JobRunRecord};
use lockbench_locks::{BackendConfig, HeartbeatPolicy, LockBackend, LockError};

use crate::model::ReplayModel;

pub use job::MAX_LIVE_ITEMS;

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

/// A prepared live replay: tables, proxy, stub and workers in place.
pub struct LiveReplay {
    shared: job::Shared,
    workers: Vec<job::Worker>,
    backends: Vec<Arc<dyn LockBackend>>,
    admin: Option<sqlx::PgConnection>,
    report: job::Accumulator,
    _proxy: proxy::PgProxy,
    _stub: stub::PaymentStub,
}

impl LiveReplay {
    /// Creates the schema and tables, starts the proxy and the stub, connects every worker. On an
    /// error it removes what it had made before returning; on success [`LiveReplay::cleanup`]
    /// does.
    pub async fn prepare(model: &ReplayModel, options: &LiveOptions) -> Result<Self, LiveError> {
        job::prepare(model, options).await
    }

    /// Runs every job run, calling `progress` after each.
    pub async fn run(&mut self, progress: &(dyn Fn(u64) + Sync)) -> Result<LiveReport, LiveError> {
        let runs = self.shared.options.runs;
        for run in 0..u64::from(runs) {
            let record = job::run_once(
                &self.shared,
                &mut self.workers,
                self.admin.as_mut().expect("admin connection"),
                run,
                &mut self.report,
            )
            .await?;
            self.report.runs.push(record);
            progress(1);
        }
        Ok(self.report.finish(&self.shared, &self.workers))
    }

    /// The schema this replay created (for tests and messages).
    pub fn schema(&self) -> &str {
        &self.shared.schema
    }

    /// Removes the schema, the lock keys and every lease; safe after an interrupted run.
    pub async fn cleanup(self) -> Result<(), LiveError> {
        let LiveReplay {
            shared,
            workers,
            backends,
            admin,
            ..
        } = self;
        // Worker connections first: an interrupted transaction holding a table lock must end
        // before the schema can be dropped.
        drop(workers);
        drop(admin);
        job::cleanup(&shared, &backends).await
    }
}
