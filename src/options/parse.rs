//! The parsing every command's options share: a flag's number, duration, seed, config file and
//! backend, and the one-line [`Refusal`] each refusal is. A leaf: the options modules import
//! it, it imports none of them.

use std::time::Duration;

use lockbench_locks::{BackendConfig, BackendKind};

/// Largest volume multiplier accepted.
const MAX_SCALE: f64 = 1e6;

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

pub(super) fn parse_number<T: std::str::FromStr>(
    flag: &str,
    text: &str,
    expected: &str,
) -> Result<T, Refusal> {
    text.trim()
        .replace('_', "")
        .parse()
        .map_err(|_| Refusal::new(flag, format!("expected {expected}, got \"{text}\"")))
}

pub(super) fn parse_scale(flag: &str, text: &str) -> Result<f64, Refusal> {
    let x: f64 = parse_number(flag, text, "a volume multiplier such as 1 or 10")?;
    if !(x.is_finite() && x > 0.0 && x <= MAX_SCALE) {
        return Err(Refusal::new(
            flag,
            format!("expected a multiplier above 0 and at most {MAX_SCALE}, got {text}"),
        ));
    }
    Ok(x)
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

/// `--seed`: the number given, or a random one.
pub fn resolve_seed(text: Option<&str>) -> Result<u64, Refusal> {
    match text {
        Some(text) => parse_number("--seed", text, "a whole number from 0 to 2^64-1"),
        None => Ok(random_seed()),
    }
}

/// A whole number of `what` in `range`.
pub(super) fn whole_in<T>(
    flag: &str,
    text: &str,
    what: &str,
    range: std::ops::RangeInclusive<T>,
) -> Result<T, Refusal>
where
    T: std::str::FromStr + PartialOrd + std::fmt::Display,
{
    let n: T = parse_number(flag, text, &format!("a whole number of {what}"))?;
    if range.contains(&n) {
        Ok(n)
    } else {
        Err(Refusal::new(
            flag,
            format!("expected {} to {}, got {n}", range.start(), range.end()),
        ))
    }
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

pub(super) fn positive_duration(flag: &str, text: &str) -> Result<Duration, Refusal> {
    let d = lockbench_workloads::duration::parse(text).map_err(|m| Refusal::new(flag, m))?;
    if d.is_zero() {
        return Err(Refusal::new(flag, "expected a duration above zero"));
    }
    Ok(d)
}
