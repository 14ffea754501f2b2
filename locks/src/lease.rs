//! What an acquisition returns, and what a backend declares it can do.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

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

/// Where fencing tokens come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FencingSource {
    /// No safe fencing token (Redlock: independent counters on independent nodes can disagree).
    None,
    /// A counter incremented atomically with the acquisition.
    Counter,
    /// A database sequence read in the acquiring statement.
    Sequence,
    /// The revision at which the lock key was created (etcd).
    Revision,
    /// The sequence number of the ephemeral-sequential node (ZooKeeper).
    NodeSequence,
}

/// What the lock is tied to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LockScope {
    /// This process only.
    Process,
    /// A key with a TTL on one server.
    Key,
    /// A majority of independent servers.
    Majority,
    /// A database session (connection).
    Session,
    /// A database transaction.
    Transaction,
    /// A lease in a consensus store.
    ConsensusLease,
    /// A client session of a consensus store.
    ConsensusSession,
}

/// What a backend declares about itself.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Capabilities {
    /// Where fencing tokens come from.
    pub fencing: FencingSource,
    /// True when the server frees the lock by itself after the TTL.
    pub native_ttl: bool,
    /// True when waiters queue on the server rather than poll.
    pub wait_queue: bool,
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
