//! `clients check`'s arguments resolved: each adapter as a program, with the configured backend
//! it locks on.

use lockbench_clients::Program;
use lockbench_locks::BackendConfig;

use super::parse::{Refusal, configured_backend, read_config};
use crate::cli::ClientsCheckArgs;

/// What `clients check` runs: each adapter with its backend's config.
pub struct ClientsCheckSettings {
    pub adapters: Vec<(Program, BackendConfig)>,
}

impl ClientsCheckSettings {
    /// Resolves each adapter; a user's own needs `--backend`.
    pub fn resolve(args: &ClientsCheckArgs) -> Result<Self, Refusal> {
        let (_, configs) = read_config(&args.config)?;
        let adapters = args
            .adapters
            .iter()
            .map(|name| {
                let program = lockbench_clients::resolve(name)
                    .map_err(|e| Refusal::new("ADAPTER", e.to_string()))?;
                let backend = match (program.client, &args.backend) {
                    (Some(client), _) => client.backend().name().to_string(),
                    (None, Some(backend)) => backend.clone(),
                    (None, None) => {
                        return Err(Refusal::new(
                            "--backend",
                            format!(
                                "{name} is not a shipped adapter: name the backend it locks on \
                                 (--backend redis, say)"
                            ),
                        ));
                    }
                };
                let config = configured_backend(&configs, &backend, &args.config)?;
                Ok((program, config))
            })
            .collect::<Result<_, _>>()?;
        Ok(ClientsCheckSettings { adapters })
    }
}
