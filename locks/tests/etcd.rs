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
}
