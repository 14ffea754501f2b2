//! The etcd backend against the server `scripts/services.sh up` starts: the contract, its lease
//! TTL and heartbeat, and its queue (`concurrency.Mutex`). A missing server fails the test naming
//! it and how to start it; nothing is skipped.

use std::time::Duration;

use lockbench_locks::BackendKind;

mod common;
use common::{
    backend_tests, fencing_increases, heartbeat_keeps_a_short_lease, ttl_expires_and_renew_extends,
};

backend_tests!(etcd, BackendKind::Etcd);

#[tokio::test]
async fn fencing_tokens_increase_etcd() {
    fencing_increases(BackendKind::Etcd).await;
}

#[tokio::test]
async fn ttl_etcd() {
    ttl_expires_and_renew_extends(BackendKind::Etcd, Duration::from_secs(3)).await;
}

#[tokio::test]
async fn heartbeat_etcd() {
    heartbeat_keeps_a_short_lease(BackendKind::Etcd, Duration::from_secs(3)).await;
}

/// etcd's queue: see `common/queue.rs`.
mod queue_wait {
    use lockbench_locks::BackendKind;

    use crate::common::queue::{an_ungranted_wait_leaves_nothing, granted_in_order_one_at_a_time};

    #[tokio::test]
    async fn etcd_grants_in_order_one_at_a_time() {
        granted_in_order_one_at_a_time(BackendKind::Etcd).await;
    }

    #[tokio::test]
    async fn etcd_ungranted_waits_leave_no_key() {
        an_ungranted_wait_leaves_nothing(BackendKind::Etcd).await;
    }

    /// A client keeps its watch of a lock's queue for its next waits: a watch opened per wait can
    /// land in etcd's unsynced group, served every 100 ms, when a write commits meanwhile.
    #[tokio::test]
    async fn a_clients_waits_share_one_watch() {
        use std::time::Duration;

        use crate::common::queue::until_queued;
        use crate::common::{client, finish};

        let tag = "queue-watch";
        let key = "watch";
        let ttl = Duration::from_secs(30);
        let (a, b) = (
            client(BackendKind::Etcd, tag).await,
            client(BackendKind::Etcd, tag).await,
        );
        // The requests of one wait behind a holder that releases once b waits: b queued, and
        // `waiting` requests sent (lease, put-and-read, the first its watch, the read below).
        // Released as soon as b's key shows, the holder could be gone before b's read below,
        // which then grants at once with a request fewer.
        let (ra, rb) = (&a, &b);
        let wait = move |waiting: u64| async move {
            let (a, b) = (ra, rb);
            let held = a.try_acquire(key, ttl).await.unwrap().expect("free lock");
            let before = b.requests().unwrap();
            let (granted, ()) = tokio::join!(b.acquire(key, ttl, Duration::from_secs(10)), async {
                until_queued(BackendKind::Etcd, tag, key, 2).await;
                for _ in 0..500 {
                    if b.requests().unwrap() - before >= waiting {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
                // The read below is counted as it is sent: let its answer arrive.
                tokio::time::sleep(Duration::from_millis(50)).await;
                assert!(a.release(&held).await.unwrap());
            });
            let used = b.requests().unwrap() - before;
            assert!(
                b.release(&granted.unwrap().expect("granted"))
                    .await
                    .unwrap()
            );
            used
        };
        let first = wait(4).await;
        let second = wait(3).await;
        // Lease, put-and-read, read below, read below after the deletion; the first also watches.
        assert_eq!((first, second), (5, 4));
        finish(a, b, key).await;
    }
}
