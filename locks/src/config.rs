//! Backend configuration: where each server is, the key namespace and the timeouts, with
//! `${ENV_VAR}` substitution for secrets and redaction for everything printed or stored.

use std::time::Duration;

use lockbench_core::BackendKind;
use serde::Deserialize;

/// Errors in a backend configuration.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// `${NAME}` named a variable that is not set.
    #[error("{field}: environment variable {name} is not set")]
    MissingEnv {
        /// The field that used it.
        field: String,
        /// The variable.
        name: String,
    },
    /// A field has an unusable value.
    #[error("{field}: {message}")]
    Invalid {
        /// The field.
        field: String,
        /// What was expected.
        message: String,
    },
}

/// Everything needed to connect one backend.
#[derive(Clone, Debug)]
pub struct BackendConfig {
    /// Which backend.
    pub kind: BackendKind,
    /// Server URLs (several for Redlock, etcd and ZooKeeper ensembles); empty for memory.
    pub urls: Vec<String>,
    /// Prefix of every key, table, lease and znode the tool creates.
    pub namespace: String,
    /// Timeout of one network operation.
    pub operation_timeout: Duration,
    /// Timeout of connecting.
    pub connect_timeout: Duration,
    /// Session timeout (ZooKeeper: the TTL of every lock the session holds).
    pub session_timeout: Duration,
    /// Hand out fencing tokens (Redis: the INCR in the acquiring script, about 10 us of server
    /// time per acquisition; Postgres: `nextval` of a sequence, whose WAL record every 32 values
    /// is flushed at the statement's commit). Redis and Postgres can turn them off; etcd,
    /// ZooKeeper and the memory backend get them from the lock itself.
    pub fencing: bool,
    /// Redis: replicas that must acknowledge an acquisition or a renewal (`WAIT n`) before it
    /// counts; 0 (the default) does not wait. A failover can then not promote a replica without
    /// the key (short of losing every one that acknowledged), and a primary cut off from its
    /// replicas cannot extend a holder's lease past what they hold.
    pub wait_replicas: u32,
    /// Redis: waiters queue in Redis and are granted in arrival order (a list and a deadline per
    /// waiter, as Redisson's fair lock keeps), instead of racing for each release.
    pub fair: bool,
    /// Redis with `fair`: how long a waiter's place in the queue is kept when it stops renewing it
    /// (it renews every third of this while it waits); a waiter that died delays the next grant
    /// by at most this.
    pub waiter_timeout: Duration,
    /// pg-session: the URL may go through a transaction-mode pooler. Only the fault lab sets it,
    /// to measure what such a pooler does to a session lock; everyone else's session lock is
    /// refused there ([`crate::backends::postgres::transaction_pooler`]).
    pub through_transaction_pooler: bool,
    /// etcd, ZooKeeper: the URLs are a private cluster's that lockbench started
    /// (`bench --topology cluster`); results name it `etcd-cluster`, `zookeeper-cluster`.
    pub private_cluster: bool,
    /// Redis: the name the Sentinels monitor the primary by; `urls` are then the Sentinels', and
    /// every connection asks them for the primary's address (a failover is followed).
    pub sentinel_master: Option<String>,
}

/// The fair variant of Redis as results and `--backend` name it (`[backends.redis]` with
/// `fair = true`).
pub use lockbench_core::REDIS_FAIR;

impl BackendConfig {
    /// A configuration with default timeouts.
    pub fn new(kind: BackendKind, urls: Vec<String>, namespace: &str) -> Self {
        BackendConfig {
            kind,
            urls,
            namespace: namespace.to_string(),
            operation_timeout: Duration::from_secs(5),
            connect_timeout: Duration::from_secs(3),
            session_timeout: Duration::from_secs(10),
            fencing: true,
            wait_replicas: 0,
            fair: false,
            waiter_timeout: Duration::from_secs(5),
            through_transaction_pooler: false,
            private_cluster: false,
            sentinel_master: None,
        }
    }

    /// The name results carry for this backend: its kind's, or [`REDIS_FAIR`] for Redis with a
    /// fair queue, whose figures and faults are its own.
    pub fn label(&self) -> &'static str {
        self.id().name()
    }

    /// The backend as results carry it: its kind, fair or not, on a private cluster or not.
    pub fn id(&self) -> lockbench_core::BackendId {
        match lockbench_core::BackendId::cluster_of(self.kind) {
            Some(cluster) if self.private_cluster => cluster,
            _ => lockbench_core::BackendId {
                fair: self.fair && self.kind == BackendKind::Redis,
                ..lockbench_core::BackendId::of(self.kind)
            },
        }
    }

    /// The backend a command line names among the configured ones: a backend's name, or
    /// [`REDIS_FAIR`] for the Redis entry with `fair` set whatever the file says. `None` when
    /// the name is of no backend; `Some(None)` when that backend is not configured.
    pub fn select(configs: &[BackendConfig], name: &str) -> Option<Option<BackendConfig>> {
        let (kind, fair) = match name {
            REDIS_FAIR => (BackendKind::Redis, true),
            other => (BackendKind::parse(other)?, false),
        };
        Some(
            configs
                .iter()
                .find(|c| c.kind == kind)
                .cloned()
                .map(|mut c| {
                    c.fair |= fair;
                    c
                }),
        )
    }

    /// The first URL with any password removed, for messages.
    pub fn display_url(&self) -> String {
        self.urls
            .iter()
            .map(|u| Redacted(u).to_string())
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// Displays a URL with its password replaced by `***`.
pub struct Redacted<'a>(pub &'a str);

impl std::fmt::Display for Redacted<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let url = self.0;
        // scheme://user:password@host... -> scheme://user:***@host...
        if let Some(scheme_end) = url.find("://") {
            let rest = &url[scheme_end + 3..];
            if let Some(at) = rest.find('@') {
                let userinfo = &rest[..at];
                if let Some(colon) = userinfo.find(':') {
                    return write!(
                        f,
                        "{}{}:***{}",
                        &url[..scheme_end + 3],
                        &userinfo[..colon],
                        &rest[at..]
                    );
                }
            }
        }
        f.write_str(url)
    }
}

/// The TOML shape of a config file such as `lockbench.toml`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    #[serde(default = "default_namespace")]
    namespace: String,
    #[serde(default)]
    operation_timeout: Option<String>,
    #[serde(default)]
    connect_timeout: Option<String>,
    #[serde(default)]
    backends: std::collections::BTreeMap<String, FileBackend>,
    #[serde(default)]
    replay: Option<FileReplay>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileReplay {
    database: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileBackend {
    #[serde(default)]
    urls: Vec<String>,
    #[serde(default)]
    session_timeout: Option<String>,
    #[serde(default)]
    fencing: Option<bool>,
    #[serde(default)]
    wait_replicas: Option<u32>,
    #[serde(default)]
    fair: Option<bool>,
    #[serde(default)]
    waiter_timeout: Option<String>,
    #[serde(default)]
    sentinel_master: Option<String>,
}

fn default_namespace() -> String {
    "lockbench".to_string()
}

fn duration_field(
    field: &str,
    text: &Option<String>,
    default: Duration,
) -> Result<Duration, ConfigError> {
    match text {
        None => Ok(default),
        Some(t) => {
            let d = humantime::parse_duration(t.trim()).map_err(|e| ConfigError::Invalid {
                field: field.to_string(),
                message: format!("expected a duration with a unit, like \"5s\", got \"{t}\" ({e})"),
            })?;
            if d.is_zero() {
                return Err(ConfigError::Invalid {
                    field: field.to_string(),
                    message: "expected a duration above zero".to_string(),
                });
            }
            Ok(d)
        }
    }
}

fn parse_file(text: &str) -> Result<FileConfig, ConfigError> {
    toml::from_str(text).map_err(|e| ConfigError::Invalid {
        field: e
            .span()
            .map(|s| {
                format!(
                    "line {}",
                    text[..s.start.min(text.len())].matches('\n').count() + 1
                )
            })
            .unwrap_or_else(|| "config".to_string()),
        message: e.message().split_whitespace().collect::<Vec<_>>().join(" "),
    })
}

/// The Postgres the live replay keeps its tables in: `[replay] database`, or else the first URL of
/// `pg-session` or `pg-xact`; `None` when the config names none. `${NAME}` is replaced from the
/// environment.
pub fn replay_database(text: &str) -> Result<Option<String>, ConfigError> {
    let file = parse_file(text)?;
    if let Some(replay) = file.replay {
        return substitute_env("replay.database", &replay.database).map(Some);
    }
    for name in ["pg-session", "pg-xact"] {
        if let Some(url) = file.backends.get(name).and_then(|b| b.urls.first()) {
            return substitute_env(&format!("backends.{name}.urls"), url).map(Some);
        }
    }
    Ok(None)
}

/// Parses a configuration file's text into one [`BackendConfig`] per configured backend, in the
/// order of [`BackendKind::ALL`]. `${NAME}` in URLs is replaced from the environment.
pub fn parse_config(text: &str) -> Result<Vec<BackendConfig>, ConfigError> {
    let file = parse_file(text)?;
    let namespace = file.namespace.trim().to_string();
    if namespace.is_empty()
        || !namespace
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(ConfigError::Invalid {
            field: "namespace".to_string(),
            message: format!("expected letters, digits, '-' or '_', got \"{namespace}\""),
        });
    }
    let operation_timeout = duration_field(
        "operation_timeout",
        &file.operation_timeout,
        Duration::from_secs(5),
    )?;
    let connect_timeout = duration_field(
        "connect_timeout",
        &file.connect_timeout,
        Duration::from_secs(3),
    )?;
    let mut configs = Vec::new();
    for (name, backend) in &file.backends {
        let kind = BackendKind::parse(name).ok_or_else(|| ConfigError::Invalid {
            field: format!("backends.{name}"),
            message: format!("unknown backend; expected one of: {}", BackendKind::names()),
        })?;
        let urls = backend
            .urls
            .iter()
            .map(|u| substitute_env(&format!("backends.{name}.urls"), u))
            .collect::<Result<Vec<_>, _>>()?;
        for url in &urls {
            check_scheme(kind, &format!("backends.{name}.urls"), url)?;
        }
        if kind != BackendKind::Memory && urls.is_empty() {
            return Err(ConfigError::Invalid {
                field: format!("backends.{name}.urls"),
                message: "expected at least one server URL".to_string(),
            });
        }
        let mut config = BackendConfig::new(kind, urls, &namespace);
        config.operation_timeout = operation_timeout;
        config.connect_timeout = connect_timeout;
        config.session_timeout = duration_field(
            &format!("backends.{name}.session_timeout"),
            &backend.session_timeout,
            config.session_timeout,
        )?;
        if let Some(fencing) = backend.fencing {
            let optional = matches!(
                kind,
                BackendKind::Redis | BackendKind::PgSession | BackendKind::PgXact
            );
            if !fencing && !optional {
                return Err(ConfigError::Invalid {
                    field: format!("backends.{name}.fencing"),
                    message: "only redis, pg-session and pg-xact can run without fencing tokens; the others get them from the lock itself at no extra cost".to_string(),
                });
            }
            config.fencing = fencing;
        }
        if let Some(n) = backend.wait_replicas {
            if kind != BackendKind::Redis {
                return Err(ConfigError::Invalid {
                    field: format!("backends.{name}.wait_replicas"),
                    message: "only redis waits for replicas (WAIT); the others replicate by consensus or not at all".to_string(),
                });
            }
            config.wait_replicas = n;
        }
        if let Some(fair) = backend.fair {
            if kind != BackendKind::Redis {
                return Err(ConfigError::Invalid {
                    field: format!("backends.{name}.fair"),
                    message: "only redis has a fair queue to choose; pg-session, pg-xact, etcd and zookeeper queue their waiters by design".to_string(),
                });
            }
            config.fair = fair;
        }
        if backend.waiter_timeout.is_some() && !config.fair {
            return Err(ConfigError::Invalid {
                field: format!("backends.{name}.waiter_timeout"),
                message: "only a fair redis queue has waiters to time out: set fair = true"
                    .to_string(),
            });
        }
        if let Some(master) = &backend.sentinel_master {
            config.sentinel_master = Some(sentinel_master(kind, name, master, &config.urls)?);
        }
        config.waiter_timeout = duration_field(
            &format!("backends.{name}.waiter_timeout"),
            &backend.waiter_timeout,
            config.waiter_timeout,
        )?;
        configs.push(config);
    }
    configs.sort_by_key(|c| BackendKind::ALL.iter().position(|k| *k == c.kind));
    Ok(configs)
}

/// A `sentinel_master` answer checked: Redis only, a name, and Sentinels reached over TCP.
fn sentinel_master(
    kind: BackendKind,
    name: &str,
    master: &str,
    urls: &[String],
) -> Result<String, ConfigError> {
    let field = format!("backends.{name}.sentinel_master");
    if kind != BackendKind::Redis {
        return Err(ConfigError::Invalid {
            field,
            message: "only redis finds its server through Sentinel; Redlock's nodes are independent primaries by design".to_string(),
        });
    }
    let master = master.trim();
    if master.is_empty() || master.chars().any(char::is_whitespace) {
        return Err(ConfigError::Invalid {
            field,
            message: format!(
                "expected the name the Sentinels monitor the primary by (sentinel monitor NAME ...), got {master:?}"
            ),
        });
    }
    if let Some(url) = urls.iter().find(|u| u.contains("unix:")) {
        return Err(ConfigError::Invalid {
            field: format!("backends.{name}.urls"),
            message: format!(
                "with sentinel_master the URLs are the Sentinels', reached over TCP; \"{}\" is a Unix socket",
                Redacted(url)
            ),
        });
    }
    Ok(master.to_string())
}

/// The URL schemes each backend's client speaks; `None` for a bare `host:port`.
fn schemes(kind: BackendKind) -> &'static [Option<&'static str>] {
    match kind {
        BackendKind::Memory => &[],
        BackendKind::Redis | BackendKind::Redlock => &[
            Some("redis"),
            Some("rediss"),
            Some("redis+unix"),
            Some("unix"),
        ],
        BackendKind::PgSession | BackendKind::PgXact => &[Some("postgres"), Some("postgresql")],
        BackendKind::Etcd => &[Some("http"), Some("https"), None],
        BackendKind::Zookeeper => &[None],
    }
}

/// A URL whose scheme the backend's client does not speak is a mistake in the config, said as
/// one: not a server that cannot be reached.
fn check_scheme(kind: BackendKind, field: &str, url: &str) -> Result<(), ConfigError> {
    let scheme = url.find("://").map(|i| &url[..i]);
    let allowed = schemes(kind);
    if allowed.contains(&scheme) {
        return Ok(());
    }
    let expected: Vec<String> = allowed
        .iter()
        .map(|s| s.map_or("host:port".to_string(), |s| format!("{s}://")))
        .collect();
    Err(ConfigError::Invalid {
        field: field.to_string(),
        message: format!(
            "\"{}\" is not a {} URL; expected {}",
            Redacted(url),
            kind.name(),
            expected.join(" or ")
        ),
    })
}

/// Replaces every `${NAME}` in `value` with the environment variable's value.
pub fn substitute_env(field: &str, value: &str) -> Result<String, ConfigError> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find('}').ok_or_else(|| ConfigError::Invalid {
            field: field.to_string(),
            message: "unterminated ${ in value".to_string(),
        })?;
        let name = &after[..end];
        let resolved = std::env::var(name).map_err(|_| ConfigError::MissingEnv {
            field: field.to_string(),
            name: name.to_string(),
        })?;
        out.push_str(&resolved);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_print() {
        assert_eq!(
            Redacted("postgres://app:s3cret@db.staging:5432/app").to_string(),
            "postgres://app:***@db.staging:5432/app"
        );
        assert_eq!(
            Redacted("redis://127.0.0.1:6390").to_string(),
            "redis://127.0.0.1:6390"
        );
        assert_eq!(
            Redacted("redis://:pw@host:6379").to_string(),
            "redis://:***@host:6379"
        );
    }

    #[test]
    fn env_substitution() {
        // SAFETY: tests in this module do not read this variable concurrently.
        unsafe { std::env::set_var("LOCKBENCH_TEST_PW", "pw") };
        assert_eq!(
            substitute_env("url", "redis://:${LOCKBENCH_TEST_PW}@h").unwrap(),
            "redis://:pw@h"
        );
        assert!(
            substitute_env("url", "${LOCKBENCH_NO_SUCH_VAR}")
                .unwrap_err()
                .to_string()
                .contains("LOCKBENCH_NO_SUCH_VAR")
        );
    }

    #[test]
    fn the_shipped_config_parses() {
        let text = include_str!("../../lockbench.toml");
        let configs = parse_config(text).unwrap();
        let kinds: Vec<_> = configs.iter().map(|c| c.kind).collect();
        assert_eq!(kinds, BackendKind::ALL.to_vec());
        let redlock = configs
            .iter()
            .find(|c| c.kind == BackendKind::Redlock)
            .unwrap();
        assert_eq!(redlock.urls.len(), 5);
        assert!(configs.iter().all(|c| c.namespace == "lockbench"));
    }

    #[test]
    fn redis_alone_waits_for_replicas() {
        let configs =
            parse_config("[backends.redis]\nurls = [\"redis://h:1\"]\nwait_replicas = 1").unwrap();
        assert_eq!(configs[0].wait_replicas, 1);
        let e = parse_config("[backends.etcd]\nurls = [\"http://h\"]\nwait_replicas = 1")
            .unwrap_err()
            .to_string();
        assert!(e.contains("backends.etcd.wait_replicas"), "{e}");
    }

    #[test]
    fn a_sentinel_master_is_a_redis_name_and_its_urls_are_the_sentinels() {
        let configs = parse_config(
            "[backends.redis]\nurls = [\"redis://s1:26379\", \"redis://s2:26379\"]\nsentinel_master = \"billing\"",
        )
        .unwrap();
        assert_eq!(configs[0].sentinel_master.as_deref(), Some("billing"));
        assert_eq!(configs[0].urls.len(), 2);
        let refused = |text: &str, fragments: &[&str]| {
            let e = parse_config(text).unwrap_err().to_string();
            for f in fragments {
                assert!(e.contains(f), "{e}");
            }
        };
        refused(
            "[backends.redlock]\nurls = [\"redis://h:1\"]\nsentinel_master = \"m\"",
            &["backends.redlock.sentinel_master", "only redis"],
        );
        refused(
            "[backends.redis]\nurls = [\"redis://h:1\"]\nsentinel_master = \"two words\"",
            &["backends.redis.sentinel_master", "got \"two words\""],
        );
        refused(
            "[backends.redis]\nurls = [\"redis+unix:///tmp/s\"]\nsentinel_master = \"m\"",
            &["backends.redis.urls", "over TCP"],
        );
    }

    #[test]
    fn redis_alone_has_a_fair_queue_to_choose() {
        let configs = parse_config(
            "[backends.redis]\nurls = [\"redis://h:1\"]\nfair = true\nwaiter_timeout = \"2s\"",
        )
        .unwrap();
        assert!(configs[0].fair);
        assert_eq!(configs[0].waiter_timeout, Duration::from_secs(2));
        assert_eq!(configs[0].label(), REDIS_FAIR);
        for (text, field) in [
            (
                "[backends.etcd]\nurls = [\"http://h\"]\nfair = true",
                "backends.etcd.fair",
            ),
            (
                "[backends.redis]\nurls = [\"redis://h\"]\nwaiter_timeout = \"2s\"",
                "backends.redis.waiter_timeout",
            ),
            (
                "[backends.redis]\nurls = [\"redis://h\"]\nfair = true\nwaiter_timeout = \"0s\"",
                "backends.redis.waiter_timeout",
            ),
        ] {
            let e = parse_config(text).unwrap_err().to_string();
            assert!(e.starts_with(field), "{e}");
        }
    }

    #[test]
    fn redis_fair_selects_the_redis_entry_with_its_queue() {
        let configs = parse_config(include_str!("../../lockbench.toml")).unwrap();
        let fair = BackendConfig::select(&configs, REDIS_FAIR)
            .unwrap()
            .unwrap();
        assert_eq!((fair.kind, fair.fair), (BackendKind::Redis, true));
        let plain = BackendConfig::select(&configs, "redis").unwrap().unwrap();
        assert_eq!((plain.label(), plain.fair), ("redis", false));
        assert!(BackendConfig::select(&configs, "mysql").is_none());
        let only_etcd = parse_config("[backends.etcd]\nurls = [\"http://h\"]").unwrap();
        assert!(
            BackendConfig::select(&only_etcd, REDIS_FAIR)
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn config_errors_name_the_field() {
        let e = parse_config("[backends.mysql]\nurls = [\"x\"]")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("backends.mysql") && e.contains("unknown backend"),
            "{e}"
        );
        let e = parse_config("operation_timeout = \"-1s\"")
            .unwrap_err()
            .to_string();
        assert!(e.contains("operation_timeout"), "{e}");
        let e = parse_config("[backends.redis]").unwrap_err().to_string();
        assert!(e.contains("backends.redis.urls"), "{e}");
        let e = parse_config("[backends.etcd]\nurls = [\"http://h\"]\nfencing = false")
            .unwrap_err()
            .to_string();
        assert!(e.contains("backends.etcd.fencing"), "{e}");
        let plain =
            parse_config("[backends.redis]\nurls = [\"redis://h\"]\nfencing = false").unwrap();
        assert!(!plain[0].fencing);
        let plain =
            parse_config("[backends.pg-session]\nurls = [\"postgres://h\"]\nfencing = false")
                .unwrap();
        assert!(!plain[0].fencing);
    }

    #[test]
    fn a_url_of_another_scheme_is_a_config_error() {
        let e = parse_config("[backends.redis]\nurls = [\"http://:secret@127.0.0.1:6390\"]")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("backends.redis.urls: "), "{e}");
        assert!(
            e.contains("not a redis URL; expected redis:// or rediss://"),
            "{e}"
        );
        assert!(!e.contains("secret"), "{e}");
        let e = parse_config("[backends.zookeeper]\nurls = [\"zk://127.0.0.1:2191\"]")
            .unwrap_err()
            .to_string();
        assert!(e.contains("expected host:port"), "{e}");
        for ok in [
            "[backends.redis]\nurls = [\"rediss://h:1\"]",
            "[backends.pg-xact]\nurls = [\"postgresql://u@h/db\"]",
            "[backends.etcd]\nurls = [\"127.0.0.1:2389\"]",
        ] {
            parse_config(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
        }
    }

    #[test]
    fn names_round_trip() {
        for kind in BackendKind::ALL {
            assert_eq!(BackendKind::parse(kind.name()), Some(kind));
        }
    }
}
