//! `cluster/sentinel-failover*`: a private Redis primary, two replicas and three Sentinels,
//! every client finding the primary through them. What the primary sends its replicas is held
//! back from the holder's acquisition on (both replicas', or, with `WAIT 1` after the grant, the
//! second replica's only); the primary SIGKILLed while the lock is held and the contender
//! waits; the Sentinels elect one of themselves and promote the replica furthest ahead. Each
//! trial measures the time from the kill to the Sentinels naming a new primary that says it is
//! one; the next trial runs on a set built again. With `min-replicas-to-write 1` the replicas
//! go on acknowledging the stream whose bytes the lab holds, so the primary takes the grant all
//! the same.
//!
//! `cluster/sentinel-primary-isolated*`: the same set split by a lab namespace, the primary and
//! the holder inside, the replicas, the Sentinels and the contender outside; the namespace's cut
//! isolates the primary (Jepsen's "isolate the primary"), the Sentinels promote a replica, and the
//! old primary goes on taking the holder's renewals unless they must be acknowledged (`WAIT 1`).

use std::time::Duration;

use async_trait::async_trait;
use lockbench_locks::{BackendConfig, BackendKind};

use super::phases::{Fault, Onset, Shape, Trial};
use crate::FaultError;
use crate::plan::BackendPlan;
use crate::process::WorkerProcess;
use crate::scenario::{ReplicaGuard, Variant};
use crate::sentinel::SentinelSet;
use crate::stage::{Need, Stage, StageSetup};
use crate::trial::WRITES;

/// How long the Sentinels may take to name a new primary (about 2.3 s on an idle machine with
/// `down-after-milliseconds` 1000).
const FAILOVER_WITHIN: Duration = Duration::from_secs(30);

pub(crate) struct SentinelFailover(pub(crate) Variant);

/// What a cut adds to its two leases: the Sentinels' failover (about 2.3 s here) and a margin.
const CUT_MARGIN: Duration = Duration::from_secs(4);

impl SentinelFailover {
    fn waits(&self) -> bool {
        matches!(
            self.0,
            Variant::ClusterSentinelFailover {
                guard: ReplicaGuard::Wait
            } | Variant::ClusterSentinelPrimaryIsolated { wait: true }
        )
    }

    fn min_replicas(&self) -> bool {
        self.0
            == Variant::ClusterSentinelFailover {
                guard: ReplicaGuard::MinReplicas,
            }
    }

    fn isolates(&self) -> bool {
        matches!(self.0, Variant::ClusterSentinelPrimaryIsolated { .. })
    }
}

fn set(stage: &mut Stage) -> Result<&mut SentinelSet, FaultError> {
    stage.sentinel.as_mut().ok_or_else(missing)
}

fn missing() -> FaultError {
    FaultError::Server("a Sentinel failover without its Sentinels".to_string())
}

#[async_trait]
impl Fault for SentinelFailover {
    fn variant(&self) -> Variant {
        self.0
    }

    fn needs(&self, _backend: BackendKind) -> Vec<Need> {
        if self.isolates() {
            vec![Need::RedisServer, Need::Netns]
        } else {
            vec![Need::RedisServer]
        }
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
        if self.isolates() {
            // A job that outlives its cut, the promotion and the key's expiry on the promoted
            // replica.
            return Shape {
                job: shape.lease * 3 + CUT_MARGIN,
                writes: WRITES * 3,
                onset: Onset::AfterWrite,
                holder: BackendPlan::of(&holder),
                ..shape
            };
        }
        Shape {
            job: shape.lease * 3 / 2,
            holder: BackendPlan::of(&holder),
            slowed: true,
            ..shape
        }
    }

    /// Both replicas' replication held as the holder acquires; with `WAIT 1`, the second
    /// replica's only, so that the first acknowledges the grant; with `min-replicas-to-write`,
    /// that set on every server first.
    async fn acquire(
        &self,
        stage: &Stage,
        holder: &mut WorkerProcess,
        ttl: Duration,
    ) -> Result<(), FaultError> {
        let set = stage.sentinel.as_ref().ok_or_else(missing)?;
        if self.min_replicas() {
            // On every server, so that the promoted replica keeps it (a rebuilt set forgets).
            set.require_replicas(1, 1).await?;
        }
        let held = usize::from(self.waits());
        for link in &set.links()[held..] {
            link.hold();
        }
        holder.go(ttl).await
    }

    /// A cut of two granted leases and the failover: the Sentinels promote, the key expires on
    /// the promoted replica and the contender is granted, all within the cut.
    fn length(&self, granted: Duration, _shape: &Shape, _stage: &Stage) -> Duration {
        if self.isolates() {
            granted * 2 + CUT_MARGIN
        } else {
            Duration::ZERO
        }
    }

    /// The primary killed; what it sent and the replicas never received dies with it; the
    /// Sentinels' failover timed. Split, the primary cut off with the holder for the fault's
    /// length instead.
    async fn inject(&self, trial: &mut Trial<'_>) -> Result<(), FaultError> {
        let start = tokio::time::Instant::now();
        if self.isolates() {
            let partition = trial.stage.partition.as_mut().ok_or_else(|| {
                FaultError::Server("an isolated primary without a namespace".to_string())
            })?;
            let resource = partition.forwarder.port();
            partition.ns.isolate_except(&[resource])?;
            let set = set(trial.stage)?;
            let old = set.primary_port();
            set.primary_within(FAILOVER_WITHIN, old).await?;
            trial.new_leader = Some(start.elapsed());
            tokio::time::sleep(trial.length.saturating_sub(start.elapsed())).await;
            return match trial.stage.partition.as_mut() {
                Some(partition) => partition.ns.heal(),
                None => Ok(()),
            };
        }
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
