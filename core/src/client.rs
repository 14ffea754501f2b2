//! The real client libraries lockbench drives through an adapter (docs/CLIENTS.md): which ones
//! ship, the backend each speaks to, and how results name them. A cell measured through one
//! carries it in its [`crate::CellId`]; a cell without one was measured through lockbench's own
//! client.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::BackendKind;

/// A client library lockbench ships an adapter for. A closed set: a new library is a variant
/// here, its adapter under `clients/adapters/` and its pin in the install script.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Client {
    /// redis-py's `Lock` (Python), on one Redis.
    RedisPy,
    /// python-redis-lock's `Lock` (Python) with its renewal thread, on one Redis.
    PythonRedisLock,
    /// kazoo's `Lock` (Python), on ZooKeeper.
    Kazoo,
    /// pottery's `Redlock` (Python), over the independent Redis masters.
    Pottery,
    /// node-redlock 5 (`redlock` on npm, Node) with `using`'s automatic extension, over the
    /// independent Redis masters.
    NodeRedlock,
    /// Apache Curator's `InterProcessMutex` (Java), on ZooKeeper.
    Curator,
    /// etcd's Go `concurrency.Mutex` (clientv3, etcd 3.4), on etcd.
    EtcdGo,
}

impl Client {
    /// Every shipped adapter, in the order listings show them.
    pub const ALL: [Client; 7] = [
        Client::RedisPy,
        Client::PythonRedisLock,
        Client::Pottery,
        Client::NodeRedlock,
        Client::Kazoo,
        Client::Curator,
        Client::EtcdGo,
    ];

    /// The adapter's name on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            Client::RedisPy => "redis-py",
            Client::PythonRedisLock => "python-redis-lock",
            Client::Kazoo => "kazoo",
            Client::Pottery => "pottery",
            Client::NodeRedlock => "node-redlock",
            Client::Curator => "curator",
            Client::EtcdGo => "etcd-go",
        }
    }

    /// The adapter a name names.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.name() == name)
    }

    /// Every name, comma-separated, for "expected one of" messages.
    pub fn names() -> String {
        Self::ALL.map(Client::name).join(", ")
    }

    /// The backend the library locks on.
    pub fn backend(self) -> BackendKind {
        match self {
            Client::RedisPy | Client::PythonRedisLock => BackendKind::Redis,
            Client::Kazoo => BackendKind::Zookeeper,
            Client::Pottery | Client::NodeRedlock => BackendKind::Redlock,
            Client::Curator => BackendKind::Zookeeper,
            Client::EtcdGo => BackendKind::Etcd,
        }
    }

    /// True when the library hands its user a fencing token with the lock (`clients check`
    /// holds each adapter's description to this). etcd's Mutex does: `Header().Revision`, the
    /// store's revision at the grant, grows from one holder to the next.
    pub fn gives_fencing_token(self) -> bool {
        match self {
            Client::EtcdGo => true,
            Client::RedisPy
            | Client::PythonRedisLock
            | Client::Kazoo
            | Client::Pottery
            | Client::NodeRedlock
            | Client::Curator => false,
        }
    }

    /// True when the library keeps the lock alive by itself while the process runs (a session
    /// heartbeat, a lease keep-alive, `using`'s extension); false when its user calls extend.
    pub fn renews_itself(self) -> bool {
        match self {
            Client::PythonRedisLock
            | Client::NodeRedlock
            | Client::Kazoo
            | Client::Curator
            | Client::EtcdGo => true,
            Client::RedisPy | Client::Pottery => false,
        }
    }

    /// True when the library tells its user that the lock is lost (a listener, a signal, a
    /// channel) without being asked; false when the user learns it only by asking.
    pub fn tells_of_loss(self) -> bool {
        match self {
            Client::NodeRedlock | Client::Kazoo | Client::Curator | Client::EtcdGo => true,
            // python-redis-lock's renewal thread ends on the loss without telling anyone.
            Client::RedisPy | Client::PythonRedisLock | Client::Pottery => false,
        }
    }

    /// The library, as its users know it.
    pub fn library(self) -> &'static str {
        match self {
            Client::RedisPy => "redis-py Lock (Python)",
            Client::PythonRedisLock => "python-redis-lock Lock (Python)",
            Client::Kazoo => "kazoo Lock (Python)",
            Client::Pottery => "pottery Redlock (Python)",
            Client::NodeRedlock => "node-redlock using (Node)",
            Client::Curator => "Curator InterProcessMutex (Java)",
            Client::EtcdGo => "etcd concurrency.Mutex (Go)",
        }
    }
}

impl std::fmt::Display for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for Client {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Client {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        Client::parse(&name).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unknown client {name:?}; expected one of {}",
                Client::names()
            ))
        })
    }
}

/// The library a cell was measured through, as its adapter described itself: the adapter's
/// name and the library's own version string.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientUsed {
    /// The adapter.
    pub name: Client,
    /// The library's version, as the library reports it (`8.1.0`).
    pub version: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_client_has_a_name_of_its_own_and_reads_back_from_it() {
        for c in Client::ALL {
            assert_eq!(Client::parse(c.name()), Some(c));
            let json = serde_json::to_string(&c).unwrap();
            assert_eq!(serde_json::from_str::<Client>(&json).unwrap(), c);
        }
        let err = serde_json::from_str::<Client>("\"jedis\"").unwrap_err();
        assert!(
            err.to_string().contains("unknown client \"jedis\""),
            "{err}"
        );
    }
}
