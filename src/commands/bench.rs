//! `lockbench bench`: acquisition latency of every backend, side by side.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use lockbench_bench::BenchResult;
use lockbench_core::{ResultsDir, RuntimeHistogram};
use lockbench_locks::{BackendConfig, LockBackend};

use crate::cli::BenchArgs;
use crate::commands::shared;
use crate::options::BenchCommand;
use crate::progress::Progress;
use crate::render;

/// Exit code when some backend could not be measured (the others were).
const SOME_FAILED: u8 = 3;

/// A backend that could not be measured, and why.
#[derive(serde::Serialize)]
struct Failure {
    backend: &'static str,
    error: String,
}

pub fn run(args: &BenchArgs) -> Result<ExitCode> {
    let command = BenchCommand::resolve(args)?;
    let out = command.out.as_deref().map(ResultsDir::new).transpose()?;
    // One thread: a request and its answer are handled where they were issued, without a
    // cross-thread wake-up per operation that would add tens of microseconds to every figure.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let (results, failures) = runtime.block_on(measure_all(&command));
    let json = serde_json::json!({ "results": &results, "failed": &failures });
    if command.json {
        println!("{}", serde_json::to_string_pretty(&json)?);
    } else {
        print!("{}", render::bench_table(&results));
    }
    if let Some(out) = out {
        write_results(out, &command, &results, &json)?;
    }
    Ok(if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(SOME_FAILED)
    })
}

async fn measure_all(command: &BenchCommand) -> (Vec<BenchResult>, Vec<Failure>) {
    let mut results = Vec::new();
    let mut failures = Vec::new();
    for config in &command.backends {
        match measure_backend(config, command).await {
            Ok(mut r) => {
                if let Some(broken) = r.iter().find(|r| r.ops == 0 && r.errors > 0) {
                    failures.push(Failure {
                        backend: config.kind.name(),
                        error: broken.first_error.clone().unwrap_or_default(),
                    });
                }
                results.append(&mut r);
            }
            Err(e) => {
                // One line, and the other backends go on.
                eprintln!("lockbench: bench: {e}");
                failures.push(Failure {
                    backend: config.kind.name(),
                    error: e.to_string(),
                });
            }
        }
    }
    (results, failures)
}

async fn measure_backend(
    config: &BackendConfig,
    command: &BenchCommand,
) -> Result<Vec<BenchResult>> {
    let most = command.contenders.iter().copied().max().unwrap_or(1);
    // A client per contender: contenders are separate workers, each with its own connection or
    // session, as in production.
    let mut clients: Vec<Arc<dyn LockBackend>> = Vec::with_capacity(most);
    for _ in 0..most {
        clients.push(Arc::from(lockbench_locks::connect(config).await?));
    }
    let _armed = lockbench_bench::ArmedTimer::spawn(config.operation_timeout);
    let mut results = Vec::new();
    let mut keys = Vec::new();
    for &contenders in &command.contenders {
        let progress = Progress::spinner(format!("{} x{contenders}", config.kind.name()));
        let counter = progress.counter();
        let (result, used) = lockbench_bench::run(
            config.kind.name(),
            clients[..contenders].to_vec(),
            &command.bench,
            counter,
        )
        .await;
        progress.finish();
        results.push(result);
        keys.extend(used);
    }
    keys.sort();
    keys.dedup();
    if let Err(e) = cleanup(&clients, &keys).await {
        eprintln!(
            "lockbench: bench: {}: cleanup after the run failed: {e}",
            config.kind.name()
        );
    }
    Ok(results)
}

/// Leaves nothing behind: keys, counters, sequences, folders, then the connections and sessions.
async fn cleanup(clients: &[Arc<dyn LockBackend>], keys: &[String]) -> Result<()> {
    let first = &clients[0];
    for key in keys {
        first.cleanup(key).await?;
    }
    first.cleanup_namespace().await?;
    for client in clients {
        client.close().await?;
    }
    Ok(())
}

fn write_results(
    mut out: ResultsDir,
    command: &BenchCommand,
    results: &[BenchResult],
    json: &serde_json::Value,
) -> Result<()> {
    out.add("results.json", serde_json::to_vec_pretty(json)?)?;
    out.add("bench.csv", render::bench_csv(results))?;
    let mut entries: Vec<(String, &RuntimeHistogram)> = Vec::new();
    for r in results {
        let tag = format!("{}/{}/{}/c={}", r.backend, r.mode, r.keys, r.contenders);
        let m = &r.metrics;
        for (metric, h) in [
            ("acquire", &m.acquire),
            ("renew", &m.renew),
            ("release", &m.release),
            ("handoff", &m.handoff),
        ] {
            entries.push((format!("{tag}/{metric}"), h));
        }
    }
    out.add(
        "latency.hlog",
        lockbench_core::interval_log(
            "lockbench bench: operation latency per backend/mode/keys/contenders/metric",
            &entries,
        ),
    )?;
    let mut manifest = serde_json::to_value(shared::manifest(&out, "bench", None, 0, Vec::new()))?;
    // The servers measured, with passwords removed: the config's URLs never reach a file as given.
    manifest["backends"] = serde_json::json!(command
        .backends
        .iter()
        .map(|c| serde_json::json!({ "backend": c.kind.name(), "urls": c.display_url(), "namespace": c.namespace }))
        .collect::<Vec<_>>());
    manifest["config"] = serde_json::json!(command.config_path.display().to_string());
    shared::commit(out, &manifest)
}
