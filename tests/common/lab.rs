//! What the fault-lab tests share: running `lockbench faults` as a child, finding a cell, and
//! checking that a run left the machine as it found it.

use std::process::{Command, Stdio};

use serde_json::Value;

use super::{CONFIG, lockbench_process};

/// Runs `lockbench faults ARGS --json` as a child (its pid names what it starts) and returns its
/// record and pid.
pub fn faults(args: &[&str]) -> (Value, u32) {
    faults_exiting(args, 0)
}

/// One trial of `scenario` (a scenario or a variant) through the client library `client`, with
/// the lab's 1 s TTL.
pub fn one_trial_through(client: &str, scenario: &str) -> (Value, u32) {
    faults(&[
        "--client",
        client,
        "--scenario",
        scenario,
        "--trials",
        "1",
        "--ttl",
        "1s",
    ])
}

/// The cell of `variant` on `backend` after one trial through `client` ([`one_trial_through`]),
/// the run checked to have left nothing behind.
pub fn cell_through(client: &str, variant: &str, backend: &str) -> Value {
    let (record, pid) = one_trial_through(client, variant);
    assert_left_nothing(&record, pid);
    cell(&record, variant, backend).clone()
}

/// `lockbench faults ARGS` as [`faults`], expecting exit code `code` (3: a cell not run).
pub fn faults_exiting(args: &[&str], code: i32) -> (Value, u32) {
    let child = lockbench_process()
        .arg("faults")
        .args(["--config", CONFIG, "--json", "--seed", "7"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(code),
        "lockbench faults {args:?} (are the servers up? scripts/services.sh up): {stderr}"
    );
    let record: Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    (record, pid)
}

pub fn cell<'a>(record: &'a Value, label: &str, backend: &str) -> &'a Value {
    record["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| {
            format!(
                "{}/{}",
                c["scenario"].as_str().unwrap(),
                c["variant"].as_str().unwrap()
            ) == label
                && c["backend"] == backend
        })
        .unwrap_or_else(|| panic!("no cell {label} on {backend} in {record}"))
}

pub fn n(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("{v} is not a count"))
}

/// Output of a command that must succeed (an empty answer from a client that could not connect
/// would pass every check below), or a failure naming it.
pub fn output(program: &str, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}; scripts/services.sh up installs it"));
    assert!(
        out.status.success(),
        "{program} {args:?} failed (are the servers up? scripts/services.sh up): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Nothing of the run started by `pid` with key namespace `namespace` is left anywhere.
pub fn assert_left_nothing(record: &Value, pid: u32) {
    assert_lab_left_nothing(record["namespace"].as_str().unwrap(), pid);
}

/// The network namespaces a lab makes (`lbf-...`) that exist now.
pub fn lab_namespaces() -> Vec<String> {
    output("ip", &["netns", "list"])
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with("lbf-"))
        .map(str::to_string)
        .collect()
}

/// [`assert_left_nothing`] for the lab of pid `pid` whose keys were under `namespace`.
pub fn assert_lab_left_nothing(namespace: &str, pid: u32) {
    assert!(namespace.starts_with("lockbench-faults-"), "{namespace}");
    // Processes: its workers carry `--lab PID`, its private servers a directory named after it.
    let dir_mark = format!("lockbench-faults-{pid}-");
    let lab_mark = format!("--lab\0{pid}\0");
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline);
        assert!(
            !cmdline.contains(&dir_mark) && !cmdline.contains(&lab_mark),
            "left running: {cmdline:?}"
        );
    }
    let temp = std::env::temp_dir();
    for entry in std::fs::read_dir(&temp).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        assert!(
            !name.starts_with(&dir_mark),
            "left behind: {}",
            temp.join(name).display()
        );
    }
    // The resource schema and the Postgres fencing sequence.
    let prefix = namespace.replace('-', "_");
    let pg = output(
        "psql",
        &[
            "-h",
            "127.0.0.1",
            "-p",
            "5442",
            "-U",
            "postgres",
            "-Atc",
            &format!(
                "SELECT count(*) FROM pg_namespace WHERE nspname LIKE '{prefix}%'; SELECT count(*) FROM pg_class WHERE relname LIKE '{prefix}%'"
            ),
        ],
    );
    assert_eq!(
        pg.split_whitespace().collect::<Vec<_>>(),
        ["0", "0"],
        "Postgres: {pg}"
    );
    for port in ["6390", "6391", "6392", "6393", "6394", "6395"] {
        let keys = output(
            "redis-cli",
            &["-p", port, "--scan", "--pattern", &format!("{namespace}:*")],
        );
        assert!(keys.trim().is_empty(), "Redis {port}: {keys}");
    }
    let etcd = output(
        "etcdctl",
        &[
            "--endpoints",
            "http://127.0.0.1:2389",
            "get",
            "--prefix",
            "--keys-only",
            &format!("/{namespace}/"),
        ],
    );
    assert!(etcd.trim().is_empty(), "etcd: {etcd}");
    let zk = output(
        "/usr/share/zookeeper/bin/zkCli.sh",
        &["-server", "127.0.0.1:2191", "ls", "/"],
    );
    assert!(!zk.contains(namespace), "ZooKeeper: {zk}");
}
