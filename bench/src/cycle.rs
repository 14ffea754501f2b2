//! One benchmark cycle: acquire (in the backend's queue, or retrying with bounded backoff), hold,
//! renew, release, each timed.

use std::future::Future;
use std::time::{Duration, Instant};

use lockbench_locks::{Lease, LockBackend, LockError};

use crate::{BenchOptions, HandoffClock, WaitMode};

/// What one cycle measured.
#[derive(Clone, Debug, Default)]
pub struct Cycle {
    /// From the intended start to the grant, waiting included; `None` if not granted.
    pub acquire: Option<Duration>,
    /// When the lock was granted.
    pub acquired_at: Option<Instant>,
    /// Handoffs this grant ended (see [`crate::handoff`]): from each release this contender was
    /// waiting for to its grant.
    pub handoffs: Vec<Duration>,
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

/// Takes the lock by `deadline`, as `options.wait_mode` says: in the backend's own queue (one
/// request, which tries first itself), or by tries with the configured backoff between them.
/// Counts the tries in `out` (a queued acquisition is one).
async fn acquire(
    client: &dyn LockBackend,
    key: &str,
    options: &BenchOptions,
    deadline: Instant,
    out: &mut Cycle,
) -> Result<Option<Lease>, LockError> {
    if options.wait_mode == WaitMode::Native {
        out.attempts += 1;
        let wait = deadline.saturating_duration_since(Instant::now());
        return client.acquire(key, options.ttl, wait).await;
    }
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
        // tokio's timer rounds up to the millisecond, which the waiting contenders' figures
        // include, as a real polling client's would.
        let pause = backoff.mul_f64(0.5 + rand::random_range(0.0..0.5));
        tokio::time::sleep(pause.min(deadline - now)).await;
        backoff = (backoff * 2).min(options.poll.max);
    }
}

/// Polls `op` once, so that its first request is on its way, then runs `meanwhile` while the
/// answer travels, and finishes `op`. Returns `op`'s output and when it completed, which is
/// before `meanwhile` ran if `op` completed at once.
///
/// What a client does between an answer and its next request delays that request's answer by
/// more than its own length on a VM: the server's idle vCPU sinks deeper into its halt the longer
/// it waits (docs/PERFORMANCE.md). The harness's bookkeeping of one cycle therefore runs while
/// the next cycle's acquisition is in flight, not in between.
async fn alongside<T>(op: impl Future<Output = T>, meanwhile: impl FnOnce()) -> (T, Instant) {
    let mut op = std::pin::pin!(op);
    let mut meanwhile = Some(meanwhile);
    std::future::poll_fn(|cx| {
        let polled = op.as_mut().poll(cx).map(|out| (out, Instant::now()));
        if let Some(work) = meanwhile.take() {
            work();
        }
        polled
    })
    .await
}

/// Runs one cycle on `key`. `intended` is when the cycle should have started: now in a closed
/// loop, the arrival's scheduled time in an open loop. `handoff` is the clock of the key when
/// other contenders share it.
pub async fn cycle(
    client: &dyn LockBackend,
    key: &str,
    options: &BenchOptions,
    intended: Instant,
    handoff: Option<&HandoffClock>,
) -> Cycle {
    cycle_alongside(client, key, options, intended, handoff, || {}).await
}

/// [`cycle`], running `meanwhile` (the bookkeeping of the cycle before) once the acquisition's
/// request has gone out (see [`alongside`]).
pub async fn cycle_alongside(
    client: &dyn LockBackend,
    key: &str,
    options: &BenchOptions,
    intended: Instant,
    handoff: Option<&HandoffClock>,
    meanwhile: impl FnOnce(),
) -> Cycle {
    let mut out = Cycle::default();
    let deadline = intended + options.wait;
    let ask = handoff.map(HandoffClock::asking);
    let (acquired, granted) =
        alongside(acquire(client, key, options, deadline, &mut out), meanwhile).await;
    let lease = match acquired {
        Ok(Some(lease)) => lease,
        other => {
            if let (Some(clock), Some(ask)) = (handoff, ask) {
                clock.left(ask);
            }
            match other {
                Err(e) => out.error = Some(e.to_string()),
                _ => out.gave_up = true,
            }
            return out;
        }
    };
    if let (Some(clock), Some(ask)) = (handoff, ask) {
        out.handoffs = clock.granted(ask, granted);
    }
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
    if let Some(clock) = handoff {
        clock.releasing();
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

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    #[tokio::test]
    async fn an_operation_done_at_once_is_timed_before_the_bookkeeping() {
        let before = Instant::now();
        let (out, done) = alongside(async { 7 }, || {
            std::thread::sleep(Duration::from_millis(50));
        })
        .await;
        assert_eq!(out, 7);
        assert!(
            done - before < Duration::from_millis(50),
            "{:?}",
            done - before
        );
    }

    #[tokio::test]
    async fn the_bookkeeping_runs_once_while_the_operation_waits() {
        let runs = Cell::new(0);
        let (seen, _) = alongside(
            async {
                tokio::task::yield_now().await;
                tokio::task::yield_now().await;
                runs.get()
            },
            || runs.set(runs.get() + 1),
        )
        .await;
        assert_eq!(seen, 1, "the operation should see the bookkeeping done");
        assert_eq!(runs.get(), 1);
    }
}
