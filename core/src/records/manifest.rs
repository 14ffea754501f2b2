//! The manifest that makes a results directory self-describing.

use serde::{Deserialize, Serialize};

use crate::backend::BackendId;

use super::codec::present;

/// What produced a results directory: enough to reproduce it (seed, flags, spec text, version),
/// and the schema version of its records.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Always "lockbench".
    pub tool: String,
    /// The layout of the records ([`crate::records::SCHEMA_VERSION`] when written).
    pub schema_version: u32,
    /// Tool version.
    pub version: String,
    /// Git commit the binary was built from; `None` when unknown.
    #[serde(deserialize_with = "present")]
    pub git_commit: Option<String>,
    /// The command that wrote it, which says what its other files are.
    pub command: RunKind,
    /// The command line as given.
    pub args: Vec<String>,
    /// Seed of every random stream; `None` for measurements of real servers.
    #[serde(deserialize_with = "present")]
    pub seed: Option<u64>,
    /// Worker threads used (results do not depend on it).
    pub threads: usize,
    /// When the run finished, seconds since the Unix epoch.
    pub created_unix_s: u64,
    /// Where it ran.
    pub machine: Machine,
    /// Every spec used, with its full text.
    pub specs: Vec<SpecRecord>,
    /// The servers measured (bench), passwords removed.
    pub backends: Vec<ServerRecord>,
    /// The backend config file used; `None` for commands that read none.
    #[serde(deserialize_with = "present")]
    pub config: Option<String>,
    /// Files in the directory besides the manifest.
    pub files: Vec<String>,
    /// The shard this directory is, when the run was split into shards; `None` for a whole run.
    #[serde(deserialize_with = "present")]
    pub shard: Option<ShardRecord>,
    /// The shards `lockbench merge` made this directory from, in index order; empty otherwise.
    pub merged_from: Vec<ShardOrigin>,
    /// How the lockbench that wrote it was built: a debug build's timings are not a release's.
    /// Added without a schema bump: absent in directories written before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<BuildProfile>,
}

/// The command that wrote a results directory: what its files are (serialized as the
/// command's name).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RunKind {
    /// `simulate`: runtime percentiles in simulated time.
    Simulate,
    /// `ttl`: a simulation with its TTL recommendation.
    Ttl,
    /// `bench`: lock operation latencies against real servers.
    Bench,
    /// `replay`: a workload run for real.
    Replay,
    /// `faults`: the fault lab's matrix, trials and events.
    Faults,
    /// `check`: a spec checked against observed runs.
    Check,
    /// `report`: the locking decision record (not evidence for another report).
    Report,
}

impl RunKind {
    /// The command's name, as the manifest stores it.
    pub fn name(self) -> &'static str {
        match self {
            RunKind::Simulate => "simulate",
            RunKind::Ttl => "ttl",
            RunKind::Bench => "bench",
            RunKind::Replay => "replay",
            RunKind::Faults => "faults",
            RunKind::Check => "check",
            RunKind::Report => "report",
        }
    }

    /// Whether its directory holds HdrHistograms with their exact figures (`exact.json`).
    pub fn has_histograms(self) -> bool {
        matches!(self, RunKind::Simulate | RunKind::Ttl | RunKind::Bench)
    }
}

impl std::fmt::Display for RunKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// How a binary was built.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BuildProfile {
    /// With debug assertions (`cargo build`).
    Debug,
    /// Optimised, without debug assertions (`cargo build --release`).
    Release,
}

impl BuildProfile {
    /// The profile of the binary this code is compiled into.
    pub fn current() -> Self {
        if cfg!(debug_assertions) {
            BuildProfile::Debug
        } else {
            BuildProfile::Release
        }
    }

    /// In words: "a debug build".
    pub fn describe(self) -> &'static str {
        match self {
            BuildProfile::Debug => "a debug build",
            BuildProfile::Release => "a release build",
        }
    }
}

/// One shard of a run split over several processes or machines.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardRecord {
    /// This shard, from 0.
    pub index: u64,
    /// How many shards the run has.
    pub count: u64,
    /// The run every shard of it names (`--run-id`).
    pub run_id: String,
    /// Where it ran (`LOCKBENCH_ZONE`, e.g. an availability zone); `None` when not given.
    #[serde(deserialize_with = "present")]
    pub zone: Option<String>,
    /// bench: when every shard's measured part began (`--start-at`), milliseconds since the Unix
    /// epoch; `None` for a simulation.
    #[serde(deserialize_with = "present")]
    pub start_at_unix_ms: Option<u64>,
    /// bench: this host's clock minus the lock server's, in milliseconds, measured before the
    /// first level over the quickest of a few round trips; `None` for a simulation or a server
    /// that does not tell its time. Shards keep `--start-at` by their own clocks, so the spread of
    /// their offsets is how far apart they really started.
    #[serde(deserialize_with = "present")]
    pub clock_offset_ms: Option<f64>,
    /// The round trip of that measurement: the offset is known to within half of it.
    #[serde(deserialize_with = "present")]
    pub clock_rtt_ms: Option<f64>,
    /// Every resolved setting the shards of one run must share, by name (`replays`, `scales`,
    /// `seed`, ...; not where a shard wrote nor its threads): `lockbench merge` compares them one
    /// by one, so `--seed 1` and `--seed=1` are one run and `--replays 1000` and `1001` are not.
    pub settings: std::collections::BTreeMap<String, String>,
}

impl ShardRecord {
    /// Shard `index` of `count` of run `run_id`, with no zone, start, clock or settings yet.
    pub fn new(index: u64, count: u64, run_id: impl Into<String>) -> Self {
        ShardRecord {
            index,
            count,
            run_id: run_id.into(),
            zone: None,
            start_at_unix_ms: None,
            clock_offset_ms: None,
            clock_rtt_ms: None,
            settings: Default::default(),
        }
    }
}

/// What a merged directory keeps of each shard's manifest.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardOrigin {
    /// The shard.
    pub shard: ShardRecord,
    /// Its host.
    #[serde(deserialize_with = "present")]
    pub hostname: Option<String>,
    /// When it finished, seconds since the Unix epoch.
    pub created_unix_s: u64,
    /// Its worker threads.
    pub threads: usize,
    /// The commit its binary was built from.
    #[serde(deserialize_with = "present")]
    pub git_commit: Option<String>,
}

/// The machine a run happened on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Machine {
    /// Host name; `None` when unreadable.
    #[serde(deserialize_with = "present")]
    pub hostname: Option<String>,
    /// Operating system family.
    pub os: String,
    /// CPU architecture.
    pub arch: String,
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
            os: std::env::consts::OS.to_string(),
            arch: std::env::consts::ARCH.to_string(),
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }
}

/// A spec file as it was when the run used it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpecRecord {
    /// Path as given on the command line.
    pub path: String,
    /// The file's text.
    pub text: String,
}

/// A lock server a run measured, as the config named it (passwords removed).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerRecord {
    /// Backend name.
    pub backend: BackendId,
    /// Its URLs, comma-separated, passwords removed.
    pub urls: String,
    /// The namespace of every key it created.
    pub namespace: String,
}

/// Seconds since the Unix epoch, now.
pub fn unix_now_s() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
