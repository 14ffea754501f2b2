//! Handoff: how long a release leaves the contenders that were waiting for it without the lock.
//!
//! Each release that leaves somebody asking for the same key starts a clock. The clock stops at
//! the first grant to a contender that was already asking when the release was sent; a grant to
//! a contender that asked later (the releaser taking the lock straight back, a newcomer barging
//! in) does not stop it. In a queue (Postgres, ZooKeeper, etcd) that is one hop from the release
//! to the head of the queue. With polling, or Redis's race after a release message, it is also
//! every re-grant to somebody who had not waited, until a waiter gets its turn.
//!
//! The release's instant is taken before its request is sent, so a grant the release caused is
//! always later. Clocks nobody left can stop (nobody asks any more) are dropped.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The handoff clocks of one key, shared by every contender on it. A cycle in which nobody else
/// asks (the in-process baseline, an uncontended key) touches only two counters, never the lock.
#[derive(Debug, Default)]
pub struct HandoffClock {
    /// Contenders asking now.
    asking: AtomicUsize,
    /// How many releases are in `open`.
    pending: AtomicUsize,
    /// Releases not yet followed by a grant to one of their waiters, oldest first.
    open: Mutex<VecDeque<Instant>>,
}

/// One contender's ask, from [`HandoffClock::asking`].
#[derive(Debug)]
pub struct Ask {
    since: Instant,
}

impl HandoffClock {
    /// A contender begins to ask for the lock.
    pub fn asking(&self) -> Ask {
        let ask = Ask {
            since: Instant::now(),
        };
        self.asking.fetch_add(1, Ordering::SeqCst);
        ask
    }

    /// The contender of `ask` was granted at `granted`: the handoffs of every open release it
    /// was waiting for, each from its release.
    pub fn granted(&self, ask: Ask, granted: Instant) -> Vec<Duration> {
        let others = self.asking.fetch_sub(1, Ordering::SeqCst) - 1;
        if self.pending.load(Ordering::SeqCst) == 0 {
            return Vec::new();
        }
        let mut open = self.lock();
        // Releases after our ask are the newest ones, at the back.
        let mut handoffs = Vec::new();
        while let Some(&released) = open.back() {
            if released <= ask.since {
                break;
            }
            open.pop_back();
            handoffs.push(granted.saturating_duration_since(released));
        }
        if others == 0 {
            // Nobody left who was waiting for the older ones.
            open.clear();
        }
        self.pending.store(open.len(), Ordering::SeqCst);
        handoffs
    }

    /// The contender of `ask` stopped asking without the lock (its wait ran out, an error).
    pub fn left(&self, _ask: Ask) {
        if self.asking.fetch_sub(1, Ordering::SeqCst) == 1
            && self.pending.load(Ordering::SeqCst) > 0
        {
            let mut open = self.lock();
            open.clear();
            self.pending.store(0, Ordering::SeqCst);
        }
    }

    /// A holder is about to send its release: a clock starts if anybody is asking.
    pub fn releasing(&self) {
        if self.asking.load(Ordering::SeqCst) > 0 {
            let mut open = self.lock();
            open.push_back(Instant::now());
            self.pending.store(open.len(), Ordering::SeqCst);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Instant>> {
        self.open.lock().expect("handoff clock poisoned")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queue_hands_over_in_one_hop() {
        let clock = HandoffClock::default();
        let waiter = clock.asking();
        clock.releasing();
        let handoffs = clock.granted(waiter, Instant::now());
        assert_eq!(handoffs.len(), 1);
    }

    #[test]
    fn a_barging_releaser_does_not_stop_the_clock() {
        let clock = HandoffClock::default();
        let waiter = clock.asking();
        clock.releasing(); // first release: the waiter is asking
        let first = Instant::now();
        let releaser = clock.asking(); // the releaser asks again, after the release
        let taken_back = clock.granted(releaser, Instant::now());
        assert!(
            taken_back.is_empty(),
            "the releaser was not waiting for its own release"
        );
        clock.releasing(); // second release, the waiter still asking
        std::thread::sleep(Duration::from_millis(2));
        let granted = Instant::now();
        let handoffs = clock.granted(waiter, granted);
        assert_eq!(
            handoffs.len(),
            2,
            "both releases reached the waiter at last"
        );
        assert!(handoffs.iter().any(|&d| d >= granted - first));
    }

    #[test]
    fn nobody_asking_starts_no_clock() {
        let clock = HandoffClock::default();
        clock.releasing();
        let late = clock.asking();
        assert!(clock.granted(late, Instant::now()).is_empty());
    }

    #[test]
    fn a_release_whose_waiters_gave_up_is_forgotten() {
        let clock = HandoffClock::default();
        let waiter = clock.asking();
        clock.releasing();
        clock.left(waiter);
        assert!(clock.lock().is_empty());
        let next = clock.asking();
        clock.releasing();
        assert_eq!(clock.granted(next, Instant::now()).len(), 1);
    }
}
