//! The Redis backends against the servers `scripts/services.sh up` starts: `redis` (one server,
//! with its connection, fencing counter and subscribed wait), `redis-fair` (the same server, its
//! waiters queued in Redis) and `redlock` (five servers through the same client). Redlock is here rather than in a file of its own: it is Redis, its four tests
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
backend_tests!(redis_fair, crate::common::REDIS_FAIR);
backend_tests!(redlock, BackendKind::Redlock);

#[tokio::test]
async fn fencing_tokens_increase_redis() {
    fencing_increases(BackendKind::Redis).await;
}

#[tokio::test]
async fn fencing_tokens_increase_redis_fair() {
    fencing_increases(common::REDIS_FAIR).await;
}

#[tokio::test]
async fn ttl_redis_fair() {
    ttl_expires_and_renew_extends(common::REDIS_FAIR, Duration::from_secs(2)).await;
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

/// A run's namespace purged: every key under it goes, the fencing counter (no TTL) and a lock
/// still held included; a namespace that only starts the same (`ns` and `nsx`) and one whose
/// name holds glob characters are matched literally.
#[tokio::test]
async fn purging_a_namespace_removes_its_keys_and_only_its() {
    let mut base = config(BackendKind::Redis, "purge");
    base.namespace.push_str("-[a]*");
    let mut other = base.clone();
    other.namespace.push('x');
    let (a, b) = (connected(&base).await, connected(&other).await);
    for client in [&a, &b] {
        let lease = client
            .try_acquire("k", Duration::from_secs(30))
            .await
            .unwrap()
            .expect("a free key");
        assert!(lease.fencing.is_some());
        client.release(&lease).await.unwrap();
        client
            .try_acquire("held", Duration::from_secs(30))
            .await
            .unwrap();
    }
    let keys = |namespace: &str| {
        let out = std::process::Command::new("redis-cli")
            .args([
                "-p",
                "6390",
                "--scan",
                "--pattern",
                &format!("{namespace}*"),
            ])
            .output()
            .unwrap_or_else(|e| server_missing(format!("redis-cli: {e}")));
        let mut keys: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect();
        keys.sort();
        keys
    };
    let literal = |namespace: &str| namespace.replace('[', "\\[").replace('*', "\\*");
    let mine = format!("{}:", literal(&base.namespace));
    let theirs = format!("{}:", literal(&other.namespace));
    // The fencing counters of k and held, and the lock on held.
    assert_eq!(keys(&mine).len(), 3, "{:?}", keys(&mine));
    assert_eq!(keys(&theirs).len(), 3, "{:?}", keys(&theirs));
    a.purge_namespace().await.unwrap();
    assert!(keys(&mine).is_empty(), "{:?}", keys(&mine));
    assert_eq!(keys(&theirs).len(), 3, "the other namespace was touched");
    b.purge_namespace().await.unwrap();
    assert!(keys(&theirs).is_empty());
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

    /// A script the server has never seen is loaded and run again, as `redis::Script` does: the
    /// first call answers NOSCRIPT.
    #[tokio::test]
    async fn a_script_the_server_does_not_know_is_loaded_and_run() {
        use lockbench_locks::backends::redis_connection::Lua;
        let conn = open(&url()).await;
        // Unseen: a new comment per run gives a new hash.
        let script = Lua::new(&format!(
            "return tonumber(ARGV[1]) + #KEYS -- {}",
            lockbench_locks::new_token()
        ));
        for _ in 0..2 {
            let mut call = script.call(1, 2, 16);
            call.arg("k").arg(41);
            assert_eq!(script.invoke::<i64>(&conn, &call).await.unwrap(), 42);
        }
    }

    /// `query` reads a reply as `query_async` does: typed, and a server's error reply is an
    /// error, not a value.
    #[tokio::test]
    async fn a_query_reads_values_and_errors_as_the_crate_does() {
        let conn = open(&url()).await;
        let key = format!("lbtest-{}-query", std::process::id());
        let set: redis::Value = conn
            .query(redis::cmd("SET").arg(&key).arg("v").arg("PX").arg(5000))
            .await
            .unwrap();
        assert_eq!(set, redis::Value::Okay);
        let got: Option<String> = conn.query(redis::cmd("GET").arg(&key)).await.unwrap();
        assert_eq!(got.as_deref(), Some("v"));
        let wrong = conn
            .query::<i64>(redis::cmd("INCR").arg(&key))
            .await
            .unwrap_err();
        assert!(wrong.to_string().contains("not an integer"), "{wrong}");
        // The error left the connection usable.
        let deleted: i64 = conn.query(redis::cmd("DEL").arg(&key)).await.unwrap();
        assert_eq!(deleted, 1);
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

/// The fair queue (`fair = true`): waiters in a Redis list, granted in arrival order, a release
/// waking the next alone (the queue scenarios etcd and ZooKeeper run too), and no try, releaser
/// or newcomer going before a waiter; a waiter that stopped asking loses its place.
mod redis_fair_queue {
    use std::time::{Duration, Instant};

    use lockbench_locks::{BackendConfig, LockBackend};

    use crate::common::queue::{an_ungranted_wait_leaves_nothing, granted_in_order_one_at_a_time};
    use crate::common::{REDIS_FAIR, client, config, connected, finish, server_missing};

    #[tokio::test]
    async fn redis_fair_grants_in_order_one_at_a_time() {
        granted_in_order_one_at_a_time(REDIS_FAIR).await;
    }

    #[tokio::test]
    async fn redis_fair_ungranted_waits_leave_no_waiter() {
        an_ungranted_wait_leaves_nothing(REDIS_FAIR).await;
    }

    /// A plain connection to the server of `c`, to look at the queue's keys from outside.
    async fn outside(c: &BackendConfig) -> ::redis::aio::MultiplexedConnection {
        let url = &c.urls[0];
        ::redis::Client::open(url.as_str())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap_or_else(|e| server_missing(format!("Redis at {url}: {e}")))
    }

    /// Two fair clients of `tag` whose places last 900 ms without renewal, and their config.
    async fn quick_pair(tag: &str) -> (BackendConfig, Box<dyn LockBackend>, Box<dyn LockBackend>) {
        let mut quick = config(REDIS_FAIR, tag);
        quick.waiter_timeout = Duration::from_millis(900);
        let (a, b) = (connected(&quick).await, connected(&quick).await);
        (quick, a, b)
    }

    /// Puts a waiter that will never ask again at the end of `key`'s queue, its place kept for
    /// `for_ms` by the server's clock.
    async fn stranger(tag: &str, key: &str, for_ms: u64) {
        let c = config(REDIS_FAIR, tag);
        let mut conn = outside(&c).await;
        let (seconds, micros): (u64, u64) =
            ::redis::cmd("TIME").query_async(&mut conn).await.unwrap();
        let deadline = seconds * 1000 + micros / 1000 + for_ms;
        let ns = &c.namespace;
        let _: () = ::redis::pipe()
            .cmd("RPUSH")
            .arg(format!("{ns}:queue:{key}"))
            .arg("stranger")
            .ignore()
            .cmd("ZADD")
            .arg(format!("{ns}:queue-deadlines:{key}"))
            .arg(deadline)
            .arg("stranger")
            .ignore()
            .query_async(&mut conn)
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn a_free_lock_goes_to_the_waiters_not_to_a_try() {
        let tag = "fair-try";
        let key = "try";
        let ttl = Duration::from_secs(30);
        let (a, b) = (client(REDIS_FAIR, tag).await, client(REDIS_FAIR, tag).await);
        // A waiter that keeps its place for a minute: the lock is free, the queue is not.
        stranger(tag, key, 60_000).await;
        assert!(
            a.try_acquire(key, ttl).await.unwrap().is_none(),
            "a try took a free lock that a waiter queues for"
        );
        let none = b
            .acquire(key, ttl, Duration::from_millis(200))
            .await
            .unwrap();
        assert!(none.is_none(), "a newcomer went before the waiter");
        a.cleanup(key).await.unwrap();
        let lease = a
            .try_acquire(key, ttl)
            .await
            .unwrap()
            .expect("nobody waits any more");
        assert!(a.release(&lease).await.unwrap());
        finish(a, b, key).await;
    }

    #[tokio::test]
    async fn the_releaser_asking_again_goes_behind_the_waiter() {
        let tag = "fair-releaser";
        let key = "releaser";
        let ttl = Duration::from_secs(30);
        let a = std::sync::Arc::new(client(REDIS_FAIR, tag).await);
        let b = client(REDIS_FAIR, tag).await;
        let held = a.try_acquire(key, ttl).await.unwrap().unwrap();
        let waiter = async {
            let lease = b
                .acquire(key, ttl, Duration::from_secs(10))
                .await
                .unwrap()
                .expect("the waiter is granted");
            tokio::time::sleep(Duration::from_millis(100)).await;
            assert!(b.release(&lease).await.unwrap());
            lease.fencing
        };
        let releaser = async {
            crate::common::queue::until_queued(REDIS_FAIR, tag, key, 2).await;
            assert!(a.release(&held).await.unwrap());
            // Straight back, as a closed loop does: behind b, who was waiting.
            a.acquire(key, ttl, Duration::from_secs(10))
                .await
                .unwrap()
                .expect("then the releaser")
        };
        let (b_fencing, a_lease) = tokio::join!(waiter, releaser);
        assert!(a_lease.fencing > b_fencing, "b was granted first");
        assert!(a.release(&a_lease).await.unwrap());
        let a = std::sync::Arc::try_unwrap(a).ok().unwrap();
        finish(a, b, key).await;
    }

    /// A queue whose waiters all died (a bench or a job killed with -9) expires with their
    /// places: its keys live a waiter timeout past the last renewal, not for good.
    #[tokio::test]
    async fn a_queue_expires_with_its_last_waiter() {
        let tag = "fair-expiry";
        let key = "expiry";
        let ttl = Duration::from_secs(30);
        let (quick, a, b) = quick_pair(tag).await;
        let held = a.try_acquire(key, ttl).await.unwrap().unwrap();
        // b queues, then its wait is never polled nor dropped again, as a process killed with -9
        // stops: no withdrawal runs.
        let mut waiting = Box::pin(b.acquire(key, ttl, Duration::from_secs(10)));
        assert!(
            tokio::time::timeout(Duration::from_millis(100), &mut waiting)
                .await
                .is_err()
        );
        std::mem::forget(waiting);
        let mut conn = outside(&quick).await;
        let queue = format!("{}:queue:{key}", quick.namespace);
        let left: i64 = ::redis::cmd("PTTL")
            .arg(&queue)
            .query_async(&mut conn)
            .await
            .unwrap();
        assert!(
            (1..=900).contains(&left),
            "the queue's keys expire within a waiter timeout: PTTL {left}"
        );
        tokio::time::sleep(Duration::from_millis(1000)).await;
        let exists: i64 = ::redis::cmd("EXISTS")
            .arg(&queue)
            .query_async(&mut conn)
            .await
            .unwrap();
        assert_eq!(exists, 0, "the dead queue is gone");
        assert!(a.release(&held).await.unwrap());
        finish(a, b, key).await;
    }

    #[tokio::test]
    async fn a_waiter_that_stopped_asking_loses_its_place() {
        let tag = "fair-dead";
        let key = "dead";
        let ttl = Duration::from_secs(30);
        let (_, a, b) = quick_pair(tag).await;
        let held = a.try_acquire(key, ttl).await.unwrap().unwrap();
        // Ahead of b: a waiter whose place lasts 400 ms and who never asks again.
        stranger(tag, key, 400).await;
        let started = Instant::now();
        let (granted, ()) = tokio::join!(b.acquire(key, ttl, Duration::from_secs(10)), async {
            assert!(a.release(&held).await.unwrap());
        });
        let lease = granted
            .unwrap()
            .expect("the dead waiter's place ran out and b was next");
        assert!(
            started.elapsed() >= Duration::from_millis(350),
            "b went before a waiter whose place had not run out"
        );
        assert!(b.release(&lease).await.unwrap());
        finish(a, b, key).await;
    }
}
