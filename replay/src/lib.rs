//! The live replay: a workload run for real, against a real Postgres, a local payment-API stub
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
//!
//! Imports only point down: `plan` holds the types every module shares and imports none of its
//! siblings but the leaf clients (`stub`, `costs`); `tables`, `items`, `protocol`, `run`, `setup`
//! and `fidelity` each build on what is below them (docs/ARCHITECTURE.md).

mod costs;
mod fidelity;
mod hold;
mod items;
mod plan;
mod protocol;
mod proxy;
mod record;
mod run;
mod setup;
mod stub;
mod tables;

pub use lockbench_core::records::replay::{InjectedLatency, JobRunRecord};
use lockbench_workloads::JobModel;

pub use plan::{LiveError, LiveOptions, LiveReport, LockMode, MAX_LIVE_ITEMS, MeasuredLatency};
pub use record::{RecordContext, run_timeout};

/// A prepared live replay: tables, proxy, stub and workers in place.
pub struct LiveReplay {
    prepared: setup::Prepared,
}

impl LiveReplay {
    /// Creates the schema and tables, starts the proxy and the stub, connects every worker. On an
    /// error it removes what it had made before returning; on success [`LiveReplay::cleanup`]
    /// does.
    pub async fn prepare(model: &JobModel, options: &LiveOptions) -> Result<Self, LiveError> {
        let prepared = setup::prepare(model, options).await?;
        Ok(LiveReplay { prepared })
    }

    /// Runs every job run, calling `progress` after each.
    pub async fn run(&mut self, progress: &(dyn Fn(u64) + Sync)) -> Result<LiveReport, LiveError> {
        let p = &mut self.prepared;
        for run in 0..u64::from(p.plan.options.runs) {
            let record =
                run::run_once(&p.plan, &mut p.workers, &mut p.admin, run, &mut p.report).await?;
            p.report.runs.push(record);
            progress(1);
        }
        Ok(p.report.finish(&p.plan, &p.workers))
    }

    /// The schema this replay created (for tests and messages).
    pub fn schema(&self) -> &str {
        &self.prepared.plan.schema
    }

    /// Removes the schema, the lock keys and every lease; safe after an interrupted run.
    pub async fn cleanup(self) -> Result<(), LiveError> {
        let setup::Prepared {
            plan,
            workers,
            backends,
            admin,
            proxy,
            stub,
            ..
        } = self.prepared;
        // Worker connections first: an interrupted transaction holding a table lock must end
        // before the schema can be dropped.
        drop(workers);
        drop(admin);
        let cleaned = setup::cleanup(&plan, &backends).await;
        drop((proxy, stub));
        cleaned
    }
}
