//! The settings every simulating command shares: replays, seed, threads, output, shard.

use std::path::PathBuf;

use super::parse::{Refusal, resolve_seed};
use super::shard;
use crate::cli::SimulationArgs;

/// Options shared by the commands that simulate.
#[derive(Clone, Debug)]
pub struct SimulationSettings {
    pub replays: u64,
    pub seed: u64,
    pub threads: usize,
    pub json: bool,
    pub out: Option<PathBuf>,
    /// This process's shard of a split run; `None` for the whole run.
    pub shard: Option<lockbench_core::ShardRecord>,
    /// The simulator engine asked for.
    pub engine: lockbench_workloads::Engine,
}

impl SimulationSettings {
    pub(super) fn resolve(args: &SimulationArgs) -> Result<Self, Refusal> {
        Self::resolve_in(args, &|name| std::env::var(name).ok())
    }

    /// [`Self::resolve`] with the shard defaults read from `env`.
    fn resolve_in(
        args: &SimulationArgs,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, Refusal> {
        let replays = args.replays;
        let shard = shard::resolve(args.shard.as_deref(), args.run_id.as_deref(), env)?;
        if let Some(s) = &shard
            && args.seed.is_none()
        {
            return Err(Refusal::new(
                "--seed",
                format!(
                    "shard {}/{} of run {}: every shard must draw from the same seed, give --seed",
                    s.index, s.count, s.run_id
                ),
            ));
        }
        let seed = resolve_seed(args.seed);
        let threads = args
            .threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        Ok(SimulationSettings {
            replays,
            seed,
            threads,
            json: args.json,
            out: args.out.clone(),
            shard,
            engine: args.engine.into(),
        })
    }

    /// [`Self::resolve`] for a command that runs whole: `--shard` is refused, and the Kubernetes
    /// and Slurm variables that make other commands shards are not read.
    pub fn resolve_whole(args: &SimulationArgs, command: &str) -> Result<Self, Refusal> {
        let options = Self::resolve_in(args, &|_| None)?;
        if let Some(s) = &options.shard {
            return Err(Refusal::new(
                "--shard",
                format!(
                    "{command} runs whole: shard {}/{} cannot be merged; run it without --shard",
                    s.index, s.count
                ),
            ));
        }
        Ok(options)
    }

    /// The replays this process runs.
    pub fn engine_shard(&self) -> lockbench_workloads::Shard {
        self.shard
            .as_ref()
            .map_or(lockbench_workloads::Shard::WHOLE, |s| {
                lockbench_workloads::Shard {
                    index: s.index,
                    count: s.count,
                }
            })
    }
}
