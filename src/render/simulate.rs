//! `simulate`'s table and its throughput line.

use std::fmt::Write as _;

use lockbench_core::records::simulate::{SimulationRecord, SimulationRow};
use lockbench_core::records::tail_samples_needed;
use lockbench_core::{format_column, format_count};

use super::table::seconds;
use super::table::table;

/// `simulate`'s terminal text: the table, then the throughput.
pub fn simulation_text(record: &SimulationRecord) -> String {
    format!(
        "{}\n{}\n",
        simulation_table(record),
        throughput_line(record)
    )
}

/// The `simulate` table, followed by any warnings about sample sizes.
pub fn simulation_table(record: &SimulationRecord) -> String {
    let mut out = String::new();
    let replays = record.results.first().map_or(0, |r| r.replays);
    let processes = if record.shards > 1 {
        format!(
            "{} shards of up to {} threads",
            record.shards, record.threads
        )
    } else {
        format!("{} threads", record.threads)
    };
    let _ = writeln!(
        out,
        "seed {} (rerun with --seed {} to reproduce), {} replays per row, {processes}\n",
        record.seed,
        record.seed,
        format_count(replays),
    );
    let header = [
        "workload",
        "profile",
        "scale",
        "volume",
        "P50",
        "P90",
        "P99",
        "P99.9",
        "max",
        "mean",
        "P99.9 95% CI",
    ];
    let rows: Vec<Vec<String>> = record.results.iter().map(table_row).collect();
    out.push_str(&table(&header, &rows, 2));
    if record.results.iter().any(|r| !r.p999_reliable) {
        let _ = writeln!(
            out,
            "\nnote: {} replays leave fewer than 10 runs above P99.9, so P99.9 is an anecdote, not an estimate; use --replays {} or more.",
            format_count(replays),
            tail_samples_needed(0.999)
        );
    }
    out
}

fn table_row(r: &SimulationRow) -> Vec<String> {
    let t = &r.runtime;
    let [lo, hi] = r.p999_ci_s.map(seconds);
    let ci = if r.p999_ci_open {
        format!("{} - unbounded", format_column(lo))
    } else {
        format!("{} - {}", format_column(lo), format_column(hi))
    };
    vec![
        r.workload.clone(),
        r.profile.clone(),
        format!("{}", r.scale),
        format!("{} {}", format_count(r.volume), r.unit),
        format_column(t.p50),
        format_column(t.p90),
        format_column(t.p99),
        format_column(t.p999),
        format_column(t.max),
        format_column(t.mean),
        ci,
    ]
}

/// One line on simulator speed; for a merged run, per process over the shards' summed time.
pub fn throughput_line(record: &SimulationRecord) -> String {
    let time = if record.shards > 1 {
        format!(
            "{:.2} s summed over {} shards",
            record.elapsed_s, record.shards
        )
    } else {
        format!("{:.2} s", record.elapsed_s)
    };
    format!(
        "simulated {} latency samples in {time}: {:.1} M samples/s{}; engine {}",
        format_count(record.latency_samples),
        record.samples_per_s / 1e6,
        if record.shards > 1 {
            " per process"
        } else {
            ""
        },
        engine_words(&record.engine)
    )
}

/// What the engine named in a record does, for the throughput line.
fn engine_words(engine: &str) -> String {
    match engine {
        "blocks" => "blocks: the calls between two events drawn as one sum per step, a sample \
                     counted per call it stands for (--engine exact draws each)"
            .into(),
        "exact" => "exact: every call drawn".into(),
        other => other.into(),
    }
}
