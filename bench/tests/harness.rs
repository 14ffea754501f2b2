//! The harness against the in-process memory backend and a real Redis: bounds are honoured,
//! contention shows up, and the open loop counts latency from the intended start.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use lockbench_bench::{BenchOptions, KeyMode, LoadMode, run};
use lockbench_locks::{BackendConfig, BackendKind, LockBackend, connect, parse_config};

async fn clients(kind: BackendKind, n: usize, namespace: &str) -> Vec<Arc<dyn LockBackend>> {
    let mut config = parse_config(include_str!("../../lockbench.toml"))
        .unwrap()
        .into_iter()
        .find(|c| c.kind == kind)
        .unwrap_or_else(|| BackendConfig::new(kind, vec![], namespace));
    config.namespace = format!("{namespace}-{}", std::process::id());
    let mut out: Vec<Arc<dyn LockBackend>> = Vec::new();
    for _ in 0..n {
        out.push(Arc::from(
            connect(&config).await.unwrap_or_else(|e| panic!("{e}")),
        ));
    }
    out
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
    let (result, keys) = run(
        "memory",
        clients(BackendKind::Memory, 2, "ops").await,
        &quick(Some(5_000)),
        Arc::new(move |n| {
            seen.fetch_add(n, Ordering::Relaxed);
        }),
    )
    .await;
    // Contenders may finish the cycle they were in when the limit was reached.
    assert!((5_000..5_010).contains(&result.ops), "ops {}", result.ops);
    assert_eq!(progress.load(Ordering::Relaxed), result.ops);
    assert_eq!(result.errors, 0);
    assert_eq!(result.acquire_us.count, result.ops);
    assert_eq!(result.release_us.count, result.ops);
    assert_eq!(result.renew_us.count, result.ops);
    assert_eq!(keys, vec!["bench".to_string()]);
}

#[tokio::test]
async fn contention_on_one_key_shows_failed_tries_and_handoffs() {
    let options = BenchOptions {
        hold: Duration::from_millis(2),
        ..quick(Some(200))
    };
    let (result, _) = run(
        "memory",
        clients(BackendKind::Memory, 4, "contention").await,
        &options,
        Arc::new(|_| {}),
    )
    .await;
    assert!(
        result.try_fail_rate > 0.1,
        "try fail rate {}",
        result.try_fail_rate
    );
    assert!(result.handoff_us.count > 0);
    // Waiting for a 2 ms hold shows in the acquire tail.
    assert!(
        result.acquire_us.p99 > 1_000.0,
        "acquire p99 {} us",
        result.acquire_us.p99
    );
}

#[tokio::test]
async fn many_keys_do_not_contend() {
    let options = BenchOptions {
        keys: KeyMode::Many,
        ..quick(Some(2_000))
    };
    let (result, keys) = run(
        "memory",
        clients(BackendKind::Memory, 4, "many").await,
        &options,
        Arc::new(|_| {}),
    )
    .await;
    assert_eq!(result.try_fail_rate, 0.0);
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
    let (result, _) = run(
        "memory",
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
        result.acquire_us.p99 > 100_000.0,
        "p99 {} us",
        result.acquire_us.p99
    );
    assert!(
        result.ops + result.gave_up + result.errors >= 290,
        "{result:?}"
    );
}

#[tokio::test]
async fn measures_a_real_redis() {
    let clients = clients(BackendKind::Redis, 2, "bench-redis").await;
    let (result, keys) = run(
        "redis",
        clients.clone(),
        &quick(Some(300)),
        Arc::new(|_| {}),
    )
    .await;
    assert!(result.ops >= 300);
    assert_eq!(result.errors, 0);
    assert!(
        result.acquire_us.p50 > 1.0,
        "a network round trip takes more than a microsecond"
    );
    for key in &keys {
        clients[0].cleanup(key).await.unwrap();
    }
    clients[0].cleanup_namespace().await.unwrap();
}
