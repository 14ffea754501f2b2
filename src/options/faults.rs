//! Options of `faults`.

use std::path::PathBuf;
use std::time::Duration;

use lockbench_faults::{Design, Variant};
use lockbench_locks::{BackendConfig, BackendKind};

use super::parse::{Refusal, configured_backend, own_adapter_backend, read_config, resolve_seed};
use crate::cli::FaultsArgs;

/// Options of `faults`.
#[derive(Clone, Debug)]
pub struct FaultsSettings {
    pub backends: Vec<BackendConfig>,
    pub resource_url: String,
    pub variants: Vec<Variant>,
    pub trials: u32,
    /// Cells run at once (whole backends per lane).
    pub lanes: usize,
    pub ttl: Duration,
    pub seed: u64,
    pub json: bool,
    pub out: Option<PathBuf>,
    pub config_path: PathBuf,
    /// The client library the workers lock through; `None` for lockbench's own.
    pub client: Option<lockbench_clients::Program>,
    /// Whether the runner cells run (`--scenario runner`).
    pub runners: bool,
}

/// The scenario that runs the real job runners instead of a lock (`faults::runners`).
pub const RUNNER_SCENARIO: &str = "runner";

impl FaultsSettings {
    /// Checks `faults`'s flags and reads the config file.
    pub fn resolve(args: &FaultsArgs) -> Result<Self, Refusal> {
        let (_, configs) = read_config(&args.config)?;
        let client = args
            .client
            .as_deref()
            .map(lockbench_clients::resolve)
            .transpose()
            .map_err(|e| Refusal::new("--client", e.to_string()))?;
        // Through a library, the cells are on its backend: a shipped adapter's is known, a
        // user's own is named by --backend (its hello then confirms it).
        let through: Option<(String, BackendKind)> = match &client {
            None => None,
            Some(program) => Some((
                program.name.clone(),
                library_backend(program, args, &configs)?,
            )),
        };
        let backends = if let Some((_, kind)) = &through {
            vec![configured_backend(&configs, kind.name(), &args.config)?]
        } else if args.backends.is_empty() {
            configs
                .iter()
                .filter(|c| c.kind != BackendKind::Memory)
                .cloned()
                .collect()
        } else {
            args.backends
                .iter()
                .map(|name| configured_backend(&configs, name, &args.config))
                .collect::<Result<Vec<_>, _>>()?
        };
        let runners = args.scenarios.iter().any(|n| n == RUNNER_SCENARIO);
        if runners && client.is_some() {
            return Err(Refusal::new(
                "--client",
                "--scenario runner runs the real BullMQ, Celery and pg-boss workers; it takes no lock client",
            ));
        }
        let mut variants = Vec::new();
        for name in args.scenarios.iter().filter(|n| *n != RUNNER_SCENARIO) {
            let picked = Variant::select(name).ok_or_else(|| {
                Refusal::new(
                    "--scenario",
                    format!(
                        "unknown scenario \"{name}\"; expected one of: {}, {RUNNER_SCENARIO}",
                        Variant::names()
                    ),
                )
            })?;
            for v in picked {
                if !variants.contains(&v) {
                    variants.push(v);
                }
            }
        }
        let asked = !variants.is_empty() || runners;
        if !asked {
            variants = lockbench_faults::VARIANTS.to_vec();
        }
        if let Some((library, _)) = &through {
            // A scenario picks the variants that run through a library; a variant named alone
            // that cannot is refused, saying why.
            let named_alone = |v: &Variant| {
                args.scenarios
                    .iter()
                    .any(|n| Variant::parse_label(n) == Some(*v))
            };
            let refused: Vec<(Variant, &str)> = variants
                .iter()
                .filter_map(|v| v.needs_own_client().map(|why| (*v, why)))
                .collect();
            variants.retain(|v| v.needs_own_client().is_none());
            let named = refused.iter().find(|(v, _)| named_alone(v));
            if let Some((v, why)) = named.or(refused.first().filter(|_| variants.is_empty())) {
                return Err(Refusal::new(
                    "--scenario",
                    format!("{} does not run through {library}: {why}", v.label()),
                ));
            }
        }
        let only_runners = runners && variants.is_empty();
        let any_cell = variants
            .iter()
            .any(|v| backends.iter().any(|b| v.applies_to(b.kind)));
        if !only_runners && !any_cell {
            let mut what: Vec<String> = variants
                .iter()
                .map(|v| {
                    format!(
                        "{} applies to {}",
                        v.scenario().name(),
                        v.applies_to_names()
                    )
                })
                .collect();
            what.dedup();
            return Err(Refusal::new(
                "--scenario",
                format!(
                    "nothing to run: {} (memory, the in-process baseline, takes no faults)",
                    what.join("; ")
                ),
            ));
        }
        // The protected resource is a table in the configured Postgres, whichever backend is
        // under test.
        let resource_url = [BackendKind::PgSession, BackendKind::PgXact]
            .iter()
            .find_map(|k| configs.iter().find(|c| c.kind == *k))
            .and_then(|c| c.urls.first().cloned())
            .ok_or_else(|| {
                Refusal::new(
                    "--config",
                    format!(
                        "{}: the fault lab's protected resource is a Postgres table; configure [backends.pg-session] with a Postgres URL",
                        args.config.display()
                    ),
                )
            })?;
        Ok(FaultsSettings {
            backends,
            resource_url,
            variants,
            trials: args.trials,
            lanes: usize::from(args.lanes),
            ttl: args.ttl,
            seed: resolve_seed(args.seed),
            json: args.json,
            out: args.out.clone(),
            config_path: args.config.clone(),
            client,
            runners,
        })
    }
}

/// The backend `program`'s library locks on: a shipped adapter's own (a `--backend` naming
/// another is refused), or the one `--backend` names for a user's own adapter.
fn library_backend(
    program: &lockbench_clients::Program,
    args: &FaultsArgs,
    configs: &[BackendConfig],
) -> Result<BackendKind, Refusal> {
    if let Some(library) = program.client {
        let kind = library.backend();
        if let Some(other) = args
            .backends
            .iter()
            .find(|b| BackendKind::parse(b) != Some(kind))
        {
            return Err(Refusal::new(
                "--backend",
                format!("{library} locks on {kind}, not on {other}"),
            ));
        }
        return Ok(kind);
    }
    own_adapter_backend(configs, &program.name, &args.backends, &args.config)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_runner_cells_recommend_with_ttls_safety_factor() {
        assert_eq!(
            lockbench_faults::runners::SAFETY_FACTOR,
            lockbench_analysis::DEFAULT_SAFETY_FACTOR
        );
    }
}
