//! etcd: a lease, and the lock key created under it in one transaction only if the key does not
//! exist. The fencing token is the revision at which the key was created; the lease's TTL frees
//! the lock when the holder stops renewing; release revokes the lease, which deletes the key.
//!
//! The v3 lock API (`etcd_client::Client::lock`) is not used: it blocks until the lock is granted
//! and has no try form, and a call cancelled by the harness's timeout leaves its waiter key until
//! the lease expires. The transaction below is what that API does for an uncontended key, without
//! the queue.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use etcd_client::{Client, Compare, CompareOp, ConnectOptions, PutOptions, Txn, TxnOp};

use crate::error::timed;
use crate::{
    BackendConfig, Capabilities, FencingSource, Lease, LockBackend, LockError, LockScope, new_token,
};

/// etcd lease locks.
pub struct EtcdLock {
    client: Client,
    namespace: String,
    timeout: Duration,
    leases: Mutex<HashMap<String, i64>>,
}

fn err(operation: &'static str) -> impl Fn(etcd_client::Error) -> LockError {
    move |e| LockError::server("etcd", operation, e)
}

fn is_lease_not_found(e: &etcd_client::Error) -> bool {
    e.to_string().contains("lease not found")
}

/// etcd leases are whole seconds, at least one.
fn lease_seconds(ttl: Duration) -> i64 {
    (ttl.as_secs_f64().ceil() as i64).max(1)
}

impl EtcdLock {
    /// Connects to the configured endpoints and checks one answers.
    pub async fn connect(config: &BackendConfig) -> Result<Self, LockError> {
        let unreachable = |reason: String| LockError::Unreachable {
            backend: "etcd",
            url: config.display_url(),
            reason,
        };
        let mut options = ConnectOptions::new()
            .with_connect_timeout(config.connect_timeout)
            .with_timeout(config.operation_timeout);
        if config.urls.iter().any(|u| u.starts_with("https://")) {
            options = options.with_tls(etcd_client::TlsOptions::new().with_native_roots());
        }
        let mut client = tokio::time::timeout(
            config.connect_timeout,
            Client::connect(&config.urls, Some(options)),
        )
        .await
        .map_err(|_| unreachable(format!("no answer within {:?}", config.connect_timeout)))?
        .map_err(|e| unreachable(e.to_string()))?;
        tokio::time::timeout(config.connect_timeout, client.status())
            .await
            .map_err(|_| unreachable(format!("no answer within {:?}", config.connect_timeout)))?
            .map_err(|e| unreachable(e.to_string()))?;
        Ok(EtcdLock {
            client,
            namespace: config.namespace.clone(),
            timeout: config.operation_timeout,
            leases: Mutex::new(HashMap::new()),
        })
    }

    fn key(&self, key: &str) -> String {
        format!("/{}/locks/{key}", self.namespace)
    }

    async fn try_acquire_inner(
        &self,
        key: &str,
        ttl: Duration,
    ) -> Result<Option<Lease>, LockError> {
        let mut client = self.client.clone();
        let lock_key = self.key(key);
        let token = new_token();
        let lease = client
            .lease_grant(lease_seconds(ttl), None)
            .await
            .map_err(err("lease grant"))?
            .id();
        let txn = Txn::new()
            .when([Compare::create_revision(
                lock_key.clone(),
                CompareOp::Equal,
                0,
            )])
            .and_then([TxnOp::put(
                lock_key.clone(),
                token.clone(),
                Some(PutOptions::new().with_lease(lease)),
            )]);
        let response = client.txn(txn).await.map_err(err("acquire"))?;
        if !response.succeeded() {
            client
                .lease_revoke(lease)
                .await
                .map_err(err("lease revoke"))?;
            return Ok(None);
        }
        let revision = response.header().map_or(0, |h| h.revision());
        self.leases
            .lock()
            .expect("lease table poisoned")
            .insert(token.clone(), lease);
        Ok(Some(Lease {
            key: lock_key,
            token,
            fencing: Some(revision as u64),
            ttl: Duration::from_secs(lease_seconds(ttl) as u64),
            acquired_at: Instant::now(),
        }))
    }

    fn lease_of(&self, token: &str) -> Option<i64> {
        self.leases
            .lock()
            .expect("lease table poisoned")
            .get(token)
            .copied()
    }
}

#[async_trait]
impl LockBackend for EtcdLock {
    fn name(&self) -> &'static str {
        "etcd"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            fencing: FencingSource::Revision,
            native_ttl: true,
            wait_queue: false,
            native_wait: false,
            scope: LockScope::ConsensusLease,
        }
    }

    async fn try_acquire(&self, key: &str, ttl: Duration) -> Result<Option<Lease>, LockError> {
        timed(
            "etcd",
            "acquire",
            self.timeout,
            self.try_acquire_inner(key, ttl),
        )
        .await
    }

    /// One keep-alive round trip. The TTL is the lease's own: etcd renews a lease to the TTL it
    /// was granted with.
    async fn renew(&self, lease: &Lease, _ttl: Duration) -> Result<bool, LockError> {
        let Some(id) = self.lease_of(&lease.token) else {
            return Ok(false);
        };
        let mut client = self.client.clone();
        timed("etcd", "renew", self.timeout, async move {
            let attempt = async {
                let (mut keeper, mut stream) = client.lease_keep_alive(id).await?;
                keeper.keep_alive().await?;
                stream.message().await
            };
            match attempt.await {
                Ok(answer) => Ok(answer.is_some_and(|a| a.ttl() > 0)),
                // An expired lease is gone: the lock is not ours any more.
                Err(e) if is_lease_not_found(&e) => Ok(false),
                Err(e) => Err(LockError::server("etcd", "renew", e)),
            }
        })
        .await
    }

    /// Revoking the lease deletes the key bound to it; another holder's key is bound to another
    /// lease, so this can only free our own lock.
    async fn release(&self, lease: &Lease) -> Result<bool, LockError> {
        let Some(id) = self
            .leases
            .lock()
            .expect("lease table poisoned")
            .remove(&lease.token)
        else {
            return Ok(false);
        };
        let mut client = self.client.clone();
        timed("etcd", "release", self.timeout, async move {
            match client.lease_revoke(id).await {
                Ok(_) => Ok(true),
                // An expired lease is gone already: the lock was not ours any more.
                Err(e) if is_lease_not_found(&e) => Ok(false),
                Err(e) => Err(LockError::server("etcd", "release", e)),
            }
        })
        .await
    }

    async fn cleanup(&self, key: &str) -> Result<(), LockError> {
        let mut client = self.client.clone();
        let lock_key = self.key(key);
        timed("etcd", "cleanup", self.timeout, async move {
            client
                .delete(lock_key, None)
                .await
                .map(|_| ())
                .map_err(err("cleanup"))
        })
        .await
    }

    async fn cleanup_namespace(&self) -> Result<(), LockError> {
        let mut client = self.client.clone();
        let prefix = format!("/{}/", self.namespace);
        timed("etcd", "cleanup", self.timeout, async move {
            client
                .delete(
                    prefix,
                    Some(etcd_client::DeleteOptions::new().with_prefix()),
                )
                .await
                .map(|_| ())
                .map_err(err("cleanup"))
        })
        .await
    }

    async fn close(&self) -> Result<(), LockError> {
        let ids: Vec<i64> = self
            .leases
            .lock()
            .expect("lease table poisoned")
            .drain()
            .map(|(_, id)| id)
            .collect();
        let mut client = self.client.clone();
        for id in ids {
            let _ = timed("etcd", "close", self.timeout, async {
                client
                    .lease_revoke(id)
                    .await
                    .map(|_| ())
                    .map_err(err("close"))
            })
            .await;
        }
        Ok(())
    }
}
