//! The phases of a fault (the [`Fault`] trait), the default shape of a trial ([`Shape`]) and the
//! runner that calls the phases in order ([`run`]), knowing no scenario by name.

use std::time::Duration;

use async_trait::async_trait;
use lockbench_locks::{BackendConfig, BackendKind, LockBackend};
use rand::RngExt;

use crate::FaultError;
use crate::clock::monotonic_ns;
use crate::plan::{AnyPlan, BackendPlan, LeaseTracking, OnFailure, Role, WorkerPlan};
use crate::process::WorkerProcess;
use crate::protocol::Message;
use crate::scenario::{Design, Variant};
use crate::stage::{Need, Stage, StageSetup};
use crate::trial::{TrialContext, TrialOutcome, WRITES, Window, await_end, judge};

/// When, in the holder's job, the fault begins (the moment within it is drawn from the seed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Onset {
    /// As the holder says it finished its n-th write (read as it is said: the lab is waiting on
    /// the line), so that a stop falls in its sleep before the next write.
    AfterWrite,
    /// n write intervals after the contender was told to go.
    AfterIntervals,
    /// At the holder's acquisition (a fault that is over once the holder is granted).
    AtAcquisition,
    /// As the holder says it is about to release, having stopped itself there.
    AtRelease,
}

/// How a trial's workers run: the default for a variant, which a fault's `shape` phase adjusts.
pub(crate) struct Shape {
    /// The TTL the workers ask for.
    pub(crate) ttl: Duration,
    /// The lease the lab's warm-up acquisition was granted for it (a server may grant more:
    /// etcd's minimum lease, ZooKeeper's negotiated session), which the workers are granted too.
    pub(crate) lease: Duration,
    /// The holder's job: its length and its writes.
    pub(crate) job: Duration,
    pub(crate) writes: u32,
    /// Where each worker locks.
    pub(crate) holder: BackendPlan,
    pub(crate) contender: BackendPlan,
    /// How the holder checks its lease.
    pub(crate) tracking: LeaseTracking,
    /// What the contender does when its acquisition fails.
    pub(crate) contender_on_failure: OnFailure,
    /// The holder runs its job in a process of its own, which outlives it.
    pub(crate) detached: bool,
    /// The lab slows the holder's acquisition: the holder waits to be told to go.
    pub(crate) slowed: bool,
    /// The contender is told to go by the fault (at its onset), not before it.
    pub(crate) contender_waits_for_fault: bool,
    /// How long the holder's job may outlive the holder, in granted TTLs.
    pub(crate) survivor_ttls: u32,
    /// The fault kills the holder: it is reaped, not waited for (and a detached job it started
    /// is waited for in the log).
    pub(crate) kills_holder: bool,
    pub(crate) onset: Onset,
    /// The contender's writes, at the holder's pace, and the TTL it asks for.
    pub(crate) contender_writes: u32,
    pub(crate) contender_ttl: Duration,
    /// The holder stops itself after its job, before its release (the fault continues it).
    pub(crate) stop_before_release: bool,
    /// The holder releases with a plain delete of the key.
    pub(crate) plain_delete: bool,
    /// A third worker, the next run, asks for the lock once the holder is done, waiting half
    /// the granted TTL.
    pub(crate) next_run: bool,
}

impl Shape {
    /// The default shape of `variant`'s trial on `config` (the holder at `holder_urls` when the
    /// stage gave it URLs of its own): a job sized to two thirds of the TTL for a holder that
    /// trusts its TTL (a TTL recommendation is for that), to one TTL for one that checks.
    pub(crate) fn of(
        variant: Variant,
        ttl: Duration,
        config: &BackendConfig,
        holder_urls: Option<&[String]>,
    ) -> Shape {
        let tracking = variant.tracking();
        let job = match tracking {
            LeaseTracking::AtRelease | LeaseTracking::ValidityFirst => ttl * 2 / 3,
            _ => ttl,
        };
        let holder = match holder_urls {
            Some(urls) => {
                let mut holder = config.clone();
                holder.urls = urls.to_vec();
                BackendPlan::of(&holder)
            }
            None => BackendPlan::of(config),
        };
        Shape {
            ttl,
            lease: ttl,
            job,
            writes: WRITES,
            holder,
            contender: BackendPlan::of(config),
            tracking,
            contender_on_failure: OnFailure::Queue,
            detached: false,
            slowed: false,
            contender_waits_for_fault: false,
            survivor_ttls: 0,
            kills_holder: false,
            onset: Onset::AfterIntervals,
            contender_writes: WRITES,
            contender_ttl: ttl,
            stop_before_release: false,
            plain_delete: false,
            next_run: false,
        }
    }
}

/// A trial as the inject phase sees it: the stage, both workers, and the fault's timing.
pub(crate) struct Trial<'a> {
    pub(crate) stage: &'a mut Stage,
    pub(crate) holder: &'a mut WorkerProcess,
    pub(crate) contender: &'a mut WorkerProcess,
    /// The TTL the holder was granted.
    pub(crate) granted: Duration,
    /// The fault's length (the `length` phase's answer).
    pub(crate) length: Duration,
    /// The longest any worker may have to wait in this trial.
    pub(crate) longest: Duration,
    /// The contender's answer, when it came during the fault.
    pub(crate) contender_step: Option<Message>,
    /// The fault window's end, when the fault dates it itself.
    pub(crate) end_ns: Option<i64>,
    /// From the fault's start to a new leader or primary, when the fault measures it.
    pub(crate) new_leader: Option<Duration>,
}

/// A fault: a variant's needs, its stage, and its phases (see the module's documentation).
#[async_trait]
pub(crate) trait Fault: Send + Sync {
    /// The variant it injects.
    fn variant(&self) -> Variant;

    /// What a cell on `backend` needs on this machine, in the order they are checked.
    fn needs(&self, _backend: BackendKind) -> Vec<Need> {
        Vec::new()
    }

    /// Prepare (once per cell): starts the private servers the cell locks on, and says where
    /// the workers reach them. The default uses the configured servers.
    async fn prepare(&self, _setup: &mut StageSetup<'_>) -> Result<(), FaultError> {
        Ok(())
    }

    /// Shape: adjusts the trial's default [`Shape`].
    fn shape(&self, shape: Shape, _stage: &Stage, _config: &BackendConfig) -> Shape {
        shape
    }

    /// Before the workers start.
    async fn before(&self, _stage: &Stage) -> Result<(), FaultError> {
        Ok(())
    }

    /// While the holder acquires (only for a shape that slows it): tells the holder to go (it
    /// waits at most 2 x `ttl`), and holds something back meanwhile.
    async fn acquire(
        &self,
        _stage: &Stage,
        holder: &mut WorkerProcess,
        ttl: Duration,
    ) -> Result<(), FaultError> {
        holder.go(ttl * 2).await
    }

    /// The fault's length, once the holder's grant (`granted`) is known.
    fn length(&self, _granted: Duration, _shape: &Shape, _stage: &Stage) -> Duration {
        Duration::ZERO
    }

    /// Inject: the fault, from its onset to its end.
    async fn inject(&self, trial: &mut Trial<'_>) -> Result<(), FaultError>;

    /// Heal: puts the stage back as it was before the trial.
    async fn heal(&self, _stage: &mut Stage) -> Result<(), FaultError> {
        Ok(())
    }

    /// What the judged trial must have seen for its figures to mean what the variant says (a
    /// late release needs another holder to free): an error (`FaultError::Unmet`) makes the
    /// cell not run, saying why.
    fn premise(&self, _outcome: &TrialOutcome, _config: &BackendConfig) -> Result<(), FaultError> {
        Ok(())
    }

    /// One trial: the two workers through the phases above. A fault that does not run two lock
    /// workers (a pool leak: one pool process) runs its own.
    #[allow(clippy::too_many_arguments)]
    async fn trial(
        &self,
        context: &mut TrialContext<'_>,
        config: &BackendConfig,
        client: &dyn LockBackend,
        stage: &mut Stage,
        id: &str,
        key: &str,
        rng: &mut rand::rngs::StdRng,
    ) -> Result<TrialOutcome, FaultError> {
        run(context, self, config, client, stage, id, key, rng).await
    }
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
    let lease = warm_up(client, key, ttl).await?;
    fault.before(stage).await?;
    let default = Shape {
        lease,
        ..Shape::of(variant, ttl, config, stage.holder_urls.as_deref())
    };
    let shape = fault.shape(default, stage, config);
    let every = shape.job / shape.writes;
    let connect = config.connect_timeout + Duration::from_secs(10);
    // The contender first: its start-up (a process, two connections) then cannot eat into the
    // holder's job; it asks for the lock when told to, just after the holder's grant.
    let (mut holder, mut contender, next) =
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
    let began = onset(&shape, &mut holder, every, rng, acquisition_start).await?;
    let (window, new_leader, contender_step) = match began {
        Began::At(start_ns) => {
            let mut trial = Trial {
                stage,
                holder: &mut holder,
                contender: &mut contender,
                granted,
                length,
                longest,
                contender_step: None,
                end_ns: None,
                new_leader: None,
            };
            fault.inject(&mut trial).await?;
            let window = Window {
                start_ns,
                end_ns: trial.end_ns.unwrap_or_else(monotonic_ns),
            };
            (window, trial.new_leader, trial.contender_step.take())
        }
        // Its client ended the lock first (pottery refusing a fourth extension): what the
        // trial measures is what that client did; there is nothing left to inject into.
        Began::HolderEnded => {
            // A contender that waits for the fault's word would wait for ever.
            if shape.contender_waits_for_fault {
                contender.go(longest).await?;
            }
            let now = monotonic_ns();
            let window = Window {
                start_ns: now,
                end_ns: now,
            };
            (window, None, None)
        }
    };
    let holder_done = matches!(began, Began::HolderEnded);
    let workers = (holder, contender, next);
    finish_workers(
        context,
        id,
        &shape,
        workers,
        (contender_step, holder_done),
        (granted, longest),
    )
    .await?;
    fault.heal(stage).await?;
    let mut outcome = judge(context, id, window, granted, None).await?;
    outcome.new_leader = new_leader;
    outcome.injected = !holder_done;
    if holder_done {
        return Ok(outcome);
    }
    fault.premise(&outcome, config)?;
    Ok(outcome)
}

/// How a trial's fault began.
enum Began {
    /// Its window started then (monotonic ns).
    At(i64),
    /// The holder's job ended before the onset (it said `done`): a client library ended the
    /// lock first, and the fault is not injected.
    HolderEnded,
}

/// Waits for the fault's onset, somewhere in the first third of the holder's job (by the seed)
/// or at its acquisition; returns when the fault's window starts, or that the holder's job
/// ended before it.
async fn onset(
    shape: &Shape,
    holder: &mut WorkerProcess,
    every: Duration,
    rng: &mut rand::rngs::StdRng,
    acquisition_start: i64,
) -> Result<Began, FaultError> {
    let after = rng.random_range(2..=WRITES / 3);
    match shape.onset {
        Onset::AfterWrite => loop {
            match holder
                .write_or_end(every * 4 + Duration::from_secs(5))
                .await?
            {
                Some(n) if n >= after => break,
                Some(_) => {}
                None => return Ok(Began::HolderEnded),
            }
        },
        Onset::AfterIntervals => tokio::time::sleep(every * after).await,
        Onset::AtAcquisition => return Ok(Began::At(acquisition_start)),
        Onset::AtRelease => {
            if !holder
                .releasing_or_end(shape.job * 2 + Duration::from_secs(5))
                .await?
            {
                return Ok(Began::HolderEnded);
            }
        }
    }
    Ok(Began::At(monotonic_ns()))
}

/// The workers to their end after the fault: a killed holder reaped (and its detached job
/// waited for in the log), a living one's job finished; a next run told to go once the holder
/// is done, waiting half the `granted` TTL; each other worker's grant and job, or its giving up.
async fn finish_workers(
    context: &mut TrialContext<'_>,
    id: &str,
    shape: &Shape,
    (mut holder, contender, next): (WorkerProcess, WorkerProcess, Option<WorkerProcess>),
    (contender_step, holder_done): (Option<Message>, bool),
    (granted, longest): (Duration, Duration),
) -> Result<(), FaultError> {
    if shape.kills_holder && !holder_done {
        holder.reap(Duration::from_secs(10)).await;
        if shape.detached {
            await_end(context, id, longest).await?;
        }
    } else {
        if !holder_done {
            holder.done(longest).await?;
        }
        holder.finish(Duration::from_secs(10)).await?;
    }
    if let Some(mut next) = next {
        next.go(granted / 2).await?;
        to_the_end(next, None, longest).await?;
    }
    to_the_end(contender, contender_step, longest).await
}

/// A worker that was told to go, to its end: it says either `granted` (then its job, then
/// `done`) or `timed-out` (`step`, when the fault already read it).
async fn to_the_end(
    mut worker: WorkerProcess,
    step: Option<Message>,
    longest: Duration,
) -> Result<(), FaultError> {
    let step = match step {
        Some(step) => step,
        None => worker.next_step(longest).await?,
    };
    if let Message::Granted { .. } = step {
        worker.done(longest).await?;
    }
    worker.finish(Duration::from_secs(10)).await
}

/// A warm-up acquisition, so that fencing counters are past their first value, as in any
/// deployment that has run for a while (a counter that restarts then goes back). The lab's own
/// connection may have been closed by the last trial's restart: the first request after one
/// fails and reconnects, so it is tried again. Returns the lease granted for `ttl` (`ttl` when
/// the lock was held).
async fn warm_up(
    client: &dyn LockBackend,
    key: &str,
    ttl: Duration,
) -> Result<Duration, FaultError> {
    let mut tries = 0;
    loop {
        tries += 1;
        match client.try_acquire(key, ttl).await {
            Ok(Some(lease)) => {
                client.release(&lease).await?;
                return Ok(lease.ttl.max(ttl));
            }
            Ok(None) => return Ok(ttl),
            Err(_) if tries < 3 => tokio::time::sleep(Duration::from_millis(50)).await,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Starts the contender (and the next run, if the shape has one), then the holder (inside the
/// stage's namespace, if it has one), each connected, from the trial's shape.
async fn spawn_workers(
    context: &TrialContext<'_>,
    shape: &Shape,
    stage: &Stage,
    (id, key): (&str, &str),
    ttl: Duration,
    connect: Duration,
) -> Result<(WorkerProcess, WorkerProcess, Option<WorkerProcess>), FaultError> {
    let every = shape.job / shape.writes;
    let plan = |worker: Role, wait: Duration| {
        let holding = worker == Role::Holder;
        WorkerPlan {
            trial: id.to_string(),
            worker,
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
            ttl_ms: if worker == Role::Contender {
                shape.contender_ttl.as_millis() as u64
            } else {
                ttl.as_millis() as u64
            },
            wait_ms: wait.as_millis() as u64,
            // A holder whose acquisition the lab slows waits to be told, once it is connected.
            wait_for_go: !holding || shape.slowed,
            writes: if worker == Role::Contender {
                shape.contender_writes
            } else {
                shape.writes
            },
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
            stop_before_release: holding && shape.stop_before_release,
            plain_delete: holding && shape.plain_delete,
            adapter: context.adapter.cloned(),
        }
    };
    let exe = context.worker_exe;
    let mut contender = WorkerProcess::spawn(
        exe,
        Role::Contender.word(),
        &AnyPlan::Lock(Box::new(plan(Role::Contender, ttl))),
    )
    .await?;
    contender.connected(connect).await?;
    let next = match shape.next_run {
        true => {
            let plan = AnyPlan::Lock(Box::new(plan(Role::NextRun, ttl)));
            let mut next = WorkerProcess::spawn(exe, Role::NextRun.word(), &plan).await?;
            next.connected(connect).await?;
            Some(next)
        }
        false => None,
    };
    let prefix = stage
        .partition
        .as_ref()
        .map_or(Vec::new(), |p| p.ns.prefix());
    let mut holder = WorkerProcess::spawn_in(
        &prefix,
        exe,
        Role::Holder.word(),
        &AnyPlan::Lock(Box::new(plan(Role::Holder, ttl * 2))),
    )
    .await?;
    holder.connected(connect).await?;
    Ok((holder, contender, next))
}
