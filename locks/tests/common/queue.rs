//! The queues of ZooKeeper (Curator's recipe: a waiter's node stays and watches its predecessor)
//! and etcd (`concurrency.Mutex`: a waiter's key stays under the lock's prefix and watches the key
//! just below it): waiters are granted in order and a release wakes only the next one.

use std::sync::Arc;
use std::time::Duration;

use lockbench_locks::{BackendKind, LockBackend};

use super::{Target, client, config, finish, server_missing};

/// The entries queued for `key` (holder and waiters), as the server lists them.
pub async fn queued(target: impl Into<Target>, tag: &str, key: &str) -> usize {
    let target: Target = target.into();
    let config = config(target, tag);
    match target.kind {
        BackendKind::Zookeeper => {
            let url = config.urls.join(",");
            let zk = zookeeper_client::Client::connect(&url)
                .await
                .unwrap_or_else(|e| server_missing(format!("ZooKeeper at {url}: {e}")));
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
                .unwrap_or_else(|e| server_missing(format!("etcd at {:?}: {e}", config.urls)));
            let prefix = format!("/{}/locks/{key}/", config.namespace);
            let only_count = etcd_client::GetOptions::new()
                .with_prefix()
                .with_count_only();
            etcd.get(prefix, Some(only_count)).await.unwrap().count() as usize
        }
        // The holder (the lock's key) and the waiters in the fair queue's list.
        BackendKind::Redis if target.fair => {
            let url = &config.urls[0];
            let mut conn = redis::Client::open(url.as_str())
                .unwrap()
                .get_multiplexed_async_connection()
                .await
                .unwrap_or_else(|e| server_missing(format!("Redis at {url}: {e}")));
            let ns = &config.namespace;
            let (held, waiting): (usize, usize) = redis::pipe()
                .cmd("EXISTS")
                .arg(format!("{ns}:lock:{key}"))
                .cmd("LLEN")
                .arg(format!("{ns}:queue:{key}"))
                .query_async(&mut conn)
                .await
                .unwrap();
            held + waiting
        }
        other => panic!("{} has no queue to list", other.name()),
    }
}

pub async fn until_queued(kind: impl Into<Target>, tag: &str, key: &str, n: usize) {
    let kind: Target = kind.into();
    for _ in 0..200 {
        if queued(kind, tag, key).await == n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{}: {n} entries never queued under {key}", kind.name());
}

pub async fn granted_in_order_one_at_a_time(kind: impl Into<Target>) {
    let kind: Target = kind.into();
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
pub async fn an_ungranted_wait_leaves_nothing(kind: impl Into<Target>) {
    let kind: Target = kind.into();
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
