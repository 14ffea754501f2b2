//! Closed and open loops over connected clients.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lockbench_locks::LockBackend;

use crate::{BenchOptions, BenchResult, KeyMode, LoadMode, Metrics, WaitMode, cycle};

/// Keys an open loop spreads arrivals over in [`KeyMode::Many`]: far more than can be in flight,
/// so arrivals rarely share a key.
const OPEN_LOOP_KEYS: u64 = 4096;

/// Measures one backend at one contention level, with one client per contender (closed loop) or a pool of clients that
/// arrivals take in turn (open loop). `progress` is called once per measured acquisition. Returns
/// the result and the keys used, for cleanup.
pub async fn measure(
    backend: &str,
    clients: Vec<Arc<dyn LockBackend>>,
    options: &BenchOptions,
    progress: Arc<dyn Fn(u64) + Send + Sync>,
) -> (BenchResult, Vec<String>) {
    assert!(!clients.is_empty(), "at least one client");
    let contenders = clients.len();
    // A backend without a queue of its own is polled, and its row says so.
    let mut effective = options.clone();
    if !clients[0].capabilities().native_wait {
        effective.wait_mode = WaitMode::Poll;
    }
    let options = &effective;
    let started = Instant::now();
    let measure_from = started + options.warmup;
    let stop_at = measure_from + options.duration;
    let (metrics, keys, measured_until) = match options.mode {
        LoadMode::Closed => closed(clients, options, measure_from, stop_at, progress).await,
        LoadMode::Open { rate_per_s } => {
            open(
                clients,
                options,
                rate_per_s,
                measure_from,
                stop_at,
                progress,
            )
            .await
        }
    };
    let measured = measured_until.saturating_duration_since(measure_from);
    (
        BenchResult::new(backend, options, contenders, metrics, measured),
        keys,
    )
}

/// Nanoseconds since `origin`, for sharing an instant through an atomic (0 = never).
fn since(origin: Instant, at: Instant) -> u64 {
    at.saturating_duration_since(origin).as_nanos() as u64 + 1
}

async fn closed(
    clients: Vec<Arc<dyn LockBackend>>,
    options: &BenchOptions,
    measure_from: Instant,
    stop_at: Instant,
    progress: Arc<dyn Fn(u64) + Send + Sync>,
) -> (Metrics, Vec<String>, Instant) {
    let origin = Instant::now();
    let measured_ops = Arc::new(AtomicU64::new(0));
    let last_release = Arc::new(AtomicU64::new(0));
    let limit = options.ops.unwrap_or(u64::MAX);
    let keys: Vec<String> = (0..clients.len())
        .map(|i| match options.keys {
            KeyMode::One => "bench".to_string(),
            KeyMode::Many => format!("bench-{i}"),
        })
        .collect();
    let tasks: Vec<_> = clients
        .into_iter()
        .zip(keys.clone())
        .map(|(client, key)| {
            let (options, measured_ops, last_release, progress) = (
                options.clone(),
                measured_ops.clone(),
                last_release.clone(),
                progress.clone(),
            );
            tokio::spawn(async move {
                let mut metrics = Metrics::default();
                let mut finished = Instant::now();
                while Instant::now() < stop_at && measured_ops.load(Ordering::Relaxed) < limit {
                    let start = Instant::now();
                    let c = cycle(client.as_ref(), &key, &options, start).await;
                    // On one key nobody else can release between our grant and our release, so
                    // the latest release now is the one that handed the lock to us.
                    let released_before = match last_release.load(Ordering::Acquire) {
                        0 => None,
                        ns => Some(origin + Duration::from_nanos(ns - 1)),
                    };
                    if let Some(at) = c.released_at {
                        last_release.store(since(origin, at), Ordering::Release);
                    }
                    finished = Instant::now();
                    if start >= measure_from {
                        metrics.add(&c, released_before);
                        if c.acquire.is_some() {
                            measured_ops.fetch_add(1, Ordering::Relaxed);
                            progress(1);
                        }
                    }
                    if c.error.is_some() {
                        // A failing server must not be hammered in a tight loop.
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    } else {
                        // Backends that never wait (memory) would otherwise keep the thread and
                        // starve the other contenders. Not a yield per cycle: each would cost an
                        // extra epoll_wait (tokio polls the driver before resuming a yielded
                        // task), so the task yields only once its cooperative budget is spent.
                        tokio::task::coop::consume_budget().await;
                    }
                }
                (metrics, finished)
            })
        })
        .collect();
    let mut total = Metrics::default();
    let mut until = measure_from;
    for task in futures::future::join_all(tasks).await {
        match task {
            Ok((m, finished)) => {
                total.merge(&m);
                total.contender_grants.push(m.acquire.count());
                until = until.max(finished.min(stop_at).max(measure_from));
            }
            Err(e) => total.error(format!("contender task failed: {e}")),
        }
    }
    let mut keys = keys;
    keys.dedup();
    (total, keys, until)
}

async fn open(
    clients: Vec<Arc<dyn LockBackend>>,
    options: &BenchOptions,
    rate_per_s: f64,
    measure_from: Instant,
    stop_at: Instant,
    progress: Arc<dyn Fn(u64) + Send + Sync>,
) -> (Metrics, Vec<String>, Instant) {
    let interval = Duration::from_secs_f64(1.0 / rate_per_s);
    let origin = Instant::now();
    let metrics = Arc::new(Mutex::new(Metrics::default()));
    let in_flight = Arc::new(tokio::sync::Semaphore::new(options.max_in_flight));
    let limit = options.ops.unwrap_or(u64::MAX);
    let mut measured_arrivals = 0u64;
    let mut tasks = Vec::new();
    let mut used_keys = 0u64;
    for i in 0u64.. {
        // Arrivals follow the schedule, not the backend: a slow answer delays nobody's start, and
        // each latency counts from when its request was due.
        let intended = origin + interval.mul_f64(i as f64);
        if intended >= stop_at || measured_arrivals >= limit {
            break;
        }
        let now = Instant::now();
        if intended > now {
            tokio::time::sleep_until(tokio::time::Instant::from_std(intended)).await;
        }
        let measured = intended >= measure_from;
        measured_arrivals += u64::from(measured);
        let Ok(permit) = in_flight.clone().try_acquire_owned() else {
            if measured {
                metrics
                    .lock()
                    .expect("metrics poisoned")
                    .error(format!("more than {} acquisitions in flight: the backend cannot keep up with {rate_per_s}/s", options.max_in_flight));
            }
            continue;
        };
        let key = match options.keys {
            KeyMode::One => "bench".to_string(),
            KeyMode::Many => format!("bench-{}", i % OPEN_LOOP_KEYS),
        };
        used_keys = used_keys.max(i + 1);
        let client = clients[(i % clients.len() as u64) as usize].clone();
        let (options, metrics, progress) = (options.clone(), metrics.clone(), progress.clone());
        tasks.push(tokio::spawn(async move {
            let c = cycle(client.as_ref(), &key, &options, intended).await;
            drop(permit);
            if measured {
                metrics.lock().expect("metrics poisoned").add(&c, None);
                if c.acquire.is_some() {
                    progress(1);
                }
            }
        }));
    }
    futures::future::join_all(tasks).await;
    let until = Instant::now().min(stop_at);
    let keys = match options.keys {
        KeyMode::One => vec!["bench".to_string()],
        KeyMode::Many => (0..used_keys.min(OPEN_LOOP_KEYS))
            .map(|i| format!("bench-{i}"))
            .collect(),
    };
    let total = Arc::try_unwrap(metrics)
        .map(|m| m.into_inner().expect("metrics poisoned"))
        .unwrap_or_else(|shared| shared.lock().expect("metrics poisoned").clone());
    (total, keys, until)
}
