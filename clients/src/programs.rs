//! Where the adapters are: the shipped ones under `clients/adapters/`, run by the runtime
//! `scripts/clients.sh up` installed under `target/clients/`, and a user's own adapter by its
//! path.

use std::path::{Path, PathBuf};

use lockbench_core::Client;
use lockbench_core::records::runner::RunnerKind;

use crate::ClientsError;

/// The repository lockbench was built from: the shipped adapters and their installed libraries
/// live there. `LOCKBENCH_HOME` names another (a checkout the binary was copied out of).
pub fn home() -> PathBuf {
    std::env::var_os("LOCKBENCH_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
            crate_dir.parent().unwrap_or(crate_dir).to_path_buf()
        })
}

/// An adapter as a command line (it travels in a fault-lab worker's plan).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Program {
    /// How messages name it: a shipped adapter's name, or the path given.
    pub name: String,
    /// The shipped adapter it is, if it is one.
    pub client: Option<Client>,
    /// The command line.
    pub argv: Vec<PathBuf>,
}

/// The language runtime a shipped adapter needs, and where `scripts/clients.sh` puts what it
/// installs or builds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Runtime {
    /// A virtual environment with requirements.txt's pins.
    Python,
    /// `npm ci` of the committed lock file, run by the machine's `node`.
    Node,
    /// A binary built with Debian's Go against Debian's library sources.
    Go,
    /// Classes compiled with the JDK against Debian's jars, run by a launcher with their class
    /// path.
    Java,
}

impl Runtime {
    /// Where `scripts/clients.sh` installs or builds it.
    fn dir(self, home: &Path) -> PathBuf {
        let name = match self {
            Runtime::Python => "python",
            Runtime::Node => "node",
            Runtime::Go => "go",
            Runtime::Java => "java",
        };
        home.join("target/clients").join(name)
    }

    /// The command line that runs `script`, once installed.
    fn argv(self, home: &Path, script: &str) -> Vec<PathBuf> {
        let stem = Path::new(script)
            .file_stem()
            .map(|s| s.to_os_string())
            .unwrap_or_default();
        match self {
            Runtime::Python => vec![self.dir(home).join("bin/python"), home.join(script)],
            Runtime::Node => vec![PathBuf::from("node"), home.join(script)],
            Runtime::Go | Runtime::Java => vec![self.dir(home).join(stem)],
        }
    }

    /// What must exist for the runtime to run an adapter (the interpreter, the built program).
    fn ready(self, home: &Path, script: &str) -> bool {
        match self {
            Runtime::Node => self.dir(home).join("node_modules").is_dir(),
            _ => self.argv(home, script)[0].exists(),
        }
    }

    /// Its pin file, from the repository's root.
    fn pins(self) -> &'static str {
        match self {
            Runtime::Python => "clients/adapters/python/requirements.txt",
            Runtime::Node => "clients/adapters/node/package-lock.json",
            Runtime::Go => "clients/adapters/go/debian-pins.txt",
            Runtime::Java => "clients/adapters/java/debian-pins.txt",
        }
    }

    /// The file whose presence says the pinned libraries are installed (the install script
    /// writes it last, a copy of the pin file).
    fn stamp(self, home: &Path) -> PathBuf {
        self.dir(home).join(".installed")
    }

    /// The version `pins` (the pin file's text) pins `package` at, as the library names it.
    fn pinned_in(self, pins: &str, package: &str) -> Option<String> {
        // `package==version` lines: requirements.txt and the Debian pin files alike.
        let line = || {
            pins.lines()
                .filter_map(|l| l.split_once("=="))
                .find(|(p, _)| p.trim() == package)
                .map(|(_, version)| version.trim())
        };
        match self {
            Runtime::Python => line().map(str::to_string),
            Runtime::Node => {
                let lock: serde_json::Value = serde_json::from_str(pins).ok()?;
                let version =
                    lock["packages"][format!("node_modules/{package}")]["version"].as_str()?;
                Some(version.trim_start_matches('v').to_string())
            }
            // A Debian version, `[epoch:]upstream[-revision]`: the library names the upstream.
            Runtime::Go | Runtime::Java => {
                let debian = line()?;
                let upstream = debian.split_once(':').map_or(debian, |(_, v)| v);
                let upstream = upstream.rsplit_once('-').map_or(upstream, |(v, _)| v);
                Some(upstream.to_string())
            }
        }
    }
}

/// A shipped adapter: its runtime, its source and the package its library comes in.
#[derive(Clone, Copy, Debug)]
pub struct Shipped {
    /// What runs it.
    pub runtime: Runtime,
    /// The adapter's source, from the repository's root.
    pub script: &'static str,
    /// The library's package, as its pin file names it.
    pub package: &'static str,
}

/// The shipped adapter of `client`; `None` for a user's own. Exhaustive: a new client does not
/// compile until its adapter is named here.
pub fn shipped(client: Client) -> Option<Shipped> {
    let adapter = |runtime, script, package| {
        Some(Shipped {
            runtime,
            script,
            package,
        })
    };
    match client {
        Client::RedisPy => adapter(
            Runtime::Python,
            "clients/adapters/python/redis_py.py",
            "redis",
        ),
        Client::PythonRedisLock => adapter(
            Runtime::Python,
            "clients/adapters/python/python_redis_lock.py",
            "python-redis-lock",
        ),
        Client::Kazoo => adapter(
            Runtime::Python,
            "clients/adapters/python/kazoo_lock.py",
            "kazoo",
        ),
        Client::Pottery => adapter(
            Runtime::Python,
            "clients/adapters/python/pottery_redlock.py",
            "pottery",
        ),
        Client::NodeRedlock => adapter(
            Runtime::Node,
            "clients/adapters/node/node_redlock.js",
            "redlock",
        ),
        Client::Curator => adapter(
            Runtime::Java,
            "clients/adapters/java/CuratorLock.java",
            "libcurator-recipes-java",
        ),
        Client::EtcdGo => adapter(
            Runtime::Go,
            "clients/adapters/go/etcd_go.go",
            "golang-etcd-server-dev",
        ),
        Client::RedisSemaphore => adapter(
            Runtime::Node,
            "clients/adapters/node/redis_semaphore.js",
            "redis-semaphore",
        ),
        Client::ToozPg => adapter(
            Runtime::Python,
            "clients/adapters/python/tooz_pg.py",
            "tooz",
        ),
        Client::Own(_) => None,
    }
}

/// The library version the install script pins for `client`, from its pin file; a user's own
/// adapter's is the version it described.
pub fn pinned(client: Client) -> Option<String> {
    let Some(shipped) = shipped(client) else {
        return client.own().map(|own| own.version.to_string());
    };
    let pins = std::fs::read_to_string(home().join(shipped.runtime.pins())).ok()?;
    shipped.runtime.pinned_in(&pins, shipped.package)
}

/// The adapter `client`, ready to run, or what is missing.
pub fn program(client: Client) -> Result<Program, ClientsError> {
    let home = home();
    let Some(Shipped {
        runtime, script, ..
    }) = shipped(client)
    else {
        let own = client.own().expect("only a user's own adapter ships none");
        let mut program = resolve(&own.adapter)?;
        program.client = Some(client);
        return Ok(program);
    };
    if !installed(client) {
        return Err(ClientsError::NotInstalled {
            client: client.name(),
            pins: home.join(runtime.pins()),
        });
    }
    Ok(Program {
        name: client.name().to_string(),
        client: Some(client),
        argv: runtime.argv(&home, script),
    })
}

/// True when `client`'s runtime and libraries are installed, at today's pins (the install script
/// stamps its runtime with the pin file it installed); for a user's own adapter, when its program
/// is an executable file.
pub fn installed(client: Client) -> bool {
    let home = home();
    let Some(Shipped {
        runtime, script, ..
    }) = shipped(client)
    else {
        return client
            .own()
            .is_some_and(|own| resolve(&own.adapter).is_ok());
    };
    match (
        std::fs::read(runtime.stamp(&home)),
        std::fs::read(home.join(runtime.pins())),
    ) {
        (Ok(stamp), Ok(pins)) => stamp == pins && runtime.ready(&home, script),
        _ => false,
    }
}

/// `name` as an adapter: a shipped adapter's name, or the path of an executable. A user's own
/// adapter is not described yet (its `client` is `None`): [`crate::describe`] asks it.
pub fn resolve(name: &str) -> Result<Program, ClientsError> {
    if let Some(client) = Client::parse(name) {
        return program(client);
    }
    let path = Path::new(name);
    if !name.contains('/') {
        return Err(ClientsError::Unknown(name.to_string()));
    }
    let called = lockbench_core::own_name(name);
    if Client::parse(&called).is_some() {
        // Its cells would read as the shipped adapter's.
        return Err(ClientsError::Start {
            adapter: name.to_string(),
            error: format!(
                "results would name it {called}, as the shipped adapter is named: rename the file"
            ),
        });
    }
    let meta = std::fs::metadata(path).map_err(|e| ClientsError::Start {
        adapter: name.to_string(),
        error: e.to_string(),
    })?;
    use std::os::unix::fs::PermissionsExt as _;
    if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
        return Err(ClientsError::Start {
            adapter: name.to_string(),
            error: "not an executable file".to_string(),
        });
    }
    Ok(Program {
        name: name.to_string(),
        client: None,
        argv: vec![path.to_path_buf()],
    })
}

/// A job runner the fault lab's runner cells run for real: its worker and producer script, the
/// runtime that runs it and the package its library comes in (docs/FAULTS.md, "runner").
pub fn runner(kind: RunnerKind) -> Option<Shipped> {
    let shipped = |runtime, script, package| {
        Some(Shipped {
            runtime,
            script,
            package,
        })
    };
    match kind {
        RunnerKind::Bullmq => shipped(
            Runtime::Node,
            "clients/adapters/node/bullmq_runner.js",
            "bullmq",
        ),
        RunnerKind::Celery => shipped(
            Runtime::Python,
            "clients/adapters/python/celery_runner.py",
            "celery",
        ),
        RunnerKind::PgBoss => shipped(
            Runtime::Node,
            "clients/adapters/node/pgboss_runner.js",
            "pg-boss",
        ),
        // A cron node of the slot cells: its lock through redis-py, its clock the shim's.
        RunnerKind::Cron => shipped(
            Runtime::Python,
            "clients/adapters/python/cron_node.py",
            "redis",
        ),
        RunnerKind::Quartz => None,
    }
}

/// The command line of `kind`'s runner script and its library's installed version, or what is
/// missing (its runtime's libraries not installed at today's pins).
pub fn runner_program(kind: RunnerKind) -> Result<(Vec<PathBuf>, String), ClientsError> {
    let home = home();
    let Some(Shipped {
        runtime,
        script,
        package,
    }) = runner(kind)
    else {
        return Err(ClientsError::Start {
            adapter: kind.name().to_string(),
            error: "the lab runs no such runner (it runs BullMQ, Celery, pg-boss and cron nodes)"
                .to_string(),
        });
    };
    let pins = std::fs::read(home.join(runtime.pins())).ok();
    let stamp = std::fs::read(runtime.stamp(&home)).ok();
    if pins.is_none() || pins != stamp || !runtime.ready(&home, script) {
        return Err(ClientsError::NotInstalled {
            client: kind.name(),
            pins: home.join(runtime.pins()),
        });
    }
    let text = String::from_utf8_lossy(pins.as_deref().unwrap_or_default()).to_string();
    let version = runtime.pinned_in(&text, package).unwrap_or_default();
    Ok((runtime.argv(&home, script), format!("{package} {version}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pin_names_the_version_the_library_reports() {
        assert_eq!(
            Runtime::Python.pinned_in("# c\nredis==8.1.0\nkazoo==2.11.0\n", "kazoo"),
            Some("2.11.0".to_string())
        );
        let lock = r#"{"packages":{"node_modules/redlock":{"version":"5.0.0-beta.2"}}}"#;
        assert_eq!(
            Runtime::Node.pinned_in(lock, "redlock"),
            Some("5.0.0-beta.2".to_string())
        );
        assert_eq!(Runtime::Node.pinned_in(lock, "ioredis"), None);
        // Debian's epoch and revision are not the library's.
        assert_eq!(
            Runtime::Go.pinned_in(
                "golang-etcd-server-dev==3.4.23-4\n",
                "golang-etcd-server-dev"
            ),
            Some("3.4.23".to_string())
        );
        assert_eq!(
            Runtime::Java.pinned_in("libnetty-java==1:4.1.48-7+deb12u2\n", "libnetty-java"),
            Some("4.1.48".to_string())
        );
    }
}
