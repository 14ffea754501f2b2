//! The backends' shared vocabulary: which backends there are, what each lock is tied to, where
//! its fencing tokens come from and which service it runs on. The lock clients (lockbench-locks),
//! the fault lab and the decision rules all name backends through these types, so a backend is
//! spelled one way everywhere.

use serde::{Deserialize, Serialize};

/// The backends lockbench knows. A closed set on the command line; each is a [`crate::LockBackend`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BackendKind {
    /// In-process baseline.
    Memory,
    /// One Redis server.
    Redis,
    /// Redlock over several independent Redis servers.
    Redlock,
    /// Postgres session-scoped advisory locks.
    PgSession,
    /// Postgres transaction-scoped advisory locks.
    PgXact,
    /// etcd leases.
    Etcd,
    /// ZooKeeper ephemeral-sequential nodes.
    Zookeeper,
}

impl BackendKind {
    /// Every backend, in the order reports list them.
    pub const ALL: [BackendKind; 7] = [
        BackendKind::Memory,
        BackendKind::Redis,
        BackendKind::Redlock,
        BackendKind::PgSession,
        BackendKind::PgXact,
        BackendKind::Etcd,
        BackendKind::Zookeeper,
    ];

    /// The name used on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Memory => "memory",
            BackendKind::Redis => "redis",
            BackendKind::Redlock => "redlock",
            BackendKind::PgSession => "pg-session",
            BackendKind::PgXact => "pg-xact",
            BackendKind::Etcd => "etcd",
            BackendKind::Zookeeper => "zookeeper",
        }
    }

    /// Parses a command-line name.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Every name, comma-separated, for "expected one of" messages.
    pub fn names() -> String {
        Self::ALL.map(BackendKind::name).join(", ")
    }

    /// The service it runs on; `None` for the in-process baseline.
    pub fn service(self) -> Option<Service> {
        match self {
            BackendKind::Memory => None,
            BackendKind::Redis | BackendKind::Redlock => Some(Service::Redis),
            BackendKind::PgSession | BackendKind::PgXact => Some(Service::Postgres),
            BackendKind::Etcd => Some(Service::Etcd),
            BackendKind::Zookeeper => Some(Service::Zookeeper),
        }
    }

    /// What its lock is tied to.
    pub fn scope(self) -> LockScope {
        match self {
            BackendKind::Memory => LockScope::Process,
            BackendKind::Redis => LockScope::Key,
            BackendKind::Redlock => LockScope::Majority,
            BackendKind::PgSession => LockScope::Session,
            BackendKind::PgXact => LockScope::Transaction,
            BackendKind::Etcd => LockScope::ConsensusLease,
            BackendKind::Zookeeper => LockScope::ConsensusSession,
        }
    }

    /// Where its fencing tokens come from when it hands them out (Redis and Postgres can be
    /// configured not to).
    pub fn fencing(self) -> FencingSource {
        match self {
            BackendKind::Memory | BackendKind::Redis => FencingSource::Counter,
            BackendKind::Redlock => FencingSource::None,
            BackendKind::PgSession | BackendKind::PgXact => FencingSource::Sequence,
            BackendKind::Etcd => FencingSource::Revision,
            BackendKind::Zookeeper => FencingSource::NodeSequence,
        }
    }

    /// True for a store whose members elect a leader and keep an acknowledged lock through a
    /// member's loss (a quorum).
    pub fn is_consensus(self) -> bool {
        match self {
            BackendKind::Etcd | BackendKind::Zookeeper => true,
            BackendKind::Memory
            | BackendKind::Redis
            | BackendKind::Redlock
            | BackendKind::PgSession
            | BackendKind::PgXact => false,
        }
    }

    /// The name results give it on a private cluster lockbench starts (`bench --topology
    /// cluster`, the lab's cluster cells), where it has one.
    pub fn cluster_name(self) -> Option<&'static str> {
        match self {
            BackendKind::Etcd => Some(ETCD_CLUSTER),
            BackendKind::Zookeeper => Some(ZOOKEEPER_CLUSTER),
            BackendKind::Memory
            | BackendKind::Redis
            | BackendKind::Redlock
            | BackendKind::PgSession
            | BackendKind::PgXact => None,
        }
    }
}

impl std::fmt::Display for BackendKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A backend as results name it: a kind, and for Redis whether waiters queue fairly (Redisson's
/// fair lock), whose figures and faults are its own (`redis-fair`); for etcd and ZooKeeper,
/// whether it is a private three-member cluster lockbench started beside the configured server
/// (`bench --topology cluster`: `etcd-cluster`, `zookeeper-cluster`), whose figures are the
/// cost of a quorum. Written as that name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BackendId {
    /// The backend.
    pub kind: BackendKind,
    /// Redis with a fair queue.
    pub fair: bool,
    /// etcd or ZooKeeper on a private cluster of [`CLUSTER_MEMBERS`] members.
    pub cluster: bool,
}

/// The name of Redis with a fair queue, on the command line and in results.
pub const REDIS_FAIR: &str = "redis-fair";

/// The members of the private clusters lockbench starts (the smallest quorum that survives
/// losing one).
pub const CLUSTER_MEMBERS: usize = 3;

/// The names of the private clusters, in results.
pub const ETCD_CLUSTER: &str = "etcd-cluster";
/// See [`ETCD_CLUSTER`].
pub const ZOOKEEPER_CLUSTER: &str = "zookeeper-cluster";

impl BackendId {
    /// The backend `kind`, as configured by default.
    pub const fn of(kind: BackendKind) -> Self {
        BackendId {
            kind,
            fair: false,
            cluster: false,
        }
    }

    /// `kind` on a private cluster, where it has one (etcd, ZooKeeper); `None` otherwise.
    pub fn cluster_of(kind: BackendKind) -> Option<Self> {
        kind.cluster_name().map(|_| BackendId {
            cluster: true,
            ..BackendId::of(kind)
        })
    }

    /// Its name in results and on the command line.
    pub fn name(self) -> &'static str {
        match (self.kind, self.fair, self.cluster) {
            (BackendKind::Redis, true, _) => REDIS_FAIR,
            (kind, _, true) => kind.cluster_name().unwrap_or(kind.name()),
            (kind, _, false) => kind.name(),
        }
    }

    /// The backend a name names; `None` for no backend.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            REDIS_FAIR => Some(BackendId {
                fair: true,
                ..BackendId::of(BackendKind::Redis)
            }),
            other => match BackendKind::ALL
                .into_iter()
                .find(|k| k.cluster_name() == Some(other))
            {
                Some(kind) => BackendId::cluster_of(kind),
                None => BackendKind::parse(other).map(BackendId::of),
            },
        }
    }

    /// True for the in-process baseline, which no network stands behind.
    pub fn in_process(self) -> bool {
        self.kind == BackendKind::Memory
    }
}

impl From<BackendKind> for BackendId {
    fn from(kind: BackendKind) -> Self {
        BackendId::of(kind)
    }
}

impl PartialEq<BackendKind> for BackendId {
    /// The default configuration of `kind` (not `redis-fair` for Redis).
    fn eq(&self, kind: &BackendKind) -> bool {
        *self == BackendId::of(*kind)
    }
}

impl std::fmt::Display for BackendId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for BackendId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for BackendId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        BackendId::parse(&name).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unknown backend {name:?}; expected one of {}, {REDIS_FAIR}, {ETCD_CLUSTER}, {ZOOKEEPER_CLUSTER}",
                BackendKind::names()
            ))
        })
    }
}

/// A service a job can already depend on, and that a networked backend runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Service {
    /// PostgreSQL.
    Postgres,
    /// Redis.
    Redis,
    /// etcd.
    Etcd,
    /// Apache ZooKeeper.
    Zookeeper,
}

impl Service {
    /// Every service, in the order messages list them.
    pub const ALL: [Service; 4] = [
        Service::Postgres,
        Service::Redis,
        Service::Etcd,
        Service::Zookeeper,
    ];

    /// Its name in specs and reports.
    pub fn name(self) -> &'static str {
        match self {
            Service::Postgres => "postgres",
            Service::Redis => "redis",
            Service::Etcd => "etcd",
            Service::Zookeeper => "zookeeper",
        }
    }
}

/// Where fencing tokens come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
