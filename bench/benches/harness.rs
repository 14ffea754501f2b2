//! Criterion benches of the harness's hot paths: recording a latency, merging metrics, and a
//! whole cycle on the in-process memory backend (the floor every real backend is read against).

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use lockbench_bench::{BenchOptions, Metrics, cycle};
use lockbench_core::RuntimeHistogram;
use lockbench_locks::backends::memory::MemoryLock;
use lockbench_locks::{BackendConfig, BackendKind, LockBackend};

fn recording(c: &mut Criterion) {
    let mut h = RuntimeHistogram::for_latency();
    let mut ns = 20_000u64;
    c.bench_function("record-latency", |b| {
        b.iter(|| {
            ns = ns.wrapping_mul(6364136223846793005).wrapping_add(1) % 1_000_000 + 1_000;
            h.record_ns(black_box(ns));
        })
    });
    let mut other = Metrics::default();
    for i in 0..10_000u64 {
        other.acquire.record_ns(20_000 + i);
    }
    c.bench_function("merge-metrics", |b| {
        b.iter(|| {
            let mut m = Metrics::default();
            m.merge(black_box(&other));
            black_box(m)
        })
    });
}

fn memory_cycle(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let backend = MemoryLock::new(&BackendConfig::new(
        BackendKind::Memory,
        vec![],
        "criterion",
    ));
    let options = BenchOptions {
        renew: true,
        ..BenchOptions::default()
    };
    c.bench_function("memory-cycle-acquire-renew-release", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let c = cycle(
                    &backend as &dyn LockBackend,
                    "k",
                    &options,
                    Instant::now(),
                    None,
                )
                .await;
                black_box(c.acquire.unwrap_or(Duration::ZERO))
            })
        })
    });
}

criterion_group!(benches, recording, memory_cycle);
criterion_main!(benches);
