//! What the backend tests share: each backend's config as `lockbench.toml` describes it (under a
//! namespace of the test's own), a client that fails naming the server and how to start it, and
//! the scenarios every backend runs (exclusion, stale leases, fencing, TTL, heartbeat).
//! `queue.rs` holds the queue scenarios that etcd and ZooKeeper share.
#![allow(dead_code)] // each test binary (one per backend) uses its own part

pub mod queue;

use std::fmt::Display;
use std::time::Duration;

use lockbench_locks::{BackendConfig, BackendKind, LockBackend, connect, parse_config};

/// A backend as a test configures it: its kind, and for Redis whether its queue is fair.
#[derive(Clone, Copy, Debug)]
pub struct Target {
    pub kind: BackendKind,
    pub fair: bool,
}

/// Redis with `fair = true`.
pub const REDIS_FAIR: Target = Target {
    kind: BackendKind::Redis,
    fair: true,
};

impl From<BackendKind> for Target {
    fn from(kind: BackendKind) -> Self {
        Target { kind, fair: false }
    }
}

impl Target {
    /// The name results give it (`redis-fair` for the fair queue).
    pub fn name(self) -> &'static str {
        if self.fair {
            lockbench_locks::REDIS_FAIR
        } else {
            self.kind.name()
        }
    }
}

/// How a test that needs a server says it is missing: the servers are real ones, never skipped.
pub const START: &str = "the backend tests talk to the real servers: scripts/services.sh status shows them, scripts/services.sh up starts them";

/// Fails the test with `failure` (which names the server) and, unless it says so already, how
/// to start the servers.
#[track_caller]
pub fn server_missing(failure: impl Display) -> ! {
    let failure = failure.to_string();
    if failure.contains("scripts/services.sh up") {
        panic!("{failure}")
    }
    panic!("{failure}; {START}")
}

/// `target`'s entry in lockbench.toml, under a namespace of this backend, test and process.
pub fn config(target: impl Into<Target>, tag: &str) -> BackendConfig {
    let target = target.into();
    let kind = target.kind;
    let text = include_str!("../../../lockbench.toml");
    let mut config = parse_config(text)
        .expect("lockbench.toml parses")
        .into_iter()
        .find(|c| c.kind == kind)
        .expect("every backend is configured");
    // A namespace per backend, test and process: tests never see each other's keys, and each
    // removes its own namespace at its end. The backend is in it because pg-session and pg-xact
    // share one server: with one namespace, the first of their tests to end dropped the fencing
    // sequence the other was still drawing from ("relation ... does not exist").
    config.namespace = format!("lbtest-{}-{}-{tag}", std::process::id(), target.name());
    config.fair = target.fair;
    config
}

/// A client of `config`'s server, or a failure naming the server and how to start it.
pub async fn connected(config: &BackendConfig) -> Box<dyn LockBackend> {
    match connect(config).await {
        Ok(b) => b,
        // The error names the backend and its URL.
        Err(e) => server_missing(e),
    }
}

/// A client of `target` as lockbench.toml configures it (see [`connected`]).
pub async fn client(target: impl Into<Target>, tag: &str) -> Box<dyn LockBackend> {
    connected(&config(target, tag)).await
}

/// Two clients (two connections or sessions), one key: only one holds it, and it passes on
/// release.
pub async fn mutual_exclusion(kind: impl Into<Target>) {
    let kind: Target = kind.into();
    let (a, b) = (
        client(kind, "exclusion").await,
        client(kind, "exclusion").await,
    );
    let key = format!("exclusion-{}", kind.name());
    let ttl = Duration::from_secs(30);
    let held = a
        .try_acquire(&key, ttl)
        .await
        .unwrap()
        .expect("free lock is granted");
    assert!(
        b.try_acquire(&key, ttl).await.unwrap().is_none(),
        "{}: second client got a held lock",
        kind.name()
    );
    assert!(
        a.try_acquire(&key, ttl).await.unwrap().is_none(),
        "{}: not reentrant",
        kind.name()
    );
    assert!(a.release(&held).await.unwrap());
    let next = b
        .try_acquire(&key, ttl)
        .await
        .unwrap()
        .expect("released lock is granted");
    assert!(b.release(&next).await.unwrap());
    finish(a, b, &key).await;
}

/// A lease that was released (or lost) can neither renew nor release the next holder's lock.
pub async fn stale_leases_are_refused(kind: impl Into<Target>) {
    let kind: Target = kind.into();
    let (a, b) = (client(kind, "stale").await, client(kind, "stale").await);
    let key = format!("stale-{}", kind.name());
    let ttl = Duration::from_secs(30);
    let old = a.try_acquire(&key, ttl).await.unwrap().unwrap();
    assert!(a.release(&old).await.unwrap());
    let new = b.try_acquire(&key, ttl).await.unwrap().unwrap();
    assert!(
        !a.renew(&old, ttl).await.unwrap(),
        "{}: stale lease renewed",
        kind.name()
    );
    assert!(
        !a.release(&old).await.unwrap(),
        "{}: stale lease released",
        kind.name()
    );
    assert!(
        !b.release(&old).await.unwrap(),
        "{}: stale token released through the holder's client",
        kind.name()
    );
    assert!(
        b.renew(&new, ttl).await.unwrap(),
        "{}: the holder lost its lock",
        kind.name()
    );
    assert!(a.try_acquire(&key, ttl).await.unwrap().is_none());
    assert!(b.release(&new).await.unwrap());
    finish(a, b, &key).await;
}

/// Successive holders get strictly increasing fencing tokens.
pub async fn fencing_increases(kind: impl Into<Target>) {
    let kind: Target = kind.into();
    let (a, b) = (client(kind, "fencing").await, client(kind, "fencing").await);
    let key = format!("fencing-{}", kind.name());
    let ttl = Duration::from_secs(30);
    let mut last = None;
    for i in 0..6 {
        let holder = if i % 2 == 0 { &a } else { &b };
        let lease = holder.try_acquire(&key, ttl).await.unwrap().unwrap();
        let token = lease.fencing.expect("this backend declares fencing tokens");
        if let Some(prev) = last {
            assert!(
                token > prev,
                "{}: fencing {token} after {prev}",
                kind.name()
            );
        }
        last = Some(token);
        assert!(holder.release(&lease).await.unwrap());
    }
    finish(a, b, &key).await;
}

/// A holder that stops renewing loses the lock after the TTL; one that renews keeps it.
pub async fn ttl_expires_and_renew_extends(kind: impl Into<Target>, ttl: Duration) {
    let kind: Target = kind.into();
    let (a, b) = (client(kind, "ttl").await, client(kind, "ttl").await);
    let key = format!("ttl-{}", kind.name());
    // Renewed at half the TTL, the lock is still held at 1.25 TTL (a quarter of the TTL of margin
    // for a loaded CI machine).
    let lease = a.try_acquire(&key, ttl).await.unwrap().unwrap();
    tokio::time::sleep(ttl / 2).await;
    assert!(a.renew(&lease, ttl).await.unwrap());
    tokio::time::sleep(ttl * 3 / 4).await;
    assert!(
        b.try_acquire(&key, ttl).await.unwrap().is_none(),
        "{}: renewed lock was lost",
        kind.name()
    );
    // Not renewed any more: free after the TTL (etcd's lease clock has one-second steps).
    tokio::time::sleep(ttl + Duration::from_millis(1500)).await;
    let taken = b
        .try_acquire(&key, ttl)
        .await
        .unwrap()
        .expect("expired lock is granted");
    assert!(
        !a.renew(&lease, ttl).await.unwrap(),
        "{}: expired lease renewed",
        kind.name()
    );
    assert!(b.release(&taken).await.unwrap());
    finish(a, b, &key).await;
}

/// A short lease renewed on a heartbeat outlives its TTL many times over; once the heartbeat
/// stops, the lock expires and passes on.
pub async fn heartbeat_keeps_a_short_lease(kind: impl Into<Target>, lease_ttl: Duration) {
    let kind: Target = kind.into();
    use lockbench_locks::{Heartbeat, HeartbeatPolicy, HeartbeatState};
    use std::sync::Arc;
    let a: Arc<dyn LockBackend> = Arc::from(client(kind, "heartbeat").await);
    let b = client(kind, "heartbeat").await;
    let key = "heartbeat";
    let lease = a.try_acquire(key, lease_ttl).await.unwrap().unwrap();
    let beat = Heartbeat::spawn(
        a.clone(),
        lease.clone(),
        HeartbeatPolicy::for_lease(lease_ttl),
    );
    tokio::time::sleep(lease_ttl * 3).await;
    assert!(beat.may_continue(), "{}: {:?}", kind.name(), beat.state());
    assert!(
        b.try_acquire(key, lease_ttl).await.unwrap().is_none(),
        "{}: lost while renewed",
        kind.name()
    );
    beat.stop();
    tokio::time::sleep(lease_ttl + Duration::from_millis(1500)).await;
    let taken = b
        .try_acquire(key, lease_ttl)
        .await
        .unwrap()
        .expect("expired after the heartbeat stopped");
    // A heartbeat restarted on the old lease must not let its holder go on.
    let late = Heartbeat::spawn(a.clone(), lease, HeartbeatPolicy::for_lease(lease_ttl));
    tokio::time::sleep(lease_ttl / 2).await;
    assert!(!late.may_continue(), "{}", kind.name());
    assert!(matches!(
        late.state(),
        HeartbeatState::Lost | HeartbeatState::GaveUp
    ));
    assert!(b.release(&taken).await.unwrap());
    b.cleanup(key).await.unwrap();
    b.cleanup_namespace().await.unwrap();
}

/// Removes what the test left and checks it could.
pub async fn finish(a: Box<dyn LockBackend>, b: Box<dyn LockBackend>, key: &str) {
    a.cleanup(key).await.unwrap();
    b.close().await.unwrap();
    a.cleanup_namespace().await.unwrap();
    a.close().await.unwrap();
}

/// The contract every backend keeps, as a module of tests named `$module`.
macro_rules! backend_tests {
    ($module:ident, $kind:expr) => {
        mod $module {
            #[allow(unused_imports)] // a $kind that names its target in full does not need it
            use lockbench_locks::BackendKind;

            #[tokio::test]
            async fn only_one_client_holds_a_key() {
                $crate::common::mutual_exclusion($kind).await;
            }

            #[tokio::test]
            async fn a_stale_lease_cannot_renew_or_release() {
                $crate::common::stale_leases_are_refused($kind).await;
            }
        }
    };
}
pub(crate) use backend_tests;
