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
use lockbench_locks::{BackendConfig, HeartbeatPolicy, LockBackend, LockError};
use serde::Serialize;

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

/// Requested against achieved latency for one target (`db`, `api`, `cpu`).
#[derive(Clone, Debug, Serialize)]
pub struct InjectedLatency {
    /// What the calls went to.
    pub target: String,
    /// The step, for a per-step row.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// Calls measured.
    pub calls: u64,
    /// Median of the latency the model asked for (real-equivalent ms).
    pub requested_p50_ms: f64,
    /// Median of what the job saw (real-equivalent ms).
    pub achieved_p50_ms: f64,
    /// 99th percentile asked for.
    pub requested_p99_ms: f64,
    /// 99th percentile seen.
    pub achieved_p99_ms: f64,
    /// Mean asked for.
    pub requested_mean_ms: f64,
    /// Mean seen.
    pub achieved_mean_ms: f64,
    /// Mean real cost of a call (the round trip and the server's work, not injected), in
    /// compressed microseconds: what the injection subtracts from each request.
    pub real_cost_us: f64,
    /// Both percentiles within 5 % or 100 us (compressed) of the request.
    pub within_tolerance: bool,
    /// The request and the result as histograms (compressed nanoseconds).
    #[serde(skip)]
    pub requested: RuntimeHistogram,
    /// See `requested`.
    #[serde(skip)]
    pub achieved: RuntimeHistogram,
}

/// One job run's outcome.
#[derive(Clone, Debug, Serialize)]
pub struct RunRecord {
    /// Run index (its seed stream).
    pub run: u64,
    /// The first worker's job run, acquisition to release (real-equivalent seconds).
    pub runtime_s: f64,
    /// Items more than one worker executed.
    pub double_executions: u64,
    /// Charges accepted beyond the first per customer and period (billing).
    pub duplicate_charges_accepted: Option<u64>,
    /// Writes refused by fencing.
    pub stale_writes_rejected: u64,
    /// Migrations applied when the pointer was already at or past them.
    pub out_of_order: Option<u64>,
    /// Retry workers that got the lock while the job was unfinished and ran it.
    pub takeovers: u64,
    /// Job runs that stopped early (heartbeat lost or a fenced write refused).
    pub aborted: u64,
    /// Releases the backend refused because the lease was no longer the holder's.
    pub releases_refused: u64,
}

/// What a live replay measured.
#[derive(Clone, Debug)]
pub struct LiveReport {
    /// Job runs.
    pub runs: Vec<RunRecord>,
    /// First workers' runtimes (real-equivalent nanoseconds).
    pub runtimes: RuntimeHistogram,
    /// Per target.
    pub injected: Vec<InjectedLatency>,
    /// Per step: a target's calls can mix steps of very different lengths, whose median then
    /// falls in the gap between them.
    pub per_step: Vec<InjectedLatency>,
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
