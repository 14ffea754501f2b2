//! `redlock/*`: Redlock over five private Redis servers, one restarted empty, two of their wall
//! clocks jumped ahead (the shim), both at once, or one stopped during the holder's acquisition
//! (a late start).

use std::time::Duration;

use async_trait::async_trait;
use lockbench_locks::{BackendConfig, BackendKind};

use super::phases::{Fault, Onset, Shape, Trial};
use super::restart::first_server;
use crate::FaultError;
use crate::process::WorkerProcess;
use crate::scenario::{Design, Persistence, Variant};
use crate::stage::{Need, Stage, StageSetup};

pub(crate) struct Redlock(pub(crate) Variant);

impl Redlock {
    fn late_start(&self) -> bool {
        matches!(self.0, Variant::RedlockLateStart { .. })
    }
}

#[async_trait]
impl Fault for Redlock {
    fn variant(&self) -> Variant {
        self.0
    }

    fn needs(&self, _backend: BackendKind) -> Vec<Need> {
        let mut needs = vec![Need::RedisServer];
        if self.0.jumps_clocks() {
            needs.push(Need::Shim);
        }
        needs
    }

    async fn prepare(&self, setup: &mut StageSetup<'_>) -> Result<(), FaultError> {
        let persistence = self.0.persistence().unwrap_or(Persistence::None);
        let count = self.0.private_servers();
        setup
            .private_redis(count, persistence, self.0.jumps_clocks())
            .await
    }

    /// A late start is over once the holder is granted: the window starts at its acquisition.
    fn shape(&self, shape: Shape, _stage: &Stage, _config: &BackendConfig) -> Shape {
        if self.late_start() {
            Shape {
                slowed: true,
                onset: Onset::AtAcquisition,
                ..shape
            }
        } else {
            shape
        }
    }

    /// One node stopped past its timeout (250 ms): the first acquisition has returned by then.
    async fn acquire(
        &self,
        stage: &Stage,
        holder: &mut WorkerProcess,
        ttl: Duration,
    ) -> Result<(), FaultError> {
        let node = stage
            .servers
            .first()
            .ok_or_else(|| FaultError::Server("a late start without a node".to_string()))?;
        node.pause()?;
        holder.go(ttl * 2).await?;
        tokio::time::sleep(Duration::from_millis(300)).await;
        node.resume()
    }

    async fn inject(&self, trial: &mut Trial<'_>) -> Result<(), FaultError> {
        if self.0.jumps_clocks() {
            // Two nodes other than the one that restarts.
            let ahead = (trial.granted * 2).as_millis() as i64;
            for server in trial.stage.servers.iter().skip(1).take(2) {
                server.set_clock_offset(ahead)?;
            }
        }
        if self.0.restarts() {
            let server = first_server(trial.stage)?;
            server.kill().await;
            tokio::time::sleep(trial.length).await;
            server.restart().await?;
        }
        Ok(())
    }

    async fn heal(&self, stage: &mut Stage) -> Result<(), FaultError> {
        if self.0.jumps_clocks() {
            for server in &stage.servers {
                server.set_clock_offset(0)?;
            }
        }
        Ok(())
    }
}
