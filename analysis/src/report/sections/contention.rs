//! Section 1's contention curves: handoff latency (P50 solid, P99 dashed), grants per second and
//! requests per grant (the herd cost) against the number of contenders on one key, one line per
//! backend and wait mode, from the benchmark's closed-loop rows.

use lockbench_core::records::bench::{BenchRow, KeySpread, LoopKind};

use super::common::{ChartSpec, Doc, bench_rows};
use lockbench_core::stats::percentile_supported;

use crate::report::charts::{HBars, Unit};
use crate::report::lines::{ContentionLines, Line};
use crate::report::load::Inputs;

/// (backend (wait mode), its rows by contenders).
fn series<'a>(rows: &[&'a BenchRow]) -> Vec<(String, Vec<&'a BenchRow>)> {
    let mut out: Vec<(String, Vec<&BenchRow>)> = Vec::new();
    for r in rows.iter().filter(|r| {
        r.mode == LoopKind::Closed && r.keys == KeySpread::One && !r.backend.in_process()
    }) {
        let label = format!("{} ({})", r.backend, r.wait_mode);
        match out.iter_mut().find(|(l, _)| *l == label) {
            Some((_, rs)) => rs.push(r),
            None => out.push((label, vec![r])),
        }
    }
    for (_, rs) in &mut out {
        rs.sort_by_key(|r| r.contenders);
        rs.dedup_by_key(|r| r.contenders);
    }
    out
}

pub(super) fn write(evidence: &Inputs, doc: &mut Doc) {
    let rows = bench_rows(evidence);
    let series = series(&rows);
    // Curves need two contention levels and a handoff somewhere (one contender never hands off).
    let curves = series.iter().any(|(_, rs)| rs.len() >= 2)
        && series
            .iter()
            .any(|(_, rs)| rs.iter().any(|r| r.handoff_us.count > 0));
    if !curves {
        return;
    }
    let (handoff, grants, herd) = lines(&series);
    let handoff_levels = handoff.iter().map(|l| l.points.len()).max().unwrap_or(0);
    if handoff_levels <= 1 {
        // One contention level with handoffs: its lines would be a column of dots, so bars.
        handoff_bars(&series, doc);
    } else {
        handoff_lines(handoff, doc);
    }
    doc.chart(
        "Grants per second against contenders on one key, per backend and wait mode".to_string(),
        ChartSpec::Contention(
            "contention-grants".to_string(),
            ContentionLines {
                title: "Grants per second against contention".to_string(),
                y_label: "grants/s".to_string(),
                log_y: true,
                unit: Unit::Plain,
                lines: grants,
            },
        ),
    );
    if herd.iter().any(|l| l.points.len() >= 2) {
        doc.chart(
            "Herd cost: requests the contenders sent to the server per grant, their waiting included, against contenders on one key (a queue stays flat; a herd or polling climbs)".to_string(),
            ChartSpec::Contention(
                "contention-requests".to_string(),
                ContentionLines {
                    title: "Requests per grant against contention".to_string(),
                    y_label: "requests per grant".to_string(),
                    log_y: true,
                    unit: Unit::Plain,
                    lines: herd,
                },
            ),
        );
    }
}

/// The curves of each series (backend and wait mode): handoff P50 and P99, grants per second,
/// requests per grant.
fn lines(series: &[(String, Vec<&BenchRow>)]) -> (Vec<Line>, Vec<Line>, Vec<Line>) {
    let mut handoff = Vec::new();
    let mut grants = Vec::new();
    let mut herd = Vec::new();
    for (i, (label, rs)) in series.iter().enumerate() {
        let points = |f: &dyn Fn(&BenchRow) -> f64| -> Vec<(f64, f64)> {
            rs.iter()
                .filter(|r| r.handoff_us.count > 0)
                .map(|r| (r.contenders as f64, f(r)))
                .collect()
        };
        handoff.push(Line {
            label: format!("{label} P50"),
            points: points(&|r| r.handoff_us.p50),
            colour: i,
            dashed: false,
        });
        handoff.push(Line {
            label: format!("{label} P99"),
            points: points(&|r| r.handoff_us.p99),
            colour: i,
            dashed: true,
        });
        grants.push(Line {
            label: label.clone(),
            points: rs
                .iter()
                .map(|r| (r.contenders as f64, r.throughput_per_s))
                .collect(),
            colour: i,
            dashed: false,
        });
        herd.push(Line {
            label: label.clone(),
            points: rs
                .iter()
                .filter_map(|r| r.requests_per_grant.map(|n| (r.contenders as f64, n)))
                .collect(),
            colour: i,
            dashed: false,
        });
    }
    (handoff, grants, herd)
}

/// Handoff latency against contention, P50 solid and P99 dashed, per backend and wait mode.
fn handoff_lines(handoff: Vec<Line>, doc: &mut Doc) {
    doc.chart(
        "Handoff latency (from a release to the grant of a contender that was waiting for it; a releaser taking the lock straight back does not end it) against contenders on one key: P50 solid, P99 dashed, per backend and wait mode (log scales)".to_string(),
        ChartSpec::Contention(
            "contention-handoff".to_string(),
            ContentionLines {
                title: "Handoff latency against contention".to_string(),
                y_label: "handoff".to_string(),
                log_y: true,
                unit: Unit::Micros,
                lines: handoff,
            },
        ),
    );
}

/// Handoff latency at the one contention level measured: a P50 and a P99 bar per backend and wait
/// mode (a P99 from fewer than 100 handoffs is left out, see `percentile_supported`).
fn handoff_bars(series: &[(String, Vec<&BenchRow>)], doc: &mut Doc) {
    let mut level = 0;
    let rows: Vec<(String, Vec<f64>)> = series
        .iter()
        .filter_map(|(label, rs)| {
            let r = rs.iter().find(|r| r.handoff_us.count > 0)?;
            level = level.max(r.contenders);
            let p99 = if percentile_supported(0.99, r.handoff_us.count) {
                r.handoff_us.p99
            } else {
                f64::NAN
            };
            Some((label.clone(), vec![r.handoff_us.p50, p99]))
        })
        .collect();
    doc.chart(
        format!("Handoff latency (from a release to the grant of a contender that was waiting for it; a releaser taking the lock straight back does not end it) at {level} contenders on one key, the one level with handoffs measured: P50 and P99 per backend and wait mode (log scale)"),
        ChartSpec::Bars(
            "contention-handoff".to_string(),
            HBars {
                title: format!("Handoff latency at {level} contenders"),
                x_label: "handoff".to_string(),
                log_x: true,
                unit: Unit::Micros,
                series: vec!["P50".to_string(), "P99".to_string()],
                rows,
            },
        ),
    );
}
