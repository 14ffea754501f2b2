//! Redlock over N independent Redis servers (default five): a lock is granted when a majority
//! accepted `SET NX PX` and the validity left after the acquisition (TTL - elapsed - drift) is
//! positive; otherwise every node is released.
//!
//! Written on the `redis` crate rather than `rslock`: the benchmark needs each node's latency and
//! outcome per acquisition, which `rslock` does not expose, and `rslock` retries internally where
//! the harness must control retries itself. Redlock declares no fencing token: independent
//! counters on independent nodes can disagree after a node restart, which is the algorithm's
//! documented weakness.

use std::time::{Duration, Instant};

use async_trait::async_trait;

use super::redis::{RELEASE, RENEW, connect_node};
use super::redis_connection::Lua;
use super::redis_connection::RedisConnection;
use crate::error::{Operation, timed};
use crate::lease::joined;
use crate::{
    BackendConfig, BackendKind, Capabilities, Lease, LockBackend, LockError, Requests, new_token,
};

/// Redlock across independent Redis nodes.
pub struct Redlock {
    nodes: Vec<RedisConnection>,
    /// Requests to every node, one count.
    requests: Requests,
    namespace: String,
    /// Per-node timeout: small next to the TTL, so that a dead node costs little validity.
    node_timeout: Duration,
    renew: Lua,
    release: Lua,
}

/// Clock drift allowance: 1 % of the TTL plus 2 ms, as the Redlock description suggests.
pub fn drift(ttl: Duration) -> Duration {
    ttl / 100 + Duration::from_millis(2)
}

impl Redlock {
    /// Connects every configured node; all must answer at start (a node lost later only costs
    /// its vote).
    pub async fn connect(config: &BackendConfig) -> Result<Self, LockError> {
        if config.urls.len() < 3 {
            return Err(LockError::Unreachable {
                backend: BackendKind::Redlock,
                url: config.display_url(),
                reason: format!(
                    "Redlock needs at least 3 independent nodes, {} configured",
                    config.urls.len()
                ),
            });
        }
        let requests = Requests::default();
        let mut nodes = Vec::with_capacity(config.urls.len());
        for url in &config.urls {
            nodes.push(
                connect_node(BackendKind::Redlock, url, config)
                    .await?
                    .counted(requests.clone()),
            );
        }
        Ok(Redlock {
            nodes,
            requests,
            namespace: config.namespace.clone(),
            node_timeout: config.operation_timeout.min(Duration::from_millis(250)),
            renew: Lua::new(RENEW),
            release: Lua::new(RELEASE),
        })
    }

    fn quorum(&self) -> usize {
        self.nodes.len() / 2 + 1
    }

    fn key(&self, key: &str) -> String {
        joined(&[&self.namespace, ":redlock:", key])
    }

    /// Runs one script (or SET) on every node in parallel; counts the nodes that said yes.
    async fn on_all<F, Fut>(&self, operation: Operation, f: F) -> usize
    where
        F: Fn(RedisConnection) -> Fut,
        Fut: std::future::Future<Output = Result<bool, LockError>>,
    {
        let calls = self.nodes.iter().map(|node| {
            timed(
                BackendKind::Redlock,
                operation,
                self.node_timeout,
                f(node.clone()),
            )
        });
        let results = futures::future::join_all(calls).await;
        results
            .into_iter()
            .filter(|r| matches!(r, Ok(true)))
            .count()
    }

    async fn release_all(&self, key: &str, token: &str) -> usize {
        self.on_all(Operation::Release, |conn| {
            let script = &self.release;
            async move {
                let mut call = script.call(1, 2, key.len() + token.len());
                call.arg(key).arg(token);
                script
                    .invoke::<i64>(&conn, &call)
                    .await
                    .map(|n| n == 1)
                    .map_err(|e| LockError::server(BackendKind::Redlock, Operation::Release, e))
            }
        })
        .await
    }
}

#[async_trait]
impl LockBackend for Redlock {
    fn name(&self) -> &'static str {
        "redlock"
    }

    async fn server_version(&self) -> Option<Result<String, LockError>> {
        let mut versions: Vec<String> = Vec::new();
        for node in &self.nodes {
            match super::redis::server_version(node, BackendKind::Redlock, self.node_timeout).await
            {
                Ok(v) if !versions.contains(&v) => versions.push(v),
                Ok(_) => {}
                Err(e) => return Some(Err(e)),
            }
        }
        Some(Ok(versions.join(", ")))
    }

    fn client_library(&self) -> Option<&'static str> {
        Some(crate::clients::REDIS)
    }

    fn requests(&self) -> Option<u64> {
        Some(self.requests.count())
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            fencing: BackendKind::Redlock.fencing(),
            native_ttl: true,
            wait_queue: false,
            native_wait: false,
            scope: BackendKind::Redlock.scope(),
        }
    }

    async fn try_acquire(&self, key: &str, ttl: Duration) -> Result<Option<Lease>, LockError> {
        let lock_key = self.key(key);
        let token = new_token();
        let started = Instant::now();
        let ttl_ms = ttl.as_millis() as u64;
        let granted = self
            .on_all(Operation::Acquire, |conn| {
                let (k, t) = (&lock_key, &token);
                async move {
                    conn.query::<Option<String>>(
                        redis::cmd("SET")
                            .arg(k)
                            .arg(t)
                            .arg("NX")
                            .arg("PX")
                            .arg(ttl_ms),
                    )
                    .await
                    .map(|ok| ok.is_some())
                    .map_err(|e| LockError::server(BackendKind::Redlock, Operation::Acquire, e))
                }
            })
            .await;
        let elapsed = started.elapsed();
        let validity = ttl.checked_sub(elapsed + drift(ttl));
        match validity {
            Some(validity) if granted >= self.quorum() && !validity.is_zero() => Ok(Some(Lease {
                key: lock_key,
                token,
                fencing: None,
                ttl: validity,
                acquired_at: Instant::now(),
            })),
            _ => {
                // A minority (or a late majority) must not linger and block the next attempt.
                self.release_all(&lock_key, &token).await;
                Ok(None)
            }
        }
    }

    async fn renew(&self, lease: &Lease, ttl: Duration) -> Result<bool, LockError> {
        let ttl_ms = ttl.as_millis() as u64;
        let renewed = self
            .on_all(Operation::Renew, |conn| {
                let script = &self.renew;
                async move {
                    let mut call = script.call(1, 3, lease.key.len() + lease.token.len() + 20);
                    call.arg(&lease.key).arg(&lease.token).arg(ttl_ms);
                    script
                        .invoke::<i64>(&conn, &call)
                        .await
                        .map(|n| n == 1)
                        .map_err(|e| LockError::server(BackendKind::Redlock, Operation::Renew, e))
                }
            })
            .await;
        Ok(renewed >= self.quorum())
    }

    async fn release(&self, lease: &Lease) -> Result<bool, LockError> {
        Ok(self.release_all(&lease.key, &lease.token).await >= self.quorum())
    }

    /// `DEL` of the lease's key on every node, whoever's token each holds: deleted where a
    /// majority deleted it.
    async fn delete_unchecked(&self, lease: &Lease) -> Option<Result<bool, LockError>> {
        let deleted = self
            .on_all(Operation::Release, |conn| {
                let k = &lease.key;
                async move {
                    conn.query::<i64>(redis::cmd("DEL").arg(k))
                        .await
                        .map(|n| n == 1)
                        .map_err(|e| LockError::server(BackendKind::Redlock, Operation::Release, e))
                }
            })
            .await;
        Some(Ok(deleted >= self.quorum()))
    }

    async fn cleanup(&self, key: &str) -> Result<(), LockError> {
        let lock_key = self.key(key);
        self.on_all(Operation::Cleanup, |conn| {
            let k = &lock_key;
            async move {
                conn.query::<i64>(redis::cmd("DEL").arg(k))
                    .await
                    .map(|_| true)
                    .map_err(|e| LockError::server(BackendKind::Redlock, Operation::Cleanup, e))
            }
        })
        .await;
        Ok(())
    }
}
