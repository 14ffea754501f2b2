//! `lockbench compare`: the change between two sets of results, metric by metric.

use std::fmt::Write as _;
use std::io::Write as _;
use std::process::ExitCode;

use anyhow::Result;
use lockbench_analysis::frames::{self, Change};
use lockbench_analysis::report;
use lockbench_decision::brief;

use crate::cli::CompareArgs;

/// What `compare --json` prints.
#[derive(serde::Serialize)]
struct Comparison {
    /// The first set of results.
    before: String,
    /// The second.
    after: String,
    /// Every metric of every row, before and after.
    changes: Vec<Change>,
    /// Each job both sets decide for: its decision before and after.
    decisions: Vec<DecisionChange>,
}

/// One job's decision on each set of results.
#[derive(serde::Serialize)]
struct DecisionChange {
    job: String,
    /// Backend, lock model and failure policy on the first set.
    before: String,
    /// The same on the second.
    after: String,
    /// True when they differ.
    changed: bool,
}

/// The decision of every job both sets hold answers for, in the first set's order.
fn decisions(before: &std::path::Path, after: &std::path::Path) -> Result<Vec<DecisionChange>> {
    let decided = |dir: &std::path::Path| -> Result<Vec<lockbench_decision::Decision>> {
        Ok(report::load(std::slice::from_ref(&dir.to_path_buf()))?.decisions()?)
    };
    let (b, a) = (decided(before)?, decided(after)?);
    Ok(b.iter()
        .filter_map(|d| {
            let other = a.iter().find(|o| o.job == d.job)?;
            let (before, after) = (brief(d), brief(other));
            Some(DecisionChange {
                job: d.job.clone(),
                changed: before != after,
                before,
                after,
            })
        })
        .collect())
}

pub fn run(args: &CompareArgs) -> Result<ExitCode> {
    let before = frames::load_frames(std::slice::from_ref(&args.before))?;
    let after = frames::load_frames(std::slice::from_ref(&args.after))?;
    let changes = frames::compare(&before, &after);
    let decisions = decisions(&args.before, &args.after)?;
    if args.json {
        let comparison = Comparison {
            before: args.before.display().to_string(),
            after: args.after.display().to_string(),
            changes,
            decisions,
        };
        std::io::stdout().write_all(&lockbench_core::records::to_json(&comparison))?;
    } else {
        for d in &decisions {
            if d.changed {
                println!(
                    "decision  {}: the results lead elsewhere: {} before, {} after",
                    d.job, d.before, d.after
                );
            } else {
                println!("decision  {}: unchanged: {}", d.job, d.before);
            }
        }
        if !decisions.is_empty() {
            println!();
        }
        print!("{}", table(&changes));
    }
    Ok(ExitCode::SUCCESS)
}

fn value(v: Option<f64>) -> String {
    match v {
        None => "-".to_string(),
        Some(x) if x.abs() >= 1000.0 => format!("{x:.0}"),
        Some(x) if x.abs() >= 10.0 => format!("{x:.1}"),
        Some(x) => format!("{x:.3}"),
    }
}

/// One line per metric, one block per table; rows found on one side only show `-` on the other.
fn table(changes: &[Change]) -> String {
    let mut out = String::new();
    let mut tables: Vec<&str> = Vec::new();
    for c in changes {
        if !tables.contains(&c.table.as_str()) {
            tables.push(&c.table);
        }
    }
    for name in tables {
        let rows: Vec<&Change> = changes.iter().filter(|c| c.table == name).collect();
        let key_width = rows.iter().map(|c| c.key.len()).max().unwrap_or(3).max(3);
        if !out.is_empty() {
            out.push('\n');
        }
        let _ = writeln!(
            out,
            "{:<9} {:<key_width$} {:<27} {:>12} {:>12} {:>9}",
            "table", "key", "metric", "before", "after", "change"
        );
        for c in rows {
            let change = c
                .change_pct
                .map_or("-".to_string(), |p| format!("{p:+.1} %"));
            let _ = writeln!(
                out,
                "{:<9} {:<key_width$} {:<27} {:>12} {:>12} {:>9}",
                c.table,
                c.key,
                c.metric,
                value(c.before),
                value(c.after),
                change
            );
        }
    }
    if changes.is_empty() {
        out.push_str("nothing in common to compare\n");
    }
    out
}
