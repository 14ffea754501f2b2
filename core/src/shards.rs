//! The shards of a split run read back for `merge`: checked to belong to one run and to be all
//! there (one command, one run id, one shard count with every index once, the same seed, specs,
//! servers, start, build, and the same resolved settings compared one by one), their histograms
//! checked to have one shape, and the simulated runs' histograms added.

use std::path::{Path, PathBuf};

use crate::RuntimeHistogram;
use crate::records::manifest::{Manifest, ShardOrigin, ShardRecord};
use crate::records::simulate::SimulationRow;
use crate::records::{Body, RecordError, ResultsRead, read_dir};

/// Why shards cannot be merged, in one line naming the directory (or `merge`) it is about.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// A directory that cannot be read as results.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// Shards that do not make one whole run.
    #[error("{place}: {message}")]
    Refused { place: String, message: String },
}

/// A refusal about `dir`.
pub fn refuse(dir: &Path, message: impl Into<String>) -> MergeError {
    MergeError::Refused {
        place: dir.display().to_string(),
        message: message.into(),
    }
}

/// One shard: its directory, what it holds and its part of the run.
#[derive(Clone, Debug)]
pub struct ShardDir {
    pub dir: PathBuf,
    pub read: ResultsRead,
    pub shard: ShardRecord,
}

impl ShardDir {
    /// Where it came from, as the merged manifest's `merged_from` keeps it.
    pub fn origin(&self) -> ShardOrigin {
        ShardOrigin {
            shard: self.shard.clone(),
            hostname: self.read.manifest.machine.hostname.clone(),
            created_unix_s: self.read.manifest.created_unix_s,
            threads: self.read.manifest.threads,
            git_commit: self.read.manifest.git_commit.clone(),
        }
    }
}

/// Every shard of one run, in index order, checked to belong together.
#[derive(Clone, Debug)]
pub struct ShardSet {
    pub shards: Vec<ShardDir>,
}

impl ShardSet {
    /// Reads `dirs` and checks them: one run, all there, histograms of one shape.
    pub fn read(dirs: &[PathBuf]) -> Result<Self, MergeError> {
        let mut shards = Vec::new();
        for dir in dirs {
            let read = read_dir(dir)?;
            let shard = read.manifest.shard.clone().ok_or_else(|| {
                refuse(
                    dir,
                    format!(
                        "not a shard: its {} run was not split (run it with --shard I/N --run-id ID)",
                        read.manifest.command
                    ),
                )
            })?;
            shards.push(ShardDir {
                dir: dir.clone(),
                read,
                shard,
            });
        }
        Self::new(shards)
    }

    /// Checks shards already read: one run, all there, histograms of one shape.
    pub fn new(mut shards: Vec<ShardDir>) -> Result<Self, MergeError> {
        if shards.is_empty() {
            return Err(MergeError::Refused {
                place: "merge".to_string(),
                message: "no shard directory given".to_string(),
            });
        }
        shards.sort_by_key(|s| s.shard.index);
        let set = ShardSet { shards };
        set.belong_together()?;
        set.same_histograms()?;
        Ok(set)
    }

    /// The shard of index 0.
    pub fn first(&self) -> &ShardDir {
        &self.shards[0]
    }

    /// Where each shard came from.
    pub fn origins(&self) -> Vec<ShardOrigin> {
        self.shards.iter().map(ShardDir::origin).collect()
    }

    /// One run, all there: the same identity and settings, every index once.
    fn belong_together(&self) -> Result<(), MergeError> {
        let first = self.first();
        let expected = identity(first);
        for s in &self.shards[1..] {
            for ((what, a), (_, b)) in expected.iter().zip(identity(s)) {
                if *a != b {
                    return Err(refuse(
                        &s.dir,
                        format!(
                            "another run: its {what} is {b}, but {} has {a}",
                            first.dir.display()
                        ),
                    ));
                }
            }
            // Setting by setting, as each shard resolved its flags (`--seed 1` and `--seed=1`
            // alike).
            let (ours, theirs) = (&first.shard.settings, &s.shard.settings);
            for name in ours.keys().chain(theirs.keys()) {
                let (a, b) = (ours.get(name), theirs.get(name));
                if a != b {
                    return Err(refuse(
                        &s.dir,
                        format!(
                            "another run: its {name} is {}, but {} has {}",
                            or_none(b),
                            first.dir.display(),
                            or_none(a)
                        ),
                    ));
                }
            }
            let texts = |m: &Manifest| m.specs.iter().map(|x| x.text.clone()).collect::<Vec<_>>();
            if texts(&first.read.manifest) != texts(&s.read.manifest) {
                return Err(refuse(
                    &s.dir,
                    format!(
                        "another run: its specs differ from those of {}",
                        first.dir.display()
                    ),
                ));
            }
        }
        for pair in self.shards.windows(2) {
            if pair[0].shard.index == pair[1].shard.index {
                return Err(refuse(
                    &pair[1].dir,
                    format!(
                        "shard {} of {} given twice (also {})",
                        pair[1].shard.index,
                        pair[1].shard.count,
                        pair[0].dir.display()
                    ),
                ));
            }
        }
        let count = first.shard.count;
        let have: Vec<u64> = self.shards.iter().map(|s| s.shard.index).collect();
        if let Some(missing) = (0..count).find(|i| !have.contains(i)) {
            let list: Vec<String> = have.iter().map(u64::to_string).collect();
            return Err(MergeError::Refused {
                place: "merge".to_string(),
                message: format!(
                    "shard {missing} of {count} of run {} is missing (given: {})",
                    first.shard.run_id,
                    list.join(", ")
                ),
            });
        }
        Ok(())
    }

    /// Every shard holds the same histograms, in the same order, in the same unit and counting
    /// the same thresholds, and (bench) the same rows: otherwise they cannot be added.
    fn same_histograms(&self) -> Result<(), MergeError> {
        let first = self.first();
        let shape = |s: &ShardDir| -> Vec<(String, &'static str, Vec<u64>)> {
            s.read
                .histograms
                .iter()
                .map(|(tag, h)| {
                    let limits = h.exact().thresholds.iter().map(|t| t.limit_ns).collect();
                    (tag.clone(), h.unit_name(), limits)
                })
                .collect()
        };
        let rows = |s: &ShardDir| -> Vec<String> {
            match &s.read.body {
                Body::Bench { record, .. } => record.results.iter().map(|r| r.tag()).collect(),
                _ => Vec::new(),
            }
        };
        let expected = shape(first);
        if expected.is_empty() {
            return Err(refuse(
                &first.dir,
                "holds no histogram to merge (nothing was measured)",
            ));
        }
        for s in &self.shards[1..] {
            if shape(s) != expected {
                return Err(refuse(
                    &s.dir,
                    format!(
                        "its histograms (tags, unit or thresholds) are not those of {}",
                        first.dir.display()
                    ),
                ));
            }
            if rows(s) != rows(first) {
                return Err(refuse(
                    &s.dir,
                    format!("its rows are not those of {}", first.dir.display()),
                ));
            }
        }
        if let Body::Ttl { record, .. } = &first.read.body {
            let candidates = record.profiles_considered.len();
            if candidates == 0 || candidates + 2 > expected.len() {
                return Err(refuse(
                    &first.dir,
                    format!(
                        "names {candidates} candidate profiles but holds {} histograms",
                        expected.len()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Every simulated run of a simulate or ttl run, histograms added (their shapes were
    /// checked), rows summarised again from the sums: summary.csv names each run, in the log's
    /// order.
    pub fn merged_simulations(&self) -> Result<Vec<(SimulationRow, RuntimeHistogram)>, MergeError> {
        let first = self.first();
        let (Body::Simulate { rows, .. } | Body::Ttl { rows, .. }) = &first.read.body else {
            return Err(refuse(&first.dir, "has no summary rows"));
        };
        if rows.len() != first.read.histograms.len() {
            return Err(refuse(
                &first.dir,
                format!(
                    "summary.csv has {} rows for the log's {} histograms",
                    rows.len(),
                    first.read.histograms.len()
                ),
            ));
        }
        Ok(rows
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let mut sum: RuntimeHistogram = first.read.histograms[i].1.clone();
                for s in &self.shards[1..] {
                    sum.merge(&s.read.histograms[i].1);
                }
                let row =
                    SimulationRow::new(&r.workload, &r.profile, r.scale, r.volume, &r.unit, &sum);
                (row, sum)
            })
            .collect())
    }
}

/// An optional value as a person reads it: the value, or "none".
fn or_none<T: std::fmt::Display>(value: Option<T>) -> String {
    value.map_or_else(|| "none".to_string(), |v| v.to_string())
}

/// What every shard of one run has alike (the specs and settings apart), as (what, value).
fn identity(s: &ShardDir) -> [(&'static str, String); 7] {
    let m = &s.read.manifest;
    let servers: Vec<String> = m
        .backends
        .iter()
        .map(|b| format!("{} at {} (namespace {})", b.backend, b.urls, b.namespace))
        .collect();
    [
        ("command", m.command.to_string()),
        ("run id", s.shard.run_id.clone()),
        ("shard count", s.shard.count.to_string()),
        ("seed", or_none(m.seed)),
        (
            "servers",
            or_none((!servers.is_empty()).then(|| servers.join(", "))),
        ),
        (
            "start (--start-at, ms since the epoch)",
            or_none(s.shard.start_at_unix_ms),
        ),
        (
            "lockbench build",
            format!(
                "{} (commit {})",
                m.version,
                or_none(m.git_commit.as_deref())
            ),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed run's simulate directory as shard `index` of `count` of run "r", with one
    /// resolved setting.
    fn shard(index: u64, count: u64, replays: &str) -> ShardDir {
        let dir = PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../analysis/tests/fixtures/run/simulate"
        ));
        let read = read_dir(&dir).unwrap();
        let shard = ShardRecord {
            settings: [("replays".to_string(), replays.to_string())].into(),
            ..ShardRecord::new(index, count, "r")
        };
        ShardDir {
            dir: dir.join(format!("shard-{index}")),
            read,
            shard,
        }
    }

    fn refusal(e: MergeError) -> String {
        e.to_string().split_once("shard-").unwrap().1.to_string()
    }

    #[test]
    fn shards_of_one_run_add_their_histograms_whatever_order_they_come_in() {
        let set = ShardSet::new(vec![shard(1, 2, "1000"), shard(0, 2, "1000")]).unwrap();
        assert_eq!(set.first().shard.index, 0);
        let whole = &set.first().read.histograms;
        let merged = set.merged_simulations().unwrap();
        assert_eq!(merged.len(), whole.len());
        for ((row, sum), (_, one)) in merged.iter().zip(whole) {
            assert_eq!(sum.count(), 2 * one.count());
            assert_eq!(row.runtime.max, one.max());
        }
        assert_eq!(set.origins().len(), 2);
    }

    #[test]
    fn another_setting_a_missing_or_doubled_shard_is_refused_naming_it() {
        let e = ShardSet::new(vec![shard(0, 2, "1000"), shard(1, 2, "2000")]).unwrap_err();
        assert_eq!(
            refusal(e).split(", but").next().unwrap(),
            "1: another run: its replays is 2000"
        );
        let e = ShardSet::new(vec![shard(0, 3, "1"), shard(2, 3, "1")]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "merge: shard 1 of 3 of run r is missing (given: 0, 2)"
        );
        let e = ShardSet::new(vec![shard(0, 2, "1"), shard(0, 2, "1")]).unwrap_err();
        assert!(refusal(e).starts_with("0: shard 0 of 2 given twice"));
        let e = ShardSet::new(vec![shard(0, 2, "1"), shard(1, 3, "1")]).unwrap_err();
        assert!(refusal(e).starts_with("1: another run: its shard count is 3"));
    }
}
