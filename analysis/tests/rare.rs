//! The rare-event estimator against tails known exactly, driven through the simulator itself: a
//! job of one lognormal step, a job of ten exponential calls (a Gamma runtime), and work plus one
//! Pareto pause; against plain replays where those can see; and its interval's coverage over
//! seeds. A single estimate is held to 15 % here (its error over 200 seeds, median and 90th
//! percentile, is in docs/PERFORMANCE.md); whether its interval covers is a rate, tested over
//! seeds, not on one. The full coverage figure (200 seeds) is `cargo test --release -p lockbench-analysis
//! --test rare -- --ignored --nocapture` (docs/PERFORMANCE.md).

use std::path::Path;
use std::time::Duration;

use lockbench_analysis::rare::{
    Method, ModelScore, RareOptions, Score, Scored, exceedance, outlived, quantile,
};
use lockbench_workloads::{Engine, JobModel, SimOptions, Stream, WorkloadSpec, simulate};
use statrs::distribution::{ContinuousCDF, Gamma, LogNormal};

fn spec(text: &str) -> WorkloadSpec {
    WorkloadSpec::parse(text, Path::new("rare.toml")).unwrap()
}

/// One call of a lognormal latency with P50 1 s and P99 e^(2.326) s: ln of it is N(0, 1).
fn lognormal_job() -> JobModel {
    let s = spec(
        r#"
[workload]
name = "one"
volume = 1

[[steps]]
name = "call"
target = "db"
latency = { dist = "lognormal", p50 = "1s", p99 = "10.240s" }
"#,
    );
    JobModel::new(&s, "baseline", 1.0).unwrap()
}

/// Ten calls of an exponential latency of mean 1 s: a Gamma(10, 1) runtime.
fn gamma_job() -> JobModel {
    let s = spec(
        r#"
[workload]
name = "ten"
volume = 10

[[steps]]
name = "call"
target = "db"
latency = { dist = "exponential", mean = "1s" }
"#,
    );
    JobModel::new(&s, "baseline", 1.0).unwrap()
}

/// Ten seconds of work and one Pareto pause (scale 1 s, shape 1.6): P(> 10 + x) = x^-1.6.
struct WorkAndPause;

impl Scored for WorkAndPause {
    fn score<R: Stream>(&self, rng: &mut R) -> f64 {
        let u = ((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
        10.0 + (1.0 - u).powf(-1.0 / 1.6)
    }
}

fn options(seed: u64) -> RareOptions {
    RareOptions {
        samples: 5_000,
        repetitions: 20,
        seed,
        threads: 2,
    }
}

fn assert_near(what: &str, got: f64, truth: f64, tolerance: f64) {
    assert!(
        (got / truth - 1.0).abs() < tolerance,
        "{what}: {got:e} against {truth:e}"
    );
}

#[test]
fn a_lognormal_step_is_priced_at_one_in_ten_million_and_one_in_a_billion() {
    let model = lognormal_job();
    // The spec's P99 is e^2.326 s to four figures: ln(runtime) is N(0, 0.99997).
    let sigma = 10.240f64.ln() / 2.326_348;
    let law = LogNormal::new(0.0, sigma).unwrap();
    for p in [1e-7, 1e-9] {
        let t = law.inverse_cdf(1.0 - p);
        let c = outlived(
            &model,
            Engine::Exact,
            Duration::from_secs_f64(t),
            &options(11),
        );
        assert_eq!(c.method, Method::SubsetSimulation);
        assert_near("lognormal", c.p, p, 0.15);
        assert!(c.runs <= 1_000_000, "{} runs", c.runs);
    }
}

#[test]
fn ten_exponential_calls_are_priced_at_one_in_a_billion() {
    let model = gamma_job();
    let law = Gamma::new(10.0, 1.0).unwrap();
    let t = law.inverse_cdf(1.0 - 1e-9);
    for engine in [Engine::Exact, Engine::Blocks] {
        let c = outlived(&model, engine, Duration::from_secs_f64(t), &options(3));
        assert_near(engine.name(), c.p, 1e-9, 0.15);
    }
}

#[test]
fn work_and_a_pareto_pause_and_its_quantile() {
    let p = 1e-9f64;
    let x = p.powf(-1.0 / 1.6);
    let c = exceedance(&WorkAndPause, 10.0 + x, &options(7));
    assert_near("pareto", c.p, p, 0.15);
    // The other way round: the runtime exceeded once in a billion runs, to 15 % (a chance 15 %
    // off moves this Pareto's runtime by 9 %).
    let q = quantile(&WorkAndPause, p, &options(7));
    assert_near("pareto quantile", q.seconds, 10.0 + x, 0.15);
}

#[test]
fn it_agrees_with_plain_replays_where_those_can_see() {
    // At 1e-3 and 1e-4, 2,000,000 plain replays count 2,000 and 200 exceedances.
    let model = gamma_job();
    let law = Gamma::new(10.0, 1.0).unwrap();
    let plain = simulate(
        &model,
        &SimOptions {
            replays: 2_000_000,
            seed: 9,
            threads: 2,
            thresholds: [1e-3, 1e-4]
                .iter()
                .map(|p| Duration::from_secs_f64(law.inverse_cdf(1.0 - p)))
                .collect(),
            shard: lockbench_workloads::Shard::WHOLE,
            engine: Engine::Exact,
        },
        &|_| {},
    );
    for p in [1e-3, 1e-4] {
        let t = Duration::from_secs_f64(law.inverse_cdf(1.0 - p));
        let counted = plain.count_above(t).unwrap() as f64 / 2e6;
        let c = outlived(&model, Engine::Exact, t, &options(5));
        // Both within their own noise of the truth, and of each other.
        assert_near("plain replays", counted, p, 0.15);
        assert_near("subset simulation", c.p, counted, 0.15);
    }
}

#[test]
fn its_interval_covers_the_truth_over_seeds() {
    // A looser band than the 95 % stated, over 30 seeds: the 200-seed figure is in
    // docs/PERFORMANCE.md.
    let model = lognormal_job();
    let sigma = 10.240f64.ln() / 2.326_348;
    let p = 1e-7;
    let t = LogNormal::new(0.0, sigma).unwrap().inverse_cdf(1.0 - p);
    let s = ModelScore {
        model: &model,
        engine: Engine::Exact,
        score: Score::Runtime,
    };
    let covered = (0..30)
        .filter(|seed| {
            let c = exceedance(
                &s,
                t,
                &RareOptions {
                    samples: 2_000,
                    repetitions: 20,
                    seed: 100 + seed,
                    threads: 2,
                },
            );
            c.lower <= p && p <= c.upper
        })
        .count();
    assert!(covered >= 25, "covered in {covered} of 30");
}

/// The figures of docs/PERFORMANCE.md: over 200 seeds, each known tail at 1e-7 and 1e-9.
#[test]
#[ignore]
fn figures_over_200_seeds() {
    // Another 200 seeds with LOCKBENCH_RARE_FIRST_SEED=200, and so on.
    let first: u64 = std::env::var("LOCKBENCH_RARE_FIRST_SEED")
        .ok()
        .map(|s| {
            s.parse()
                .expect("LOCKBENCH_RARE_FIRST_SEED: a whole number")
        })
        .unwrap_or(0);
    // One model only with LOCKBENCH_RARE_MODEL=Gamma (a part of its name).
    let only = std::env::var("LOCKBENCH_RARE_MODEL").unwrap_or_default();
    let gamma = Gamma::new(10.0, 1.0).unwrap();
    let gamma_model = gamma_job();
    let lognormal_model = lognormal_job();
    let lognormal = LogNormal::new(0.0, 10.240f64.ln() / 2.326_348).unwrap();
    for p in [1e-7f64, 1e-9] {
        for (name, t) in [
            (
                "ten exponential calls (Gamma 10)",
                gamma.inverse_cdf(1.0 - p),
            ),
            ("one lognormal step", lognormal.inverse_cdf(1.0 - p)),
            ("work and a Pareto pause", 10.0 + p.powf(-1.0 / 1.6)),
        ] {
            if !name.contains(only.as_str()) {
                continue;
            }
            let started = std::time::Instant::now();
            let (mut covered, mut errors, mut runs) = (0, Vec::new(), 0);
            for seed in first..first + 200 {
                let o = RareOptions {
                    samples: 5_000,
                    repetitions: 20,
                    seed,
                    threads: 2,
                };
                let c = if name.starts_with("work") {
                    exceedance(&WorkAndPause, t, &o)
                } else {
                    let s = ModelScore {
                        model: if name.starts_with("ten") {
                            &gamma_model
                        } else {
                            &lognormal_model
                        },
                        engine: Engine::Exact,
                        score: Score::Runtime,
                    };
                    exceedance(&s, t, &o)
                };
                covered += usize::from(c.lower <= p && p <= c.upper);
                errors.push((c.p / p - 1.0).abs());
                runs = runs.max(c.runs);
            }
            errors.sort_by(f64::total_cmp);
            eprintln!(
                "{name} at {p:e}: covered by the 95 % interval in {covered} of 200; |error| median {:.1} %, 90th percentile {:.1} %; at most {runs} runs, {:.2} s an estimate",
                errors[100] * 100.0,
                errors[180] * 100.0,
                started.elapsed().as_secs_f64() / 200.0
            );
        }
    }
}

#[test]
fn one_climb_prices_several_thresholds_and_a_quantile() {
    // Ten exponential calls: the chance of three runtimes and the runtime at 1e-8, one climb.
    let model = gamma_job();
    let law = Gamma::new(10.0, 1.0).unwrap();
    let s = ModelScore {
        model: &model,
        engine: Engine::Exact,
        score: Score::Runtime,
    };
    let far = law.inverse_cdf(1.0 - 1e-9);
    let t = lockbench_analysis::rare::tail(&s, far, 1e-8, &options(21));
    for p in [1e-2, 1e-5, 1e-9] {
        let c = t.exceedance(law.inverse_cdf(1.0 - p));
        assert_near("tail", c.p, p, 0.25);
        assert_eq!(c.runs, t.runs);
    }
    // The runtime at 1e-8, to within 1 % (adaptive levels put it a fraction of a percent low).
    let q = t.quantile(1e-8);
    assert_near("quantile", q.seconds, law.inverse_cdf(1.0 - 1e-8), 0.01);
    // Nothing below the floor is said to be zero: a bound, not a certainty.
    let beyond = t.exceedance(10.0 * far);
    assert_eq!(beyond.p, 0.0);
    assert!(beyond.upper > 0.0 && beyond.upper < 1e-8, "{beyond:?}");
}
