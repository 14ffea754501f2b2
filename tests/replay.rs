//! `lockbench replay` against the real Postgres and Redis that scripts/services.sh starts: the
//! billing incident reproduced and each defence shown, migrations applied twice, nothing left
//! behind (also after Ctrl-C), bad input refused in one line, and an unreachable server named
//! with how to start it.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

mod common;
use common::{
    BILLING, CONFIG, MIGRATION, assert_one_line, assert_refused, lockbench, lockbench_process,
};

const START: &str = "start them with scripts/services.sh up";

/// The first URL lockbench.toml gives `backend`: the config is the one place the local servers'
/// ports are written (scripts/services.sh starts them there).
fn configured_url(backend: &str) -> String {
    let text = std::fs::read_to_string(CONFIG).unwrap();
    let configs = lockbench_locks::parse_config(&text).unwrap();
    let config = configs.iter().find(|c| c.kind.name() == backend);
    config
        .unwrap_or_else(|| panic!("lockbench.toml has no [backends.{backend}]"))
        .urls[0]
        .clone()
}

/// The port of [`configured_url`].
fn configured_port(backend: &str) -> String {
    let url = configured_url(backend);
    let after_host = url.rsplit(':').next().unwrap_or_default();
    after_host.split('/').next().unwrap_or_default().to_string()
}

/// The default config under a namespace of the test's own, so that leftovers can be looked for.
fn config(dir: &Path, tag: &str) -> (PathBuf, String) {
    let namespace = format!("lbtest_{}_{tag}", std::process::id());
    let text = std::fs::read_to_string(CONFIG).unwrap().replace(
        "namespace = \"lockbench\"",
        &format!("namespace = \"{namespace}\""),
    );
    let path = dir.join(format!("{tag}.toml"));
    std::fs::write(&path, text).unwrap();
    (path, namespace)
}

fn replay(config: &Path, args: &[&str]) -> Value {
    let out = lockbench()
        .args(["replay", "--config", config.to_str().unwrap(), "--json"])
        .args(["--compare-replays", "0", "--seed", "11"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "replay {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("stdout is JSON")
}

fn tool_output(program: &str, args: &[&str]) -> String {
    let out = std::process::Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{program} is needed ({e}); {START}"));
    assert!(
        out.status.success(),
        "{program} {args:?}: {}; is the server up? {START}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Schemas, lock keys and fencing counters the namespace still has on the servers.
fn leftovers(namespace: &str) -> (String, String) {
    let schemas = tool_output(
        "psql",
        &[
            "-h",
            "127.0.0.1",
            "-p",
            &configured_port("pg-session"),
            "-U",
            "postgres",
            "-At",
            "-c",
            &format!(
                "SELECT string_agg(nspname, ',') FROM pg_namespace WHERE nspname LIKE '{namespace}%'"
            ),
        ],
    );
    let keys = tool_output(
        "redis-cli",
        &[
            "-p",
            &configured_port("redis"),
            "--scan",
            "--pattern",
            &format!("{namespace}*"),
        ],
    );
    (schemas, keys)
}

fn assert_clean(namespace: &str) {
    let (schemas, keys) = leftovers(namespace);
    assert!(schemas.is_empty(), "schemas left behind: {schemas}");
    assert!(keys.is_empty(), "redis keys left behind: {keys}");
}

fn per_run(v: &Value, field: &str) -> Vec<u64> {
    v["per_run"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r[field].as_u64().unwrap())
        .collect()
}

/// The seed's story at a tenth of its volume and a fiftieth of its time: a TTL well under the
/// incident's runtime, a retry worker, and what each defence changes.
#[test]
fn billing_incident_double_charges_and_each_defence() {
    let dir = tempfile::tempdir().unwrap();
    let (config, namespace) = config(dir.path(), "billing");
    let common = [
        BILLING,
        "--backend",
        "redis",
        "--profile",
        "month-end-incident",
        "--scale",
        "0.05",
        "--time-scale",
        "0.02",
        "--runs",
        "2",
    ];
    let with = |extra: &[&str]| {
        let args: Vec<&str> = common.iter().chain(extra).copied().collect();
        replay(&config, &args)
    };

    let ttl = with(&["--ttl", "5s"]);
    assert_eq!(ttl["mode"], "ttl");
    assert!(
        per_run(&ttl, "double_executions").iter().all(|&d| d > 0),
        "a TTL under the runtime double-charges in every run: {ttl}"
    );
    assert!(ttl["duplicate_charges_accepted"].as_u64().unwrap() > 0);
    assert!(ttl["takeovers"].as_u64().unwrap() >= 2);
    assert!(ttl["runtime_s"]["p50"].as_f64().unwrap() > 5.0);
    for field in ["p50", "p99", "p999", "max", "mean"] {
        assert!(ttl["runtime_s"][field].as_f64().is_some(), "{field}");
    }
    let targets: Vec<&str> = ttl["injected_latency"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["target"].as_str().unwrap())
        .collect();
    assert_eq!(targets, ["db", "api"]);
    for t in ttl["injected_latency"].as_array().unwrap() {
        for f in [
            "requested_p50_ms",
            "achieved_p50_ms",
            "requested_p99_ms",
            "achieved_p99_ms",
        ] {
            assert!(t[f].as_f64().unwrap() > 0.0, "{f}");
        }
    }

    let heartbeat = with(&["--heartbeat"]);
    assert_eq!(heartbeat["mode"], "heartbeat");
    assert_eq!(heartbeat["heartbeat"]["lease_ttl_s"], 30.0);
    assert_eq!(heartbeat["double_executions"], 0, "{heartbeat}");
    assert_eq!(heartbeat["duplicate_charges_accepted"], 0);

    let keys = with(&["--ttl", "5s", "--idempotency-keys"]);
    assert!(
        keys["double_executions"].as_u64().unwrap() > 0,
        "both workers still run: {keys}"
    );
    assert_eq!(keys["duplicate_charges_accepted"], 0, "{keys}");

    let fenced = with(&["--ttl", "5s", "--fencing"]);
    assert!(
        per_run(&fenced, "stale_writes_rejected")
            .iter()
            .all(|&s| s > 0),
        "fencing refuses the stale worker's writes in every run: {fenced}"
    );
    assert!(
        per_run(&fenced, "aborted").iter().all(|&a| a > 0),
        "the stale worker stops"
    );
    assert_clean(&namespace);
}

#[test]
fn migrations_apply_twice_under_a_short_ttl_and_results_are_written() {
    let dir = tempfile::tempdir().unwrap();
    let (config, namespace) = config(dir.path(), "migration");
    let out = dir.path().join("replay");
    let v = replay(
        &config,
        &[
            MIGRATION,
            "--backend",
            "redis",
            "--scale",
            "0.05",
            "--time-scale",
            "0.05",
            "--runs",
            "2",
            "--ttl",
            "2s",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert!(
        per_run(&v, "double_executions").iter().all(|&d| d > 0),
        "{v}"
    );
    assert!(v["out_of_order"].as_u64().unwrap() > 0);
    assert!(v["duplicate_charges_accepted"].is_null());
    assert!(v["real_rows"].as_u64().unwrap() >= 100);
    for file in ["manifest.json", "results.json", "replay.csv", "replay.hlog"] {
        assert!(out.join(file).is_file(), "{file} missing");
    }
    let csv = std::fs::read_to_string(out.join("replay.csv")).unwrap();
    assert_eq!(csv.lines().count(), 3, "header and two runs");
    assert_clean(&namespace);
}

#[test]
fn ctrl_c_leaves_no_tables_keys_or_results() {
    let dir = tempfile::tempdir().unwrap();
    let (config, namespace) = config(dir.path(), "interrupt");
    let out = dir.path().join("never");
    let mut child = lockbench_process()
        .args([
            "replay",
            BILLING,
            "--backend",
            "redis",
            "--config",
            config.to_str().unwrap(),
            "--runs",
            "1000",
            "--scale",
            "0.1",
            "--time-scale",
            "0.05",
            "--compare-replays",
            "0",
            "--out",
            out.to_str().unwrap(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the replay's schema exists, then interrupt it mid-run.
    let deadline = Instant::now() + Duration::from_secs(30);
    while leftovers(&namespace).0.is_empty() {
        assert!(
            Instant::now() < deadline,
            "the replay never created its schema"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(700));
    tool_output("kill", &["-INT", &child.id().to_string()]);
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    assert!(!out.exists(), "no half-written results");
    assert_clean(&namespace);
}

#[test]
fn replay_refuses_bad_input_in_one_line() {
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["--backend", "mongo"],
            &["--backend", "unknown backend \"mongo\""],
        ),
        (
            &["--backend", "redis", "--time-scale", "0"],
            &["--time-scale"],
        ),
        (
            &["--backend", "redis", "--time-scale", "2"],
            &["--time-scale", "at most 1"],
        ),
        (&["--backend", "redis", "--ttl", "-5s"], &["--ttl"]),
        (&["--backend", "redis", "--workers", "0"], &["--workers"]),
        (&["--backend", "redis", "--runs", "x"], &["--runs"]),
        (
            &["--backend", "redlock", "--fencing"],
            &["--fencing", "redlock"],
        ),
    ];
    for (args, fragments) in cases {
        let out = lockbench()
            .args([
                "replay",
                BILLING,
                "--config",
                CONFIG,
                "--compare-replays",
                "0",
            ])
            .args(*args)
            .output()
            .unwrap();
        assert_refused(&out, args, fragments);
    }
}

#[test]
fn an_unreachable_database_is_named_with_how_to_start_it() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("down.toml");
    std::fs::write(
        &config,
        format!(
            "[backends.redis]\nurls = [\"{}\"]\n\n[replay]\ndatabase = \"postgres://postgres:hunter2@127.0.0.1:1/x\"\n",
            configured_url("redis")
        ),
    )
    .unwrap();
    let out = lockbench()
        .args([
            "replay",
            BILLING,
            "--backend",
            "redis",
            "--compare-replays",
            "0",
        ])
        .args(["--config", config.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = assert_one_line(
        &out,
        1,
        "replay with the database down",
        &["127.0.0.1:1", "scripts/services.sh up"],
    );
    assert!(!stderr.contains("hunter2"), "password leaked: {stderr}");
}

/// An unreachable server is exit 3 and one line naming it and how to start it, for the fault
/// lab's protected resource as for a lock backend.
#[test]
fn an_unreachable_server_is_exit_3_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let pg_down = dir.path().join("pg-down.toml");
    std::fs::write(
        &pg_down,
        "[backends.redis]\nurls = [\"redis://127.0.0.1:6390\"]\n\n[backends.pg-session]\nurls = [\"postgres://postgres@127.0.0.1:1/postgres\"]\n",
    )
    .unwrap();
    let redis_down = dir.path().join("redis-down.toml");
    std::fs::write(
        &redis_down,
        "[backends.redis]\nurls = [\"redis://127.0.0.1:1\"]\n\n[replay]\ndatabase = \"postgres://postgres@127.0.0.1:5442/postgres\"\n",
    )
    .unwrap();
    for (args, names) in [
        (
            vec![
                "faults",
                "--config",
                pg_down.to_str().unwrap(),
                "--scenario",
                "pause/naive",
                "--backend",
                "redis",
                "--trials",
                "1",
            ],
            "cannot reach the protected resource: Postgres at postgres://postgres@127.0.0.1:1/postgres",
        ),
        (
            vec![
                "replay",
                BILLING,
                "--backend",
                "redis",
                "--config",
                redis_down.to_str().unwrap(),
                "--runs",
                "1",
                "--ttl",
                "1s",
            ],
            "cannot reach redis://127.0.0.1:1",
        ),
    ] {
        let out = lockbench().args(&args).output().unwrap();
        assert_one_line(&out, 3, &args, &[names, "scripts/services.sh up"]);
    }
}
