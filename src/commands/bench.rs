//! `lockbench bench`: acquisition latency of every backend, side by side.

use std::process::ExitCode;
use std::sync::Arc;

use std::io::Write as _;

use anyhow::{Context, Result};
use lockbench_bench::BenchResult;
use lockbench_core::records::bench::{self, BackendFacts, BenchFailure, BenchRecord};
use lockbench_core::records::{RESULTS_JSON, to_json};
use lockbench_core::{ResultsDir, RuntimeHistogram};
use lockbench_locks::{BackendConfig, Capabilities, LockBackend};

use crate::cli::BenchArgs;
use crate::commands::shared;
use crate::options::BenchCommand;
use crate::progress::Progress;
use crate::render;

/// Exit code when some backend could not be measured (the others were).
const SOME_FAILED: u8 = 3;

/// What a backend measured declared about itself, as the record keeps it.
fn facts(backend: &str, c: Capabilities) -> BackendFacts {
    BackendFacts {
        backend: backend.to_string(),
        fencing: c.fencing.describe().to_string(),
        native_ttl: c.native_ttl,
        wait_queue: c.wait_queue,
        native_wait: c.native_wait,
        scope: c.scope.describe().to_string(),
        cannot_prevent: c.scope.cannot_prevent().to_string(),
    }
}

/// Everything measured: the results with their histograms, and the record's other parts.
struct Measured {
    results: Vec<BenchResult>,
    failed: Vec<BenchFailure>,
    backends: Vec<BackendFacts>,
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
    let measured = runtime.block_on(measure_all(&command));
    let record = BenchRecord {
        results: measured.results.iter().map(|r| r.row.clone()).collect(),
        failed: measured.failed,
        backends: measured.backends,
    };
    if command.json {
        std::io::stdout().write_all(&to_json(&record))?;
    } else {
        print!("{}", render::bench_table(&record.results));
    }
    let failed = !record.failed.is_empty();
    if let Some(out) = out {
        write_results(out, &command, &measured.results, &record)?;
    }
    Ok(if !failed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(SOME_FAILED)
    })
}

async fn measure_all(command: &BenchCommand) -> Measured {
    let mut measured = Measured {
        results: Vec::new(),
        failed: Vec::new(),
        backends: Vec::new(),
    };
    for config in &command.backends {
        let name = config.kind.name();
        match measure_backend(config, command).await {
            Ok((mut r, capabilities)) => {
                if let Some(broken) = r.iter().find(|r| r.row.ops == 0 && r.row.errors > 0) {
                    measured.failed.push(BenchFailure {
                        backend: name.to_string(),
                        error: broken
                            .row
                            .first_error
                            .clone()
                            .unwrap_or_else(|| "every operation failed".to_string()),
                    });
                }
                measured.backends.push(facts(name, capabilities));
                measured.results.append(&mut r);
            }
            Err(e) => {
                // One line, and the other backends go on.
                eprintln!("lockbench: bench: {e}");
                measured.failed.push(BenchFailure {
                    backend: name.to_string(),
                    error: e.to_string(),
                });
            }
        }
    }
    measured
}

async fn measure_backend(
    config: &BackendConfig,
    command: &BenchCommand,
) -> Result<(Vec<BenchResult>, Capabilities)> {
    let most = command.contenders.iter().copied().max().unwrap_or(1);
    // A client per contender: contenders are separate workers, each with its own connection or
    // session, as in production.
    let mut clients: Vec<Arc<dyn LockBackend>> = Vec::with_capacity(most);
    for i in 0..most {
        match lockbench_locks::connect(config).await {
            Ok(client) => clients.push(Arc::from(client)),
            // The server answered the first clients: it is up, and refuses more of them.
            Err(lockbench_locks::LockError::Unreachable {
                backend,
                url,
                reason,
            }) if i > 0 => {
                return Err(lockbench_locks::LockError::Unreachable {
                    backend,
                    url,
                    reason: format!(
                        "{reason} (client {} of {most}; the first {i} connected: the server may cap connections per client address, as ZooKeeper's maxClientCnxns does at 60 by default)",
                        i + 1
                    ),
                }
                .into());
            }
            Err(e) => return Err(e.into()),
        }
    }
    let capabilities = clients[0].capabilities();
    let _armed = lockbench_bench::ArmedTimer::spawn(config.operation_timeout);
    let mut results = Vec::new();
    let mut keys = Vec::new();
    for &contenders in &command.contenders {
        let progress = Progress::spinner(format!("{} x{contenders}", config.kind.name()));
        let counter = progress.counter();
        let (result, used) = lockbench_bench::measure(
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
    Ok((results, capabilities))
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
    record: &BenchRecord,
) -> Result<()> {
    out.add(RESULTS_JSON, to_json(record))?;
    out.add(bench::CSV, bench::bench_csv(&record.results))?;
    let entries: Vec<(String, &RuntimeHistogram)> =
        results.iter().flat_map(|r| r.tagged_histograms()).collect();
    out.add(
        bench::HISTOGRAMS,
        lockbench_core::interval_log(
            "lockbench bench: operation latency per backend/mode/keys/contenders/metric",
            &entries,
        ),
    )?;
    let servers = shared::server_records(&command.backends);
    let manifest = shared::manifest_with_servers(
        &out,
        "bench",
        None,
        Vec::new(),
        servers,
        &command.config_path,
    );
    shared::commit(out, manifest)
}
