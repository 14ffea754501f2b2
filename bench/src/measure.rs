//! Closed and open loops over connected clients.

use lockbench_core::BackendId;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lockbench_locks::LockBackend;

use crate::cycle::{Cycle, cycle, cycle_alongside};
use crate::{BenchOptions, BenchResult, HandoffClock, KeyMode, LoadMode, Metrics, WaitMode};

/// Keys an open loop spreads arrivals over in [`KeyMode::Many`]: far more than can be in flight,
/// so arrivals rarely share a key.
const OPEN_LOOP_KEYS: u64 = 4096;

/// Measures one backend at one contention level, with one client per contender (closed loop) or a pool of clients that
/// arrivals take in turn (open loop). `progress` is called once per measured acquisition. Returns
/// the result and the keys used, for cleanup.
pub async fn measure(
    backend: BackendId,
    clients: Vec<Arc<dyn LockBackend>>,
    options: &BenchOptions,
    progress: Arc<dyn Fn(u64) + Send + Sync>,
) -> (BenchResult, Vec<String>) {
    // The row counts the run's contenders; a shard may hold none of them at a low level.
    let contenders = match options.stripe.contenders {
        0 => clients.len(),
        n => n,
    };
    // A backend without a queue of its own is polled, and its row says so.
    let mut effective = options.clone();
    if clients
        .first()
        .is_some_and(|c| !c.capabilities().native_wait)
    {
        effective.wait_mode = WaitMode::Poll;
    }
    let options = &effective;
    let started = Instant::now();
    let measure_from = options.start.unwrap_or(started + options.warmup);
    let stop_at = measure_from + options.duration;
    if clients.is_empty() {
        // This shard's share of the level is nobody: it waits the level out with the others.
        tokio::time::sleep_until(tokio::time::Instant::from_std(stop_at)).await;
        return (
            BenchResult::new(
                backend,
                options,
                contenders,
                Metrics::default(),
                options.duration,
            ),
            Vec::new(),
        );
    }
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

async fn closed(
    clients: Vec<Arc<dyn LockBackend>>,
    options: &BenchOptions,
    measure_from: Instant,
    stop_at: Instant,
    progress: Arc<dyn Fn(u64) + Send + Sync>,
) -> (Metrics, Vec<String>, Instant) {
    // Shards start together: nobody loads the server before the common warm-up begins.
    if options.start.is_some() {
        let warm_from = measure_from
            .checked_sub(options.warmup)
            .unwrap_or(measure_from);
        tokio::time::sleep_until(tokio::time::Instant::from_std(warm_from)).await;
    }
    let measured_ops = Arc::new(AtomicU64::new(0));
    // Contenders on one key hand it over to each other; on a key each, nobody waits.
    let clock = (options.keys == KeyMode::One && clients.len() > 1)
        .then(|| Arc::new(HandoffClock::default()));
    let limit = options.ops.unwrap_or(u64::MAX);
    let keys: Vec<String> = (0..clients.len())
        .map(|i| match options.keys {
            KeyMode::One => "bench".to_string(),
            // Run-wide ids: a shard's contender k is contender `stripe.global(k)` of the run.
            KeyMode::Many => format!("bench-{}", options.stripe.global(i)),
        })
        .collect();
    let tasks: Vec<_> = clients
        .into_iter()
        .zip(keys.clone())
        .map(|(client, key)| {
            let (options, measured_ops, clock, progress) = (
                options.clone(),
                measured_ops.clone(),
                clock.clone(),
                progress.clone(),
            );
            tokio::spawn(async move {
                let mut metrics = Metrics::default();
                let mut finished = Instant::now();
                // The client's request count when its first measured cycle began.
                let mut requests_from = None;
                // The last measured cycle, recorded while the next one's acquisition is in
                // flight (see `cycle_alongside`); counted at once, so the limit holds.
                let mut unrecorded: Option<Cycle> = None;
                let record = |metrics: &mut Metrics, c: Cycle| {
                    metrics.add(&c);
                    if c.acquire.is_some() {
                        progress(1);
                    }
                };
                while Instant::now() < stop_at && measured_ops.load(Ordering::Relaxed) < limit {
                    let start = Instant::now();
                    if start >= measure_from && requests_from.is_none() {
                        requests_from = Some(client.requests());
                    }
                    let previous = unrecorded.take();
                    let c = cycle_alongside(
                        client.as_ref(),
                        &key,
                        &options,
                        start,
                        clock.as_deref(),
                        || {
                            if let Some(previous) = previous {
                                record(&mut metrics, previous);
                            }
                        },
                    )
                    .await;
                    finished = Instant::now();
                    let failed = c.error.is_some();
                    if start >= measure_from {
                        if c.acquire.is_some() {
                            measured_ops.fetch_add(1, Ordering::Relaxed);
                        }
                        unrecorded = Some(c);
                    }
                    if failed {
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
                if let Some(last) = unrecorded {
                    record(&mut metrics, last);
                }
                if let Some(Some(from)) = requests_from {
                    metrics.requests = client.requests().map(|n| n - from);
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
    // Shards share one schedule, from the common start less the warm-up.
    let origin = match options.start {
        Some(start) => start.checked_sub(options.warmup).unwrap_or(start),
        None => Instant::now(),
    };
    let metrics = Arc::new(Mutex::new(Metrics::default()));
    let clock = (options.keys == KeyMode::One).then(|| Arc::new(HandoffClock::default()));
    let in_flight = Arc::new(tokio::sync::Semaphore::new(options.max_in_flight));
    let limit = options.ops.unwrap_or(u64::MAX);
    let mut measured_arrivals = 0u64;
    let mut tasks = Vec::new();
    let mut used_keys = 0u64;
    let requests = || -> Option<u64> { clients.iter().map(|c| c.requests()).sum() };
    let mut requests_from = None;
    for i in 0u64.. {
        // Arrivals follow the schedule, not the backend: a slow answer delays nobody's start, and
        // each latency counts from when its request was due.
        let intended = origin + interval.mul_f64(i as f64);
        if intended >= stop_at || measured_arrivals >= limit {
            break;
        }
        if !options.stripe.owns(i) {
            continue;
        }
        let now = Instant::now();
        if intended > now {
            tokio::time::sleep_until(tokio::time::Instant::from_std(intended)).await;
        }
        let measured = intended >= measure_from;
        if measured && requests_from.is_none() {
            requests_from = Some(requests());
        }
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
        let turn = i / options.stripe.count.max(1);
        let client = clients[(turn % clients.len() as u64) as usize].clone();
        let (options, metrics, progress, clock) = (
            options.clone(),
            metrics.clone(),
            progress.clone(),
            clock.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let c = cycle(client.as_ref(), &key, &options, intended, clock.as_deref()).await;
            drop(permit);
            if measured {
                metrics.lock().expect("metrics poisoned").add(&c);
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
    let mut total = Arc::try_unwrap(metrics)
        .map(|m| m.into_inner().expect("metrics poisoned"))
        .unwrap_or_else(|shared| shared.lock().expect("metrics poisoned").clone());
    if let Some(Some(from)) = requests_from {
        // Arrivals before the measured part may still have been in flight: a slight overcount.
        total.requests = requests().map(|n| n - from);
    }
    (total, keys, until)
}
