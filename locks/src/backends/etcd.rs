//! etcd: the queue of `concurrency.Mutex`. Every acquisition grants a lease and puts its own key
//! under the lock's prefix, bound to the lease; the key with the lowest create revision holds the
//! lock. The fencing token is that create revision; the lease's TTL frees the lock when the holder
//! stops renewing; release revokes the lease, which deletes the key.
//!
//! The try form puts its key and reads the prefix's first key in one transaction, and withdraws
//! (revokes its lease) when the first is not its own. The waiting form keeps its key and waits for
//! the key just below it (the highest create revision under its own) to be deleted, so a release
//! sends the next waiter alone back to the server; a wait that ends ungranted revokes its lease,
//! also when it is abandoned midway (from a task spawned when its future is dropped). The v3 lock
//! API (`etcd_client::Client::lock`) does the same wait but has no try form and leaves a cancelled
//! waiter's key until its lease expires.
//!
//! Where `concurrency.Mutex` opens a watch on the predecessor for every wait, a client here keeps
//! one watch per lock prefix for its life ([`QueueWatch`]: deletions only) and its waiters look
//! for their predecessor in it. A watch that etcd (3.4 and later) registers while a write commits
//! lands in its "unsynced" group, which a loop every 100 ms serves: a new watch per wait put about
//! one handoff in a hundred behind that loop (handoff P99.9 65-80 ms against the release's 5-6 ms
//! at 8 contenders, docs/PERFORMANCE.md). A watch kept open meets that race once, at its start.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use etcd_client::{
    Client, ConnectOptions, EventType, GetOptions, PutOptions, SortOrder, SortTarget, Txn, TxnOp,
    TxnOpResponse, WatchFilterType, WatchOptions,
};
use tokio::sync::broadcast;

use crate::error::{Operation, timed};
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
    /// The watches of the lock prefixes this client has waited on, by prefix.
    watches: tokio::sync::Mutex<HashMap<String, QueueWatch>>,
}

/// Watches kept at most; past that, one no waiter listens to is closed before another opens.
const MAX_WATCHES: usize = 64;

/// How often a waiter whose request failed looks at its queue again, while its key may live.
const RETRY_EVERY: Duration = Duration::from_millis(50);

/// A waiter's state between its looks at the queue.
struct Waiting {
    client: Client,
    /// The prefix's deletions, `None` until (re)opened.
    deletions: Option<broadcast::Receiver<QueueEvent>>,
    /// The revision of the deletion that woke the waiter, once one has.
    woken_at: Option<i64>,
    /// When the lease was last granted or renewed (the request's sending).
    renewed: Instant,
    /// A request failed during the wait.
    interrupted: bool,
}

/// How a look at the queue ended.
enum Pass {
    /// No key below ours.
    Granted,
    /// Woken, or the watch lost: look again.
    Again,
    /// The deadline passed.
    TimedOut,
}

/// What a [`QueueWatch`] tells its waiters.
#[derive(Clone, Debug)]
enum QueueEvent {
    /// This key under the prefix was deleted (a release, a withdrawal, an expired lease), at
    /// this revision.
    Deleted(Vec<u8>, i64),
    /// The watch ended (a restarted server, a closed connection): look again and watch anew.
    Ended,
}

/// A watch on one lock prefix, deletions only, kept open for the client's life: its events go to
/// every waiter of this client on that lock, each of which looks for its own predecessor.
struct QueueWatch {
    events: broadcast::Sender<QueueEvent>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for QueueWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl QueueWatch {
    /// Opens the watch and returns once etcd has confirmed it, so that every deletion committed
    /// after this returns is delivered.
    async fn open(client: &mut Client, prefix: &str, timeout: Duration) -> Result<Self, LockError> {
        let options = WatchOptions::new()
            .with_prefix()
            .with_filters([WatchFilterType::NoPut]);
        let mut stream = timed(BackendKind::Etcd, Operation::Watch, timeout, async {
            let mut stream = client
                .watch(prefix, Some(options))
                .await
                .map_err(err(Operation::Watch))?;
            match stream.message().await.map_err(err(Operation::Watch))? {
                Some(created) if created.created() && !created.canceled() => Ok(stream),
                Some(refused) => Err(LockError::server(
                    BackendKind::Etcd,
                    Operation::Watch,
                    format!("the watch was refused: {}", refused.cancel_reason()),
                )),
                None => Err(LockError::server(
                    BackendKind::Etcd,
                    Operation::Watch,
                    "the watch ended before etcd confirmed it",
                )),
            }
        })
        .await?;
        // Bounded: a waiter that falls this far behind looks again (`Lagged`).
        let (events, _) = broadcast::channel(1024);
        let sender = events.clone();
        let task = tokio::spawn(async move {
            while let Ok(Some(message)) = stream.message().await {
                if message.canceled() {
                    break;
                }
                for event in message.events() {
                    if event.event_type() == EventType::Delete
                        && let Some(kv) = event.kv()
                    {
                        let _ =
                            sender.send(QueueEvent::Deleted(kv.key().to_vec(), kv.mod_revision()));
                    }
                }
            }
            let _ = sender.send(QueueEvent::Ended);
        });
        Ok(QueueWatch { events, task })
    }
}

fn err(operation: Operation) -> impl Fn(etcd_client::Error) -> LockError {
    move |e| LockError::server(BackendKind::Etcd, operation, e)
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
            backend: BackendKind::Etcd,
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
            watches: tokio::sync::Mutex::new(HashMap::new()),
        })
    }

    /// The deletions under `key`'s prefix from now on, through the client's watch of it (opened
    /// on first use, again after it ended).
    async fn deletions(&self, key: &str) -> Result<broadcast::Receiver<QueueEvent>, LockError> {
        let prefix = self.prefix(key);
        let mut watches = self.watches.lock().await;
        if let Some(watch) = watches.get(&prefix)
            && !watch.task.is_finished()
        {
            return Ok(watch.events.subscribe());
        }
        watches.remove(&prefix);
        if watches.len() >= MAX_WATCHES {
            watches.retain(|_, w| w.events.receiver_count() > 0 && !w.task.is_finished());
        }
        self.requests.sent();
        let mut client = self.client.clone();
        let watch = QueueWatch::open(&mut client, &prefix, self.timeout).await?;
        let events = watch.events.subscribe();
        watches.insert(prefix, watch);
        Ok(events)
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
            .map_err(err(Operation::LeaseGrant))?;
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
        let response = client.txn(txn).await.map_err(err(Operation::Acquire))?;
        entry.revision = response.header().map_or(0, |h| h.revision());
        let head = response.op_responses().into_iter().find_map(|r| match r {
            TxnOpResponse::Get(get) => get.kvs().first().map(|kv| kv.key().to_vec()),
            _ => None,
        });
        let first = head.as_deref() == Some(entry.key.as_bytes());
        Ok((entry, first))
    }

    /// The lease of a granted entry, kept for renew and release; its TTL counts from `renewed`,
    /// when the lease was last granted or renewed (a waiter's is up to a third of it ago).
    fn grant(&self, mut entry: Entry, renewed: Instant) -> Lease {
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
            acquired_at: renewed,
        }
    }

    async fn try_acquire_inner(
        &self,
        key: &str,
        ttl: Duration,
    ) -> Result<Option<Lease>, LockError> {
        let enqueued = Instant::now();
        let (entry, first) = self.enqueue(key, ttl).await?;
        if !first {
            entry.withdraw().await?;
            return Ok(None);
        }
        Ok(Some(self.grant(entry, enqueued)))
    }

    /// Waits in the queue until our key is the first, for the key just below it to go, keeping our
    /// lease alive meanwhile. Ends by `deadline`, withdrawing if not granted.
    ///
    /// A request that fails while we wait (the member restarting, an election) does not end the
    /// wait while our key may still be there: it lives as long as its lease, so the wait goes on
    /// from a fresh look every [`RETRY_EVERY`] until the lease has run out since its last renewal
    /// (Go's `concurrency.Mutex` rides its gRPC connection's reconnection the same way). Giving
    /// up at once left the key behind, unrevocable on the lost member, and the caller's next
    /// try queued behind its own orphan for a lease (the fault lab's `cluster/member-restarted`).
    /// After such a failure the key is read back before the grant: a lease that ran out unseen
    /// took it, and a later waiter may hold the lock.
    async fn acquire_queued(
        &self,
        key: &str,
        ttl: Duration,
        deadline: Instant,
    ) -> Result<Option<Lease>, LockError> {
        let enqueued = Instant::now();
        let (entry, first) = self.enqueue(key, ttl).await?;
        if first {
            return Ok(Some(self.grant(entry, enqueued)));
        }
        let mut wait = Waiting {
            client: self.client.clone(),
            // Listening before the predecessor is read: a deletion after the read cannot be
            // missed.
            deletions: Some(self.deletions(key).await?),
            woken_at: None,
            renewed: enqueued,
            interrupted: false,
        };
        loop {
            match self.wait_pass(key, &entry, &mut wait, deadline).await {
                Ok(Pass::Granted) => {
                    if wait.interrupted && !self.still_queued(&mut wait.client, &entry).await? {
                        return Err(LockError::server(
                            BackendKind::Etcd,
                            Operation::Acquire,
                            "our key in the queue expired with its lease while the member was \
                             unreachable",
                        ));
                    }
                    return Ok(Some(self.grant(entry, wait.renewed)));
                }
                Ok(Pass::Again) => {}
                Ok(Pass::TimedOut) => {
                    entry.withdraw().await?;
                    return Ok(None);
                }
                Err(e) => {
                    let lease_left = (wait.renewed + entry.granted).min(deadline);
                    if e.to_string().contains("lease not found")
                        || Instant::now() + RETRY_EVERY >= lease_left
                    {
                        return Err(e);
                    }
                    wait.interrupted = true;
                    wait.woken_at = None;
                    wait.deletions = None;
                    tokio::time::sleep(RETRY_EVERY).await;
                }
            }
        }
    }

    /// One look at the queue and the wait for the key just below ours to go, renewing our lease
    /// on the way.
    async fn wait_pass(
        &self,
        key: &str,
        entry: &Entry,
        wait: &mut Waiting,
        deadline: Instant,
    ) -> Result<Pass, LockError> {
        let lease = entry.lease.expect("a queued entry has its lease");
        let keep_alive_every = entry.granted / 3;
        if wait.deletions.is_none() {
            wait.deletions = Some(self.deletions(key).await?);
        }
        let Some(predecessor) = self
            .below(&mut wait.client, key, entry, wait.woken_at)
            .await?
        else {
            return Ok(Pass::Granted);
        };
        // Until the predecessor is deleted, renewing our lease on the way.
        loop {
            let now = Instant::now();
            if now >= deadline {
                return Ok(Pass::TimedOut);
            }
            let deletions = wait.deletions.as_mut().expect("opened above");
            tokio::select! {
                event = deletions.recv() => match event {
                    Ok(QueueEvent::Deleted(deleted, at)) if deleted == predecessor => {
                        wait.woken_at = Some(at);
                        return Ok(Pass::Again);
                    }
                    Ok(QueueEvent::Deleted(..)) => {}
                    // Events may have been missed: look again, through a watch that works.
                    Ok(QueueEvent::Ended) | Err(_) => {
                        wait.deletions = None;
                        wait.woken_at = None;
                        return Ok(Pass::Again);
                    }
                },
                _ = tokio::time::sleep(keep_alive_every.min(deadline - now)) => {
                    if Instant::now() < deadline {
                        let sent = Instant::now();
                        self.requests.sent();
                        let (mut keeper, mut answers) = wait
                            .client
                            .lease_keep_alive(lease)
                            .await
                            .map_err(err(Operation::KeepAliveWhileWaiting))?;
                        keeper.keep_alive().await.map_err(err(Operation::KeepAliveWhileWaiting))?;
                        let answer = answers
                            .message()
                            .await
                            .map_err(err(Operation::KeepAliveWhileWaiting))?;
                        // etcd answers a lease it no longer has with a TTL of 0.
                        if answer.is_some_and(|a| a.ttl() <= 0) {
                            return Err(LockError::server(
                                BackendKind::Etcd,
                                Operation::KeepAliveWhileWaiting,
                                "lease not found",
                            ));
                        }
                        wait.renewed = sent;
                    }
                }
            }
        }
    }

    /// True when our key is still in the queue (read linearizably).
    async fn still_queued(&self, client: &mut Client, entry: &Entry) -> Result<bool, LockError> {
        self.requests.sent();
        let response = client
            .get(entry.key.clone(), Some(GetOptions::new().with_keys_only()))
            .await
            .map_err(err(Operation::Acquire))?;
        Ok(!response.kvs().is_empty())
    }

    /// The key just below `entry` in `key`'s queue (the highest create revision under its own),
    /// if any. Read as of the revision of the deletion that woke the waiter, when one did, from
    /// the member's own store (serializable): that state is the same on every member, and a
    /// deletion after it comes through the watch, whose events arrive in order. A linearizable
    /// read waits for every write in flight to be applied, which on a loaded server put the
    /// disk's tail into every handoff. When that revision cannot be read there (compacted, or a
    /// member behind it), and for the first look, the read is linearizable.
    async fn below(
        &self,
        client: &mut Client,
        key: &str,
        entry: &Entry,
        at: Option<i64>,
    ) -> Result<Option<Vec<u8>>, LockError> {
        let below = GetOptions::new()
            .with_prefix()
            .with_max_create_revision(entry.revision - 1)
            .with_sort(SortTarget::Create, SortOrder::Descend)
            .with_limit(1)
            .with_keys_only();
        if let Some(revision) = at {
            self.requests.sent();
            let local = below.clone().with_serializable().with_revision(revision);
            if let Ok(response) = client.get(self.prefix(key), Some(local)).await {
                return Ok(response.kvs().first().map(|kv| kv.key().to_vec()));
            }
        }
        self.requests.sent();
        let response = client
            .get(self.prefix(key), Some(below))
            .await
            .map_err(err(Operation::Acquire))?;
        Ok(response.kvs().first().map(|kv| kv.key().to_vec()))
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
            Err(e) => Err(LockError::server(BackendKind::Etcd, Operation::Withdraw, e)),
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

    async fn server_version(&self) -> Option<Result<String, LockError>> {
        let mut client = self.client.clone();
        Some(
            timed(
                BackendKind::Etcd,
                Operation::Status,
                self.timeout,
                async move {
                    let status = client.status().await.map_err(err(Operation::Status))?;
                    Ok(status.version().to_string())
                },
            )
            .await,
        )
    }

    fn client_library(&self) -> Option<&'static str> {
        Some(crate::clients::ETCD)
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
            BackendKind::Etcd,
            Operation::Acquire,
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
            BackendKind::Etcd,
            Operation::Acquire,
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
        timed(
            BackendKind::Etcd,
            Operation::Renew,
            self.timeout,
            async move {
                let attempt = async {
                    let (mut keeper, mut stream) = client.lease_keep_alive(id).await?;
                    keeper.keep_alive().await?;
                    stream.message().await
                };
                match attempt.await {
                    Ok(answer) => Ok(answer.is_some_and(|a| a.ttl() > 0)),
                    // An expired lease is gone: the lock is not ours any more.
                    Err(e) if is_lease_not_found(&e) => Ok(false),
                    Err(e) => Err(LockError::server(BackendKind::Etcd, Operation::Renew, e)),
                }
            },
        )
        .await
    }

    /// Revoking the lease deletes the key bound to it; another holder's key is bound to another
    /// lease, so this can only free our own lock.
    async fn release(&self, lease: &Lease) -> Result<bool, LockError> {
        // The lease stays in the table until the server has answered: a release that timed out
        // (an election under way) and is tried again must revoke it again, not find it gone.
        let Some(id) = self
            .leases
            .lock()
            .expect("lease table poisoned")
            .get(&lease.token)
            .copied()
        else {
            return Ok(false);
        };
        let mut client = self.client.clone();
        self.requests.sent();
        let answer = timed(
            BackendKind::Etcd,
            Operation::Release,
            self.timeout,
            async move {
                match client.lease_revoke(id).await {
                    Ok(_) => Ok(true),
                    // An expired lease is gone already: the lock was not ours any more.
                    Err(e) if is_lease_not_found(&e) => Ok(false),
                    Err(e) => Err(LockError::server(BackendKind::Etcd, Operation::Release, e)),
                }
            },
        )
        .await;
        if answer.is_ok() {
            self.leases
                .lock()
                .expect("lease table poisoned")
                .remove(&lease.token);
        }
        answer
    }

    async fn cleanup(&self, key: &str) -> Result<(), LockError> {
        let mut client = self.client.clone();
        let prefix = self.prefix(key);
        timed(
            BackendKind::Etcd,
            Operation::Cleanup,
            self.timeout,
            async move {
                client
                    .delete(
                        prefix,
                        Some(etcd_client::DeleteOptions::new().with_prefix()),
                    )
                    .await
                    .map(|_| ())
                    .map_err(err(Operation::Cleanup))
            },
        )
        .await
    }

    async fn cleanup_namespace(&self) -> Result<(), LockError> {
        let mut client = self.client.clone();
        let prefix = format!("/{}/", self.namespace);
        timed(
            BackendKind::Etcd,
            Operation::Cleanup,
            self.timeout,
            async move {
                client
                    .delete(
                        prefix,
                        Some(etcd_client::DeleteOptions::new().with_prefix()),
                    )
                    .await
                    .map(|_| ())
                    .map_err(err(Operation::Cleanup))
            },
        )
        .await
    }

    async fn close(&self) -> Result<(), LockError> {
        self.watches.lock().await.clear();
        let ids: Vec<i64> = self
            .leases
            .lock()
            .expect("lease table poisoned")
            .drain()
            .map(|(_, id)| id)
            .collect();
        let mut client = self.client.clone();
        for id in ids {
            let _ = timed(BackendKind::Etcd, Operation::Close, self.timeout, async {
                client
                    .lease_revoke(id)
                    .await
                    .map(|_| ())
                    .map_err(err(Operation::Close))
            })
            .await;
        }
        Ok(())
    }
}
