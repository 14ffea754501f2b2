//! ZooKeeper: the Curator lock recipe's try form. Each acquisition creates an ephemeral-sequential
//! node under the key's folder; the lowest sequence holds the lock, so anyone else deletes their
//! node and reports the lock held. The session timeout is the TTL (an ephemeral node dies with its
//! session), and the node's sequence number is the fencing token.
//!
//! The crate's own `Client::lock` waits until granted; the harness needs a try form and a bounded
//! wait, hence the recipe written out here on `create`, `list_children` and `delete`. The wait is
//! Curator's: a waiter keeps its node and watches only its predecessor, so a release wakes exactly
//! the next waiter (no herd), and a wait that ends ungranted deletes its node.

use std::collections::HashSet;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use zookeeper_client::{Acls, Client, CreateMode};

use crate::error::{Operation, timed};
use crate::{
    BackendConfig, BackendKind, Capabilities, Lease, LockBackend, LockError, Requests, new_token,
};

const PREFIX: &str = "lock-";

/// ZooKeeper ephemeral-node locks; one session per backend instance, opened again when the
/// ensemble expired it (as Curator's clients do): the expired session's locks are gone with it,
/// and only a new acquisition uses the new one.
pub struct ZkLock {
    client: std::sync::RwLock<Client>,
    /// How the session was opened, to open it again.
    opening: Opening,
    namespace: String,
    timeout: Duration,
    session_timeout: Duration,
    folders: Mutex<HashSet<String>>,
    /// The servers of the connect string (`host:port`), for the `srvr` command.
    servers: Vec<String>,
    /// Operations sent (the session's pings are not counted: they are per session, not per grant).
    requests: Requests,
}

/// What a session is opened with.
struct Opening {
    cluster: String,
    session_timeout: Duration,
    connect_timeout: Duration,
    detached: bool,
}

impl Opening {
    async fn open(&self) -> Result<Client, String> {
        let mut connector = Client::connector()
            .with_session_timeout(self.session_timeout)
            .with_connection_timeout(self.connect_timeout);
        if self.detached {
            connector = connector.with_detached();
        }
        tokio::time::timeout(self.connect_timeout, connector.connect(&self.cluster))
            .await
            .map_err(|_| format!("no answer within {:?}", self.connect_timeout))?
            .map_err(|e| e.to_string())
    }
}

fn err(operation: Operation) -> impl Fn(zookeeper_client::Error) -> LockError {
    move |e| LockError::server(BackendKind::Zookeeper, operation, e)
}

/// The sequence number ZooKeeper appended to a node name.
fn sequence_of(name: &str) -> Option<i64> {
    name.strip_prefix(PREFIX)?.parse().ok()
}

impl ZkLock {
    /// Opens a session on the configured ensemble with the configured session timeout.
    pub async fn connect(config: &BackendConfig) -> Result<Self, LockError> {
        Self::connect_with(config, false).await
    }

    /// Like [`ZkLock::connect`]; a `detached` session outlives this client when it is dropped
    /// without [`LockBackend::close`], and expires after the session timeout: how a crashed holder
    /// looks to ZooKeeper.
    pub async fn connect_with(config: &BackendConfig, detached: bool) -> Result<Self, LockError> {
        let unreachable = |reason: String| LockError::Unreachable {
            backend: BackendKind::Zookeeper,
            url: config.display_url(),
            reason,
        };
        let opening = Opening {
            cluster: config.urls.join(","),
            session_timeout: config.session_timeout,
            connect_timeout: config.connect_timeout,
            detached,
        };
        let client = opening.open().await.map_err(unreachable)?;
        let session_timeout = client.session_timeout();
        Ok(ZkLock {
            client: std::sync::RwLock::new(client),
            opening,
            namespace: config.namespace.clone(),
            timeout: config.operation_timeout,
            session_timeout,
            folders: Mutex::new(HashSet::new()),
            // A connect string names every server of an ensemble (`h1:p1,h2:p2/chroot`), and
            // the config may list them as several URLs too.
            servers: config
                .urls
                .iter()
                .flat_map(|u| u.split('/').next().unwrap_or(u).split(','))
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect(),
            requests: Requests::default(),
        })
    }

    fn folder(&self, key: &str) -> String {
        format!("/{}/locks/{key}", self.namespace)
    }

    /// The session now.
    fn client(&self) -> Client {
        self.client
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Before a new acquisition: a session the ensemble expired (a partition, an election
    /// longer than the session) is opened again, so that a client outlives its session as real
    /// ones do. What the old session held is gone with it: `holds` says so of its leases.
    async fn revive(&self) -> Result<(), LockError> {
        let state = self.client().state();
        if !matches!(
            state,
            zookeeper_client::SessionState::Expired | zookeeper_client::SessionState::Closed
        ) {
            return Ok(());
        }
        let fresh = self
            .opening
            .open()
            .await
            .map_err(|reason| LockError::Unreachable {
                backend: BackendKind::Zookeeper,
                url: self.opening.cluster.clone(),
                reason: format!("opening a session again after it {state:?}: {reason}"),
            })?;
        *self.client.write().unwrap_or_else(|e| e.into_inner()) = fresh;
        Ok(())
    }

    async fn ensure_folder(&self, folder: &str) -> Result<(), LockError> {
        if self
            .folders
            .lock()
            .expect("folder set poisoned")
            .contains(folder)
        {
            return Ok(());
        }
        self.requests.sent();
        match self
            .client()
            .mkdir(
                folder,
                &CreateMode::Persistent.with_acls(Acls::anyone_all()),
            )
            .await
        {
            Ok(()) | Err(zookeeper_client::Error::NodeExists) => {}
            Err(e) => return Err(err(Operation::CreateFolder)(e)),
        }
        self.folders
            .lock()
            .expect("folder set poisoned")
            .insert(folder.to_string());
        Ok(())
    }

    /// Joins `key`'s queue: an ephemeral-sequential node carrying a new token. Returns the folder,
    /// the token, the node's sequence and its path.
    async fn enqueue(&self, key: &str) -> Result<(String, String, i64, String), LockError> {
        self.revive().await?;
        let folder = self.folder(key);
        self.ensure_folder(&folder).await?;
        let token = new_token();
        let options = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
        self.requests.sent();
        let (_, sequence) = self
            .client()
            .create(&format!("{folder}/{PREFIX}"), token.as_bytes(), &options)
            .await
            .map_err(err(Operation::Acquire))?;
        let path = format!("{folder}/{PREFIX}{sequence}");
        Ok((folder, token, sequence.into_i64(), path))
    }

    async fn try_acquire_inner(&self, key: &str) -> Result<Option<Lease>, LockError> {
        let (folder, token, ours, node) = self.enqueue(key).await?;
        self.requests.sent();
        let children = self
            .client()
            .list_children(&folder)
            .await
            .map_err(err(Operation::Acquire))?;
        let lowest = children.iter().filter_map(|c| sequence_of(c)).min();
        if lowest != Some(ours) {
            self.requests.sent();
            self.client()
                .delete(&node, None)
                .await
                .map_err(err(Operation::Acquire))?;
            return Ok(None);
        }
        Ok(Some(Lease {
            key: node,
            token,
            fencing: Some(ours as u64),
            ttl: self.session_timeout,
            acquired_at: Instant::now(),
        }))
    }

    /// Curator's wait: our node stays queued; until it is the lowest, watch the node just below it
    /// and look again when that one goes. Ends by `deadline`, deleting our node if not granted.
    async fn acquire_queued(
        &self,
        key: &str,
        deadline: Instant,
    ) -> Result<Option<Lease>, LockError> {
        let (folder, token, ours, path) = self.enqueue(key).await?;
        let node = QueuedNode {
            client: self.client(),
            requests: self.requests.clone(),
            path: Some(path),
        };
        // Bounded by the deadline: every pass either returns or waits on a watch until it.
        loop {
            self.requests.sent();
            let children = self
                .client()
                .list_children(&folder)
                .await
                .map_err(err(Operation::Acquire))?;
            let below = children
                .iter()
                .filter_map(|c| sequence_of(c).map(|n| (n, c)))
                .filter(|(n, _)| *n < ours)
                .max_by_key(|(n, _)| *n);
            let Some((_, predecessor)) = below else {
                return Ok(Some(Lease {
                    key: node.keep(),
                    token,
                    fencing: Some(ours as u64),
                    ttl: self.session_timeout,
                    acquired_at: Instant::now(),
                }));
            };
            self.requests.sent();
            let (stat, watcher) = self
                .client()
                .check_and_watch_stat(&format!("{folder}/{predecessor}"))
                .await
                .map_err(err(Operation::Acquire))?;
            if stat.is_none() {
                continue; // gone between the listing and the watch
            }
            let now = Instant::now();
            if now >= deadline {
                node.delete().await?;
                return Ok(None);
            }
            tokio::select! {
                _ = watcher.changed() => {}
                _ = tokio::time::sleep(deadline - now) => {
                    node.delete().await?;
                    return Ok(None);
                }
            }
        }
    }

    /// Deletes a folder if it exists and is empty; one still in use by another client stays.
    async fn delete_folder(&self, folder: &str) -> Result<(), LockError> {
        self.requests.sent();
        timed(
            BackendKind::Zookeeper,
            Operation::Cleanup,
            self.timeout,
            async {
                match self.client().delete(folder, None).await {
                    Ok(())
                    | Err(zookeeper_client::Error::NoNode)
                    | Err(zookeeper_client::Error::NotEmpty) => Ok(()),
                    Err(e) => Err(err(Operation::Cleanup)(e)),
                }
            },
        )
        .await
    }

    /// True when `lease`'s node exists, belongs to this session and carries its token.
    async fn holds(&self, lease: &Lease) -> Result<bool, LockError> {
        self.requests.sent();
        match self.client().get_data(&lease.key).await {
            Ok((data, stat)) => Ok(data == lease.token.as_bytes()
                && stat.ephemeral_owner == self.client().session_id().0),
            Err(zookeeper_client::Error::NoNode) => Ok(false),
            Err(e) => Err(err(Operation::Check)(e)),
        }
    }
}

/// Our node while it waits in the queue: deleted when the wait ends ungranted, and also when the
/// wait is abandoned midway (its future dropped), so that no waiter is left behind for the
/// session's life.
struct QueuedNode {
    client: Client,
    requests: Requests,
    path: Option<String>,
}

impl QueuedNode {
    /// Granted: the node is the lease's now.
    fn keep(mut self) -> String {
        self.path.take().expect("a queued node has its path")
    }

    async fn delete(mut self) -> Result<(), LockError> {
        let path = self.path.take().expect("a queued node has its path");
        self.requests.sent();
        match self.client.delete(&path, None).await {
            Ok(()) | Err(zookeeper_client::Error::NoNode) => Ok(()),
            Err(e) => Err(err(Operation::GiveUpWaiting)(e)),
        }
    }
}

impl Drop for QueuedNode {
    fn drop(&mut self) {
        if let Some(path) = self.path.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            let client = self.client.clone();
            self.requests.sent();
            runtime.spawn(async move {
                let _ = client.delete(&path, None).await;
            });
        }
    }
}

#[async_trait]
impl LockBackend for ZkLock {
    fn name(&self) -> &'static str {
        "zookeeper"
    }

    /// The `srvr` four-letter command of the first server (whitelisted by default since 3.5.3).
    async fn server_version(&self) -> Option<Result<String, LockError>> {
        let server = self.servers.first()?.clone();
        Some(
            timed(
                BackendKind::Zookeeper,
                Operation::Srvr,
                self.timeout,
                async move {
                    use tokio::io::{AsyncReadExt, AsyncWriteExt};
                    let fail = |e: std::io::Error| {
                        LockError::server(BackendKind::Zookeeper, Operation::Srvr, e)
                    };
                    let mut stream = tokio::net::TcpStream::connect(&server)
                        .await
                        .map_err(fail)?;
                    stream.write_all(b"srvr").await.map_err(fail)?;
                    let mut reply = String::new();
                    stream.read_to_string(&mut reply).await.map_err(fail)?;
                    // "Zookeeper version: 3.8.0-5a02a05eddb59aee6ac762f7ea82e92a68eb9c0f, built on ..."
                    Ok(reply
                        .lines()
                        .find_map(|l| l.strip_prefix("Zookeeper version: "))
                        .and_then(|v| v.split(['-', ',']).next())
                        .map_or_else(
                            || "unknown (srvr not whitelisted)".to_string(),
                            str::to_string,
                        ))
                },
            )
            .await,
        )
    }

    fn client_library(&self) -> Option<&'static str> {
        Some(crate::clients::ZOOKEEPER)
    }

    fn requests(&self) -> Option<u64> {
        Some(self.requests.count())
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            fencing: BackendKind::Zookeeper.fencing(),
            native_ttl: true,
            wait_queue: true,
            native_wait: true,
            scope: BackendKind::Zookeeper.scope(),
        }
    }

    /// The TTL is the session timeout, fixed when the session was opened.
    async fn try_acquire(&self, key: &str, _ttl: Duration) -> Result<Option<Lease>, LockError> {
        timed(
            BackendKind::Zookeeper,
            Operation::Acquire,
            self.timeout,
            self.try_acquire_inner(key),
        )
        .await
    }

    /// Waits in the queue of nodes, watching the predecessor, bounded by `wait`.
    async fn acquire(
        &self,
        key: &str,
        _ttl: Duration,
        wait: Duration,
    ) -> Result<Option<Lease>, LockError> {
        let deadline = Instant::now() + wait;
        timed(
            BackendKind::Zookeeper,
            Operation::Acquire,
            wait + self.timeout,
            self.acquire_queued(key, deadline),
        )
        .await
    }

    /// The session's own heartbeats keep the node alive; renewing checks it is still ours.
    async fn renew(&self, lease: &Lease, _ttl: Duration) -> Result<bool, LockError> {
        timed(
            BackendKind::Zookeeper,
            Operation::Renew,
            self.timeout,
            self.holds(lease),
        )
        .await
    }

    async fn release(&self, lease: &Lease) -> Result<bool, LockError> {
        timed(
            BackendKind::Zookeeper,
            Operation::Release,
            self.timeout,
            async {
                if !self.holds(lease).await? {
                    return Ok(false);
                }
                self.requests.sent();
                match self.client().delete(&lease.key, None).await {
                    Ok(()) => Ok(true),
                    Err(zookeeper_client::Error::NoNode) => Ok(false),
                    Err(e) => Err(err(Operation::Release)(e)),
                }
            },
        )
        .await
    }

    async fn cleanup_namespace(&self) -> Result<(), LockError> {
        self.delete_folder(&format!("/{}/locks", self.namespace))
            .await?;
        self.delete_folder(&format!("/{}", self.namespace)).await
    }

    /// Every node under the namespace, deepest first: the folders of keys still held, and the
    /// ephemeral nodes of sessions not yet expired (a holder killed a moment ago keeps its node
    /// until its session times out; any client may delete it).
    async fn purge_namespace(&self) -> Result<(), LockError> {
        let mut nodes = vec![format!("/{}", self.namespace)];
        let mut next = 0;
        while next < nodes.len() {
            self.requests.sent();
            let path = nodes[next].clone();
            let children = timed(
                BackendKind::Zookeeper,
                Operation::Cleanup,
                self.timeout,
                async {
                    match self.client().list_children(&path).await {
                        Ok(children) => Ok(children),
                        Err(zookeeper_client::Error::NoNode) => Ok(Vec::new()),
                        Err(e) => Err(err(Operation::Cleanup)(e)),
                    }
                },
            )
            .await?;
            nodes.extend(children.iter().map(|c| format!("{path}/{c}")));
            next += 1;
        }
        for node in nodes.iter().rev() {
            self.delete_folder(node).await?;
        }
        Ok(())
    }

    async fn cleanup(&self, key: &str) -> Result<(), LockError> {
        let folder = self.folder(key);
        self.folders
            .lock()
            .expect("folder set poisoned")
            .remove(&folder);
        self.delete_folder(&folder).await
    }
}
