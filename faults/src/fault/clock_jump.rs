//! `clock-jump/wall-clock-ahead`: the control. A private ZooKeeper's wall clock (the shim in its
//! JVM) jumps two TTLs ahead while the lock is held; a session expires by a monotonic clock.

use async_trait::async_trait;
use lockbench_locks::BackendKind;

use super::phases::{Fault, Trial};
use crate::FaultError;
use crate::scenario::Variant;
use crate::stage::{Need, Stage, StageSetup};

pub(crate) struct ClockJump;

#[async_trait]
impl Fault for ClockJump {
    fn variant(&self) -> Variant {
        Variant::ClockJump
    }

    fn needs(&self, backend: BackendKind) -> Vec<Need> {
        match backend {
            BackendKind::Etcd => vec![Need::Impossible(
                "etcd is a Go binary: it reads the wall clock from the vDSO, which no LD_PRELOAD reaches, and the machine's clock is not the lab's to change (its leases expire by Go's monotonic clock)",
            )],
            // A private ZooKeeper whose JVM reads the shim's clock.
            BackendKind::Zookeeper => vec![Need::Shim, Need::Zookeeper],
            // Not among the backends this variant applies to (`Design::applies_to`); Redlock's
            // clock jumps are variants of its own scenario.
            BackendKind::Memory
            | BackendKind::Redis
            | BackendKind::Redlock
            | BackendKind::PgSession
            | BackendKind::PgXact => vec![Need::Impossible(
                "no clock this backend's lock depends on can be moved by the lab",
            )],
        }
    }

    async fn prepare(&self, setup: &mut StageSetup<'_>) -> Result<(), FaultError> {
        setup.private_zookeeper().await
    }

    async fn inject(&self, trial: &mut Trial<'_>) -> Result<(), FaultError> {
        let zk = zookeeper(trial.stage)?;
        zk.jump_clock((trial.granted * 2).as_millis() as i64)
            .await
            .map(|_| ())
    }

    async fn heal(&self, stage: &mut Stage) -> Result<(), FaultError> {
        zookeeper(stage)?.reset_clock()
    }
}

fn zookeeper(stage: &Stage) -> Result<&crate::zookeeper::PrivateZookeeper, FaultError> {
    stage
        .zookeeper
        .as_ref()
        .ok_or_else(|| FaultError::Server("a clock jump without its ZooKeeper".to_string()))
}
