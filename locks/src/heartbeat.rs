//! Heartbeat renewal: a short lease kept alive by renewing it on an interval, and a holder that
//! knows when to stop working because renewals stopped succeeding.

use std::sync::Arc;
use std::time::{Duration, Instant};

use lockbench_core::records::ttl::HeartbeatRecommendation;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::{Lease, LockBackend};

/// How a lease is kept alive (the `ttl` command derives these figures).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeartbeatPolicy {
    /// TTL each renewal sets.
    pub lease_ttl: Duration,
    /// Time between renewals (a third of the lease by default).
    pub renewal_interval: Duration,
    /// Stop working when no renewal has succeeded for this long (at most two thirds of the lease).
    pub give_up_after: Duration,
}

impl HeartbeatPolicy {
    /// The usual ratios: renew every lease/3, give up after 2/3 of the lease.
    pub fn for_lease(lease_ttl: Duration) -> Self {
        HeartbeatPolicy {
            lease_ttl,
            renewal_interval: lease_ttl / 3,
            give_up_after: lease_ttl * 2 / 3,
        }
    }

    /// Every figure multiplied by `factor` (a live replay's compressed time).
    pub fn scaled(self, factor: f64) -> Self {
        HeartbeatPolicy {
            lease_ttl: self.lease_ttl.mul_f64(factor),
            renewal_interval: self.renewal_interval.mul_f64(factor),
            give_up_after: self.give_up_after.mul_f64(factor),
        }
    }
}

/// The policy `ttl` recommends, as a running heartbeat follows it.
impl From<&HeartbeatRecommendation> for HeartbeatPolicy {
    fn from(r: &HeartbeatRecommendation) -> Self {
        HeartbeatPolicy {
            lease_ttl: r.lease_ttl,
            renewal_interval: r.renewal_interval,
            give_up_after: r.give_up_after,
        }
    }
}

/// What the holder may assume.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeartbeatState {
    /// Renewed at this instant (or acquired, before the first renewal).
    Held {
        /// Last successful renewal.
        renewed_at: Instant,
    },
    /// The backend said the lease is not ours any more: stop at once.
    Lost,
    /// No renewal succeeded within the give-up deadline: stop, the lock may be someone else's
    /// soon.
    GaveUp,
}

/// A running heartbeat for one lease. Dropping it stops the renewals.
pub struct Heartbeat {
    state: watch::Receiver<HeartbeatState>,
    policy: HeartbeatPolicy,
    task: JoinHandle<()>,
}

impl Heartbeat {
    /// Starts renewing `lease` on `backend` every `policy.renewal_interval`.
    pub fn spawn(backend: Arc<dyn LockBackend>, lease: Lease, policy: HeartbeatPolicy) -> Self {
        let (tx, rx) = watch::channel(HeartbeatState::Held {
            renewed_at: lease.acquired_at,
        });
        let task = tokio::spawn(async move {
            let mut renewed_at = lease.acquired_at;
            loop {
                tokio::time::sleep(policy.renewal_interval).await;
                // A renewal may not take longer than the time left before the give-up deadline.
                let left = policy.give_up_after.saturating_sub(renewed_at.elapsed());
                let outcome =
                    tokio::time::timeout(left, backend.renew(&lease, policy.lease_ttl)).await;
                match outcome {
                    Ok(Ok(true)) => {
                        renewed_at = Instant::now();
                        let _ = tx.send(HeartbeatState::Held { renewed_at });
                    }
                    Ok(Ok(false)) => {
                        let _ = tx.send(HeartbeatState::Lost);
                        return;
                    }
                    // A failed or slow renewal is retried at the next beat, until the deadline.
                    Ok(Err(_)) | Err(_) => {}
                }
                if renewed_at.elapsed() >= policy.give_up_after {
                    let _ = tx.send(HeartbeatState::GaveUp);
                    return;
                }
            }
        });
        Heartbeat {
            state: rx,
            policy,
            task,
        }
    }

    /// The latest state.
    pub fn state(&self) -> HeartbeatState {
        *self.state.borrow()
    }

    /// True while the holder may keep working: held, and renewed within the give-up deadline
    /// (checked against the clock, so a stalled heartbeat task cannot vouch for a stale lease).
    pub fn may_continue(&self) -> bool {
        match self.state() {
            HeartbeatState::Held { renewed_at } => renewed_at.elapsed() < self.policy.give_up_after,
            HeartbeatState::Lost | HeartbeatState::GaveUp => false,
        }
    }

    /// Stops renewing (before a release).
    pub fn stop(self) {
        self.task.abort();
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        self.task.abort();
    }
}
