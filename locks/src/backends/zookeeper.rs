//! ZooKeeper: the Curator lock recipe's try form. Each acquisition creates an ephemeral-sequential
//! node under the key's folder; the lowest sequence holds the lock, so anyone else deletes their
//! node and reports the lock held. The session timeout is the TTL (an ephemeral node dies with its
//! session), and the node's sequence number is the fencing token.
//!
//! The crate's own `Client::lock` waits until granted; the harness needs a try form with its own
//! bounded wait, hence the recipe written out here on `create`, `list_children` and `delete`.

use std::collections::HashSet;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use zookeeper_client::{Acls, Client, CreateMode};

use crate::error::timed;
use crate::{
    BackendConfig, Capabilities, FencingSource, Lease, LockBackend, LockError, LockScope, new_token,
};

const PREFIX: &str = "lock-";

/// ZooKeeper ephemeral-node locks; one session per backend instance.
pub struct ZkLock {
    client: Client,
    namespace: String,
    timeout: Duration,
    session_timeout: Duration,
    folders: Mutex<HashSet<String>>,
}

fn err(operation: &'static str) -> impl Fn(zookeeper_client::Error) -> LockError {
    move |e| LockError::server("zookeeper", operation, e)
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
            backend: "zookeeper",
            url: config.display_url(),
            reason,
        };
        let mut connector = Client::connector()
            .with_session_timeout(config.session_timeout)
            .with_connection_timeout(config.connect_timeout);
        if detached {
            connector = connector.with_detached();
        }
        let cluster = config.urls.join(",");
        let client = tokio::time::timeout(config.connect_timeout, connector.connect(&cluster))
            .await
            .map_err(|_| unreachable(format!("no answer within {:?}", config.connect_timeout)))?
            .map_err(|e| unreachable(e.to_string()))?;
        let session_timeout = client.session_timeout();
        Ok(ZkLock {
            client,
            namespace: config.namespace.clone(),
            timeout: config.operation_timeout,
            session_timeout,
            folders: Mutex::new(HashSet::new()),
        })
    }

    fn folder(&self, key: &str) -> String {
        format!("/{}/locks/{key}", self.namespace)
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
        match self
            .client
            .mkdir(
                folder,
                &CreateMode::Persistent.with_acls(Acls::anyone_all()),
            )
            .await
        {
            Ok(()) | Err(zookeeper_client::Error::NodeExists) => {}
            Err(e) => return Err(err("create folder")(e)),
        }
        self.folders
            .lock()
            .expect("folder set poisoned")
            .insert(folder.to_string());
        Ok(())
    }

    async fn try_acquire_inner(&self, key: &str) -> Result<Option<Lease>, LockError> {
        let folder = self.folder(key);
        self.ensure_folder(&folder).await?;
        let token = new_token();
        let options = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
        let (_, sequence) = self
            .client
            .create(&format!("{folder}/{PREFIX}"), token.as_bytes(), &options)
            .await
            .map_err(err("acquire"))?;
        let ours = sequence.into_i64();
        let node = format!("{folder}/{PREFIX}{sequence}");
        let children = self
            .client
            .list_children(&folder)
            .await
            .map_err(err("acquire"))?;
        let lowest = children.iter().filter_map(|c| sequence_of(c)).min();
        if lowest != Some(ours) {
            self.client
                .delete(&node, None)
                .await
                .map_err(err("acquire"))?;
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

    /// Deletes a folder if it exists and is empty; one still in use by another client stays.
    async fn delete_folder(&self, folder: &str) -> Result<(), LockError> {
        timed("zookeeper", "cleanup", self.timeout, async {
            match self.client.delete(folder, None).await {
                Ok(())
                | Err(zookeeper_client::Error::NoNode)
                | Err(zookeeper_client::Error::NotEmpty) => Ok(()),
                Err(e) => Err(err("cleanup")(e)),
            }
        })
        .await
    }

    /// True when `lease`'s node exists, belongs to this session and carries its token.
    async fn holds(&self, lease: &Lease) -> Result<bool, LockError> {
        match self.client.get_data(&lease.key).await {
            Ok((data, stat)) => Ok(data == lease.token.as_bytes()
                && stat.ephemeral_owner == self.client.session_id().0),
            Err(zookeeper_client::Error::NoNode) => Ok(false),
            Err(e) => Err(err("check")(e)),
        }
    }
}

#[async_trait]
impl LockBackend for ZkLock {
    fn name(&self) -> &'static str {
        "zookeeper"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            fencing: FencingSource::NodeSequence,
            native_ttl: true,
            wait_queue: true,
            native_wait: false,
            scope: LockScope::ConsensusSession,
        }
    }

    /// The TTL is the session timeout, fixed when the session was opened.
    async fn try_acquire(&self, key: &str, _ttl: Duration) -> Result<Option<Lease>, LockError> {
        timed(
            "zookeeper",
            "acquire",
            self.timeout,
            self.try_acquire_inner(key),
        )
        .await
    }

    /// The session's own heartbeats keep the node alive; renewing checks it is still ours.
    async fn renew(&self, lease: &Lease, _ttl: Duration) -> Result<bool, LockError> {
        timed("zookeeper", "renew", self.timeout, self.holds(lease)).await
    }

    async fn release(&self, lease: &Lease) -> Result<bool, LockError> {
        timed("zookeeper", "release", self.timeout, async {
            if !self.holds(lease).await? {
                return Ok(false);
            }
            match self.client.delete(&lease.key, None).await {
                Ok(()) => Ok(true),
                Err(zookeeper_client::Error::NoNode) => Ok(false),
                Err(e) => Err(err("release")(e)),
            }
        })
        .await
    }

    async fn cleanup_namespace(&self) -> Result<(), LockError> {
        self.delete_folder(&format!("/{}/locks", self.namespace))
            .await?;
        self.delete_folder(&format!("/{}", self.namespace)).await
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
