//! A fault as a value: what a variant needs on this machine, what it sets up for its cell, and the
//! phases of each of its trials. The trial runner (`trial::run`) calls the phases in order and
//! knows no scenario by name; [`of`] is the one table from a [`Variant`] to its fault.
//!
//! The phases of a trial, in order:
//!
//! 1. **shape**: the workers' plans (the job's length and writes, where each worker locks, what
//!    the contender does when its acquisition fails, when the fault begins);
//! 2. **before**: the cell's servers readied before the workers start (a snapshot taken);
//! 3. **acquire**: while the holder acquires (a node or a replica held back);
//! 4. **inject**: the fault itself, from its onset to its end (a pause, a kill, a cut);
//! 5. **end the holder**: wait for its job, or reap it when the fault killed it;
//! 6. **heal**: the cell put back as it was, for the next trial (clocks, a failed-over primary).
//!
//! The judging is the same for every fault: the protected resource's log of the trial
//! (`overlap::figures`). A new variant is a row in [`of`] and, for a new scenario, one file here
//! that implements [`Fault`] (docs/ARCHITECTURE.md lists the rest: its name, its rule, its
//! test).

mod clock_jump;
mod crash;
mod failover;
mod outage;
mod partition;
mod pause;
mod pool_leak;
mod redlock;
mod restart;

use std::time::Duration;

use async_trait::async_trait;
use lockbench_locks::{BackendConfig, BackendKind, LockBackend};

use crate::FaultError;
use crate::plan::{BackendPlan, LeaseTracking, OnFailure};
use crate::process::WorkerProcess;
use crate::protocol::Message;
use crate::scenario::{Design, Variant};
use crate::stage::{Need, Stage, StageSetup};
use crate::trial::{TrialContext, TrialOutcome, WRITES};

/// The fault of `variant`: one row per scenario.
pub(crate) fn of(variant: Variant) -> Box<dyn Fault> {
    use lockbench_core::fault::Scenario;
    match variant.scenario() {
        Scenario::Pause => Box::new(pause::Pause(variant)),
        Scenario::Restart => Box::new(restart::Restart(variant)),
        Scenario::Redlock => Box::new(redlock::Redlock(variant)),
        Scenario::PoolLeak => Box::new(pool_leak::PoolLeak(variant)),
        Scenario::Partition => Box::new(partition::Partition(variant)),
        Scenario::ClockJump => Box::new(clock_jump::ClockJump),
        Scenario::Crash => Box::new(crash::Crash(variant)),
        Scenario::Failover => Box::new(failover::Failover(variant)),
        Scenario::Outage => Box::new(outage::Outage(variant)),
    }
}

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
}

/// How a trial's workers run: the default for a variant, which a fault's `shape` phase adjusts.
pub(crate) struct Shape {
    /// The TTL the workers ask for.
    pub(crate) ttl: Duration,
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
    pub(crate) onset: Onset,
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
            onset: Onset::AfterIntervals,
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

    /// Ends the holder: waits for its job and its exit. A fault that killed it overrides this.
    async fn end_holder(
        &self,
        holder: WorkerProcess,
        _context: &mut TrialContext<'_>,
        _id: &str,
        longest: Duration,
    ) -> Result<(), FaultError> {
        let mut holder = holder;
        holder.done(longest).await?;
        holder.finish(Duration::from_secs(10)).await
    }

    /// Heal: puts the stage back as it was before the trial.
    async fn heal(&self, _stage: &mut Stage) -> Result<(), FaultError> {
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
        crate::trial::run(context, self, config, client, stage, id, key, rng).await
    }
}
