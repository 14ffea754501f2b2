//! Criterion bench of the rare-event estimator on a model whose tail is known exactly: ten
//! exponential calls (a Gamma(10, 1) runtime) priced at 1e-7 and 1e-9 by subset simulation with
//! the settings docs/PERFORMANCE.md states (5,000 replays a level, 20 repetitions, 2 threads).
//! Each estimate's error against the truth and its model runs are printed once beside the time.

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use lockbench_analysis::rare::{RareOptions, outlived};
use lockbench_workloads::{Engine, JobModel, WorkloadSpec};
use statrs::distribution::{ContinuousCDF, Gamma};

fn gamma_job() -> JobModel {
    let spec = WorkloadSpec::parse(
        r#"
[workload]
name = "ten"
volume = 10

[[steps]]
name = "call"
target = "db"
latency = { dist = "exponential", mean = "1s" }
"#,
        Path::new("rare.toml"),
    )
    .expect("the bench's spec parses");
    JobModel::new(&spec, "baseline", 1.0).expect("the bench's model builds")
}

fn subset_simulation(c: &mut Criterion) {
    let model = gamma_job();
    let law = Gamma::new(10.0, 1.0).expect("Gamma(10, 1)");
    let options = RareOptions {
        samples: 5_000,
        repetitions: 20,
        seed: 1,
        threads: 2,
    };
    let mut group = c.benchmark_group("rare");
    group.sample_size(10);
    for p in [1e-7f64, 1e-9] {
        let ttl = Duration::from_secs_f64(law.inverse_cdf(1.0 - p));
        let once = outlived(&model, Engine::Exact, ttl, &options);
        eprintln!(
            "gamma10 at {p:e}: estimate {:.3e} ({:+.1} %), 95 % interval {:.3e} to {:.3e}, {} model runs",
            once.p,
            (once.p / p - 1.0) * 100.0,
            once.lower,
            once.upper,
            once.runs
        );
        group.bench_function(format!("gamma10-{p:e}"), |b| {
            b.iter(|| black_box(outlived(&model, Engine::Exact, black_box(ttl), &options)))
        });
    }
    group.finish();
}

criterion_group!(benches, subset_simulation);
criterion_main!(benches);
