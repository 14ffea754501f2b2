//! What the lab asks a worker process to do: the plans, sent as one line of JSON on the
//! process's stdin (`lockbench fault-worker`), before any message of `protocol`. A lock worker
//! (`worker`), the pool process of a pool leak (`pool`) and a job process a lock holder starts
//! each read one; the lab (`trial`) writes them.

use std::time::Duration;

use lockbench_locks::{BackendConfig, BackendKind};
use serde::{Deserialize, Serialize};

pub use lockbench_core::fault::{OnFailure, PoolMode};

use crate::FaultError;

/// How the job makes sure it still holds the lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LeaseTracking {
    /// Trusts its TTL: finds out only at the release (a job sized to end within it).
    AtRelease,
    /// After each write, renews (token-checked): a naive job that writes, then looks.
    AfterEachWrite,
    /// A heartbeat renews the lease every third of it; before each write the job asks it whether
    /// it may go on (renewed within the give-up deadline, two thirds of the lease).
    Heartbeat,
    /// A heartbeat renews, but the job never asks it (it only logs failed renewals, say).
    HeartbeatUnchecked,
    /// Trusts its TTL, but before starting compares the lease's validity (what Redlock says is
    /// left of it) with the job's length, and acquires again when it is shorter.
    ValidityFirst,
}

/// The backend as a worker connects to it (the config's fields; passwords travel on stdin, never
/// on a command line).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BackendPlan {
    /// Backend name.
    pub kind: String,
    /// Server URLs.
    pub urls: Vec<String>,
    /// Key namespace.
    pub namespace: String,
    /// Per-operation timeout, ms.
    pub operation_timeout_ms: u64,
    /// Connection timeout, ms.
    pub connect_timeout_ms: u64,
    /// ZooKeeper's session timeout (its lock TTL), ms.
    pub session_timeout_ms: u64,
    /// Hand out fencing tokens (the config can turn them off for Redis and Postgres).
    pub fencing: bool,
    /// Redis: replicas that must acknowledge an acquisition (`WAIT`).
    #[serde(default)]
    pub wait_replicas: u32,
    /// Redis: waiters queue in Redis, granted in arrival order.
    #[serde(default)]
    pub fair: bool,
    /// Redis's fair queue: how long a waiter's place outlives its last renewal, ms.
    #[serde(default)]
    pub waiter_timeout_ms: u64,
    /// pg-session through a transaction-mode pooler, which the lab measures.
    #[serde(default)]
    pub through_transaction_pooler: bool,
    /// Redis: the primary's name at the Sentinels `urls` names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sentinel_master: Option<String>,
}

impl BackendPlan {
    /// The plan of a configured backend.
    pub fn of(config: &BackendConfig) -> Self {
        BackendPlan {
            kind: config.kind.name().to_string(),
            urls: config.urls.clone(),
            namespace: config.namespace.clone(),
            operation_timeout_ms: config.operation_timeout.as_millis() as u64,
            connect_timeout_ms: config.connect_timeout.as_millis() as u64,
            session_timeout_ms: config.session_timeout.as_millis() as u64,
            fencing: config.fencing,
            wait_replicas: config.wait_replicas,
            fair: config.fair,
            waiter_timeout_ms: config.waiter_timeout.as_millis() as u64,
            through_transaction_pooler: config.through_transaction_pooler,
            sentinel_master: config.sentinel_master.clone(),
        }
    }

    /// The backend's config, as the worker connects to it.
    pub(crate) fn config(&self) -> Result<BackendConfig, FaultError> {
        let kind = BackendKind::parse(&self.kind)
            .ok_or_else(|| FaultError::Worker(format!("unknown backend {:?}", self.kind)))?;
        let mut c = BackendConfig::new(kind, self.urls.clone(), &self.namespace);
        c.operation_timeout = Duration::from_millis(self.operation_timeout_ms);
        c.connect_timeout = Duration::from_millis(self.connect_timeout_ms);
        c.session_timeout = Duration::from_millis(self.session_timeout_ms);
        c.fencing = self.fencing;
        c.wait_replicas = self.wait_replicas;
        c.fair = self.fair;
        c.through_transaction_pooler = self.through_transaction_pooler;
        c.sentinel_master = self.sentinel_master.clone();
        if self.waiter_timeout_ms > 0 {
            c.waiter_timeout = Duration::from_millis(self.waiter_timeout_ms);
        }
        Ok(c)
    }
}

/// Who writes in a trial (the records' word for it).
pub use lockbench_core::records::faults::Role;

/// Everything a worker does, decided by the lab.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WorkerPlan {
    /// The trial's id in the resource's log.
    pub trial: String,
    /// Who it is.
    pub worker: Role,
    /// The lock server.
    pub backend: BackendPlan,
    /// The protected resource's database URL and schema.
    pub resource_url: String,
    /// Schema of the run's resource tables.
    pub resource_schema: String,
    /// The lock's key.
    pub key: String,
    /// TTL asked for, ms.
    pub ttl_ms: u64,
    /// How long to wait for the lock, ms (errors meanwhile are retried, as a retry worker does).
    pub wait_ms: u64,
    /// Wait for the lab's `go <wait_ms>` line on stdin before acquiring (a contender, started
    /// before the holder so that its start-up cannot eat into the holder's job); the wait in the
    /// line replaces `wait_ms`.
    pub wait_for_go: bool,
    /// Writes in the job.
    pub writes: u32,
    /// Time between writes, ms.
    pub write_every_ms: u64,
    /// How the job checks its lease.
    pub tracking: LeaseTracking,
    /// What it does when an acquisition fails.
    #[serde(default)]
    pub on_failure: OnFailure,
    /// The job runs in a process of its own ([`WriterPlan`]), started once the lock is granted:
    /// the worker holds the lock and waits for it, as a wrapper that locks and runs a job does.
    #[serde(default)]
    pub detached: bool,
    /// After its job, say `releasing` and stop its own process group (SIGSTOP) before sending
    /// the release; the lab continues it (`release/*`).
    #[serde(default)]
    pub stop_before_release: bool,
    /// Release with a plain delete of the lock's key, whoever holds it (`release/*`'s positive
    /// control), not the client's token-checked release.
    #[serde(default)]
    pub plain_delete: bool,
    /// Lock through this client library's adapter (a child of the worker, in its process group,
    /// so that a pause or a kill takes the library's threads with it), not lockbench's client.
    #[serde(default)]
    pub adapter: Option<lockbench_clients::Program>,
}

/// A job process started by a worker that holds the lock: it writes as that worker, with its
/// token, and knows nothing of the lock.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WriterPlan {
    /// The trial's id in the resource's log.
    pub trial: String,
    /// The worker it writes as.
    pub worker: Role,
    /// The protected resource's database URL.
    pub resource_url: String,
    /// Schema of the run's resource tables.
    pub resource_schema: String,
    /// The fencing token of the lease it works under.
    pub token: Option<u64>,
    /// Writes in the job.
    pub writes: u32,
    /// Time between writes, ms.
    pub write_every_ms: u64,
    /// The lab's process id: the job stops when the lab is gone.
    pub lab: u32,
}

/// What the pool process does.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PoolPlan {
    /// The trial's id in the resource's log.
    pub trial: String,
    /// The Postgres of the lock (the configured pg-session URL).
    pub database_url: String,
    /// The protected resource's database URL.
    pub resource_url: String,
    /// Schema of the run's resource tables.
    pub resource_schema: String,
    /// The advisory lock id (the pg backends' id of the contender's key).
    pub lock_id: i64,
    /// The pool's mode.
    pub mode: PoolMode,
    /// Writes per job.
    pub writes: u32,
    /// Time between writes, ms.
    pub write_every_ms: u64,
    /// How long the pool keeps its idle connection after both jobs (its idle timeout), ms.
    pub linger_ms: u64,
    /// The pooled connection's `application_name`, so the lab can find its session.
    pub application_name: String,
}

/// What a worker process is asked to do (JSON on its stdin).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AnyPlan {
    /// One worker through a lock backend.
    Lock(Box<WorkerPlan>),
    /// A pool of one connection and two jobs on it (`pool-leak`).
    Pool(PoolPlan),
    /// A job process a lock holder started (`crash/work-survives`).
    Writer(WriterPlan),
}
