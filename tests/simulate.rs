//! `simulate` and `validate` as a user meets them: percentiles for every profile and scale, the
//! same results for a seed whatever the threads, and one line with exit code 2 naming the file,
//! the field and what was expected for every malformed spec or bad flag (simulate's and ttl's).

use predicates::prelude::*;

mod common;
use common::{BILLING, MIGRATION, json_of, lockbench, refused, write_file};

#[test]
fn simulate_prints_percentiles_for_every_profile_and_scale() {
    let v = json_of(&[
        "simulate",
        BILLING,
        "--scale",
        "1",
        "--scale",
        "2",
        "--replays",
        "2000",
        "--seed",
        "5",
        "--json",
    ]);
    assert_eq!(v["seed"], 5);
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 6, "3 profiles x 2 scales");
    for r in results {
        for field in [
            "workload",
            "profile",
            "scale",
            "volume",
            "replays",
            "p999_ci_s",
        ] {
            assert!(!r[field].is_null(), "missing {field} in {r}");
        }
        let rt = &r["runtime_s"];
        let p = |k: &str| rt[k].as_f64().unwrap();
        assert!(
            p("p50") <= p("p90")
                && p("p90") <= p("p99")
                && p("p99") <= p("p999")
                && p("p999") <= p("max")
        );
        assert!(p("mean") > 0.0);
        assert_eq!(r["replays"], 2000);
    }
    let baseline = &results[0];
    assert_eq!(baseline["volume"], 1800);
    let p50 = baseline["runtime_s"]["p50"].as_f64().unwrap();
    assert!(
        (190.0..280.0).contains(&p50),
        "baseline billing runs 190-280 s, got {p50}"
    );
}

#[test]
fn simulate_warns_when_replays_are_too_few_for_p999() {
    lockbench()
        .args([
            "simulate",
            BILLING,
            "--profile",
            "baseline",
            "--replays",
            "500",
            "--seed",
            "1",
        ])
        .assert()
        .success()
        .stdout(predicate::str::contains("--replays 10000"));
}

#[test]
fn results_are_identical_for_a_seed_whatever_the_threads() {
    let args = |t: &'static str| {
        [
            "simulate",
            MIGRATION,
            "--replays",
            "3000",
            "--seed",
            "99",
            "--threads",
            t,
            "--json",
        ]
    };
    let one = json_of(&args("1"));
    let three = json_of(&args("3"));
    assert_eq!(one["results"], three["results"]);
}

#[test]
fn validate_reports_each_spec() {
    lockbench()
        .args(["validate", BILLING, MIGRATION])
        .assert()
        .success()
        .stdout(predicate::str::contains("billing.toml: ok"))
        .stdout(predicate::str::contains("migration.toml: ok"));
}

#[test]
fn malformed_specs_get_one_line_naming_file_field_and_expectation() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let head = "[workload]\nname = \"w\"\nvolume = 10\n\n";
    let step = |latency: &str| {
        format!("{head}[[steps]]\nname = \"s\"\ntarget = \"db\"\nlatency = {latency}\n")
    };
    // A valid spec with `extra` added to its [workload] table.
    let with_workload = |extra: &str| {
        format!("[workload]\nname = \"w\"\nvolume = 10\n{extra}\n\n[[steps]]\nname = \"s\"\ntarget = \"db\"\nlatency = \"1ms\"\n")
            .into_bytes()
    };
    let cases: Vec<(&str, Vec<u8>, Vec<&str>)> = vec![
        ("empty.toml", b"  \n".to_vec(), vec!["empty.toml", "empty"]),
        ("binary.toml", vec![0xff, 0xfe, 0x00], vec!["binary.toml", "UTF-8"]),
        ("syntax.toml", b"[workload\nname = 1".to_vec(), vec!["syntax.toml:1"]),
        (
            "missing.toml",
            b"[workload]\nname = \"w\"\n\n[[steps]]\nname=\"s\"\ntarget=\"db\"\nlatency=\"1ms\"\n".to_vec(),
            vec!["missing.toml", "workload", "volume"],
        ),
        (
            "unknown_field.toml",
            format!("{head}colour = \"red\"\n").into_bytes(),
            vec!["unknown_field.toml:5", "colour"],
        ),
        (
            "unknown_dist.toml",
            step(r#"{ dist = "gamma", mean = "1s" }"#).into_bytes(),
            vec!["unknown_dist.toml:8", "steps[0].latency", "gamma"],
        ),
        (
            "p99_below.toml",
            step(r#"{ dist = "lognormal", p50 = "300ms", p99 = "100ms" }"#).into_bytes(),
            vec!["p99_below.toml:8", "steps[0].latency", "expected p99 above p50"],
        ),
        (
            "negative.toml",
            step(r#"{ dist = "constant", value = "-5s" }"#).into_bytes(),
            vec!["negative.toml:8", "steps[0].latency", "non-negative", "-5s"],
        ),
        (
            "unitless.toml",
            step(r#"{ dist = "exponential", mean = "5" }"#).into_bytes(),
            vec!["unitless.toml:8", "steps[0].latency", "with a unit"],
        ),
        (
            "bare_number.toml",
            step("5").into_bytes(),
            vec!["bare_number.toml:8", "steps[0].latency"],
        ),
        (
            "zero_volume.toml",
            b"[workload]\nname = \"w\"\nvolume = 0\n\n[[steps]]\nname=\"s\"\ntarget=\"db\"\nlatency=\"1ms\"\n".to_vec(),
            vec!["zero_volume.toml:3", "workload.volume", "at least 1"],
        ),
        (
            "bad_target.toml",
            format!("{head}[[steps]]\nname = \"s\"\ntarget = \"disk\"\nlatency = \"1ms\"\n").into_bytes(),
            vec!["bad_target.toml:7", "steps[0].target", "disk"],
        ),
        (
            "bad_episode.toml",
            format!("{}\n[[profiles]]\nname = \"p\"\n[[profiles.episodes]]\nname = \"e\"\ntarget = \"db\"\nstart = \"0s\"\nduration = \"1s\"\n", step("\"1ms\"")).into_bytes(),
            vec!["bad_episode.toml", "profiles[0].episodes[0].slowdown", "expected a slowdown"],
        ),
        (
            "bad_schedule.toml",
            with_workload("schedule = \"every tuesday\""),
            vec!["bad_schedule.toml", "workload.schedule", "cron expression", "every tuesday"],
        ),
        (
            "bad_cron.toml",
            with_workload("schedule = \"0 25 * * *\""),
            vec!["bad_cron.toml", "workload.schedule", "hour 25 is outside 0-23"],
        ),
        (
            "negative_runs.toml",
            with_workload("runs_per_year = -12"),
            vec!["negative_runs.toml", "workload.runs_per_year", "above 0", "-12"],
        ),
        (
            "both_frequencies.toml",
            with_workload("schedule = \"1m\"\nruns_per_year = 12"),
            vec!["both_frequencies.toml", "workload.runs_per_year", "not both"],
        ),
    ];
    for (name, text, fragments) in cases {
        let path = write_file(d, name, &text);
        refused(&["validate", path.to_str().unwrap()], &fragments);
        refused(
            &["simulate", path.to_str().unwrap(), "--replays", "10"],
            &fragments,
        );
    }
    refused(
        &["simulate", "/no/such/spec.toml"],
        &["/no/such/spec.toml", "no such file"],
    );
}

#[test]
fn bad_flags_name_the_flag() {
    refused(
        &["simulate", BILLING, "--replays", "-5"],
        &["--replays", "-5"],
    );
    refused(
        &["simulate", BILLING, "--replays", "0"],
        &["--replays", "expected 1 to"],
    );
    refused(
        &["simulate", BILLING, "--scale", "0"],
        &["--scale", "above 0"],
    );
    refused(&["simulate", BILLING, "--scale", "-2"], &["--scale"]);
    refused(&["simulate", BILLING, "--threads", "0"], &["--threads"]);
    refused(&["simulate", BILLING, "--seed", "abc"], &["--seed"]);
    refused(
        &["simulate", BILLING, "--profile", "nope"],
        &["billing.toml", "nope", "baseline"],
    );
    refused(
        &["ttl", BILLING, "--current-ttl", "-5s"],
        &["--current-ttl", "non-negative"],
    );
    refused(
        &["ttl", BILLING, "--current-ttl", "300"],
        &["--current-ttl", "with a unit"],
    );
    refused(
        &["ttl", BILLING, "--safety-factor", "0.5"],
        &["--safety-factor", "from 1 to 100"],
    );
    refused(
        &["ttl", BILLING, "--runs-per-year", "0"],
        &["--runs-per-year"],
    );
    refused(
        &["ttl", BILLING, "--runs-per-year", "1e9"],
        &["--runs-per-year", "at most one a second"],
    );
    refused(
        &["ttl", BILLING, "--target-scale", "huge"],
        &["--target-scale"],
    );
}
