//! `pause/*`: the holder's process stopped (SIGSTOP) for a multiple of its TTL, then continued.

use std::time::Duration;

use async_trait::async_trait;
use lockbench_locks::BackendConfig;

use super::phases::{Fault, Onset, Shape, Trial};
use crate::FaultError;
use crate::scenario::{Design, Variant};
use crate::stage::Stage;

pub(crate) struct Pause(pub(crate) Variant);

#[async_trait]
impl Fault for Pause {
    fn variant(&self) -> Variant {
        self.0
    }

    fn shape(&self, shape: Shape, _stage: &Stage, _config: &BackendConfig) -> Shape {
        Shape {
            onset: Onset::AfterWrite,
            ..shape
        }
    }

    fn length(&self, granted: Duration, _shape: &Shape, _stage: &Stage) -> Duration {
        granted.mul_f64(self.0.pause_factor().unwrap_or(0.0))
    }

    async fn inject(&self, trial: &mut Trial<'_>) -> Result<(), FaultError> {
        trial.holder.pause()?;
        tokio::time::sleep(trial.length).await;
        trial.holder.resume()
    }
}
