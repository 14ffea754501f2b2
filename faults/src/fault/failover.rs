//! `failover/*`: a private primary and replica, the replication held back while the holder
//! acquires on the primary (with `WAIT 1` or without); the primary SIGKILLed, the replica
//! promoted, the contender acquiring on it.

use std::time::Duration;

use async_trait::async_trait;
use lockbench_locks::{BackendConfig, BackendKind};

use super::phases::{Fault, Shape, Trial};
use crate::FaultError;
use crate::link::ReplicationLink;
use crate::plan::BackendPlan;
use crate::process::WorkerProcess;
use crate::scenario::{Persistence, Variant};
use crate::server::PrivateRedis;
use crate::stage::{Need, Stage, StageSetup};

pub(crate) struct Failover(pub(crate) Variant);

impl Failover {
    fn waits(&self) -> bool {
        self.0 == Variant::Failover { wait: true }
    }
}

fn pair(
    stage: &mut Stage,
) -> Result<(&mut PrivateRedis, &mut PrivateRedis, &ReplicationLink), FaultError> {
    match (&mut stage.servers[..], &stage.link) {
        ([primary, replica, ..], Some(link)) => Ok((primary, replica, link)),
        _ => Err(FaultError::Server(
            "a failover without its primary, replica and link".to_string(),
        )),
    }
}

#[async_trait]
impl Fault for Failover {
    fn variant(&self) -> Variant {
        self.0
    }

    fn needs(&self, _backend: BackendKind) -> Vec<Need> {
        vec![Need::RedisServer]
    }

    /// The second server replicates the first through a link the lab can hold; the lab's own
    /// client locks on the primary.
    async fn prepare(&self, setup: &mut StageSetup<'_>) -> Result<(), FaultError> {
        setup.private_redis(2, Persistence::None, false).await?;
        let bind = setup.bind();
        let [primary, replica] = &setup.stage.servers[..] else {
            return Err(FaultError::Server(
                "a failover needs two servers".to_string(),
            ));
        };
        let link =
            ReplicationLink::start(std::net::SocketAddr::from((bind, primary.port()))).await?;
        replica.replicate(link.addr()).await?;
        setup.stage.link = Some(link);
        setup.config.urls.truncate(1);
        Ok(())
    }

    /// The holder locks on the primary (waiting for the replica with `wait`), the contender on
    /// the replica, which is promoted later: the clients of a failover.
    fn shape(&self, shape: Shape, stage: &Stage, config: &BackendConfig) -> Shape {
        let (Some(primary), Some(replica)) = (stage.servers.first(), stage.servers.get(1)) else {
            return shape;
        };
        let mut holder = config.clone();
        holder.urls = vec![primary.url()];
        holder.wait_replicas = u32::from(self.waits());
        let mut contender = config.clone();
        contender.urls = vec![replica.url()];
        // A job of a third of the TTL: the wait for the replica comes out of the lease (about
        // 0.2-0.3 TTL here), and a job sized to two thirds of it would outlive what is left
        // whenever the wait ran long, an overlap the failover did not cause.
        Shape {
            job: shape.ttl / 3,
            holder: BackendPlan::of(&holder),
            contender: BackendPlan::of(&contender),
            slowed: true,
            ..shape
        }
    }

    /// The replication held while the holder acquires; with `WAIT`, which refuses every grant
    /// while the replica is behind, for a TTL, then passed.
    async fn acquire(
        &self,
        stage: &Stage,
        holder: &mut WorkerProcess,
        ttl: Duration,
    ) -> Result<(), FaultError> {
        let link = stage
            .link
            .as_ref()
            .ok_or_else(|| FaultError::Server("a failover without its link".to_string()))?;
        link.hold();
        holder.go(ttl * 2).await?;
        if self.waits() {
            tokio::time::sleep(ttl).await;
            link.pass();
        }
        Ok(())
    }

    /// What the replica never received dies with the primary.
    async fn inject(&self, trial: &mut Trial<'_>) -> Result<(), FaultError> {
        let (primary, replica, link) = pair(trial.stage)?;
        primary.kill().await;
        replica.promote().await?;
        link.sever();
        Ok(())
    }

    /// The next trial starts from a primary and a replica in sync again.
    async fn heal(&self, stage: &mut Stage) -> Result<(), FaultError> {
        let (primary, replica, link) = pair(stage)?;
        primary.restart().await?;
        link.pass();
        replica.replicate(link.addr()).await
    }
}
