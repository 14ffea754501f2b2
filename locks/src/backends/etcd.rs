//! etcd: the queue of `concurrency.Mutex`. Every acquisition grants a lease and puts its own key
//! under the lock's prefix, bound to the lease; the key with the lowest create revision holds the
//! lock. The fencing token is that create revision; the lease's TTL frees the lock when the holder
//! stops renewing; release revokes the lease, which deletes the key.
//!
//! The try form puts its key and reads the prefix's first key in one transaction, and withdraws
//! (revokes its lease) when the first is not its own. The waiting form keeps its key and watches
//! only the key just below it (the highest create revision under its own), so a release wakes the
//! next waiter alone; a wait that ends ungranted revokes its lease, also when it is abandoned
//! midway (from a task spawned when its future is dropped). The v3 lock API
//! (`etcd_client::Client::lock`) does the same wait but has no try form and leaves a cancelled
//! waiter's key until its lease expires.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use etcd_client::{
    Client, ConnectOptions, EventType, GetOptions, PutOptions, SortOrder, SortTarget, Txn, TxnOp,
    TxnOpResponse,
};

use crate::error::timed;
use crate::{
    BackendConfig, BackendKind, Capabilities, Lease, LockBackend, LockError, Requests, new_token,
};

/// etcd lease locks.
pub struct EtcdLock {
    client: Client,
    /// Calls and stream messages sent, the waiters' included.
    requests: Requests,
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
            requests: Requests::default(),
            namespace: config.namespace.clone(),
            timeout: config.operation_timeout,
            leases: Mutex::new(HashMap::new()),
        })
    }

    /// The prefix under which `key`'s queue lives.
    fn prefix(&self, key: &str) -> String {
        format!("/{}/locks/{key}/", self.namespace)
    }

    /// Joins `key`'s queue: a lease, and our key under the prefix bound to it, put and the
    /// prefix's first key read in one transaction. Returns the entry and whether it is first.
    async fn enqueue(&self, key: &str, ttl: Duration) -> Result<(Entry, bool), LockError> {
        let mut client = self.client.clone();
        self.requests.sent();
        let granted = client
            .lease_grant(lease_seconds(ttl), None)
            .await
            .map_err(err("lease grant"))?;
        let lease = granted.id();
        let mut entry = Entry {
            client: client.clone(),
            requests: self.requests.clone(),
            lease: Some(lease),
            // The server may grant more than asked: its minimum is 1.5 x the election timeout.
            granted: Duration::from_secs(granted.ttl().max(1) as u64),
            key: format!("{}{lease:x}", self.prefix(key)),
            token: new_token(),
            revision: 0,
        };
        let first = GetOptions::new()
            .with_prefix()
            .with_sort(SortTarget::Create, SortOrder::Ascend)
            .with_limit(1);
        let txn = Txn::new().and_then([
            TxnOp::put(
                entry.key.clone(),
                entry.token.clone(),
                Some(PutOptions::new().with_lease(lease)),
            ),
            TxnOp::get(self.prefix(key), Some(first)),
        ]);
        self.requests.sent();
        let response = client.txn(txn).await.map_err(err("acquire"))?;
        entry.revision = response.header().map_or(0, |h| h.revision());
        let head = response.op_responses().into_iter().find_map(|r| match r {
            TxnOpResponse::Get(get) => get.kvs().first().map(|kv| kv.key().to_vec()),
            _ => None,
        });
        let first = head.as_deref() == Some(entry.key.as_bytes());
        Ok((entry, first))
    }

    /// The lease of a granted entry, kept for renew and release.
    fn grant(&self, mut entry: Entry) -> Lease {
        let lease = entry.lease.take().expect("a queued entry has its lease");
        self.leases
            .lock()
            .expect("lease table poisoned")
            .insert(entry.token.clone(), lease);
        Lease {
            key: std::mem::take(&mut entry.key),
            token: std::mem::take(&mut entry.token),
            fencing: Some(entry.revision as u64),
            ttl: entry.granted,
            acquired_at: Instant::now(),
        }
    }

    async fn try_acquire_inner(
        &self,
        key: &str,
        ttl: Duration,
    ) -> Result<Option<Lease>, LockError> {
        let (entry, first) = self.enqueue(key, ttl).await?;
        if !first {
            entry.withdraw().await?;
            return Ok(None);
        }
        Ok(Some(self.grant(entry)))
    }

    /// Waits in the queue until our key is the first, watching only the key just below it, and
    /// keeping our lease alive meanwhile. Ends by `deadline`, withdrawing if not granted.
    async fn acquire_queued(
        &self,
        key: &str,
        ttl: Duration,
        deadline: Instant,
    ) -> Result<Option<Lease>, LockError> {
        let (entry, first) = self.enqueue(key, ttl).await?;
        if first {
            return Ok(Some(self.grant(entry)));
        }
        let mut client = self.client.clone();
        let lease = entry.lease.expect("a queued entry has its lease");
        let keep_alive_every = entry.granted / 3;
        // Bounded by the deadline: every pass returns or waits on a watch until it.
        loop {
            let below = GetOptions::new()
                .with_prefix()
                .with_max_create_revision(entry.revision - 1)
                .with_sort(SortTarget::Create, SortOrder::Descend)
                .with_limit(1);
            self.requests.sent();
            let response = client
                .get(self.prefix(key), Some(below))
                .await
                .map_err(err("acquire"))?;
            let Some(predecessor) = response.kvs().first().map(|kv| kv.key().to_vec()) else {
                return Ok(Some(self.grant(entry)));
            };
            // Watched from now, then checked: a watch that starts at a past revision is
            // "unsynced" in etcd and catches up only on its 100 ms sync loop, which every
            // handoff would then wait for.
            self.requests.sent();
            let mut stream = client
                .watch(predecessor.clone(), None)
                .await
                .map_err(err("acquire"))?;
            self.requests.sent();
            let still = client
                .get(predecessor, Some(GetOptions::new().with_count_only()))
                .await
                .map_err(err("acquire"))?;
            if still.count() == 0 {
                continue; // deleted before the watch began
            }
            // Until the predecessor is deleted, renewing our lease on the way.
            loop {
                let now = Instant::now();
                if now >= deadline {
                    entry.withdraw().await?;
                    return Ok(None);
                }
                tokio::select! {
                    message = stream.message() => {
                        let message = message.map_err(err("acquire"))?;
                        let deleted = message.as_ref().is_none_or(|m| {
                            m.events().iter().any(|e| e.event_type() == EventType::Delete)
                        });
                        if deleted {
                            break;
                        }
                    }
                    _ = tokio::time::sleep(keep_alive_every.min(deadline - now)) => {
                        if Instant::now() < deadline {
                            self.requests.sent();
                            let (mut keeper, mut answers) = client
                                .lease_keep_alive(lease)
                                .await
                                .map_err(err("keep alive while waiting"))?;
                            keeper.keep_alive().await.map_err(err("keep alive while waiting"))?;
                            answers.message().await.map_err(err("keep alive while waiting"))?;
                        }
                    }
                }
            }
        }
    }

    fn lease_of(&self, token: &str) -> Option<i64> {
        self.leases
            .lock()
            .expect("lease table poisoned")
            .get(token)
            .copied()
    }
}

/// Our key in a lock's queue while it is not granted: withdrawn (its lease revoked, which deletes
/// it) when the wait ends ungranted, and also when the wait is abandoned midway, so that no
/// waiter key is left for its lease's life.
struct Entry {
    client: Client,
    requests: Requests,
    lease: Option<i64>,
    key: String,
    token: String,
    revision: i64,
    /// The lease's TTL as the server granted it.
    granted: Duration,
}

impl Entry {
    async fn withdraw(mut self) -> Result<(), LockError> {
        let lease = self.lease.take().expect("a queued entry has its lease");
        self.requests.sent();
        match self.client.lease_revoke(lease).await {
            Ok(_) => Ok(()),
            Err(e) if is_lease_not_found(&e) => Ok(()),
            Err(e) => Err(LockError::server("etcd", "withdraw", e)),
        }
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        if let Some(lease) = self.lease.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            let mut client = self.client.clone();
            self.requests.sent();
            runtime.spawn(async move {
                let _ = client.lease_revoke(lease).await;
            });
        }
    }
}

#[async_trait]
impl LockBackend for EtcdLock {
    fn name(&self) -> &'static str {
        "etcd"
    }

    fn requests(&self) -> Option<u64> {
        Some(self.requests.count())
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            fencing: BackendKind::Etcd.fencing(),
            native_ttl: true,
            wait_queue: true,
            native_wait: true,
            scope: BackendKind::Etcd.scope(),
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

    /// Waits in the queue, watching the key just below ours, bounded by `wait`.
    async fn acquire(
        &self,
        key: &str,
        ttl: Duration,
        wait: Duration,
    ) -> Result<Option<Lease>, LockError> {
        let deadline = Instant::now() + wait;
        timed(
            "etcd",
            "acquire",
            wait + self.timeout,
            self.acquire_queued(key, ttl, deadline),
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
        self.requests.sent();
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
        self.requests.sent();
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
        let prefix = self.prefix(key);
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
