//! `lockbench bench` against the servers `scripts/services.sh up` starts: every backend measured
//! and written, an unreachable one reported in one line while the others go on, Redis over TLS,
//! and bad flags refused in one line.

use serde_json::Value;

mod common;
use common::{CONFIG, json_of, lockbench, refused, write_file};

#[test]
fn bench_measures_backends_and_writes_results() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("bench");
    let v = json_of(&[
        "bench",
        "--config",
        CONFIG,
        "--backend",
        "memory",
        "--backend",
        "redis",
        "--contenders",
        "1,2",
        "--duration",
        "300ms",
        "--warmup",
        "0s",
        "--json",
        "--out",
        out.to_str().unwrap(),
    ]);
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 4, "2 backends x 2 contention levels");
    for r in results {
        for field in [
            "backend",
            "mode",
            "contenders",
            "ops",
            "errors",
            "throughput_per_s",
        ] {
            assert!(!r[field].is_null(), "missing {field}");
        }
        for metric in ["acquire_us", "release_us", "renew_us"] {
            for p in ["p50", "p90", "p99", "p999", "max", "mean"] {
                assert!(r[metric][p].as_f64().is_some(), "missing {metric}.{p}");
            }
        }
        assert!(r["ops"].as_u64().unwrap() > 0);
        assert_eq!(r["errors"], 0);
    }
    assert!(v["failed"].as_array().unwrap().is_empty());
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["command"], "bench");
    let config = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/lockbench.toml"));
    let configs = lockbench_locks::parse_config(&config.unwrap()).unwrap();
    let redis = configs.iter().find(|c| c.kind.name() == "redis").unwrap();
    assert_eq!(manifest["backends"][1]["urls"], redis.urls[0]);
    let csv = std::fs::read_to_string(out.join("bench.csv")).unwrap();
    assert_eq!(csv.lines().count(), 5);
    assert!(
        std::fs::read_to_string(out.join("latency.hlog"))
            .unwrap()
            .contains("redis/closed/one/c=2/acquire")
    );
}

#[test]
fn bench_reports_an_unreachable_backend_in_one_line_and_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_file(
        dir.path(),
        "down.toml",
        b"[backends.memory]\n\n[backends.redis]\nurls = [\"redis://:hunter2@127.0.0.1:1\"]\n",
    );
    let out = lockbench()
        .args([
            "bench",
            "--config",
            config.to_str().unwrap(),
            "--contenders",
            "1",
            "--duration",
            "200ms",
            "--warmup",
            "0s",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "some backend failed");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<_> = stderr.lines().filter(|l| l.contains("redis")).collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(
        lines[0].contains("127.0.0.1:1") && lines[0].contains("scripts/services.sh up"),
        "{stderr}"
    );
    assert!(!stderr.contains("hunter2"), "password leaked: {stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("memory"),
        "the reachable backend was still measured: {stdout}"
    );
}

/// `redis-fair` is the configured Redis with its waiters queued in Redis: a row of its own, a
/// queue declared, and two contenders on one key granted in turn (the plain lock's release race
/// gives shares far apart, Jain 0.3-0.9). Under a namespace of its own: the plain `redis` bench
/// of the test above, running meanwhile on the same key, takes the lock without queueing and
/// its release wakes no fair waiter, which then waits out its TTL (a window without a grant,
/// seen once in CI as a row without a fairness figure).
#[test]
fn redis_fair_is_measured_as_a_backend_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(CONFIG).unwrap();
    let own = format!("namespace = \"lockbench-fair-{}\"", std::process::id());
    assert!(text.contains("namespace = \"lockbench\""));
    let config = write_file(
        dir.path(),
        "fair.toml",
        text.replacen("namespace = \"lockbench\"", &own, 1)
            .as_bytes(),
    );
    let v = json_of(&[
        "bench",
        "--config",
        config.to_str().unwrap(),
        "--backend",
        "redis-fair",
        "--contenders",
        "2",
        "--duration",
        "500ms",
        "--warmup",
        "100ms",
        "--json",
    ]);
    let row = &v["results"][0];
    assert_eq!(row["backend"], "redis-fair", "{row}");
    assert_eq!(row["errors"], 0, "{row}");
    assert!(
        row["fairness_jain"].as_f64().unwrap() > 0.99,
        "granted in turn: {row}"
    );
    let facts = &v["backends"][0];
    assert_eq!(facts["backend"], "redis-fair");
    assert_eq!(facts["wait_queue"], true);
}

/// `--topology cluster`: etcd and ZooKeeper measured on the configured server and, in the same
/// run, on a private cluster of three members lockbench starts on loopback and stops after: the
/// rows, the histograms and the manifest's servers name it (`etcd-cluster`), and nothing of the
/// cluster is left running. A quorum's write is a round of the leader to a follower more.
#[test]
fn a_private_cluster_is_measured_beside_the_configured_server_and_stopped_after() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("bench");
    let v = json_of(&[
        "bench",
        "--config",
        CONFIG,
        "--backend",
        "etcd",
        "--backend",
        "zookeeper",
        "--topology",
        "cluster",
        "--contenders",
        "1",
        "--ops",
        "200",
        "--warmup",
        "0.2s",
        "--json",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(v["failed"].as_array().unwrap().is_empty(), "{v}");
    let row = |name: &str| {
        v["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["backend"] == name)
            .unwrap_or_else(|| panic!("no {name} row: {v}"))
            .clone()
    };
    for (single, cluster) in [("etcd", "etcd-cluster"), ("zookeeper", "zookeeper-cluster")] {
        let (one, three) = (row(single), row(cluster));
        assert_eq!(three["ops"], 200, "{three}");
        assert_eq!(three["errors"], 0, "{three}");
        assert!(one["acquire_us"]["p50"].as_f64().unwrap() > 0.0);
        assert!(three["acquire_us"]["p50"].as_f64().unwrap() > 0.0);
    }
    let facts = |name: &str| {
        v["backends"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["backend"] == name)
            .unwrap()
            .clone()
    };
    // Each member of the ensemble answers srvr: its version is recorded as the single server's.
    assert_eq!(
        facts("zookeeper-cluster")["server_version"],
        facts("zookeeper")["server_version"]
    );
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap();
    let servers = manifest["backends"].as_array().unwrap();
    let cluster = servers
        .iter()
        .find(|s| s["backend"] == "etcd-cluster")
        .unwrap();
    assert_eq!(cluster["urls"].as_str().unwrap().split(',').count(), 3);
    assert!(
        std::fs::read_to_string(out.join("latency.hlog"))
            .unwrap()
            .contains("etcd-cluster/closed/one/c=1/acquire")
    );
    // The members were stopped by pid and their directories removed.
    let leftovers: Vec<String> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("-etcd-m") || n.contains("-zookeeper-m"))
        .filter(|n| {
            n.strip_prefix("lockbench-faults-")
                .and_then(|rest| rest.split('-').next())
                .is_some_and(|pid| !std::path::Path::new(&format!("/proc/{pid}")).exists())
        })
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn bench_flags_are_checked() {
    refused(
        &["bench", "--config", CONFIG, "--backend", "mysql"],
        &["--backend", "mysql", "redlock", "redis-fair"],
    );
    refused(
        &["bench", "--config", CONFIG, "--client", "jedis"],
        &[
            "--client",
            "unknown client \"jedis\"",
            "redis-py, python-redis-lock, redis-semaphore, pottery, node-redlock, kazoo, curator, etcd-go, tooz",
        ],
    );
    refused(
        &[
            "bench", "--config", CONFIG, "--client", "redis-py", "--shard", "0/2",
        ],
        &[
            "--client",
            "a split benchmark (--shard) measures lockbench's own client only",
        ],
    );
    refused(
        &[
            "bench",
            "--config",
            CONFIG,
            "--backend",
            "redis",
            "--topology",
            "cluster",
        ],
        &["--topology", "--backend etcd or --backend zookeeper"],
    );
    refused(
        &[
            "bench",
            "--config",
            CONFIG,
            "--backend",
            "etcd",
            "--topology",
            "cluster",
            "--shard",
            "0/2",
        ],
        &["--topology", "not in a split one (--shard)"],
    );
    refused(
        &["bench", "--config", CONFIG, "--backend", "etcd-cluster"],
        &["--backend", "etcd-cluster", "--topology cluster"],
    );
    let dir = tempfile::tempdir().unwrap();
    let etcd_only = write_file(
        dir.path(),
        "etcd.toml",
        b"[backends.etcd]\nurls = [\"http://127.0.0.1:2389\"]\n",
    );
    refused(
        &[
            "bench",
            "--config",
            etcd_only.to_str().unwrap(),
            "--backend",
            "redis-fair",
        ],
        &["--backend", "redis-fair is not configured"],
    );
    refused(
        &["bench", "--config", CONFIG, "--contenders", "0"],
        &["--contenders"],
    );
    refused(
        &["bench", "--config", CONFIG, "--contenders", "1,x"],
        &["--contenders"],
    );
    refused(&["bench", "--config", CONFIG, "--rate", "-5"], &["--rate"]);
    refused(
        &["bench", "--config", CONFIG, "--ttl", "0s"],
        &["--ttl", "above zero"],
    );
    refused(&["bench", "--config", CONFIG, "--hold", "-1s"], &["--hold"]);
    refused(
        &["bench", "--config", CONFIG, "--keys", "some"],
        &["--keys"],
    );
    refused(&["bench", "--config", CONFIG, "--ops", "0"], &["--ops"]);
    refused(
        &["bench", "--config", "/no/such.toml"],
        &["--config", "/no/such.toml"],
    );
    let bad = write_file(
        dir.path(),
        "bad.toml",
        b"[backends.redis]\nurls = [\"redis://${LOCKBENCH_UNSET_VAR}@h\"]\n",
    );
    refused(
        &["bench", "--config", bad.to_str().unwrap()],
        &["LOCKBENCH_UNSET_VAR"],
    );
    refused(
        &[
            "bench",
            "--config",
            CONFIG,
            "--ops",
            "10",
            "--duration",
            "1s",
        ],
        &["--ops", "--duration", "not both"],
    );
    let http = write_file(
        dir.path(),
        "http.toml",
        b"[backends.redis]\nurls = [\"http://127.0.0.1:6390\"]\n",
    );
    refused(
        &["bench", "--config", http.to_str().unwrap()],
        &["backends.redis.urls", "not a redis URL", "redis://"],
    );
}

/// Staging servers speak TLS: a `rediss://` URL reaches a Redis that only accepts TLS, trusting
/// the CA named by SSL_CERT_FILE (certificates made here with openssl).
#[test]
fn bench_reaches_redis_over_tls() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let run = |args: &[&str]| {
        let out = std::process::Command::new("openssl")
            .args(args)
            .current_dir(d)
            .output()
            .expect("openssl is installed");
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    run(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "1",
        "-subj",
        "/CN=lockbench test CA",
    ]);
    run(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
        "-subj",
        "/CN=127.0.0.1",
    ]);
    std::fs::write(
        d.join("ext.cnf"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    run(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.pem",
        "-days",
        "1",
        "-extfile",
        "ext.cnf",
    ]);
    let port = 30_000 + std::process::id() % 10_000;
    let mut server = std::process::Command::new("redis-server")
        .args([
            "--port",
            "0",
            "--tls-port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .args([
            "--tls-cert-file",
            "server.pem",
            "--tls-key-file",
            "server.key",
            "--tls-ca-cert-file",
            "ca.pem",
            "--tls-auth-clients",
            "no",
        ])
        .current_dir(d)
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("redis-server is missing: run scripts/services.sh up, which installs it");
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port as u16)).is_ok() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let config = write_file(
        d,
        "tls.toml",
        format!("[backends.redis]\nurls = [\"rediss://127.0.0.1:{port}\"]\n").as_bytes(),
    );
    let out = lockbench()
        .args([
            "bench",
            "--config",
            config.to_str().unwrap(),
            "--contenders",
            "1",
            "--duration",
            "300ms",
            "--warmup",
            "0s",
            "--json",
        ])
        .env("SSL_CERT_FILE", d.join("ca.pem"))
        .output()
        .unwrap();
    server.kill().unwrap();
    server.wait().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["results"][0]["ops"].as_u64().unwrap() > 0);
}

/// humantime's byte offsets never reach the user.
#[test]
fn a_bad_duration_says_what_was_expected_and_nothing_about_offsets() {
    let stderr = refused(&["bench", "--config", CONFIG, "--ttl", "abc"], &["--ttl"]);
    assert!(!stderr.contains(" at 0"), "{stderr}");
}

/// The record names what was measured: each server's version as the server reports it (Redis's
/// INFO, Postgres's server_version, etcd's status, ZooKeeper's srvr) and the client library
/// lockbench spoke through, so that a reader knows whose behaviour the figures are.
/// A team's own adapter is measured as a shipped one is, on the backend its user names, its rows
/// named by its file.
#[test]
fn a_teams_own_adapter_is_measured_beside_lockbenchs_own_client() {
    let dir = tempfile::tempdir().unwrap();
    let adapter = common::own_adapter(
        dir.path(),
        "acme_lock",
        "clients/adapters/python/redis_py.py",
    );
    let out = dir.path().join("bench");
    let v = json_of(&[
        "bench",
        "--config",
        CONFIG,
        "--client",
        &adapter,
        "--backend",
        "redis",
        "--contenders",
        "1",
        "--ops",
        "100",
        "--warmup",
        "0s",
        "--json",
        "--out",
        out.to_str().unwrap(),
    ]);
    let rows = v["results"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "lockbench's own and the adapter's: {v}");
    let own = rows
        .iter()
        .find(|r| !r["client"].is_null())
        .expect("a row through the adapter");
    assert_eq!(own["client"]["name"]["adapter"], adapter.as_str(), "{own}");
    assert_eq!(own["client"]["version"], "8.1.0", "{own}");
    assert_eq!(own["ops"], 100, "{own}");
    let csv = std::fs::read_to_string(out.join("bench.csv")).unwrap();
    assert!(
        csv.lines().any(|l| l.ends_with(",acme_lock 8.1.0")),
        "{csv}"
    );
    // Without its backend, it is refused: nothing says which server it speaks to.
    refused(
        &["bench", "--config", CONFIG, "--client", &adapter],
        &["--backend", "is not a shipped adapter"],
    );
}

/// `bench --client`: the backends of the libraries, measured through lockbench's own client and
/// through each library's adapters on the same server in one run; the library's rows carry its
/// name and version, in results.json, bench.csv (read back by `report`) and the histogram tags.
#[test]
fn a_client_library_is_measured_beside_lockbenchs_own_client_on_the_same_server() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("bench");
    let v = json_of(&[
        "bench",
        "--config",
        CONFIG,
        "--client",
        "redis-py",
        "--client",
        "kazoo",
        "--contenders",
        "1,2",
        "--ops",
        "100",
        "--warmup",
        "0s",
        "--json",
        "--out",
        out.to_str().unwrap(),
    ]);
    let results = v["results"].as_array().unwrap();
    let of = |backend: &str, client: Option<&str>| -> Vec<&Value> {
        results
            .iter()
            .filter(|r| r["backend"] == backend && r["client"]["name"].as_str() == client)
            .collect()
    };
    assert_eq!(
        results.len(),
        8,
        "2 backends x (own + library) x 2 levels: {v}"
    );
    for (backend, library, version) in [
        ("redis", "redis-py", "8.1.0"),
        ("zookeeper", "kazoo", "2.11.0"),
    ] {
        assert_eq!(
            of(backend, None).len(),
            2,
            "{backend} through lockbench's client"
        );
        let through = of(backend, Some(library));
        assert_eq!(through.len(), 2, "{backend} through {library}: {v}");
        for r in through {
            assert_eq!(r["client"]["version"], version);
            assert_eq!(r["errors"], 0, "{r}");
            assert!(r["ops"].as_u64().unwrap() >= 100, "{r}");
            assert!(r["acquire_us"]["p50"].as_f64().unwrap() > 0.0);
            assert!(r["release_us"]["p50"].as_f64().unwrap() > 0.0);
        }
    }
    assert!(v["failed"].as_array().unwrap().is_empty(), "{v}");
    let csv = std::fs::read_to_string(out.join("bench.csv")).unwrap();
    assert!(csv.lines().next().unwrap().ends_with(",client"), "{csv}");
    assert_eq!(
        csv.lines()
            .filter(|l| l.ends_with(",redis-py 8.1.0"))
            .count(),
        2,
        "{csv}"
    );
    let hlog = std::fs::read_to_string(out.join("latency.hlog")).unwrap();
    assert!(
        hlog.contains("Tag=redis+redis-py/closed/one/c=2/acquire"),
        "{hlog}"
    );
    // The directory reads back: a report's sections use lockbench's own rows, and the library
    // part sets each library's figures beside lockbench's own at the same level.
    let report = dir.path().join("report");
    let done = lockbench()
        .args([
            "report",
            out.to_str().unwrap(),
            "--out",
            report.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    let md = std::fs::read_to_string(report.join("report.md")).unwrap();
    let part = md
        .split("### Through the client libraries")
        .nth(1)
        .expect("the report has the library part");
    let row = part
        .lines()
        .find(|l| l.starts_with("| `redis-py 8.1.0 on redis` | 2 |"))
        .unwrap_or_else(|| panic!("no redis-py row at 2 contenders: {part}"));
    assert_eq!(
        row.matches(" us |").count() + row.matches(" ms |").count(),
        4,
        "{row}"
    );
}

#[test]
fn bench_records_each_servers_version_and_client() {
    let v = json_of(&[
        "bench",
        "--config",
        CONFIG,
        "--contenders",
        "1",
        "--ops",
        "20",
        "--warmup",
        "0s",
        "--json",
    ]);
    let backends = v["backends"].as_array().unwrap();
    use lockbench_locks::clients;
    for (backend, client) in [
        ("redis", clients::REDIS),
        ("redlock", clients::REDIS),
        ("pg-session", clients::POSTGRES),
        ("pg-xact", clients::POSTGRES),
        ("etcd", clients::ETCD),
        ("zookeeper", clients::ZOOKEEPER),
    ] {
        let facts = backends
            .iter()
            .find(|b| b["backend"] == backend)
            .unwrap_or_else(|| panic!("{backend} not measured: {v}"));
        let version = facts["server_version"].as_str().unwrap_or_default();
        // "7.0.15", "15.18 (Debian 15.18-0+deb12u1)", "3.8.0": a number first.
        let numeric = version
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .split('.')
            .take(2)
            .all(|part| !part.is_empty() && part.chars().all(|c| c.is_ascii_digit()));
        assert!(numeric, "{backend}: server version {version:?}");
        assert_eq!(facts["client"], client, "{backend}");
    }
    let memory = backends.iter().find(|b| b["backend"] == "memory").unwrap();
    assert!(memory.get("server_version").is_none(), "{memory}");
}
