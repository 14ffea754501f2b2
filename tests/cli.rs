//! The lockbench binary as a user meets it: commands, JSON fields, results directories, and one
//! clear line with exit code 2 for every kind of bad input.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

const BILLING: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/workloads/specs/billing.toml");
const MIGRATION: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/workloads/specs/migration.toml"
);

fn lockbench() -> Command {
    Command::cargo_bin("lockbench").unwrap()
}

fn json_of(args: &[&str]) -> Value {
    let out = lockbench().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("stdout is JSON")
}

/// Runs lockbench expecting bad-input failure: exit code 2 and exactly one line on stderr that
/// contains every fragment.
fn rejects(args: &[&str], fragments: &[&str]) {
    let out = lockbench().args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "args {args:?}: stderr {stderr}");
    assert_eq!(
        stderr.trim_end().lines().count(),
        1,
        "one line expected, got: {stderr}"
    );
    for f in fragments {
        assert!(stderr.contains(f), "args {args:?}: {stderr:?} lacks {f:?}");
    }
    assert!(out.stdout.is_empty(), "nothing on stdout when failing");
}

fn spec_file(dir: &Path, name: &str, text: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

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
fn ttl_recommends_from_the_worst_profile_and_prices_the_current_ttl() {
    let v = json_of(&[
        "ttl",
        BILLING,
        "--current-ttl",
        "300s",
        "--replays",
        "3000",
        "--seed",
        "3",
        "--json",
    ]);
    assert_eq!(
        v["profile"], "month-end-incident",
        "the default must be the pessimistic case"
    );
    let measured = v["measured_p999_s"].as_f64().unwrap();
    assert_eq!(v["safety_factor"], 3.0);
    assert!((v["ttl_s"].as_f64().unwrap() - 3.0 * measured).abs() < 1e-3);
    assert!(
        (v["alert_hold_s"].as_f64().unwrap() - 0.8 * v["ttl_s"].as_f64().unwrap()).abs() < 1e-3
    );
    let ci = v["p999_ci_s"].as_array().unwrap();
    assert!(ci[0].as_f64().unwrap() <= measured && measured <= ci[1].as_f64().unwrap());
    let hb = &v["heartbeat"];
    for field in [
        "lease_ttl_s",
        "renewal_interval_s",
        "give_up_after_s",
        "max_consecutive_failures",
    ] {
        assert!(!hb[field].is_null(), "heartbeat.{field}");
    }
    // The incident runs about 430 s: a 300 s TTL is outlived by almost every run.
    let current = &v["current_ttl"];
    assert_eq!(current["ttl_s"], 300.0);
    assert!(current["p_exceed"].as_f64().unwrap() > 0.99);
    assert!(current["expected_double_runs_per_year"].as_f64().unwrap() > 11.9);
    let trigger = v["review_trigger_volume"].as_u64().unwrap();
    assert!(
        trigger > 1800,
        "trigger {trigger} must lie above today's volume"
    );
}

#[test]
fn ttl_without_current_ttl_reports_null_and_honours_profile_and_factor() {
    let v = json_of(&[
        "ttl",
        BILLING,
        "--profile",
        "gc-pressure",
        "--target-scale",
        "2",
        "--safety-factor",
        "2",
        "--replays",
        "2000",
        "--seed",
        "3",
        "--json",
    ]);
    assert!(v["current_ttl"].is_null());
    assert_eq!(v["profile"], "gc-pressure");
    assert_eq!(v["target_scale"], 2.0);
    assert_eq!(v["target_volume"], 3600);
    // gc-pressure injects pauses: the lease is sized from their P99.9 (over 10 s).
    assert!(v["heartbeat"]["lease_ttl_s"].as_f64().unwrap() > 30.0);
    assert!(
        (v["ttl_s"].as_f64().unwrap() - 2.0 * v["measured_p999_s"].as_f64().unwrap()).abs() < 1e-3
    );
}

#[test]
fn ttl_text_keeps_measured_value_and_factor_apart() {
    lockbench()
        .args([
            "ttl",
            BILLING,
            "--profile",
            "baseline",
            "--current-ttl",
            "5m",
            "--replays",
            "2000",
            "--seed",
            "1",
        ])
        .assert()
        .success()
        .stdout(predicate::str::contains("measured P99.9 runtime"))
        .stdout(predicate::str::contains("safety factor"))
        .stdout(predicate::str::contains("renewal interval"))
        .stdout(predicate::str::contains("re-derive before volume exceeds"))
        .stdout(predicate::str::contains("current TTL 300.0 s"));
}

#[test]
fn out_writes_a_complete_results_directory() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    lockbench()
        .args([
            "ttl",
            BILLING,
            "--profile",
            "baseline",
            "--replays",
            "1000",
            "--seed",
            "8",
            "--json",
            "--out",
        ])
        .arg(&out)
        .assert()
        .success();
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["seed"], 8);
    assert_eq!(manifest["command"], "ttl");
    assert!(
        manifest["specs"][0]["text"]
            .as_str()
            .unwrap()
            .contains("[workload]")
    );
    let csv = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    assert_eq!(
        csv.lines().count(),
        4,
        "header + target + half + double scale:\n{csv}"
    );
    let hlog = std::fs::read_to_string(out.join("runtimes.hlog")).unwrap();
    assert!(hlog.contains("billing/baseline/scale=1"));
    let results: Value =
        serde_json::from_slice(&std::fs::read(out.join("results.json")).unwrap()).unwrap();
    assert_eq!(results["profile"], "baseline");

    // A second run into the same directory is refused and changes nothing.
    rejects(
        &[
            "simulate",
            BILLING,
            "--replays",
            "10",
            "--out",
            out.to_str().unwrap(),
        ],
        &["--out", "not empty"],
    );
}

#[test]
fn bad_input_leaves_no_results_directory() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("never");
    rejects(
        &[
            "ttl",
            BILLING,
            "--profile",
            "no-such",
            "--out",
            out.to_str().unwrap(),
        ],
        &["no-such"],
    );
    assert!(!out.exists());
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "no staging left behind"
    );
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
    ];
    for (name, text, fragments) in cases {
        let path = spec_file(d, name, &text);
        rejects(&["validate", path.to_str().unwrap()], &fragments);
        rejects(
            &["simulate", path.to_str().unwrap(), "--replays", "10"],
            &fragments,
        );
    }
    rejects(
        &["simulate", "/no/such/spec.toml"],
        &["/no/such/spec.toml", "no such file"],
    );
}

#[test]
fn bad_flags_name_the_flag() {
    rejects(
        &["simulate", BILLING, "--replays", "-5"],
        &["--replays", "-5"],
    );
    rejects(
        &["simulate", BILLING, "--replays", "0"],
        &["--replays", "expected 1 to"],
    );
    rejects(
        &["simulate", BILLING, "--scale", "0"],
        &["--scale", "above 0"],
    );
    rejects(&["simulate", BILLING, "--scale", "-2"], &["--scale"]);
    rejects(&["simulate", BILLING, "--threads", "0"], &["--threads"]);
    rejects(&["simulate", BILLING, "--seed", "abc"], &["--seed"]);
    rejects(
        &["simulate", BILLING, "--profile", "nope"],
        &["billing.toml", "nope", "baseline"],
    );
    rejects(
        &["ttl", BILLING, "--current-ttl", "-5s"],
        &["--current-ttl", "non-negative"],
    );
    rejects(
        &["ttl", BILLING, "--current-ttl", "300"],
        &["--current-ttl", "with a unit"],
    );
    rejects(
        &["ttl", BILLING, "--safety-factor", "0.5"],
        &["--safety-factor", "from 1 to 100"],
    );
    rejects(
        &["ttl", BILLING, "--runs-per-year", "0"],
        &["--runs-per-year"],
    );
    rejects(
        &["ttl", BILLING, "--target-scale", "huge"],
        &["--target-scale"],
    );
}

const CONFIG: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/lockbench.toml");

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
    let config = spec_file(
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

#[test]
fn bench_flags_are_checked() {
    rejects(
        &["bench", "--config", CONFIG, "--backend", "mysql"],
        &["--backend", "mysql", "redlock"],
    );
    rejects(
        &["bench", "--config", CONFIG, "--contenders", "0"],
        &["--contenders"],
    );
    rejects(
        &["bench", "--config", CONFIG, "--contenders", "1,x"],
        &["--contenders"],
    );
    rejects(&["bench", "--config", CONFIG, "--rate", "-5"], &["--rate"]);
    rejects(
        &["bench", "--config", CONFIG, "--ttl", "0s"],
        &["--ttl", "above zero"],
    );
    rejects(&["bench", "--config", CONFIG, "--hold", "-1s"], &["--hold"]);
    rejects(
        &["bench", "--config", CONFIG, "--keys", "some"],
        &["--keys"],
    );
    rejects(&["bench", "--config", CONFIG, "--ops", "0"], &["--ops"]);
    rejects(
        &["bench", "--config", "/no/such.toml"],
        &["--config", "/no/such.toml"],
    );
    let dir = tempfile::tempdir().unwrap();
    let bad = spec_file(
        dir.path(),
        "bad.toml",
        b"[backends.redis]\nurls = [\"redis://${LOCKBENCH_UNSET_VAR}@h\"]\n",
    );
    rejects(
        &["bench", "--config", bad.to_str().unwrap()],
        &["LOCKBENCH_UNSET_VAR"],
    );
    rejects(
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
    let http = spec_file(
        dir.path(),
        "http.toml",
        b"[backends.redis]\nurls = [\"http://127.0.0.1:6390\"]\n",
    );
    rejects(
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
    let config = spec_file(
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
        rejects(&args, fragments);
    };
    check(&["--trials", "0"], &["--trials", "expected 1 to 1000"]);
    check(&["--trials", "many"], &["--trials"]);
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
    rejects(
        &["faults", "--config", config.to_str().unwrap()],
        &["--config", "protected resource is a Postgres table"],
    );
}

/// humantime's byte offsets never reach the user.
#[test]
fn a_bad_duration_says_what_was_expected_and_nothing_about_offsets() {
    let out = lockbench()
        .args(["bench", "--config", CONFIG, "--ttl", "abc"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(!stderr.contains(" at 0"), "{stderr}");
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
    let billing = concat!(env!("CARGO_MANIFEST_DIR"), "/workloads/specs/billing.toml");
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
                billing,
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
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        assert!(stderr.contains(names), "{stderr}");
        assert!(stderr.contains("scripts/services.sh up"), "{stderr}");
    }
}

/// A flag clap itself refuses (unknown, missing its value, in conflict) is one line and exit 2,
/// like every other bad input.
#[test]
fn flags_clap_refuses_are_one_line() {
    rejects(
        &["simulate", "--bogus"],
        &["unexpected argument '--bogus'", "see --help"],
    );
    rejects(
        &["bench", "--contenders"],
        &["--contenders", "a value is required"],
    );
    rejects(
        &["faults", "--clean", "--out", "x"],
        &["'--clean' cannot be used with '--out <DIR>'"],
    );
}
