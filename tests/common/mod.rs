//! What the integration tests share: the binary as a test runs it, its JSON, the one-line
//! refusal of bad input, and deterministic draws. `lab.rs` is the fault-lab tests' part.
#![allow(dead_code)] // each test crate uses its own part

pub mod lab;

use std::fmt::Debug;
use std::path::{Path, PathBuf};
use std::process::Output;

use assert_cmd::Command;
use serde_json::Value;

/// The shipped specs and config the tests run (the config names the servers
/// `scripts/services.sh up` starts).
pub const SPECS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/workloads/specs");
pub const BILLING: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/workloads/specs/billing.toml");
pub const MIGRATION: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/workloads/specs/migration.toml"
);
pub const CONFIG: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/lockbench.toml");

/// The variables from which the binary learns it is one shard of a run (an indexed Kubernetes
/// Job, a Slurm array, its own): a test inherits none of them, or a test runner inside such a
/// job would make every command a shard.
const SHARD_VARIABLES: [&str; 6] = [
    "JOB_COMPLETION_INDEX",
    "LOCKBENCH_SHARDS",
    "LOCKBENCH_RUN_ID",
    "SLURM_ARRAY_TASK_ID",
    "SLURM_ARRAY_TASK_COUNT",
    "LOCKBENCH_ZONE",
];

/// The built binary as a plain child process (for a test that needs its pid, signals it or
/// reads its stderr while it runs), with no shard variable inherited.
pub fn lockbench_process() -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_lockbench"));
    for name in SHARD_VARIABLES {
        command.env_remove(name);
    }
    command
}

/// The built binary, as every test runs it: see [`lockbench_process`].
pub fn lockbench() -> Command {
    Command::from_std(lockbench_process())
}

/// Runs lockbench, which must succeed, and parses its stdout as JSON.
pub fn json_of(args: &[&str]) -> Value {
    let out = lockbench().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("stdout is JSON")
}

/// Asserts that `out` (of the command `what`) exited with `code` and wrote exactly one line on
/// stderr holding every fragment; returns stderr.
pub fn assert_one_line(
    out: &Output,
    code: i32,
    what: impl Debug,
    fragments: &[impl AsRef<str>],
) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "{what:?}: {stderr}");
    assert_eq!(
        stderr.trim_end().lines().count(),
        1,
        "{what:?}: one line expected, got: {stderr}"
    );
    for f in fragments {
        let f = f.as_ref();
        assert!(stderr.contains(f), "{what:?}: {stderr:?} lacks {f:?}");
    }
    stderr
}

/// Asserts that `out` (of the command `what`) is bad input refused: exit code 2, nothing on
/// stdout, and one line on stderr holding every fragment; returns stderr.
pub fn assert_refused(out: &Output, what: impl Debug, fragments: &[impl AsRef<str>]) -> String {
    let stderr = assert_one_line(out, 2, &what, fragments);
    assert!(
        out.stdout.is_empty(),
        "{what:?}: nothing on stdout when refusing, got: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    stderr
}

/// Runs `lockbench ARGS` expecting bad input refused (see [`assert_refused`]); returns stderr.
pub fn refused(args: &[&str], fragments: &[impl AsRef<str>]) -> String {
    let out = lockbench().args(args).output().unwrap();
    assert_refused(&out, args, fragments)
}

/// Writes `text` to `dir/name` (a spec or a config made for a test) and returns its path.
pub fn write_file(dir: &Path, name: &str, text: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// A user's own adapter as a user writes one: an executable `dir/name` that runs `script` (a
/// Python adapter of this repository's) with the interpreter `scripts/clients.sh up` installed.
pub fn own_adapter(dir: &Path, name: &str, script: &str) -> String {
    let root = env!("CARGO_MANIFEST_DIR");
    let path = write_file(
        dir,
        name,
        format!("#!/bin/sh\nexec {root}/target/clients/python/bin/python {root}/{script}\n")
            .as_bytes(),
    );
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.to_str().unwrap().to_string()
}

/// Deterministic uniform draws in (0, 1): splitmix64.
pub struct Draws(pub u64);

impl Draws {
    pub fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        ((z >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
}
