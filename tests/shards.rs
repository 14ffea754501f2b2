//! Runs split into shards (`--shard I/N`) and merged (`lockbench merge`): N local processes are N
//! shards. The merged directory is byte for byte the one the whole run writes, whatever N and
//! the shards' thread counts; shards that do not belong together are refused in one line.

use std::path::{Path, PathBuf};

mod common;

use common::{BILLING, lockbench, refused};
use serde_json::Value;

fn ok(args: &[&str]) {
    let out = lockbench().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The files whose bytes must not depend on how the run was split.
const SAME: [&str; 3] = ["summary.csv", "runtimes.hlog", "exact.json"];

/// `command args` whole, then as `count` shards with alternating thread counts, merged.
fn whole_and_merged(root: &Path, name: &str, args: &[&str], count: u64) -> (PathBuf, PathBuf) {
    let whole = root.join(format!("{name}-whole"));
    let mut full: Vec<&str> = args.to_vec();
    full.extend(["--out", s(&whole)]);
    ok(&full);
    let mut dirs = Vec::new();
    for index in 0..count {
        let dir = root.join(format!("{name}-{count}-{index}"));
        let shard = format!("{index}/{count}");
        let threads = (1 + index % 2).to_string();
        let mut a: Vec<&str> = args.to_vec();
        a.extend(["--shard", &shard, "--run-id", name, "--threads", &threads]);
        a.extend(["--out", s(&dir)]);
        ok(&a);
        dirs.push(dir);
    }
    // Given in reverse: the order of the directories does not matter.
    let merged = root.join(format!("{name}-{count}-merged"));
    let mut m: Vec<&str> = vec!["merge"];
    m.extend(dirs.iter().rev().map(|d| s(d)));
    m.extend(["--out", s(&merged)]);
    ok(&m);
    (whole, merged)
}

fn assert_same_bytes(whole: &Path, merged: &Path, files: &[&str]) {
    for f in files {
        let a = std::fs::read(whole.join(f)).unwrap();
        let b = std::fs::read(merged.join(f)).unwrap();
        assert!(
            a == b,
            "{f} differs between {} and {}",
            whole.display(),
            merged.display()
        );
    }
}

#[test]
fn simulate_shards_merge_into_the_whole_run() {
    let root = tempfile::tempdir().unwrap();
    let args = [
        "simulate",
        BILLING,
        "--scale",
        "1",
        "--scale",
        "10",
        "--replays",
        "1001",
        "--seed",
        "7",
    ];
    for count in [2, 3, 7] {
        let (whole, merged) = whole_and_merged(root.path(), "sim", &args, count);
        assert_same_bytes(&whole, &merged, &SAME);
        let results = |d: &Path| -> serde_json::Value {
            serde_json::from_slice(&std::fs::read(d.join("results.json")).unwrap()).unwrap()
        };
        assert_eq!(results(&whole)["results"], results(&merged)["results"]);
        let manifest: serde_json::Value =
            serde_json::from_slice(&std::fs::read(merged.join("manifest.json")).unwrap()).unwrap();
        assert_eq!(
            manifest["merged_from"].as_array().unwrap().len(),
            count as usize
        );
        assert_eq!(manifest["shard"], serde_json::Value::Null);
        // What the merged run was: `count` processes of one or two threads, and a rate over
        // their summed time, not the shards' samples over the slowest one's.
        let (one, all) = (results(&whole), results(&merged));
        assert_eq!(one["shards"], 1);
        assert_eq!(all["shards"], count);
        assert_eq!(
            all["threads"], 2,
            "one process's threads, not the shards' sum"
        );
        assert_eq!(manifest["threads"], 2);
        let threads: Vec<u64> = manifest["merged_from"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["threads"].as_u64().unwrap())
            .collect();
        let alternating: Vec<u64> = (0..count).map(|i| 1 + i % 2).collect();
        assert_eq!(threads, alternating);
        let shard_seconds: f64 = (0..count)
            .map(|i| {
                let dir = root.path().join(format!("sim-{count}-{i}"));
                results(&dir)["elapsed_s"].as_f64().unwrap()
            })
            .sum();
        let samples = all["latency_samples"].as_f64().unwrap();
        assert_eq!(Some(samples), one["latency_samples"].as_f64());
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs();
        assert!(
            close(all["elapsed_s"].as_f64().unwrap(), shard_seconds),
            "{all}"
        );
        assert!(
            close(
                all["samples_per_s"].as_f64().unwrap(),
                samples / shard_seconds
            ),
            "{all}"
        );
        std::fs::remove_dir_all(&whole).unwrap();
    }
}

/// The TTL of merged shards is the whole run's: derived from the merged histograms (every shard
/// simulates every profile's growth runs, merge keeps the chosen one's), not from any shard's.
#[test]
fn ttl_shards_merge_into_the_whole_runs_recommendation() {
    let root = tempfile::tempdir().unwrap();
    let args = [
        "ttl",
        BILLING,
        "--target-scale",
        "10",
        "--replays",
        "1001",
        "--seed",
        "7",
        "--current-ttl",
        "300s",
    ];
    for count in [2, 3, 7] {
        let (whole, merged) = whole_and_merged(root.path(), "ttl", &args, count);
        assert_same_bytes(&whole, &merged, &SAME);
        // The record is the whole run's but for how long each rare-event estimate took.
        let read = |dir: &Path| {
            let mut v: Value =
                serde_json::from_slice(&std::fs::read(dir.join("results.json")).unwrap()).unwrap();
            strip(&mut v, "elapsed_s");
            v
        };
        assert_eq!(
            read(&whole),
            read(&merged),
            "results.json at {count} shards"
        );
        std::fs::remove_dir_all(&whole).unwrap();
    }
}

#[test]
fn merge_refuses_shards_that_do_not_belong_together() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    let shard = |name: &str, index: u64, count: u64, run: &str, seed: &str| -> PathBuf {
        let dir = r.join(name);
        let at = format!("{index}/{count}");
        ok(&[
            "simulate",
            BILLING,
            "--replays",
            "300",
            "--seed",
            seed,
            "--shard",
            &at,
            "--run-id",
            run,
            "--out",
            s(&dir),
        ]);
        dir
    };
    let a0 = shard("a0", 0, 3, "a", "7");
    let a1 = shard("a1", 1, 3, "a", "7");
    let a2 = shard("a2", 2, 3, "a", "7");
    let b2 = shard("b2", 2, 3, "b", "7");
    let c2 = shard("c2", 2, 3, "a", "8");
    let out = r.join("out");
    let o = s(&out);
    refused(
        &["merge", s(&a0), s(&a1), "--out", o],
        &["shard 2 of 3 of run a is missing (given: 0, 1)"],
    );
    refused(
        &["merge", s(&a0), s(&a1), s(&a1), s(&a2), "--out", o],
        &["a1", "shard 1 of 3 given twice"],
    );
    refused(
        &["merge", s(&a0), s(&a1), s(&b2), "--out", o],
        &["b2", "another run: its run id is b"],
    );
    refused(
        &["merge", s(&a0), s(&a1), s(&c2), "--out", o],
        &["c2", "another run: its seed is 8, but"],
    );
    // Shards are compared by their resolved settings, not by how the flags were spelled:
    // `--seed=7 --replays=300` after the path is the run of `--replays 300 --seed 7`; another
    // replay count is another run.
    let spelled = r.join("spelled");
    ok(&[
        "simulate",
        "--shard=2/3",
        "--seed=7",
        BILLING,
        "--run-id=a",
        "--replays=300",
        "--out",
        s(&spelled),
    ]);
    ok(&[
        "merge",
        s(&a0),
        s(&a1),
        s(&spelled),
        "--out",
        s(&r.join("merged")),
    ]);
    let more = r.join("more");
    ok(&[
        "simulate",
        BILLING,
        "--replays",
        "301",
        "--seed",
        "7",
        "--shard",
        "2/3",
        "--run-id",
        "a",
        "--out",
        s(&more),
    ]);
    refused(
        &["merge", s(&a0), s(&a1), s(&more), "--out", o],
        &["more", "another run: its replays is 301, but", "has 300"],
    );
    // A whole run is not a shard.
    let whole = r.join("whole");
    ok(&[
        "simulate",
        BILLING,
        "--replays",
        "300",
        "--seed",
        "7",
        "--out",
        s(&whole),
    ]);
    refused(
        &["merge", s(&a0), s(&whole), "--out", o],
        &["whole", "not a shard"],
    );
    // A histogram recorded with other settings cannot be added exactly.
    let doctored = r.join("doctored");
    copy_dir(&a2, &doctored);
    let log = std::fs::read_to_string(doctored.join("runtimes.hlog")).unwrap();
    let other = other_settings_log(&log);
    std::fs::write(doctored.join("runtimes.hlog"), other).unwrap();
    refused(
        &["merge", s(&a0), s(&a1), s(&doctored), "--out", o],
        &["runtimes.hlog", "significant digits"],
    );
    // A shard's summary.csv is checked against its histograms: an edited figure, or a file
    // holding only garbage, is refused, not merged.
    let edited = r.join("edited");
    copy_dir(&a1, &edited);
    let summary = std::fs::read_to_string(edited.join("summary.csv")).unwrap();
    let mut lines: Vec<String> = summary.lines().map(str::to_string).collect();
    let p999 = lines[0]
        .split(',')
        .position(|c| c == "runtime_p999_s")
        .unwrap();
    let mut cells: Vec<String> = lines[1].split(',').map(str::to_string).collect();
    cells[p999] = "1.5".to_string();
    lines[1] = cells.join(",");
    std::fs::write(edited.join("summary.csv"), lines.join("\n") + "\n").unwrap();
    refused(
        &["merge", s(&a0), s(&edited), s(&a2), "--out", o],
        &[
            "edited/summary.csv",
            "row 1",
            "disagrees with its histogram",
        ],
    );
    std::fs::write(edited.join("summary.csv"), "garbage\n").unwrap();
    refused(
        &["merge", s(&a0), s(&edited), s(&a2), "--out", o],
        &["edited/summary.csv"],
    );
    assert!(!out.exists(), "nothing written by a refused merge");
}

#[test]
fn shard_flags_are_checked() {
    refused(
        &[
            "simulate", BILLING, "--seed", "1", "--shard", "3/3", "--run-id", "r",
        ],
        &["--shard: expected I/N"],
    );
    refused(
        &["simulate", BILLING, "--shard", "0/3", "--run-id", "r"],
        &["--seed: shard 0/3 of run r"],
    );
    refused(
        &["simulate", BILLING, "--seed", "1", "--shard", "0/3"],
        &["--run-id: shard 0/3"],
    );
    let out = lockbench()
        .args(["simulate", BILLING, "--seed", "1", "--replays", "10"])
        .env("JOB_COMPLETION_INDEX", "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("LOCKBENCH_SHARDS"));
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

/// The same log with every histogram re-encoded at 2 significant digits.
fn other_settings_log(log: &str) -> String {
    use base64::Engine as _;
    use hdrhistogram::Histogram;
    use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
    let engine = base64::engine::general_purpose::STANDARD;
    log.lines()
        .map(|line| {
            let Some(rest) = line.strip_prefix("Tag=") else {
                return line.to_string();
            };
            let mut fields: Vec<String> = rest.split(',').map(str::to_string).collect();
            let bytes = engine.decode(fields[4].trim()).unwrap();
            let h: Histogram<u64> = Deserializer::new()
                .deserialize(&mut bytes.as_slice())
                .unwrap();
            let mut coarse = Histogram::<u64>::new_with_bounds(1, h.high(), 2).unwrap();
            coarse.add(&h).unwrap();
            let mut out = Vec::new();
            V2Serializer::new().serialize(&coarse, &mut out).unwrap();
            fields[4] = engine.encode(out);
            format!("Tag={}", fields.join(","))
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

/// `--start-at` this far ahead: time for every shard process to start, connect and warm up.
const START_IN: std::time::Duration = std::time::Duration::from_secs(4);

/// Bench shards of one run, started together against a local server: each shard's row counts the
/// run's contenders, and with one contender per shard every failed try is a lock held by another
/// shard, so try-fail > 0 on each shows the shards contend for the same key. Merged, the count is
/// the shards' sum and the percentiles are those of their histograms added: with one shard
/// doctored ten times slower, the merged P99 is still the summed histograms', which the mean of
/// the shards' P99s is not; a shard whose clock was off is warned about.
#[test]
fn bench_shards_contend_for_the_same_lock_and_merge_exactly() {
    let root = tempfile::tempdir().unwrap();
    for (backend, count) in [("redis", 2u64), ("pg-session", 4)] {
        let at =
            humantime::format_rfc3339_seconds(std::time::SystemTime::now() + START_IN).to_string();
        let level = count.to_string();
        let run = format!("{backend}-{count}");
        let children: Vec<(PathBuf, std::process::Child)> = (0..count)
            .map(|index| {
                let dir = root.path().join(format!("{run}-{index}"));
                let child = common::lockbench_process()
                    .args([
                        "bench",
                        "--backend",
                        backend,
                        "--contenders",
                        &level,
                        "--duration",
                        "1s",
                        "--warmup",
                        "200ms",
                        "--wait-mode",
                        "poll",
                        "--shard",
                        &format!("{index}/{count}"),
                        "--run-id",
                        &run,
                        "--start-at",
                        &at,
                        "--out",
                        s(&dir),
                    ])
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap();
                (dir, child)
            })
            .collect();
        let mut dirs = Vec::new();
        for (dir, child) in children {
            let out = child.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "{}: {} (start the local servers with scripts/services.sh up)",
                dir.display(),
                String::from_utf8_lossy(&out.stderr)
            );
            let record: serde_json::Value =
                serde_json::from_slice(&std::fs::read(dir.join("results.json")).unwrap()).unwrap();
            let row = &record["results"][0];
            assert_eq!(row["contenders"], count, "{backend}: the run's contenders");
            assert!(row["ops"].as_u64().unwrap() > 0, "{backend}: {row}");
            assert!(
                row["try_fail_rate"].as_f64().unwrap() > 0.0,
                "{backend} shard {}: one contender here, so a failed try is another shard's hold",
                dir.display()
            );
            let manifest: serde_json::Value =
                serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
            assert_eq!(manifest["shard"]["count"], count);
            assert!(manifest["shard"]["start_at_unix_ms"].as_u64().is_some());
            dirs.push(dir);
        }
        merged_bench_is_exact(root.path(), &run, &dirs);
    }
}

/// The acquire histogram of every shard's only row, added up.
fn summed_acquire(dirs: &[PathBuf]) -> (u64, lockbench_core::RuntimeHistogram) {
    let mut ops = 0;
    let mut sum = lockbench_core::RuntimeHistogram::for_latency();
    for d in dirs {
        let read = lockbench_core::records::read_dir(d).unwrap();
        let (_, h) = read
            .histograms
            .iter()
            .find(|(t, _)| t.ends_with("/acquire"))
            .unwrap();
        ops += h.count();
        sum.merge(h);
    }
    (ops, sum)
}

fn merged_bench_is_exact(root: &Path, run: &str, dirs: &[PathBuf]) {
    let merge_warning = |dirs: &[PathBuf], out: &Path| -> (serde_json::Value, String) {
        let mut args: Vec<&str> = vec!["merge"];
        args.extend(dirs.iter().map(|d| s(d)));
        args.extend(["--out", s(out), "--json"]);
        let out = lockbench().args(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(out.status.success(), "{stderr}");
        (serde_json::from_slice(&out.stdout).unwrap(), stderr)
    };
    let merge = |dirs: &[PathBuf], out: &Path| -> serde_json::Value {
        let (merged, stderr) = merge_warning(dirs, out);
        // One host, one clock: the shards started together.
        assert!(!stderr.contains("warning"), "{stderr}");
        merged
    };
    let us = |h: &lockbench_core::RuntimeHistogram, q: f64| {
        (h.quantile(q).as_nanos() as f64 / 1e3 * 100.0).round() / 100.0
    };
    let merged = merge(dirs, &root.join(format!("{run}-merged")));
    let row = &merged["results"][0];
    let plain_p99 = row["acquire_us"]["p99"].as_f64().unwrap();
    let (ops, sum) = summed_acquire(dirs);
    assert_eq!(row["ops"], ops, "{run}: the shards' operations added");
    assert_eq!(
        row["acquire_us"]["p99"],
        us(&sum, 0.99),
        "{run}: the summed histogram's P99"
    );
    assert!(row["try_fail_rate"].as_f64().unwrap() > 0.0);
    // Shard 0 ten times slower: a mean of P99s is not the P99 of the whole.
    let doctored: Vec<PathBuf> = dirs
        .iter()
        .enumerate()
        .map(|(i, d)| {
            if i > 0 {
                return d.clone();
            }
            let slow = root.join(format!("{run}-slow-0"));
            copy_dir(d, &slow);
            slow_down(&slow, 10);
            slow
        })
        .collect();
    let merged = merge(&doctored, &root.join(format!("{run}-merged-slow")));
    let p99 = merged["results"][0]["acquire_us"]["p99"].as_f64().unwrap();
    let (_, sum) = summed_acquire(&doctored);
    assert_eq!(p99, us(&sum, 0.99));
    let shard_p99s: Vec<f64> = doctored
        .iter()
        .map(|d| {
            let r: serde_json::Value =
                serde_json::from_slice(&std::fs::read(d.join("results.json")).unwrap()).unwrap();
            r["results"][0]["acquire_us"]["p99"].as_f64().unwrap()
        })
        .collect();
    // The mean of the shards' P99s is no percentile of the run (it may land near one by chance).
    let mean = shard_p99s.iter().sum::<f64>() / shard_p99s.len() as f64;
    assert_ne!(p99, mean, "{run}: the merged P99 is the summed histograms'");
    assert!(
        p99 > plain_p99,
        "{run}: a slower shard moves the merged P99 ({plain_p99} -> {p99} us)"
    );
    // A shard whose host clock ran 300 ms ahead of the server's started 300 ms early.
    let skewed = root.join(format!("{run}-skewed-1"));
    copy_dir(&dirs[1], &skewed);
    let path = skewed.join("manifest.json");
    let mut manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let offset = manifest["shard"]["clock_offset_ms"]
        .as_f64()
        .expect("the shard read the server's clock");
    manifest["shard"]["clock_offset_ms"] = (offset + 300.0).into();
    std::fs::write(&path, serde_json::to_vec_pretty(&manifest).unwrap()).unwrap();
    let mut with_skew = dirs.to_vec();
    with_skew[1] = skewed;
    let (_, stderr) = merge_warning(&with_skew, &root.join(format!("{run}-merged-skewed")));
    assert!(
        stderr.contains("warning: the shards started up to 300."),
        "{run}: {stderr}"
    );
    assert_eq!(stderr.matches("warning").count(), 1, "{stderr}");
}

/// Every acquire latency of a bench directory multiplied by `factor`: its log, its exact figures
/// and its row's summary, as a slower shard would have written them.
fn slow_down(dir: &Path, factor: u64) {
    use base64::Engine as _;
    use hdrhistogram::Histogram;
    use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
    let engine = base64::engine::general_purpose::STANDARD;
    let log = std::fs::read_to_string(dir.join("latency.hlog")).unwrap();
    let mut tag = String::new();
    let lines: Vec<String> = log
        .lines()
        .map(|line| {
            let Some(rest) = line.strip_prefix("Tag=") else {
                return line.to_string();
            };
            let mut fields: Vec<String> = rest.split(',').map(str::to_string).collect();
            if !fields[0].ends_with("/acquire") {
                return line.to_string();
            }
            tag = fields[0].clone();
            let bytes = engine.decode(fields[4].trim()).unwrap();
            let h: Histogram<u64> = Deserializer::new()
                .deserialize(&mut bytes.as_slice())
                .unwrap();
            let mut slow = Histogram::<u64>::new_with_bounds(1, h.high(), h.sigfig()).unwrap();
            for v in h.iter_recorded() {
                slow.record_n(v.value_iterated_to() * factor, v.count_at_value())
                    .unwrap();
            }
            let mut out = Vec::new();
            V2Serializer::new().serialize(&slow, &mut out).unwrap();
            fields[4] = engine.encode(out);
            format!("Tag={}", fields.join(","))
        })
        .collect();
    std::fs::write(dir.join("latency.hlog"), lines.join("\n") + "\n").unwrap();
    let path = dir.join("exact.json");
    let mut exact: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    for entry in exact["histograms"].as_array_mut().unwrap() {
        if entry["tag"] == tag.as_str() {
            let f = &mut entry["figures"];
            for key in ["min_ns", "max_ns"] {
                f[key] = (f[key].as_u64().unwrap() * factor).into();
            }
            f["sum_ns"] = (f["sum_ns"].as_u64().unwrap() * factor).into();
        }
    }
    std::fs::write(&path, serde_json::to_vec_pretty(&exact).unwrap()).unwrap();
    // The row's own summary, as that shard would have printed it.
    let read = lockbench_core::records::read_dir(dir).unwrap();
    let (_, h) = read.histograms.iter().find(|(t, _)| *t == tag).unwrap();
    let path = dir.join("results.json");
    let mut record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    record["results"][0]["acquire_us"]["p99"] =
        ((h.quantile(0.99).as_nanos() as f64 / 1e3 * 100.0).round() / 100.0).into();
    std::fs::write(&path, serde_json::to_vec_pretty(&record).unwrap()).unwrap();
}

#[test]
fn a_bench_shard_that_cannot_be_ready_in_time_says_so_with_exit_code_4() {
    let at = humantime::format_rfc3339_seconds(
        std::time::SystemTime::now() + std::time::Duration::from_secs(2),
    )
    .to_string();
    let out = lockbench()
        .args([
            "bench",
            "--backend",
            "redis",
            "--contenders",
            "2",
            "--duration",
            "1s",
            "--warmup",
            "5s",
            "--shard",
            "0/2",
            "--run-id",
            "late",
            "--start-at",
            &at,
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(
        stderr.contains("bench shard 0/2 of run late: not ready"),
        "{stderr}"
    );
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
}

#[test]
fn bench_shard_flags_are_checked() {
    refused(
        &[
            "bench",
            "--backend",
            "redis",
            "--rate",
            "100",
            "--contenders",
            "1",
            "--shard",
            "0/2",
            "--run-id",
            "x",
            "--start-at",
            "2099-01-01T00:00:00Z",
        ],
        &["--contenders: an open loop over 2 shards needs a client in every shard"],
    );
    refused(
        &["bench", "--backend", "redis", "--warmup", "2h"],
        &["--warmup: expected at most 1h"],
    );
    refused(
        &[
            "bench",
            "--backend",
            "redis",
            "--shard",
            "0/2",
            "--run-id",
            "x",
        ],
        &["--start-at: bench shard 0/2 of run x"],
    );
    refused(
        &[
            "bench",
            "--backend",
            "redis",
            "--shard",
            "0/2",
            "--run-id",
            "x",
            "--start-at",
            "2099-01-01T00:00:00Z",
            "--ops",
            "5",
        ],
        &["--ops: bench shard 0/2 of run x"],
    );
    refused(
        &["bench", "--start-at", "2099-01-01T00:00:00Z"],
        &["--backend: --start-at puts every shard on one schedule"],
    );
    refused(
        &[
            "bench",
            "--backend",
            "redis",
            "--start-at",
            "2001-01-01T00:00:00Z",
        ],
        &["--start-at: 2001-01-01T00:00:00Z has passed"],
    );
}

/// Two specs may name the same workload and profiles (a spec and its edited copy): their
/// histograms then share a tag, and each must keep its own exact figures through a merge.
#[test]
fn histograms_with_one_tag_keep_their_own_figures() {
    let root = tempfile::tempdir().unwrap();
    let original = std::fs::read_to_string(BILLING).unwrap();
    let slower = original.replacen("[[steps]]", "[[steps]]\n# edited copy", 1);
    assert_ne!(slower, original);
    let copy = root.path().join("billing-copy.toml");
    // Same names, other content: every latency of the copy's first step doubled is too much
    // surgery for a test; a different volume gives other runtimes under the same tags.
    let edited = slower.replacen("volume = 1800", "volume = 2400", 1);
    assert_ne!(edited, slower, "the shipped spec states volume = 1800");
    std::fs::write(&copy, edited).unwrap();
    let args = [
        "simulate",
        BILLING,
        s(&copy),
        "--profile",
        "baseline",
        "--replays",
        "300",
        "--seed",
        "5",
    ];
    let (whole, merged) = whole_and_merged(root.path(), "twins", &args, 2);
    assert_same_bytes(&whole, &merged, &SAME);
}

/// `v` without any field named `key`, at any depth.
fn strip(v: &mut Value, key: &str) {
    match v {
        Value::Object(map) => {
            map.remove(key);
            map.values_mut().for_each(|x| strip(x, key));
        }
        Value::Array(items) => items.iter_mut().for_each(|x| strip(x, key)),
        _ => {}
    }
}
