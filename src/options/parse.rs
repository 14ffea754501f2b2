//! The parsing every command's options share: a config file and a backend, a duration inside a
//! flag clap does not check whole (`--poll MIN..MAX`, in `crate::values`' words), a seed, and
//! the one-line [`Refusal`] each refusal is. A leaf: the options modules import
//! it, it imports none of them.

use std::time::Duration;

use lockbench_locks::{BackendConfig, BackendKind};

/// Bad input the binary refuses: one line, `PLACE: MESSAGE`, exit code 2. The place is a flag
/// (`--replays`), a flag and its value (`--out calibrated.toml`), a file or a directory.
#[derive(Debug, thiserror::Error)]
#[error("{place}: {message}")]
pub struct Refusal {
    place: String,
    message: String,
}

impl Refusal {
    /// A refusal of `place` (a flag, a file), saying what was expected.
    pub fn new(place: &str, message: impl Into<String>) -> Self {
        Refusal {
            place: place.to_string(),
            message: message.into(),
        }
    }
}

/// A seed from the standard library's per-process random hasher keys: no extra dependency, and
/// different on every invocation.
fn random_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.finish()
}

/// `--seed`: the number given (clap checked it), or a random one.
pub fn resolve_seed(seed: Option<u64>) -> u64 {
    seed.unwrap_or_else(random_seed)
}

/// `--config FILE`: its text and the backends it configures.
pub(super) fn read_config(path: &std::path::Path) -> Result<(String, Vec<BackendConfig>), Refusal> {
    let text =
        lockbench_core::input::read_input_text(path, lockbench_core::input::InputKind::Config)
            .map_err(|e| {
                Refusal::new(
                    "--config",
                    format!(
                        "{}: {e}; the default lockbench.toml sits at the repository root",
                        path.display()
                    ),
                )
            })?;
    let configs = lockbench_locks::parse_config(&text).map_err(|e| config_error(path, e))?;
    Ok((text, configs))
}

pub(super) fn config_error(path: &std::path::Path, e: lockbench_locks::ConfigError) -> Refusal {
    Refusal::new("--config", format!("{}: {e}", path.display()))
}

/// `--backend NAME`: the backend of that name in the config (`redis-fair`: its Redis entry with
/// a fair queue).
pub(super) fn configured_backend(
    configs: &[BackendConfig],
    name: &str,
    path: &std::path::Path,
) -> Result<BackendConfig, Refusal> {
    if lockbench_core::BackendId::parse(name).is_some_and(|id| id.cluster) {
        return Err(Refusal::new(
            "--backend",
            format!(
                "{name} is a private cluster lockbench starts itself: give --backend {} with --topology cluster",
                name.trim_end_matches("-cluster")
            ),
        ));
    }
    match BackendConfig::select(configs, name) {
        Some(Some(config)) => Ok(config),
        Some(None) => Err(Refusal::new(
            "--backend",
            format!("{name} is not configured in {}", path.display()),
        )),
        None => Err(Refusal::new(
            "--backend",
            format!(
                "unknown backend \"{name}\"; expected one of: {}, {}",
                BackendKind::names(),
                lockbench_locks::REDIS_FAIR
            ),
        )),
    }
}

/// The backend a user's own adapter (`program`) locks on: the one `--backend` names, checked as
/// every backend flag is (its hello then confirms it).
pub(super) fn own_adapter_backend(
    configs: &[BackendConfig],
    program: &str,
    backends: &[String],
    path: &std::path::Path,
) -> Result<BackendKind, Refusal> {
    match backends {
        [one] => configured_backend(configs, one, path).map(|c| c.kind),
        _ => Err(Refusal::new(
            "--backend",
            format!(
                "{program} is not a shipped adapter: name the one backend it locks on (--backend redis, say)"
            ),
        )),
    }
}

pub(super) fn positive_duration(flag: &str, text: &str) -> Result<Duration, Refusal> {
    crate::values::positive_duration(text).map_err(|m| Refusal::new(flag, m))
}
