//! `lockbench faults --scenario runner`: the real BullMQ, Celery and pg-boss workers (pinned,
//! installed by `scripts/clients.sh up`) on the lab's private Redis and the local Postgres run one
//! job twice when their own timeout is shorter than it, and once at the setting `ttl`'s rule
//! recommends; a lock inside the task makes the second start skip when it outlives the job, and
//! does not when its lease is the shorter; the run leaves nothing behind.

mod common;

use common::lab::{assert_left_nothing, faults, n};
use serde_json::Value;

/// The runner scripts' names, as their workers' command lines carry them.
const SCRIPTS: [&str; 3] = ["bullmq_runner.js", "celery_runner.py", "pgboss_runner.js"];

fn runner_cell<'a>(record: &'a Value, runner: &str, recommended: bool, lock: &str) -> &'a Value {
    record["runners"]
        .as_array()
        .expect("the record has runner cells")
        .iter()
        .find(|c| c["runner"] == runner && c["recommended"] == recommended && c["task_lock"] == lock)
        .unwrap_or_else(|| {
            panic!(
                "no {runner} cell (recommended: {recommended}, task lock: {lock}) in {}; not run: {} (libraries: scripts/clients.sh up)",
                record["runners"], record["runners_not_run"]
            )
        })
}

#[test]
fn each_runner_runs_a_living_job_twice_under_a_short_setting_and_once_at_the_recommended_one() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("runners");
    let (record, pid) = faults(&[
        "--scenario",
        "runner",
        "--trials",
        "3",
        "--out",
        out.to_str().unwrap(),
    ]);
    for (runner, setting) in [
        ("bullmq", "lock_duration"),
        ("celery", "visibility_timeout"),
        ("pg-boss", "expire_in"),
    ] {
        let short = runner_cell(&record, runner, false, "none");
        assert_eq!(short["setting"], setting);
        assert!(short["setting_s"].as_f64().unwrap() < short["job_s"].as_f64().unwrap());
        assert_eq!(short["executions"], serde_json::json!([2, 2, 2]), "{short}");
        // Both executions ran at once, and the first wrote after the second had started.
        assert!(short["overlap_max_s"].as_f64().unwrap() > 0.5, "{short}");
        assert!(n(&short["stale_writes"]) >= 3, "{short}");
        // The second started after the setting ran out, not before.
        let second = short["second_start_p50_s"].as_f64().unwrap();
        assert!(
            second >= 0.9 * short["setting_s"].as_f64().unwrap(),
            "{short}"
        );

        let recommended = runner_cell(&record, runner, true, "none");
        assert!(
            recommended["setting_s"].as_f64().unwrap() > recommended["job_s"].as_f64().unwrap()
        );
        assert_eq!(
            recommended["executions"],
            serde_json::json!([1, 1, 1]),
            "{recommended}"
        );
        assert_eq!(n(&recommended["stale_writes"]), 0);
        assert!(recommended["library"].as_str().unwrap().contains(' '));

        // A lock inside the task that outlives the job: the runner starts it again all the same,
        // and the second start finds the lock held and does nothing.
        let locked = runner_cell(&record, runner, false, "outlives");
        assert_eq!(
            locked["executions"],
            serde_json::json!([1, 1, 1]),
            "{locked}"
        );
        assert_eq!(locked["skipped"], serde_json::json!([1, 1, 1]), "{locked}");
        assert_eq!(n(&locked["stale_writes"]), 0);
        // A lease shorter than the runner's second start: gone by then, both run.
        if runner != "pg-boss" {
            let shorter = runner_cell(&record, runner, false, "shorter");
            assert_eq!(
                shorter["executions"],
                serde_json::json!([2, 2, 2]),
                "{shorter}"
            );
            assert_eq!(
                shorter["skipped"],
                serde_json::json!([0, 0, 0]),
                "{shorter}"
            );
            assert!(
                shorter["overlap_max_s"].as_f64().unwrap() > 0.5,
                "{shorter}"
            );
        }
    }
    // The slot cells: one slot fired by two nodes, the second's clock behind; a duplicate only
    // where the skew outlasts the run and the hold.
    let slots = record["slots"]
        .as_array()
        .expect("the record has slot cells");
    let runs: Vec<(String, Value)> = slots
        .iter()
        .map(|c| {
            let label = match c["hold_s"].as_f64() {
                Some(h) => format!(
                    "{} {h}s skew {}s",
                    c["remedy"].as_str().unwrap(),
                    c["skew_s"]
                ),
                None => format!("{} skew {}s", c["remedy"].as_str().unwrap(), c["skew_s"]),
            };
            (label, c["runs"].clone())
        })
        .collect();
    let three = |n: u32| serde_json::json!([n, n, n]);
    assert_eq!(
        runs,
        [
            ("plain skew 0.0s".to_string(), three(1)),
            ("plain skew 2.0s".to_string(), three(2)),
            ("hold 1s skew 2.0s".to_string(), three(2)),
            ("hold 4s skew 2.0s".to_string(), three(1)),
            ("db-clock skew 2.0s".to_string(), three(1)),
            ("completion skew 2.0s".to_string(), three(1)),
        ],
        "{}",
        record["slots"]
    );
    // A duplicate starts when the second node's clock reaches the slot: the skew after the first.
    let duplicated = &slots[1];
    let second = duplicated["second_run_p50_s"].as_f64().unwrap();
    assert!((1.8..3.0).contains(&second), "{duplicated}");
    assert!(
        record["runners_not_run"].is_null(),
        "{}",
        record["runners_not_run"]
    );

    // The stall cells: the first execution stalled for a time drawn from the pause law; the
    // trials run twice within the range the model allows (the runner looking at once or a
    // whole check late), and
    // each outcome as the runner's mechanism says: run twice when the stall outlived the setting
    // and a whole check, once when it did not outlive the setting.
    let stalls = record["stalls"]
        .as_array()
        .expect("the record has stall cells");
    assert_eq!(stalls.len(), 3, "{}", record["stalls"]);
    for c in stalls {
        let executions: Vec<u64> = c["executions"].as_array().unwrap().iter().map(n).collect();
        let twice = executions.iter().filter(|e| **e >= 2).count() as u64;
        let range = &c["expected_twice"];
        assert_eq!(executions.len(), 20, "{c}");
        assert!(
            (n(&range[0])..=n(&range[1])).contains(&twice),
            "{} ran twice in {twice} of 20 trials, outside the model's range {range}: {c}",
            c["runner"]
        );
        let setting = c["setting_s"].as_f64().unwrap();
        let check = c["check_s"].as_f64().unwrap();
        for (stall, executions) in c["stalls_s"].as_array().unwrap().iter().zip(&executions) {
            let stall = stall.as_f64().unwrap();
            if stall < setting - 0.1 {
                assert_eq!(*executions, 1, "a {stall} s stall ran twice: {c}");
            }
            if stall > setting + check + 0.3 {
                assert_eq!(*executions, 2, "a {stall} s stall ran once: {c}");
            }
        }
    }

    // The record cites what the lab measured of billing's runner (Celery) beside its pricing.
    let report = dir.path().join("report");
    let sample_ttl = concat!(env!("CARGO_MANIFEST_DIR"), "/results/sample/ttl-billing");
    let made = common::lockbench()
        .args(["report", sample_ttl, out.to_str().unwrap(), "--out"])
        .arg(&report)
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let text = std::fs::read_to_string(report.join("report.md")).unwrap();
    let measured = text
        .lines()
        .find(|l| l.starts_with("Measured in the fault lab"))
        .unwrap_or_else(|| panic!("no lab measurement in the record's runner part"));
    assert!(
        measured.contains("celery 5.7.0")
            && measured.contains("ran it 2 2 2 times a trial")
            && measured.contains("the second start skipped (1 1 1 skipped)")
            && measured.contains("of 20 trials ran twice; the model gives"),
        "{measured}"
    );

    // runners.csv: one row per trial, read as CSV.
    let csv = std::fs::read_to_string(out.join("runners.csv")).unwrap();
    let mut rows = csv::Reader::from_reader(csv.as_bytes());
    let header = rows.headers().unwrap().clone();
    assert_eq!(
        header.iter().collect::<Vec<_>>(),
        [
            "runner",
            "setting",
            "setting_s",
            "recommended",
            "task_lock",
            "trial",
            "executions",
            "overlap_s",
            "stale_writes",
            "second_start_s",
            "skipped",
            "stall_s"
        ]
    );
    assert_eq!(rows.records().count(), 33 + 3 * 20);

    // Nothing left: the lab's schemas (pg-boss's own among them), keys and processes, and no
    // runner worker.
    assert_left_nothing(&record, pid);
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline);
        assert!(
            !SCRIPTS.iter().any(|s| cmdline.contains(s)),
            "left running: {cmdline:?}"
        );
    }
}

#[test]
fn the_runner_scenario_takes_no_lock_client() {
    common::refused(
        &[
            "faults",
            "--config",
            common::CONFIG,
            "--scenario",
            "runner",
            "--client",
            "redis-py",
        ],
        &["--client", "takes no lock client"],
    );
}
