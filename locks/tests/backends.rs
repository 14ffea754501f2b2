//! Every backend against its real server, as `scripts/services.sh up` starts them and
//! `lockbench.toml` describes them. A server that is not running fails the test with the line that
//! says how to start it; nothing here is skipped.

use std::time::Duration;

use lockbench_locks::backends::zookeeper::ZkLock;
use lockbench_locks::{BackendConfig, BackendKind, LockBackend, LockError, connect, parse_config};

fn config(kind: BackendKind, tag: &str) -> BackendConfig {
    let text = include_str!("../../lockbench.toml");
    let mut config = parse_config(text)
        .expect("lockbench.toml parses")
        .into_iter()
        .find(|c| c.kind == kind)
        .expect("every backend is configured");
    // A namespace per test and process: tests never see each other's keys, and each removes its
    // own namespace at its end.
    config.namespace = format!("lbtest-{}-{tag}", std::process::id());
    config
}

async fn client(kind: BackendKind, tag: &str) -> Box<dyn LockBackend> {
    match connect(&config(kind, tag)).await {
        Ok(b) => b,
        Err(e) => panic!("{e}"),
    }
}

/// Two clients (two connections or sessions), one key: only one holds it, and it passes on
/// release.
async fn mutual_exclusion(kind: BackendKind) {
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
async fn stale_leases_are_refused(kind: BackendKind) {
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
async fn fencing_increases(kind: BackendKind) {
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
async fn ttl_expires_and_renew_extends(kind: BackendKind, ttl: Duration) {
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

/// Removes what the test left and checks it could.
async fn finish(a: Box<dyn LockBackend>, b: Box<dyn LockBackend>, key: &str) {
    a.cleanup(key).await.unwrap();
    b.close().await.unwrap();
    a.cleanup_namespace().await.unwrap();
    a.close().await.unwrap();
}

macro_rules! backend_tests {
    ($module:ident, $kind:expr) => {
        mod $module {
            use super::*;

            #[tokio::test]
            async fn only_one_client_holds_a_key() {
                mutual_exclusion($kind).await;
            }

            #[tokio::test]
            async fn a_stale_lease_cannot_renew_or_release() {
                stale_leases_are_refused($kind).await;
            }
        }
    };
}

backend_tests!(memory, BackendKind::Memory);
backend_tests!(redis, BackendKind::Redis);
backend_tests!(redlock, BackendKind::Redlock);
backend_tests!(pg_session, BackendKind::PgSession);
backend_tests!(pg_xact, BackendKind::PgXact);
backend_tests!(etcd, BackendKind::Etcd);
backend_tests!(zookeeper, BackendKind::Zookeeper);

#[tokio::test]
async fn fencing_tokens_increase_redis() {
    fencing_increases(BackendKind::Redis).await;
}

#[tokio::test]
async fn fencing_tokens_increase_pg_session() {
    fencing_increases(BackendKind::PgSession).await;
}

#[tokio::test]
async fn fencing_tokens_increase_pg_xact() {
    fencing_increases(BackendKind::PgXact).await;
}

#[tokio::test]
async fn fencing_tokens_increase_etcd() {
    fencing_increases(BackendKind::Etcd).await;
}

#[tokio::test]
async fn fencing_tokens_increase_zookeeper() {
    fencing_increases(BackendKind::Zookeeper).await;
}

#[tokio::test]
async fn redlock_declares_no_fencing_token() {
    let r = client(BackendKind::Redlock, "redlock-fencing").await;
    assert_eq!(
        r.capabilities().fencing,
        lockbench_locks::FencingSource::None
    );
    let lease = r
        .try_acquire("redlock-no-fencing", Duration::from_secs(10))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(lease.fencing, None);
    assert!(
        lease.ttl < Duration::from_secs(10),
        "validity is the TTL minus elapsed and drift"
    );
    assert!(r.release(&lease).await.unwrap());
    r.cleanup("redlock-no-fencing").await.unwrap();
}

#[tokio::test]
async fn ttl_redis() {
    ttl_expires_and_renew_extends(BackendKind::Redis, Duration::from_secs(2)).await;
}

#[tokio::test]
async fn ttl_redlock() {
    ttl_expires_and_renew_extends(BackendKind::Redlock, Duration::from_secs(2)).await;
}

#[tokio::test]
async fn ttl_memory() {
    ttl_expires_and_renew_extends(BackendKind::Memory, Duration::from_secs(2)).await;
}

#[tokio::test]
async fn ttl_etcd() {
    ttl_expires_and_renew_extends(BackendKind::Etcd, Duration::from_secs(3)).await;
}

/// Advisory locks have no TTL: the lock lives as long as the session. A session that ends (a
/// crashed worker) frees it.
#[tokio::test]
async fn pg_session_lock_dies_with_its_session() {
    let key = "session-end";
    let (a, b) = (
        client(BackendKind::PgSession, "session-end").await,
        client(BackendKind::PgSession, "session-end").await,
    );
    let lease = a
        .try_acquire(key, Duration::from_secs(30))
        .await
        .unwrap()
        .unwrap();
    assert!(
        b.try_acquire(key, Duration::from_secs(30))
            .await
            .unwrap()
            .is_none()
    );
    a.close().await.unwrap();
    let taken = b
        .try_acquire(key, Duration::from_secs(30))
        .await
        .unwrap()
        .expect("closed session freed the lock");
    assert!(!a.release(&lease).await.unwrap());
    assert!(b.release(&taken).await.unwrap());
    b.cleanup_namespace().await.unwrap();
    b.close().await.unwrap();
}

/// ZooKeeper's TTL is the session timeout: a holder whose session stops (a crashed process with a
/// detached session) loses its ephemeral node when the session expires.
#[tokio::test]
async fn zookeeper_lock_expires_with_its_session() {
    let key = "session-expiry";
    let mut short = config(BackendKind::Zookeeper, "expiry");
    short.session_timeout = Duration::from_secs(4);
    let crashed = ZkLock::connect_with(&short, true).await.unwrap();
    let survivor = client(BackendKind::Zookeeper, "expiry").await;
    let lease = crashed
        .try_acquire(key, Duration::ZERO)
        .await
        .unwrap()
        .unwrap();
    assert!(
        survivor
            .try_acquire(key, Duration::ZERO)
            .await
            .unwrap()
            .is_none()
    );
    drop(crashed);
    let mut granted = None;
    for _ in 0..40 {
        tokio::time::sleep(Duration::from_millis(250)).await;
        if let Some(l) = survivor.try_acquire(key, Duration::ZERO).await.unwrap() {
            granted = Some(l);
            break;
        }
    }
    let taken = granted.expect("the lock is free within the session timeout plus a little");
    assert!(taken.fencing > lease.fencing);
    assert!(survivor.release(&taken).await.unwrap());
    survivor.cleanup(key).await.unwrap();
    survivor.cleanup_namespace().await.unwrap();
    survivor.close().await.unwrap();
}

#[tokio::test]
async fn an_unreachable_server_says_how_to_start_it() {
    let mut dead = config(BackendKind::Redis, "dead");
    dead.urls = vec!["redis://127.0.0.1:1".to_string()];
    let error = connect(&dead)
        .await
        .err()
        .expect("nothing listens on port 1");
    assert!(matches!(error, LockError::Unreachable { .. }));
    let text = error.to_string();
    assert!(
        text.contains("redis://127.0.0.1:1") && text.contains("scripts/services.sh up"),
        "{text}"
    );
    let mut dead = config(BackendKind::PgSession, "dead");
    dead.urls = vec!["postgres://postgres:secret@127.0.0.1:1/postgres".to_string()];
    let text = connect(&dead)
        .await
        .err()
        .expect("nothing listens on port 1")
        .to_string();
    assert!(!text.contains("secret"), "password leaked: {text}");
}

/// A short lease renewed on a heartbeat outlives its TTL many times over; once the heartbeat
/// stops, the lock expires and passes on.
async fn heartbeat_keeps_a_short_lease(kind: BackendKind, lease_ttl: Duration) {
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

#[tokio::test]
async fn heartbeat_redis() {
    heartbeat_keeps_a_short_lease(BackendKind::Redis, Duration::from_millis(1500)).await;
}

#[tokio::test]
async fn heartbeat_etcd() {
    heartbeat_keeps_a_short_lease(BackendKind::Etcd, Duration::from_secs(3)).await;
}

/// When the backend says the lease is gone (here: the key was deleted under the holder), the next
/// beat reports it lost.
#[tokio::test]
async fn heartbeat_reports_a_lost_lease() {
    use lockbench_locks::{Heartbeat, HeartbeatPolicy, HeartbeatState};
    use std::sync::Arc;
    let a: Arc<dyn LockBackend> = Arc::from(client(BackendKind::Redis, "heartbeat-lost").await);
    let lease = a
        .try_acquire("lost", Duration::from_secs(3))
        .await
        .unwrap()
        .unwrap();
    let beat = Heartbeat::spawn(
        a.clone(),
        lease,
        HeartbeatPolicy::for_lease(Duration::from_secs(3)),
    );
    a.cleanup("lost").await.unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(beat.state(), HeartbeatState::Lost);
    assert!(!beat.may_continue());
    a.cleanup_namespace().await.unwrap();
}

/// Redis without fencing tokens: a plain SET NX PX, declared as such.
#[tokio::test]
async fn redis_without_fencing_tokens() {
    let mut plain = config(BackendKind::Redis, "plain");
    plain.fencing = false;
    let r = connect(&plain).await.unwrap();
    assert_eq!(
        r.capabilities().fencing,
        lockbench_locks::FencingSource::None
    );
    let lease = r
        .try_acquire("plain", Duration::from_secs(10))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(lease.fencing, None);
    assert!(
        r.try_acquire("plain", Duration::from_secs(10))
            .await
            .unwrap()
            .is_none()
    );
    assert!(r.release(&lease).await.unwrap());
    r.cleanup("plain").await.unwrap();
}

/// Postgres without fencing tokens: the lock function alone, declared as such, exclusive all
/// the same.
#[tokio::test]
async fn postgres_without_fencing_tokens() {
    for kind in [BackendKind::PgSession, BackendKind::PgXact] {
        let mut plain = config(kind, "plain");
        plain.fencing = false;
        let (a, b) = (
            connect(&plain).await.unwrap(),
            connect(&plain).await.unwrap(),
        );
        assert_eq!(
            a.capabilities().fencing,
            lockbench_locks::FencingSource::None
        );
        let lease = a
            .try_acquire("plain", Duration::from_secs(10))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(lease.fencing, None, "{}", kind.name());
        assert!(
            b.try_acquire("plain", Duration::from_secs(10))
                .await
                .unwrap()
                .is_none(),
            "{}",
            kind.name()
        );
        assert!(a.release(&lease).await.unwrap());
        finish(a, b, "plain").await;
    }
}

/// A released connection is reused for the next lease and carries nothing of the last one: the
/// key it held is free for another client while it holds a new key.
#[tokio::test]
async fn pg_connections_come_back_empty() {
    for kind in [BackendKind::PgSession, BackendKind::PgXact] {
        let (a, b) = (client(kind, "reuse").await, client(kind, "reuse").await);
        let ttl = Duration::from_secs(10);
        let first = a.try_acquire("first", ttl).await.unwrap().unwrap();
        assert!(a.release(&first).await.unwrap());
        let second = a.try_acquire("second", ttl).await.unwrap().unwrap();
        let taken = b
            .try_acquire("first", ttl)
            .await
            .unwrap()
            .unwrap_or_else(|| {
                panic!(
                    "{}: a released lock went back with its connection",
                    kind.name()
                )
            });
        assert!(
            b.try_acquire("second", ttl).await.unwrap().is_none(),
            "{}",
            kind.name()
        );
        assert!(a.release(&second).await.unwrap());
        assert!(b.release(&taken).await.unwrap());
        finish(a, b, "reuse").await;
    }
}

mod redis_connection {
    use std::time::Duration;

    use lockbench_locks::backends::redis_connection::RedisConnection;

    /// The local Redis, as lockbench.toml names it.
    fn url() -> String {
        super::config(lockbench_locks::BackendKind::Redis, "conn").urls[0].clone()
    }

    async fn open(url: &str) -> RedisConnection {
        RedisConnection::open(url, Duration::from_secs(3))
            .await
            .unwrap_or_else(|e| panic!("{url}: {e}; start it with scripts/services.sh up"))
    }

    async fn ping(conn: &mut RedisConnection) -> redis::RedisResult<String> {
        redis::cmd("PING").query_async(conn).await
    }

    /// A request whose timeout fired leaves its reply unread; the next request must not take it
    /// for its own.
    #[tokio::test]
    async fn an_abandoned_request_never_answers_the_next() {
        let mut conn = open(&url()).await;
        let key = format!("lbtest-{}-abandoned", std::process::id());
        let blocked = tokio::time::timeout(
            Duration::from_millis(100),
            redis::cmd("BLPOP")
                .arg(&key)
                .arg(1)
                .query_async::<Option<(String, String)>>(&mut conn),
        )
        .await;
        assert!(blocked.is_err(), "BLPOP on an empty list waits a second");
        assert_eq!(ping(&mut conn).await.unwrap(), "PONG");
    }

    /// A connection the server dropped fails its next request with a reason, and the request
    /// after that connects again.
    #[tokio::test]
    async fn a_dropped_connection_fails_once_then_reconnects() {
        let mut conn = open(&url()).await;
        let id: i64 = redis::cmd("CLIENT")
            .arg("ID")
            .query_async(&mut conn)
            .await
            .unwrap();
        let mut admin = open(&url()).await;
        let killed: i64 = redis::cmd("CLIENT")
            .arg("KILL")
            .arg("ID")
            .arg(id)
            .query_async(&mut admin)
            .await
            .unwrap();
        assert_eq!(killed, 1);
        let failed = ping(&mut conn).await.unwrap_err().to_string();
        assert!(
            failed.contains("closed") || failed.contains("reset"),
            "{failed}"
        );
        assert_eq!(ping(&mut conn).await.unwrap(), "PONG");
    }

    /// Password and database from the URL, against a server of its own that requires one; a
    /// wrong password is refused without being repeated.
    #[tokio::test]
    async fn authenticates_and_selects_the_database() {
        let port = 20_000 + std::process::id() % 10_000;
        let mut server = std::process::Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args([
                "--save",
                "",
                "--appendonly",
                "no",
                "--requirepass",
                "s3cret",
            ])
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("redis-server is missing: run scripts/services.sh up, which installs it");
        let mut up = false;
        for _ in 0..100 {
            if std::net::TcpStream::connect(("127.0.0.1", port as u16)).is_ok() {
                up = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let result = async {
            assert!(up, "redis-server on {port} did not start");
            let mut conn = open(&format!("redis://:s3cret@127.0.0.1:{port}/3")).await;
            let info: String = redis::cmd("CLIENT")
                .arg("INFO")
                .query_async(&mut conn)
                .await
                .unwrap();
            assert!(info.contains(" db=3 "), "{info}");
            let refused = RedisConnection::open(
                &format!("redis://:wrong-pw@127.0.0.1:{port}"),
                Duration::from_secs(3),
            )
            .await
            .err()
            .expect("a wrong password is refused")
            .to_string();
            assert!(!refused.contains("wrong-pw"), "{refused}");
        };
        let outcome = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(result)).await;
        server.kill().unwrap();
        server.wait().unwrap();
        if let Err(panic) = outcome {
            std::panic::resume_unwind(panic);
        }
    }
}

/// Postgres's own lock queue: `acquire` waits in it (a blocking advisory lock under lock_timeout)
/// instead of polling.
mod pg_native_wait {
    use std::time::{Duration, Instant};

    use lockbench_locks::backends::postgres::lock_id;
    use sqlx::Connection;

    use super::*;

    /// Requests for `key`'s advisory lock that are queued, not granted, as pg_locks shows them.
    async fn queued(kind: BackendKind, tag: &str, key: &str) -> i64 {
        let config = config(kind, tag);
        let url = &config.urls[0];
        let mut conn = sqlx::PgConnection::connect(url)
            .await
            .unwrap_or_else(|e| panic!("{url}: {e}; start it with scripts/services.sh up"));
        let id = lock_id(&format!("{}:{key}", config.namespace));
        sqlx::query_scalar(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted \
             AND ((classid::bigint << 32) | objid::bigint) = $1",
        )
        .bind(id)
        .fetch_one(&mut conn)
        .await
        .unwrap()
    }

    async fn waiter_is_granted_on_release(kind: BackendKind) {
        let tag = "native-grant";
        let (a, b) = (client(kind, tag).await, client(kind, tag).await);
        assert!(a.capabilities().native_wait, "{}", kind.name());
        let key = "queued";
        let ttl = Duration::from_secs(30);
        let held = a.try_acquire(key, ttl).await.unwrap().expect("free lock");
        let b = std::sync::Arc::new(b);
        let waiter = {
            let b = b.clone();
            tokio::spawn(async move {
                let started = Instant::now();
                let lease = b.acquire(key, ttl, Duration::from_secs(10)).await;
                (lease, started.elapsed())
            })
        };
        // The waiter is in Postgres's queue, not polling.
        let mut seen = 0;
        for _ in 0..100 {
            seen = queued(kind, tag, key).await;
            if seen > 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(seen, 1, "{}: one request queued", kind.name());
        let released = Instant::now();
        assert!(a.release(&held).await.unwrap());
        let (lease, waited) = waiter.await.unwrap();
        let lease = lease.unwrap().expect("granted once the holder released");
        assert!(
            lease.acquired_at >= released,
            "granted only after the release"
        );
        assert!(
            waited < Duration::from_secs(5),
            "granted on release, not at the wait's end: {waited:?}"
        );
        assert!(
            lease.fencing.is_some(),
            "the queued grant carries its token"
        );
        assert!(b.release(&lease).await.unwrap());
        assert_eq!(queued(kind, tag, key).await, 0);
        let b = std::sync::Arc::try_unwrap(b)
            .ok()
            .expect("the waiter task ended");
        finish(a, b, key).await;
    }

    async fn a_timed_out_wait_leaves_nothing_queued(kind: BackendKind) {
        let tag = "native-timeout";
        let (a, b) = (client(kind, tag).await, client(kind, tag).await);
        let key = "timeout";
        let ttl = Duration::from_secs(30);
        let held = a.try_acquire(key, ttl).await.unwrap().expect("free lock");
        let started = Instant::now();
        let none = b
            .acquire(key, ttl, Duration::from_millis(200))
            .await
            .unwrap();
        let waited = started.elapsed();
        assert!(none.is_none(), "{}: a held lock was granted", kind.name());
        assert!(
            waited >= Duration::from_millis(190) && waited < Duration::from_secs(3),
            "the wait ends by its bound: {waited:?}"
        );
        assert_eq!(queued(kind, tag, key).await, 0, "nothing left in the queue");
        assert!(a.release(&held).await.unwrap());
        // The connection that timed out is usable again: the lock is granted to it now.
        let lease = b
            .acquire(key, ttl, Duration::from_secs(1))
            .await
            .unwrap()
            .expect("free lock granted after a timed-out wait");
        assert!(b.release(&lease).await.unwrap());
        finish(a, b, key).await;
    }

    /// A wait abandoned midway (its future dropped, as an outer timeout does) closes its session:
    /// Postgres removes the queued request with it.
    async fn an_abandoned_wait_leaves_nothing_queued(kind: BackendKind) {
        let tag = "native-abandon";
        let (a, b) = (client(kind, tag).await, client(kind, tag).await);
        let key = "abandon";
        let ttl = Duration::from_secs(30);
        let held = a.try_acquire(key, ttl).await.unwrap().expect("free lock");
        let abandoned = tokio::time::timeout(
            Duration::from_millis(200),
            b.acquire(key, ttl, Duration::from_secs(30)),
        )
        .await;
        assert!(abandoned.is_err(), "the outer timeout fired first");
        let mut left = 1;
        for _ in 0..100 {
            left = queued(kind, tag, key).await;
            if left == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(
            left,
            0,
            "{}: the abandoned request was removed",
            kind.name()
        );
        assert!(a.release(&held).await.unwrap());
        finish(a, b, key).await;
    }

    #[tokio::test]
    async fn session_waiter_is_granted_on_release() {
        waiter_is_granted_on_release(BackendKind::PgSession).await;
    }

    #[tokio::test]
    async fn transaction_waiter_is_granted_on_release() {
        waiter_is_granted_on_release(BackendKind::PgXact).await;
    }

    #[tokio::test]
    async fn session_wait_times_out_cleanly() {
        a_timed_out_wait_leaves_nothing_queued(BackendKind::PgSession).await;
    }

    #[tokio::test]
    async fn transaction_wait_times_out_cleanly() {
        a_timed_out_wait_leaves_nothing_queued(BackendKind::PgXact).await;
    }

    #[tokio::test]
    async fn an_abandoned_session_wait_is_dequeued() {
        an_abandoned_wait_leaves_nothing_queued(BackendKind::PgSession).await;
    }
}

/// The queues of ZooKeeper (Curator's recipe: a waiter's node stays and watches its predecessor)
/// and etcd (`concurrency.Mutex`: a waiter's key stays under the lock's prefix and watches the key
/// just below it): waiters are granted in order and a release wakes only the next one.
mod queue_wait {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;

    /// The entries queued for `key` (holder and waiters), as the server lists them.
    async fn queued(kind: BackendKind, tag: &str, key: &str) -> usize {
        let config = config(kind, tag);
        let start = "start it with scripts/services.sh up";
        match kind {
            BackendKind::Zookeeper => {
                let url = config.urls.join(",");
                let zk = zookeeper_client::Client::connect(&url)
                    .await
                    .unwrap_or_else(|e| panic!("{url}: {e}; {start}"));
                let folder = format!("/{}/locks/{key}", config.namespace);
                match zk.list_children(&folder).await {
                    Ok(children) => children.len(),
                    Err(zookeeper_client::Error::NoNode) => 0,
                    Err(e) => panic!("{folder}: {e}"),
                }
            }
            BackendKind::Etcd => {
                let mut etcd = etcd_client::Client::connect(&config.urls, None)
                    .await
                    .unwrap_or_else(|e| panic!("{:?}: {e}; {start}", config.urls));
                let prefix = format!("/{}/locks/{key}/", config.namespace);
                let only_count = etcd_client::GetOptions::new()
                    .with_prefix()
                    .with_count_only();
                etcd.get(prefix, Some(only_count)).await.unwrap().count() as usize
            }
            other => panic!("{} has no queue to list", other.name()),
        }
    }

    async fn until_queued(kind: BackendKind, tag: &str, key: &str, n: usize) {
        for _ in 0..200 {
            if queued(kind, tag, key).await == n {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("{}: {n} entries never queued under {key}", kind.name());
    }

    async fn granted_in_order_one_at_a_time(kind: BackendKind) {
        let tag = "queue-order";
        let key = "order";
        let ttl = Duration::from_secs(30);
        let a = client(kind, tag).await;
        let b = Arc::new(client(kind, tag).await);
        let c = Arc::new(client(kind, tag).await);
        assert!(a.capabilities().native_wait, "{}", kind.name());
        let held = a.try_acquire(key, ttl).await.unwrap().expect("free lock");
        assert!(
            b.try_acquire(key, ttl).await.unwrap().is_none(),
            "a held lock is refused to a try"
        );
        until_queued(kind, tag, key, 1).await;
        let wait = |w: Arc<Box<dyn LockBackend>>| {
            tokio::spawn(async move { w.acquire(key, ttl, Duration::from_secs(10)).await })
        };
        let first = wait(b.clone());
        until_queued(kind, tag, key, 2).await;
        let second = wait(c.clone());
        until_queued(kind, tag, key, 3).await;
        assert!(a.release(&held).await.unwrap());
        let b_lease = first
            .await
            .unwrap()
            .unwrap()
            .expect("the first waiter is next");
        // The release woke only the next waiter: the second still waits.
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(
            !second.is_finished(),
            "the second waiter was woken too early"
        );
        assert_eq!(queued(kind, tag, key).await, 2, "the holder and one waiter");
        assert!(b.release(&b_lease).await.unwrap());
        let c_lease = second.await.unwrap().unwrap().expect("then the second");
        assert!(
            c_lease.fencing > b_lease.fencing,
            "fencing tokens grow in grant order"
        );
        assert!(c.release(&c_lease).await.unwrap());
        let b = Arc::try_unwrap(b).ok().unwrap();
        let c = Arc::try_unwrap(c).ok().unwrap();
        c.close().await.unwrap();
        finish(a, b, key).await;
    }

    /// Neither a wait that times out nor one abandoned midway (an outer timeout drops it) leaves
    /// its entry in the queue.
    async fn an_ungranted_wait_leaves_nothing(kind: BackendKind) {
        let tag = "queue-timeout";
        let key = "timeout";
        let ttl = Duration::from_secs(30);
        let (a, b) = (client(kind, tag).await, client(kind, tag).await);
        let held = a.try_acquire(key, ttl).await.unwrap().expect("free lock");
        let started = std::time::Instant::now();
        let none = b
            .acquire(key, ttl, Duration::from_millis(300))
            .await
            .unwrap();
        assert!(none.is_none());
        assert!(started.elapsed() >= Duration::from_millis(290));
        assert_eq!(
            queued(kind, tag, key).await,
            1,
            "only the holder's entry is left"
        );
        let abandoned = tokio::time::timeout(
            Duration::from_millis(200),
            b.acquire(key, ttl, Duration::from_secs(30)),
        )
        .await;
        assert!(abandoned.is_err());
        until_queued(kind, tag, key, 1).await;
        assert!(a.release(&held).await.unwrap());
        finish(a, b, key).await;
    }

    #[tokio::test]
    async fn zookeeper_grants_in_order_one_at_a_time() {
        granted_in_order_one_at_a_time(BackendKind::Zookeeper).await;
    }

    #[tokio::test]
    async fn etcd_grants_in_order_one_at_a_time() {
        granted_in_order_one_at_a_time(BackendKind::Etcd).await;
    }

    #[tokio::test]
    async fn zookeeper_ungranted_waits_leave_no_node() {
        an_ungranted_wait_leaves_nothing(BackendKind::Zookeeper).await;
    }

    #[tokio::test]
    async fn etcd_ungranted_waits_leave_no_key() {
        an_ungranted_wait_leaves_nothing(BackendKind::Etcd).await;
    }
}

/// Redis has no queue: a release publishes on the key's channel and a subscribed waiter tries
/// again (Redisson's design), with the holder's TTL bounding a wait for a message never sent.
mod redis_subscribed_wait {
    use std::time::Duration;

    use super::*;

    /// Subscribers of `key`'s release channel, as the server counts them.
    async fn subscribers(tag: &str, key: &str) -> i64 {
        let config = config(BackendKind::Redis, tag);
        let url = &config.urls[0];
        let client = ::redis::Client::open(url.as_str()).unwrap();
        let mut conn = client
            .get_multiplexed_async_connection()
            .await
            .unwrap_or_else(|e| panic!("{url}: {e}; start it with scripts/services.sh up"));
        let channel = format!("{}:released:{key}", config.namespace);
        let counts: Vec<::redis::Value> = ::redis::cmd("PUBSUB")
            .arg("NUMSUB")
            .arg(&channel)
            .query_async(&mut conn)
            .await
            .unwrap();
        ::redis::from_redis_value(counts[1].clone()).unwrap()
    }

    #[tokio::test]
    async fn a_release_wakes_the_waiter_long_before_the_ttl() {
        let tag = "pubsub-grant";
        let (a, b) = (
            client(BackendKind::Redis, tag).await,
            client(BackendKind::Redis, tag).await,
        );
        assert!(b.capabilities().native_wait);
        let key = "wake";
        // A 60 s TTL and a 10 s wait: only the release's message can grant the waiter in time.
        let held = a
            .try_acquire(key, Duration::from_secs(60))
            .await
            .unwrap()
            .unwrap();
        let (granted, released) = tokio::join!(
            b.acquire(key, Duration::from_secs(60), Duration::from_secs(10)),
            async {
                tokio::time::sleep(Duration::from_millis(300)).await;
                a.release(&held).await.unwrap()
            }
        );
        assert!(released);
        let lease = granted.unwrap().expect("woken by the release");
        assert_eq!(subscribers(tag, key).await, 0, "the waiter unsubscribed");
        assert!(b.release(&lease).await.unwrap());
        finish(a, b, key).await;
    }

    #[tokio::test]
    async fn a_lock_whose_holder_dies_is_taken_when_its_ttl_ends() {
        let tag = "pubsub-ttl";
        let (a, b) = (
            client(BackendKind::Redis, tag).await,
            client(BackendKind::Redis, tag).await,
        );
        let key = "expire";
        // The holder never releases: no message comes, the TTL bounds the wait.
        let _held = a
            .try_acquire(key, Duration::from_millis(500))
            .await
            .unwrap()
            .unwrap();
        let lease = b
            .acquire(key, Duration::from_secs(5), Duration::from_secs(5))
            .await
            .unwrap()
            .expect("granted after the holder's TTL");
        assert!(b.release(&lease).await.unwrap());
        finish(a, b, key).await;
    }

    #[tokio::test]
    async fn a_timed_out_wait_leaves_no_subscription() {
        let tag = "pubsub-timeout";
        let (a, b) = (
            client(BackendKind::Redis, tag).await,
            client(BackendKind::Redis, tag).await,
        );
        let key = "timeout";
        let held = a
            .try_acquire(key, Duration::from_secs(30))
            .await
            .unwrap()
            .unwrap();
        let none = b
            .acquire(key, Duration::from_secs(30), Duration::from_millis(300))
            .await
            .unwrap();
        assert!(none.is_none());
        assert_eq!(subscribers(tag, key).await, 0);
        assert!(a.release(&held).await.unwrap());
        finish(a, b, key).await;
    }
}
