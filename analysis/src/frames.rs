//! Results directories as polars data frames, and the change between two sets of them.
//!
//! Every `simulate` and `ttl` directory contributes its `summary.csv` rows to one runtimes frame,
//! every `bench` directory its `bench.csv` rows to one backends frame, every `replay` directory
//! its `results.json` to one replays frame, every `faults` directory its cells to one faults
//! frame, every `ttl` directory its recommendation to one ttls frame; each file is read through
//! its typed record
//! (`lockbench_core::records`), so a column missing or renamed refuses the directory. [`compare`]
//! joins two such sets on their keys (workload, profile, scale; backend, mode, keys, wait mode,
//! contenders; backend, workload, profile, scale, lock mode; scenario/variant, backend; workload,
//! target scale) and gives
//! each metric before, after and the change.

use std::path::{Path, PathBuf};

use lockbench_core::records::bench::BenchCsvRow;
use lockbench_core::records::faults::FaultCell;
use lockbench_core::records::replay::{HoldMode, ReplayRecord};
use lockbench_core::records::simulate::SimulationCsvRow;
use lockbench_core::records::ttl::TtlRecommendation;
use polars::prelude::*;
use serde::Serialize;

use crate::report::{Evidence, ReportError};

/// The frames of one set of results directories.
pub struct Frames {
    /// One row per workload, profile and scale simulated.
    pub runtimes: DataFrame,
    /// One row per backend, mode, key mode and contention level.
    pub bench: DataFrame,
    /// One row per live replay.
    pub replays: DataFrame,
    /// One row per fault-lab cell.
    pub faults: DataFrame,
    /// One row per TTL derivation: the TTL, the lease and their risks.
    pub ttls: DataFrame,
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
    keys: &["backend", "mode", "keys", "wait_mode", "contenders"],
    metrics: &[
        "acquire_p50_us",
        "acquire_p99_us",
        "acquire_p999_us",
        "handoff_p99_us",
        "requests_per_grant",
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

const TTLS: Table = Table {
    name: "ttls",
    keys: &["workload", "target_scale"],
    metrics: &[
        "measured_p999_s",
        "ttl_s",
        "current_ttl_p_exceed",
        "lease_ttl_s",
        "p_lease_lost",
        "p_lease_lost_upper95",
    ],
};

const FAULTS: Table = Table {
    name: "faults",
    keys: &["scenario", "backend"],
    metrics: &[
        "overlap_share",
        "overlap_max_s",
        "stale_writes",
        "stale_rejected_by_fence",
        "recovery_p50_s",
    ],
};

fn polars_error(path: &Path, e: PolarsError) -> ReportError {
    ReportError::Input {
        path: path.to_path_buf(),
        message: format!("cannot make a table of it ({e})"),
    }
}

/// The runtimes frame: every `summary.csv` row, the first of each key kept (a ttl directory
/// simulates the target scale again).
fn runtime_frame(rows: &[&SimulationCsvRow]) -> PolarsResult<DataFrame> {
    let mut kept: Vec<&SimulationCsvRow> = Vec::new();
    for r in rows {
        let same = |k: &&SimulationCsvRow| {
            k.workload == r.workload && k.profile == r.profile && k.scale == r.scale
        };
        if !kept.iter().any(same) {
            kept.push(r);
        }
    }
    let text = |f: fn(&SimulationCsvRow) -> &str| -> Vec<String> {
        kept.iter().map(|r| f(r).to_string()).collect()
    };
    let number =
        |f: fn(&SimulationCsvRow) -> f64| -> Vec<f64> { kept.iter().map(|r| f(r)).collect() };
    df!(
        "workload" => text(|r| &r.workload),
        "profile" => text(|r| &r.profile),
        "scale" => number(|r| r.scale),
        "runtime_p50_s" => number(|r| r.runtime_p50_s),
        "runtime_p99_s" => number(|r| r.runtime_p99_s),
        "runtime_p999_s" => number(|r| r.runtime_p999_s),
    )
}

/// The backends frame: every `bench.csv` row.
fn bench_frame(rows: &[&BenchCsvRow]) -> PolarsResult<DataFrame> {
    let text =
        |f: &dyn Fn(&BenchCsvRow) -> String| -> Vec<String> { rows.iter().map(|r| f(r)).collect() };
    let number = |f: fn(&BenchCsvRow) -> f64| -> Vec<f64> { rows.iter().map(|r| f(r)).collect() };
    df!(
        "backend" => text(&|r| r.backend.clone()),
        "mode" => text(&|r| r.mode.to_string()),
        "keys" => text(&|r| r.keys.to_string()),
        "wait_mode" => text(&|r| r.wait_mode.to_string()),
        "contenders" => text(&|r| r.contenders.to_string()),
        "acquire_p50_us" => number(|r| r.acquire_p50_us),
        "acquire_p99_us" => number(|r| r.acquire_p99_us),
        "acquire_p999_us" => number(|r| r.acquire_p999_us),
        "handoff_p99_us" => number(|r| r.handoff_p99_us),
        "requests_per_grant" => rows.iter().map(|r| r.requests_per_grant).collect::<Vec<Option<f64>>>(),
        "throughput_per_s" => number(|r| r.throughput_per_s),
    )
}

/// The replays frame: one row per `replay` directory.
fn replay_frame(rows: &[&ReplayRecord]) -> PolarsResult<DataFrame> {
    let text = |f: &dyn Fn(&ReplayRecord) -> String| -> Vec<String> {
        rows.iter().map(|r| f(r)).collect()
    };
    let number = |f: &dyn Fn(&ReplayRecord) -> Option<f64>| -> Vec<Option<f64>> {
        rows.iter().map(|r| f(r)).collect()
    };
    df!(
        "backend" => text(&|r| r.backend.clone()),
        "workload" => text(&|r| r.workload.clone()),
        "profile" => text(&|r| r.profile.clone()),
        "scale" => number(&|r| Some(r.scale)),
        "lock_mode" => text(&|r| {
            let mut m = match r.mode {
                HoldMode::Ttl => format!("ttl {}s", r.ttl_s),
                HoldMode::Heartbeat => "heartbeat".to_string(),
            };
            if r.fencing {
                m += " +fencing";
            }
            if r.idempotency_keys {
                m += " +keys";
            }
            m
        }),
        "runtime_p50_s" => number(&|r| Some(r.runtime_s.p50.as_secs_f64())),
        "double_executions" => number(&|r| Some(r.double_executions as f64)),
        "duplicate_charges_accepted" => number(&|r| r.duplicate_charges_accepted.map(|v| v as f64)),
        "stale_writes_rejected" => number(&|r| Some(r.stale_writes_rejected as f64)),
    )
}

/// The TTL frame: one row per `ttl` directory.
fn ttl_frame(rows: &[&TtlRecommendation]) -> PolarsResult<DataFrame> {
    let number = |f: &dyn Fn(&TtlRecommendation) -> Option<f64>| -> Vec<Option<f64>> {
        rows.iter().map(|r| f(r)).collect()
    };
    df!(
        "workload" => rows.iter().map(|r| r.workload.clone()).collect::<Vec<_>>(),
        "target_scale" => number(&|r| Some(r.target_scale)),
        "measured_p999_s" => number(&|r| Some(r.measured_p999.as_secs_f64())),
        "ttl_s" => number(&|r| Some(r.ttl.as_secs_f64())),
        "current_ttl_p_exceed" => number(&|r| r.current_ttl.as_ref().map(|c| c.p_exceed)),
        "lease_ttl_s" => number(&|r| Some(r.heartbeat.lease_ttl.as_secs_f64())),
        "p_lease_lost" => number(&|r| r.heartbeat.p_lease_lost),
        "p_lease_lost_upper95" => number(&|r| r.heartbeat.p_lease_lost_upper95),
    )
}

/// The faults frame: one row per cell, the overlap as the share of trials that overlapped (so
/// runs with different trial counts compare).
fn fault_frame(rows: &[&FaultCell]) -> PolarsResult<DataFrame> {
    let text =
        |f: &dyn Fn(&FaultCell) -> String| -> Vec<String> { rows.iter().map(|r| f(r)).collect() };
    let number = |f: &dyn Fn(&FaultCell) -> Option<f64>| -> Vec<Option<f64>> {
        rows.iter().map(|r| f(r)).collect()
    };
    df!(
        "scenario" => text(&|c| c.label()),
        "backend" => text(&|c| c.backend.clone()),
        "overlap_share" => number(&|c| {
            (c.trials > 0).then(|| f64::from(c.trials_with_overlap) / f64::from(c.trials))
        }),
        "overlap_max_s" => number(&|c| Some(c.overlap_max_s.unwrap_or(0.0))),
        "stale_writes" => number(&|c| Some(c.stale_writes as f64)),
        "stale_rejected_by_fence" => number(&|c| c.stale_rejected_by_fence.map(|v| v as f64)),
        "recovery_p50_s" => number(&|c| c.recovery_p50_s),
    )
}

/// Loads the frames of `dirs` (results directories or folders of them), every file read through
/// its record.
pub fn load_frames(dirs: &[PathBuf]) -> Result<Frames, ReportError> {
    let evidence: Evidence = crate::report::load(dirs)?;
    let first = dirs.first().cloned().unwrap_or_default();
    let runtime_rows: Vec<&SimulationCsvRow> = evidence
        .simulations
        .iter()
        .flat_map(|s| &s.rows)
        .chain(evidence.ttls.iter().flat_map(|t| &t.rows))
        .collect();
    let bench_rows: Vec<&BenchCsvRow> = evidence.benches.iter().flat_map(|b| &b.rows).collect();
    let replays: Vec<&ReplayRecord> = evidence.replays.iter().map(|r| &r.record).collect();
    let cells: Vec<&FaultCell> = evidence
        .faults
        .iter()
        .flat_map(|f| &f.record.cells)
        .collect();
    let frame = |f: PolarsResult<DataFrame>| f.map_err(|e| polars_error(&first, e));
    Ok(Frames {
        runtimes: frame(runtime_frame(&runtime_rows))?,
        bench: frame(bench_frame(&bench_rows))?,
        replays: frame(replay_frame(&replays))?,
        faults: frame(fault_frame(&cells))?,
        ttls: frame(ttl_frame(
            &evidence.ttls.iter().map(|t| &t.record).collect::<Vec<_>>(),
        ))?,
    })
}

/// One metric of one row, before and after.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Change {
    /// `runtimes`, `bench`, `replays`, `faults` or `ttls`.
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
        (&FAULTS, &a.faults, &b.faults),
        (&TTLS, &a.ttls, &b.ttls),
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
