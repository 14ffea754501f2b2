//! Sweeping what labs left: what a lab makes that cannot die with it (a network namespace and
//! with it its veth pair and nftables table, a subnet claim, a private server's directory, the
//! run's Postgres schema, its keys on a shared lock server) is written to its register
//! (`register`) before it is made. A lab killed with SIGKILL leaves its register, and [`sweep`]
//! (run by the next `lockbench faults`, or by `lockbench faults --clean`) removes what it names,
//! for labs that are no longer alive only.
//!
//! Private servers and workers are not here: they die with the lab (a parent-death signal).

use std::path::{Path, PathBuf};
use std::time::Duration;

use lockbench_locks::BackendConfig;

pub use crate::register::Leftover;
use crate::register::{PREFIX, SUFFIX, start_time};
use crate::resource::Resource;

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
        Leftover::Keys {
            backend,
            urls,
            namespace,
        } => {
            let config = BackendConfig::new(*backend, urls.clone(), namespace);
            let cleaned = match lockbench_locks::connect(&config).await {
                Ok(client) => {
                    let cleaned = client.purge_namespace().await;
                    let _ = client.close().await;
                    cleaned
                }
                Err(e) => Err(e),
            };
            match cleaned {
                Ok(()) => done
                    .removed
                    .push(format!("{} keys under {namespace}", backend.name())),
                Err(e) => done.failed.push(e.to_string()),
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
    use crate::register::{append, register_path};

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
