//! The ZooKeeper backend against the server `scripts/services.sh up` starts: the contract, a lock
//! that dies with its session, and its queue (Curator's recipe). A missing server fails the test
//! naming it and how to start it; nothing is skipped.

use std::time::Duration;

use lockbench_locks::backends::zookeeper::ZkLock;
use lockbench_locks::{BackendKind, LockBackend};

mod common;
use common::{backend_tests, client, config, fencing_increases, server_missing};

backend_tests!(zookeeper, BackendKind::Zookeeper);

#[tokio::test]
async fn fencing_tokens_increase_zookeeper() {
    fencing_increases(BackendKind::Zookeeper).await;
}

/// ZooKeeper's TTL is the session timeout: a holder whose session stops (a crashed process with a
/// detached session) loses its ephemeral node when the session expires.
#[tokio::test]
async fn zookeeper_lock_expires_with_its_session() {
    let key = "session-expiry";
    let mut short = config(BackendKind::Zookeeper, "expiry");
    short.session_timeout = Duration::from_secs(4);
    let crashed = ZkLock::connect_with(&short, true)
        .await
        .unwrap_or_else(|e| server_missing(e));
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

/// ZooKeeper's queue: see `common/queue.rs`.
mod queue_wait {
    use lockbench_locks::BackendKind;

    use crate::common::queue::{an_ungranted_wait_leaves_nothing, granted_in_order_one_at_a_time};

    #[tokio::test]
    async fn zookeeper_grants_in_order_one_at_a_time() {
        granted_in_order_one_at_a_time(BackendKind::Zookeeper).await;
    }

    #[tokio::test]
    async fn zookeeper_ungranted_waits_leave_no_node() {
        an_ungranted_wait_leaves_nothing(BackendKind::Zookeeper).await;
    }
}
