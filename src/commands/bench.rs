//! `lockbench bench`: acquisition latency of every backend, side by side.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, Result};
use lockbench_bench::BenchResult;
use lockbench_core::records::bench::{BackendFacts, BenchFailure, BenchRecord};
use lockbench_core::ResultsDir;
use lockbench_locks::{BackendConfig, Capabilities, LockBackend};

use crate::cli::BenchArgs;
use crate::commands::shared;
use crate::exit::Exit;
use crate::options::BenchCommand;
use crate::progress::Progress;
use crate::render;

/// Between one contention level's measured part and the next one's warm-up: the last cycle that
/// began before the end may still wait out `--wait`, hold for `--hold`, then renew and release
/// (a second is left for those).
fn level_gap(b: &lockbench_bench::BenchOptions) -> Duration {
    b.wait + b.hold + Duration::from_secs(1)
}

/// A shard that could not be ready for its common start: exit code 4.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct NotReady(pub String);

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
    /// A shard's clock against the server's: (offset, round trip) in milliseconds.
    clock: Option<(f64, f64)>,
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
    let measured = runtime.block_on(measure_all(&command))?;
    let record = BenchRecord {
        results: measured.results.iter().map(|r| r.row.clone()).collect(),
        failed: measured.failed,
        backends: measured.backends,
    };
    render::show(command.json, &record, |r| render::bench_table(&r.results))?;
    let failed = !record.failed.is_empty();
    if let Some(out) = out {
        shared::write_bench_results(out, &measured.results, &record, |out| {
            let servers = shared::server_records(&command.backends);
            lockbench_core::Manifest {
                shard: command.shard.clone().map(|mut s| {
                    s.clock_offset_ms = measured.clock.map(|c| c.0);
                    s.clock_rtt_ms = measured.clock.map(|c| c.1);
                    s
                }),
                ..shared::manifest_with_servers(
                    out,
                    "bench",
                    None,
                    Vec::new(),
                    servers,
                    &command.config_path,
                )
            }
        })?;
    }
    Ok(if !failed {
        ExitCode::SUCCESS
    } else {
        Exit::Partial.into()
    })
}

async fn measure_all(command: &BenchCommand) -> Result<Measured> {
    let mut measured = Measured {
        results: Vec::new(),
        failed: Vec::new(),
        backends: Vec::new(),
        clock: None,
    };
    for config in &command.backends {
        let name = config.kind.name();
        match measure_backend(config, command).await {
            Ok((mut r, capabilities, clock)) => {
                measured.clock = measured.clock.or(clock);
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
            Err(e) if e.is::<NotReady>() => return Err(e),
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
    Ok(measured)
}

async fn measure_backend(
    config: &BackendConfig,
    command: &BenchCommand,
) -> Result<(Vec<BenchResult>, Capabilities, Option<(f64, f64)>)> {
    // A shard connects its own share of each level's contenders.
    let (index, count) = command
        .shard
        .as_ref()
        .map_or((0, 1), |s| (s.index, s.count));
    let local = |c: usize| lockbench_bench::Stripe::local(index, count, c);
    let most = command
        .contenders
        .iter()
        .map(|&c| local(c))
        .max()
        .unwrap_or(1)
        .max(1);
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
    // Shards on several hosts keep --start-at by their own clocks: how far each is from the
    // server's says how far apart they really start.
    let clock = if command.shard.is_some() {
        clock_offset(clients[0].as_ref()).await
    } else {
        None
    };
    let _armed = lockbench_bench::ArmedTimer::spawn(config.operation_timeout);
    let mut results = Vec::new();
    let mut keys = Vec::new();
    for (level, &contenders) in command.contenders.iter().enumerate() {
        let mut options = command.bench.clone();
        options.stripe = lockbench_bench::Stripe {
            index,
            count,
            contenders,
        };
        if let Some(at) = command.start_at {
            match level_start(command, at, level) {
                Ok(start) => options.start = Some(start),
                Err(e) => {
                    // The other shards may still be measuring on the shared keys: only a shard
                    // alone removes what the levels before left.
                    if command.shard.is_none() {
                        let _ = cleanup(&clients, &keys).await;
                    }
                    return Err(e);
                }
            }
        }
        let progress = Progress::spinner(format!("{} x{contenders}", config.kind.name()));
        let counter = progress.counter();
        let (result, used) = lockbench_bench::measure(
            config.kind.name(),
            clients[..local(contenders)].to_vec(),
            &options,
            counter,
        )
        .await;
        progress.finish();
        results.push(result);
        keys.extend(used);
    }
    keys.sort();
    keys.dedup();
    if let Some(at) = command.start_at {
        // The other shards' last cycles may still use the keys and counters: wait out the gap
        // after the last level, which every shard's schedule has, before removing them.
        // The next level's warm-up would begin then.
        let done = scheduled(&command.bench, at, command.contenders.len()) - command.bench.warmup;
        if let Ok(left) = done.duration_since(SystemTime::now()) {
            tokio::time::sleep(left).await;
        }
    }
    if let Err(e) = cleanup(&clients, &keys).await {
        eprintln!(
            "lockbench: bench: {}: cleanup after the run failed: {e}",
            config.kind.name()
        );
    }
    Ok((results, capabilities, clock))
}

/// This host's clock minus the server's, and the round trip it was read over, in milliseconds:
/// the quickest of five readings, the server's time taken as of the middle of its round trip.
async fn clock_offset(client: &dyn LockBackend) -> Option<(f64, f64)> {
    let mut best: Option<(f64, f64)> = None;
    for _ in 0..5 {
        let sent = SystemTime::now();
        let started = Instant::now();
        let server_us = client.server_clock_us().await?.ok()?;
        let rtt = started.elapsed();
        let middle_us = (sent + rtt / 2)
            .duration_since(std::time::UNIX_EPOCH)
            .ok()?
            .as_micros() as f64;
        let reading = (
            (middle_us - server_us as f64) / 1e3,
            rtt.as_secs_f64() * 1e3,
        );
        if best.is_none_or(|b| reading.1 < b.1) {
            best = Some(reading);
        }
    }
    best.map(|(offset, rtt)| {
        (
            (offset * 1000.0).round() / 1000.0,
            (rtt * 1000.0).round() / 1000.0,
        )
    })
}

/// When level `level`'s measured part is due: `at`, then one warm-up, duration and gap later per
/// level.
fn scheduled(b: &lockbench_bench::BenchOptions, at: SystemTime, level: usize) -> SystemTime {
    at + (b.warmup + b.duration + level_gap(b)) * level as u32
}

/// [`scheduled`] as an instant of this process. Refused when this process can no longer warm up
/// fully before it.
fn level_start(command: &BenchCommand, at: SystemTime, level: usize) -> Result<Instant> {
    let b = &command.bench;
    let start = scheduled(b, at, level);
    let now = SystemTime::now();
    let ready = now + b.warmup;
    let who = command.shard.as_ref().map_or("bench".to_string(), |s| {
        format!("bench shard {}/{} of run {}", s.index, s.count, s.run_id)
    });
    if ready > start {
        let late = ready.duration_since(start).unwrap_or_default();
        return Err(NotReady(format!(
            "{who}: not ready for contention level {} at {}: {} late with --warmup {} still to run; start the shards earlier or give a later --start-at",
            command.contenders[level],
            humantime::format_rfc3339_millis(start),
            humantime::format_duration(Duration::from_millis(late.as_millis() as u64)),
            humantime::format_duration(b.warmup),
        ))
        .into());
    }
    Ok(Instant::now() + start.duration_since(now).unwrap_or_default())
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
