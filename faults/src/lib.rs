//! The fault lab: what each lock backend cannot prevent, measured on real servers.
//!
//! A trial runs two workers of the same job as separate processes (`lockbench fault-worker`): the
//! holder takes the lock, the contender waits for it, and the lab injects one fault ([`Variant`])
//! into what it started itself: a SIGSTOP of the holder's process, or a SIGKILL and restart of a
//! private Redis server it runs on its own port and data directory. Both workers write to the
//! protected resource ([`resource`]), a Postgres log with one monotonic clock and a fence that
//! keeps the highest token seen. Overlaps, stale writes and what the fence did are computed from
//! that log ([`overlap`]), never assumed from the scenario.
//!
//! Everything the lab starts is stopped by pid and removed after each trial, after an error and
//! when a Ctrl-C drops the run: worker processes, private servers and their directories, the
//! run's Postgres schema, and every lock key it used.

mod clock;
pub mod cluster;
mod fault;
mod forward;
mod lab;
pub mod leftovers;
mod link;
mod matrix;
mod netns;
pub mod overlap;
mod pgbouncer;
mod plan;
mod pool;
mod postgres;
mod process;
mod protocol;
mod register;
pub mod resource;
pub mod runners;
mod scenario;
mod sentinel;
mod server;
pub mod slots;
mod stage;
pub mod stalls;
mod trial;
mod worker;
mod zookeeper;

pub use lab::{FaultLab, LabOptions, LabOutput};
pub use plan::{AnyPlan, BackendPlan, LeaseTracking, PoolMode, PoolPlan, WorkerPlan};
pub use process::with_parent_death_signal;
pub use scenario::{Design, LAB_KEEPALIVE, VANISHED_WAIT, Variant, lab_keepalive_bound_s};
/// Every variant, in the matrix's order.
pub const VARIANTS: [Variant; 49] = Variant::ALL;
pub use server::{Persistence, redis_server_on_path};
pub use worker::run;

/// What can stop the lab (the run, not a cell: a cell that fails is recorded as skipped).
#[derive(Debug, thiserror::Error)]
pub enum FaultError {
    /// The protected resource (Postgres).
    #[error("protected resource: {0}")]
    Resource(String),
    /// The protected resource's Postgres could not be reached (exit code 3, as for any server).
    #[error("cannot reach the protected resource: {0}")]
    Unreachable(String),
    /// A lock backend.
    #[error(transparent)]
    Lock(#[from] lockbench_locks::LockError),
    /// A worker process.
    #[error("worker: {0}")]
    Worker(String),
    /// A private server.
    #[error("private server: {0}")]
    Server(String),
    /// A job runner's worker or producer (a runner cell).
    #[error("runner: {0}")]
    Runner(String),
    /// A trial did not set up what its variant measures (its cell is listed as not run).
    #[error("not measured: {0}")]
    Unmet(String),
}

/// `program` in a folder of PATH, if it is there: the lab's one lookup of the tools and servers it
/// runs (`ip`, `nft`, `java`, `redis-server`).
pub(crate) fn find_on_path(program: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(program))
            .find(|p| p.is_file())
    })
}
