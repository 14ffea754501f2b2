//! Where the adapters are: the shipped ones under `clients/adapters/`, run by the interpreter
//! `scripts/clients.sh up` installed under `target/clients/`, and a user's own adapter by its
//! path.

use std::path::{Path, PathBuf};

use lockbench_core::Client;

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

/// The language runtime a shipped adapter needs, and where `scripts/clients.sh` puts it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Runtime {
    /// A virtual environment with requirements.txt's pins.
    Python,
}

impl Runtime {
    /// Its interpreter, once installed.
    fn interpreter(self, home: &Path) -> PathBuf {
        match self {
            Runtime::Python => home.join("target/clients/python/bin/python"),
        }
    }

    /// Its pin file, from the repository's root.
    fn pins(self) -> &'static str {
        match self {
            Runtime::Python => "clients/adapters/python/requirements.txt",
        }
    }

    /// The file whose presence says the pinned libraries are installed (the install script
    /// writes it last).
    fn stamp(self, home: &Path) -> PathBuf {
        match self {
            Runtime::Python => home.join("target/clients/python/.installed"),
        }
    }
}

/// A shipped adapter: its runtime, its script and the package its library comes in.
#[derive(Clone, Copy, Debug)]
pub struct Shipped {
    /// What runs it.
    pub runtime: Runtime,
    /// The adapter, from the repository's root.
    pub script: &'static str,
    /// The library's package, as its pin file names it.
    pub package: &'static str,
}

/// The shipped adapter of `client`. Exhaustive: a new client does not compile until its adapter
/// is named here.
pub fn shipped(client: Client) -> Shipped {
    let python = |script, package| Shipped {
        runtime: Runtime::Python,
        script,
        package,
    };
    match client {
        Client::RedisPy => python("clients/adapters/python/redis_py.py", "redis"),
        Client::Kazoo => python("clients/adapters/python/kazoo_lock.py", "kazoo"),
        Client::Pottery => python("clients/adapters/python/pottery_redlock.py", "pottery"),
    }
}

/// The library version the install script pins for `client`, from its pin file.
pub fn pinned(client: Client) -> Option<String> {
    let shipped = shipped(client);
    let pins = std::fs::read_to_string(home().join(shipped.runtime.pins())).ok()?;
    pins.lines()
        .filter_map(|l| l.split_once("=="))
        .find(|(package, _)| package.trim() == shipped.package)
        .map(|(_, version)| version.trim().to_string())
}

/// The shipped adapter `client`, ready to run, or what is missing.
pub fn program(client: Client) -> Result<Program, ClientsError> {
    let home = home();
    let Shipped {
        runtime, script, ..
    } = shipped(client);
    if !installed(client) {
        return Err(ClientsError::NotInstalled {
            client: client.name(),
            pins: home.join(runtime.pins()),
        });
    }
    Ok(Program {
        name: client.name().to_string(),
        client: Some(client),
        argv: vec![runtime.interpreter(&home), home.join(script)],
    })
}

/// True when `client`'s runtime and libraries are installed, at today's pins (the install script
/// stamps its runtime with the pin file it installed).
pub fn installed(client: Client) -> bool {
    let home = home();
    let runtime = shipped(client).runtime;
    match (
        std::fs::read(runtime.stamp(&home)),
        std::fs::read(home.join(runtime.pins())),
    ) {
        (Ok(stamp), Ok(pins)) => stamp == pins && runtime.interpreter(&home).exists(),
        _ => false,
    }
}

/// `name` as an adapter: a shipped adapter's name, or the path of an executable.
pub fn resolve(name: &str) -> Result<Program, ClientsError> {
    if let Some(client) = Client::parse(name) {
        return program(client);
    }
    let path = Path::new(name);
    if !name.contains('/') {
        return Err(ClientsError::Unknown(name.to_string()));
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
