//! The live replays (shared evidence): what went twice under each mode, and what fencing
//! refused, each finding naming its workload.

use lockbench_core::format_count;
use lockbench_core::records::replay::{HoldMode, ReplayRecord};

use super::common::{ChartSpec, Doc, number, secs, secs_f};
use crate::report::charts::{HBars, Unit};
use crate::report::doc::Block;
use crate::report::load::Inputs;

fn mode_label(r: &ReplayRecord) -> String {
    let mut label = match r.mode {
        HoldMode::Ttl => format!("TTL {}", secs_f(r.ttl_s)),
        HoldMode::Heartbeat => "heartbeat".to_string(),
    };
    if r.fencing {
        label += " + fencing";
    }
    if r.idempotency_keys {
        label += " + idempotency keys";
    }
    label
}

/// The story first (a fixed TTL, no defence), then each defence.
fn story_rank(r: &ReplayRecord) -> u8 {
    match (r.mode == HoldMode::Heartbeat, r.fencing, r.idempotency_keys) {
        (false, false, false) => 0,
        (true, false, false) => 1,
        (_, true, _) => 2,
        _ => 3,
    }
}

/// A count the workload may not have: charges for billing, a migration pointer for migrations.
fn optional_count(v: Option<u64>, absent: &str) -> String {
    v.map_or_else(|| absent.to_string(), format_count)
}

/// Section 4's evidence (its heading and each job's steps come first, from the decisions).
pub(super) fn write(evidence: &Inputs, doc: &mut Doc) {
    doc.push(Block::Heading(
        3,
        "Live replays, and what fencing refused".to_string(),
    ));
    if let Some(text) = super::faults::stale_writes(evidence) {
        doc.push(Block::Para(text));
    }
    if evidence.replays.is_empty() {
        doc.push(Block::Para(
            "No live replay in these results: run `lockbench replay` (or `lockbench run` with Postgres reachable) to see what each mode does to double executions.".to_string(),
        ));
        return;
    }
    doc.push(Block::Para(
        "Live replays: the job run for real against Postgres, a payment-API stub and the lock backend, with a retry worker taking the lock whenever the backend grants it. Runtimes are real-equivalent (compressed time divided by the time scale); the simulated P50 is the same spec, profile and scale in the simulator.".to_string(),
    ));
    replay_table(evidence, doc);
    doc.push(Block::List(findings(evidence)));
}

/// Every live replay in a table, and the same counts as bars.
fn replay_table(evidence: &Inputs, doc: &mut Doc) {
    let mut rows = Vec::new();
    let mut bars = Vec::new();
    let mut replays: Vec<&ReplayRecord> = evidence.replays.iter().map(|r| &r.record).collect();
    replays.sort_by_key(|r| story_rank(r));
    for r in replays {
        let label = mode_label(r);
        rows.push(vec![
            format!("`{}`", r.backend),
            format!("{} / {} x{}", r.workload, r.profile, number(r.scale)),
            label.clone(),
            r.runs.to_string(),
            secs(r.runtime_s.p50),
            r.simulated
                .as_ref()
                .map_or_else(|| "not compared".to_string(), |s| secs(s.runtime_s.p50)),
            format!(
                "{} (in {} runs)",
                format_count(r.double_executions),
                r.runs_with_double_execution
            ),
            optional_count(r.duplicate_charges_accepted, "no charges in this workload"),
            format_count(r.stale_writes_rejected),
        ]);
        bars.push((
            format!("{} {}", r.backend, label),
            vec![
                r.double_executions as f64,
                r.duplicate_charges_accepted.unwrap_or(0) as f64,
                r.stale_writes_rejected as f64,
            ],
        ));
    }
    doc.push(Block::Table {
        head: [
            "backend",
            "workload",
            "mode",
            "runs",
            "runtime P50",
            "simulated P50",
            "double executions",
            "duplicate charges accepted",
            "stale writes refused",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    });
    let spec = ChartSpec::Bars(
        "double-executions".to_string(),
        HBars {
            title: "Live replay: what went twice, by mode".to_string(),
            x_label: "items over all runs".to_string(),
            log_x: false,
            unit: Unit::Plain,
            series: vec![
                "double executions".into(),
                "duplicate charges accepted".into(),
                "stale writes refused".into(),
            ],
            rows: bars,
        },
    );
    let caption = "Double executions, duplicate charges accepted and stale writes refused, by live-replay mode";
    doc.chart(caption.to_string(), spec);
}

/// What the live replays showed, mode by mode, and what that makes of the lock.
fn findings(evidence: &Inputs) -> Vec<String> {
    let records = || evidence.replays.iter().map(|r| &r.record);
    let mut findings = Vec::new();
    if let Some(k) = records().find(|r| r.idempotency_keys) {
        findings.push(format!(
            "{}, with idempotency keys: both workers still ran ({} items executed twice) and the payment API accepted {} duplicate charges: the key, not the lock, keeps a charge single.",
            k.workload,
            format_count(k.double_executions),
            optional_count(k.duplicate_charges_accepted, "no")
        ));
    }
    if let Some(f) = records().find(|r| r.fencing) {
        findings.push(format!(
            "{}, with fencing: {} stale writes refused and the stale worker stopped, yet {} items still ran twice: a fencing token protects the store that checks it, not a payment API that does not.",
            f.workload,
            format_count(f.stale_writes_rejected),
            format_count(f.double_executions)
        ));
    }
    if let Some(h) = records().find(|r| r.mode == HoldMode::Heartbeat && !r.fencing) {
        findings.push(format!(
            "{}, with heartbeat renewal: the lock never expired under a running job: {} double executions in {} runs.",
            h.workload,
            format_count(h.double_executions),
            h.runs
        ));
    }
    findings
}
