//! `restart/*`: a private Redis server SIGKILLed while the lock is held, and restarted: at once
//! (with its persistence), after its append-only file went back to before the grant (a power
//! loss), or only after the TTL has passed.

use std::time::Duration;

use async_trait::async_trait;
use lockbench_locks::BackendKind;

use super::phases::{Fault, Shape, Trial};
use crate::FaultError;
use crate::scenario::{Design, Persistence, Variant};
use crate::stage::{Need, Stage, StageSetup};

pub(crate) struct Restart(pub(crate) Variant);

#[async_trait]
impl Fault for Restart {
    fn variant(&self) -> Variant {
        self.0
    }

    fn needs(&self, _backend: BackendKind) -> Vec<Need> {
        vec![Need::RedisServer]
    }

    async fn prepare(&self, setup: &mut StageSetup<'_>) -> Result<(), FaultError> {
        let persistence = self.0.persistence().unwrap_or(Persistence::None);
        setup.private_redis(1, persistence, false).await
    }

    async fn before(&self, stage: &Stage) -> Result<(), FaultError> {
        match (self.0, stage.servers.first()) {
            (Variant::RestartPowerLoss, Some(server)) => server.snapshot_aof().await,
            _ => Ok(()),
        }
    }

    fn length(&self, granted: Duration, _shape: &Shape, _stage: &Stage) -> Duration {
        match self.0 {
            Variant::RestartDelayed => granted + Duration::from_secs(1),
            _ => Duration::ZERO,
        }
    }

    async fn inject(&self, trial: &mut Trial<'_>) -> Result<(), FaultError> {
        let server = first_server(trial.stage)?;
        server.kill().await;
        if self.0 == Variant::RestartPowerLoss {
            server.restore_aof()?;
        }
        tokio::time::sleep(trial.length).await;
        server.restart().await
    }
}

/// The stage's first private server: the one a restart kills.
pub(super) fn first_server(
    stage: &mut Stage,
) -> Result<&mut crate::server::PrivateRedis, FaultError> {
    stage
        .servers
        .first_mut()
        .ok_or_else(|| FaultError::Server("a server fault without a private server".to_string()))
}
