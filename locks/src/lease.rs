//! What an acquisition returns, and what a backend declares it can do.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use lockbench_core::{FencingSource, LockScope};
use serde::Serialize;

/// A held lock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    /// The key as stored on the server (namespace included).
    pub key: String,
    /// Unique to this acquisition: renew and release check it.
    pub token: String,
    /// Monotonic per key across holders, where the backend can give one.
    pub fencing: Option<u64>,
    /// How long the lock outlives a holder that stops renewing (the validity, for Redlock).
    pub ttl: Duration,
    /// When the acquisition completed, by this process's clock.
    pub acquired_at: Instant,
}

/// What a backend declares about itself.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Capabilities {
    /// Where fencing tokens come from.
    pub fencing: FencingSource,
    /// True when the server frees the lock by itself after the TTL.
    pub native_ttl: bool,
    /// True when the server keeps a queue of waiters by design (a blocking advisory lock, a
    /// ZooKeeper predecessor watch).
    pub wait_queue: bool,
    /// True when this implementation's [`crate::LockBackend::acquire`] waits in that queue; false
    /// when it polls `try_acquire`.
    pub native_wait: bool,
    /// What the lock is tied to.
    pub scope: LockScope,
}

/// A token no other acquisition in any process will produce: process id, a per-process counter and
/// random bits.
pub fn new_token() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    // Asked once: `getpid` is a system call on every call, on the acquisition's timed path.
    static PID: std::sync::LazyLock<u32> = std::sync::LazyLock::new(std::process::id);
    format!(
        "{:x}-{:x}-{:016x}",
        *PID,
        COUNTER.fetch_add(1, Ordering::Relaxed),
        rand::random::<u64>()
    )
}
