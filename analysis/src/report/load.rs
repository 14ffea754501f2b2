//! Reading results directories back: the manifest says which command wrote a directory, its
//! `results.json` and HdrHistogram logs carry the figures.

use std::path::{Path, PathBuf};

use lockbench_core::{RuntimeHistogram, read_interval_log};
use serde_json::Value;

use super::ReportError;

/// Where a piece of evidence came from.
#[derive(Clone, Debug)]
pub struct Source {
    /// The results directory.
    pub path: PathBuf,
    /// How the report names it: the path as given, or the folder's own name when it was found
    /// inside a directory given (as `lockbench run` nests them).
    pub label: String,
    /// The command that wrote it (`simulate`, `ttl`, `bench`, `replay`).
    pub command: String,
    /// Its seed, when it has one.
    pub seed: Option<u64>,
    /// The git commit of the lockbench that wrote it.
    pub git_commit: Option<String>,
    /// When it was written (Unix seconds).
    pub created_unix_s: Option<u64>,
}

/// A results directory of `simulate` or `ttl`: its JSON and its runtime histograms, tagged
/// `workload/profile/scale=X`.
#[derive(Clone, Debug)]
pub struct Runtimes {
    /// Which directory.
    pub source: Source,
    /// What `--json` printed.
    pub json: Value,
    /// Runtime histograms by tag.
    pub histograms: Vec<(String, RuntimeHistogram)>,
}

/// A results directory of `bench`: its JSON and its latency histograms, tagged
/// `backend/mode/keys/c=N/metric`.
#[derive(Clone, Debug)]
pub struct Bench {
    /// Which directory.
    pub source: Source,
    /// What `--json` printed.
    pub json: Value,
    /// Latency histograms by tag.
    pub histograms: Vec<(String, RuntimeHistogram)>,
}

/// A results directory of `replay`.
#[derive(Clone, Debug)]
pub struct Replay {
    /// Which directory.
    pub source: Source,
    /// What `--json` printed.
    pub json: Value,
}

/// Everything the report draws on, in the order the directories were given.
#[derive(Clone, Debug, Default)]
pub struct Evidence {
    /// `simulate` directories.
    pub simulations: Vec<Runtimes>,
    /// `ttl` directories.
    pub ttls: Vec<Runtimes>,
    /// `bench` directories.
    pub benches: Vec<Bench>,
    /// `replay` directories.
    pub replays: Vec<Replay>,
    /// Directories seen but not used (other commands), with why.
    pub skipped: Vec<(PathBuf, String)>,
}

impl Evidence {
    /// Every source, in order.
    pub fn sources(&self) -> Vec<&Source> {
        self.simulations
            .iter()
            .map(|r| &r.source)
            .chain(self.ttls.iter().map(|r| &r.source))
            .chain(self.benches.iter().map(|r| &r.source))
            .chain(self.replays.iter().map(|r| &r.source))
            .collect()
    }

    /// True when nothing was loaded.
    pub fn is_empty(&self) -> bool {
        self.simulations.is_empty()
            && self.ttls.is_empty()
            && self.benches.is_empty()
            && self.replays.is_empty()
    }
}

/// Loads every results directory in `dirs`; a directory without a manifest is searched one level
/// down (the output of `lockbench run` holds one directory per step).
pub fn load(dirs: &[PathBuf]) -> Result<Evidence, ReportError> {
    let mut evidence = Evidence::default();
    for dir in dirs {
        if !dir.is_dir() {
            return Err(ReportError::Input {
                path: dir.clone(),
                message: "not a directory; expected a results directory written by lockbench"
                    .to_string(),
            });
        }
        if dir.join("manifest.json").is_file() {
            load_one(dir, dir.display().to_string(), &mut evidence)?;
            continue;
        }
        let mut children: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(|e| io_error(dir, e))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.join("manifest.json").is_file())
            .collect();
        children.sort();
        if children.is_empty() {
            return Err(ReportError::Input {
                path: dir.clone(),
                message: "no manifest.json in it or its subfolders; expected a results directory written by lockbench --out".to_string(),
            });
        }
        for child in children {
            let label = child.file_name().map_or_else(
                || child.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            );
            load_one(&child, label, &mut evidence)?;
        }
    }
    Ok(evidence)
}

fn io_error(path: &Path, e: std::io::Error) -> ReportError {
    ReportError::Input {
        path: path.to_path_buf(),
        message: format!("cannot read it ({e})"),
    }
}

fn read_json(path: &Path) -> Result<Value, ReportError> {
    let text = std::fs::read_to_string(path).map_err(|e| io_error(path, e))?;
    serde_json::from_str(&text).map_err(|e| ReportError::Input {
        path: path.to_path_buf(),
        message: format!("not valid JSON ({e})"),
    })
}

fn read_log(path: &Path) -> Result<Vec<(String, RuntimeHistogram)>, ReportError> {
    if !path.is_file() {
        return Ok(Vec::new());
    }
    let text = std::fs::read_to_string(path).map_err(|e| io_error(path, e))?;
    read_interval_log(&text).map_err(|e| ReportError::Input {
        path: path.to_path_buf(),
        message: format!("not a readable HdrHistogram log ({e})"),
    })
}

fn load_one(dir: &Path, label: String, evidence: &mut Evidence) -> Result<(), ReportError> {
    let manifest = read_json(&dir.join("manifest.json"))?;
    let command = manifest["command"].as_str().unwrap_or("").to_string();
    let source = Source {
        path: dir.to_path_buf(),
        label,
        command: command.clone(),
        seed: manifest["seed"].as_u64(),
        git_commit: manifest["git_commit"].as_str().map(str::to_string),
        created_unix_s: manifest["created_unix_s"].as_u64(),
    };
    let results = dir.join("results.json");
    match command.as_str() {
        "simulate" | "ttl" => {
            let runtimes = Runtimes {
                json: read_json(&results)?,
                histograms: read_log(&dir.join("runtimes.hlog"))?,
                source,
            };
            if command == "ttl" {
                evidence.ttls.push(runtimes);
            } else {
                evidence.simulations.push(runtimes);
            }
        }
        "bench" => evidence.benches.push(Bench {
            json: read_json(&results)?,
            histograms: read_log(&dir.join("latency.hlog"))?,
            source,
        }),
        "replay" => evidence.replays.push(Replay {
            json: read_json(&results)?,
            source,
        }),
        other => evidence.skipped.push((
            dir.to_path_buf(),
            format!("written by `{other}`, which the report does not read"),
        )),
    }
    Ok(())
}
