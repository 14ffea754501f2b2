//! `lockbench run`: the main job. Each step is this same binary run as a child with `--out` into
//! a staging folder (so each step's output and exit code are exactly what a user running it by
//! hand gets); the report is written last and the folder moved into place whole.

use std::net::{TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use lockbench_core::records::bench::BenchRecord;
use lockbench_core::records::{Body, read_dir};
use lockbench_core::{ResultsDir, ResultsError};

use crate::cli::RunAllArgs;
use crate::commands::Interrupted;
use crate::options::{resolve_seed, usage};

/// `bench` exit code when some backend could not be measured.
const SOME_BACKENDS_FAILED: i32 = 3;
/// The live replay: the billing incident at a tenth of its volume, 50 times faster.
const REPLAY_SCALE: f64 = 0.1;
const REPLAY_TIME_SCALE: &str = "0.02";
/// The story's TTL, scaled with the replayed volume.
const STORY_TTL_S: f64 = 300.0;

/// The TTLs in use today for the shipped workloads, to price (the seed's stories).
fn current_ttl(workload: &str) -> Option<&'static str> {
    match workload {
        "billing" => Some("300s"),
        "migration" => Some("15m"),
        _ => None,
    }
}

struct Plan {
    quick: bool,
    seed: u64,
    config: PathBuf,
    specs: Vec<PathBuf>,
    staging: PathBuf,
}

pub fn run(args: &RunAllArgs) -> Result<ExitCode> {
    let out = args.out.clone().unwrap_or_else(|| {
        let stamp = chrono_like_stamp();
        PathBuf::from(format!("results/run-{stamp}"))
    });
    // Refuses an occupied --out before any work (exit 2), as every command does.
    ResultsDir::new(&out)?;
    if !args.config.is_file() {
        return Err(usage(
            "--config",
            format!(
                "{}: no such file; the default lockbench.toml sits at the repository root",
                args.config.display()
            ),
        )
        .into());
    }
    let mut specs: Vec<PathBuf> = std::fs::read_dir(&args.specs)
        .map_err(|e| usage("--specs", format!("{}: {e}", args.specs.display())))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    specs.sort();
    if specs.is_empty() {
        return Err(usage(
            "--specs",
            format!("{}: no .toml workload specs in it", args.specs.display()),
        )
        .into());
    }
    let seed = resolve_seed(args.seed.as_deref())?;
    let staging = staging_dir(&out)?;
    let plan = Plan {
        quick: args.quick,
        seed,
        config: args.config.clone(),
        specs,
        staging: staging.clone(),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let outcome = runtime.block_on(async {
        let mut interrupt =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
                .context("listening for Ctrl-C")?;
        tokio::select! {
            r = steps(&plan) => r.map(Some),
            _ = interrupt.recv() => Ok(None),
        }
    });
    match outcome {
        Ok(Some(skipped)) => {
            crate::commands::report::write(
                std::slice::from_ref(&staging),
                ResultsDir::new(&staging.join("report"))?,
                false,
            )
            .inspect_err(|_| {
                let _ = std::fs::remove_dir_all(&staging);
            })?;
            std::fs::rename(&staging, &out)
                .with_context(|| format!("moving the results into {}", out.display()))?;
            eprintln!();
            for line in &skipped {
                eprintln!("lockbench: run: skipped {line}");
            }
            eprintln!(
                "lockbench: run: done; the report is {}",
                out.join("report").join("report.html").display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Ok(None) => {
            // The child got the same Ctrl-C and cleaned up after itself.
            let _ = std::fs::remove_dir_all(&staging);
            Err(Interrupted("no results written".to_string()).into())
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&staging);
            Err(e)
        }
    }
}

/// A timestamp for the default folder name, from the system clock (UTC).
fn chrono_like_stamp() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}{m:02}{d:02}-{:02}{:02}{:02}",
        rest / 3600,
        (rest % 3600) / 60,
        rest % 60
    )
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// A hidden sibling of `out` where the steps write, moved into place at the end.
fn staging_dir(out: &Path) -> Result<PathBuf> {
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent)
        .map_err(|cause| ResultsError::Io {
            path: parent.clone(),
            cause,
        })
        .context("creating the results folder")?;
    let name = out
        .file_name()
        .map_or("run".into(), |n| n.to_string_lossy().into_owned());
    let staging = parent.join(format!(".{name}.partial-{}", std::process::id()));
    if staging.exists() {
        std::fs::remove_dir_all(&staging).ok();
    }
    std::fs::create_dir(&staging).with_context(|| format!("creating {}", staging.display()))?;
    // An empty target folder given by the user is replaced by the finished one.
    if out.is_dir() {
        std::fs::remove_dir(out).ok();
    }
    Ok(staging)
}

/// Runs this binary with `args`; returns its exit code.
async fn step(title: &str, args: &[String]) -> Result<i32> {
    eprintln!("\n== {title}");
    let exe = std::env::current_exe().context("finding the lockbench binary")?;
    let status = tokio::process::Command::new(exe)
        .args(args)
        .env(crate::commands::shared::STAGED, "1")
        .kill_on_drop(false)
        .status()
        .await
        .with_context(|| format!("running lockbench {}", args.join(" ")))?;
    Ok(status.code().unwrap_or(1))
}

fn s(items: &[&str]) -> Vec<String> {
    items.iter().map(|x| x.to_string()).collect()
}

fn spec_name(spec: &Path) -> String {
    spec.file_stem()
        .map_or("spec".into(), |s| s.to_string_lossy().into_owned())
}

/// Every step; returns what was skipped, one line each.
async fn steps(plan: &Plan) -> Result<Vec<String>> {
    let mut skipped = Vec::new();
    let seed = plan.seed.to_string();
    let replays = if plan.quick { "2000" } else { "20000" };
    let out = |name: &str| plan.staging.join(name).display().to_string();
    let specs: Vec<String> = plan.specs.iter().map(|p| p.display().to_string()).collect();

    let mut args = s(&["simulate"]);
    args.extend(specs.iter().cloned());
    args.extend(s(&["--scale", "1", "--scale", "10", "--replays", replays]));
    args.extend(s(&["--seed", &seed, "--out", &out("simulate")]));
    let code = step(
        "runtimes of every profile at today's volume and at 10x",
        &args,
    )
    .await?;
    if code != 0 {
        anyhow::bail!("simulate failed (exit code {code}); see above");
    }

    for spec in &plan.specs {
        let name = spec_name(spec);
        let mut args = s(&["ttl", &spec.display().to_string(), "--target-scale", "10"]);
        args.extend(s(&["--replays", replays, "--seed", &seed]));
        if let Some(ttl) = current_ttl(&name) {
            args.extend(s(&["--current-ttl", ttl]));
        }
        args.extend(s(&["--out", &out(&format!("ttl-{name}"))]));
        let code = step(&format!("TTL for {name} at 10x today's volume"), &args).await?;
        if code != 0 {
            anyhow::bail!("ttl {name} failed (exit code {code}); see above");
        }
    }

    let config = plan.config.display().to_string();
    let (contenders, duration, warmup) = if plan.quick {
        ("1,4", "1s", "200ms")
    } else {
        ("1,4,16", "5s", "1s")
    };
    let args = s(&[
        "bench",
        "--config",
        &config,
        "--contenders",
        contenders,
        "--duration",
        duration,
        "--warmup",
        warmup,
        "--out",
        &out("bench"),
    ]);
    let code = step("acquisition latency of every reachable backend", &args).await?;
    if code != 0 && code != SOME_BACKENDS_FAILED {
        anyhow::bail!("bench failed (exit code {code}); see above");
    }
    let bench = match read_dir(&plan.staging.join("bench"))
        .context("reading the benchmark's results back")?
        .body
    {
        Body::Bench { record, .. } => record,
        _ => anyhow::bail!("the bench step wrote no bench record"),
    };
    for failed in &bench.failed {
        skipped.push(format!("backend {}: {}", failed.backend, failed.error));
    }

    let billing = plan.specs.iter().find(|p| spec_name(p) == "billing");
    let database = lockbench_locks::replay_database(
        &std::fs::read_to_string(&plan.config).unwrap_or_default(),
    )
    .ok()
    .flatten();
    match (billing, database) {
        (None, _) => skipped.push("the live replay: no billing spec in the specs folder".into()),
        (_, None) => skipped.push(format!(
            "the live replay: {} names no Postgres ([replay] database)",
            plan.config.display()
        )),
        (Some(spec), Some(url)) => {
            let target = host_port(&url);
            if !reachable(&target) {
                let line = format!(
                    "the live replay: Postgres at {target} is not reachable; start the local servers with scripts/services.sh up"
                );
                eprintln!("\nlockbench: run: {line}");
                skipped.push(line);
            } else {
                replays_of(plan, spec, &bench, &seed).await?;
            }
        }
    }
    Ok(skipped)
}

/// The billing incident live with a TTL below its runtime, then each defence.
async fn replays_of(plan: &Plan, spec: &Path, bench: &BenchRecord, seed: &str) -> Result<()> {
    // The first networked backend the benchmark measured, else the in-process one.
    let measured: Vec<&str> = bench
        .results
        .iter()
        .filter(|r| r.ops > 0)
        .map(|r| r.backend.as_str())
        .collect();
    let backend = ["redis", "pg-session", "etcd", "zookeeper"]
        .into_iter()
        .find(|b| measured.contains(b))
        .unwrap_or("memory");
    let runs = if plan.quick { "2" } else { "5" };
    let ttl = format!("{}s", STORY_TTL_S * REPLAY_SCALE);
    let scale = REPLAY_SCALE.to_string();
    let config = plan.config.display().to_string();
    let modes: [(&str, Vec<&str>); 4] = [
        ("ttl", vec!["--ttl", &ttl]),
        ("heartbeat", vec!["--heartbeat"]),
        ("fencing", vec!["--ttl", &ttl, "--fencing"]),
        (
            "idempotency-keys",
            vec!["--ttl", &ttl, "--idempotency-keys"],
        ),
    ];
    for (name, extra) in modes {
        let mut args = s(&["replay", &spec.display().to_string(), "--backend", backend]);
        args.extend(s(&["--config", &config, "--profile", "month-end-incident"]));
        args.extend(s(&["--scale", &scale, "--time-scale", REPLAY_TIME_SCALE]));
        args.extend(s(&["--runs", runs, "--seed", seed]));
        args.extend(extra.iter().map(|x| x.to_string()));
        args.extend(s(&[
            "--out",
            &plan
                .staging
                .join(format!("replay-{name}"))
                .display()
                .to_string(),
        ]));
        let code = step(
            &format!("live replay of the billing incident on {backend}: {name}"),
            &args,
        )
        .await?;
        if code != 0 {
            anyhow::bail!("replay ({name}) failed (exit code {code}); see above");
        }
    }
    Ok(())
}

/// `host:port` of a Postgres URL (default port 5432).
fn host_port(url: &str) -> String {
    let rest = url.split("://").nth(1).unwrap_or(url);
    let rest = rest.rsplit('@').next().unwrap_or(rest);
    let authority = rest.split(['/', '?']).next().unwrap_or(rest);
    if authority.contains(':') {
        authority.to_string()
    } else {
        format!("{authority}:5432")
    }
}

fn reachable(target: &str) -> bool {
    target
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .is_some_and(|addr| TcpStream::connect_timeout(&addr, Duration::from_secs(2)).is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postgres_urls_give_host_and_port() {
        assert_eq!(
            host_port("postgres://postgres@127.0.0.1:5442/postgres"),
            "127.0.0.1:5442"
        );
        assert_eq!(
            host_port("postgres://u:p@db.example/x?sslmode=require"),
            "db.example:5432"
        );
    }

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_787), (2026, 11, 30));
    }
}
