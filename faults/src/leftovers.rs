//! What a lab makes that cannot die with it: a network namespace (and with it its veth pair and
//! nftables table), a subnet claim, a private server's directory, the run's Postgres schema. Each
//! is written to the lab's register before it is made, one file per lab process in the temporary
//! directory (`lockbench-faults-lab-PID.jsonl`, its first line the lab's pid and start time); the
//! lab removes the file once it has removed everything itself. A lab killed with SIGKILL leaves
//! the file, and [`sweep`] (run by the next `lockbench faults`, or by `lockbench faults --clean`)
//! removes what it names, for labs that are no longer alive only.
//!
//! Private servers and workers are not here: they die with the lab (a parent-death signal).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::resource::Resource;

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
}

const PREFIX: &str = "lockbench-faults-lab-";
const SUFFIX: &str = ".jsonl";

/// This process's register, once it has one, and how many of its labs are running.
static REGISTER: Mutex<Option<(PathBuf, usize)>> = Mutex::new(None);

fn register_path(dir: &Path, pid: u32) -> PathBuf {
    dir.join(format!("{PREFIX}{pid}{SUFFIX}"))
}

/// A process's start time (clock ticks since boot), if it is alive.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // pid (comm) state ppid ... : starttime is the 22nd field, the 20th after the comm.
    stat.rsplit(')')
        .next()?
        .split_whitespace()
        .nth(19)?
        .parse()
        .ok()
}

fn append(path: &Path, item: &Leftover) -> std::io::Result<()> {
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

/// What a sweep did with one register.
#[derive(Debug, Default)]
pub struct Swept {
    /// The dead lab's pid.
    pub pid: u32,
    /// One line per thing removed.
    pub removed: Vec<String>,
    /// One line per thing that could not be removed (the register stays for the next sweep).
    pub failed: Vec<String>,
}

/// Removes what labs that are no longer alive left, register by register; live labs' registers
/// (this process's included) are not touched.
pub async fn sweep() -> Vec<Swept> {
    sweep_in(&std::env::temp_dir()).await
}

async fn sweep_in(dir: &Path) -> Vec<Swept> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut registers: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(PREFIX) && n.ends_with(SUFFIX))
        })
        .collect();
    registers.sort();
    let mut swept = Vec::new();
    for path in registers {
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        // A line cut short by the kill is the last one: what it named was not made yet.
        let items: Vec<Leftover> = text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        let Some(Leftover::Lab { pid, start }) = items.first().cloned() else {
            continue;
        };
        if pid == std::process::id() || start_time(pid).is_some_and(|s| s == start || start == 0) {
            continue;
        }
        let mut done = Swept {
            pid,
            ..Swept::default()
        };
        for item in items.iter().skip(1) {
            remove(item, &mut done).await;
        }
        if done.failed.is_empty() {
            let _ = std::fs::remove_file(&path);
        }
        swept.push(done);
    }
    swept
}

async fn remove(item: &Leftover, done: &mut Swept) {
    match item {
        Leftover::Lab { .. } => {}
        Leftover::Dir { path } | Leftover::Claim { path } => {
            if path.exists() {
                let result = if path.is_dir() {
                    std::fs::remove_dir_all(path)
                } else {
                    std::fs::remove_file(path)
                };
                match result {
                    Ok(()) => done.removed.push(path.display().to_string()),
                    Err(e) => done.failed.push(format!("{}: {e}", path.display())),
                }
            }
        }
        Leftover::Namespace { name, host_veth } => {
            if crate::netns::exists(name) {
                match crate::netns::delete(name, host_veth) {
                    Ok(()) => done.removed.push(format!(
                        "network namespace {name} (its veth pair and nftables table with it)"
                    )),
                    Err(e) => done.failed.push(format!("network namespace {name}: {e}")),
                }
            }
        }
        Leftover::Schema { url, schema } => {
            match Resource::connect(url, schema, Duration::from_secs(5)).await {
                Ok(mut resource) => {
                    match resource.drop_existing_schema().await {
                        Ok(true) => done.removed.push(format!("Postgres schema {schema}")),
                        Ok(false) => {}
                        Err(e) => done.failed.push(e.to_string()),
                    }
                    resource.close().await;
                }
                Err(e) => done.failed.push(e.to_string()),
            }
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

    #[tokio::test]
    async fn a_dead_labs_things_are_removed_and_a_live_ones_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let made = dir.path().join("made");
        std::fs::create_dir(&made).unwrap();
        // A pid that is not running: past the kernel's default pid_max.
        let dead = register_path(dir.path(), 4_194_999);
        append(
            &dead,
            &Leftover::Lab {
                pid: 4_194_999,
                start: 1,
            },
        )
        .unwrap();
        append(&dead, &Leftover::Dir { path: made.clone() }).unwrap();
        std::fs::write(
            &dead,
            std::fs::read_to_string(&dead).unwrap() + "{\"kind\":\"di",
        )
        .unwrap();
        // This test's own parent (alive, with its real start time): left alone.
        let parent = std::os::unix::process::parent_id();
        let kept = dir.path().join("kept");
        std::fs::create_dir(&kept).unwrap();
        let live = register_path(dir.path(), parent);
        append(
            &live,
            &Leftover::Lab {
                pid: parent,
                start: start_time(parent).unwrap(),
            },
        )
        .unwrap();
        append(&live, &Leftover::Dir { path: kept.clone() }).unwrap();

        let swept = sweep_in(dir.path()).await;
        assert_eq!(swept.len(), 1, "{swept:?}");
        assert_eq!(swept[0].pid, 4_194_999);
        assert_eq!(swept[0].removed, [made.display().to_string()]);
        assert!(!made.exists() && !dead.exists());
        assert!(kept.exists() && live.exists());
    }
}
