//! Results directories as keyed tables (frames), and the change between two sets of them.
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

use std::collections::BTreeMap;
use std::path::PathBuf;

use lockbench_core::records::bench::BenchCsvRow;
use lockbench_core::records::faults::FaultCell;
use lockbench_core::records::replay::{HoldMode, ReplayRecord};
use lockbench_core::records::simulate::SimulationCsvRow;
use lockbench_core::records::ttl::TtlRecommendation;
use serde::Serialize;

use crate::report::{Inputs, ReportError};

/// The frames of one set of results directories.
pub struct Frames {
    /// One row per workload, profile and scale simulated.
    pub runtimes: Frame,
    /// One row per backend, mode, key mode and contention level.
    pub bench: Frame,
    /// One row per live replay.
    pub replays: Frame,
    /// One row per fault-lab cell.
    pub faults: Frame,
    /// One row per TTL derivation: the TTL, the lease and their risks.
    pub ttls: Frame,
}

/// A kind of row, its keys and the metrics compared.
#[derive(Debug)]
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

impl Table {
    /// An empty frame of this table.
    fn frame(&'static self) -> Frame {
        Frame {
            table: self,
            rows: Vec::new(),
        }
    }
}

/// The rows of one table: keys as text, metrics as numbers, in the table's column order.
#[derive(Clone, Debug)]
pub struct Frame {
    table: &'static Table,
    /// Every row, in the order the directories gave them.
    pub rows: Vec<Row>,
}

/// One row of a [`Frame`].
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The key columns' values, as the table names them.
    pub keys: Vec<String>,
    /// The metric columns' values; `None` where the record has none.
    pub metrics: Vec<Option<f64>>,
}

impl Frame {
    /// The number of rows.
    pub fn height(&self) -> usize {
        self.rows.len()
    }

    /// The key and metric column names, in order.
    pub fn columns(&self) -> impl Iterator<Item = &'static str> {
        self.table.keys.iter().chain(self.table.metrics).copied()
    }

    /// The value of key column `name` in row `row`.
    pub fn key(&self, row: usize, name: &str) -> Option<&str> {
        let at = self.table.keys.iter().position(|k| *k == name)?;
        self.rows.get(row).map(|r| r.keys[at].as_str())
    }

    /// The value of metric column `name` in row `row`.
    pub fn metric(&self, row: usize, name: &str) -> Option<f64> {
        let at = self.table.metrics.iter().position(|m| *m == name)?;
        self.rows.get(row).and_then(|r| r.metrics[at])
    }

    /// Sets metric column `name` of row `row`; false when there is no such cell.
    pub fn set_metric(&mut self, row: usize, name: &str, value: Option<f64>) -> bool {
        let Some(at) = self.table.metrics.iter().position(|m| *m == name) else {
            return false;
        };
        match self.rows.get_mut(row) {
            Some(r) => {
                r.metrics[at] = value;
                true
            }
            None => false,
        }
    }

    fn push(&mut self, keys: Vec<String>, metrics: Vec<Option<f64>>) {
        debug_assert_eq!(keys.len(), self.table.keys.len(), "{}", self.table.name);
        debug_assert_eq!(
            metrics.len(),
            self.table.metrics.len(),
            "{}",
            self.table.name
        );
        self.rows.push(Row { keys, metrics });
    }
}

/// A number as a key: `1.0`, `0.5`, as the results directories' names and earlier reports write it.
fn number_key(v: f64) -> String {
    format!("{v:?}")
}

/// The runtimes frame: every `summary.csv` row, the first of each key kept (a ttl directory
/// simulates the target scale again).
fn runtime_frame(rows: &[&SimulationCsvRow]) -> Frame {
    let mut frame = RUNTIMES.frame();
    for r in rows {
        let keys = vec![r.workload.clone(), r.profile.clone(), number_key(r.scale)];
        if frame.rows.iter().any(|k| k.keys == keys) {
            continue;
        }
        frame.push(
            keys,
            vec![
                Some(r.runtime_p50_s),
                Some(r.runtime_p99_s),
                Some(r.runtime_p999_s),
            ],
        );
    }
    frame
}

/// The backends frame: every `bench.csv` row.
fn bench_frame(rows: &[&BenchCsvRow]) -> Frame {
    let mut frame = BENCH.frame();
    for r in rows {
        frame.push(
            vec![
                r.backend.to_string(),
                r.mode.to_string(),
                r.keys.to_string(),
                r.wait_mode.to_string(),
                r.contenders.to_string(),
            ],
            vec![
                Some(r.acquire_p50_us),
                Some(r.acquire_p99_us),
                Some(r.acquire_p999_us),
                Some(r.handoff_p99_us),
                r.requests_per_grant,
                Some(r.throughput_per_s),
            ],
        );
    }
    frame
}

/// How a replay held its lock, as one key: `ttl 30s +fencing`, `heartbeat +keys`.
fn lock_mode(r: &ReplayRecord) -> String {
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
}

/// The replays frame: one row per `replay` directory.
fn replay_frame(rows: &[&ReplayRecord]) -> Frame {
    let mut frame = REPLAYS.frame();
    for r in rows {
        frame.push(
            vec![
                r.backend.to_string(),
                r.workload.clone(),
                r.profile.clone(),
                number_key(r.scale),
                lock_mode(r),
            ],
            vec![
                Some(r.runtime_s.p50.as_secs_f64()),
                Some(r.double_executions as f64),
                r.duplicate_charges_accepted.map(|v| v as f64),
                Some(r.stale_writes_rejected as f64),
            ],
        );
    }
    frame
}

/// The TTL frame: one row per `ttl` directory.
fn ttl_frame(rows: &[&TtlRecommendation]) -> Frame {
    let mut frame = TTLS.frame();
    for r in rows {
        frame.push(
            vec![r.workload.clone(), number_key(r.target_scale)],
            vec![
                Some(r.measured_p999.as_secs_f64()),
                Some(r.ttl.as_secs_f64()),
                r.current_ttl.as_ref().map(|c| c.p_exceed),
                Some(r.heartbeat.lease_ttl.as_secs_f64()),
                r.heartbeat.p_lease_lost,
                r.heartbeat.p_lease_lost_upper95,
            ],
        );
    }
    frame
}

/// The faults frame: one row per cell, the overlap as the share of trials that overlapped (so
/// runs with different trial counts compare).
fn fault_frame(rows: &[&FaultCell]) -> Frame {
    let mut frame = FAULTS.frame();
    for c in rows {
        frame.push(
            // A client library's cell is keyed by its backend and the library, so that compare
            // matches it with the same library's cell.
            vec![
                c.label(),
                match &c.client {
                    Some(used) => format!("{} via {}", c.backend, used.name),
                    None => c.backend.to_string(),
                },
            ],
            vec![
                (c.trials > 0).then(|| f64::from(c.trials_with_overlap) / f64::from(c.trials)),
                Some(c.overlap_max_s.unwrap_or(0.0)),
                Some(c.stale_writes as f64),
                c.stale_rejected_by_fence.map(|v| v as f64),
                c.recovery_p50_s,
            ],
        );
    }
    frame
}

/// Loads the frames of `dirs` (results directories or folders of them), every file read through
/// its record.
pub fn load_frames(dirs: &[PathBuf]) -> Result<Frames, ReportError> {
    let evidence: Inputs = crate::report::load(dirs)?;
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
    Ok(Frames {
        runtimes: runtime_frame(&runtime_rows),
        bench: bench_frame(&bench_rows),
        replays: replay_frame(&replays),
        faults: fault_frame(&cells),
        ttls: ttl_frame(&evidence.ttls.iter().map(|t| &t.record).collect::<Vec<_>>()),
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

/// The change of every metric from `a` to `b`, row by row: a full join on the table's keys, rows
/// in key order, a row on one side only compared with nothing.
pub fn compare(a: &Frames, b: &Frames) -> Vec<Change> {
    let mut out = Vec::new();
    for (fa, fb) in [
        (&a.runtimes, &b.runtimes),
        (&a.bench, &b.bench),
        (&a.replays, &b.replays),
        (&a.faults, &b.faults),
        (&a.ttls, &b.ttls),
    ] {
        compare_table(fa, fb, &mut out);
    }
    out
}

/// The rows of one side of a key, or one absent row: a key twice on one side pairs each of its
/// rows with each of the other side's, as a join does.
fn side(rows: Vec<&Row>) -> Vec<Option<&Row>> {
    if rows.is_empty() {
        vec![None]
    } else {
        rows.into_iter().map(Some).collect()
    }
}

fn compare_table(a: &Frame, b: &Frame, out: &mut Vec<Change>) {
    let table = a.table;
    let mut joined: BTreeMap<&[String], (Vec<&Row>, Vec<&Row>)> = BTreeMap::new();
    for r in &a.rows {
        joined.entry(&r.keys).or_default().0.push(r);
    }
    for r in &b.rows {
        joined.entry(&r.keys).or_default().1.push(r);
    }
    for (keys, (before, after)) in joined {
        let key = table
            .keys
            .iter()
            .zip(keys)
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ");
        let after = side(after);
        for rb in side(before) {
            for ra in &after {
                for (m, name) in table.metrics.iter().enumerate() {
                    let value =
                        |r: Option<&Row>| r.and_then(|r| r.metrics[m]).filter(|v| v.is_finite());
                    let (before, after) = (value(rb), value(*ra));
                    let change_pct = match (before, after) {
                        (Some(b), Some(a)) if b != 0.0 => Some((a - b) / b * 100.0),
                        _ => None,
                    };
                    out.push(Change {
                        table: table.name.to_string(),
                        key: key.clone(),
                        metric: name.to_string(),
                        before,
                        after,
                        change_pct,
                    });
                }
            }
        }
    }
}
