//! `compare`'s terminal text: each job's decision before and after, then one line per metric.

use std::fmt::Write as _;

use lockbench_analysis::comparison::Comparison;
use lockbench_analysis::frames::Change;

/// The decisions, then the metrics table.
pub fn comparison_text(c: &Comparison) -> String {
    let mut out = String::new();
    for d in &c.decisions {
        if d.changed {
            let _ = writeln!(
                out,
                "decision  {}: the results lead elsewhere: {} before, {} after",
                d.job, d.before, d.after
            );
        } else {
            let _ = writeln!(out, "decision  {}: unchanged: {}", d.job, d.before);
        }
    }
    if !c.decisions.is_empty() {
        out.push('\n');
    }
    out.push_str(&table(&c.changes));
    out
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
