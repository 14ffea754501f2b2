//! The Postgres advisory-lock backends against the server `scripts/services.sh up` starts:
//! `pg-session` (a lock held by a session) and `pg-xact` (by a transaction), with Postgres's own
//! lock queue. A missing server fails the test naming it and how to start it; nothing is skipped.

use std::time::Duration;

use lockbench_locks::BackendKind;

mod common;
use common::{backend_tests, client, config, connected, fencing_increases, finish, server_missing};

backend_tests!(pg_session, BackendKind::PgSession);
backend_tests!(pg_xact, BackendKind::PgXact);

#[tokio::test]
async fn fencing_tokens_increase_pg_session() {
    fencing_increases(BackendKind::PgSession).await;
}

#[tokio::test]
async fn fencing_tokens_increase_pg_xact() {
    fencing_increases(BackendKind::PgXact).await;
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
    // The server frees the lock when the closed session's backend process exits, a moment after
    // the client's Terminate: wait for it rather than race it.
    let taken = b
        .acquire(key, Duration::from_secs(30), Duration::from_secs(5))
        .await
        .unwrap()
        .expect("closed session freed the lock");
    assert!(!a.release(&lease).await.unwrap());
    assert!(b.release(&taken).await.unwrap());
    b.cleanup_namespace().await.unwrap();
    b.close().await.unwrap();
}

/// Postgres without fencing tokens: the lock function alone, declared as such, exclusive all
/// the same.
#[tokio::test]
async fn postgres_without_fencing_tokens() {
    for kind in [BackendKind::PgSession, BackendKind::PgXact] {
        let mut plain = config(kind, "plain");
        plain.fencing = false;
        let (a, b) = (connected(&plain).await, connected(&plain).await);
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
            .unwrap_or_else(|e| server_missing(format!("Postgres at {url}: {e}")));
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
