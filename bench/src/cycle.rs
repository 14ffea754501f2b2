//! One benchmark cycle: acquire (in the backend's queue, or retrying with bounded backoff), hold,
//! renew, release, each timed.

use std::time::{Duration, Instant};

use lockbench_locks::{Lease, LockBackend, LockError};

use crate::{BenchOptions, WaitMode};

/// What one cycle measured.
#[derive(Clone, Debug, Default)]
pub struct Cycle {
    /// From the intended start to the grant, waiting included; `None` if not granted.
    pub acquire: Option<Duration>,
    /// When the lock was granted.
    pub acquired_at: Option<Instant>,
    /// Try-acquire attempts made, and how many found the lock held.
    pub attempts: u64,
    /// Attempts that found the lock held.
    pub failed_attempts: u64,
    /// True when the wait ran out.
    pub gave_up: bool,
    /// Renew latency, if renewed.
    pub renew: Option<Duration>,
    /// Release latency, if released.
    pub release: Option<Duration>,
    /// When the release completed.
    pub released_at: Option<Instant>,
    /// The first error, if any operation failed.
    pub error: Option<String>,
}

/// Takes the lock by `deadline`, as `options.wait_mode` says: one try, then either the backend's
/// own queue or polling with the configured backoff. Counts the tries in `out`.
async fn acquire(
    client: &dyn LockBackend,
    key: &str,
    options: &BenchOptions,
    deadline: Instant,
    out: &mut Cycle,
) -> Result<Option<Lease>, LockError> {
    let mut backoff = options.poll.first;
    loop {
        out.attempts += 1;
        if let Some(lease) = client.try_acquire(key, options.ttl).await? {
            return Ok(Some(lease));
        }
        out.failed_attempts += 1;
        let now = Instant::now();
        if now >= deadline {
            return Ok(None);
        }
        if options.wait_mode == WaitMode::Native {
            // Queued on the server until granted or the wait's end: one more request.
            out.attempts += 1;
            return client.acquire(key, options.ttl, deadline - now).await;
        }
        // tokio's timer rounds up to the millisecond, which the waiting contenders' figures
        // include, as a real polling client's would.
        let pause = backoff.mul_f64(0.5 + rand::random_range(0.0..0.5));
        tokio::time::sleep(pause.min(deadline - now)).await;
        backoff = (backoff * 2).min(options.poll.max);
    }
}

/// Runs one cycle on `key`. `intended` is when the cycle should have started: now in a closed
/// loop, the arrival's scheduled time in an open loop.
pub async fn cycle(
    client: &dyn LockBackend,
    key: &str,
    options: &BenchOptions,
    intended: Instant,
) -> Cycle {
    let mut out = Cycle::default();
    let deadline = intended + options.wait;
    let lease = match acquire(client, key, options, deadline, &mut out).await {
        Ok(Some(lease)) => lease,
        Ok(None) => {
            out.gave_up = true;
            return out;
        }
        Err(e) => {
            out.error = Some(e.to_string());
            return out;
        }
    };
    let granted = Instant::now();
    out.acquire = Some(granted - intended);
    out.acquired_at = Some(granted);
    if !options.hold.is_zero() {
        tokio::time::sleep(options.hold).await;
    }
    if options.renew {
        let started = Instant::now();
        match client.renew(&lease, options.ttl).await {
            Ok(_) => out.renew = Some(started.elapsed()),
            Err(e) => out.error = Some(e.to_string()),
        }
    }
    let started = Instant::now();
    match client.release(&lease).await {
        Ok(_) => {
            out.release = Some(started.elapsed());
            out.released_at = Some(Instant::now());
        }
        Err(e) => {
            out.error.get_or_insert(e.to_string());
        }
    }
    out
}
