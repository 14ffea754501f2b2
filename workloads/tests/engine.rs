//! Analytic checks of the simulator: cases whose runtime distribution is known exactly.

use std::path::Path;
use std::time::Duration;

use lockbench_core::RuntimeHistogram;
use lockbench_workloads::{Engine, JobModel, Shard, SimOptions, WorkloadSpec, simulate};
use statrs::distribution::{ContinuousCDF, Gamma};

/// Every check holds for both engines: the block engine ([`Engine::Blocks`]) and the per-call
/// reference ([`Engine::Exact`]).
fn run(
    engine: Engine,
    spec_text: &str,
    profile: &str,
    replays: u64,
    threads: usize,
) -> RuntimeHistogram {
    let spec = WorkloadSpec::parse(spec_text, Path::new("test.toml")).expect("valid spec");
    let model = JobModel::new(&spec, profile, 1.0).expect("profile exists");
    let options = SimOptions {
        replays,
        seed: 20261130,
        threads,
        thresholds: Vec::new(),
        shard: Shard::WHOLE,
        engine,
    };
    simulate(&model, &options, &|_| {})
}

fn steps(n: usize, latency: &str) -> String {
    (0..n)
        .map(|i| format!("[[steps]]\nname = \"s{i}\"\ntarget = \"db\"\nlatency = {latency}\n\n"))
        .collect()
}

#[test]
fn constant_latencies_give_an_exact_runtime() {
    let spec = format!(
        "[workload]\nname = \"c\"\nvolume = 1800\n\n{}",
        steps(3, r#"{ dist = "constant", value = "37ms" }"#)
    );
    for engine in Engine::ALL {
        let h = run(engine, &spec, "baseline", 1000, 2);
        let expected = Duration::from_millis(1800 * 3 * 37);
        assert_eq!(h.min(), expected);
        assert_eq!(h.max(), expected);
        assert_eq!(h.quantile(0.5), expected);
        assert_eq!(h.quantile(0.999), expected);
    }
}

/// N exponential calls per run add up to a Gamma(N) runtime.
#[test]
fn sums_of_exponentials_match_the_gamma_distribution() {
    for (items, steps_per_item) in [(1usize, 4usize), (4, 4), (1, 30)] {
        let n = items * steps_per_item;
        let spec = format!(
            "[workload]\nname = \"gamma\"\nvolume = {items}\n\n{}",
            steps(steps_per_item, r#"{ dist = "exponential", mean = "1s" }"#)
        );
        for engine in Engine::ALL {
            let h = run(engine, &spec, "baseline", 200_000, 2);
            let gamma = Gamma::new(n as f64, 1.0).unwrap();
            for q in [0.5, 0.99, 0.999] {
                let want = gamma.inverse_cdf(q);
                let got = h.quantile(q).as_secs_f64();
                assert!(
                    (got / want - 1.0).abs() < 0.01,
                    "Gamma({n}) q={q}: simulated {got:.4}, exact {want:.4}"
                );
            }
            let mean = h.mean().as_secs_f64();
            assert!(
                (mean / n as f64 - 1.0).abs() < 0.01,
                "Gamma({n}) mean {mean}"
            );
        }
    }
}

#[test]
fn results_do_not_depend_on_the_thread_count() {
    let spec = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/specs/billing.toml"))
        .unwrap();
    for profile in ["month-end-incident", "gc-pressure"] {
        for engine in Engine::ALL {
            let one = run(engine, &spec, profile, 3000, 1);
            let three = run(engine, &spec, profile, 3000, 3);
            assert_eq!(one.mean(), three.mean(), "{profile}");
            assert_eq!(one.max(), three.max(), "{profile}");
            assert_eq!(one.quantile(0.99), three.quantile(0.99), "{profile}");
            assert_eq!(one.to_base64_v2(), three.to_base64_v2(), "{profile}");
        }
    }
}

/// Four lanes share constant items exactly. With 10,000 items the block engine's lanes advance in
/// rounds to horizons before the last items go one by one; with 100 they go one by one from the
/// start.
#[test]
fn lanes_share_the_items() {
    for (volume, steps_per_item, latency, runtime) in
        [(100, 1, r#""1s""#, 25), (10_000, 2, r#""500ms""#, 2500)]
    {
        let spec = format!(
            "[workload]\nname = \"lanes\"\nvolume = {volume}\nconcurrency = 4\n\n{}",
            steps(steps_per_item, latency)
        );
        for engine in Engine::ALL {
            let h = run(engine, &spec, "baseline", 10, 1);
            let want = Duration::from_secs(runtime);
            assert_eq!(h.max(), want, "{engine:?}, {volume} items");
            assert_eq!(h.min(), want, "{engine:?}, {volume} items");
        }
    }
}

#[test]
fn episodes_apply_exactly_at_their_boundaries_over_many_items() {
    let spec = |episode: &str| {
        format!(
            "[workload]\nname = \"many\"\nvolume = 1000\n\n{}\n[[profiles]]\nname = \"p\"\n[[profiles.episodes]]\nname = \"e\"\ntarget = \"db\"\n{episode}\n",
            steps(1, r#""1s""#)
        )
    };
    // Calls at 0, 3, ..., 450 s start inside a 450.5 s window and take 3 s: 151 calls, 453 s;
    // then 849 calls of 1 s.
    let slowdown = spec("start = \"0s\"\nduration = \"450500ms\"\nslowdown = 3.0");
    // Calls at 0..=250 s run; the one due at 251 s waits for the window's end at 700.5 s, then
    // it and 748 more take 1 s each.
    let block = spec("start = \"250500ms\"\nduration = \"450s\"\nblock = true");
    for engine in Engine::ALL {
        let h = run(engine, &slowdown, "p", 10, 1);
        assert_eq!(h.max(), Duration::from_secs(1302), "{engine:?} slowdown");
        assert_eq!(h.min(), Duration::from_secs(1302), "{engine:?} slowdown");
        let h = run(engine, &block, "p", 10, 1);
        assert_eq!(
            h.max(),
            Duration::from_millis(1_449_500),
            "{engine:?} block"
        );
        assert_eq!(
            h.min(),
            Duration::from_millis(1_449_500),
            "{engine:?} block"
        );
    }
}

#[test]
fn a_blocking_episode_holds_calls_until_it_ends() {
    let spec = format!(
        r#"[workload]
name = "block"
volume = 10

{}
[[profiles]]
name = "locked"
[[profiles.episodes]]
name = "long transaction"
target = "db"
start = "2.5s"
duration = "4.5s"
block = true
"#,
        steps(1, r#""1s""#)
    );
    for engine in Engine::ALL {
        // Items start at 0, 1, 2, 3 s; the one due at 3 s waits until 7 s, then 7 more follow.
        let h = run(engine, &spec, "locked", 10, 1);
        assert_eq!(h.max(), Duration::from_secs(14));
        assert_eq!(h.min(), Duration::from_secs(14));
    }
}

#[test]
fn a_slowdown_episode_scales_calls_inside_its_window() {
    let spec = format!(
        r#"[workload]
name = "slow"
volume = 10

{}
[[profiles]]
name = "slow"
[[profiles.episodes]]
name = "rebuild"
target = "db"
start = "0s"
duration = "4.5s"
slowdown = 3.0
"#,
        steps(1, r#""1s""#)
    );
    for engine in Engine::ALL {
        // Calls at 0 and 3 s start inside the window and take 3 s each; then 8 calls of 1 s.
        let h = run(engine, &spec, "slow", 10, 1);
        assert_eq!(h.max(), Duration::from_secs(14));
    }
}

#[test]
fn episodes_that_do_not_happen_leave_runs_alone() {
    let spec = format!(
        r#"[workload]
name = "chance"
volume = 10

{}
[[profiles]]
name = "sometimes"
[[profiles.episodes]]
name = "rebuild"
target = "db"
chance = 0.25
start = "0s"
duration = "1h"
slowdown = 2.0
"#,
        steps(1, r#""1s""#)
    );
    let spec = WorkloadSpec::parse(&spec, Path::new("test.toml")).unwrap();
    let model = JobModel::new(&spec, "sometimes", 1.0).unwrap();
    let limit = Duration::from_secs(15);
    let options = SimOptions {
        replays: 100_000,
        seed: 7,
        threads: 2,
        thresholds: vec![limit],
        shard: Shard::WHOLE,
        engine: Engine::Blocks,
    };
    let h = simulate(&model, &options, &|_| {});
    // Exactly two outcomes: 10 s (75 %) or 20 s (25 %).
    assert_eq!(h.min(), Duration::from_secs(10));
    assert_eq!(h.max(), Duration::from_secs(20));
    let share = h.count_above(limit).unwrap() as f64 / 100_000.0;
    assert!((share - 0.25).abs() < 0.005, "share of slowed runs {share}");
}

/// Pauses arrive after exponential gaps (mean m) and last d: the run is frozen d/(m+d) of the
/// time, so a long run of W seconds of work takes about W (m+d)/m.
#[test]
fn pauses_stretch_the_run_by_their_share_of_time() {
    let spec = format!(
        r#"[workload]
name = "paused"
volume = 1000

{}
[[profiles]]
name = "gc"
[profiles.pauses]
mean_interval = "10s"
duration = "1s"
"#,
        steps(1, r#""1s""#)
    );
    for engine in Engine::ALL {
        let h = run(engine, &spec, "gc", 20_000, 2);
        let mean = h.mean().as_secs_f64();
        assert!((mean / 1100.0 - 1.0).abs() < 0.01, "mean runtime {mean}");
    }
}

/// Shards 0..N of a simulation, each run apart with any thread count, add up to the whole run:
/// the same count, sum, extremes, percentiles and threshold counts, for the shipped billing spec's
/// most varied profile.
#[test]
fn shards_add_up_to_the_whole_simulation() {
    let spec = WorkloadSpec::load(Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/specs/billing.toml"
    )))
    .expect("the shipped billing spec");
    let model = JobModel::new(&spec, "gc-pressure", 0.1).expect("profile exists");
    let limit = Duration::from_secs(300);
    let options = |shard: Shard, threads: usize| SimOptions {
        replays: 1_001,
        seed: 42,
        threads,
        thresholds: vec![limit],
        shard,
        engine: Engine::Blocks,
    };
    let whole = simulate(&model, &options(Shard::WHOLE, 2), &|_| {});
    for count in [2u64, 3, 7] {
        let mut merged = RuntimeHistogram::with_thresholds(&[limit]);
        for index in 0..count {
            let threads = 1 + (index as usize % 2);
            merged.merge(&simulate(
                &model,
                &options(Shard { index, count }, threads),
                &|_| {},
            ));
        }
        assert_eq!(merged.count(), whole.count(), "{count} shards");
        assert_eq!(merged.mean(), whole.mean(), "{count} shards");
        assert_eq!(merged.min(), whole.min(), "{count} shards");
        assert_eq!(merged.max(), whole.max(), "{count} shards");
        assert_eq!(merged.count_above(limit), whole.count_above(limit));
        for q in [0.5, 0.9, 0.99, 0.999, 1.0] {
            assert_eq!(
                merged.quantile(q),
                whole.quantile(q),
                "q {q}, {count} shards"
            );
        }
    }
}

/// The lease-loss count against its closed form, for one known pause distribution. W = 100 s of
/// work; pauses after exponential gaps of mean 1000 s (measured from the previous pause's end, so
/// the pauses during the work are Poisson with mean 100/1000 = 0.1); each lasts 25 s. A 30 s lease
/// renewed every 10 s has 30 - phase left when a pause begins, the phase uniform on [0, 10): a
/// 25 s pause loses it when the phase is above 5, half the time. So the chance per run is
/// 1 - E[(1/2)^N] = 1 - exp(-0.1 x 1/2) = 4.877 %, and a 40 s lease (13.3 s renewals, at least
/// 26.7 s left) is never lost to a 25 s pause.
#[test]
fn lease_loss_matches_its_closed_form() {
    let spec = format!(
        r#"[workload]
name = "paused"
volume = 100

{}
[[profiles]]
name = "gc"
[profiles.pauses]
mean_interval = "1000s"
duration = "25s"
"#,
        steps(1, r#""1s""#)
    );
    let spec = WorkloadSpec::parse(&spec, Path::new("test.toml")).expect("valid spec");
    let model = JobModel::new(&spec, "gc", 1.0).unwrap();
    let replays = 100_000u64;
    let options = SimOptions {
        replays,
        seed: 11,
        threads: 2,
        thresholds: Vec::new(),
        shard: Shard::WHOLE,
        engine: Engine::Blocks,
    };
    let leases = [Duration::from_secs(30), Duration::from_secs(40)];
    let (h, lost) = lockbench_workloads::simulate_leases(&model, &options, &leases, &|_| {});
    let expected = 1.0 - (-0.05f64).exp();
    let p = lost[0] as f64 / replays as f64;
    let se = (expected * (1.0 - expected) / replays as f64).sqrt();
    assert!(
        (p - expected).abs() < 3.0 * se,
        "simulated {p:.5} against the closed form {expected:.5} (standard error {se:.5})"
    );
    assert_eq!(lost[1], 0, "a 25 s pause never outlasts 26.7 s");
    // The runtimes are simulate's own.
    assert_eq!(h.mean(), simulate(&model, &options, &|_| {}).mean());
}
