//! The adapter protocol's messages (docs/CLIENTS.md): JSON, one per line. lockbench writes a
//! [`Hello`] then [`Request`]s on the adapter's stdin; the adapter writes one reply per request,
//! in order, and [`Event`]s whenever its library tells its user something, on stdout. Every
//! message an adapter writes carries `t`, the machine's CLOCK_MONOTONIC in nanoseconds.

use serde::{Deserialize, Serialize};

/// The protocol's version, in the hello and its reply.
pub const PROTOCOL: u32 = 1;

/// The first line lockbench sends: where the library connects, and how long it may take.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Hello {
    /// Always `hello`.
    pub op: String,
    /// [`PROTOCOL`].
    pub protocol: u32,
    /// The backend lockbench expects the library to lock on (`redis`, `zookeeper` ...).
    pub backend: String,
    /// The servers, as lockbench's config names them.
    pub urls: Vec<String>,
    /// A prefix for every key, path or name the adapter creates.
    pub namespace: String,
    /// Per-operation timeout for the library's client, ms.
    pub operation_timeout_ms: u64,
    /// Connection timeout, ms.
    pub connect_timeout_ms: u64,
    /// The session timeout to ask for, where the lock lives as long as a session (ZooKeeper), ms.
    pub session_timeout_ms: u64,
    /// Redis behind Sentinel: the name the Sentinels at `urls` monitor the primary by; absent
    /// otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sentinel_master: Option<String>,
}

/// A request after the hello. `id` is echoed in its reply.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "kebab-case")]
pub enum Request {
    /// Take the lock on `key` for `ttl_ms`, waiting up to `wait_ms` (0: one try).
    Acquire {
        id: u64,
        key: String,
        ttl_ms: u64,
        wait_ms: u64,
    },
    /// Extend the held lock to `ttl_ms` from now, with the library's own call (or, for a library
    /// that renews by itself, say whether it still holds it).
    Renew { id: u64, key: String, ttl_ms: u64 },
    /// Release the held lock.
    Release { id: u64, key: String },
    /// Does the library say it still holds the lock?
    Held { id: u64, key: String },
    /// Close the library's connections and exit.
    Bye { id: u64 },
}

impl Request {
    /// The request's id.
    pub fn id(&self) -> u64 {
        match self {
            Request::Acquire { id, .. }
            | Request::Renew { id, .. }
            | Request::Release { id, .. }
            | Request::Held { id, .. }
            | Request::Bye { id } => *id,
        }
    }
}

/// How the library keeps a held lock alive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Renewal {
    /// The user calls the library's extend (redis-py's `extend`).
    Manual,
    /// The library renews by itself while the process runs (a session heartbeat, a watchdog).
    Automatic,
    /// The lock cannot be extended.
    None,
}

/// The reply to the hello: what the library is and does.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Description {
    /// The library's name (`redis-py`).
    pub library: String,
    /// Its version, as the library reports it.
    pub version: String,
    /// The backend it locks on, as lockbench names backends.
    pub backend: String,
    /// How a held lock is kept alive.
    pub renewal: Renewal,
    /// True when the library hands out a fencing token with the lock.
    pub fencing: bool,
    /// True when the library tells its user that the lock is lost (an event, a callback).
    pub notifies_loss: bool,
    /// The protocol the adapter speaks.
    pub protocol: u32,
}

/// What a library told its user unasked, as an event line's `event` says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EventKind {
    /// The library said the lock is gone.
    Lost,
    /// The library is unsure (kazoo's `SUSPENDED`: the connection is down, the session may
    /// still live).
    Suspended,
    /// A word the protocol does not define: kept, so that the line is not taken for noise.
    #[serde(other)]
    Other,
}

/// One line an adapter writes: a reply (it has an `id`) or an event (it has `event`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Line {
    /// The request answered; absent in an event (`null` in the hello's reply).
    #[serde(default)]
    pub id: Option<u64>,
    /// A reply's success; false with `error` when the library failed.
    #[serde(default)]
    pub ok: Option<bool>,
    /// The library's failure, in its own words.
    #[serde(default)]
    pub error: Option<String>,
    /// An event's kind.
    #[serde(default)]
    pub event: Option<EventKind>,
    /// The key an event concerns.
    #[serde(default)]
    pub key: Option<String>,
    /// acquire, renew, held: whether the library says it holds the lock.
    #[serde(default)]
    pub held: Option<bool>,
    /// release: whether the library says it released it.
    #[serde(default)]
    pub released: Option<bool>,
    /// acquire: the library's token for this holding, if it shows one.
    #[serde(default)]
    pub token: Option<String>,
    /// acquire: the library's fencing token, if it gives one.
    #[serde(default)]
    pub fencing_token: Option<u64>,
    /// acquire: how much of the TTL the library says is left, if it says (Redlock's validity).
    #[serde(default)]
    pub validity_ms: Option<u64>,
    /// What the library said besides its answer (an exception's type and message), or why an
    /// event came.
    #[serde(default, alias = "why")]
    pub said: Option<String>,
    /// When it was written: CLOCK_MONOTONIC, ns.
    #[serde(default)]
    pub t: Option<i64>,
    /// The hello's reply: the library's description (flattened into the line).
    #[serde(flatten)]
    pub description: Option<Description>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hello_reply_is_a_line_with_a_description() {
        let text = r#"{"library":"redis-py","version":"8.1.0","backend":"redis","renewal":"manual","fencing":false,"notifies_loss":false,"protocol":1,"id":null,"ok":true,"t":2568034165134}"#;
        let line: Line = serde_json::from_str(text).unwrap();
        assert_eq!(line.id, None);
        assert_eq!(line.ok, Some(true));
        assert_eq!(line.description.unwrap().library, "redis-py");
        let text = r#"{"released":false,"said":"LockNotOwnedError: gone","id":6,"ok":true,"t":2}"#;
        let line: Line = serde_json::from_str(text).unwrap();
        assert_eq!((line.id, line.released), (Some(6), Some(false)));
        assert!(line.description.is_none());
        let event = r#"{"event":"lost","key":"k","why":"KazooState.LOST","t":3}"#;
        let line: Line = serde_json::from_str(event).unwrap();
        assert_eq!(line.said.as_deref(), Some("KazooState.LOST"));
    }
}
