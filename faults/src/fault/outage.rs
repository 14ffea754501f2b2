//! `outage/*`: the holder granted on a private Redis server, which is then stopped for a third of
//! the TTL as the contender's run starts; the contender follows its policy (skip, queue, run
//! unlocked).

use std::time::Duration;

use async_trait::async_trait;
use lockbench_locks::{BackendConfig, BackendKind};

use super::phases::{Fault, Shape, Trial};
use super::restart::first_server;
use crate::FaultError;
use crate::scenario::{OnFailure, Persistence, Variant};
use crate::stage::{Need, Stage, StageSetup};

pub(crate) struct Outage(pub(crate) Variant);

#[async_trait]
impl Fault for Outage {
    fn variant(&self) -> Variant {
        self.0
    }

    fn needs(&self, _backend: BackendKind) -> Vec<Need> {
        vec![Need::RedisServer]
    }

    async fn prepare(&self, setup: &mut StageSetup<'_>) -> Result<(), FaultError> {
        setup.private_redis(1, Persistence::None, false).await
    }

    /// The contender's run starts in the outage, by the fault.
    fn shape(&self, shape: Shape, _stage: &Stage, _config: &BackendConfig) -> Shape {
        let policy = match self.0 {
            Variant::Outage(policy) => policy,
            _ => OnFailure::Queue,
        };
        Shape {
            contender_on_failure: policy,
            contender_waits_for_fault: true,
            ..shape
        }
    }

    fn length(&self, _granted: Duration, shape: &Shape, _stage: &Stage) -> Duration {
        shape.ttl / 3
    }

    async fn inject(&self, trial: &mut Trial<'_>) -> Result<(), FaultError> {
        let server = first_server(trial.stage)?;
        server.pause()?;
        trial.contender.go(trial.longest).await?;
        tokio::time::sleep(trial.length).await;
        first_server(trial.stage)?.resume()
    }
}
