//! `lockbench decide` and the `[decision]` answers: every bad answer refused in one line naming
//! its field; the four shipped specs give four different decisions, from how each backend locks
//! without results and citing measured fault cells with them.

mod common;

use std::path::Path;

use common::{json_of, lockbench, refused};
use serde_json::Value;

const SPECS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/workloads/specs");
const SAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/results/sample");

fn spec(name: &str) -> String {
    format!("{SPECS}/{name}.toml")
}

const BASE: &str = r#"
[workload]
name = "job"
volume = 10

[[steps]]
name = "charge"
target = "api"
latency = "10ms"
"#;

/// A spec file of `BASE` with `decision` (a `[decision]` table) and `step` (fields of the step).
fn with(dir: &Path, decision: &str, step: &str) -> String {
    let path = dir.join("job.toml");
    std::fs::write(&path, format!("{BASE}{step}\n{decision}\n")).unwrap();
    path.display().to_string()
}

#[test]
fn every_bad_answer_is_refused_in_one_line_naming_its_field() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, &str, &[&str]); 10] = [
        (
            "[decision]\ndouble_run = \"twice\"",
            "",
            &[
                "decision.double_run",
                "`absorbed`, `wasted-work`, `corrupts`, `charges`",
            ],
        ),
        (
            "[decision]\ndatabases = 0",
            "",
            &["decision.databases", "at least 1, got 0"],
        ),
        (
            "",
            "idempotent = true\nguard = \"idempotency-key\"",
            &["steps[0].guard", "marked idempotent = true"],
        ),
        (
            "[decision]\nalready_runs = [\"mysql\"]",
            "",
            &[
                "decision.already_runs[0]",
                "`postgres`, `redis`, `etcd`, `zookeeper`",
            ],
        ),
        (
            "[decision]\ncrash_recovery = \"-5m\"",
            "",
            &["decision.crash_recovery", "non-negative"],
        ),
        (
            "[decision]\ncrash_recovery = \"soon\"",
            "",
            &["decision.crash_recovery", "with a unit"],
        ),
        (
            "",
            "guard = \"retry\"",
            &["steps[0].guard", "`idempotency-key`"],
        ),
        (
            "",
            "alters_table = true",
            &[
                "steps[0].alters_table",
                "only a database step alters a table",
            ],
        ),
        (
            "[decision]\nfenced = \"yes\"",
            "",
            &["decision.fenced", "boolean"],
        ),
        (
            "[decision]\nclient = \"acme_lock\"",
            "",
            &[
                "decision.client",
                "unknown client \"acme_lock\"",
                "or the path of your own adapter",
            ],
        ),
    ];
    for (decision, step, fragments) in cases {
        let path = with(dir.path(), decision, step);
        let fragments: Vec<String> = fragments.iter().map(|f| f.to_string()).collect();
        refused(&["validate", &path], &fragments);
        refused(&["decide", &path], &fragments);
    }
}

fn decisions(args: &[&str]) -> Vec<Value> {
    json_of(args)
        .as_array()
        .expect("an array of decisions")
        .clone()
}

/// backend, lock model, failure policy.
fn choice(d: &Value) -> (String, String, String) {
    (
        d["backend"].as_str().unwrap_or("none").to_string(),
        d["lock_model"]["kind"].as_str().unwrap().to_string(),
        d["failure_policy"]["kind"].as_str().unwrap().to_string(),
    )
}

#[test]
fn the_four_shipped_specs_get_four_different_decisions() {
    let names = ["billing", "migration", "events", "ledger"];
    let paths: Vec<String> = names.iter().map(|n| spec(n)).collect();
    let mut args = vec!["decide", "--json"];
    args.extend(paths.iter().map(String::as_str));
    let all = decisions(&args);
    let got: Vec<(String, String, String)> = all.iter().map(choice).collect();
    let want = [
        ("pg-session", "session", "retry-then-alert"),
        ("pg-xact", "transaction", "retry-then-alert"),
        ("redis", "heartbeat-lease", "run-unlocked"),
        ("etcd", "heartbeat-lease", "retry-then-alert"),
    ];
    for ((got, want), name) in got.iter().zip(want).zip(names) {
        assert_eq!(
            (got.0.as_str(), got.1.as_str(), got.2.as_str()),
            want,
            "{name}"
        );
    }
    // ledger's two unguarded writes are a risk not acceptable yet: blocked on their guards, and
    // the record says what the decision becomes once they exist.
    for d in &all {
        let want = if d["job"] == "ledger" {
            "blocked"
        } else {
            "proposed"
        };
        assert_eq!(d["status"], want, "{}", d["job"]);
    }
    let ledger = &all[3];
    let after = &ledger["after"];
    assert_eq!(after["backend"], "zookeeper", "{after:#}");
    assert_eq!(
        after["assumed"],
        serde_json::json!([
            {"assume": "guard", "step": "debit_source"},
            {"assume": "guard", "step": "credit_destination"},
        ])
    );
    // Text: the first line says nothing was measured.
    let out = lockbench()
        .args(["decide", &spec("billing")])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let first = text.lines().next().unwrap();
    assert!(
        first.starts_with("billing: from how each backend locks"),
        "{first}"
    );
}

#[test]
fn assume_decides_as_if_an_action_were_done_and_refuses_a_step_no_spec_has() {
    let ledger = spec("ledger");
    let both = decisions(&[
        "decide",
        "--json",
        &ledger,
        "--assume",
        "guard:debit_source",
        "--assume",
        "guard:credit_destination",
    ]);
    assert_eq!(both[0]["backend"], "zookeeper", "{:#}", both[0]);
    assert_eq!(both[0]["role"]["correctness"], false);
    refused(
        &["decide", &ledger, "--assume", "guard:refund"],
        &[
            "--assume",
            "no spec given has a step \"refund\"",
            "debit_source",
        ],
    );
    refused(
        &["decide", &ledger, "--assume", "fence:debit_source"],
        &["--assume", "expected guard:STEP or client:NAME"],
    );
    refused(
        &["decide", &ledger, "--assume", "client:nope"],
        &["--assume", "unknown client \"nope\"", "etcd-go"],
    );
}

#[test]
fn with_results_each_decision_cites_a_measured_fault_cell() {
    let names = ["billing", "migration", "events", "ledger"];
    let paths: Vec<String> = names.iter().map(|n| spec(n)).collect();
    let mut args = vec!["decide", "--json", "--results", SAMPLE];
    args.extend(paths.iter().map(String::as_str));
    for d in decisions(&args) {
        let basis = d["basis"].as_str().unwrap();
        assert!(basis.starts_with("measured: "), "{basis}");
        let cited = d["alternatives"]
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v["basis"] == "measured")
            || d["mechanisms"]
                .as_array()
                .unwrap()
                .iter()
                .any(|m| m["measured"].as_str().is_some_and(|s| s.contains("trial")));
        assert!(cited, "{} cites no fault cell: {d:#}", d["job"]);
    }
}

#[test]
fn a_spec_without_answers_is_undecided_and_says_what_each_answer_would_change() {
    let dir = tempfile::tempdir().unwrap();
    let path = with(dir.path(), "", "");
    let all = decisions(&["decide", "--json", &path]);
    let d = &all[0];
    assert_eq!(d["status"], "undecided");
    let missing = d["missing"].as_array().unwrap();
    let fields: Vec<&str> = missing
        .iter()
        .map(|m| m["field"].as_str().unwrap())
        .collect();
    assert!(fields.contains(&"decision.double_run"), "{fields:?}");
    assert!(fields.contains(&"decision.crash_recovery"), "{fields:?}");
    let double_run = missing
        .iter()
        .find(|m| m["field"] == "decision.double_run")
        .unwrap();
    assert!(
        double_run["would_change"]
            .as_str()
            .unwrap()
            .contains("double_run = absorbed: redis"),
        "{double_run}"
    );
    // Every other command still takes the spec.
    lockbench().args(["validate", &path]).assert().success();
}
