//! `lockbench calibrate`: latencies fitted to observed durations, written as a spec that
//! `validate` accepts, and bad observations refused in one line naming file, line and field.

use std::path::Path;

use lockbench_workloads::latency::Latency;
use serde_json::Value;

mod common;
use common::{Draws, json_of, lockbench, refused};

fn csv_of(dir: &Path, rows: &[(&str, &Latency, usize)], seed: u64) -> std::path::PathBuf {
    let mut draws = Draws(seed);
    let mut text = String::from("step,duration\n");
    for (step, latency, n) in rows {
        for _ in 0..*n {
            text += &format!("{step},{:.4}ms\n", latency.quantile(draws.next()) * 1e3);
        }
    }
    let path = dir.join("calls.csv");
    std::fs::write(&path, text).unwrap();
    path
}

fn calibrate(args: &[&str]) -> Value {
    json_of(&[&["calibrate"], args, &["--json"]].concat())
}

fn validate(spec: &Path) {
    lockbench().arg("validate").arg(spec).assert().success();
}

fn step<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["step"] == name)
        .unwrap_or_else(|| panic!("no step {name} in {v}"))
}

#[test]
fn a_lognormal_is_recovered_and_a_mixture_detected_in_a_spec_that_validates() {
    let dir = tempfile::tempdir().unwrap();
    let read = Latency::lognormal(0.004, 0.015);
    let charge = Latency::Mixture(vec![
        (0.983, Latency::lognormal(0.115, 0.360)),
        (0.017, Latency::lognormal(4.5, 9.0)),
    ]);
    let uniform = Latency::Uniform {
        min: 0.005,
        max: 0.010,
    };
    let input = csv_of(
        dir.path(),
        &[
            ("read_subscription", &read, 10_000),
            ("charge_payment", &charge, 10_000),
            ("update_status", &uniform, 10_000),
        ],
        42,
    );
    let out = dir.path().join("calibrated.toml");
    let v = calibrate(&[input.to_str().unwrap(), "--out", out.to_str().unwrap()]);

    let read_fit = step(&v, "read_subscription");
    assert_eq!(read_fit["dist"], "lognormal", "{read_fit}");
    assert_eq!(read_fit["samples"], 10_000);
    // The spec line carries p50 and p99: parse them back from what was written.
    let spec = lockbench_workloads::WorkloadSpec::load(&out).unwrap();
    let Latency::LogNormal { mu, sigma } = spec.steps[0].latency else {
        panic!("{:?}", spec.steps[0].latency)
    };
    let (p50, p99) = lockbench_workloads::fit::lognormal_p50_p99(mu, sigma);
    assert!((p50 / 0.004 - 1.0).abs() < 0.03, "p50 {p50}");
    assert!((p99 / 0.015 - 1.0).abs() < 0.03, "p99 {p99}");
    assert!(read_fit["warnings"].as_array().unwrap().is_empty());

    let charge_fit = step(&v, "charge_payment");
    assert_eq!(charge_fit["dist"], "mixture", "{charge_fit}");
    assert!(
        charge_fit["ks_distance"].as_f64().unwrap() < charge_fit["ks_tolerance"].as_f64().unwrap()
    );
    // A lognormal by itself would not have fitted the degraded API.
    assert!(
        charge_fit["lognormal_ks_distance"].as_f64().unwrap()
            > charge_fit["ks_tolerance"].as_f64().unwrap()
    );

    let update = step(&v, "update_status");
    assert_eq!(update["dist"], "empirical", "{update}");
    let samples = dir.path().join(update["samples_file"].as_str().unwrap());
    assert_eq!(
        std::fs::read_to_string(samples).unwrap().lines().count(),
        10_000
    );
    validate(&out);
}

#[test]
fn identical_values_and_clashing_names_still_give_a_spec_that_validates() {
    let dir = tempfile::tempdir().unwrap();
    let read = Latency::lognormal(0.004, 0.015);
    let timeout = Latency::Constant(5.0);
    let uniform = Latency::Uniform {
        min: 0.005,
        max: 0.010,
    };
    // A client timeout: 2 % of the calls take exactly 5 s.
    let input = csv_of(
        dir.path(),
        &[
            ("query", &read, 9_800),
            ("query", &timeout, 200),
            ("db.update", &uniform, 2_000),
            ("db_update", &uniform, 2_000),
        ],
        5,
    );
    let out = dir.path().join("odd.toml");
    let v = calibrate(&[input.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    let query = step(&v, "query");
    assert_eq!(query["dist"], "mixture", "{query}");
    assert!(
        query["latency_toml"]
            .as_str()
            .unwrap()
            .contains("latency = \"5s\""),
        "{query}"
    );
    let a = step(&v, "db.update")["samples_file"]
        .as_str()
        .unwrap()
        .to_string();
    let b = step(&v, "db_update")["samples_file"]
        .as_str()
        .unwrap()
        .to_string();
    assert_ne!(a, b, "each step keeps its own samples");
    validate(&out);
}

#[test]
fn few_samples_warn_that_the_tail_is_extrapolated() {
    let dir = tempfile::tempdir().unwrap();
    let read = Latency::lognormal(0.004, 0.015);
    let input = csv_of(dir.path(), &[("read", &read, 600)], 7);
    let out = dir.path().join("few.toml");
    let v = calibrate(&[input.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    let warnings = step(&v, "read")["warnings"].to_string();
    assert!(
        warnings.contains("fewer than the 1,000 a P99 needs"),
        "{warnings}"
    );
}

#[test]
fn trace_spans_are_steps_of_the_spec() {
    let dir = tempfile::tempdir().unwrap();
    let read = Latency::lognormal(0.004, 0.015);
    let mut draws = Draws(3);
    let mut spans = Vec::new();
    let mut t: u64 = 1_700_000_000_000_000_000;
    for _ in 0..2000 {
        let d = (read.quantile(draws.next()) * 1e9) as u64;
        spans.push(
            serde_json::json!({"name": "SELECT subscriptions", "startTimeUnixNano": t.to_string(),
            "endTimeUnixNano": (t + d).to_string(),
            "attributes": [{"key": "db.system", "value": {"stringValue": "postgresql"}}]}),
        );
        spans.push(serde_json::json!({"name": "POST /billing/run", "startTimeUnixNano": t, "endTimeUnixNano": t + 3 * d}));
        t += 1_000_000_000;
    }
    let export = serde_json::json!({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]});
    let input = dir.path().join("traces.json");
    std::fs::write(&input, export.to_string()).unwrap();
    let out = dir.path().join("from-traces.toml");
    let billing = concat!(env!("CARGO_MANIFEST_DIR"), "/workloads/specs/billing.toml");
    let v = calibrate(&[
        input.to_str().unwrap(),
        "--spec",
        billing,
        "--rename",
        "SELECT subscriptions=read_subscription",
        "--out",
        out.to_str().unwrap(),
    ]);
    let steps = v["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 1, "the HTTP span is not a step: {v}");
    assert_eq!(steps[0]["step"], "read_subscription");
    assert_eq!(steps[0]["target"], "db");
    assert_eq!(steps[0]["samples"], 2000);
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(
        text.contains("name = \"billing\"") && text.contains("volume = 1800"),
        "{text}"
    );
    validate(&out);
}

#[test]
fn bad_observations_are_refused_in_one_line_naming_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    };
    let out = dir.path().join("never.toml");
    let out = out.to_str().unwrap();
    let negative = write("negative.csv", "step,duration\na,3ms\na,-4ms\n");
    let garbled = write("garbled.csv", "step,duration\na,3ms\na,soon\n");
    let empty = write("empty.csv", "");
    let unknown = write(
        "unknown.csv",
        "step,duration\nread_subscription,3ms\na,4ms\n",
    );
    let ms = write("ms.csv", "step,latency_ms\na,12\na,-1\n");
    let backwards = write(
        "backwards.json",
        r#"{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"x","startTimeUnixNano":"10","endTimeUnixNano":"5"}]}]}]}"#,
    );
    let billing = concat!(env!("CARGO_MANIFEST_DIR"), "/workloads/specs/billing.toml");
    let cases: Vec<(Vec<&str>, Vec<String>)> = vec![
        (
            vec![&negative],
            vec![
                format!("{negative}:3: field duration"),
                "non-negative".into(),
            ],
        ),
        (
            vec![&garbled],
            vec![format!("{garbled}:3: field duration"), "\"soon\"".into()],
        ),
        (
            vec![&empty],
            vec![
                format!("{empty}: empty"),
                "or an OTLP JSON trace export".into(),
            ],
        ),
        // The flag that names the step column is --step-column.
        (
            vec![&ms, "--ms-column", "latency_ms", "--step-column", "call"],
            vec![
                format!("{ms}:1: no column \"call\""),
                "name it with --step-column".into(),
            ],
        ),
        (
            vec![&ms, "--ms-column", "latency_ms"],
            vec![format!("{ms}:3: field latency_ms"), "milliseconds".into()],
        ),
        (
            vec![&backwards],
            vec![
                "spans[0]: field endTimeUnixNano".into(),
                "negative duration".into(),
            ],
        ),
        (
            vec![&unknown, "--spec", billing],
            vec![format!("{unknown}:3: field step"), "no step \"a\"".into()],
        ),
        (
            vec![&unknown, "--step", "b"],
            vec!["--step".into(), "\"b\"".into()],
        ),
    ];
    for (args, fragments) in cases {
        refused(
            &[&["calibrate"], &args[..], &["--out", out]].concat(),
            &fragments,
        );
        assert!(!Path::new(out).exists(), "nothing is written on bad input");
    }
}

#[test]
fn a_spec_whose_steps_are_only_partly_observed_keeps_the_others_as_they_were() {
    let dir = tempfile::tempdir().unwrap();
    let charge = Latency::lognormal(0.115, 0.360);
    let input = csv_of(dir.path(), &[("charge_payment", &charge, 2_000)], 11);
    let billing = concat!(env!("CARGO_MANIFEST_DIR"), "/workloads/specs/billing.toml");
    let out = dir.path().join("calibrated.toml");
    let record = calibrate(&[
        input.to_str().unwrap(),
        "--spec",
        billing,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(record["steps"].as_array().unwrap().len(), 1);
    assert_eq!(
        record["kept_steps"],
        serde_json::json!(["read_subscription", "update_status"])
    );
    validate(&out);
    let written = lockbench_workloads::WorkloadSpec::load(&out).unwrap();
    let original = lockbench_workloads::WorkloadSpec::load(Path::new(billing)).unwrap();
    let names: Vec<&str> = written.steps.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        ["charge_payment", "read_subscription", "update_status"]
    );
    for kept in ["read_subscription", "update_status"] {
        let a = &written.steps[written.step_index(kept).unwrap()];
        let b = &original.steps[original.step_index(kept).unwrap()];
        assert_eq!(a.target, b.target, "{kept}");
        assert_eq!(a.idempotent, b.idempotent, "{kept}");
        assert_eq!(a.guard, b.guard, "{kept}");
        for q in [0.5, 0.99, 0.999] {
            assert_eq!(
                a.latency.quantile(q),
                b.latency.quantile(q),
                "{kept} at {q}"
            );
        }
    }
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(
        text.contains("# Not observed, kept as in"),
        "the spec says which steps it kept: {text}"
    );
}
