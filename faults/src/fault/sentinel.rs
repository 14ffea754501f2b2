//! `cluster/sentinel-failover*`: a private Redis primary, two replicas and three Sentinels,
//! every client finding the primary through them. What the primary sends its replicas is held
//! back from the holder's acquisition on (both replicas', or, with `WAIT 1` after the grant, the
//! second replica's only); the primary SIGKILLed while the lock is held and the contender
//! waits; the Sentinels elect one of themselves and promote the replica furthest ahead. Each
//! trial measures the time from the kill to the Sentinels naming a new primary that says it is
//! one; the next trial runs on a set built again.

use std::time::Duration;

use async_trait::async_trait;
use lockbench_locks::{BackendConfig, BackendKind};

use super::phases::{Fault, Shape, Trial};
use crate::FaultError;
use crate::plan::BackendPlan;
use crate::process::WorkerProcess;
use crate::scenario::Variant;
use crate::sentinel::SentinelSet;
use crate::stage::{Need, Stage, StageSetup};

/// How long the Sentinels may take to name a new primary (about 2.3 s on an idle machine with
/// `down-after-milliseconds` 1000).
const FAILOVER_WITHIN: Duration = Duration::from_secs(30);

pub(crate) struct SentinelFailover(pub(crate) Variant);

impl SentinelFailover {
    fn waits(&self) -> bool {
        self.0 == Variant::ClusterSentinelFailover { wait: true }
    }
}

fn set(stage: &mut Stage) -> Result<&mut SentinelSet, FaultError> {
    stage
        .sentinel
        .as_mut()
        .ok_or_else(|| FaultError::Server("a Sentinel failover without its Sentinels".to_string()))
}

#[async_trait]
impl Fault for SentinelFailover {
    fn variant(&self) -> Variant {
        self.0
    }

    fn needs(&self, _backend: BackendKind) -> Vec<Need> {
        vec![Need::RedisServer]
    }

    async fn prepare(&self, setup: &mut StageSetup<'_>) -> Result<(), FaultError> {
        setup.private_sentinels().await
    }

    /// The holder's acquisition is slowed (the links held as it acquires), with `WAIT 1` after
    /// it in the waiting variant; its job lasts 1.5 TTL, so that its heartbeat must renew the
    /// lock on whichever server is primary after the failover.
    fn shape(&self, shape: Shape, _stage: &Stage, config: &BackendConfig) -> Shape {
        let mut holder = config.clone();
        holder.wait_replicas = u32::from(self.waits());
        Shape {
            job: shape.lease * 3 / 2,
            holder: BackendPlan::of(&holder),
            slowed: true,
            ..shape
        }
    }

    /// Both replicas' replication held as the holder acquires; with `WAIT 1`, the second
    /// replica's only, so that the first acknowledges the grant.
    async fn acquire(
        &self,
        stage: &Stage,
        holder: &mut WorkerProcess,
        ttl: Duration,
    ) -> Result<(), FaultError> {
        let set = stage.sentinel.as_ref().ok_or_else(|| {
            FaultError::Server("a Sentinel failover without its Sentinels".to_string())
        })?;
        let held = if self.waits() { 1 } else { 0 };
        for link in &set.links()[held..] {
            link.hold();
        }
        holder.go(ttl).await
    }

    /// The primary killed; what it sent and the replicas never received dies with it; the
    /// Sentinels' failover timed.
    async fn inject(&self, trial: &mut Trial<'_>) -> Result<(), FaultError> {
        let start = tokio::time::Instant::now();
        let set = set(trial.stage)?;
        let old = set.primary_port();
        set.kill_primary().await;
        for link in set.links() {
            link.sever();
        }
        set.primary_within(FAILOVER_WITHIN, old).await?;
        trial.new_leader = Some(start.elapsed());
        Ok(())
    }

    /// A new set on the same ports, the first server primary again.
    async fn heal(&self, stage: &mut Stage) -> Result<(), FaultError> {
        set(stage)?.rebuild().await
    }
}
