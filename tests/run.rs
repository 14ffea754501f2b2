//! `lockbench run` and `lockbench report` as a user meets them: the main job completes with
//! nothing reachable but the in-process backend and says what it skipped; bad input is one line.

use std::io::BufRead;
use std::sync::mpsc;
use std::time::{Duration, Instant};

mod common;
use common::lab::{assert_lab_left_nothing, lab_namespaces};
use common::{SPECS, assert_refused, lockbench, lockbench_process, refused};

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
    assert_eq!(skipped.len(), 4, "{stderr}");
    assert!(skipped[0].contains("backend redis") && skipped[0].contains("127.0.0.1:1"));
    assert!(
        skipped[1].contains("the fault lab") && skipped[1].contains("Postgres"),
        "{stderr}"
    );
    // ledger names Curator: its lab cells need the same Postgres.
    assert!(
        skipped[2].contains("through the client libraries") && skipped[2].contains("Postgres"),
        "{stderr}"
    );
    assert!(
        skipped[3].contains("live replay") && skipped[3].contains("scripts/services.sh up"),
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
    assert!(md.contains("### billing 4: idempotency, step by step"));
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

#[test]
fn report_and_run_refuse_bad_input_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let e = empty.to_str().unwrap();
    refused(
        &["report", e, "--out", &format!("{e}-report")],
        &["no manifest.json"],
    );
    refused(&["report", "/nonexistent/results"], &["not a directory"]);
    let occupied = dir.path().join("occupied");
    std::fs::create_dir(&occupied).unwrap();
    std::fs::write(occupied.join("x"), "x").unwrap();
    refused(
        &["run", "--quick", "--out", occupied.to_str().unwrap()],
        &["occupied"],
    );
    refused(&["run", "--config", "/nonexistent.toml"], &["--config"]);
    refused(
        &["run", "--specs", e, "--out", &format!("{e}-run")],
        &["--specs"],
    );
}

#[test]
fn compare_shows_no_change_between_a_run_and_itself() {
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/analysis/tests/fixtures/run");
    let v = common::json_of(&["compare", fixture, fixture, "--json"]);
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
    refused(&["compare", fixture, "/nonexistent"], &["not a directory"]);
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
    let v = common::json_of(&["compare", fixture, other.to_str().unwrap(), "--json"]);
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
        t.replace("\"schema_version\": 4", "\"schema_version\": 5")
    });
    // A faults directory that lost a row: its last trial, or one event (the holder's end of the
    // first trial that has one).
    let lost_trial = doctored("faults/trials.csv", |t| {
        let lines: Vec<&str> = t.lines().collect();
        lines[..lines.len() - 1].join("\n") + "\n"
    });
    let lost_event = doctored("faults/events.csv", |t| {
        let mut dropped = false;
        t.lines()
            .filter(|l| {
                let hit = !dropped && l.contains(",holder,end,");
                dropped |= hit;
                !hit
            })
            .map(|l| format!("{l}\n"))
            .collect()
    });
    for (dir, fragments) in [
        (
            &lost_trial,
            [
                "faults/trials.csv",
                "trial rows, but results.json says it ran 1 trials",
                "a row is missing",
            ],
        ),
        (
            &lost_event,
            [
                "faults/events.csv",
                "has no holder end event",
                "a row is missing",
            ],
        ),
        (
            &renamed,
            [
                "ttl-billing/results.json",
                "measured_p999_seconds",
                "schema_version 4",
            ],
        ),
        (
            &dropped,
            ["bench/bench.csv", "acquire_p99_us", "schema_version 4"],
        ),
        (
            &bumped,
            [
                "replay-billing-ttl/manifest.json",
                "schema_version 5",
                "reads schema_version 4",
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
            assert_refused(&out, &args, &fragments);
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
        refused(
            &args,
            &["--out /proc/nope: cannot create a results directory in /proc"],
        );
    }
}

/// `run` started as a supervisor starts it: its own pid, stderr read line by line (the lines come
/// through the channel), the two reachable backends a fault lab needs and one small spec.
struct Supervised {
    child: std::process::Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
    dir: tempfile::TempDir,
}

impl Supervised {
    fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("lockbench.toml");
        std::fs::write(
            &config,
            "[backends.redis]\nurls = [\"redis://127.0.0.1:6390\"]\n\n[backends.pg-session]\nurls = [\"postgres://postgres@127.0.0.1:5442/postgres\"]\n",
        )
        .unwrap();
        let specs = dir.path().join("specs");
        std::fs::create_dir(&specs).unwrap();
        std::fs::copy(format!("{SPECS}/events.toml"), specs.join("events.toml")).unwrap();
        let mut child = lockbench_process()
            .args(["run", "--quick", "--seed", "5"])
            .arg("--specs")
            .arg(&specs)
            .arg("--config")
            .arg(&config)
            .arg("--out")
            .arg(dir.path().join("run"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (send, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
            {
                let _ = send.send(line);
            }
        });
        Supervised {
            child,
            lines,
            seen: Vec::new(),
            dir,
        }
    }

    /// The first line (from now on) that starts with `prefix`, within 4 minutes.
    fn wait_for(&mut self, prefix: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(240);
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if line.starts_with(prefix) {
                        return line;
                    }
                }
                Err(_) => break,
            }
        }
        let _ = self.child.kill();
        panic!("run never said \"{prefix}...\":\n{}", self.seen.join("\n"));
    }

    /// `kill -SIGNAL` to run's pid alone (not its process group, as a terminal would).
    fn signal(&self, signal: &str) {
        let pid = self.child.id().to_string();
        let status = std::process::Command::new("kill")
            .args([&format!("-{signal}"), &pid])
            .status()
            .unwrap();
        assert!(status.success(), "kill -{signal} {pid}");
    }

    /// Its exit code (within 2 minutes) and everything it said.
    fn finish(mut self) -> (i32, String, tempfile::TempDir) {
        let deadline = Instant::now() + Duration::from_secs(120);
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("run did not exit within 2 minutes of the signal");
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(2)) {
            self.seen.push(line);
        }
        (status.code().unwrap_or(-1), self.seen.join("\n"), self.dir)
    }

    /// The pid of the step `run` is running (its child whose arguments start with `step`), once
    /// it has started it (within 5 s).
    fn step_pid(&self, step: &str) -> u32 {
        let parent = self.child.id().to_string();
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(5) {
            for entry in std::fs::read_dir("/proc").unwrap().flatten() {
                let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
                    continue;
                };
                // pid (comm) state ppid ...: the fields after the last ')'.
                let ppid = stat.rsplit(')').next().unwrap().split_whitespace().nth(1);
                let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
                let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
                if ppid == Some(parent.as_str()) && args.get(1) == Some(&step.as_bytes()) {
                    return entry.file_name().to_string_lossy().parse().unwrap();
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("run has no {step} step running");
    }
}

/// Nothing of the results: neither the folder nor its staging sibling.
fn assert_no_results(dir: &std::path::Path) {
    let left: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".run.partial") || n == "run")
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// The interim record a stopped run keeps: the steps before the one stopped, their report labelled
/// with what was still to measure (`pending` first among it), and nothing staged beside it.
fn assert_interim_record(dir: &std::path::Path, pending: &str) {
    let run = dir.join("run");
    let mut kept: Vec<String> = std::fs::read_dir(&run)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    kept.sort();
    assert!(
        kept.contains(&"bench".to_string()) && kept.contains(&"report".to_string()),
        "{kept:?}"
    );
    assert!(!kept.iter().any(|n| n.starts_with("faults")), "{kept:?}");
    assert!(!kept.iter().any(|n| n.starts_with('.')), "{kept:?}");
    // Marked stopped: nobody reads it as a run still measuring.
    let report = std::fs::read_to_string(run.join("report/report.md")).unwrap();
    assert!(
        report.contains("**Interim record of a stopped run.**")
            && report.contains(&format!("stopped it: {pending}"))
            && !report.contains("is still measuring"),
        "{}",
        &report[..800.min(report.len())]
    );
    let hidden: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".run."))
        .collect();
    assert!(hidden.is_empty(), "left behind: {hidden:?}");
}

/// A supervisor's SIGINT, then its SIGTERM, to `run`'s pid alone during the fault step: the lab
/// gets the signal from `run`, stops its trial, its private servers and its namespace, drops its
/// schema; `run` waits for it, removes its staging folder and exits 130 (the first signal),
/// keeping the interim record of the steps before the lab.
#[test]
fn a_signal_to_runs_pid_reaches_the_fault_lab_and_keeps_the_interim_record() {
    let namespaces = lab_namespaces();
    let mut run = Supervised::start();
    run.wait_for("== what each backend cannot prevent");
    let lab = run.wait_for("fault lab: keys under ");
    let keys = lab
        .strip_prefix("fault lab: keys under ")
        .and_then(|rest| rest.split(',').next())
        .unwrap()
        .to_string();
    let lab_pid = run.step_pid("faults");
    // Into its first cells: private servers up, workers holding locks.
    std::thread::sleep(Duration::from_secs(4));
    run.signal("INT");
    std::thread::sleep(Duration::from_millis(500));
    run.signal("TERM");
    let (code, said, dir) = run.finish();
    assert_eq!(code, 130, "{said}");
    assert!(
        said.contains("SIGINT received; passing it to the step in flight (faults)"),
        "{said}"
    );
    assert!(
        said.contains("lockbench: error: interrupted by SIGINT; faults stopped and cleaned up after itself; removed the staging folder; "),
        "{said}"
    );
    assert!(
        said.contains("keeps the interim record written after the simulation (runtimes and TTLs) and the benchmark of every reachable backend"),
        "{said}"
    );
    assert!(!said.contains("run: done"), "{said}");
    assert_interim_record(dir.path(), "the fault lab");
    assert!(
        !std::path::Path::new(&format!("/proc/{lab_pid}")).exists(),
        "the fault lab (pid {lab_pid}) outlived run"
    );
    assert_lab_left_nothing(&keys, lab_pid);
    assert_eq!(lab_namespaces(), namespaces, "a lab namespace was left");
}

/// SIGTERM, as a container runtime sends it to pid 1, during the first steps, before the first
/// interim record: exit 143, nothing written. The simulation of one spec takes about half a
/// second with the block engine, so the signal may find the `ttl` step after it instead.
#[test]
fn sigterm_to_run_during_a_step_exits_143_and_writes_nothing() {
    let mut run = Supervised::start();
    run.wait_for("== runtimes of every profile");
    run.step_pid("simulate");
    // Past the step's start-up, where it installs its own handlers.
    std::thread::sleep(Duration::from_millis(150));
    run.signal("TERM");
    let (code, said, dir) = run.finish();
    assert_eq!(code, 143, "{said}");
    assert!(
        ["simulate", "ttl"].iter().any(|step| said.contains(&format!(
            "lockbench: error: interrupted by SIGTERM; {step} stopped and cleaned up after itself; removed the staging folder, no results written"
        ))),
        "{said}"
    );
    assert_no_results(dir.path());
}

/// A supervisor's SIGKILL after its grace period: `run` cannot clean up, but the kernel sends its
/// step a SIGTERM, so the step stops the way it does on any SIGTERM; the staging folder `run`
/// left is removed by the next run (core's `remove_stale_staging`).
#[test]
fn a_sigkilled_run_takes_its_step_with_it() {
    let mut run = Supervised::start();
    run.wait_for("== runtimes of every profile");
    let step = run.step_pid("simulate");
    run.signal("KILL");
    let (code, said, dir) = run.finish();
    assert_eq!(code, -1, "killed by a signal: {said}");
    let started = Instant::now();
    while std::path::Path::new(&format!("/proc/{step}")).exists() {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the simulate step (pid {step}) outlived its run"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let staged = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .any(|e| e.file_name().to_string_lossy().starts_with(".run.partial-"));
    assert!(staged, "the control: a SIGKILL leaves run's staging folder");
}
