//! `pooler/*`: holder and contender reach a private Postgres through a PgBouncer of the lab's.
//! In transaction mode the job runs as it would without a fault: the pooler is the fault (a
//! session lock stays on a server connection the pooler hands to the next client). In session
//! mode the holder is SIGKILLed mid-job, with and without the reset PgBouncer runs on a server
//! connection given back (`DISCARD ALL`), to measure how long its lock outlives it.

use std::time::Duration;

use async_trait::async_trait;
use lockbench_locks::{BackendConfig, BackendKind};

use super::phases::{Fault, Onset, Shape, Trial};
use crate::FaultError;
use crate::pgbouncer::PrivatePgbouncer;
use crate::scenario::{PoolerMode, Variant};
use crate::stage::{Need, Stage, StageSetup};

pub(crate) struct Pooler(pub(crate) Variant);

impl Pooler {
    fn mode(&self) -> PoolerMode {
        match self.0 {
            Variant::Pooler(mode) => mode,
            _ => PoolerMode::Transaction,
        }
    }

    fn kills(&self) -> bool {
        self.mode() != PoolerMode::Transaction
    }
}

#[async_trait]
impl Fault for Pooler {
    fn variant(&self) -> Variant {
        self.0
    }

    fn needs(&self, _backend: BackendKind) -> Vec<Need> {
        vec![Need::Postgres, Need::Pgbouncer]
    }

    /// A private Postgres (a dead holder's lock, left on a pooled server connection, must not
    /// outlive the cell on a shared server) and the PgBouncer in front of it, which the workers
    /// and the lab's own client reach it through.
    async fn prepare(&self, setup: &mut StageSetup<'_>) -> Result<(), FaultError> {
        setup.private_postgres(&[]).await?;
        let port = setup.stage.server_port();
        let pooler = PrivatePgbouncer::start(port, self.mode()).await?;
        setup.config.urls = vec![pooler.url()];
        setup.config.through_transaction_pooler = true;
        setup.stage.pgbouncer = Some(pooler);
        Ok(())
    }

    fn shape(&self, shape: Shape, _stage: &Stage, _config: &BackendConfig) -> Shape {
        if self.kills() {
            Shape {
                kills_holder: true,
                ..shape
            }
        } else {
            // Nothing is injected: the window is the holder's, from its acquisition.
            Shape {
                onset: Onset::AtAcquisition,
                ..shape
            }
        }
    }

    async fn inject(&self, trial: &mut Trial<'_>) -> Result<(), FaultError> {
        if self.kills() {
            trial.holder.kill()?;
        }
        Ok(())
    }

    /// The contender may wait for PgBouncer to close the server connection that kept the lock.
    fn length(&self, _granted: Duration, _shape: &Shape, _stage: &Stage) -> Duration {
        crate::scenario::POOLER_IDLE_TIMEOUT * 3
    }
}
