//! `release/*`: the holder's release arriving after its lease expired. Its job ends within the
//! TTL, then its process stops before the release is sent (a pause between the job and its
//! `finally`), for 1.5 TTL: the lock expires, a contender takes it for a long job, and the
//! holder's release arrives while the contender works. A next run then asks for the lock: it is
//! granted beside the contender only if the release deleted the contender's lock.

use std::time::Duration;

use async_trait::async_trait;
use lockbench_locks::BackendConfig;

use super::phases::{Fault, Onset, Shape, Trial};
use crate::FaultError;
use crate::scenario::{Design, Variant};
use crate::stage::Stage;
use crate::trial::TrialOutcome;

pub(crate) struct Release(pub(crate) Variant);

#[async_trait]
impl Fault for Release {
    fn variant(&self) -> Variant {
        self.0
    }

    /// The contender is granted about one lease after the holder's, and the holder's release
    /// arrives half a lease later: the contender's job lasts two leases and one of the holder's
    /// jobs from its grant, so that it is still working then, and it asks for one lease more,
    /// so that its own lease outlives its job.
    fn shape(&self, shape: Shape, _stage: &Stage, _config: &BackendConfig) -> Shape {
        let lease = shape.lease;
        let every = shape.job / shape.writes;
        let contender_job = lease * 2 + shape.job;
        Shape {
            onset: Onset::AtRelease,
            contender_writes: contender_job.as_millis().div_ceil(every.as_millis().max(1)) as u32,
            contender_ttl: contender_job + lease,
            stop_before_release: true,
            plain_delete: self.0 == (Variant::ReleaseAfterExpiry { checked: false }),
            next_run: true,
            ..shape
        }
    }

    fn length(&self, granted: Duration, _shape: &Shape, _stage: &Stage) -> Duration {
        granted.mul_f64(self.0.pause_factor().unwrap_or(0.0))
    }

    /// The holder stopped itself as it said `releasing`: the lab continues it a TTL later.
    async fn inject(&self, trial: &mut Trial<'_>) -> Result<(), FaultError> {
        tokio::time::sleep(trial.length).await;
        trial.holder.resume()
    }

    /// The contender must have held the lock when the release arrived (the holder continued):
    /// a waiter that sleeps until a release signal (python-redis-lock's) leaves nothing to
    /// delete, and the next run is granted the free lock.
    fn premise(&self, outcome: &TrialOutcome, _config: &BackendConfig) -> Result<(), FaultError> {
        let released_s = (outcome.window.end_ns - outcome.figures.zero_ns) as f64 / 1e9;
        match outcome.figures.contender_grant_s {
            Some(granted) if granted < released_s => Ok(()),
            granted => Err(FaultError::Unmet(format!(
                "the contender was not granted the expired lock before the holder's release \
                 arrived {released_s:.2} s after the holder's grant ({}), so the release had no \
                 other holder's lock to delete",
                match granted {
                    Some(s) => format!("it was granted at {s:.2} s"),
                    None => "it was never granted".to_string(),
                }
            ))),
        }
    }
}
