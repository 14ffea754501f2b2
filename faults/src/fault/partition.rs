//! `partition/*`: the holder, in a network namespace of the lab's, cut off from its server by
//! nftables for a while, then healed: a private Redis or Postgres (so that the server's own
//! socket meets the cut), or the lab's forwarders to the configured Redlock nodes, etcd or
//! ZooKeeper, which let the holder go by their own timers.

use std::time::Duration;

use async_trait::async_trait;
use lockbench_locks::{BackendConfig, BackendKind};

use super::phases::{Fault, Onset, Shape, Trial};
use crate::FaultError;
use crate::scenario::Variant;
use crate::stage::{Need, Stage, StageSetup};
use crate::trial::WRITES;

pub(crate) struct Partition(pub(crate) Variant);

#[async_trait]
impl Fault for Partition {
    fn variant(&self) -> Variant {
        self.0
    }

    fn needs(&self, backend: BackendKind) -> Vec<Need> {
        match backend {
            BackendKind::PgSession => vec![Need::Netns, Need::Postgres],
            BackendKind::Redis => vec![Need::RedisServer, Need::Netns],
            _ => vec![Need::Netns],
        }
    }

    /// A private server on the namespace's host end, so that the server's own socket meets the
    /// cut; for `partition/keepalive`, a Postgres whose TCP keepalive gives up in about 3 s.
    async fn prepare(&self, setup: &mut StageSetup<'_>) -> Result<(), FaultError> {
        if setup.config.kind == BackendKind::PgSession {
            let keepalive = [
                "tcp_keepalives_idle=1",
                "tcp_keepalives_interval=1",
                "tcp_keepalives_count=2",
            ];
            let settings: &[&str] = if self.0 == Variant::PartitionKeepalive {
                &keepalive
            } else {
                &[]
            };
            setup.private_postgres(settings).await
        } else if setup.config.kind == BackendKind::Redis {
            setup
                .private_redis(1, crate::server::Persistence::None, false)
                .await
        } else {
            setup.reroute_holder().await
        }
    }

    /// The job lasts three granted leases (a ZooKeeper session, an etcd lease may be longer
    /// than the TTL asked), to outlive its partition.
    fn shape(&self, shape: Shape, _stage: &Stage, _config: &BackendConfig) -> Shape {
        Shape {
            job: shape.lease.max(shape.ttl) * 3,
            writes: WRITES * 3,
            onset: Onset::AfterWrite,
            ..shape
        }
    }

    /// Two TTLs; on Postgres 6 s more, long enough for a short TCP keepalive to show against
    /// the system's default.
    fn length(&self, granted: Duration, _shape: &Shape, stage: &Stage) -> Duration {
        match stage.postgres {
            Some(_) => granted * 2 + Duration::from_secs(6),
            None => granted * 2,
        }
    }

    /// Cuts the holder off from its private server, or from every forwarder it reaches the
    /// configured servers through.
    async fn inject(&self, trial: &mut Trial<'_>) -> Result<(), FaultError> {
        let ports: Vec<u16> = if trial.stage.forwarders.is_empty() {
            vec![trial.stage.server_port()]
        } else {
            trial.stage.forwarders.iter().map(|f| f.port()).collect()
        };
        let partition = trial
            .stage
            .partition
            .as_mut()
            .ok_or_else(|| FaultError::Server("a partition without a namespace".to_string()))?;
        for port in ports {
            partition.ns.partition(port)?;
        }
        tokio::time::sleep(trial.length).await;
        partition.ns.heal()
    }
}
