//! `lockbench bench`: acquisition latency of every backend, side by side.

use lockbench_core::RunKind;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use lockbench_bench::{BenchResult, LevelProgress, Levels, LevelsError, facts, measure_levels};
use lockbench_core::ResultsDir;
use lockbench_core::records::bench::{BackendFacts, BenchFailure, BenchRecord};
use lockbench_locks::LockError;

use crate::cli::BenchArgs;
use crate::exit::Exit;
use crate::failure::Outcome;
use crate::options::BenchSettings;
use crate::output;
use crate::progress::Progress;
use crate::render;

/// Everything measured: the results with their histograms, and the record's other parts.
struct Measured {
    results: Vec<BenchResult>,
    failed: Vec<BenchFailure>,
    backends: Vec<BackendFacts>,
    /// A shard's clock against the server's: (offset, round trip) in milliseconds.
    clock: Option<(f64, f64)>,
    /// The private clusters measured (`--topology cluster`), for the manifest's servers.
    clusters: Vec<lockbench_locks::BackendConfig>,
}

pub fn run(args: &BenchArgs) -> Outcome {
    let settings = BenchSettings::resolve(args)?;
    let out = settings.out.as_deref().map(ResultsDir::new).transpose()?;
    // One thread: a request and its answer are handled where they were issued, without a
    // cross-thread wake-up per operation that would add tens of microseconds to every figure.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let measured = runtime.block_on(measure_all(&settings))?;
    let record = BenchRecord {
        results: measured.results.iter().map(|r| r.row.clone()).collect(),
        failed: measured.failed,
        backends: measured.backends,
    };
    render::show(settings.json, &record, |r| render::bench_table(&r.results))?;
    let failed = !record.failed.is_empty();
    if let Some(out) = out {
        output::write_bench_results(out, &measured.results, &record, |out| {
            let mut servers = output::server_records(&settings.backends);
            servers.extend(output::server_records(&measured.clusters));
            lockbench_core::Manifest {
                shard: settings.shard.clone().map(|mut s| {
                    s.clock_offset_ms = measured.clock.map(|c| c.0);
                    s.clock_rtt_ms = measured.clock.map(|c| c.1);
                    s
                }),
                ..output::manifest_with_servers(
                    out,
                    RunKind::Bench,
                    None,
                    Vec::new(),
                    servers,
                    &settings.config_path,
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

async fn measure_all(settings: &BenchSettings) -> Result<Measured> {
    let levels = Levels {
        options: settings.bench.clone(),
        contenders: settings.contenders.clone(),
        shard: settings.shard.clone(),
        start_at: settings.start_at,
    };
    let mut measured = Measured {
        results: Vec::new(),
        failed: Vec::new(),
        backends: Vec::new(),
        clock: None,
        clusters: Vec::new(),
    };
    for config in &settings.backends {
        measure_one(config, settings, &levels, &mut measured).await?;
        if settings.clusters {
            on_a_private_cluster(config, settings, &levels, &mut measured).await?;
        }
    }
    Ok(measured)
}

/// `config`'s backend measured again on a private cluster of three members started for it on
/// loopback and stopped after (etcd and ZooKeeper; nothing for the others). A cluster that does
/// not start is a failure of its own (`etcd-cluster`), the rest goes on.
async fn on_a_private_cluster(
    config: &lockbench_locks::BackendConfig,
    settings: &BenchSettings,
    levels: &Levels,
    measured: &mut Measured,
) -> Result<()> {
    use lockbench_faults::cluster::{Consensus, PrivateCluster};
    let (Some(consensus), Some(id)) = (
        Consensus::of(config.kind),
        lockbench_core::BackendId::cluster_of(config.kind),
    ) else {
        return Ok(());
    };
    let starting = Progress::spinner(format!("starting {id} (three members)"));
    let started = PrivateCluster::start(consensus).await;
    starting.finish();
    let mut cluster = match started {
        Ok(cluster) => cluster,
        Err(e) => {
            eprintln!("lockbench: bench: {id}: {e}");
            measured.failed.push(BenchFailure {
                backend: id,
                error: e.to_string(),
            });
            return Ok(());
        }
    };
    let mut on_cluster = config.clone();
    on_cluster.urls = cluster.urls();
    on_cluster.private_cluster = true;
    let result = measure_one(&on_cluster, settings, levels, measured).await;
    cluster.stop().await;
    measured.clusters.push(on_cluster);
    result
}

/// One backend's levels through lockbench's own client, then through each library asked for
/// on it.
async fn measure_one(
    config: &lockbench_locks::BackendConfig,
    settings: &BenchSettings,
    levels: &Levels,
    measured: &mut Measured,
) -> Result<()> {
    let name = config.label();
    match measure_levels(config, levels, &Spinners::default()).await {
        Ok(mut m) => {
            if let Some(e) = m.cleanup_error.take() {
                eprintln!("lockbench: bench: {name}: cleanup after the run failed: {e}");
            }
            measured.clock = measured.clock.or(m.clock);
            if let Some(broken) = m
                .results
                .iter()
                .find(|r| r.row.ops == 0 && r.row.errors > 0)
            {
                measured.failed.push(BenchFailure {
                    backend: config.id(),
                    error: broken
                        .row
                        .first_error
                        .clone()
                        .unwrap_or_else(|| "every operation failed".to_string()),
                });
            }
            measured.backends.push(facts(config.id(), &m));
            measured.results.append(&mut m.results);
            for (program, _) in settings
                .clients
                .iter()
                .filter(|(_, kind)| *kind == config.kind && !config.fair)
            {
                through_library(program, config, levels, measured).await?;
            }
        }
        Err(LevelsError::NotReady(e)) => return Err(e.into()),
        // A URL the backend cannot be trusted on is the user's to fix: nothing is measured.
        Err(LevelsError::Lock(e @ LockError::Refused { .. })) => return Err(e.into()),
        Err(LevelsError::Lock(e)) => {
            // One line, and the other backends go on.
            eprintln!("lockbench: bench: {e}");
            measured.failed.push(BenchFailure {
                backend: config.id(),
                error: e.to_string(),
            });
        }
    }
    Ok(())
}

/// Measures `config`'s backend through `program`'s library: one adapter per contender, each a
/// process of its own as each contender is a worker of its own. Its rows carry the library.
async fn through_library(
    program: &lockbench_clients::Program,
    config: &lockbench_locks::BackendConfig,
    levels: &Levels,
    measured: &mut Measured,
) -> Result<()> {
    let fail = |measured: &mut Measured, error: String| {
        eprintln!("lockbench: bench: {error}");
        measured.failed.push(BenchFailure {
            backend: config.id(),
            error,
        });
    };
    // A user's own adapter says what its library is before its rows are named after it.
    let program = match lockbench_clients::describe(program, config).await {
        Ok(described) => described,
        Err(e) => {
            fail(measured, e.to_string());
            return Ok(());
        }
    };
    let program = &program;
    let library = program
        .client
        .expect("a described adapter names its library");
    let mut clients: Vec<Arc<dyn lockbench_locks::LockBackend>> = Vec::new();
    let mut version = String::new();
    for _ in 0..lockbench_bench::clients_needed(levels) {
        match lockbench_clients::AdapterLock::start(program, config).await {
            Ok(adapter) => {
                version = adapter.description().version.clone();
                clients.push(Arc::new(adapter));
            }
            Err(e) => {
                fail(measured, e.to_string());
                return Ok(());
            }
        }
    }
    let used = lockbench_core::ClientUsed {
        name: library,
        version,
    };
    let spinners = Spinners::default();
    match lockbench_bench::measure_connected(config, clients, levels, &spinners).await {
        Ok(mut m) => {
            for r in &mut m.results {
                r.row.client = Some(used.clone());
            }
            if let Some(broken) = m
                .results
                .iter()
                .find(|r| r.row.ops == 0 && r.row.errors > 0)
            {
                let error = broken.row.first_error.clone().unwrap_or_default();
                fail(
                    measured,
                    format!("{} through {library}: {error}", config.label()),
                );
            }
            measured.results.append(&mut m.results);
        }
        Err(LevelsError::NotReady(e)) => return Err(e.into()),
        Err(LevelsError::Lock(e)) => fail(measured, format!("through {library}: {e}")),
    }
    Ok(())
}

/// A spinner per level on stderr.
#[derive(Default)]
struct Spinners(std::cell::RefCell<Option<Progress>>);

impl LevelProgress for Spinners {
    fn level(&self, backend: &str, contenders: usize) -> Arc<dyn Fn(u64) + Send + Sync> {
        let spinner = Progress::spinner(format!("{backend} x{contenders}"));
        let counter = spinner.counter();
        *self.0.borrow_mut() = Some(spinner);
        counter
    }

    fn done(&self) {
        if let Some(spinner) = self.0.borrow_mut().take() {
            spinner.finish();
        }
    }
}
