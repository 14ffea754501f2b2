//! The Redis backends against the servers `scripts/services.sh up` starts: `redis` (one server,
//! with its connection, fencing counter and subscribed wait) and `redlock` (five servers through
//! the same client). Redlock is here rather than in a file of its own: it is Redis, its four tests
//! share the client and servers, and a test binary costs a link. A missing server fails the test
//! naming it and how to start it; nothing is skipped.

use std::time::Duration;

use lockbench_locks::{BackendKind, LockBackend};

mod common;
use common::{
    backend_tests, client, config, connected, fencing_increases, finish,
    heartbeat_keeps_a_short_lease, server_missing, ttl_expires_and_renew_extends,
};

backend_tests!(redis, BackendKind::Redis);
backend_tests!(redlock, BackendKind::Redlock);

#[tokio::test]
async fn fencing_tokens_increase_redis() {
    fencing_increases(BackendKind::Redis).await;
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
async fn heartbeat_redis() {
    heartbeat_keeps_a_short_lease(BackendKind::Redis, Duration::from_millis(1500)).await;
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
    let r = connected(&plain).await;
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

mod redis_connection {
    use std::time::Duration;

    use lockbench_locks::backends::redis_connection::RedisConnection;

    use super::server_missing;

    /// The local Redis, as lockbench.toml names it.
    fn url() -> String {
        super::config(lockbench_locks::BackendKind::Redis, "conn").urls[0].clone()
    }

    async fn open(url: &str) -> RedisConnection {
        RedisConnection::open(url, Duration::from_secs(3))
            .await
            .unwrap_or_else(|e| server_missing(format!("Redis at {url}: {e}")))
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
            .unwrap_or_else(|e| server_missing(format!("Redis at {url}: {e}")));
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
