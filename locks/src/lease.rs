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

impl FencingSource {
    /// How a report names it.
    pub fn describe(self) -> &'static str {
        match self {
            FencingSource::None => "none",
            FencingSource::Counter => "counter",
            FencingSource::Sequence => "sequence",
            FencingSource::Revision => "create revision",
            FencingSource::NodeSequence => "node sequence",
        }
    }
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

impl LockScope {
    /// How a report names it.
    pub fn describe(self) -> &'static str {
        match self {
            LockScope::Process => "process",
            LockScope::Key => "key",
            LockScope::Majority => "majority",
            LockScope::Session => "session",
            LockScope::Transaction => "transaction",
            LockScope::ConsensusLease => "consensus-lease",
            LockScope::ConsensusSession => "consensus-session",
        }
    }

    /// The failures a lock tied to this cannot prevent, from how it locks (docs/BACKENDS.md has
    /// the reasoning; the fault lab measures them).
    pub fn cannot_prevent(self) -> &'static str {
        match self {
            LockScope::Process => {
                "anything across processes: it is the zero-network baseline, not a lock to deploy"
            }
            LockScope::Key => {
                "a double holder after a failover or restart that lost the key (asynchronous replication, AOF/RDB gaps); a holder outliving its TTL"
            }
            LockScope::Majority => {
                "clock drift or jumps between nodes, a node restarting without the key, a paused holder past its validity; it has no safe fencing token"
            }
            LockScope::Session => {
                "a session lock leaking through a pooled connection that is not reset; a holder that lost its connection still running"
            }
            LockScope::Transaction => {
                "work done outside the transaction (API calls) after the lock is gone; long transactions block vacuum"
            }
            LockScope::ConsensusLease => {
                "a paused holder past its lease TTL (use the fencing revision); unavailability without quorum"
            }
            LockScope::ConsensusSession => {
                "a paused holder past its session timeout (use the fencing sequence); unavailability without quorum"
            }
        }
    }
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
