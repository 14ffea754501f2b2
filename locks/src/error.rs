//! Errors of lock operations, each naming the backend and what to do.

use std::time::Duration;

use lockbench_core::BackendKind;

/// What a lock client was doing when it failed, as its error says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// Taking the lock.
    Acquire,
    /// Giving it back.
    Release,
    /// Extending its lease.
    Renew,
    /// Removing what a run left (keys, nodes, rows).
    Cleanup,
    /// Subscribing to a lock's release (a native wait).
    Subscribe,
    /// Ending that subscription.
    Unsubscribe,
    /// Watching a key or node.
    Watch,
    /// Leaving a wait queue.
    Withdraw,
    /// Reading the server's clock (Redis `TIME`).
    Time,
    /// Reading the server's `INFO`.
    Info,
    /// Reading the server's version.
    Version,
    /// Comparing clocks.
    Clock,
    /// ZooKeeper's `srvr` four-letter word.
    Srvr,
    /// A cluster member's status.
    Status,
    /// Closing the client.
    Close,
    /// Taking a connection from the pool.
    TakeConnection,
    /// Asking whether a pooler stands in front of the server.
    LookForPooler,
    /// Creating the namespace's fencing sequence.
    CreateFencingSequence,
    /// Dropping it.
    DropFencingSequence,
    /// Keeping a session alive while waiting.
    KeepAliveWhileWaiting,
    /// Talking to a client library's adapter.
    Adapter,
    /// Granting a lease (etcd).
    LeaseGrant,
    /// Creating the namespace's folder node (ZooKeeper).
    CreateFolder,
    /// Checking whether the lock is still held.
    Check,
    /// Leaving a wait that ran out of time.
    GiveUpWaiting,
}

impl Operation {
    /// As an error says it.
    pub fn word(self) -> &'static str {
        match self {
            Operation::Acquire => "acquire",
            Operation::Release => "release",
            Operation::Renew => "renew",
            Operation::Cleanup => "cleanup",
            Operation::Subscribe => "subscribe",
            Operation::Unsubscribe => "unsubscribe",
            Operation::Watch => "watch",
            Operation::Withdraw => "withdraw",
            Operation::Time => "time",
            Operation::Info => "info",
            Operation::Version => "version",
            Operation::Clock => "clock",
            Operation::Srvr => "srvr",
            Operation::Status => "status",
            Operation::Close => "close",
            Operation::TakeConnection => "take a connection",
            Operation::LookForPooler => "look for a pooler",
            Operation::CreateFencingSequence => "create fencing sequence",
            Operation::DropFencingSequence => "drop fencing sequence",
            Operation::KeepAliveWhileWaiting => "keep alive while waiting",
            Operation::Adapter => "adapter",
            Operation::LeaseGrant => "lease grant",
            Operation::CreateFolder => "create folder",
            Operation::Check => "check",
            Operation::GiveUpWaiting => "give up waiting",
        }
    }
}

impl std::fmt::Display for Operation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.word())
    }
}

/// Why a lock operation failed (as opposed to the lock being held by someone else, which is a
/// normal `None` or `false`).
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// The server could not be reached.
    #[error(
        "{backend}: cannot reach {url}: {reason}; start the local servers with scripts/services.sh up, or fix the URL in the config"
    )]
    Unreachable {
        /// The backend.
        backend: BackendKind,
        /// Where it was looked for (credentials removed).
        url: String,
        /// Why, in words.
        reason: String,
    },
    /// The backend cannot be trusted on this URL (a session lock through a transaction-mode
    /// pooler): bad input, exit 2.
    #[error("{backend}: refused on {url}: {reason}")]
    Refused {
        /// The backend.
        backend: BackendKind,
        /// The URL (credentials removed).
        url: String,
        /// What was found, and what works instead.
        reason: String,
    },
    /// An operation did not finish in time.
    #[error("{backend}: {operation} timed out after {after:?}")]
    Timeout {
        /// The backend.
        backend: BackendKind,
        /// What was being done.
        operation: Operation,
        /// The timeout.
        after: Duration,
    },
    /// The server answered with an error.
    #[error("{backend}: {operation}: {message}")]
    Server {
        /// The backend.
        backend: BackendKind,
        /// What was being done.
        operation: Operation,
        /// The server's error.
        message: String,
    },
}

impl LockError {
    /// Wraps a server error.
    pub fn server(backend: BackendKind, operation: Operation, e: impl std::fmt::Display) -> Self {
        LockError::Server {
            backend,
            operation,
            message: e.to_string(),
        }
    }
}

/// Runs `future` under `timeout`, turning expiry into [`LockError::Timeout`].
pub(crate) async fn timed<T>(
    backend: BackendKind,
    operation: Operation,
    timeout: Duration,
    future: impl std::future::Future<Output = Result<T, LockError>>,
) -> Result<T, LockError> {
    tokio::time::timeout(timeout, future)
        .await
        .unwrap_or(Err(LockError::Timeout {
            backend,
            operation,
            after: timeout,
        }))
}
