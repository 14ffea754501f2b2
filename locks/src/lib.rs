//! Lock backends: one [`LockBackend`] trait, one module per backend, every one a real server
//! except [`backends::memory`], the in-process floor against which the others are read.
//!
//! A backend is built from a [`BackendConfig`] (URLs, namespace, timeouts) by [`connect`]. Its
//! operations take a logical key and return a [`Lease`]: the namespaced key, a token unique to
//! this acquisition, a fencing token where the backend can give one, the TTL and when it was
//! acquired. Renew and release are token-checked, so a stale lease can never extend or free the
//! next holder's lock. Every network operation has a timeout; every key, row, lease and znode lives
//! under the namespace and [`LockBackend::cleanup`] removes what a key left behind.

pub mod backends;
pub mod clients;
mod config;
mod error;
mod heartbeat;
mod lease;
mod requests;

pub use config::{
    BackendConfig, ConfigError, REDIS_FAIR, Redacted, parse_config, replay_database, substitute_env,
};
pub use error::{LockError, Operation};
pub use heartbeat::{Heartbeat, HeartbeatPolicy, HeartbeatState};
pub use lease::{Capabilities, Lease, new_token};
pub use lockbench_core::{BackendKind, FencingSource, LockScope, Service};
pub use requests::Requests;

use std::time::Duration;

use async_trait::async_trait;

/// The namespace as the start of a Postgres identifier: lower-case letters, digits and `_`, so
/// that a sequence, a schema or a table named after it needs no quoting.
pub fn sql_identifier(namespace: &str) -> String {
    namespace
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect()
}

/// A distributed lock, measured by lockbench.
#[async_trait]
pub trait LockBackend: Send + Sync {
    /// The backend's name as used on the command line (`redis`, `pg-session`, ...).
    fn name(&self) -> &'static str;

    /// What the backend can and cannot do.
    fn capabilities(&self) -> Capabilities;

    /// One attempt: the lease if the lock was free, `None` if someone holds it.
    async fn try_acquire(&self, key: &str, ttl: Duration) -> Result<Option<Lease>, LockError>;

    /// Attempts until the lock is granted or `wait` has passed (bounded; `None` then). The default
    /// polls [`LockBackend::try_acquire`] with jittered backoff from 1 ms up to 20 ms.
    async fn acquire(
        &self,
        key: &str,
        ttl: Duration,
        wait: Duration,
    ) -> Result<Option<Lease>, LockError> {
        let deadline = tokio::time::Instant::now() + wait;
        let mut backoff = Duration::from_millis(1);
        loop {
            if let Some(lease) = self.try_acquire(key, ttl).await? {
                return Ok(Some(lease));
            }
            let now = tokio::time::Instant::now();
            if now >= deadline {
                return Ok(None);
            }
            let jitter = backoff.mul_f64(0.5 + rand::random_range(0.0..0.5));
            tokio::time::sleep(jitter.min(deadline - now)).await;
            backoff = (backoff * 2).min(Duration::from_millis(20));
        }
    }

    /// Extends the lease to `ttl` from now if it is still held by this token; `false` if it is not.
    async fn renew(&self, lease: &Lease, ttl: Duration) -> Result<bool, LockError>;

    /// Frees the lock if it is still held by this token; `false` if it was not.
    async fn release(&self, lease: &Lease) -> Result<bool, LockError>;

    /// Deletes the lock of `lease` whoever holds it now, as a hand-written release that skips
    /// the token check does (`DEL key`): the fault lab's positive control for a release that
    /// arrives after its lease expired. `None` for a backend whose lock is not one key any client
    /// can delete (a queue of entries, an advisory lock owned by a session).
    async fn delete_unchecked(&self, _lease: &Lease) -> Option<Result<bool, LockError>> {
        None
    }

    /// Removes whatever `key` left on the server (fencing counters, parent znodes).
    async fn cleanup(&self, key: &str) -> Result<(), LockError>;

    /// Requests this client has sent to its server or servers so far (see [`Requests`]); `None`
    /// for a backend without a server.
    fn requests(&self) -> Option<u64> {
        None
    }

    /// Frees the leases this client still holds and closes its connections.
    async fn close(&self) -> Result<(), LockError> {
        Ok(())
    }

    /// The server's wall clock, read in one round trip, as microseconds since the Unix epoch;
    /// `None` for a backend whose server does not tell its time. Bench shards on several hosts
    /// compare their clocks through it.
    async fn server_clock_us(&self) -> Option<Result<u64, LockError>> {
        None
    }

    /// The server's version as the server reports it ("7.0.15"); for several independent servers
    /// (Redlock) each distinct version, comma-separated. `None` for a backend without a server.
    async fn server_version(&self) -> Option<Result<String, LockError>> {
        None
    }

    /// The client library this backend speaks through, with its version (see [`clients`]);
    /// `None` for a backend without a server.
    fn client_library(&self) -> Option<&'static str> {
        None
    }

    /// Postgres: whether a transaction-mode pooler was found between this client and the server
    /// (looked for once per URL at connect); `None` for a backend that is not Postgres.
    fn transaction_pooler(&self) -> Option<bool> {
        None
    }

    /// Removes what the namespace itself left on the server (sequences, folders). Call once at the
    /// end of a run, when no client uses the namespace any more.
    async fn cleanup_namespace(&self) -> Result<(), LockError> {
        Ok(())
    }

    /// Removes everything under the namespace, in use or not, where [`Self::cleanup_namespace`]
    /// leaves what other clients of a shared namespace may still use (a Redis fencing counter).
    /// Only for a namespace that was one run's alone, once that run is gone: `lockbench faults
    /// --clean` calls it for the run namespace of a lab killed with SIGKILL. By default
    /// [`Self::cleanup_namespace`], for backends whose leftovers are all its.
    async fn purge_namespace(&self) -> Result<(), LockError> {
        self.cleanup_namespace().await
    }
}

/// Connects the backend described by `config`: one line of error naming the server and how to
/// start it when it cannot be reached.
pub async fn connect(config: &BackendConfig) -> Result<Box<dyn LockBackend>, LockError> {
    use backends::*;
    install_tls_provider();
    Ok(match config.kind {
        BackendKind::Memory => Box::new(memory::MemoryLock::new(config)),
        BackendKind::Redis => Box::new(redis::RedisLock::connect(config).await?),
        BackendKind::Redlock => Box::new(redlock::Redlock::connect(config).await?),
        BackendKind::PgSession => {
            Box::new(postgres::PgLock::connect(config, postgres::Scope::Session).await?)
        }
        BackendKind::PgXact => {
            Box::new(postgres::PgLock::connect(config, postgres::Scope::Transaction).await?)
        }
        BackendKind::Etcd => Box::new(etcd::EtcdLock::connect(config).await?),
        BackendKind::Zookeeper => Box::new(zookeeper::ZkLock::connect(config).await?),
    })
}

/// TLS for staging servers (`rediss://`, `sslmode=require`, `https://` etcd endpoints) goes through
/// rustls with the ring provider and the system's root certificates (or `SSL_CERT_FILE`). rustls
/// needs its provider chosen once per process.
fn install_tls_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Another part of the process may have chosen one already; either way one is installed.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}
