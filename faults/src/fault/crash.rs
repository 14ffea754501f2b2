//! `crash/*`: the holder gone. Its process SIGKILLed (its connections closed by the kernel),
//! killed while the job process it started writes on, or its host vanished: frozen, and every
//! packet of its namespace dropped, so that only the server's own timers can free the lock.

use std::time::Duration;

use async_trait::async_trait;
use lockbench_locks::{BackendConfig, BackendKind};

use super::phases::{Fault, Onset, Shape, Trial};
use crate::FaultError;
use crate::scenario::{VANISHED_WAIT, Variant};
use crate::stage::{Need, Stage, StageSetup, with_keepalive};

pub(crate) struct Crash(pub(crate) Variant);

fn postgres(kind: BackendKind) -> bool {
    matches!(kind, BackendKind::PgSession | BackendKind::PgXact)
}

#[async_trait]
impl Fault for Crash {
    fn variant(&self) -> Variant {
        self.0
    }

    fn needs(&self, backend: BackendKind) -> Vec<Need> {
        match self.0 {
            Variant::CrashHostVanished { .. } if postgres(backend) => {
                vec![Need::Netns, Need::Postgres]
            }
            Variant::CrashHostVanished { .. } => vec![Need::Netns],
            _ => Vec::new(),
        }
    }

    /// A vanished host: Postgres is a private server on the namespace's host end (so that the
    /// server's own socket meets the silence), the holder's connection with the lab's keepalive
    /// where the variant says; the other backends are reached through forwarders there, which
    /// the vanishing cuts, and expire the holder by their own timers.
    async fn prepare(&self, setup: &mut StageSetup<'_>) -> Result<(), FaultError> {
        let Variant::CrashHostVanished { keepalive } = self.0 else {
            return Ok(());
        };
        if postgres(setup.config.kind) {
            setup.private_postgres(&[]).await?;
            if keepalive {
                setup.stage.holder_urls = Some(vec![with_keepalive(&setup.config.urls[0])]);
            }
            Ok(())
        } else {
            setup.reroute_holder().await
        }
    }

    /// Every crash kills its holder.
    fn shape(&self, shape: Shape, _stage: &Stage, _config: &BackendConfig) -> Shape {
        let shape = Shape {
            kills_holder: true,
            ..shape
        };
        match self.0 {
            // The job process outlives its holder by three lock lifetimes.
            Variant::CrashWorkSurvives => Shape {
                detached: true,
                survivor_ttls: 3,
                ..shape
            },
            Variant::CrashHostVanished { .. } => Shape {
                onset: Onset::AfterWrite,
                ..shape
            },
            _ => shape,
        }
    }

    /// The contender's wait after the host vanished.
    fn length(&self, _granted: Duration, _shape: &Shape, _stage: &Stage) -> Duration {
        match self.0 {
            Variant::CrashHostVanished { .. } => VANISHED_WAIT,
            _ => Duration::ZERO,
        }
    }

    /// A vanished host's contender answers before the lab ends the fault: its grant, or its
    /// giving up, is the end of the window.
    async fn inject(&self, trial: &mut Trial<'_>) -> Result<(), FaultError> {
        let Variant::CrashHostVanished { .. } = self.0 else {
            return trial.holder.kill();
        };
        let partition =
            trial.stage.partition.as_mut().ok_or_else(|| {
                FaultError::Server("a vanished host without a namespace".to_string())
            })?;
        trial.holder.pause()?;
        partition.ns.vanish()?;
        // The contender's wait is the trial's longest; a library may answer a little after its
        // wait ran out (tooz retries with a backoff of up to 1 s), and its answer is the cell.
        let answer = trial.longest + Duration::from_secs(5);
        trial.contender_step = Some(trial.contender.next_step(answer).await?);
        trial.end_ns = Some(crate::clock::monotonic_ns());
        trial.holder.kill()?;
        partition.ns.heal()
    }
}
