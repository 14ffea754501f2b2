//! Criterion benches of the simulator's kernel: one draw, and one billing-sized replay.
//!
//! Kept in this crate, not in `bench/`, because `bench/` measures lock backends and must not know
//! about workloads.

use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use lockbench_workloads::latency::Latency;
use lockbench_workloads::sampler::Sampler;
use lockbench_workloads::{
    Engine, JobModel, Shard, SimOptions, WorkloadSpec, replay_rng, simulate,
};
use rand::Rng;
use rand_distr::Distribution;

const THREE_STEP_LOGNORMAL: &str = r#"
[workload]
name = "three-step-lognormal"
volume = 1800

[[steps]]
name = "read"
target = "db"
latency = { dist = "lognormal", p50 = "3ms", p99 = "12ms" }

[[steps]]
name = "charge"
target = "api"
latency = { dist = "lognormal", p50 = "110ms", p99 = "340ms" }

[[steps]]
name = "update"
target = "db"
latency = { dist = "lognormal", p50 = "4ms", p99 = "15ms" }
"#;

fn draws(c: &mut Criterion) {
    let mut group = c.benchmark_group("draw");
    group.throughput(Throughput::Elements(1_000));
    let lognormal = Latency::lognormal(0.110, 0.340);
    let table = Sampler::new(&lognormal, 1.0);
    group.bench_function("table-lognormal-x1000", |b| {
        let mut rng = replay_rng(1, 0);
        b.iter(|| {
            let mut sum = 0.0;
            for _ in 0..1_000 {
                sum += table.sample(&mut rng);
            }
            black_box(sum)
        })
    });
    group.bench_function("rand_distr-lognormal-x1000", |b| {
        // The plain loop the kernel replaces: rand_distr's LogNormal on the same generator.
        let Latency::LogNormal { mu, sigma } = lognormal else {
            unreachable!()
        };
        let plain = rand_distr::LogNormal::new(mu, sigma).unwrap();
        let mut rng = replay_rng(1, 0);
        b.iter(|| {
            let mut sum = 0.0;
            for _ in 0..1_000 {
                sum += plain.sample(&mut rng);
            }
            black_box(sum)
        })
    });
    group.bench_function("exact-quantile-x1000", |b| {
        // What the kernel's exact path costs per draw (0.4 % of draws take it).
        let mut rng = replay_rng(1, 0);
        b.iter(|| {
            let mut sum = 0.0;
            for _ in 0..1_000 {
                let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
                sum += lognormal.quantile(u);
            }
            black_box(sum)
        })
    });
    group.finish();
}

fn replays(c: &mut Criterion) {
    let spec = WorkloadSpec::parse(THREE_STEP_LOGNORMAL, Path::new("bench.toml")).unwrap();
    let model = JobModel::new(&spec, "baseline", 1.0).unwrap();
    let mut group = c.benchmark_group("replay");
    group.throughput(Throughput::Elements(100 * model.samples_per_replay()));
    group.sample_size(20);
    for threads in [1, 2] {
        group.bench_function(
            format!("three-step-1800-items-x100-threads{threads}"),
            |b| {
                let options = SimOptions {
                    replays: 100,
                    seed: 42,
                    threads,
                    thresholds: Vec::new(),
                    shard: Shard::WHOLE,
                    engine: Engine::Exact,
                };
                b.iter(|| black_box(simulate(&model, &options, &|_| {})))
            },
        );
    }
    group.finish();
}

/// The block engine at 100x on every shipped spec's most varied profile (episodes and pauses),
/// against the per-call engine on billing: what issue 34's "a 100x simulation of any shipped spec
/// in under 30 s" rests on. Replays per iteration: 100; a 20,000-replay row is 200 of them.
fn engines(c: &mut Criterion) {
    let mut group = c.benchmark_group("engine");
    group.sample_size(10);
    let rows = [
        ("billing", "gc-pressure", Engine::Blocks),
        ("billing", "gc-pressure", Engine::Exact),
        ("migration", "long-running-transaction", Engine::Blocks),
        ("events", "gc-pressure", Engine::Blocks),
        ("ledger", "gc-pressure", Engine::Blocks),
    ];
    for (name, profile, engine) in rows {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("specs/{name}.toml"));
        let spec = WorkloadSpec::load(&path).unwrap();
        let model = JobModel::new(&spec, profile, 100.0).unwrap();
        group.throughput(Throughput::Elements(100));
        group.bench_function(
            format!("{name}-{profile}-x100-{}-100-replays", engine.name()),
            |b| {
                let options = SimOptions {
                    replays: 100,
                    seed: 42,
                    threads: 2,
                    thresholds: Vec::new(),
                    shard: Shard::WHOLE,
                    engine,
                };
                b.iter(|| black_box(simulate(&model, &options, &|_| {})))
            },
        );
    }
    group.finish();
}

criterion_group!(benches, draws, replays, engines);
criterion_main!(benches);
