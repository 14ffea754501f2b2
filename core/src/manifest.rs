//! The manifest that makes a results directory self-describing.

use serde::Serialize;

/// What produced a results directory: enough to reproduce it (seed, flags, spec text, version).
#[derive(Clone, Debug, Serialize)]
pub struct Manifest {
    /// Always "lockbench".
    pub tool: &'static str,
    /// Tool version.
    pub version: &'static str,
    /// Git commit the binary was built from, when known.
    pub git_commit: Option<String>,
    /// The subcommand ("simulate", "ttl").
    pub command: String,
    /// The command line as given.
    pub args: Vec<String>,
    /// Seed of every random stream (none for measurements of real servers).
    pub seed: Option<u64>,
    /// Worker threads used (results do not depend on it).
    pub threads: usize,
    /// When the run finished, seconds since the Unix epoch.
    pub created_unix_s: u64,
    /// Where it ran.
    pub machine: Machine,
    /// Every spec used, with its full text.
    pub specs: Vec<SpecRecord>,
    /// Files in the directory besides the manifest.
    pub files: Vec<String>,
}

/// The machine a run happened on.
#[derive(Clone, Debug, Serialize)]
pub struct Machine {
    /// Host name, when readable.
    pub hostname: Option<String>,
    /// Operating system family.
    pub os: &'static str,
    /// CPU architecture.
    pub arch: &'static str,
    /// Logical CPUs available to the process.
    pub cpus: usize,
}

impl Machine {
    /// Describes the machine this process runs on.
    pub fn current() -> Self {
        Machine {
            hostname: std::fs::read_to_string("/etc/hostname")
                .ok()
                .map(|h| h.trim().to_string())
                .filter(|h| !h.is_empty()),
            os: std::env::consts::OS,
            arch: std::env::consts::ARCH,
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }
}

/// A spec file as it was when the run used it.
#[derive(Clone, Debug, Serialize)]
pub struct SpecRecord {
    /// Path as given on the command line.
    pub path: String,
    /// The file's text.
    pub text: String,
}

/// Seconds since the Unix epoch, now.
pub fn unix_now_s() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
