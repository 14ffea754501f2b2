//! Errors of lock operations, each naming the backend and what to do.

use std::time::Duration;

/// Why a lock operation failed (as opposed to the lock being held by someone else, which is a
/// normal `None` or `false`).
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// The server could not be reached.
    #[error(
        "{backend}: cannot reach {url}: {reason}; start the local servers with scripts/services.sh up, or fix the URL in the config"
    )]
    Unreachable {
        /// Backend name.
        backend: &'static str,
        /// Where it was looked for (credentials removed).
        url: String,
        /// Why, in words.
        reason: String,
    },
    /// The backend cannot be trusted on this URL (a session lock through a transaction-mode
    /// pooler): bad input, exit 2.
    #[error("{backend}: refused on {url}: {reason}")]
    Refused {
        /// Backend name.
        backend: &'static str,
        /// The URL (credentials removed).
        url: String,
        /// What was found, and what works instead.
        reason: String,
    },
    /// An operation did not finish in time.
    #[error("{backend}: {operation} timed out after {after:?}")]
    Timeout {
        /// Backend name.
        backend: &'static str,
        /// What was being done.
        operation: &'static str,
        /// The timeout.
        after: Duration,
    },
    /// The server answered with an error.
    #[error("{backend}: {operation}: {message}")]
    Server {
        /// Backend name.
        backend: &'static str,
        /// What was being done.
        operation: &'static str,
        /// The server's error.
        message: String,
    },
}

impl LockError {
    /// Wraps a server error.
    pub fn server(
        backend: &'static str,
        operation: &'static str,
        e: impl std::fmt::Display,
    ) -> Self {
        LockError::Server {
            backend,
            operation,
            message: e.to_string(),
        }
    }
}

/// Runs `future` under `timeout`, turning expiry into [`LockError::Timeout`].
pub(crate) async fn timed<T>(
    backend: &'static str,
    operation: &'static str,
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
