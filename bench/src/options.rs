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
            renew: true,
            max_in_flight: 1024,
        }
    }
}
