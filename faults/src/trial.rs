//! One trial: two worker processes (or, for a pool leak, the pool process and a contender), one
//! fault injected into what the lab started, through the fault's phases (`fault`), and the
//! figures read back from the protected resource.

use std::path::Path;
use std::time::Duration;

use lockbench_locks::{BackendConfig, LockBackend};
use rand::RngExt;

use crate::FaultError;
use crate::clock::monotonic_ns;
use crate::fault::{Fault, Onset, Shape, Trial};
use crate::overlap::{self, TrialFigures};
use crate::plan::{AnyPlan, LeaseTracking, OnFailure, WorkerPlan};
use crate::process::WorkerProcess;
use crate::protocol::Message;
use crate::resource::{LoggedEvent, Resource};
use crate::scenario::Design;
use crate::stage::Stage;

/// The workers' names in the log.
pub(crate) const HOLDER: &str = "holder";
pub(crate) const CONTENDER: &str = "contender";
/// Writes per job.
pub(crate) const WRITES: u32 = 20;

/// What a trial needs from the lab: the run's settings, where the workers find the protected
/// resource, and the lab's own connection to it (to read the trial's log back).
pub(crate) struct TrialContext<'a> {
    /// The lock TTL asked for.
    pub(crate) ttl: Duration,
    /// The protected resource's database URL, as reached from the host.
    pub(crate) resource_url: &'a str,
    /// The run's schema in it.
    pub(crate) resource_schema: &'a str,
    /// The lab's connection to the resource.
    pub(crate) resource: &'a mut Resource,
    /// The lockbench binary (its `fault-worker` mode runs the workers).
    pub(crate) worker_exe: &'a Path,
    /// The run's id (it names the pool process's session).
    pub(crate) run_id: &'a str,
}

/// What a trial measured, before it becomes a row.
pub(crate) struct TrialOutcome {
    pub(crate) figures: TrialFigures,
    pub(crate) window: Window,
    pub(crate) granted_ttl: Duration,
    pub(crate) log: Vec<LoggedEvent>,
    /// Advisory locks the idle pooled session held after both jobs (pool-leak trials).
    pub(crate) idle_session_locks: Option<u64>,
}

/// One trial's timing, by the machine's monotonic clock.
pub(crate) struct Window {
    pub(crate) start_ns: i64,
    pub(crate) end_ns: i64,
}

/// Runs one trial of `fault` on `stage`, as trial `id`, with the lock `key`: the fault's phases
/// in order (`fault`'s module documentation lists them), then the judging, which is the same
/// for every fault (the resource's log).
#[allow(clippy::too_many_arguments)]
pub(crate) async fn run<F: Fault + ?Sized>(
    context: &mut TrialContext<'_>,
    fault: &F,
    config: &BackendConfig,
    client: &dyn LockBackend,
    stage: &mut Stage,
    id: &str,
    key: &str,
    rng: &mut rand::rngs::StdRng,
) -> Result<TrialOutcome, FaultError> {
    let variant = fault.variant();
    let ttl = variant.trial_ttl(context.ttl);
    warm_up(client, key, ttl).await?;
    fault.before(stage).await?;
    let default = Shape::of(variant, ttl, config, stage.holder_urls.as_deref());
    let shape = fault.shape(default, stage, config);
    let every = shape.job / shape.writes;
    let connect = config.connect_timeout + Duration::from_secs(10);
    // The contender first: its start-up (a process, two connections) then cannot eat into the
    // holder's job; it asks for the lock when told to, just after the holder's grant.
    let (mut holder, mut contender) =
        spawn_workers(context, &shape, stage, (id, key), ttl, connect).await?;
    let acquisition_start = monotonic_ns();
    if shape.slowed {
        fault.acquire(stage, &mut holder, ttl * 2).await?;
    }
    let granted = holder.granted(ttl * 2 + connect).await?;
    // The fault's length, and how long anyone may have to wait for the lock because of it.
    let length = fault.length(granted, &shape, stage);
    let survivor = granted * shape.survivor_ttls;
    let longest = length + granted + shape.job * 2 + survivor + Duration::from_secs(5);
    if !shape.contender_waits_for_fault {
        contender.go(longest).await?;
    }
    // The fault begins somewhere in the first third of the job, by the seed.
    let after = rng.random_range(2..=WRITES / 3);
    match shape.onset {
        Onset::AfterWrite => loop {
            let n = holder.wrote(every * 4 + Duration::from_secs(5)).await?;
            if n >= after {
                break;
            }
        },
        Onset::AfterIntervals => tokio::time::sleep(every * after).await,
        Onset::AtAcquisition => {}
    }
    let start_ns = match shape.onset {
        Onset::AtAcquisition => acquisition_start,
        _ => monotonic_ns(),
    };
    let mut trial = Trial {
        stage,
        holder: &mut holder,
        contender: &mut contender,
        granted,
        length,
        longest,
        contender_step: None,
        end_ns: None,
    };
    fault.inject(&mut trial).await?;
    let window = Window {
        start_ns,
        end_ns: trial.end_ns.unwrap_or_else(monotonic_ns),
    };
    let contender_step = trial.contender_step.take();
    fault.end_holder(holder, context, id, longest).await?;
    // A contender says either `granted` (then its job, then `done`) or `timed-out`.
    let step = match contender_step {
        Some(step) => step,
        None => contender.next_step(longest).await?,
    };
    if let Message::Granted { .. } = step {
        contender.done(longest).await?;
    }
    contender.finish(Duration::from_secs(10)).await?;
    fault.heal(stage).await?;
    judge(context, id, window, granted, None).await
}

/// A warm-up acquisition, so that fencing counters are past their first value, as in any
/// deployment that has run for a while (a counter that restarts then goes back). The lab's own
/// connection may have been closed by the last trial's restart: the first request after one
/// fails and reconnects, so it is tried again.
async fn warm_up(client: &dyn LockBackend, key: &str, ttl: Duration) -> Result<(), FaultError> {
    let mut tries = 0;
    loop {
        tries += 1;
        match client.try_acquire(key, ttl).await {
            Ok(Some(lease)) => {
                client.release(&lease).await?;
                return Ok(());
            }
            Ok(None) => return Ok(()),
            Err(_) if tries < 3 => tokio::time::sleep(Duration::from_millis(50)).await,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Starts the contender, then the holder (inside the stage's namespace, if it has one), each
/// connected, from the trial's shape.
async fn spawn_workers(
    context: &TrialContext<'_>,
    shape: &Shape,
    stage: &Stage,
    (id, key): (&str, &str),
    ttl: Duration,
    connect: Duration,
) -> Result<(WorkerProcess, WorkerProcess), FaultError> {
    let every = shape.job / shape.writes;
    let plan = |worker: &str, wait: Duration| {
        let holding = worker == HOLDER;
        WorkerPlan {
            trial: id.to_string(),
            worker: worker.to_string(),
            backend: if holding {
                shape.holder.clone()
            } else {
                shape.contender.clone()
            },
            // The holder of a partition reaches the resource from inside its namespace.
            resource_url: match &stage.partition {
                Some(p) if holding => p.resource_url.clone(),
                _ => context.resource_url.to_string(),
            },
            resource_schema: context.resource_schema.to_string(),
            key: key.to_string(),
            ttl_ms: ttl.as_millis() as u64,
            wait_ms: wait.as_millis() as u64,
            // A holder whose acquisition the lab slows waits to be told, once it is connected.
            wait_for_go: !holding || shape.slowed,
            writes: shape.writes,
            write_every_ms: every.as_millis() as u64,
            tracking: if holding {
                shape.tracking
            } else {
                LeaseTracking::AtRelease
            },
            on_failure: if holding {
                OnFailure::Queue
            } else {
                shape.contender_on_failure
            },
            detached: holding && shape.detached,
        }
    };
    let exe = context.worker_exe;
    let mut contender =
        WorkerProcess::spawn(exe, CONTENDER, &AnyPlan::Lock(plan(CONTENDER, ttl))).await?;
    contender.connected(connect).await?;
    let prefix = stage
        .partition
        .as_ref()
        .map_or(Vec::new(), |p| p.ns.prefix());
    let mut holder =
        WorkerProcess::spawn_in(&prefix, exe, HOLDER, &AnyPlan::Lock(plan(HOLDER, ttl * 2)))
            .await?;
    holder.connected(connect).await?;
    Ok((holder, contender))
}

/// Judges a trial: its log read back from the resource, and the figures computed from it.
pub(crate) async fn judge(
    context: &mut TrialContext<'_>,
    id: &str,
    window: Window,
    granted_ttl: Duration,
    idle_session_locks: Option<u64>,
) -> Result<TrialOutcome, FaultError> {
    let log = context.resource.trial_log(id).await?;
    let figures = overlap::figures(&log, HOLDER, CONTENDER).ok_or_else(|| {
        FaultError::Resource(format!("trial {id}: the holder's grant is not in the log"))
    })?;
    Ok(TrialOutcome {
        figures,
        window,
        granted_ttl,
        log,
        idle_session_locks,
    })
}

/// Waits (at most `within`) until the holder's end is in the trial's log: a job process that
/// outlived its holder has finished.
pub(crate) async fn await_end(
    context: &mut TrialContext<'_>,
    id: &str,
    within: Duration,
) -> Result<(), FaultError> {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let log = context.resource.trial_log(id).await?;
        if log
            .iter()
            .any(|e| e.worker == HOLDER && e.event == crate::resource::Event::End)
        {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(FaultError::Worker(format!(
                "trial {id}: the holder's job process did not end within {within:?}"
            )));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
