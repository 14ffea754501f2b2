//! `run`'s flags (the main job) resolved and checked.

use std::path::PathBuf;

use super::parse::{Refusal, read_config, resolve_seed};

/// `run`'s flags, checked: where the results tree goes, the config, every spec of `--specs`
/// read, the seed.
#[derive(Clone, Debug)]
pub struct MainJobSettings {
    pub out: PathBuf,
    pub config: PathBuf,
    pub specs: Vec<lockbench_workloads::WorkloadSpec>,
    pub seed: u64,
    pub quick: bool,
    /// The record's alerts' timing.
    pub alerts: lockbench_decision::alerts::AlertSettings,
    /// The config has etcd or ZooKeeper: the benchmark measures them on private clusters too.
    pub consensus: bool,
}

impl MainJobSettings {
    /// Checks the flags and reads the specs; `--out` defaults to `results/run-` and `stamp()`.
    pub fn resolve(
        args: &crate::cli::MainJobArgs,
        stamp: impl FnOnce() -> String,
    ) -> Result<Self, anyhow::Error> {
        let out = args
            .out
            .clone()
            .unwrap_or_else(|| PathBuf::from(format!("results/run-{}", stamp())));
        if !args.config.is_file() {
            return Err(Refusal::new(
                "--config",
                format!(
                    "{}: no such file; the default lockbench.toml sits at the repository root",
                    args.config.display()
                ),
            )
            .into());
        }
        let (_, configs) = read_config(&args.config)?;
        let consensus = configs
            .iter()
            .any(|c| lockbench_core::BackendId::cluster_of(c.kind).is_some());
        let mut paths: Vec<PathBuf> = std::fs::read_dir(&args.specs)
            .map_err(|e| Refusal::new("--specs", format!("{}: {e}", args.specs.display())))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .collect();
        paths.sort();
        if paths.is_empty() {
            return Err(Refusal::new(
                "--specs",
                format!("{}: no .toml workload specs in it", args.specs.display()),
            )
            .into());
        }
        let specs = paths
            .iter()
            .map(|p| lockbench_workloads::WorkloadSpec::load(p))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(MainJobSettings {
            out,
            config: args.config.clone(),
            specs,
            seed: resolve_seed(args.seed),
            quick: args.quick,
            alerts: args.alerts.settings(),
            consensus,
        })
    }
}
