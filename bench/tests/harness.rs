//! The harness against the in-process memory backend and a real Redis: bounds are honoured,
//! contention shows up, and the open loop counts latency from the intended start.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use lockbench_bench::{BenchOptions, KeyMode, LoadMode, measure};
use lockbench_core::BackendId;
use lockbench_locks::{BackendConfig, BackendKind, LockBackend, connect, parse_config};

async fn clients(kind: BackendKind, n: usize, namespace: &str) -> Vec<Arc<dyn LockBackend>> {
    named_clients(kind.name(), n, namespace).await
}

/// [`clients`] of a backend as `--backend` names it (`redis-fair` among them).
async fn named_clients(name: &str, n: usize, namespace: &str) -> Vec<Arc<dyn LockBackend>> {
    let configs = parse_config(include_str!("../../lockbench.toml")).unwrap();
    let mut config = BackendConfig::select(&configs, name)
        .expect("a backend's name")
        .unwrap_or_else(|| {
            BackendConfig::new(BackendKind::parse(name).unwrap(), vec![], namespace)
        });
    config.namespace = format!("{namespace}-{}", std::process::id());
    let mut out: Vec<Arc<dyn LockBackend>> = Vec::new();
    for _ in 0..n {
        out.push(Arc::from(
            connect(&config).await.unwrap_or_else(|e| panic!("{e}")),
        ));
    }
    out
}

/// Removes what a measurement left on the server and closes every client.
async fn tidy(pool: &[Arc<dyn LockBackend>], keys: Vec<String>) {
    for key in keys {
        pool[0].cleanup(&key).await.unwrap();
    }
    pool[0].cleanup_namespace().await.unwrap();
    for c in pool {
        c.close().await.unwrap();
    }
}

fn quick(ops: Option<u64>) -> BenchOptions {
    BenchOptions {
        ops,
        duration: Duration::from_secs(2),
        warmup: Duration::ZERO,
        ..BenchOptions::default()
    }
}

#[tokio::test]
async fn closed_loop_stops_at_the_operation_count() {
    let progress = Arc::new(AtomicU64::new(0));
    let seen = progress.clone();
    let (result, keys) = measure(
        BackendId::of(BackendKind::Memory),
        clients(BackendKind::Memory, 2, "ops").await,
        &quick(Some(5_000)),
        Arc::new(move |n| {
            seen.fetch_add(n, Ordering::Relaxed);
        }),
    )
    .await;
    // Contenders may finish the cycle they were in when the limit was reached.
    assert!(
        (5_000..5_010).contains(&result.row.ops),
        "ops {}",
        result.row.ops
    );
    assert_eq!(progress.load(Ordering::Relaxed), result.row.ops);
    assert_eq!(result.row.errors, 0);
    assert_eq!(result.row.acquire_us.count, result.row.ops);
    assert_eq!(result.row.release_us.count, result.row.ops);
    assert_eq!(result.row.renew_us.count, result.row.ops);
    assert_eq!(keys, vec!["bench".to_string()]);
}

#[tokio::test]
async fn contention_on_one_key_shows_failed_tries_and_handoffs() {
    let options = BenchOptions {
        hold: Duration::from_millis(2),
        ..quick(Some(200))
    };
    let (result, _) = measure(
        BackendId::of(BackendKind::Memory),
        clients(BackendKind::Memory, 4, "contention").await,
        &options,
        Arc::new(|_| {}),
    )
    .await;
    assert!(
        result.row.try_fail_rate > 0.1,
        "try fail rate {}",
        result.row.try_fail_rate
    );
    assert!(result.row.handoff_us.count > 0);
    // Waiting for a 2 ms hold shows in the acquire tail.
    assert!(
        result.row.acquire_us.p99 > 1_000.0,
        "acquire p99 {} us",
        result.row.acquire_us.p99
    );
}

#[tokio::test]
async fn many_keys_do_not_contend() {
    let options = BenchOptions {
        keys: KeyMode::Many,
        ..quick(Some(2_000))
    };
    let (result, keys) = measure(
        BackendId::of(BackendKind::Memory),
        clients(BackendKind::Memory, 4, "many").await,
        &options,
        Arc::new(|_| {}),
    )
    .await;
    assert_eq!(result.row.try_fail_rate, 0.0);
    assert_eq!(keys.len(), 4);
}

/// A backend that answers in 1 ms cannot serve 4,000 arrivals a second one at a time: in an open
/// loop the queue shows in the latency, measured from when each request was due.
#[tokio::test]
async fn open_loop_counts_from_the_intended_start() {
    let options = BenchOptions {
        mode: LoadMode::Open { rate_per_s: 500.0 },
        keys: KeyMode::One,
        hold: Duration::from_millis(5),
        renew: false,
        duration: Duration::from_millis(600),
        ..quick(None)
    };
    let started = Instant::now();
    let (result, _) = measure(
        BackendId::of(BackendKind::Memory),
        clients(BackendKind::Memory, 1, "open").await,
        &options,
        Arc::new(|_| {}),
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "bounded in time"
    );
    // 300 arrivals, each holding the one key for 5 ms: at most 200 per second get through, so
    // later arrivals wait longer and longer behind the schedule.
    assert!(
        result.row.acquire_us.p99 > 100_000.0,
        "p99 {} us",
        result.row.acquire_us.p99
    );
    assert!(
        result.row.ops + result.row.gave_up + result.row.errors >= 290,
        "{result:?}"
    );
}

#[tokio::test]
async fn measures_a_real_redis() {
    let clients = clients(BackendKind::Redis, 2, "bench-redis").await;
    let (result, keys) = measure(
        BackendId::of(BackendKind::Redis),
        clients.clone(),
        &quick(Some(300)),
        Arc::new(|_| {}),
    )
    .await;
    assert!(result.row.ops >= 300);
    assert_eq!(result.row.errors, 0);
    assert!(
        result.row.acquire_us.p50 > 1.0,
        "a network round trip takes more than a microsecond"
    );
    for key in &keys {
        clients[0].cleanup(key).await.unwrap();
    }
    clients[0].cleanup_namespace().await.unwrap();
}

/// A server that dies mid-run: every operation is bounded by its timeout, so the run still ends
/// on time, with the failures counted rather than hung on.
#[tokio::test]
async fn a_server_that_dies_mid_run_does_not_hang_the_run() {
    let port = 20_000 + std::process::id() % 10_000;
    let dir = std::env::temp_dir().join(format!("lockbench-dying-redis-{port}"));
    std::fs::create_dir_all(&dir).unwrap();
    let mut server = std::process::Command::new("redis-server")
        .args([
            "--bind",
            "127.0.0.1",
            "--port",
            &port.to_string(),
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .arg("--dir")
        .arg(&dir)
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("redis-server is missing: run scripts/services.sh up, which installs it");
    let mut config = BackendConfig::new(
        BackendKind::Redis,
        vec![format!("redis://127.0.0.1:{port}")],
        "dying",
    );
    config.operation_timeout = Duration::from_millis(300);
    let mut connected = None;
    for _ in 0..50 {
        if let Ok(c) = connect(&config).await {
            connected = Some(c);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let client: Arc<dyn LockBackend> = Arc::from(connected.expect("private redis-server started"));
    let options = BenchOptions {
        duration: Duration::from_secs(2),
        warmup: Duration::ZERO,
        ..BenchOptions::default()
    };
    let started = Instant::now();
    let run = tokio::spawn(async move {
        measure(
            BackendId::of(BackendKind::Redis),
            vec![client],
            &options,
            Arc::new(|_| {}),
        )
        .await
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    server.kill().unwrap();
    server.wait().unwrap();
    let (result, _) = run.await.unwrap();
    let elapsed = started.elapsed();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(elapsed < Duration::from_secs(4), "run took {elapsed:?}");
    assert!(result.row.ops > 0, "measured before the server died");
    assert!(result.row.errors > 0, "failures after it died are counted");
    assert!(result.row.first_error.is_some());
}

/// pg-session contenders wait in Postgres's queue: the row says native, the contenders hand the
/// lock to each other (handoffs measured), nobody gives up, the shares are fair, and each grant
/// costs its three requests (queued lock, renew, release) and each session one `SET lock_timeout`
/// at its first wait; with `--wait-mode poll` the
/// same backend polls, says so, and pays for its failed tries.
#[tokio::test]
async fn postgres_contenders_wait_in_the_servers_queue() {
    use lockbench_bench::WaitMode;
    use lockbench_core::records::bench::WaitKind;
    for (mode, expected) in [
        (WaitMode::Native, WaitKind::Native),
        (WaitMode::Poll, WaitKind::Poll),
    ] {
        let options = BenchOptions {
            wait_mode: mode,
            ..quick(Some(400))
        };
        let pool = clients(BackendKind::PgSession, 4, "native").await;
        let (result, keys) = measure(
            BackendId::of(BackendKind::PgSession),
            pool.clone(),
            &options,
            Arc::new(|_| {}),
        )
        .await;
        let row = &result.row;
        assert_eq!(row.wait_mode, expected);
        assert_eq!(row.errors, 0, "{:?}", row.first_error);
        assert_eq!(row.gave_up, 0);
        assert!(row.ops >= 400, "ops {}", row.ops);
        assert!(row.handoff_us.count > 0, "handoffs measured");
        let per_grant = row
            .requests_per_grant
            .expect("Postgres counts its requests");
        match mode {
            WaitMode::Native => {
                // No try ever fails; each session sets its lock_timeout once, at its first wait.
                let once = pool.len() as f64 / row.ops as f64;
                assert!(
                    per_grant >= 3.0 && per_grant <= 3.0 + once + 0.005,
                    "queued: three requests per grant and one per session, got {per_grant}"
                );
            }
            WaitMode::Poll => {
                assert!(row.try_fail_rate > 0.0, "the contenders contended");
                assert!(
                    per_grant > 3.0,
                    "failed tries are requests too: {per_grant}"
                );
            }
        }
        let fairness = row
            .fairness_jain
            .expect("four contenders have a fairness index");
        assert!((0.25..=1.0).contains(&fairness), "fairness {fairness}");
        tidy(&pool, keys).await;
    }
}

/// A backend without a queue of its own is polled even when native waiting is asked for, and its
/// row says so: a figure is never labelled with a wait it did not use.
#[tokio::test]
async fn a_backend_without_a_queue_is_polled_and_says_so() {
    let (result, _) = measure(
        BackendId::of(BackendKind::Memory),
        clients(BackendKind::Memory, 2, "noqueue").await,
        &quick(Some(1_000)),
        Arc::new(|_| {}),
    )
    .await;
    assert_eq!(
        result.row.wait_mode,
        lockbench_core::records::bench::WaitKind::Poll
    );
}

/// A queue wakes one waiter per release: the herd cost of a grant stays what one waiter's own
/// requests cost however many wait. ZooKeeper: create, list, watch, list again, renew (read),
/// release (read, delete): 7 at most. etcd: lease, put-and-read, read below, read below again
/// once the one below is deleted (a client's watch of the queue is opened once, not per wait),
/// renew, release: 6 at most. Redis's fair queue: ask (queued), ask again when woken, renew,
/// release: 4 at most (each client's subscription is opened once). A herd (every waiter woken
/// by every release) would add a listing or an ask per waiter per grant.
#[tokio::test]
async fn queues_wake_one_waiter_per_release() {
    use lockbench_bench::WaitMode;
    for (name, most) in [("zookeeper", 7.0), ("etcd", 6.0), ("redis-fair", 4.0)] {
        let options = BenchOptions {
            wait_mode: WaitMode::Native,
            ..quick(Some(150))
        };
        let pool = named_clients(name, 6, "herd").await;
        let (result, keys) = measure(
            BackendId::parse(name).unwrap(),
            pool.clone(),
            &options,
            Arc::new(|_| {}),
        )
        .await;
        let row = &result.row;
        assert_eq!(row.errors, 0, "{name}: {:?}", row.first_error);
        assert!(row.handoff_us.count > 0, "{name}: the contenders waited");
        let per_grant = row.requests_per_grant.expect("counted");
        // A listing that finds its predecessor gone already costs one more pass, rarely.
        assert!(
            per_grant <= most + 0.5,
            "{name}: {per_grant} requests per grant at 6 contenders (at most {most} without a herd)"
        );
        tidy(&pool, keys).await;
    }
}

/// The in-process baseline has no server to count requests to.
#[tokio::test]
async fn memory_has_no_requests_to_count() {
    let (result, _) = measure(
        BackendId::of(BackendKind::Memory),
        clients(BackendKind::Memory, 1, "norequests").await,
        &quick(Some(100)),
        Arc::new(|_| {}),
    )
    .await;
    assert_eq!(result.row.requests_per_grant, None);
}
