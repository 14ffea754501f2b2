//! `lockbench run` and `lockbench report` as a user meets them: the main job completes with
//! nothing reachable but the in-process backend and says what it skipped; bad input is one line.

use assert_cmd::Command;

const SPECS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/workloads/specs");

fn lockbench() -> Command {
    Command::cargo_bin("lockbench").unwrap()
}

#[test]
fn run_with_no_server_reachable_still_completes_and_says_what_it_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("down.toml");
    std::fs::write(
        &config,
        "[backends.memory]\n\n[backends.redis]\nurls = [\"redis://127.0.0.1:1\"]\n\n[replay]\ndatabase = \"postgres://postgres@127.0.0.1:1/postgres\"\n",
    )
    .unwrap();
    let out = dir.path().join("run");
    let result = lockbench()
        .args(["run", "--quick", "--seed", "3", "--specs", SPECS])
        .args(["--config", config.to_str().unwrap()])
        .args(["--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(result.status.success(), "{stderr}");
    let skipped: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("lockbench: run: skipped"))
        .collect();
    assert_eq!(skipped.len(), 3, "{stderr}");
    assert!(skipped[0].contains("backend redis") && skipped[0].contains("127.0.0.1:1"));
    assert!(
        skipped[1].contains("the fault lab") && skipped[1].contains("Postgres"),
        "{stderr}"
    );
    assert!(
        skipped[2].contains("live replay") && skipped[2].contains("scripts/services.sh up"),
        "{stderr}"
    );
    for step in [
        "simulate",
        "ttl-billing",
        "ttl-migration",
        "bench",
        "report",
    ] {
        assert!(out.join(step).join("manifest.json").is_file(), "{step}");
    }
    let md = std::fs::read_to_string(out.join("report/report.md")).unwrap();
    assert!(md.contains("## 4. Idempotency and the lock's role"));
    assert!(md.contains("No live replay in these results"));
    assert!(md.contains("| `memory` |"));
    assert!(out.join("report/report.html").is_file());
    assert!(
        out.join("report/charts/runtime-percentiles-billing.png")
            .is_file()
    );
    // Nothing half-written is left beside it.
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains("partial"))
        .collect();
    assert!(leftovers.is_empty());
}

fn rejects(args: &[&str], fragment: &str) {
    let out = lockbench().args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains(fragment),
        "{args:?}: {stderr} lacks {fragment}"
    );
}

#[test]
fn report_and_run_refuse_bad_input_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let e = empty.to_str().unwrap();
    rejects(
        &["report", e, "--out", &format!("{e}-report")],
        "no manifest.json",
    );
    rejects(&["report", "/nonexistent/results"], "not a directory");
    let occupied = dir.path().join("occupied");
    std::fs::create_dir(&occupied).unwrap();
    std::fs::write(occupied.join("x"), "x").unwrap();
    rejects(
        &["run", "--quick", "--out", occupied.to_str().unwrap()],
        "occupied",
    );
    rejects(&["run", "--config", "/nonexistent.toml"], "--config");
    rejects(
        &["run", "--specs", e, "--out", &format!("{e}-run")],
        "--specs",
    );
}

#[test]
fn compare_shows_no_change_between_a_run_and_itself() {
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/analysis/tests/fixtures/run");
    let out = lockbench()
        .args(["compare", fixture, fixture, "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let changes = v["changes"].as_array().unwrap();
    assert!(changes.len() > 40);
    assert!(
        changes
            .iter()
            .filter(|c| !c["change_pct"].is_null())
            .all(|c| c["change_pct"] == 0.0)
    );
    let text = lockbench()
        .args(["compare", fixture, fixture])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&text.stdout);
    assert!(
        stdout.contains("runtime_p999_s") && stdout.contains("+0.0 %"),
        "{stdout}"
    );
    rejects(&["compare", fixture, "/nonexistent"], "not a directory");
}

#[test]
fn compare_says_when_two_sets_of_results_lead_to_different_decisions() {
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/analysis/tests/fixtures/run");
    let dir = tempfile::tempdir().unwrap();
    let other = dir.path().join("other");
    copy_dir(std::path::Path::new(fixture), &other);
    // The same measurements, but billing's spec now says the job already runs etcd.
    for entry in std::fs::read_dir(&other).unwrap() {
        let manifest = entry.unwrap().path().join("manifest.json");
        if let Ok(text) = std::fs::read_to_string(&manifest) {
            std::fs::write(
                &manifest,
                text.replace(
                    r#"already_runs = [\"postgres\"]"#,
                    r#"already_runs = [\"etcd\"]"#,
                ),
            )
            .unwrap();
        }
    }
    let out = lockbench()
        .args(["compare", fixture, other.to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let billing = v["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["job"] == "billing")
        .expect("billing decided on both");
    assert_eq!(billing["changed"], true, "{billing}");
    assert!(
        billing["before"]
            .as_str()
            .unwrap()
            .starts_with("pg-session")
    );
    assert!(
        billing["after"].as_str().unwrap().starts_with("etcd"),
        "{billing}"
    );
    let text = lockbench()
        .args(["compare", fixture, other.to_str().unwrap()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&text.stdout);
    assert!(
        stdout.contains("decision  billing: the results lead elsewhere: pg-session"),
        "{stdout}"
    );
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// A copy of the committed run with `file` edited by `edit`.
fn doctored(file: &str, edit: impl Fn(String) -> String) -> tempfile::TempDir {
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/analysis/tests/fixtures/run");
    let dir = tempfile::tempdir().unwrap();
    copy_dir(std::path::Path::new(fixture), &dir.path().join("run"));
    let path = dir.path().join("run").join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    let changed = edit(text.clone());
    assert_ne!(text, changed, "the edit changed nothing");
    std::fs::write(&path, changed).unwrap();
    dir
}

#[test]
fn report_and_compare_refuse_a_doctored_run_in_one_line() {
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/analysis/tests/fixtures/run");
    let renamed = doctored("ttl-billing/results.json", |t| {
        t.replace("\"measured_p999_s\"", "\"measured_p999_seconds\"")
    });
    let dropped = doctored("bench/bench.csv", |t| {
        let column = t
            .lines()
            .next()
            .and_then(|h| h.split(',').position(|c| c == "acquire_p99_us"))
            .expect("bench.csv has an acquire_p99_us column");
        t.lines()
            .map(|l| {
                let mut cells: Vec<&str> = l.split(',').collect();
                cells.remove(column);
                cells.join(",") + "\n"
            })
            .collect()
    });
    let bumped = doctored("replay-billing-ttl/manifest.json", |t| {
        t.replace("\"schema_version\": 3", "\"schema_version\": 4")
    });
    for (dir, fragments) in [
        (
            &renamed,
            [
                "ttl-billing/results.json",
                "measured_p999_seconds",
                "schema_version 3",
            ],
        ),
        (
            &dropped,
            ["bench/bench.csv", "acquire_p99_us", "schema_version 3"],
        ),
        (
            &bumped,
            [
                "replay-billing-ttl/manifest.json",
                "schema_version 4",
                "reads schema_version 3",
            ],
        ),
    ] {
        let run = dir.path().join("run");
        let run = run.to_str().unwrap();
        let report_out = dir.path().join("report");
        for args in [
            vec!["report", run, "--out", report_out.to_str().unwrap()],
            vec!["compare", fixture, run],
            vec!["compare", run, fixture],
        ] {
            let out = lockbench().args(&args).output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
            assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
            for f in fragments {
                assert!(stderr.contains(f), "{args:?}: {stderr} lacks {f}");
            }
            assert!(out.stdout.is_empty(), "{args:?}: nothing on stdout");
        }
        assert!(!report_out.exists(), "no report half written");
    }
}

#[test]
fn an_unwritable_out_is_refused_before_any_work() {
    for command in [
        vec![
            "simulate",
            concat!(env!("CARGO_MANIFEST_DIR"), "/workloads/specs/billing.toml"),
        ],
        vec!["run", "--quick"],
    ] {
        let mut args = command.clone();
        args.extend(["--out", "/proc/nope"]);
        rejects(
            &args,
            "--out /proc/nope: cannot create a results directory in /proc",
        );
    }
}
