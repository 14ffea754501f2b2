//! Options of `replay`.

use std::path::PathBuf;
use std::time::Duration;

use super::parse::{Refusal, config_error, configured_backend, read_config, resolve_seed};
use crate::cli::ReplayArgs;

/// Options of `replay`.
#[derive(Clone, Debug)]
pub struct ReplaySettings {
    pub spec: lockbench_workloads::WorkloadSpec,
    pub profile: String,
    pub scale: f64,
    pub live: lockbench_replay::LiveOptions,
    pub heartbeat: Option<lockbench_analysis::HeartbeatRecommendation>,
    pub compare_replays: u64,
    pub json: bool,
    pub out: Option<PathBuf>,
}

impl ReplaySettings {
    /// Checks `replay`'s flags, reads the spec and the config. The run timeout is filled in later,
    /// from the simulated runtimes.
    pub fn resolve(args: &ReplayArgs) -> Result<Self, anyhow::Error> {
        use lockbench_replay::{LiveOptions, LockMode};
        let spec = lockbench_workloads::WorkloadSpec::load(&args.spec)?;
        let profile = match &args.profile {
            Some(p) => {
                spec.profile(p)?;
                p.clone()
            }
            None => spec
                .profiles
                .iter()
                .find(|p| p.name == lockbench_workloads::IMPLICIT_PROFILE)
                .or(spec.profiles.first())
                .map_or(lockbench_workloads::IMPLICIT_PROFILE.to_string(), |p| {
                    p.name.clone()
                }),
        };
        let (text, configs) = read_config(&args.config)?;
        let backend = configured_backend(&configs, &args.backend, &args.config)?;
        let database = lockbench_locks::replay_database(&text)
            .map_err(|e| config_error(&args.config, e))?
            .ok_or_else(|| {
                Refusal::new(
                    "--config",
                    format!(
                        "{} names no Postgres for the replay's tables; add [replay] database = \"postgres://...\"",
                        args.config.display()
                    ),
                )
            })?;
        let scale = args.scale;
        let time_scale = args.time_scale;
        let workers = args.workers;
        let runs = args.runs;
        let seed = resolve_seed(args.seed);
        let compare_replays = args.compare_replays;
        let (mode, heartbeat) = match args.ttl {
            Some(ttl) => (LockMode::FixedTtl(ttl), None),
            None => {
                let pause_p999 = spec.profile(&profile).ok().and_then(|p| p.pause_p999());
                let h = lockbench_analysis::heartbeat(pause_p999);
                let policy = lockbench_locks::HeartbeatPolicy::from(&h);
                (LockMode::Heartbeat(policy), Some(h))
            }
        };
        Ok(ReplaySettings {
            spec,
            profile,
            scale,
            live: LiveOptions {
                runs,
                workers,
                time_scale,
                seed,
                mode,
                fencing: args.fencing,
                idempotency_keys: args.idempotency_keys,
                database_url: database,
                backend,
                run_timeout: Duration::from_secs(60),
            },
            heartbeat,
            compare_replays,
            json: args.json,
            out: args.out.clone(),
        })
    }
}
