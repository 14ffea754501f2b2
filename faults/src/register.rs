//! The lab's register of what it makes that cannot die with it (a network namespace, a subnet
//! claim, a private server's directory, the run's Postgres schema, its keys on a shared server):
//! each is written here before it is made, one file per lab process in the temporary directory
//! (`lockbench-faults-lab-PID.jsonl`, its first line the lab's pid and start time). The lab
//! removes the file once it has removed everything itself; `leftovers` sweeps what a lab killed
//! with SIGKILL left.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use lockbench_locks::BackendKind;
use serde::{Deserialize, Serialize};

/// One line of a register.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Leftover {
    /// The first line: whose register it is. `start` is the process's start time in clock ticks
    /// since boot (`/proc/PID/stat`), so that a new process with a reused pid is not taken for it.
    Lab { pid: u32, start: u64 },
    /// A directory under the temporary directory.
    Dir { path: PathBuf },
    /// A network namespace and the host end of its veth pair.
    Namespace { name: String, host_veth: String },
    /// A subnet claim file.
    Claim { path: PathBuf },
    /// A schema in the protected resource's Postgres (the URL may carry a password: the file is
    /// readable by its owner only).
    Schema { url: String, schema: String },
    /// A run's keys on a shared lock server, under `namespace`: a lock's own TTL ends it, but
    /// not a fencing counter or a ZooKeeper folder. Removed with the backend's `purge_namespace`
    /// (the namespace is the run's alone; the URLs may carry a password, as a schema's).
    Keys {
        backend: BackendKind,
        urls: Vec<String>,
        namespace: String,
    },
}

pub(crate) const PREFIX: &str = "lockbench-faults-lab-";
pub(crate) const SUFFIX: &str = ".jsonl";

/// This process's register, once it has one, and how many of its labs are running.
static REGISTER: Mutex<Option<(PathBuf, usize)>> = Mutex::new(None);

pub(crate) fn register_path(dir: &Path, pid: u32) -> PathBuf {
    dir.join(format!("{PREFIX}{pid}{SUFFIX}"))
}

/// A process's start time (clock ticks since boot), if it is alive.
pub(crate) fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // pid (comm) state ppid ... : starttime is the 22nd field, the 20th after the comm.
    stat.rsplit(')')
        .next()?
        .split_whitespace()
        .nth(19)?
        .parse()
        .ok()
}

/// Appends `item` to the register at `path`, as one line, readable by its owner only.
pub(crate) fn append(path: &Path, item: &Leftover) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)?;
    let mut line = serde_json::to_vec(item).expect("a leftover serialises");
    line.push(b'\n');
    file.write_all(&line)
}

/// This process's register, made with its first line on first use; `None` (reported) when it
/// cannot be written: the lab still removes what it made, it only cannot promise the same after a
/// SIGKILL.
fn ensure(register: &mut Option<(PathBuf, usize)>) -> Option<PathBuf> {
    if let Some((path, _)) = register {
        return Some(path.clone());
    }
    let pid = std::process::id();
    let path = register_path(&std::env::temp_dir(), pid);
    let header = Leftover::Lab {
        pid,
        start: start_time(pid).unwrap_or(0),
    };
    let _ = std::fs::remove_file(&path);
    match append(&path, &header) {
        Ok(()) => {
            *register = Some((path.clone(), 0));
            Some(path)
        }
        Err(e) => {
            eprintln!(
                "lockbench: faults: cannot write {}: {e}; a SIGKILL of this lab would leave what it made",
                path.display()
            );
            None
        }
    }
}

/// Writes `item` to this process's register, before the thing is made.
pub(crate) fn record(item: Leftover) {
    let mut register = REGISTER.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(path) = ensure(&mut register)
        && let Err(e) = append(&path, &item)
    {
        eprintln!("lockbench: faults: cannot write {}: {e}", path.display());
    }
}

/// A lab of this process begins.
pub(crate) fn lab_started() {
    let mut register = REGISTER.lock().unwrap_or_else(|e| e.into_inner());
    ensure(&mut register);
    if let Some((_, labs)) = &mut *register {
        *labs += 1;
    }
}

/// A lab of this process ended; `clean` when it removed everything it made. The register goes
/// when the last lab ended clean; otherwise it stays for the next sweep.
pub(crate) fn lab_ended(clean: bool) {
    let mut register = REGISTER.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((path, labs)) = &mut *register {
        *labs = labs.saturating_sub(1);
        if *labs == 0 && clean {
            let _ = std::fs::remove_file(&*path);
            *register = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leftover_reads_back_as_written() {
        let items = [
            Leftover::Lab { pid: 7, start: 99 },
            Leftover::Dir {
                path: "/tmp/x".into(),
            },
            Leftover::Namespace {
                name: "lbf-1".into(),
                host_veth: "lbf1h".into(),
            },
            Leftover::Schema {
                url: "postgres://u@h/d".into(),
                schema: "s".into(),
            },
        ];
        for item in items {
            let line = serde_json::to_string(&item).unwrap();
            assert_eq!(serde_json::from_str::<Leftover>(&line).unwrap(), item);
        }
    }
}
