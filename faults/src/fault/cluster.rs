//! `cluster/*`: a member of a private cluster lost while the lock is held. The leader of three
//! etcd members or of a three-server ZooKeeper ensemble SIGKILLed, the contender waiting on the
//! surviving members; the leader cut off in a minority with the holder, the contender with the
//! majority; a Postgres primary lost and its streaming standby promoted, a contender acquiring
//! on the standby. Each trial measures the time to a new leader (or to a promoted standby taking
//! writes); the cluster is whole again, and led by the same member, before the next trial.
//! A follower restarted as the holder releases, the contender connected to it alone: the
//! member must catch up with the release before it can grant the lock on.

use std::time::Duration;

use async_trait::async_trait;
use lockbench_locks::{BackendConfig, BackendKind};

use super::phases::{Fault, Onset, Shape, Trial};
use crate::FaultError;
use crate::cluster::{Consensus, PrivateCluster};
use crate::plan::BackendPlan;
use crate::postgres::PrivatePostgres;
use crate::scenario::Variant;
use crate::stage::{Need, Stage, StageSetup};
use crate::trial::WRITES;

/// What a cut adds for the majority's election to its three leases: ZooKeeper's followers notice
/// a lost leader after syncLimit x tickTime (2.5 s here) and elect in a few hundred ms more;
/// etcd's after its election timeout (1 s) and a randomized wait.
const ELECTION_MARGIN: Duration = Duration::from_secs(4);

/// How long the surviving members may take to elect a new leader.
const ELECTION_WITHIN: Duration = Duration::from_secs(30);

/// `cluster/member-restarted`: the member that leads in every trial, and the follower that the
/// contender is connected to and that restarts.
const LEADER: usize = crate::cluster::SPLIT;
const FOLLOWER: usize = 0;

pub(crate) struct Cluster(pub(crate) Variant);

fn members(stage: &mut Stage) -> Result<&mut PrivateCluster, FaultError> {
    stage
        .cluster
        .as_mut()
        .ok_or_else(|| FaultError::Server("a cluster fault without its cluster".to_string()))
}

fn namespace(stage: &mut Stage) -> Result<&mut crate::stage::Partition, FaultError> {
    stage
        .partition
        .as_mut()
        .ok_or_else(|| FaultError::Server("an isolated leader without a namespace".to_string()))
}

fn pair(stage: &mut Stage) -> Result<(&mut PrivatePostgres, &mut PrivatePostgres), FaultError> {
    match (&mut stage.postgres, &mut stage.standby) {
        (Some(primary), Some(standby)) => Ok((primary, standby)),
        _ => Err(FaultError::Server(
            "a promotion without its primary and standby".to_string(),
        )),
    }
}

#[async_trait]
impl Fault for Cluster {
    fn variant(&self) -> Variant {
        self.0
    }

    fn needs(&self, backend: BackendKind) -> Vec<Need> {
        match (self.0, Consensus::of(backend)) {
            (Variant::ClusterPrimaryPromoted, _) => vec![Need::Postgres],
            (Variant::ClusterLeaderIsolated { .. }, Some(kind)) => {
                vec![Need::Netns, Need::Cluster(kind)]
            }
            (_, Some(kind)) => vec![Need::Cluster(kind)],
            (_, None) => vec![Need::Impossible("a cluster of this backend")],
        }
    }

    async fn prepare(&self, setup: &mut StageSetup<'_>) -> Result<(), FaultError> {
        match (self.0, Consensus::of(setup.config.kind)) {
            (Variant::ClusterPrimaryPromoted, _) => setup.private_postgres_with_standby().await,
            (Variant::ClusterMemberRestarted, Some(kind)) => {
                setup.private_cluster(kind).await?;
                members(setup.stage)?.lead(LEADER).await
            }
            (_, Some(kind)) => setup.private_cluster(kind).await,
            (_, None) => Err(FaultError::Server(format!(
                "no private cluster of {}",
                setup.config.kind.name()
            ))),
        }
    }

    /// A promotion's contender locks on the standby, told to go once it is promoted (a hot
    /// standby grants an advisory lock but hands out no fencing token); a consensus cluster's
    /// workers reach every member, as real clients are configured (split, the stage gave the
    /// holder every member and the contender the majority's).
    fn shape(&self, shape: Shape, stage: &Stage, config: &BackendConfig) -> Shape {
        if let Variant::ClusterLeaderIsolated { .. } = self.0 {
            // A job that outlives its cut and the majority's grant within it.
            return Shape {
                job: shape.lease.max(shape.ttl) * 5 + ELECTION_MARGIN + Duration::from_secs(2),
                writes: WRITES * 3,
                onset: Onset::AfterWrite,
                ..shape
            };
        }
        if self.0 == Variant::ClusterMemberRestarted {
            let Some(cluster) = &stage.cluster else {
                return shape;
            };
            let mut contender = config.clone();
            contender.urls = cluster.member_urls(FOLLOWER);
            return Shape {
                contender: BackendPlan::of(&contender),
                onset: Onset::AtRelease,
                stop_before_release: true,
                ..shape
            };
        }
        if self.0 != Variant::ClusterPrimaryPromoted {
            return shape;
        }
        let Some(standby) = &stage.standby else {
            return shape;
        };
        let mut contender = config.clone();
        contender.urls = vec![standby.url()];
        Shape {
            contender: BackendPlan::of(&contender),
            contender_waits_for_fault: true,
            ..shape
        }
    }

    /// A cut of three granted leases and the majority's election: it elects, lets the holder's
    /// lease or session run out, and grants the lock on, all within the cut.
    fn length(&self, granted: Duration, _shape: &Shape, _stage: &Stage) -> Duration {
        match self.0 {
            Variant::ClusterLeaderIsolated { .. } => granted * 3 + ELECTION_MARGIN,
            Variant::ClusterMemberRestarted => granted / 4,
            _ => Duration::ZERO,
        }
    }

    async fn inject(&self, trial: &mut Trial<'_>) -> Result<(), FaultError> {
        let start = tokio::time::Instant::now();
        if let Variant::ClusterLeaderIsolated { .. } = self.0 {
            let partition = namespace(trial.stage)?;
            let resource = partition.forwarder.port();
            partition.ns.isolate_except(&[resource])?;
            let cluster = members(trial.stage)?;
            cluster
                .leader_within(ELECTION_WITHIN, Some(crate::cluster::SPLIT))
                .await?;
            trial.new_leader = Some(start.elapsed());
            tokio::time::sleep(trial.length.saturating_sub(start.elapsed())).await;
            return namespace(trial.stage)?.ns.heal();
        }
        if self.0 == Variant::ClusterPrimaryPromoted {
            let (primary, standby) = pair(trial.stage)?;
            primary.stop().await;
            standby.promote().await?;
            trial.new_leader = Some(start.elapsed());
            return trial.contender.go(trial.longest).await;
        }
        if self.0 == Variant::ClusterMemberRestarted {
            // Down while the release commits on the other two, back while the contender waits;
            // the time to its answering as a member again (it may need longer than its
            // downtime: a ZooKeeper server is a JVM).
            let cluster = members(trial.stage)?;
            cluster.kill(FOLLOWER).await;
            // The holder stopped itself as it said `releasing`: its release now goes to the
            // two members left.
            trial.holder.resume()?;
            tokio::time::sleep(trial.length).await;
            cluster.heal().await?;
            trial.new_leader = Some(start.elapsed());
            return Ok(());
        }
        let cluster = members(trial.stage)?;
        let leader = cluster.leader_within(Duration::from_secs(5), None).await?;
        cluster.kill(leader).await;
        cluster.leader_within(ELECTION_WITHIN, Some(leader)).await?;
        trial.new_leader = Some(start.elapsed());
        Ok(())
    }

    /// The killed member back in the cluster (the isolated one led it again); the lost
    /// primary restarted on its data and the standby made again from it.
    async fn heal(&self, stage: &mut Stage) -> Result<(), FaultError> {
        if self.0 == Variant::ClusterPrimaryPromoted {
            let (primary, standby) = pair(stage)?;
            primary.restart().await?;
            return standby.rebuild_from(primary).await;
        }
        let cluster = members(stage)?;
        cluster.heal().await?;
        match self.0 {
            Variant::ClusterLeaderIsolated { .. } => cluster.lead(crate::cluster::SPLIT).await?,
            Variant::ClusterMemberRestarted => cluster.lead(LEADER).await?,
            _ => {}
        }
        Ok(())
    }
}
