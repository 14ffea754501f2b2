//! `latency/*`: a slow link between the holder and its lock server during its acquisition. The
//! holder reaches the server through forwarders of the lab's that pass its requests at once and
//! hold the server's replies: the reply to its first acquisition comes back 1.5 TTLs after the
//! server set the key, which has expired by then. Does the client return an expired lock, and
//! does the job start on it?

use lockbench_core::records::faults::JobEnd;
use std::time::Duration;

use async_trait::async_trait;
use lockbench_locks::{BackendConfig, BackendKind};

use super::phases::{Fault, Onset, Shape};
use crate::FaultError;
use crate::process::WorkerProcess;
use crate::scenario::Variant;
use crate::stage::{Stage, StageSetup};
use crate::trial::TrialOutcome;

pub(crate) struct Latency(pub(crate) Variant);

/// How long the hold lasts once the holder is told to go: long enough for its first request's
/// reply to be read under it, far shorter than any retry.
const HOLD_FOR: Duration = Duration::from_millis(100);

#[async_trait]
impl Fault for Latency {
    fn variant(&self) -> Variant {
        self.0
    }

    async fn prepare(&self, setup: &mut StageSetup<'_>) -> Result<(), FaultError> {
        setup.slow_holder_link().await
    }

    /// The holder waits to be told to go, so that the hold is in place for its acquisition.
    fn shape(&self, shape: Shape, _stage: &Stage, _config: &BackendConfig) -> Shape {
        Shape {
            slowed: true,
            onset: Onset::AtAcquisition,
            ..shape
        }
    }

    /// `wait` is twice the TTL: the reply is held for 1.5 TTL, then the hold is lifted for
    /// whatever the holder sends next.
    async fn acquire(
        &self,
        stage: &Stage,
        holder: &mut WorkerProcess,
        wait: Duration,
    ) -> Result<(), FaultError> {
        let delay = stage
            .reply_delay
            .as_ref()
            .ok_or_else(|| FaultError::Server("a slow link without its forwarders".to_string()))?;
        delay.set(wait * 3 / 4);
        holder.go(wait * 2).await?;
        tokio::time::sleep(HOLD_FOR).await;
        delay.set(Duration::ZERO);
        Ok(())
    }

    /// The fault is over once the holder is granted.
    async fn inject(&self, _trial: &mut super::phases::Trial<'_>) -> Result<(), FaultError> {
        Ok(())
    }

    /// A trusting holder on one Redis key that still held its key at its release was granted a
    /// fresh key: the reply held was another request's (a connection's handshake, a library
    /// that asks something first),
    /// and no expired grant was tested. (On Redlock a fresh key is the measurement: the client
    /// refused the expired acquisition and acquired again.)
    fn premise(&self, outcome: &TrialOutcome, config: &BackendConfig) -> Result<(), FaultError> {
        let trusted_key =
            self.0 == (Variant::SlowReply { checked: false }) && config.kind == BackendKind::Redis;
        if trusted_key
            && outcome.figures.holder_outcome == JobEnd::Released
            && outcome.figures.overlap_s == 0.0
        {
            return Err(FaultError::Unmet(
                "the holder still held its key at its release, so the reply the lab held was \
                 not its acquisition's (the client opened its connection, or asked something \
                 else, first): no expired grant was tested"
                    .to_string(),
            ));
        }
        Ok(())
    }
}
