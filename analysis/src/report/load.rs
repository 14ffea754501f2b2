//! Reading results directories back through the typed records of `lockbench_core::records`: the
//! manifest says which command wrote a directory and in which schema version; every file that
//! command writes is read through its type, so a missing or renamed field refuses the directory
//! instead of reaching the report as a blank.

use std::path::{Path, PathBuf};

use lockbench_core::RuntimeHistogram;
use lockbench_core::SpecRecord;
use lockbench_core::records::bench::{BenchCsvRow, BenchRecord};
use lockbench_core::records::faults::{FaultEventRow, FaultTrialRow, FaultsRecord};
use lockbench_core::records::model::{CheckRecord, CheckedRun};
use lockbench_core::records::replay::ReplayRecord;
use lockbench_core::records::simulate::{SimulationCsvRow, SimulationRecord};
use lockbench_core::records::ttl::TtlRecommendation;
use lockbench_core::records::{Body, MANIFEST, read_dir};
use lockbench_workloads::JobAnswers;

use super::error::ReportError;

/// Where a piece of evidence came from.
#[derive(Clone, Debug)]
pub struct Source {
    /// The results directory.
    pub path: PathBuf,
    /// How the report names it: the path as given, or the folder's own name when it was found
    /// inside a directory given (as `lockbench run` nests them).
    pub label: String,
    /// The command that wrote it.
    pub command: lockbench_core::RunKind,
    /// Its seed, when it has one.
    pub seed: Option<u64>,
    /// The git commit of the lockbench that wrote it, when known.
    pub git_commit: Option<String>,
    /// When it was written (Unix seconds).
    pub created_unix_s: u64,
    /// The specs it used, as its manifest recorded them.
    pub specs: Vec<SpecRecord>,
    /// The lock servers it measured, as its manifest recorded them (their URLs: the topology).
    pub servers: Vec<lockbench_core::ServerRecord>,
    /// How the lockbench that wrote it was built, when its manifest says.
    pub build: Option<lockbench_core::BuildProfile>,
    /// Where it ran.
    pub machine: lockbench_core::Machine,
}

/// Histograms of a results directory by tag.
pub type Histograms = Vec<(String, RuntimeHistogram)>;

/// A results directory of `simulate`.
#[derive(Clone, Debug)]
pub struct Simulation {
    /// Which directory.
    pub source: Source,
    /// Its `results.json`.
    pub record: SimulationRecord,
    /// Its `summary.csv`.
    pub rows: Vec<SimulationCsvRow>,
    /// Runtime histograms tagged `workload/profile/scale=X`.
    pub histograms: Histograms,
}

/// A results directory of `ttl`.
#[derive(Clone, Debug)]
pub struct Ttl {
    /// Which directory.
    pub source: Source,
    /// Its `results.json`: the recommendation.
    pub record: TtlRecommendation,
    /// Its `summary.csv`: every profile and scale simulated for it.
    pub rows: Vec<SimulationCsvRow>,
    /// Runtime histograms tagged `workload/profile/scale=X`.
    pub histograms: Histograms,
}

/// A results directory of `bench`.
#[derive(Clone, Debug)]
pub struct Bench {
    /// Which directory.
    pub source: Source,
    /// Its `results.json`.
    pub record: BenchRecord,
    /// Its `bench.csv`.
    pub rows: Vec<BenchCsvRow>,
    /// Latency histograms tagged `backend/mode/keys/c=N/metric`.
    pub histograms: Histograms,
    /// The rows measured through a client library (`bench --client`), taken out of `record`
    /// and `rows`: every section reads a backend's figures through lockbench's own client.
    pub library_rows: Vec<lockbench_core::records::bench::BenchRow>,
}

/// A results directory of `replay`.
#[derive(Clone, Debug)]
pub struct Replay {
    /// Which directory.
    pub source: Source,
    /// Its `results.json`.
    pub record: ReplayRecord,
}

/// A results directory of `faults`.
#[derive(Clone, Debug)]
pub struct Faults {
    /// Which directory.
    pub source: Source,
    /// Its `results.json`: the matrix.
    pub record: FaultsRecord,
    /// Its `trials.csv`.
    pub trials: Vec<FaultTrialRow>,
    /// Its `events.csv`: the protected resource's log.
    pub events: Vec<FaultEventRow>,
}

/// A `check` directory: past runs against the model.
#[derive(Clone, Debug)]
pub struct Check {
    pub source: Source,
    pub record: CheckRecord,
    pub runs: Vec<CheckedRun>,
}

/// Everything the report draws on, in the order the directories were given: the report's
/// inputs (the decision's are `lockbench_decision::Evidence`, made by [`Inputs::for_decision`]).
#[derive(Clone, Debug, Default)]
pub struct Inputs {
    /// `simulate` directories.
    pub simulations: Vec<Simulation>,
    /// `ttl` directories.
    pub ttls: Vec<Ttl>,
    /// `bench` directories.
    pub benches: Vec<Bench>,
    /// `replay` directories.
    pub replays: Vec<Replay>,
    /// `faults` directories.
    pub faults: Vec<Faults>,
    /// `check` directories.
    pub checks: Vec<Check>,
    /// Directories seen but not used (other commands), with why.
    pub skipped: Vec<(PathBuf, String)>,
}

impl Inputs {
    /// Every source, in order.
    pub fn sources(&self) -> Vec<&Source> {
        self.simulations
            .iter()
            .map(|r| &r.source)
            .chain(self.ttls.iter().map(|r| &r.source))
            .chain(self.benches.iter().map(|r| &r.source))
            .chain(self.replays.iter().map(|r| &r.source))
            .chain(self.faults.iter().map(|r| &r.source))
            .chain(self.checks.iter().map(|r| &r.source))
            .collect()
    }

    /// True when nothing was loaded.
    pub fn is_empty(&self) -> bool {
        self.simulations.is_empty()
            && self.ttls.is_empty()
            && self.benches.is_empty()
            && self.replays.is_empty()
            && self.faults.is_empty()
            && self.checks.is_empty()
    }

    /// The answers of every job a `ttl` or `simulate` directory simulated, from the specs their
    /// manifests recorded (the first record of a job wins; `ttl` directories come first).
    pub fn answers(&self) -> Result<Vec<JobAnswers>, ReportError> {
        let mut out: Vec<JobAnswers> = Vec::new();
        let sources = self
            .ttls
            .iter()
            .map(|t| &t.source)
            .chain(self.simulations.iter().map(|s| &s.source));
        for source in sources {
            for spec in &source.specs {
                let answers =
                    JobAnswers::from_spec_text(&spec.text, std::path::Path::new(&spec.path))
                        .map_err(|e| ReportError::Input {
                            path: source.path.join(MANIFEST),
                            message: format!("its recorded spec: {e}"),
                        })?;
                if !out.iter().any(|a| a.job == answers.job) {
                    out.push(answers);
                }
            }
        }
        Ok(out)
    }

    /// The decision of every job with answers, on this evidence.
    pub fn decisions(&self) -> Result<Vec<lockbench_decision::Decision>, ReportError> {
        let evidence = self.for_decision();
        Ok(self
            .answers()?
            .iter()
            .map(|a| lockbench_decision::decide(a, &evidence))
            .collect())
    }

    /// What was measured, as the decision rules take it.
    pub fn for_decision(&self) -> lockbench_decision::Evidence {
        lockbench_decision::Evidence::new(
            &self.faults.iter().map(|f| &f.record).collect::<Vec<_>>(),
            &self.benches.iter().map(|b| &b.record).collect::<Vec<_>>(),
            &self.ttls.iter().map(|t| &t.record).collect::<Vec<_>>(),
            &self.replays.iter().map(|r| &r.record).collect::<Vec<_>>(),
        )
    }

    /// Every runtime histogram, simulations first, then TTL derivations.
    pub fn runtime_histograms(&self) -> impl Iterator<Item = &(String, RuntimeHistogram)> {
        self.simulations
            .iter()
            .flat_map(|s| &s.histograms)
            .chain(self.ttls.iter().flat_map(|t| &t.histograms))
    }
}

/// Loads every results directory in `dirs`; a directory without a manifest is searched one level
/// down (the output of `lockbench run` holds one directory per step).
pub fn load(dirs: &[PathBuf]) -> Result<Inputs, ReportError> {
    let mut evidence = Inputs::default();
    for dir in dirs {
        if !dir.is_dir() {
            return Err(ReportError::Input {
                path: dir.clone(),
                message: "not a directory; expected a results directory written by lockbench"
                    .to_string(),
            });
        }
        if dir.join(MANIFEST).is_file() {
            load_one(dir, dir.display().to_string(), &mut evidence)?;
            continue;
        }
        let mut children: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(|e| ReportError::Input {
                path: dir.clone(),
                message: format!("cannot read it ({e})"),
            })?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.join(MANIFEST).is_file())
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

fn load_one(dir: &Path, label: String, evidence: &mut Inputs) -> Result<(), ReportError> {
    let read = read_dir(dir)?;
    let m = &read.manifest;
    let source = Source {
        path: dir.to_path_buf(),
        label,
        command: m.command,
        seed: m.seed,
        git_commit: m.git_commit.clone(),
        created_unix_s: m.created_unix_s,
        specs: m.specs.clone(),
        servers: m.backends.clone(),
        build: m.build,
        machine: m.machine.clone(),
    };
    let histograms = read.histograms;
    match read.body {
        Body::Simulate { record, rows } => evidence.simulations.push(Simulation {
            source,
            record,
            rows,
            histograms,
        }),
        Body::Ttl { record, rows } => evidence.ttls.push(Ttl {
            source,
            record: *record,
            rows,
            histograms,
        }),
        Body::Bench {
            mut record,
            mut rows,
        } => {
            let (library_rows, own) = std::mem::take(&mut record.results)
                .into_iter()
                .partition(|r| r.client.is_some());
            record.results = own;
            rows.retain(|r| r.client.is_none());
            // A library's histograms are tagged `backend+library/...`: not the backend's.
            let mut histograms = histograms;
            histograms.retain(|(tag, _)| !tag.split('/').next().unwrap_or("").contains('+'));
            evidence.benches.push(Bench {
                source,
                record,
                rows,
                histograms,
                library_rows,
            })
        }
        Body::Replay { record, .. } => evidence.replays.push(Replay {
            source,
            record: *record,
        }),
        Body::Faults {
            record,
            trials,
            events,
        } => evidence.faults.push(Faults {
            source,
            record: *record,
            trials,
            events,
        }),
        Body::Check { record, runs } => evidence.checks.push(Check {
            source,
            record: *record,
            runs,
        }),
        // A report folder is this command's own output, not evidence.
        Body::Report => {}
    }
    Ok(())
}
