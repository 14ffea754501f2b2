//! `bench`'s flags resolved and checked: contention levels, load, wait mode, backends.

use std::path::PathBuf;
use std::time::Duration;

use lockbench_bench::{BenchOptions, KeyMode, LoadMode, PollPolicy, WaitMode};
use lockbench_locks::{BackendConfig, BackendKind};

use super::parse::{
    Refusal, configured_backend, own_adapter_backend, positive_duration, read_config,
};
use super::shard;
use crate::cli::{BenchArgs, KeysArg, TopologyArg, WaitModeArg};

/// Options of `bench`.
#[derive(Clone, Debug)]
pub struct BenchSettings {
    pub backends: Vec<BackendConfig>,
    pub contenders: Vec<usize>,
    pub bench: BenchOptions,
    pub json: bool,
    pub out: Option<PathBuf>,
    pub config_path: PathBuf,
    /// This process's shard of a benchmark split over several; `None` for a whole run.
    pub shard: Option<lockbench_core::ShardRecord>,
    /// When the measured part starts (`--start-at`).
    pub start_at: Option<std::time::SystemTime>,
    /// Client libraries measured beside lockbench's own client, each on its backend.
    pub clients: Vec<(lockbench_clients::Program, BackendKind)>,
    /// `--topology cluster`: each etcd and ZooKeeper measured again on a private cluster.
    pub clusters: bool,
}

/// `--topology cluster`, checked: a private cluster is this machine's, so not in a split run,
/// and it needs an etcd or a ZooKeeper among the backends measured.
fn clusters(args: &BenchArgs, backends: &[BackendConfig]) -> Result<bool, Refusal> {
    if args.topology == TopologyArg::Single {
        return Ok(false);
    }
    if args.shard.is_some() {
        return Err(Refusal::new(
            "--topology",
            "a private cluster runs on this machine alone: measure it in a whole run, not in a split one (--shard)",
        ));
    }
    if !backends
        .iter()
        .any(|b| lockbench_core::BackendId::cluster_of(b.kind).is_some())
    {
        return Err(Refusal::new(
            "--topology",
            "cluster measures etcd and ZooKeeper on three members: give --backend etcd or --backend zookeeper (configured), or drop --topology",
        ));
    }
    Ok(true)
}

impl BenchSettings {
    /// Checks `bench`'s flags and reads the config file.
    pub fn resolve(args: &BenchArgs) -> Result<Self, Refusal> {
        let (_, configs) = read_config(&args.config)?;
        let clients = args
            .clients
            .iter()
            .map(|name| {
                let program = lockbench_clients::resolve(name)
                    .map_err(|e| Refusal::new("--client", e.to_string()))?;
                let kind = match program.client {
                    Some(library) => library.backend(),
                    None => own_adapter_backend(&configs, name, &args.backends, &args.config)?,
                };
                Ok((program, kind))
            })
            .collect::<Result<Vec<_>, _>>()?;
        if args.shard.is_some() && !clients.is_empty() {
            return Err(Refusal::new(
                "--client",
                "a split benchmark (--shard) measures lockbench's own client only; measure a client library in a whole run",
            ));
        }
        let libraries: Vec<BackendKind> = clients.iter().map(|(_, kind)| *kind).collect();
        let backends = if args.backends.is_empty() && !libraries.is_empty() {
            let mut kinds = libraries;
            kinds.dedup();
            kinds
                .into_iter()
                .map(|kind| configured_backend(&configs, kind.name(), &args.config))
                .collect::<Result<Vec<_>, _>>()?
        } else if args.backends.is_empty() {
            configs
        } else {
            args.backends
                .iter()
                .map(|name| configured_backend(&configs, name, &args.config))
                .collect::<Result<Vec<_>, _>>()?
        };
        let clusters = clusters(args, &backends)?;
        let contenders = args.contenders.clone();
        let ops = args.ops;
        let duration = match (args.duration, ops) {
            (Some(_), Some(_)) => {
                return Err(Refusal::new(
                    "--ops",
                    "--ops and --duration are two ways to end a run: give --ops N (each run stops after N acquisitions, within 60 s) or --duration D (each run measures for D), not both",
                ));
            }
            (Some(duration), None) => duration,
            (None, Some(_)) => Duration::from_secs(60),
            (None, None) => Duration::from_secs(5),
        };
        if duration > Duration::from_secs(3600) {
            return Err(Refusal::new("--duration", "expected at most 1h per run"));
        }
        let mode = match args.rate {
            Some(rate) => LoadMode::Open { rate_per_s: rate },
            None => LoadMode::Closed,
        };
        let keys = match args.keys {
            KeysArg::One => KeyMode::One,
            KeysArg::Many => KeyMode::Many,
        };
        let bench = BenchOptions {
            mode,
            keys,
            ops,
            duration,
            warmup: args.warmup,
            hold: args.hold,
            ttl: args.ttl,
            wait: args.wait,
            wait_mode: match args.wait_mode {
                WaitModeArg::Native => WaitMode::Native,
                WaitModeArg::Poll => WaitMode::Poll,
            },
            poll: poll_policy(&args.poll)?,
            renew: !args.no_renew,
            max_in_flight: 1024,
            ..BenchOptions::default()
        };
        let (shard, start_at) = shard::bench(args, ops.is_some(), backends.len())?;
        if bench.warmup > Duration::from_secs(3600) {
            return Err(Refusal::new("--warmup", "expected at most 1h"));
        }
        if let (Some(s), LoadMode::Open { .. }) = (&shard, mode)
            && let Some(&few) = contenders.iter().find(|&&c| (c as u64) < s.count)
        {
            return Err(Refusal::new(
                "--contenders",
                format!(
                    "an open loop over {} shards needs a client in every shard: {few} clients leave some shards' arrivals unsent; give at least {}",
                    s.count, s.count
                ),
            ));
        }
        let mut settings = BenchSettings {
            clusters,
            clients,
            backends,
            contenders,
            bench,
            json: args.json,
            out: args.out.clone(),
            config_path: args.config.clone(),
            shard,
            start_at,
        };
        let recorded = settings.shard_settings();
        if let Some(shard) = &mut settings.shard {
            shard.settings = recorded;
        }
        Ok(settings)
    }
}

/// `--poll MIN..MAX`: two durations, MIN above zero and at most MAX, MAX at most 1 s.
fn poll_policy(text: &str) -> Result<PollPolicy, Refusal> {
    let Some((first, max)) = text.split_once("..") else {
        return Err(Refusal::new(
            "--poll",
            format!("expected MIN..MAX such as 1ms..20ms, got \"{text}\""),
        ));
    };
    let (first, max) = (
        positive_duration("--poll", first)?,
        positive_duration("--poll", max)?,
    );
    if first > max || max > Duration::from_secs(1) {
        return Err(Refusal::new(
            "--poll",
            format!("expected MIN <= MAX <= 1s, got \"{text}\""),
        ));
    }
    Ok(PollPolicy { first, max })
}
