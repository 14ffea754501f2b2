//! `overrun/*`: no fault at all. The holder's job, alive and writing, lasts twice the lease it was
//! granted: the incident of a billing run slowed by an index rebuild. Whether the lock outlives
//! the job is the client's doing: a heartbeat, a library's own auto-renewal, a session its client
//! keeps alive; or nothing, and the lease runs out under the job.

use std::time::Duration;

use async_trait::async_trait;
use lockbench_locks::BackendConfig;

use super::phases::{Fault, Onset, Shape, Trial};
use crate::FaultError;
use crate::scenario::Variant;
use crate::stage::Stage;

pub(crate) struct Overrun(pub(crate) Variant);

#[async_trait]
impl Fault for Overrun {
    fn variant(&self) -> Variant {
        self.0
    }

    /// Both jobs last two of the leases the lab's warm-up was granted (ZooKeeper's negotiated
    /// session, etcd's minimum lease); the window is the holder's acquisition to its lease's end.
    fn shape(&self, shape: Shape, _stage: &Stage, _config: &BackendConfig) -> Shape {
        Shape {
            job: shape.lease * 2,
            onset: Onset::AtAcquisition,
            ..shape
        }
    }

    fn length(&self, granted: Duration, _shape: &Shape, _stage: &Stage) -> Duration {
        granted
    }

    /// Nothing to inject: the window lasts the holder's lease, while its job goes on.
    async fn inject(&self, trial: &mut Trial<'_>) -> Result<(), FaultError> {
        tokio::time::sleep(trial.length).await;
        Ok(())
    }
}
