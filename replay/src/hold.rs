//! Holding until an instant with tens of microseconds of precision.
//!
//! tokio's timer wakes on millisecond ticks, which is coarser than a compressed database call
//! (4 ms at time scale 0.05 is 200 us). A hold therefore sleeps on tokio for all but the last 2 ms,
//! on a blocking thread's `nanosleep` (a few tens of microseconds late) for all but the last 150 us,
//! and yields for the rest. What a hold achieved is always measured by the caller, never assumed.

use std::time::{Duration, Instant};

const TOKIO_MARGIN: Duration = Duration::from_millis(2);
const THREAD_MARGIN: Duration = Duration::from_micros(150);

/// Returns at `deadline` or just after it.
pub(crate) async fn hold_until(deadline: Instant) {
    // Bounded: every pass either returns or moves closer to the deadline.
    loop {
        let now = Instant::now();
        if now >= deadline {
            return;
        }
        let left = deadline - now;
        if left > TOKIO_MARGIN + Duration::from_millis(1) {
            tokio::time::sleep_until((deadline - TOKIO_MARGIN).into()).await;
        } else if left > THREAD_MARGIN * 2 {
            let nap = left - THREAD_MARGIN;
            // A failed blocking task (runtime shutting down) only makes the hold shorter.
            let _ = tokio::task::spawn_blocking(move || std::thread::sleep(nap)).await;
        } else {
            tokio::task::yield_now().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Never early; the lateness is measured by callers, so only the lower bound is asserted.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn never_returns_before_the_deadline() {
        for micros in [0u64, 50, 300, 1_500, 4_000] {
            let deadline = Instant::now() + Duration::from_micros(micros);
            hold_until(deadline).await;
            assert!(
                Instant::now() >= deadline,
                "{micros} us hold returned early"
            );
        }
    }
}
