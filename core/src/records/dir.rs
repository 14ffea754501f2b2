//! Reading a results directory back through the records that wrote it: the manifest first (its
//! schema version and command), then every file that command writes, each through its type.

use std::path::Path;

use serde::Deserialize;

use super::bench::{self, BenchCsvRow, BenchRecord};
use super::codec::{MANIFEST, RESULTS_JSON, RecordError, SCHEMA_VERSION, from_csv, from_json};
use super::exact::{self, ExactRecord};
use super::faults::{self, FaultEventRow, FaultTrialRow, FaultsRecord};
use super::manifest::{Manifest, RunKind};
use super::model::{self, CheckRecord, CheckedRun};
use super::replay::{self, JobRunRecord, ReplayRecord};
use super::simulate::{self, SimulationCsvRow, SimulationRecord};
use super::ttl::TtlRecommendation;
use crate::histogram::{RuntimeHistogram, read_interval_log};

/// A results directory as read.
#[derive(Clone, Debug)]
pub struct ResultsRead {
    /// Its manifest.
    pub manifest: Manifest,
    /// Its records, by the command that wrote it.
    pub body: Body,
    /// Its HdrHistogram log, by tag (empty for a command that writes none), with the exact
    /// figures of `exact.json` where the command writes one (simulate, ttl, bench).
    pub histograms: Vec<(String, RuntimeHistogram)>,
}

/// The records of one results directory.
#[derive(Clone, Debug)]
pub enum Body {
    /// `simulate`.
    Simulate {
        /// `results.json`.
        record: SimulationRecord,
        /// `summary.csv`.
        rows: Vec<SimulationCsvRow>,
    },
    /// `ttl`.
    Ttl {
        /// `results.json`.
        record: Box<TtlRecommendation>,
        /// `summary.csv`: every profile and scale it simulated.
        rows: Vec<SimulationCsvRow>,
    },
    /// `bench`.
    Bench {
        /// `results.json`.
        record: BenchRecord,
        /// `bench.csv`.
        rows: Vec<BenchCsvRow>,
    },
    /// `replay`.
    Replay {
        /// `results.json`.
        record: Box<ReplayRecord>,
        /// `replay.csv`.
        rows: Vec<JobRunRecord>,
    },
    /// `faults`.
    Faults {
        /// `results.json`: the matrix.
        record: Box<FaultsRecord>,
        /// `trials.csv`.
        trials: Vec<FaultTrialRow>,
        /// `events.csv`.
        events: Vec<FaultEventRow>,
    },
    /// `check`.
    Check {
        /// `results.json`.
        record: Box<CheckRecord>,
        /// `runs.csv`.
        runs: Vec<CheckedRun>,
    },
    /// A decision record (`report`): no records another report reads.
    Report,
}

/// Just enough of a manifest to know whether the rest can be read.
#[derive(Deserialize)]
struct Probe {
    schema_version: Option<serde_json::Value>,
}

fn read(file: &Path) -> Result<Vec<u8>, RecordError> {
    crate::input::read_input(file, crate::input::InputKind::Record).map_err(|e| {
        RecordError::Unreadable {
            file: file.to_path_buf(),
            message: format!("{e}; expected a results directory written by lockbench --out"),
        }
    })
}

/// Each histogram of a log with its exact figures: every tag must have them, and nothing else.
fn with_exact(
    logged: Vec<(String, RuntimeHistogram)>,
    record: &ExactRecord,
) -> Result<Vec<(String, RuntimeHistogram)>, String> {
    if record.histograms.len() != logged.len() {
        return Err(format!(
            "{} histograms described, but the log holds {}",
            record.histograms.len(),
            logged.len()
        ));
    }
    // In the log's order: a tag may repeat (the same profile and scale given twice).
    logged
        .into_iter()
        .zip(&record.histograms)
        .enumerate()
        .map(|(i, ((tag, h), exact))| {
            if exact.tag != tag {
                return Err(format!(
                    "entry {} describes `{}`, but the log's histogram {} is `{tag}`",
                    i + 1,
                    exact.tag,
                    i + 1
                ));
            }
            let h = h
                .with_exact(&exact.figures)
                .map_err(|e| format!("`{tag}`: {e}"))?;
            Ok((tag, h))
        })
        .collect()
}

fn histograms(file: &Path) -> Result<Vec<(String, RuntimeHistogram)>, RecordError> {
    let bytes = read(file)?;
    let text = String::from_utf8_lossy(&bytes);
    read_interval_log(&text).map_err(|e| RecordError::Unreadable {
        file: file.to_path_buf(),
        message: format!("not a readable HdrHistogram log ({e})"),
    })
}

/// Reads the manifest, checks its schema version, then reads every record of its command.
pub fn read_dir(dir: &Path) -> Result<ResultsRead, RecordError> {
    let manifest_file = dir.join(MANIFEST);
    let bytes = read(&manifest_file)?;
    let probe: Probe = from_json(&manifest_file, &bytes)?;
    let found = probe.schema_version.as_ref().and_then(|v| v.as_u64());
    if found != Some(u64::from(SCHEMA_VERSION)) {
        let hint = match found {
            Some(v) if v > u64::from(SCHEMA_VERSION) => {
                "it was written by a newer lockbench: report it with that version"
            }
            _ => "it was written by an older lockbench: run the command again with this version",
        };
        return Err(RecordError::Version {
            file: manifest_file,
            found: probe
                .schema_version
                .map_or("missing".to_string(), |v| v.to_string()),
            hint,
        });
    }
    let manifest: Manifest = from_json(&manifest_file, &bytes)?;
    let load = |name: &str| -> Result<(std::path::PathBuf, Vec<u8>), RecordError> {
        let file = dir.join(name);
        let bytes = read(&file)?;
        Ok((file, bytes))
    };
    let (body, log) = match manifest.command {
        RunKind::Simulate | RunKind::Ttl => {
            let (file, bytes) = load(RESULTS_JSON)?;
            let (csv_file, csv_bytes) = load(simulate::CSV)?;
            let rows = from_csv(&csv_file, &csv_bytes)?;
            let body = if manifest.command == RunKind::Ttl {
                Body::Ttl {
                    record: Box::new(from_json(&file, &bytes)?),
                    rows,
                }
            } else {
                Body::Simulate {
                    record: from_json(&file, &bytes)?,
                    rows,
                }
            };
            (body, Some(simulate::HISTOGRAMS))
        }
        RunKind::Bench => {
            let (file, bytes) = load(RESULTS_JSON)?;
            let (csv_file, csv_bytes) = load(bench::CSV)?;
            let body = Body::Bench {
                record: from_json(&file, &bytes)?,
                rows: from_csv(&csv_file, &csv_bytes)?,
            };
            (body, Some(bench::HISTOGRAMS))
        }
        RunKind::Replay => {
            let (file, bytes) = load(RESULTS_JSON)?;
            let (csv_file, csv_bytes) = load(replay::CSV)?;
            let body = Body::Replay {
                record: Box::new(from_json(&file, &bytes)?),
                rows: from_csv(&csv_file, &csv_bytes)?,
            };
            (body, Some(replay::HISTOGRAMS))
        }
        RunKind::Faults => {
            let (file, bytes) = load(RESULTS_JSON)?;
            let (trials_file, trials_bytes) = load(faults::CSV)?;
            let (events_file, events_bytes) = load(faults::EVENTS_CSV)?;
            let record: faults::FaultsRecord = from_json(&file, &bytes)?;
            let trials = from_csv(&trials_file, &trials_bytes)?;
            let events = from_csv(&events_file, &events_bytes)?;
            faults::check_rows(&record, &trials, &events).map_err(|mismatch| {
                let (file, message) = match mismatch {
                    faults::RowsMismatch::Results(m) => (file, m),
                    faults::RowsMismatch::Trials(m) => (trials_file, m),
                    faults::RowsMismatch::Events(m) => (events_file, m),
                };
                RecordError::Unreadable { file, message }
            })?;
            let body = Body::Faults {
                record: Box::new(record),
                trials,
                events,
            };
            (body, None)
        }
        RunKind::Check => {
            let (file, bytes) = load(RESULTS_JSON)?;
            let (csv_file, csv_bytes) = load(model::CHECK_CSV)?;
            let body = Body::Check {
                record: Box::new(from_json(&file, &bytes)?),
                runs: from_csv(&csv_file, &csv_bytes)?,
            };
            (body, None)
        }
        RunKind::Report => (Body::Report, None),
    };
    let mut histograms = match log {
        Some(name) => histograms(&dir.join(name))?,
        None => Vec::new(),
    };
    if manifest.command.has_histograms() {
        let (file, bytes) = load(exact::EXACT)?;
        let record: ExactRecord = from_json(&file, &bytes)?;
        histograms =
            with_exact(histograms, &record).map_err(|message| RecordError::Unreadable {
                file: file.clone(),
                message,
            })?;
    }
    if let Body::Simulate { rows, .. } | Body::Ttl { rows, .. } = &body {
        summary_agrees(rows, &histograms).map_err(|message| RecordError::Unreadable {
            file: dir.join(simulate::CSV),
            message,
        })?;
    }
    Ok(ResultsRead {
        manifest,
        body,
        histograms,
    })
}

/// summary.csv is what its histograms say: a row per histogram, in the log's order, each row's
/// figures the ones summarised from its histogram. An edited or cut summary is refused, as merge
/// and report would otherwise pass it on.
fn summary_agrees(
    rows: &[SimulationCsvRow],
    histograms: &[(String, RuntimeHistogram)],
) -> Result<(), String> {
    if rows.len() != histograms.len() {
        return Err(format!(
            "{} rows for the log's {} histograms",
            rows.len(),
            histograms.len()
        ));
    }
    for (i, (row, (tag, histogram))) in rows.iter().zip(histograms).enumerate() {
        let from_log = SimulationCsvRow::from(&simulate::SimulationRow::new(
            &row.workload,
            &row.profile,
            row.scale,
            row.volume,
            &row.unit,
            histogram,
        ));
        if *row != from_log {
            return Err(format!(
                "row {} ({} / {} x{}) disagrees with its histogram `{tag}` in {} (P99.9 {} s against {} s)",
                i + 1,
                row.workload,
                row.profile,
                row.scale,
                simulate::HISTOGRAMS,
                row.runtime_p999_s,
                from_log.runtime_p999_s
            ));
        }
    }
    Ok(())
}
