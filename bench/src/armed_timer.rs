//! A timer kept armed for the length of a measurement, so that arming an operation's timeout
//! does not wake the runtime.
//!
//! tokio's timer wakes its I/O driver (a write to an eventfd) whenever a timer is registered
//! that is due sooner than every timer already armed, which, when nothing else is armed, is every
//! operation's timeout. The wake-up lands inside the measured operation: one `write` and one
//! `epoll_wait` that returns at once, on top of the request's own send, wait and receive
//! (counted with `strace -c` on `lockbench bench`: one eventfd write per acquisition before,
//! none after). With a timer armed that is always due sooner than any operation's timeout,
//! registering a timeout wakes nothing.

use std::time::Duration;

use tokio::task::JoinHandle;

/// Keeps a timer armed on the current runtime until dropped.
pub struct ArmedTimer(JoinHandle<()>);

impl ArmedTimer {
    /// Arms a timer that fires every `shortest_timeout / 2`, clamped to 1 ms - 1 s, so at any
    /// moment it is due before the timeout of an operation started then. With a timeout under
    /// 1 ms that no longer holds, and arming such a timeout costs the wake-up this avoids; it is
    /// never wrong, only slower.
    pub fn spawn(shortest_timeout: Duration) -> Self {
        let period = (shortest_timeout / 2).clamp(Duration::from_millis(1), Duration::from_secs(1));
        ArmedTimer(tokio::spawn(async move {
            loop {
                tokio::time::sleep(period).await;
            }
        }))
    }
}

impl Drop for ArmedTimer {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_timer_task_ends_when_dropped() {
        let metrics = tokio::runtime::Handle::current().metrics();
        let armed = ArmedTimer::spawn(Duration::from_secs(5));
        assert_eq!(metrics.num_alive_tasks(), 1);
        drop(armed);
        for _ in 0..100 {
            if metrics.num_alive_tasks() == 0 {
                return;
            }
            tokio::task::yield_now().await;
        }
        panic!("the timer task is still alive after its ArmedTimer was dropped");
    }
}
