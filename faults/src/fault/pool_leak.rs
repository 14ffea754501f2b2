//! `pool-leak/*`: one process, a pool of one Postgres connection given back without a reset (or
//! with `pg_advisory_unlock_all()`, or transaction locks), two jobs on it, and a contender with a
//! session of its own. It runs its own trial: a pool process, not a second lock worker.

use std::time::Duration;

use async_trait::async_trait;
use lockbench_locks::{BackendConfig, LockBackend};

use super::phases::{Fault, Trial};
use crate::FaultError;
use crate::clock::monotonic_ns;
use crate::plan::Role;
use crate::plan::{AnyPlan, BackendPlan, LeaseTracking, OnFailure, PoolMode, PoolPlan, WorkerPlan};
use crate::process::WorkerProcess;
use crate::protocol::Message;
use crate::scenario::Variant;
use crate::stage::Stage;
use crate::trial::{TrialContext, TrialOutcome, WRITES, Window, judge};

pub(crate) struct PoolLeak(pub(crate) Variant);

#[async_trait]
impl Fault for PoolLeak {
    fn variant(&self) -> Variant {
        self.0
    }

    /// Never called: [`PoolLeak::trial`] runs the whole trial.
    async fn inject(&self, _trial: &mut Trial<'_>) -> Result<(), FaultError> {
        Err(FaultError::Worker(
            "a pool leak runs its own trial, with no inject phase".to_string(),
        ))
    }

    async fn trial(
        &self,
        context: &mut TrialContext<'_>,
        config: &BackendConfig,
        _client: &dyn LockBackend,
        _stage: &mut Stage,
        id: &str,
        key: &str,
        _rng: &mut rand::rngs::StdRng,
    ) -> Result<TrialOutcome, FaultError> {
        let mode = match self.0 {
            Variant::PoolLeak(mode) => mode,
            _ => PoolMode::NoReset,
        };
        pool_trial(context, mode, config, id, key).await
    }
}

/// A pool-leak trial: the pool process (two jobs on one pooled connection) and a contender
/// with a session of its own. The fault window runs from the first job's grant (its
/// connection given back holding the lock) to the pool closing the connection.
async fn pool_trial(
    context: &mut TrialContext<'_>,
    mode: PoolMode,
    config: &BackendConfig,
    id: &str,
    key: &str,
) -> Result<TrialOutcome, FaultError> {
    let ttl = context.ttl;
    let every = ttl / WRITES;
    let job = every * WRITES;
    let linger = ttl * 2;
    let application_name = format!("lockbench-fault-pool-{}", context.run_id);
    let pool_plan = PoolPlan {
        trial: id.to_string(),
        database_url: config.urls.first().cloned().unwrap_or_default(),
        resource_url: context.resource_url.to_string(),
        resource_schema: context.resource_schema.to_string(),
        lock_id: lockbench_locks::backends::postgres::lock_id(&format!(
            "{}:{key}",
            config.namespace
        )),
        mode,
        writes: WRITES,
        write_every_ms: every.as_millis() as u64,
        linger_ms: linger.as_millis() as u64,
        application_name: application_name.clone(),
    };
    let longest = job * 3 + linger + ttl + Duration::from_secs(10);
    let contender_plan = WorkerPlan {
        trial: id.to_string(),
        worker: Role::Contender,
        backend: BackendPlan::of(config),
        resource_url: context.resource_url.to_string(),
        resource_schema: context.resource_schema.to_string(),
        key: key.to_string(),
        ttl_ms: ttl.as_millis() as u64,
        wait_ms: longest.as_millis() as u64,
        wait_for_go: true,
        writes: WRITES,
        write_every_ms: every.as_millis() as u64,
        tracking: LeaseTracking::AtRelease,
        on_failure: OnFailure::Queue,
        detached: false,
        stop_before_release: false,
        plain_delete: false,
        adapter: None,
    };
    let exe = context.worker_exe;
    let connect = config.connect_timeout + Duration::from_secs(10);
    let mut contender = WorkerProcess::spawn(
        exe,
        Role::Contender.word(),
        &AnyPlan::Lock(Box::new(contender_plan)),
    )
    .await?;
    contender.connected(connect).await?;
    let mut pool = WorkerProcess::spawn(exe, "pool", &AnyPlan::Pool(pool_plan)).await?;
    pool.connected(connect).await?;
    let start_ns = monotonic_ns();
    pool.job_granted(Role::Holder.word(), connect).await?;
    contender.go(longest).await?;
    // The jobs are done (job 2 granted or not): what the idle pooled session still holds.
    loop {
        if pool.next_step(job * 3 + connect).await? == Message::Idle {
            break;
        }
    }
    let idle_session_locks = context
        .resource
        .advisory_locks_of(&application_name)
        .await?;
    pool.done(linger + connect).await?;
    let end_ns = monotonic_ns();
    if let Message::Granted { .. } = contender.next_step(longest).await? {
        contender.done(longest).await?;
    }
    pool.finish(Duration::from_secs(10)).await?;
    contender.finish(Duration::from_secs(10)).await?;
    let window = Window { start_ns, end_ns };
    let mut outcome = judge(context, id, window, ttl, Some(idle_session_locks)).await?;
    // The window starts at the first job's grant, which the log dates exactly.
    outcome.window.start_ns = outcome.figures.zero_ns.max(start_ns);
    Ok(outcome)
}
