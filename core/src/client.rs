//! The real client libraries lockbench drives through an adapter (docs/CLIENTS.md): which ones
//! ship, the backend each speaks to, and how results name them. A cell measured through one
//! carries it in its [`crate::CellId`]; a cell without one was measured through lockbench's own
//! client. A user's own adapter is a [`Client::Own`], described by the adapter itself.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Mutex;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::BackendKind;

/// A client library lockbench drives through an adapter. The shipped ones are a closed set: a
/// new library is a variant here, its adapter under `clients/adapters/` and its pin in the
/// install script. A user's own adapter is [`Client::Own`], as it described itself.
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
    /// redis-semaphore's `Mutex` (Node) with its automatic refresh, on one Redis.
    RedisSemaphore,
    /// tooz's Postgres lock (Python, OpenStack): a session advisory lock on a connection of its
    /// own.
    ToozPg,
    /// A user's own adapter (`lockbench faults --client ./my_adapter.py`).
    Own(&'static OwnClient),
}

/// A user's own adapter as it described itself in its reply to the hello, named by its
/// program's file name. Each distinct one is kept for the process's life ([`OwnClient::new`]) so
/// that a cell's identity stays `Copy` and small, as the shipped clients' is.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OwnClient {
    /// The name results give it: its program's file name without the extension (`acme_lock`).
    pub name: String,
    /// The program's path, as given on the command line.
    pub adapter: String,
    /// The library, in its adapter's words.
    pub library: String,
    /// How records name it in a sentence: "the team's own adapter `acme_lock` of acme-lock".
    pub called: String,
    /// Its version, in its adapter's words.
    pub version: String,
    /// The backend it locks on.
    pub backend: BackendKind,
    /// True when it hands out a fencing token with the lock.
    pub fencing: bool,
    /// True when it renews the lock by itself.
    pub renews: bool,
    /// True when it tells its user of a lost lock without being asked.
    pub tells: bool,
}

/// `own`, kept for the process's life. Each distinct adapter is leaked once: a run names a
/// handful.
fn intern(own: OwnClient) -> &'static OwnClient {
    static KEPT: Mutex<BTreeSet<&'static OwnClient>> = Mutex::new(BTreeSet::new());
    let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(found) = kept.get(&own) {
        return found;
    }
    let leaked: &'static OwnClient = Box::leak(Box::new(own));
    kept.insert(leaked);
    leaked
}

/// The name results give the adapter at `path`: its file name without the extension.
pub fn own_name(path: &str) -> String {
    let path = Path::new(path);
    path.file_stem()
        .or(path.file_name())
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// What an adapter says of its library (its reply to the hello), as [`OwnClient::new`] reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnDescription<'a> {
    /// The library's name.
    pub library: &'a str,
    /// Its version.
    pub version: &'a str,
    /// The backend it locks on.
    pub backend: BackendKind,
    /// Hands out a fencing token.
    pub fencing: bool,
    /// Renews by itself.
    pub renews: bool,
    /// Tells of a lost lock.
    pub tells: bool,
}

impl OwnClient {
    /// The adapter at `path` as it described itself.
    pub fn new(path: &str, description: &OwnDescription<'_>) -> &'static Self {
        intern(OwnClient {
            name: own_name(path),
            adapter: path.to_string(),
            library: description.library.to_string(),
            called: format!(
                "the team's own adapter `{}` of {}",
                own_name(path),
                description.library
            ),
            version: description.version.to_string(),
            backend: description.backend,
            fencing: description.fencing,
            renews: description.renews,
            tells: description.tells,
        })
    }
}

impl Client {
    /// Every shipped adapter, in the order listings show them (a user's own is not among them).
    pub const ALL: [Client; 9] = [
        Client::RedisPy,
        Client::PythonRedisLock,
        Client::RedisSemaphore,
        Client::Pottery,
        Client::NodeRedlock,
        Client::Kazoo,
        Client::Curator,
        Client::EtcdGo,
        Client::ToozPg,
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
            Client::RedisSemaphore => "redis-semaphore",
            Client::ToozPg => "tooz",
            Client::Own(own) => &own.name,
        }
    }

    /// The shipped adapter a name names.
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
            Client::RedisPy | Client::PythonRedisLock | Client::RedisSemaphore => {
                BackendKind::Redis
            }
            Client::ToozPg => BackendKind::PgSession,
            Client::Kazoo => BackendKind::Zookeeper,
            Client::Pottery | Client::NodeRedlock => BackendKind::Redlock,
            Client::Curator => BackendKind::Zookeeper,
            Client::EtcdGo => BackendKind::Etcd,
            Client::Own(own) => own.backend,
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
            | Client::Curator
            | Client::RedisSemaphore
            | Client::ToozPg => false,
            Client::Own(own) => own.fencing,
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
            | Client::EtcdGo
            | Client::RedisSemaphore => true,
            // tooz's Postgres lock has no TTL to renew: it lives as long as its connection.
            Client::RedisPy | Client::Pottery | Client::ToozPg => false,
            Client::Own(own) => own.renews,
        }
    }

    /// True when the library tells its user that the lock is lost (a listener, a signal, a
    /// channel) without being asked; false when the user learns it only by asking.
    pub fn tells_of_loss(self) -> bool {
        match self {
            Client::NodeRedlock
            | Client::Kazoo
            | Client::Curator
            | Client::EtcdGo
            | Client::RedisSemaphore => true,
            // python-redis-lock's renewal thread ends on the loss without telling anyone.
            Client::RedisPy | Client::PythonRedisLock | Client::Pottery | Client::ToozPg => false,
            Client::Own(own) => own.tells,
        }
    }

    /// The library, as its users know it (a user's own adapter, as records name it in a
    /// sentence).
    pub fn library(self) -> &'static str {
        match self {
            Client::RedisPy => "redis-py Lock (Python)",
            Client::PythonRedisLock => "python-redis-lock Lock (Python)",
            Client::Kazoo => "kazoo Lock (Python)",
            Client::Pottery => "pottery Redlock (Python)",
            Client::NodeRedlock => "node-redlock using (Node)",
            Client::Curator => "Curator InterProcessMutex (Java)",
            Client::EtcdGo => "etcd concurrency.Mutex (Go)",
            Client::RedisSemaphore => "redis-semaphore Mutex (Node)",
            Client::ToozPg => "tooz Postgres lock (Python)",
            Client::Own(own) => &own.called,
        }
    }

    /// The user's own adapter, if this is one.
    pub fn own(self) -> Option<&'static OwnClient> {
        match self {
            Client::Own(own) => Some(own),
            _ => None,
        }
    }
}

impl std::fmt::Display for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A client in results: a shipped adapter by its name, a user's own as its description.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum ClientWire {
    Shipped(String),
    Own(OwnWire),
}

/// A user's own adapter in results.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct OwnWire {
    adapter: String,
    library: String,
    version: String,
    backend: BackendKind,
    fencing: bool,
    renews_itself: bool,
    tells_of_loss: bool,
}

impl Serialize for Client {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Client::Own(own) => OwnWire {
                adapter: own.adapter.clone(),
                library: own.library.clone(),
                version: own.version.clone(),
                backend: own.backend,
                fencing: own.fencing,
                renews_itself: own.renews,
                tells_of_loss: own.tells,
            }
            .serialize(serializer),
            shipped => serializer.serialize_str(shipped.name()),
        }
    }
}

impl<'de> Deserialize<'de> for Client {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match ClientWire::deserialize(deserializer)? {
            ClientWire::Shipped(name) => Client::parse(&name).ok_or_else(|| {
                serde::de::Error::custom(format!(
                    "unknown client {name:?}; expected one of {}",
                    Client::names()
                ))
            }),
            ClientWire::Own(w) => Ok(Client::Own(OwnClient::new(
                &w.adapter,
                &OwnDescription {
                    library: &w.library,
                    version: &w.version,
                    backend: w.backend,
                    fencing: w.fencing,
                    renews: w.renews_itself,
                    tells: w.tells_of_loss,
                },
            ))),
        }
    }
}

/// The client library a job ships, as its spec names it (`[decision] client`): a shipped
/// adapter's name, or the path of the user's own adapter (it contains a `/`). An own adapter is
/// known by what it measured: the decision reads its description from its cells.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientChoice {
    /// A shipped adapter.
    Shipped(Client),
    /// The path of a user's own adapter, as the spec gives it.
    Own(String),
}

impl ClientChoice {
    /// The name its cells carry: a shipped adapter's, or the own adapter's file name.
    pub fn name(&self) -> String {
        match self {
            ClientChoice::Shipped(c) => c.name().to_string(),
            ClientChoice::Own(path) => own_name(path),
        }
    }

    /// What `faults --client` takes to measure it.
    pub fn argument(&self) -> &str {
        match self {
            ClientChoice::Shipped(c) => c.name(),
            ClientChoice::Own(path) => path,
        }
    }

    /// The shipped adapter, if it is one.
    pub fn shipped(&self) -> Option<Client> {
        match self {
            ClientChoice::Shipped(c) => Some(*c),
            ClientChoice::Own(_) => None,
        }
    }
}

impl Serialize for ClientChoice {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.argument())
    }
}

impl<'de> Deserialize<'de> for ClientChoice {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        if let Some(client) = Client::parse(&name) {
            return Ok(ClientChoice::Shipped(client));
        }
        if name.contains('/') {
            return Ok(ClientChoice::Own(name));
        }
        Err(serde::de::Error::custom(format!(
            "unknown client {name:?}; expected one of {}, or the path of your own adapter \
             (./adapters/my_lock.py; docs/CLIENTS.md)",
            Client::names()
        )))
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

    #[test]
    fn a_users_own_adapter_is_named_by_its_file_and_reads_back_with_its_description() {
        let own = Client::Own(OwnClient::new(
            "./adapters/acme_lock.py",
            &OwnDescription {
                library: "acme-lock",
                version: "2.1",
                backend: BackendKind::Redis,
                fencing: true,
                renews: false,
                tells: true,
            },
        ));
        assert_eq!(own.name(), "acme_lock");
        assert_eq!(
            own.library(),
            "the team's own adapter `acme_lock` of acme-lock"
        );
        assert_eq!(own.backend(), BackendKind::Redis);
        assert!(own.gives_fencing_token() && !own.renews_itself() && own.tells_of_loss());
        let json = serde_json::to_string(&own).unwrap();
        assert!(
            json.contains("\"adapter\":\"./adapters/acme_lock.py\""),
            "{json}"
        );
        assert_eq!(serde_json::from_str::<Client>(&json).unwrap(), own);
        assert_eq!(Client::parse("acme_lock"), None, "only shipped names parse");
        assert_eq!(own_name("bin/my-lock"), "my-lock");
    }

    #[test]
    fn a_spec_names_a_shipped_adapter_or_the_path_of_its_own() {
        let read = |s: &str| serde_json::from_str::<ClientChoice>(s);
        assert_eq!(
            read("\"kazoo\"").unwrap(),
            ClientChoice::Shipped(Client::Kazoo)
        );
        let own = read("\"./adapters/acme_lock.py\"").unwrap();
        assert_eq!(own, ClientChoice::Own("./adapters/acme_lock.py".into()));
        assert_eq!(own.name(), "acme_lock");
        assert_eq!(own.argument(), "./adapters/acme_lock.py");
        let err = read("\"acme_lock\"").unwrap_err().to_string();
        assert!(err.contains("or the path of your own adapter"), "{err}");
    }
}
