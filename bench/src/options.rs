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
    /// This process's share of a run split over several (the whole run by default).
    pub stripe: Stripe,
    /// When the measured part starts (shards start together); `None`: after the warm-up.
    pub start: Option<std::time::Instant>,
}

/// One shard's share of a benchmark run over several processes: closed loop, the contenders
/// whose run-wide ids are `index`, `index + count`, ... (on the same keys as the others'); open
/// loop, the arrivals `k` of the run's one schedule with `k mod count = index`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stripe {
    /// This shard, from 0.
    pub index: u64,
    /// Shards in the run, at least 1.
    pub count: u64,
    /// Contenders (closed loop) or clients (open loop) of the whole run at this level.
    pub contenders: usize,
}

impl Stripe {
    /// How many of the run's `contenders` are this shard's.
    pub fn local(index: u64, count: u64, contenders: usize) -> usize {
        let (n, i) = (count.max(1) as usize, index as usize);
        contenders / n + usize::from(i < contenders % n)
    }

    /// The run-wide id of this shard's `k`-th contender.
    pub fn global(&self, k: usize) -> u64 {
        self.index + k as u64 * self.count.max(1)
    }

    /// Whether arrival `k` of the run's schedule is this shard's.
    pub fn owns(&self, k: u64) -> bool {
        k % self.count.max(1) == self.index
    }
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
            stripe: Stripe {
                index: 0,
                count: 1,
                contenders: 0,
            },
            start: None,
            max_in_flight: 1024,
        }
    }
}
