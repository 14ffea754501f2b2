//! `partition/*`: the holder, in a network namespace of the lab's, cut off from its private
//! server (Redis, or Postgres) by nftables for a while, then healed.

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
            _ => vec![Need::RedisServer, Need::Netns],
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
        } else {
            setup
                .private_redis(1, crate::server::Persistence::None, false)
                .await
        }
    }

    /// The job lasts three TTLs, to outlive its partition.
    fn shape(&self, shape: Shape, _stage: &Stage, _config: &BackendConfig) -> Shape {
        Shape {
            job: shape.ttl * 3,
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

    async fn inject(&self, trial: &mut Trial<'_>) -> Result<(), FaultError> {
        let port = trial.stage.server_port();
        let partition = trial
            .stage
            .partition
            .as_mut()
            .ok_or_else(|| FaultError::Server("a partition without a namespace".to_string()))?;
        partition.ns.partition(port)?;
        tokio::time::sleep(trial.length).await;
        partition.ns.heal()
    }
}
