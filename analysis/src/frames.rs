//! Results directories as polars data frames, and the change between two sets of them.
//!
//! Every `simulate` and `ttl` directory contributes its `summary.csv` to one runtimes frame, every
//! `bench` directory its `bench.csv` to one backends frame, every `replay` directory one row of its
//! `results.json` to one replays frame. [`compare`] joins two such sets on their keys (workload,
//! profile, scale; backend, mode, keys, contenders; backend, workload, profile, scale, mode) and
//! gives each metric before, after and the change.

use std::path::{Path, PathBuf};

use polars::prelude::*;
use serde::Serialize;

use crate::report::{Evidence, ReportError, Source};

/// The frames of one set of results directories.
pub struct Frames {
    /// One row per workload, profile and scale simulated.
    pub runtimes: DataFrame,
    /// One row per backend, mode, key mode and contention level.
    pub bench: DataFrame,
    /// One row per live replay.
    pub replays: DataFrame,
}

/// A kind of row, its keys and the metrics compared.
struct Table {
    name: &'static str,
    keys: &'static [&'static str],
    metrics: &'static [&'static str],
}

const RUNTIMES: Table = Table {
    name: "runtimes",
    keys: &["workload", "profile", "scale"],
    metrics: &["runtime_p50_s", "runtime_p99_s", "runtime_p999_s"],
};
const BENCH: Table = Table {
    name: "bench",
    keys: &["backend", "mode", "keys", "contenders"],
    metrics: &[
        "acquire_p50_us",
        "acquire_p99_us",
        "acquire_p999_us",
        "throughput_per_s",
    ],
};
const REPLAYS: Table = Table {
    name: "replays",
    keys: &["backend", "workload", "profile", "scale", "lock_mode"],
    metrics: &[
        "runtime_p50_s",
        "double_executions",
        "duplicate_charges_accepted",
        "stale_writes_rejected",
    ],
};

fn polars_error(path: &Path, e: PolarsError) -> ReportError {
    ReportError::Input {
        path: path.to_path_buf(),
        message: format!("cannot read it as a table ({e})"),
    }
}

fn read_csv(path: &Path) -> Result<DataFrame, ReportError> {
    let mut df = CsvReadOptions::default()
        .with_has_header(true)
        .try_into_reader_with_file_path(Some(path.to_path_buf()))
        .and_then(|r| r.finish())
        .map_err(|e| polars_error(path, e))?;
    // A file whose scales are all whole numbers reads them as integers: make every scale a float,
    // so that keys from different files (and the two sides of a comparison) read alike.
    if let Ok(scale) = df.column("scale") {
        let scale = scale
            .cast(&DataType::Float64)
            .map_err(|e| polars_error(path, e))?;
        df.with_column(scale).map_err(|e| polars_error(path, e))?;
    }
    Ok(df)
}

/// Stacks `frames` (same columns) into one; empty when there are none.
fn stack(frames: Vec<DataFrame>, path: &Path) -> Result<DataFrame, ReportError> {
    let mut frames = frames.into_iter();
    let Some(mut first) = frames.next() else {
        return Ok(DataFrame::empty());
    };
    for f in frames {
        first.vstack_mut(&f).map_err(|e| polars_error(path, e))?;
    }
    Ok(first)
}

fn csvs(sources: &[&Source], file: &str) -> Result<Vec<DataFrame>, ReportError> {
    sources
        .iter()
        .map(|s| s.path.join(file))
        .filter(|p| p.is_file())
        .map(|p| read_csv(&p))
        .collect()
}

/// Loads the frames of `dirs` (results directories or folders of them).
pub fn load_frames(dirs: &[PathBuf]) -> Result<Frames, ReportError> {
    let evidence: Evidence = crate::report::load(dirs)?;
    let first = dirs.first().cloned().unwrap_or_default();
    let runtime_sources: Vec<&Source> = evidence
        .simulations
        .iter()
        .chain(&evidence.ttls)
        .map(|r| &r.source)
        .collect();
    let bench_sources: Vec<&Source> = evidence.benches.iter().map(|b| &b.source).collect();
    let runtimes = stack(csvs(&runtime_sources, "summary.csv")?, &first)?;
    // A ttl directory simulates the target scale again: keep the first row of each key.
    let runtimes = if runtimes.height() > 0 {
        runtimes
            .unique_stable(
                Some(
                    &RUNTIMES
                        .keys
                        .iter()
                        .map(|k| k.to_string())
                        .collect::<Vec<_>>(),
                ),
                UniqueKeepStrategy::First,
                None,
            )
            .map_err(|e| polars_error(&first, e))?
    } else {
        runtimes
    };
    let bench = stack(csvs(&bench_sources, "bench.csv")?, &first)?;
    let replays = replay_frame(&evidence).map_err(|e| polars_error(&first, e))?;
    Ok(Frames {
        runtimes,
        bench,
        replays,
    })
}

fn replay_frame(evidence: &Evidence) -> PolarsResult<DataFrame> {
    let rows = &evidence.replays;
    let text = |f: &dyn Fn(&serde_json::Value) -> String| -> Vec<String> {
        rows.iter().map(|r| f(&r.json)).collect()
    };
    let number = |f: &dyn Fn(&serde_json::Value) -> Option<f64>| -> Vec<Option<f64>> {
        rows.iter().map(|r| f(&r.json)).collect()
    };
    let s = |v: &serde_json::Value| v.as_str().unwrap_or("").to_string();
    df!(
        "backend" => text(&|j| s(&j["backend"])),
        "workload" => text(&|j| s(&j["workload"])),
        "profile" => text(&|j| s(&j["profile"])),
        "scale" => number(&|j| j["scale"].as_f64()),
        "lock_mode" => text(&|j| {
            let mut m = match j["mode"].as_str() {
                Some("ttl") => format!("ttl {}s", j["ttl_s"].as_f64().unwrap_or(0.0)),
                _ => "heartbeat".to_string(),
            };
            if j["fencing"] == true {
                m += " +fencing";
            }
            if j["idempotency_keys"] == true {
                m += " +keys";
            }
            m
        }),
        "runtime_p50_s" => number(&|j| j["runtime_s"]["p50"].as_f64()),
        "double_executions" => number(&|j| j["double_executions"].as_f64()),
        "duplicate_charges_accepted" => number(&|j| j["duplicate_charges_accepted"].as_f64()),
        "stale_writes_rejected" => number(&|j| j["stale_writes_rejected"].as_f64()),
    )
}

/// One metric of one row, before and after.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Change {
    /// `runtimes`, `bench` or `replays`.
    pub table: String,
    /// The row's keys, `name=value` joined by spaces.
    pub key: String,
    /// Column compared.
    pub metric: String,
    /// Value in the first set; `None` when the row is only in the second.
    pub before: Option<f64>,
    /// Value in the second set; `None` when the row is only in the first.
    pub after: Option<f64>,
    /// (after - before) / before, in percent, when both exist and before is not zero.
    pub change_pct: Option<f64>,
}

/// The change of every metric from `a` to `b`, row by row.
pub fn compare(a: &Frames, b: &Frames) -> Result<Vec<Change>, ReportError> {
    let mut out = Vec::new();
    for (table, fa, fb) in [
        (&RUNTIMES, &a.runtimes, &b.runtimes),
        (&BENCH, &a.bench, &b.bench),
        (&REPLAYS, &a.replays, &b.replays),
    ] {
        out.extend(
            compare_table(table, fa, fb).map_err(|e| ReportError::Input {
                path: PathBuf::from(table.name),
                message: format!("cannot compare ({e})"),
            })?,
        );
    }
    Ok(out)
}

/// Keeps the key and metric columns, keys as text and metrics as floats so that both sides join
/// alike; `None` for an empty frame.
fn select(table: &Table, df: &DataFrame) -> PolarsResult<Option<DataFrame>> {
    if df.height() == 0 {
        return Ok(None);
    }
    let mut columns = Vec::new();
    for k in table.keys {
        columns.push(df.column(k)?.cast(&DataType::String)?);
    }
    for m in table.metrics {
        columns.push(df.column(m)?.cast(&DataType::Float64)?);
    }
    DataFrame::new_infer_height(columns).map(Some)
}

fn compare_table(table: &Table, a: &DataFrame, b: &DataFrame) -> PolarsResult<Vec<Change>> {
    let (Some(a), Some(b)) = (select(table, a)?, select(table, b)?) else {
        return Ok(Vec::new());
    };
    let joined = a.join(
        &b,
        table.keys.iter().copied(),
        table.keys.iter().copied(),
        JoinArgs::new(JoinType::Full)
            .with_coalesce(JoinCoalesce::CoalesceColumns)
            .with_suffix(Some("_after".into())),
        None,
    )?;
    let df = joined.sort(
        table
            .keys
            .iter()
            .map(|k| (*k).into())
            .collect::<Vec<PlSmallStr>>(),
        SortMultipleOptions::default(),
    )?;
    let mut out = Vec::new();
    for i in 0..df.height() {
        let mut key = Vec::new();
        for k in table.keys {
            let v = df.column(k)?.str()?.get(i).unwrap_or("").to_string();
            key.push(format!("{k}={v}"));
        }
        let key = key.join(" ");
        for m in table.metrics {
            let get = |name: &str| -> PolarsResult<Option<f64>> {
                Ok(df.column(name)?.f64()?.get(i).filter(|v| v.is_finite()))
            };
            let (before, after) = (get(m)?, get(&format!("{m}_after"))?);
            let change_pct = match (before, after) {
                (Some(b), Some(a)) if b != 0.0 => Some((a - b) / b * 100.0),
                _ => None,
            };
            out.push(Change {
                table: table.name.to_string(),
                key: key.clone(),
                metric: m.to_string(),
                before,
                after,
                change_pct,
            });
        }
    }
    Ok(out)
}
