//! What one benchmark run does.

use std::time::Duration;

/// How load is offered.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LoadMode {
    /// Each contender starts its next cycle when the previous one ends.
    Closed,
    /// Cycles start at a fixed rate whatever the backend does; latency counts from the intended
    /// start.
    Open {
        /// Arrivals per second.
        rate_per_s: f64,
    },
}

/// Which keys contenders use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyMode {
    /// Everyone fights for one key.
    One,
    /// Each contender (or open-loop arrival slot) has its own key: latency without contention.
    Many,
}

/// How a contender waits for a held lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitMode {
    /// In the backend's own queue where it has one (`Capabilities::native_wait`), polling
    /// otherwise.
    Native,
    /// Retrying `try_acquire` with jittered exponential backoff.
    Poll,
}

/// The backoff of a polling contender: the first pause, doubled after each refused try up to
/// `max`, each pause jittered to 50-100 % so that contenders do not retry in lockstep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PollPolicy {
    /// First pause after a refused try.
    pub first: Duration,
    /// Longest pause.
    pub max: Duration,
}

impl Default for PollPolicy {
    fn default() -> Self {
        PollPolicy {
            first: Duration::from_micros(500),
            max: Duration::from_millis(20),
        }
    }
}

/// Options of one run of one backend at one contention level.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    /// Closed or open loop.
    pub mode: LoadMode,
    /// One key or many.
    pub keys: KeyMode,
    /// Stop after this many measured acquisitions (all contenders together).
    pub ops: Option<u64>,
    /// Stop after this long (measured part; warm-up comes before).
    pub duration: Duration,
    /// Excluded from the figures.
    pub warmup: Duration,
    /// Time between acquire and release.
    pub hold: Duration,
    /// TTL of every lease.
    pub ttl: Duration,
    /// Give up one acquisition after this long.
    pub wait: Duration,
    /// How a contender waits for a held lock.
    pub wait_mode: WaitMode,
    /// The backoff when polling.
    pub poll: PollPolicy,
    /// Renew once per cycle while holding.
    pub renew: bool,
    /// Open loop: most cycles in flight; arrivals beyond it count as errors.
    pub max_in_flight: usize,
}

impl Default for BenchOptions {
    fn default() -> Self {
        BenchOptions {
            mode: LoadMode::Closed,
            keys: KeyMode::One,
            ops: None,
            duration: Duration::from_secs(5),
            warmup: Duration::from_secs(1),
            hold: Duration::ZERO,
            ttl: Duration::from_secs(30),
            wait: Duration::from_secs(5),
            wait_mode: WaitMode::Native,
            poll: PollPolicy::default(),
            renew: true,
            max_in_flight: 1024,
        }
    }
}
