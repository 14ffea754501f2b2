//! `lockbench check`: past job runs against the simulated distribution. Runs drawn from the spec
//! itself must pass; runs whose tail is twice as heavy must be flagged, at 400 runs, in at least
//! 95 % of seeds.

use std::path::{Path, PathBuf};

use lockbench_analysis::check::Quantiles;
use lockbench_workloads::{JobModel, Shard, SimOptions, WorkloadSpec, simulate};
use serde_json::Value;

mod common;
use common::{Draws, json_of, lockbench, refused};

const SPEC: &str = r#"
[workload]
name = "small"
volume = 50
unit = "items"

[[steps]]
name = "query"
target = "db"
latency = { dist = "lognormal", p50 = "20ms", p99 = "80ms" }

[[steps]]
name = "call"
target = "api"
latency = { dist = "lognormal", p50 = "50ms", p99 = "200ms" }

[[profiles]]
name = "baseline"

[[profiles.episodes]]
name = "speed-this-run"
target = "api"
start = "0s"
duration = "24h"
slowdown = 0.8
slowdown_max = 1.2
"#;

const VOLUMES: [u64; 3] = [40, 50, 60];
const SEEDS: u64 = 20;

fn spec_file(dir: &Path) -> PathBuf {
    let path = dir.join("small.toml");
    std::fs::write(&path, SPEC).unwrap();
    path
}

/// The spec's runtime distribution at each volume, from a simulation with a seed the checks never
/// use.
fn truth(spec: &Path) -> Vec<Quantiles> {
    let spec = WorkloadSpec::load(spec).unwrap();
    VOLUMES
        .iter()
        .map(|v| {
            let model = JobModel::new(&spec, "baseline", *v as f64 / 50.0).unwrap();
            let options = SimOptions {
                replays: 100_000,
                seed: 987_654,
                threads: 2,
                thresholds: Vec::new(),
                shard: Shard::WHOLE,
                engine: lockbench_workloads::Engine::default(),
            };
            Quantiles::new(&simulate(&model, &options, &|_| {}).recorded_s())
        })
        .collect()
}

/// 400 runs drawn from `truth`, the excess over each volume's P90 multiplied by `heavier`.
fn runs_csv(dir: &Path, truth: &[Quantiles], seed: u64, heavier: f64) -> PathBuf {
    let mut draws = Draws(seed);
    let mut text = String::from("run,duration,volume\n");
    for run in 0..400 {
        let i = ((draws.next() * VOLUMES.len() as f64) as usize).min(VOLUMES.len() - 1);
        let x = truth[i].at(draws.next());
        let p90 = truth[i].at(0.9);
        let x = if x > p90 {
            p90 + heavier * (x - p90)
        } else {
            x
        };
        text += &format!("{run},{x:.6}s,{}\n", VOLUMES[i]);
    }
    let path = dir.join(format!("runs-{seed}-{heavier}.csv"));
    std::fs::write(&path, text).unwrap();
    path
}

fn check(spec: &Path, runs: &Path, seed: u64) -> Value {
    let seed = seed.to_string();
    json_of(&[
        "check",
        spec.to_str().unwrap(),
        "--observed",
        runs.to_str().unwrap(),
        "--replays",
        "20000",
        "--seed",
        &seed,
        "--json",
    ])
}

#[test]
fn runs_drawn_from_the_spec_pass_and_a_heavier_tail_is_flagged() {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec_file(dir.path());
    let truth = truth(&spec);
    let mut passed = 0;
    let mut flagged = 0;
    let mut verdicts = Vec::new();
    for seed in 0..SEEDS {
        let same = check(&spec, &runs_csv(dir.path(), &truth, seed, 1.0), 1000 + seed);
        assert_eq!(same["runs"], 400);
        assert_eq!(same["bands"].as_array().unwrap().len(), VOLUMES.len());
        passed += u32::from(same["consistent"] == true);
        let heavy = check(&spec, &runs_csv(dir.path(), &truth, seed, 2.0), 1000 + seed);
        let verdict = heavy["verdict"].as_str().unwrap().to_string();
        flagged +=
            u32::from(heavy["consistent"] == false && verdict.contains("underestimates the tail"));
        verdicts.push((same["verdict"].clone(), verdict));
    }
    eprintln!("{passed} of {SEEDS} seeds passed, {flagged} flagged the heavier tail");
    // At least 95 % of the seeds each way.
    assert!(passed >= 19, "{passed} of {SEEDS} passed: {verdicts:#?}");
    assert!(flagged >= 19, "{flagged} of {SEEDS} flagged: {verdicts:#?}");
}

#[test]
fn the_check_is_written_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec_file(dir.path());
    let truth = truth(&spec);
    let runs = runs_csv(dir.path(), &truth, 77, 2.0);
    let out = dir.path().join("check");
    lockbench()
        .arg("check")
        .arg(&spec)
        .arg("--observed")
        .arg(&runs)
        .args(["--replays", "5000", "--seed", "3", "--out"])
        .arg(&out)
        // Inside a Kubernetes Indexed Job a check still runs whole.
        .env("JOB_COMPLETION_INDEX", "1")
        .env("LOCKBENCH_SHARDS", "4")
        .assert()
        .success()
        .stdout(predicates::str::contains(
            "verdict: the model underestimates the tail",
        ));
    let rows = std::fs::read_to_string(out.join("runs.csv")).unwrap();
    assert_eq!(rows.lines().count(), 401, "a header and a row per run");
    let report = dir.path().join("report");
    lockbench()
        .arg("report")
        .arg(&out)
        .arg("--out")
        .arg(&report)
        .assert()
        .success();
    let md = std::fs::read_to_string(report.join("report.md")).unwrap();
    assert!(
        md.contains("**Model checked against 400 past runs**"),
        "{md}"
    );
    assert!(md.contains("charts/model-check-small.png"), "{md}");
    assert!(report.join("charts/model-check-small.png").is_file());
    // 400 runs put 40 over their 90th percentile: enough for the tail fit, which the record says.
    assert!(
        md.contains("The runs' own tail: generalized Pareto tail fitted above"),
        "{md}"
    );
}

#[test]
fn ttl_says_in_its_first_line_that_the_check_rejects_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec_file(dir.path());
    let truth = truth(&spec);
    let ttl = |runs: &Path| {
        let out = lockbench()
            .arg("ttl")
            .arg(&spec)
            .arg("--observed")
            .arg(runs)
            .args(["--replays", "5000", "--seed", "5"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let rejected = ttl(&runs_csv(dir.path(), &truth, 8, 2.0));
    let first = rejected.lines().next().unwrap();
    assert!(
        first.starts_with("WARNING: the model behind this TTL is rejected by the 400 past runs"),
        "{first}"
    );
    let accepted = ttl(&runs_csv(dir.path(), &truth, 9, 1.0));
    assert!(accepted.starts_with("TTL for small"), "{accepted}");
    assert!(
        accepted.contains("model checked against 400 past runs"),
        "{accepted}"
    );
}

#[test]
fn bad_runs_are_refused_in_one_line_naming_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec_file(dir.path());
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    };
    let no_volume = write("nv.csv", "duration\n3s\n");
    let bad_volume = write("bv.csv", "duration,volume\n3s,50\n4s,many\n");
    let negative = write("neg.csv", "duration,volume\n-3s,50\n");
    let profile = write("pr.csv", "duration,volume,profile\n3s,50,incident\n");
    let json = write("t.json", "{}");
    let empty = write("empty.csv", "");
    let huge = write("huge.csv", "duration,volume\n3s,50\n4s,999999999999\n");
    let cases: Vec<(Vec<&str>, Vec<String>)> = vec![
        (
            vec![&no_volume],
            vec![format!("{no_volume}:1: no column \"volume\"")],
        ),
        (
            vec![&bad_volume],
            vec![format!("{bad_volume}:3: field volume"), "\"many\"".into()],
        ),
        (
            vec![&negative],
            vec![
                format!("{negative}:2: field duration"),
                "non-negative".into(),
            ],
        ),
        (
            vec![&profile],
            vec![
                format!("{profile}:2: field profile"),
                "no profile \"incident\"".into(),
            ],
        ),
        (vec![&json], vec![format!("{json}: a JSON file")]),
        // What check reads, not what calibrate reads: no JSON.
        (
            vec![&empty],
            vec![
                format!("{empty}: empty: expected a CSV of past job runs"),
                "a duration and a volume column".into(),
            ],
        ),
        (
            vec![&huge],
            vec![
                format!("{huge}:3: field volume"),
                "cannot be simulated".into(),
            ],
        ),
        (
            vec![
                &bad_volume,
                "--shard",
                "0/2",
                "--seed",
                "1",
                "--run-id",
                "x",
            ],
            vec!["--shard".into()],
        ),
    ];
    let spec = spec.to_str().unwrap();
    for (args, fragments) in cases {
        refused(
            &[&["check", spec, "--observed"], &args[..]].concat(),
            &fragments,
        );
    }
}

#[test]
fn the_observed_tail_is_fitted_and_its_one_in_a_million_runtime_has_an_interval() {
    // 10,000 runs of 40 s plus a generalized Pareto excess of shape 0.2 and scale 2 s: the
    // runtime exceeded once in a million runs is 40 + 2 (1e6^0.2 - 1) / 0.2 = 188.4 s, where the
    // largest of the runs is about 100 s.
    let dir = tempfile::tempdir().unwrap();
    let spec = spec_file(dir.path());
    let mut draws = Draws(77);
    let mut text = String::from("duration,volume\n");
    for _ in 0..10_000 {
        let u = draws.next().max(1e-12);
        let x = 40.0 + 2.0 * (u.powf(-0.2) - 1.0) / 0.2;
        text += &format!("{x:.6}s,50\n");
    }
    let runs = dir.path().join("tail.csv");
    std::fs::write(&runs, text).unwrap();
    let v = check(&spec, &runs, 5);
    let fit = &v["tail_fit"];
    assert_eq!(fit["runs"], 10_000);
    assert_eq!(fit["exceedances"], 1_000);
    let truth = 40.0 + 2.0 * (1e6f64.powf(0.2) - 1.0) / 0.2;
    let q = fit["quantiles"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["p"] == 1e-6)
        .unwrap();
    let at = |k: usize| q["interval_s"][k].as_f64().unwrap();
    assert!(at(0) <= truth && truth <= at(1), "{q} against {truth}");
    assert!(fit["largest_s"].as_f64().unwrap() < truth);
    // The text says it, with its threshold.
    let out = lockbench()
        .args(["check", spec.to_str().unwrap(), "--observed"])
        .arg(&runs)
        .args(["--replays", "2000"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("observed tail: generalized Pareto tail fitted above"),
        "{text}"
    );
}
