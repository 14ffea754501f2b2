//! The fault lab against the real local servers (scripts/services.sh up). Positive controls: a
//! cell built to overlap that shows no overlap is a bug in the lab, so these assert overlaps in
//! every trial where the backend's design allows them, none where it prevents them, and a fence
//! that refuses every stale write wherever the backend gives tokens. Each run must leave the
//! machine as it found it: no process, directory, schema, key, lease or znode of its own. Bad
//! flags are refused in one line.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::lab::{
    assert_left_nothing, cell, cell_through, faults, faults_exiting, n, one_trial_through, output,
};
use common::{CONFIG, lockbench_process, refused};
use serde_json::Value;

#[test]
fn a_paused_holder_overlaps_where_the_lock_expires_and_the_fence_refuses_its_stale_writes() {
    let (record, pid) = faults(&[
        "--scenario",
        "pause/naive",
        "--trials",
        "2",
        "--ttl",
        "1s",
        "--backend",
        "redis",
        "--backend",
        "redis-fair",
        "--backend",
        "redlock",
        "--backend",
        "pg-session",
        "--backend",
        "etcd",
        "--backend",
        "zookeeper",
    ]);
    assert_eq!(record["cells"].as_array().unwrap().len(), 6, "{record}");
    assert!(record["skipped"].as_array().unwrap().is_empty(), "{record}");
    // The fair queue changes who waits next, not what a TTL is: it expires under a pause alike.
    for backend in ["redis", "redis-fair", "redlock", "etcd", "zookeeper"] {
        let c = cell(&record, "pause/naive", backend);
        assert_eq!(n(&c["trials_with_overlap"]), 2, "{backend}: {c}");
        assert_eq!(c["expected"], "overlap");
        // Each resumed holder writes once before it looks at its lease.
        assert_eq!(n(&c["stale_writes"]), 2, "{backend}: {c}");
        assert!(c["overlap_max_s"].as_f64().unwrap() > 0.0);
    }
    // Every backend that declares a fencing source refuses every stale write.
    for backend in ["redis", "redis-fair", "etcd", "zookeeper"] {
        let c = cell(&record, "pause/naive", backend);
        assert_eq!(
            c["stale_rejected_by_fence"], c["stale_writes"],
            "{backend}: {c}"
        );
        assert_eq!(n(&c["legitimate_rejected_by_fence"]), 0, "{backend}: {c}");
    }
    // Redlock has no token: the figure is absent, not 0.
    let redlock = cell(&record, "pause/naive", "redlock");
    assert!(redlock["stale_rejected_by_fence"].is_null(), "{redlock}");
    assert_eq!(redlock["fencing"], "none");
    // The session stays open through the pause: a stall, not an overlap.
    let pg = cell(&record, "pause/naive", "pg-session");
    assert_eq!(n(&pg["trials_with_overlap"]), 0, "{pg}");
    assert_eq!(n(&pg["stale_writes"]), 0, "{pg}");
    assert!(
        pg["recovery_p50_s"].as_f64().unwrap() > 2.0,
        "the contender waited out the pause: {pg}"
    );
    // etcd and ZooKeeper grant at least their minimum: the pause follows the granted TTL.
    assert!(
        cell(&record, "pause/naive", "etcd")["granted_ttl_s"]
            .as_f64()
            .unwrap()
            >= 2.0
    );
    assert_left_nothing(&record, pid);
}

#[test]
fn a_heartbeat_survives_a_pause_shorter_than_its_margin_and_stops_a_longer_one_before_it_writes() {
    let (record, pid) = faults(&[
        "--scenario",
        "pause/heartbeat-short",
        "--scenario",
        "pause/heartbeat-long",
        "--trials",
        "2",
        "--ttl",
        "1s",
        "--backend",
        "redis",
    ]);
    let short = cell(&record, "pause/heartbeat-short", "redis");
    assert_eq!(n(&short["trials_with_overlap"]), 0, "{short}");
    assert_eq!(n(&short["stale_writes"]), 0, "{short}");
    let long = cell(&record, "pause/heartbeat-long", "redis");
    assert_eq!(
        n(&long["trials_with_overlap"]),
        2,
        "the lease expired during the pause: {long}"
    );
    assert_eq!(
        n(&long["stale_writes"]),
        0,
        "the holder asked its heartbeat before writing: {long}"
    );
    assert_left_nothing(&record, pid);
}

#[test]
fn a_redis_restart_hands_the_lock_on_unless_the_key_survives_it_or_the_ttl_has_passed() {
    // A TTL of 5 s: the holder's job (two thirds of it) must outlast the kill, the restart and
    // the contender's grant. A restart is not bounded by it: one took 1.8 s at a 2 s TTL while
    // the cluster cells started their servers beside it (CI at 5f5ce5f), another 4.4 s at 5 s
    // (CI at 13a0046, redis-server's start-up fsyncs behind the clusters'), and a restart that
    // outlasts the job hides a lost key. So each trial is judged on its own timing below.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("faults");
    let (record, pid) = faults(&[
        "--scenario",
        "restart",
        "--trials",
        "2",
        "--ttl",
        "5s",
        "--backend",
        "redis",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(record["skipped"].as_array().unwrap().is_empty(), "{record}");
    let trials = trial_rows(&out.join("trials.csv"));
    // Lost with the process (no persistence; RDB with no save point due), or with what the OS
    // had not fsynced (a power loss behind everysec): a second holder while the first works,
    // in every trial whose server came back before the holder's job ended (at least one).
    for lost in [
        "restart/no-persistence",
        "restart/rdb",
        "restart/power-loss",
    ] {
        let c = cell(&record, lost, "redis");
        assert_eq!(c["expected"], "overlap", "{lost}");
        let variant = lost.trim_start_matches("restart/");
        let back_in_time: Vec<_> = trials
            .iter()
            .filter(|t| t["variant"] == variant && f(t, "fault_end_s") < f(t, "holder_end_s"))
            .collect();
        assert!(
            !back_in_time.is_empty(),
            "{lost}: no trial's restart ended before the holder's job, nothing was tested: {c}"
        );
        for t in back_in_time {
            assert!(f(t, "overlap_s") > 0.0, "{lost}: {t:?}");
            assert!(f(t, "stale_writes") >= 1.0, "{lost}: {t:?}");
        }
    }
    // The fencing counter lives in the same Redis and started again below the holder's token:
    // the fence refuses the new holder and lets the stale one through.
    let lost = cell(&record, "restart/no-persistence", "redis");
    assert!(n(&lost["legitimate_rejected_by_fence"]) >= 2, "{lost}");
    assert_eq!(n(&lost["stale_rejected_by_fence"]), 0, "{lost}");
    // Kept through a process crash by the AOF (written before each reply, fsynced or not), or
    // restarted only once the TTL had passed (the distlock page's mitigation): no overlap.
    for kept in [
        "restart/aof-everysec",
        "restart/aof-always",
        "restart/delayed-restart",
    ] {
        let c = cell(&record, kept, "redis");
        assert_eq!(n(&c["trials_with_overlap"]), 0, "{kept}: {c}");
        assert_eq!(n(&c["stale_writes"]), 0, "{kept}: {c}");
        assert_eq!(c["expected"], "no overlap", "{kept}");
    }
    assert_left_nothing(&record, pid);
}

/// The rows of a results directory's trials.csv, by column.
fn trial_rows(path: &Path) -> Vec<std::collections::HashMap<String, String>> {
    csv::Reader::from_path(path)
        .unwrap()
        .deserialize()
        .map(|row| row.unwrap())
        .collect()
}

/// A trial row's number in `column` (0 when empty).
fn f(row: &std::collections::HashMap<String, String>, column: &str) -> f64 {
    row[column].parse().unwrap_or(0.0)
}

#[test]
fn results_directory_holds_the_matrix_the_trials_and_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("faults");
    let (record, _) = faults(&[
        "--scenario",
        "pause/naive",
        "--trials",
        "1",
        "--ttl",
        "1s",
        "--backend",
        "redis",
        "--out",
        out.to_str().unwrap(),
    ]);
    for file in ["manifest.json", "results.json", "trials.csv", "events.csv"] {
        assert!(out.join(file).is_file(), "{file}");
    }
    let written: Value =
        serde_json::from_slice(&std::fs::read(out.join("results.json")).unwrap()).unwrap();
    assert_eq!(written, record);
    let events = std::fs::read_to_string(out.join("events.csv")).unwrap();
    assert!(
        events.lines().any(|l| l.contains(",holder,grant,")),
        "{events}"
    );
    assert!(
        events.lines().any(|l| l.contains(",contender,grant,")),
        "{events}"
    );
    assert!(Path::new(&out).join("trials.csv").metadata().unwrap().len() > 0);
}

#[test]
fn an_interrupted_run_stops_what_it_started_and_removes_what_it_made() {
    let child = lockbench_process()
        .args(["faults", "--config", CONFIG, "--seed", "3"])
        .args([
            "--scenario",
            "pause/naive",
            "--backend",
            "redis",
            "--trials",
            "5",
            "--ttl",
            "1s",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    // Interrupted once a worker of it runs (within 20 s).
    let mark = format!("--lab\0{pid}\0");
    let started = std::time::Instant::now();
    let has_worker = || {
        std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
            std::fs::read(e.path().join("cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&mark))
        })
    };
    while !has_worker() {
        assert!(started.elapsed().as_secs() < 20, "no worker started");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    interrupt(pid);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    assert!(out.stdout.is_empty(), "no matrix for an interrupted run");
    let namespace = stderr
        .split_whitespace()
        .find(|w| w.starts_with("lockbench-faults-"))
        .unwrap_or_else(|| panic!("no namespace in {stderr}"))
        .trim_end_matches(',');
    assert_left_nothing(&serde_json::json!({ "namespace": namespace }), pid);
}

/// A partition lab killed with SIGKILL mid-trial: its private server and its workers die with it
/// (a parent-death signal); what cannot (the network namespace, the subnet claim, the server's
/// directory, the schema) is in its register, and the next `lockbench faults --clean` removes it,
/// saying so.
#[test]
fn a_lab_killed_with_sigkill_leaves_nothing_after_the_next_clean() {
    let temp = tempfile::tempdir().unwrap();
    let (child, register) = lab_in(
        temp.path(),
        &[
            "--seed",
            "4",
            "--scenario",
            "partition/heartbeat",
            "--trials",
            "3",
        ],
        Stdio::piped(),
    );
    let pid = child.id();
    let server_mark = format!("lockbench-faults-{pid}-redis");
    let running = |mark: &str| {
        std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
            std::fs::read(e.path().join("cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(mark))
        })
    };
    let namespaces = || -> Vec<String> {
        register_lines(&register)
            .into_iter()
            .filter(|v| v["kind"] == "namespace")
            .map(|v| v["name"].as_str().unwrap().to_string())
            .collect()
    };
    // Killed once its private server runs and its namespace exists (within 30 s).
    let started = std::time::Instant::now();
    while !(running(&server_mark)
        && namespaces()
            .iter()
            .any(|n| Path::new("/run/netns").join(n).exists()))
    {
        assert!(
            started.elapsed().as_secs() < 30,
            "the lab made no namespace and server"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    sigkill(pid);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let keys = stderr
        .split_whitespace()
        .find(|w| w.starts_with("lockbench-faults-"))
        .unwrap_or_else(|| panic!("no namespace in {stderr}"))
        .trim_end_matches(',')
        .to_string();
    // The server and workers die with the lab, not at the next clean.
    let lab_mark = format!("--lab\0{pid}\0");
    let started = std::time::Instant::now();
    while running(&server_mark) || running(&lab_mark) {
        assert!(
            started.elapsed().as_secs() < 3,
            "a private server or worker outlived the lab"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let left = namespaces();
    assert!(!left.is_empty(), "the register names no namespace");
    assert!(
        left.iter()
            .all(|n| Path::new("/run/netns").join(n).exists()),
        "the control: a SIGKILL leaves the namespace until a clean"
    );
    let clean = lockbench_process()
        .env("TMPDIR", temp.path())
        .args(["faults", "--clean"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&clean.stderr);
    assert!(clean.status.success(), "{said}");
    for fragment in [
        format!("removed network namespace {}", left[0]),
        "removed Postgres schema".to_string(),
        format!("(left by lab pid {pid}, no longer running)"),
    ] {
        assert!(said.contains(&fragment), "no \"{fragment}\" in: {said}");
    }
    for n in &left {
        assert!(
            !Path::new("/run/netns").join(n).exists(),
            "{n} is still there"
        );
    }
    assert!(!register.exists(), "the register outlived the clean");
    let left: Vec<_> = std::fs::read_dir(temp.path()).unwrap().flatten().collect();
    assert!(left.is_empty(), "left in its TMPDIR: {left:?}");
    assert_left_nothing(&serde_json::json!({ "namespace": keys }), pid);
    let again = lockbench_process()
        .env("TMPDIR", temp.path())
        .args(["faults", "--clean"])
        .output()
        .unwrap();
    assert!(
        !String::from_utf8_lossy(&again.stderr).contains(&format!("lab pid {pid}")),
        "a second clean found the same lab again"
    );
}

/// A lab on the shared Redis killed with SIGKILL: the run's fencing counters there have no TTL;
/// its register names the run's keys on that server before the first trial, and the next
/// `lockbench faults --clean` removes them, saying so.
#[test]
fn a_lab_killed_on_a_shared_server_leaves_no_keys_after_the_next_clean() {
    let temp = tempfile::tempdir().unwrap();
    let (child, register) = lab_in(
        temp.path(),
        &["--seed", "5", "--scenario", "pause/naive", "--trials", "50"],
        Stdio::null(),
    );
    let pid = child.id();
    let named = || -> Option<String> {
        register_lines(&register)
            .into_iter()
            .find(|v| v["kind"] == "keys")
            .map(|v| v["namespace"].as_str().unwrap().to_string())
    };
    let keys = |namespace: &str| {
        output(
            "redis-cli",
            &[
                "-p",
                "6390",
                "--scan",
                "--pattern",
                &format!("{namespace}:*"),
            ],
        )
    };
    // Killed once the register names the keys and a trial has made one (within 30 s).
    let started = std::time::Instant::now();
    let namespace = loop {
        if let Some(namespace) = named()
            && !keys(&namespace).trim().is_empty()
        {
            break namespace;
        }
        assert!(
            started.elapsed().as_secs() < 30,
            "no keys under the lab's namespace: {:?}",
            std::fs::read_to_string(&register)
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    sigkill(pid);
    child.wait_with_output().unwrap();
    // A lock key's TTL ends it; the fencing counter stays.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let left = keys(&namespace);
    assert!(
        left.contains(":fencing:"),
        "the control: a SIGKILL leaves the fencing counter until a clean: {left}"
    );
    let clean = lockbench_process()
        .env("TMPDIR", temp.path())
        .args(["faults", "--clean"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&clean.stderr);
    assert!(clean.status.success(), "{said}");
    let fragment = format!("removed redis keys under {namespace}");
    assert!(said.contains(&fragment), "no \"{fragment}\" in: {said}");
    assert!(!register.exists(), "the register outlived the clean");
    assert_left_nothing(&serde_json::json!({ "namespace": namespace }), pid);
}

/// A lab on Redis with `args` and `--ttl 1s`, in a temporary directory of its own: a lab of
/// another test, starting meanwhile, would clean up after this one first (as it should), and the
/// test would not see it done. Returns the lab and its register's path.
fn lab_in(temp: &Path, args: &[&str], stderr: Stdio) -> (std::process::Child, std::path::PathBuf) {
    let child = lockbench_process()
        .env("TMPDIR", temp)
        .args([
            "faults",
            "--config",
            CONFIG,
            "--backend",
            "redis",
            "--ttl",
            "1s",
        ])
        .args(args)
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap();
    let register = temp.join(format!("lockbench-faults-lab-{}.jsonl", child.id()));
    (child, register)
}

/// The lines of a lab's register so far (none before it exists).
fn register_lines(register: &Path) -> Vec<Value> {
    std::fs::read_to_string(register)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// SIGKILL, as the OOM killer or `kill -9` sends.
fn sigkill(pid: u32) {
    let status = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// SIGINT, as a Ctrl-C sends.
fn interrupt(pid: u32) {
    let status = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn redlock_takes_a_restarted_node_and_two_clock_jumps_together_to_grant_a_second_majority() {
    let (record, pid) = faults(&[
        "--scenario",
        "redlock",
        "--trials",
        "2",
        "--ttl",
        "2s",
        "--backend",
        "redlock",
    ]);
    for alone in ["redlock/restart", "redlock/clock-jump"] {
        let c = cell(&record, alone, "redlock");
        assert_eq!(
            n(&c["trials_with_overlap"]),
            0,
            "{alone} alone keeps a majority: {c}"
        );
        assert_eq!(n(&c["stale_writes"]), 0, "{c}");
    }
    let both = cell(&record, "redlock/restart+clock-jump", "redlock");
    assert_eq!(n(&both["trials_with_overlap"]), 2, "{both}");
    assert!(n(&both["stale_writes"]) >= 2, "{both}");
    assert!(
        both["stale_rejected_by_fence"].is_null(),
        "Redlock has no token: {both}"
    );
    assert_left_nothing(&record, pid);
}

/// Through the lab's PgBouncer: in transaction mode a session lock is handed to the contender on
/// the server connection that still holds it (every trial overlaps, and the fence refuses the
/// holder's writes after the grant); a transaction lock never overlaps. In session mode a killed
/// holder's lock is freed by `DISCARD ALL` at once, and without the reset it blocks the contender
/// until PgBouncer closes the idle connection (5 s in the lab), with no holder.
#[test]
fn a_session_lock_through_a_transaction_mode_pgbouncer_is_handed_on_and_a_transaction_lock_is_not()
{
    let (record, pid) = faults(&[
        "--scenario",
        "pooler",
        "--trials",
        "2",
        "--ttl",
        "1s",
        "--backend",
        "pg-session",
        "--backend",
        "pg-xact",
    ]);
    let handed = cell(&record, "pooler/transaction-mode", "pg-session");
    assert_eq!(n(&handed["trials_with_overlap"]), 2, "{handed}");
    assert!(n(&handed["stale_writes"]) > 0, "{handed}");
    assert_eq!(
        handed["stale_rejected_by_fence"], handed["stale_writes"],
        "the sequence's token refuses them: {handed}"
    );
    let pinned = cell(&record, "pooler/transaction-mode", "pg-xact");
    assert_eq!(n(&pinned["trials_with_overlap"]), 0, "{pinned}");
    for backend in ["pg-session", "pg-xact"] {
        let reset = cell(&record, "pooler/session-mode", backend);
        assert_eq!(n(&reset["trials_with_overlap"]), 0, "{reset}");
        assert!(reset["recovery_max_s"].as_f64().unwrap() < 1.0, "{reset}");
    }
    let kept = cell(&record, "pooler/session-mode-no-reset", "pg-session");
    assert_eq!(n(&kept["trials_with_overlap"]), 0, "{kept}");
    let blocked = kept["recovery_p50_s"].as_f64().unwrap();
    assert!(
        (4.0..12.0).contains(&blocked),
        "blocked until the idle server connection closed (5 s): {kept}"
    );
    assert_left_nothing(&record, pid);
}

#[test]
fn a_session_lock_leaks_through_a_pool_that_does_not_reset_and_a_transaction_lock_does_not() {
    let (record, pid) = faults(&[
        "--scenario",
        "pool-leak",
        "--trials",
        "2",
        "--ttl",
        "1s",
        "--backend",
        "pg-session",
    ]);
    let leak = cell(&record, "pool-leak/no-reset", "pg-session");
    // The second job on the pooled connection is granted while the first still works.
    assert_eq!(n(&leak["trials_with_overlap"]), 2, "{leak}");
    assert!(n(&leak["idle_session_advisory_locks_max"]) >= 1, "{leak}");
    // The contender waits until the pool closes the connection, 2 x TTL after the jobs.
    assert!(leak["recovery_p50_s"].as_f64().unwrap() > 2.0, "{leak}");
    assert!(
        leak["stale_rejected_by_fence"].is_null(),
        "the jobs lock with raw SQL: {leak}"
    );
    let reset = cell(&record, "pool-leak/unlock-all", "pg-session");
    assert_eq!(n(&reset["idle_session_advisory_locks_max"]), 0, "{reset}");
    assert_eq!(
        n(&reset["trials_with_overlap"]),
        2,
        "the first job works on unprotected: {reset}"
    );
    let xact = cell(&record, "pool-leak/xact", "pg-session");
    assert_eq!(n(&xact["trials_with_overlap"]), 0, "{xact}");
    assert_eq!(n(&xact["idle_session_advisory_locks_max"]), 0, "{xact}");
    assert_left_nothing(&record, pid);
}

#[test]
fn a_partitioned_holder_with_a_give_up_deadline_stops_before_the_lock_passes_and_one_without_does_not()
 {
    let (record, pid) = faults(&[
        "--scenario",
        "partition",
        "--trials",
        "2",
        "--ttl",
        "1s",
        "--backend",
        "redis",
    ]);
    let careful = cell(&record, "partition/heartbeat", "redis");
    assert_eq!(n(&careful["trials_with_overlap"]), 0, "{careful}");
    assert_eq!(n(&careful["stale_writes"]), 0, "{careful}");
    assert_eq!(
        n(&careful["contender_timed_out"]),
        0,
        "the lock passed on: {careful}"
    );
    let naive = cell(&record, "partition/no-give-up", "redis");
    assert_eq!(n(&naive["trials_with_overlap"]), 2, "{naive}");
    assert!(n(&naive["stale_writes"]) >= 2, "{naive}");
    assert_eq!(
        naive["stale_rejected_by_fence"], naive["stale_writes"],
        "{naive}"
    );
    assert_left_nothing(&record, pid);
    // Its namespace (lbf-RUNID...) and veth pair (lbfRUNIDKh/n: six characters of it, then the
    // subnet) are gone too; another lab's may exist.
    let run = record["namespace"]
        .as_str()
        .unwrap()
        .trim_start_matches("lockbench-faults-");
    let namespaces = output("ip", &["netns", "list"]);
    assert!(!namespaces.contains(&format!("lbf-{run}")), "{namespaces}");
    let links = output("ip", &["-o", "link", "show"]);
    assert!(!links.contains(&format!(": lbf{}", &run[..6])), "{links}");
}

/// A consensus store lets a partitioned holder go by its own timer: reached through the lab's
/// forwarders, an etcd holder cut off for two leases loses its lease. With a give-up deadline
/// the job stops first; without, it works on beside the next holder and etcd's token lets the
/// resource refuse every stale write.
#[test]
fn a_partitioned_etcd_holder_loses_its_lease_and_the_fence_refuses_it_unless_it_gave_up() {
    let (record, pid) = faults(&[
        "--scenario",
        "partition",
        "--trials",
        "1",
        "--ttl",
        "1s",
        "--backend",
        "etcd",
    ]);
    let careful = cell(&record, "partition/heartbeat", "etcd");
    assert_eq!(n(&careful["trials_with_overlap"]), 0, "{careful}");
    assert_eq!(n(&careful["contender_timed_out"]), 0, "{careful}");
    let naive = cell(&record, "partition/no-give-up", "etcd");
    assert_eq!(n(&naive["trials_with_overlap"]), 1, "{naive}");
    assert!(n(&naive["stale_writes"]) >= 1, "{naive}");
    assert_eq!(
        naive["stale_rejected_by_fence"], naive["stale_writes"],
        "{naive}"
    );
    assert_left_nothing(&record, pid);
}

#[test]
fn postgres_keeps_a_partitioned_holders_lock_until_tcp_keepalive_gives_up() {
    let (record, pid) = faults(&[
        "--scenario",
        "partition/heartbeat",
        "--scenario",
        "partition/keepalive",
        "--trials",
        "1",
        "--ttl",
        "1s",
        "--backend",
        "pg-session",
    ]);
    // The partition lasts 2 x TTL + 6 s = 8 s.
    let default = cell(&record, "partition/heartbeat", "pg-session");
    assert_eq!(n(&default["trials_with_overlap"]), 0, "{default}");
    let stalled = default["recovery_p50_s"].as_f64().unwrap();
    assert!(
        stalled > 8.0,
        "the session kept the lock through the partition: {default}"
    );
    let keepalive = cell(&record, "partition/keepalive", "pg-session");
    assert_eq!(n(&keepalive["trials_with_overlap"]), 0, "{keepalive}");
    let freed = keepalive["recovery_p50_s"].as_f64().unwrap();
    assert!(
        freed < 8.0,
        "keepalive freed the lock during the partition: {keepalive}"
    );
    assert_left_nothing(&record, pid);
}

#[test]
fn zookeeper_keeps_its_lock_through_the_clock_jump_that_breaks_redlock() {
    let child = lockbench_process()
        .args(["faults", "--config", CONFIG, "--json", "--seed", "5"])
        .args(["--scenario", "clock-jump", "--trials", "2", "--ttl", "1s"])
        .args(["--backend", "zookeeper", "--backend", "etcd"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    // etcd cannot take the jump here: the cell is listed as not run, so the exit code is 3.
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let record: Value = serde_json::from_slice(&out.stdout).unwrap();
    let zk = cell(&record, "clock-jump/forward", "zookeeper");
    assert_eq!(n(&zk["trials"]), 2, "{zk}");
    assert_eq!(
        n(&zk["trials_with_overlap"]),
        0,
        "sessions expire by a monotonic clock: {zk}"
    );
    let skipped = record["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 1, "{record}");
    assert_eq!(skipped[0]["backend"], "etcd");
    assert!(skipped[0]["reason"].as_str().unwrap().contains("vDSO"));
    assert_left_nothing(&record, pid);
}

/// A job that outlives its lease, alive: a key with a TTL lets the contender in as the lease runs
/// out, a Postgres session keeps the lock with the live holder, and a heartbeat keeps the key.
#[test]
fn a_live_job_longer_than_its_lease_overlaps_on_a_key_unless_a_heartbeat_renews_it() {
    let (record, pid) = faults(&[
        "--scenario",
        "overrun",
        "--backend",
        "redis",
        "--backend",
        "pg-session",
        "--trials",
        "1",
        "--ttl",
        "1s",
    ]);
    let key = cell(&record, "overrun/slow-job", "redis");
    assert_eq!(key["expected"], "overlap", "{key}");
    assert_eq!(n(&key["trials_with_overlap"]), 1, "{key}");
    assert!(n(&key["stale_writes"]) > 0, "{key}");
    assert_eq!(key["stale_rejected_by_fence"], key["stale_writes"], "{key}");
    let session = cell(&record, "overrun/slow-job", "pg-session");
    assert_eq!(n(&session["trials_with_overlap"]), 0, "{session}");
    for backend in ["redis", "pg-session"] {
        let renewed = cell(&record, "overrun/slow-job-heartbeat", backend);
        assert_eq!(n(&renewed["trials_with_overlap"]), 0, "{renewed}");
    }
    assert_left_nothing(&record, pid);
}

/// The same slow job through two libraries: redis-py's `Lock` renews nothing by itself and
/// overlaps like lockbench's own Redis client; node-redlock's `using` extends its lock while the
/// routine runs, and nothing overlaps. Whether renewal is automatic is the library's, measured.
#[test]
fn a_library_that_renews_by_itself_keeps_a_slow_jobs_lock_and_one_that_does_not_overlaps() {
    let plain = cell_through("redis-py", "overrun/slow-job", "redis");
    assert_eq!(n(&plain["trials_with_overlap"]), 1, "{plain}");
    let renewing = cell_through("node-redlock", "overrun/slow-job", "redlock");
    assert_eq!(renewing["client"]["name"], "node-redlock", "{renewing}");
    assert_eq!(n(&renewing["trials_with_overlap"]), 0, "{renewing}");
}

/// redis-semaphore's `isAcquired`, which its README's loop runs on, is the library's own flag:
/// cut off from Redis, its refresh gets no answer, the flag stays true, and a heartbeat that
/// trusts it keeps the job working beside the next holder. The library tells of the loss (its
/// `onLockLost`) only once the partition heals. node-redlock's `signal.aborted` does the same
/// on Redlock. redis-py's heartbeat asks Redis (`extend`) and stops in time.
#[test]
fn the_node_libraries_own_view_keeps_a_partitioned_holder_working_past_its_ttl() {
    let flag = cell_through("redis-semaphore", "partition/heartbeat", "redis");
    assert_eq!(flag["client"]["name"], "redis-semaphore", "{flag}");
    assert_eq!(n(&flag["trials_with_overlap"]), 1, "{flag}");
    assert!(n(&flag["stale_writes"]) > 0, "{flag}");
    let told = &flag["lost_told"];
    assert_eq!((n(&told["told"]), n(&told["by_event"])), (1, 1), "{flag}");
    let signal = cell_through("node-redlock", "partition/heartbeat", "redlock");
    assert_eq!(n(&signal["trials_with_overlap"]), 1, "{signal}");
    let asked = cell_through("redis-py", "partition/heartbeat", "redis");
    assert_eq!(n(&asked["trials_with_overlap"]), 0, "{asked}");
}

/// tooz's Postgres lock through a transaction-mode PgBouncer: psycopg2 is not in autocommit, so
/// the lock's `SELECT` opens a transaction that stays open while the lock is held, and the
/// pooler keeps the server connection, and the session lock on it, the holder's. Nothing
/// overlaps, where lockbench's own session lock is handed on with the connection.
#[test]
fn tooz_keeps_its_lock_through_a_transaction_mode_pgbouncer_by_leaving_its_transaction_open() {
    let pooled = cell_through("tooz", "pooler/transaction-mode", "pg-session");
    assert_eq!(pooled["client"]["name"], "tooz", "{pooled}");
    assert_eq!(n(&pooled["trials_with_overlap"]), 0, "{pooled}");
}

/// The reply to the holder's acquisition held for 1.5 TTL on its way back: a Redis holder that
/// trusts the TTL it asked for works on an expired lock beside the contender (the fence refuses
/// its writes), one that counts the acquisition's time acquires again, and Redlock's validity
/// refuses the expired acquisition by itself.
#[test]
fn a_lock_expired_by_the_time_its_grant_arrives_overlaps_unless_the_job_checks_the_validity() {
    let (record, pid) = faults(&["--scenario", "latency", "--trials", "1", "--ttl", "1s"]);
    let trusted = cell(&record, "latency/expired-at-grant", "redis");
    assert_eq!(trusted["expected"], "overlap", "{trusted}");
    assert_eq!(n(&trusted["trials_with_overlap"]), 1, "{trusted}");
    assert_eq!(
        trusted["stale_rejected_by_fence"], trusted["stale_writes"],
        "{trusted}"
    );
    let checked = cell(&record, "latency/expired-at-grant-checked", "redis");
    assert_eq!(n(&checked["trials_with_overlap"]), 0, "{checked}");
    for variant in [
        "latency/expired-at-grant",
        "latency/expired-at-grant-checked",
    ] {
        let redlock = cell(&record, variant, "redlock");
        assert_eq!(n(&redlock["trials_with_overlap"]), 0, "{redlock}");
    }
    assert_left_nothing(&record, pid);
}

/// The same held reply through the two Redlock libraries: node-redlock's `using` runs its
/// routine on a lock whose keys have all expired, pottery counts the acquisition's time and
/// acquires again.
#[test]
fn one_redlock_library_hands_out_a_lock_that_has_already_expired_and_the_other_does_not() {
    let expired = cell_through("node-redlock", "latency/expired-at-grant", "redlock");
    assert_eq!(n(&expired["trials_with_overlap"]), 1, "{expired}");
    let refused = cell_through("pottery", "latency/expired-at-grant", "redlock");
    assert_eq!(n(&refused["trials_with_overlap"]), 0, "{refused}");
}

/// A holder stalled between its job and its release: its release arrives after its lease
/// expired, while a contender holds the lock. A plain `DEL` deletes the contender's lock and the
/// next run is granted beside it; lockbench's token-checked release, a ZooKeeper node of its own
/// and redis-py's release delete nothing. Postgres, which never lets a live session's lock go, is
/// not in the scenario.
#[test]
fn a_late_release_frees_the_next_holders_lock_only_when_it_skips_the_token_check() {
    let (record, pid) = faults(&[
        "--scenario",
        "release",
        "--backend",
        "redis",
        "--backend",
        "zookeeper",
        "--trials",
        "1",
        "--ttl",
        "1s",
    ]);
    let plain = cell(&record, "release/after-expiry-plain-delete", "redis");
    assert_eq!(plain["expected"], "overlap", "{plain}");
    assert_eq!(n(&plain["trials_with_overlap"]), 1, "{plain}");
    // The next run's grant made the contender's writes stale, and its higher token let the
    // fence refuse them all.
    assert!(n(&plain["stale_writes"]) > 0, "{plain}");
    assert_eq!(plain["stale_rejected_by_fence"], plain["stale_writes"]);
    for backend in ["redis", "zookeeper"] {
        let own = cell(&record, "release/after-expiry", backend);
        assert_eq!(n(&own["trials_with_overlap"]), 0, "{own}");
        assert_eq!(n(&own["contender_timed_out"]), 0, "{own}");
    }
    assert_left_nothing(&record, pid);

    let (record, pid) = one_trial_through("redis-py", "release");
    let own = cell(&record, "release/after-expiry", "redis");
    assert_eq!(own["client"]["name"], "redis-py", "{own}");
    assert_eq!(n(&own["trials_with_overlap"]), 0, "{own}");
    // The plain delete is lockbench's own positive control: not run through a library.
    assert!(
        record["cells"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["variant"] != "after-expiry-plain-delete"),
        "{record}"
    );
    assert_left_nothing(&record, pid);
}

/// A real library through its adapter (docs/CLIENTS.md): redis-py's `Lock` expires under a pause
/// past its TTL like lockbench's own Redis client, but gives no fencing token, so nothing refuses
/// the resumed holder's write; kazoo's session expires under the same pause, and its job process
/// outlives a killed holder as lockbench's does. The cells carry the library and its version.
#[test]
fn a_real_library_overlaps_under_a_pause_past_its_ttl_and_gives_no_token_to_refuse_the_stale_write()
{
    let (record, pid) = faults(&[
        "--client",
        "redis-py",
        "--scenario",
        "pause",
        "--trials",
        "2",
        "--ttl",
        "1s",
    ]);
    assert!(record["skipped"].as_array().unwrap().is_empty(), "{record}");
    let naive = cell(&record, "pause/naive", "redis");
    assert_eq!(naive["client"]["name"], "redis-py", "{naive}");
    assert_eq!(naive["client"]["version"], "8.1.0", "{naive}");
    assert_eq!(n(&naive["trials_with_overlap"]), 2, "{naive}");
    assert_eq!(n(&naive["stale_writes"]), 2, "{naive}");
    assert_eq!(naive["fencing"], "none", "{naive}");
    assert!(naive["stale_rejected_by_fence"].is_null(), "{naive}");
    // redis-py pushes nothing: the resumed holder learns from `extend`'s refusal, after the
    // next holder was granted.
    let told = &naive["lost_told"];
    assert_eq!((n(&told["told"]), n(&told["by_event"])), (2, 0), "{naive}");
    assert!(
        told["after_next_grant_p50_s"].as_f64().unwrap() > 0.0,
        "{naive}"
    );
    // Renewed by redis-py's `extend` on lockbench's heartbeat, a pause within the margin passes.
    let short = cell(&record, "pause/heartbeat-short", "redis");
    assert_eq!(n(&short["trials_with_overlap"]), 0, "{short}");
    assert_left_nothing(&record, pid);

    let (record, pid) = faults(&[
        "--client",
        "kazoo",
        "--scenario",
        "pause/naive",
        "--scenario",
        "crash/work-survives",
        "--trials",
        "1",
        "--ttl",
        "1s",
    ]);
    let naive = cell(&record, "pause/naive", "zookeeper");
    assert_eq!(naive["client"]["name"], "kazoo", "{naive}");
    // The session the server granted (ZooKeeper's minimum here), not the one asked for.
    assert!(naive["granted_ttl_s"].as_f64().unwrap() >= 4.0, "{naive}");
    assert_eq!(n(&naive["trials_with_overlap"]), 1, "{naive}");
    // Frozen, kazoo can tell its holder nothing until the pause ends, seconds after the next
    // holder's grant.
    let told = &naive["lost_told"];
    assert_eq!(n(&told["told"]), 1, "{naive}");
    assert!(
        told["after_next_grant_p50_s"].as_f64().unwrap() > 1.0,
        "{naive}"
    );
    // The job process of a killed holder has no library to tell it anything.
    let survives = cell(&record, "crash/work-survives", "zookeeper");
    assert_eq!(n(&survives["trials_with_overlap"]), 1, "{survives}");
    assert_eq!(
        n(&survives["lost_told"]["never_told_overlaps"]),
        1,
        "{survives}"
    );
    assert_left_nothing(&record, pid);
}

/// A team's own adapter (here redis-py's, behind a program of the team's own name) runs through
/// the lab as a shipped one does, on the backend its user names: its cells are named by its file
/// and carry what it said of itself in its hello, so the report and the decision judge it by
/// that.
#[test]
fn a_teams_own_adapter_runs_through_the_lab_named_by_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let adapter = common::own_adapter(
        dir.path(),
        "acme_lock",
        "clients/adapters/python/redis_py.py",
    );
    let (record, pid) = faults(&[
        "--client",
        &adapter,
        "--backend",
        "redis",
        "--scenario",
        "pause/naive",
        "--trials",
        "1",
        "--ttl",
        "1s",
    ]);
    let naive = cell(&record, "pause/naive", "redis");
    let client = &naive["client"];
    assert_eq!(client["name"]["adapter"], adapter.as_str(), "{naive}");
    assert_eq!(client["name"]["library"], "redis-py", "{naive}");
    assert_eq!(client["name"]["fencing"], false, "{naive}");
    assert_eq!(client["version"], "8.1.0", "{naive}");
    assert_eq!(n(&naive["trials_with_overlap"]), 1, "{naive}");
    assert_eq!(naive["fencing"], "none", "{naive}");
    assert_left_nothing(&record, pid);
}

/// pottery's `Redlock.extend()` refuses a fourth extension (`TooManyExtensions`, its default
/// `num_extensions = 3`): `pause/naive` renews after each write, so the holder's own library ends
/// its lock before the pause and the cell cannot run; it is listed as not run, with the holder's
/// words, and the run exits 3 (a cell not measured).
/// etcd's Go Mutex hands its holder the store's revision at the grant: the lab's resource checks
/// it as it checks lockbench's own token, and refuses the paused holder's stale write. The
/// libraries that notify (etcd's `session.Done()`, node-redlock's aborted signal) tell the resumed
/// holder of its lost lock.
#[test]
fn a_library_that_hands_out_a_fencing_token_lets_the_resource_refuse_the_stale_write() {
    let (record, pid) = faults(&[
        "--client",
        "etcd-go",
        "--scenario",
        "pause/naive",
        "--trials",
        "1",
        "--ttl",
        "1s",
    ]);
    let naive = cell(&record, "pause/naive", "etcd");
    assert_eq!(naive["client"]["name"], "etcd-go", "{naive}");
    assert_eq!(naive["fencing"], "counter", "{naive}");
    // etcd raises a lease below its minimum (1.5 s here, in whole seconds): granted 2 s.
    assert!(naive["granted_ttl_s"].as_f64().unwrap() >= 2.0, "{naive}");
    assert_eq!(n(&naive["trials_with_overlap"]), 1, "{naive}");
    let stale = n(&naive["stale_writes"]);
    assert!(stale >= 1, "{naive}");
    assert_eq!(n(&naive["stale_rejected_by_fence"]), stale, "{naive}");
    assert_eq!(n(&naive["lost_told"]["told"]), 1, "{naive}");
    assert_left_nothing(&record, pid);

    let (record, pid) = faults(&[
        "--client",
        "node-redlock",
        "--scenario",
        "pause/naive",
        "--scenario",
        "pause/heartbeat-short",
        "--trials",
        "1",
        "--ttl",
        "1s",
    ]);
    let naive = cell(&record, "pause/naive", "redlock");
    assert_eq!(naive["client"]["name"], "node-redlock", "{naive}");
    assert_eq!(naive["fencing"], "none", "{naive}");
    assert_eq!(n(&naive["trials_with_overlap"]), 1, "{naive}");
    assert!(naive["stale_rejected_by_fence"].is_null(), "{naive}");
    assert_eq!(n(&naive["lost_told"]["told"]), 1, "{naive}");
    // The same library keeps its lock through a pause within its own extension's margin.
    let short = cell(&record, "pause/heartbeat-short", "redlock");
    assert_eq!(n(&short["trials_with_overlap"]), 0, "{short}");
    assert_left_nothing(&record, pid);
}

/// The backend's other scenarios run through a library too: redis-py loses its lock to a
/// restart without persistence and keeps it across one with the AOF, as lockbench's own client
/// does; pottery, which returns as soon as a quorum of nodes answered, is not slowed by the
/// node that `redlock/late-start` stops, where lockbench's own client waits it out and overlaps.
#[test]
fn the_other_scenarios_of_a_librarys_backend_run_through_it() {
    let (record, pid) = faults(&[
        "--client",
        "redis-py",
        "--scenario",
        "restart/no-persistence",
        "--scenario",
        "restart/aof-always",
        "--trials",
        "1",
        "--ttl",
        "1s",
    ]);
    let lost = cell(&record, "restart/no-persistence", "redis");
    assert_eq!(lost["client"]["name"], "redis-py", "{lost}");
    assert_eq!(n(&lost["trials_with_overlap"]), 1, "{lost}");
    let kept = cell(&record, "restart/aof-always", "redis");
    assert_eq!(n(&kept["trials_with_overlap"]), 0, "{kept}");
    assert_left_nothing(&record, pid);

    let (record, pid) = faults(&[
        "--client",
        "pottery",
        "--scenario",
        "redlock/late-start",
        "--trials",
        "1",
    ]);
    let late = cell(&record, "redlock/late-start", "redlock");
    assert_eq!(late["client"]["name"], "pottery", "{late}");
    assert_eq!(n(&late["trials_with_overlap"]), 0, "{late}");
    assert_left_nothing(&record, pid);
}

/// python-redis-lock's blocking acquire waits on a signal that only a release sends: behind a
/// killed holder, whose lock expires after its 1 s TTL, the contender is granted only when its
/// own wait runs out, seconds later.
#[test]
fn python_redis_lock_waits_out_its_whole_timeout_behind_a_dead_holder() {
    let (record, pid) = faults(&[
        "--client",
        "python-redis-lock",
        "--scenario",
        "crash/holder-killed",
        "--trials",
        "1",
        "--ttl",
        "1s",
    ]);
    let killed = cell(&record, "crash/holder-killed", "redis");
    assert_eq!(killed["client"]["name"], "python-redis-lock", "{killed}");
    assert_eq!(n(&killed["trials_with_overlap"]), 0, "{killed}");
    let recovery = killed["recovery_p50_s"].as_f64().expect("granted");
    assert!(
        recovery > 2.0,
        "granted {recovery} s after the kill: {killed}"
    );
    assert_left_nothing(&record, pid);

    // The same waiter sleeps through the expiry a late release needs: the cell is not run, and
    // says why, rather than reporting a release that had nothing to delete as safe.
    let (record, pid) = faults_exiting(
        &[
            "--client",
            "python-redis-lock",
            "--scenario",
            "release/after-expiry",
            "--trials",
            "1",
            "--ttl",
            "1s",
        ],
        3,
    );
    let skipped = &record["skipped"][0];
    assert_eq!(skipped["variant"], "after-expiry", "{record}");
    assert!(
        skipped["reason"]
            .as_str()
            .unwrap()
            .contains("not granted the expired lock before the holder's release"),
        "{record}"
    );
    assert_left_nothing(&record, pid);
}

/// pottery's `Redlock.extend()` refuses a fourth extension (`TooManyExtensions`): a holder that
/// renews after each write is told its lock is lost at its fourth write. A pause that comes
/// before then overlaps as on any Redlock; one due after it finds the holder's job over. That is
/// an outcome of the trial, counted in the cell, not a protocol error that loses the cell (it
/// did: "expected \"wrote\", it said \"done lost\"", exit 3).
#[test]
fn pottery_ends_a_lock_renewed_after_every_write_at_its_fourth_extension() {
    let (record, pid) = faults(&[
        "--client",
        "pottery",
        "--scenario",
        "pause/naive",
        "--scenario",
        "pause/heartbeat-short",
        "--trials",
        "6",
        "--ttl",
        "1s",
    ]);
    assert!(record["skipped"].as_array().unwrap().is_empty(), "{record}");
    let naive = cell(&record, "pause/naive", "redlock");
    assert_eq!(naive["client"]["name"], "pottery", "{naive}");
    assert_eq!(n(&naive["trials"]), 6, "{naive}");
    let ended = naive["trials_ended_before_fault"].as_u64().unwrap_or(0);
    // The seed's onsets (after writes 2 to 6) put the pause both before and after the fourth
    // write: each trial either overlapped or ended first, and both happened (1 and 5).
    assert_eq!(
        n(&naive["trials_with_overlap"]) + ended,
        6,
        "every paused trial overlaps: {naive}"
    );
    assert!(ended > 0 && ended < 6, "{naive}");
    // Told in every trial: by the refused extension, or after the pause by the refused renewal.
    assert_eq!(n(&naive["lost_told"]["told"]), 6, "{naive}");
    // Three renewals within the job: a pause inside the heartbeat's margin passes.
    let short = cell(&record, "pause/heartbeat-short", "redlock");
    assert_eq!(n(&short["trials_with_overlap"]), 0, "{short}");
    assert_left_nothing(&record, pid);
}

/// Clusters, not single nodes: three private etcd members and a three-server ZooKeeper
/// ensemble keep a held lock through the loss of their leader (the contender waits for the
/// holder, granted on the survivors) and let it go, when the leader is cut off in a minority with
/// the holder, only once a careful holder has stopped (the positive control: one that works on
/// overlaps and the fence refuses it), while a Postgres primary's advisory lock does not reach its
/// streaming standby: promoted, it grants the lock at once beside the old holder (the positive
/// control: the lab sees a failover's overlap), and only the fence, whose sequence the standby
/// replayed ahead of the primary, refuses the old holder's writes. Redis behind Sentinel loses
/// the lock with a primary that had not replicated it (`min-replicas-to-write` or not), and to a
/// primary cut off with its holder, and keeps it when the grant and each renewal waited for a
/// replica (`WAIT 1`).
#[test]
fn a_consensus_leader_lost_or_cut_off_keeps_the_lock_and_a_promoted_standby_hands_it_on_under_the_fence()
 {
    let (record, pid) = faults(&["--scenario", "cluster", "--trials", "3", "--ttl", "2s"]);
    assert!(record["skipped"].as_array().unwrap().is_empty(), "{record}");
    for backend in ["etcd", "zookeeper"] {
        let c = cell(&record, "cluster/leader-killed", backend);
        assert_eq!(c["expected"], "no overlap", "{c}");
        assert_eq!(n(&c["trials"]), 3, "{backend}: {c}");
        assert_eq!(n(&c["trials_with_overlap"]), 0, "{backend}: {c}");
        assert_eq!(n(&c["stale_writes"]), 0, "{backend}: {c}");
        assert_eq!(n(&c["contender_timed_out"]), 0, "{backend}: {c}");
        // A new leader was found among the survivors, within the lab's 30 s bound.
        let elected = c["new_leader_max_s"].as_f64().unwrap();
        assert!(elected > 0.0 && elected < 30.0, "{backend}: {c}");
    }
    // The contender's only member restarted as the holder releases: it catches up before it
    // grants, so no second holder, and the contender keeps its place in the queue through the
    // outage: granted once the member is back, not a lease later behind a key of its own that
    // it could not withdraw on the dead member (lockbench's etcd client did that: +1.6 s).
    for backend in ["etcd", "zookeeper"] {
        let c = cell(&record, "cluster/member-restarted", backend);
        assert_eq!(c["expected"], "no overlap", "{c}");
        assert_eq!(n(&c["trials_with_overlap"]), 0, "{backend}: {c}");
        assert_eq!(n(&c["contender_timed_out"]), 0, "{backend}: {c}");
        let back = c["new_leader_max_s"].as_f64().unwrap();
        assert!(back > 0.0 && back < 30.0, "{backend}: {c}");
    }
    let restarted = cell(&record, "cluster/member-restarted", "etcd");
    assert!(
        restarted["recovery_max_s"].as_f64().unwrap()
            < restarted["new_leader_max_s"].as_f64().unwrap() + 1.0,
        "{restarted}"
    );
    // The leader cut off in a minority with the holder: the majority elects, lets the holder's
    // lease or session run out and grants the lock on. A holder that stops at its give-up
    // deadline has stopped by then; one that works on overlaps, and the fence refuses it.
    for backend in ["etcd", "zookeeper"] {
        let careful = cell(&record, "cluster/leader-isolated", backend);
        assert_eq!(
            n(&careful["trials_with_overlap"]),
            0,
            "{backend}: {careful}"
        );
        assert_eq!(n(&careful["stale_writes"]), 0, "{backend}: {careful}");
        assert_eq!(
            n(&careful["contender_timed_out"]),
            0,
            "{backend}: {careful}"
        );
        let reckless = cell(&record, "cluster/leader-isolated-no-give-up", backend);
        assert_eq!(reckless["expected"], "overlap", "{reckless}");
        assert_eq!(
            n(&reckless["trials_with_overlap"]),
            3,
            "{backend}: {reckless}"
        );
        assert!(n(&reckless["stale_writes"]) > 0, "{backend}: {reckless}");
        assert_eq!(
            reckless["stale_rejected_by_fence"], reckless["stale_writes"],
            "{backend}: {reckless}"
        );
        for c in [careful, reckless] {
            assert!(c["new_leader_max_s"].as_f64().unwrap() < 30.0, "{c}");
        }
    }
    for backend in ["pg-session", "pg-xact"] {
        let c = cell(&record, "cluster/primary-promoted", backend);
        assert_eq!(c["expected"], "overlap", "{c}");
        assert_eq!(n(&c["trials_with_overlap"]), 3, "{backend}: {c}");
        assert!(n(&c["stale_writes"]) > 0, "{backend}: {c}");
        assert_eq!(
            c["stale_rejected_by_fence"], c["stale_writes"],
            "{backend}: {c}"
        );
        assert_eq!(n(&c["legitimate_rejected_by_fence"]), 0, "{backend}: {c}");
        // Granted as soon as the standby is promoted, long before the holder's job ends.
        let promoted = c["new_leader_max_s"].as_f64().unwrap();
        let granted = c["recovery_max_s"].as_f64().unwrap();
        assert!(granted < promoted + 1.0, "{backend}: {c}");
    }
    // Redis through three Sentinels: a replica promoted without the key grants the lock again
    // beside the living holder, and the fencing counter, on the same server, went back with it:
    // the fence refuses none of the old holder's writes. With WAIT 1 after the grant the
    // Sentinels promote the replica that acknowledged it, and the holder renews its lock there.
    let bare = cell(&record, "cluster/sentinel-failover", "redis");
    assert_eq!(bare["expected"], "overlap", "{bare}");
    assert_eq!(n(&bare["trials_with_overlap"]), 3, "{bare}");
    assert!(n(&bare["stale_writes"]) > 0, "{bare}");
    assert_eq!(n(&bare["stale_rejected_by_fence"]), 0, "{bare}");
    // min-replicas-to-write 1 changes nothing there: the replicas acknowledge the stream they
    // are behind on, so the primary takes the grant no replica has.
    let min_replicas = cell(&record, "cluster/sentinel-failover-min-replicas", "redis");
    assert_eq!(min_replicas["expected"], "overlap", "{min_replicas}");
    assert_eq!(n(&min_replicas["trials_with_overlap"]), 3, "{min_replicas}");
    assert_eq!(
        n(&min_replicas["stale_rejected_by_fence"]),
        0,
        "{min_replicas}"
    );
    let waited = cell(&record, "cluster/sentinel-failover-wait", "redis");
    assert_eq!(waited["expected"], "no overlap", "{waited}");
    assert_eq!(n(&waited["trials_with_overlap"]), 0, "{waited}");
    assert_eq!(n(&waited["stale_writes"]), 0, "{waited}");
    assert_eq!(n(&waited["contender_timed_out"]), 0, "{waited}");
    // The primary cut off with its holder: it goes on taking the holder's renewals while the
    // Sentinels promote a replica, where the key expires and the contender is granted; the
    // counter was replicated before the cut, so the fence refuses the old holder. Renewals that
    // count only once a replica acknowledged them stop the holder before that.
    let cut = cell(&record, "cluster/sentinel-primary-isolated", "redis");
    assert_eq!(cut["expected"], "overlap", "{cut}");
    assert_eq!(n(&cut["trials_with_overlap"]), 3, "{cut}");
    assert!(n(&cut["stale_writes"]) > 0, "{cut}");
    assert_eq!(cut["stale_rejected_by_fence"], cut["stale_writes"], "{cut}");
    let acked = cell(&record, "cluster/sentinel-primary-isolated-wait", "redis");
    assert_eq!(acked["expected"], "no overlap", "{acked}");
    assert_eq!(n(&acked["trials_with_overlap"]), 0, "{acked}");
    assert_eq!(n(&acked["stale_writes"]), 0, "{acked}");
    assert_eq!(n(&acked["contender_timed_out"]), 0, "{acked}");
    for c in [bare, min_replicas, waited, cut, acked] {
        let promoted = c["new_leader_max_s"].as_f64().unwrap();
        assert!(promoted > 1.0 && promoted < 30.0, "{c}");
    }
    assert_left_nothing(&record, pid);
}

#[test]
fn faults_flags_are_checked() {
    let f = |extra: &[&str]| -> Vec<String> {
        let mut args = vec![
            "faults".to_string(),
            "--config".to_string(),
            CONFIG.to_string(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        args
    };
    let check = |extra: &[&str], fragments: &[&str]| {
        let args = f(extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        refused(&args, fragments);
    };
    check(&["--trials", "0"], &["--trials", "expected 1 to 1000"]);
    check(&["--trials", "many"], &["--trials"]);
    check(&["--lanes", "0"], &["--lanes", "0 is not in 1..=8"]);
    check(&["--lanes", "9"], &["--lanes", "9 is not in 1..=8"]);
    check(&["--lanes", "-1"], &["--lanes"]);
    check(&["--ttl", "-1s"], &["--ttl"]);
    check(&["--ttl", "10ms"], &["--ttl", "expected 200ms to 60s"]);
    // Zero is below the range: the range is what the line says.
    check(
        &["--ttl", "0s"],
        &["--ttl", "expected 200ms to 60s", "got \"0s\""],
    );
    check(
        &["--ttl", "abc"],
        &[
            "--ttl",
            "expected a duration with a unit, like \"110ms\" or \"4.2s\", got \"abc\"",
        ],
    );
    check(
        &["--ttl", "5x"],
        &["--ttl", "\"x\" is not a unit (ns, us, ms, s, m, h, d)"],
    );
    check(&["--seed", "abc"], &["--seed"]);
    check(
        &["--client", "jedis"],
        &[
            "--client",
            "unknown client \"jedis\"",
            "redis-py, python-redis-lock, redis-semaphore, pottery, node-redlock, kazoo, curator, etcd-go, tooz",
        ],
    );
    check(
        &["--client", "clients/tests/adapters/wall_clock.py"],
        &[
            "--backend",
            "clients/tests/adapters/wall_clock.py is not a shipped adapter: name the one backend it locks on",
        ],
    );
    check(
        &[
            "--client",
            "clients/tests/adapters/echo.py",
            "--backend",
            "redis",
        ],
        &[
            "--client",
            "clients/tests/adapters/echo.py",
            "not an executable file",
        ],
    );
    check(
        &["--client", "redis-py", "--backend", "etcd"],
        &["--backend", "redis-py locks on redis, not on etcd"],
    );
    check(
        &["--client", "kazoo", "--scenario", "restart"],
        &["--scenario", "nothing to run: restart applies to redis"],
    );
    // A variant that needs lockbench's own client says what of it it needs.
    check(
        &["--client", "redis-py", "--scenario", "failover/wait"],
        &[
            "--scenario",
            "failover/wait does not run through redis-py: its holder sends WAIT 1",
        ],
    );
    // Named alone, it is refused even behind a scenario whose variants are dropped.
    check(
        &[
            "--client",
            "redis-py",
            "--scenario",
            "pause",
            "--scenario",
            "outage",
            "--scenario",
            "failover/wait",
        ],
        &["--scenario", "failover/wait does not run through redis-py"],
    );
    check(
        &["--client", "redis-py", "--scenario", "outage"],
        &[
            "--scenario",
            "outage/skip does not run through redis-py",
            "an adapter needs the server at its hello",
        ],
    );
    check(
        &["--clean", "--backend", "redis"],
        &["--clean", "cannot be used with", "--backend"],
    );
    check(
        &["--scenario", "flood"],
        &["--scenario", "unknown scenario \"flood\"", "pause/naive"],
    );
    check(&["--backend", "nosuch"], &["--backend", "unknown backend"]);
    check(
        &["--scenario", "restart", "--backend", "etcd"],
        &["--scenario", "nothing to run", "restart applies to redis"],
    );
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("no-pg.toml");
    std::fs::write(
        &config,
        "[backends.redis]\nurls = [\"redis://127.0.0.1:6390\"]\n",
    )
    .unwrap();
    refused(
        &["faults", "--config", config.to_str().unwrap()],
        &["--config", "protected resource is a Postgres table"],
    );
}

/// A Python client finds the primary through the Sentinels as redis-py's README shows it
/// (`Sentinel([...]).master_for(name)`), follows their failover to a replica that never had the
/// key, and is granted there beside the living holder, which its library never told.
#[test]
fn redis_py_through_sentinel_follows_a_failover_to_a_replica_without_the_key() {
    let (record, pid) = faults(&[
        "--client",
        "redis-py",
        "--scenario",
        "cluster/sentinel-failover",
        "--trials",
        "2",
    ]);
    let c = cell(&record, "cluster/sentinel-failover", "redis");
    assert_eq!(c["client"]["name"], "redis-py", "{c}");
    assert_eq!(c["expected"], "overlap", "{c}");
    assert_eq!(n(&c["trials_with_overlap"]), 2, "{c}");
    assert!(n(&c["stale_writes"]) > 0, "{c}");
    let promoted = c["new_leader_max_s"].as_f64().unwrap();
    assert!(promoted > 1.0 && promoted < 30.0, "{c}");
    assert_left_nothing(&record, pid);
}
