//! What more than one section draws with: the document being written, the charts it refers to,
//! and the formatting of figures. A leaf: the sections import it, it imports none of them.

use std::time::Duration;

use lockbench_core::records::bench::{BenchRow, LatencySummary};
use lockbench_core::records::ttl::{ProfileRuntime, TtlRecommendation};
use lockbench_core::stats::percentile_supported;
use lockbench_core::{
    RuntimeHistogram, format_count, format_readable, format_readable_s, format_readable_us,
    format_tail_us,
};
use lockbench_decision::Decision;

use crate::report::charts::{HBars, PercentileCurves, RefLine, RuntimeVsVolume, tick};
use crate::report::check_chart::ModelCheckChart;
use crate::report::doc::Block;
use crate::report::grid_chart::FaultGridChart;
use crate::report::lines::ContentionLines;
use crate::report::load::Inputs;
use crate::report::runtime_chart::{RuntimePanel, RuntimePanels};
use crate::report::timeline::FaultTimeline;

/// A chart to draw: its file stem and the chart.
pub enum ChartSpec {
    /// Percentile curves.
    Curves(String, PercentileCurves),
    /// Runtime against volume.
    Volume(String, RuntimeVsVolume),
    /// A job's runtime by percentile, in panels.
    Runtime(String, RuntimePanels),
    /// Horizontal bars.
    Bars(String, HBars),
    /// A fault-lab trial per backend.
    Timeline(String, FaultTimeline),
    /// Figures against contention, one line per backend and wait mode.
    Contention(String, ContentionLines),
    /// Past runs against the model.
    Check(String, ModelCheckChart),
    /// The fault grid.
    Grid(String, FaultGridChart),
}

impl ChartSpec {
    pub(crate) fn name(&self) -> &str {
        match self {
            ChartSpec::Curves(n, _)
            | ChartSpec::Volume(n, _)
            | ChartSpec::Runtime(n, _)
            | ChartSpec::Bars(n, _)
            | ChartSpec::Timeline(n, _)
            | ChartSpec::Contention(n, _)
            | ChartSpec::Check(n, _)
            | ChartSpec::Grid(n, _) => n,
        }
    }
}

/// What a section writes into: the document and its charts.
pub(crate) struct Doc {
    pub(crate) blocks: Vec<Block>,
    pub(crate) charts: Vec<ChartSpec>,
}

impl Doc {
    pub(crate) fn push(&mut self, block: Block) {
        self.blocks.push(block);
    }

    /// Puts a chart in the text where it is referred to, and in the list of charts to draw.
    pub(crate) fn chart(&mut self, caption: String, spec: ChartSpec) {
        self.blocks.push(Block::Chart {
            name: spec.name().to_string(),
            caption,
        });
        self.charts.push(spec);
    }
}

/// A duration in the unit that fits it, three significant figures: `70.0 min`, `86.0 s`.
pub(crate) fn secs(d: Duration) -> String {
    format_readable(d)
}

/// [`secs`] of a number of seconds.
pub(crate) fn secs_f(seconds: f64) -> String {
    format_readable_s(seconds)
}

/// A latency in microseconds, in the unit that fits it: `0.35 us`, `7.07 ms`, `583 ms`.
pub(crate) fn us(x: f64) -> String {
    format_readable_us(x)
}

/// A number as the JSON record holds it (`3.0`, `0.1`), the way a reader will find it there.
pub(crate) fn number(x: f64) -> String {
    serde_json::Number::from_f64(x).map_or_else(|| x.to_string(), |n| n.to_string())
}

/// Every benchmark row, in the order the directories were given.
pub(crate) fn bench_rows(evidence: &Inputs) -> Vec<&BenchRow> {
    evidence
        .benches
        .iter()
        .flat_map(|b| &b.record.results)
        .collect()
}

/// Percentile points of a histogram in seconds (or `scale` units), up to the nines its count
/// supports (at most 99.99 %).
pub(crate) fn curve_points(h: &RuntimeHistogram, scale: f64) -> Vec<(f64, f64)> {
    let count = h.count().max(1) as f64;
    let top = count.log10().clamp(1.0, 4.0);
    let steps = (top * 20.0).round() as usize;
    (0..=steps)
        .map(|k| {
            let x = top * k as f64 / steps as f64;
            let q = 1.0 - 10f64.powf(-x);
            (x, h.quantile(q).as_secs_f64() * scale)
        })
        .collect()
}

/// A profile's runtime curve at one scale: (profile, scale, (nines, seconds) points).
pub(crate) type ScaledCurve = (String, f64, Vec<(f64, f64)>);

/// The runtime histograms of a workload, from every simulate and ttl directory: (profile, scale,
/// curve points), at most eight.
pub(crate) fn workload_curves(evidence: &Inputs, workload: &str) -> Vec<ScaledCurve> {
    let mut curves: Vec<ScaledCurve> = Vec::new();
    for (tag, h) in evidence.runtime_histograms() {
        let parts: Vec<&str> = tag.split('/').collect();
        if parts.len() != 3 || parts[0] != workload || h.count() == 0 {
            continue;
        }
        let Some(scale) = parts[2]
            .strip_prefix("scale=")
            .and_then(|s| s.parse::<f64>().ok())
        else {
            continue;
        };
        if curves.iter().any(|(p, s, _)| p == parts[1] && *s == scale) {
            continue;
        }
        curves.push((parts[1].to_string(), scale, curve_points(h, 1.0)));
    }
    curves.truncate(8);
    curves
}

/// The horizontal lines of a runtime chart: the TTL and its alert at the scale they were derived
/// for, and today's TTL at today's volume.
#[derive(Default)]
pub(crate) struct RuntimeLines {
    /// The scale the TTL was derived at, with its lines.
    pub(crate) target: Option<(f64, Vec<RefLine>)>,
    /// Today's TTL, drawn over today's volume.
    pub(crate) today: Vec<RefLine>,
}

/// The runtime-by-percentile chart of `workload`: today's volume in one panel (with today's TTL),
/// the other scales in another (with the TTL and its alert); nothing when no histogram of it was
/// recorded.
pub(crate) fn runtime_chart(evidence: &Inputs, workload: &str, lines: RuntimeLines, doc: &mut Doc) {
    let curves = workload_curves(evidence, workload);
    if curves.is_empty() {
        return;
    }
    let label = |p: &str, s: f64| format!("{p} {}x", tick(&s));
    let (today, others): (Vec<_>, Vec<_>) = curves.into_iter().partition(|c| c.1 == 1.0);
    let target_scale = lines.target.as_ref().map(|t| t.0);
    let target_lines = lines.target.map(|t| t.1).unwrap_or_default();
    let mut panels = Vec::new();
    let mut described = Vec::new();
    if !today.is_empty() {
        let mut panel_lines = lines.today;
        if target_scale == Some(1.0) || others.is_empty() {
            panel_lines.extend(target_lines.clone());
        }
        described.extend(panel_lines.iter().map(|l| l.0.clone()));
        panels.push(RuntimePanel {
            title: "today's volume (1x)".to_string(),
            curves: today
                .iter()
                .map(|(p, s, c)| (label(p, *s), c.clone()))
                .collect(),
            lines: panel_lines,
        });
    }
    if !others.is_empty() {
        let panel_lines = if target_scale == Some(1.0) {
            Vec::new()
        } else {
            target_lines
        };
        described.extend(panel_lines.iter().map(|l| l.0.clone()));
        let mut scales: Vec<f64> = others.iter().map(|c| c.1).collect();
        scales.sort_by(f64::total_cmp);
        scales.dedup();
        let scales: Vec<String> = scales.iter().map(|s| format!("{}x", tick(s))).collect();
        panels.push(RuntimePanel {
            title: format!("simulated at {}", scales.join(", ")),
            curves: others
                .iter()
                .map(|(p, s, c)| (label(p, *s), c.clone()))
                .collect(),
            lines: panel_lines,
        });
    }
    let caption = if described.is_empty() {
        format!("{workload}: job runtime by percentile, per profile and scale")
    } else {
        format!(
            "{workload}: job runtime by percentile, per profile and scale, today's volume beside the scales simulated for the TTL, with {}",
            described.join(", ")
        )
    };
    let spec = ChartSpec::Runtime(
        format!("runtime-percentiles-{workload}"),
        RuntimePanels {
            title: format!("{workload}: job runtime distribution"),
            panels,
        },
    );
    doc.chart(caption, spec);
}

/// Where a TTL derivation's runtimes come from: "simulated: 2,000 replays of `month-end-incident`
/// at 18,000 customers, 10x today's volume".
pub(crate) fn simulated_at(r: &TtlRecommendation) -> String {
    format!(
        "simulated: {} replays of `{}` at {} {}{}",
        format_count(r.replays),
        r.profile,
        format_count(r.target_volume),
        r.unit,
        if r.target_scale == 1.0 {
            ", today's volume".to_string()
        } else {
            format!(", {}x today's volume", number(r.target_scale))
        }
    )
}

/// Today's TTL against today's volume, from the simulated rows at scale 1: how often the worst
/// profile outlives it, in words ("in more than half of its runs"), and the figures behind that.
pub(crate) fn today_against(
    evidence: &Inputs,
    r: &TtlRecommendation,
    ttl: Duration,
) -> Option<(&'static str, String)> {
    // The TTL record's own runs at today's volume, else a `simulate` run of the same workload.
    let t: ProfileRuntime = match r.today.iter().max_by_key(|t| t.max) {
        Some(t) => t.clone(),
        None => {
            let worst = evidence
                .simulations
                .iter()
                .flat_map(|s| &s.record.results)
                .filter(|row| row.workload == r.workload && row.scale == 1.0)
                .max_by(|a, b| a.runtime.p999.cmp(&b.runtime.p999))?;
            ProfileRuntime {
                profile: worst.profile.clone(),
                volume: worst.volume,
                replays: worst.runtime.replays,
                p50: worst.runtime.p50,
                p99: worst.runtime.p99,
                p999: worst.runtime.p999,
                max: worst.runtime.max,
            }
        }
    };
    // What the simulated sample shows, no more: a tail below the TTL bounds the share of the
    // replays that outlived it, not the chance per run.
    let how_often = if ttl < t.p50 {
        "by more than half of the simulated runs"
    } else if ttl < t.p99 {
        "by more than 1 in 100 of the simulated runs"
    } else if ttl < t.max {
        "by the slowest of the simulated runs"
    } else {
        "by none of the simulated runs"
    };
    Some((
        how_often,
        format!(
            "the slowest profile, `{}`, at {} {}: P50 {}, P99 {}, {} (simulated, {} replays)",
            t.profile,
            format_count(t.volume),
            r.unit,
            secs(t.p50),
            secs(t.p99),
            t.tail_said(),
            format_count(t.replays),
        ),
    ))
}

/// P50 / P99 / P99.9 of a latency, each only where its samples support it (100 for P99, 1,000
/// for P99.9); past that, the maximum with its count, once: "58 us / 421 us / max of 153: 2.1 ms".
pub(crate) fn tail_figures(s: &LatencySummary) -> String {
    let mut parts = vec![us(s.p50), format_tail_us(0.99, s.p99, s.count, s.max)];
    if percentile_supported(0.99, s.count) {
        parts.push(format_tail_us(0.999, s.p999, s.count, s.max));
    }
    parts.join(" / ")
}

/// The P99.9 of a latency where its samples support it, else its maximum (a bound above it).
pub(crate) fn p999_or_max(s: &LatencySummary) -> f64 {
    if percentile_supported(0.999, s.count) {
        s.p999
    } else {
        s.max
    }
}

/// The job's path to Postgres as its decision used it: "`direct` (measured: ...)", "`direct`
/// (assumed)".
pub(crate) fn postgres_via(d: &Decision) -> String {
    d.answers
        .iter()
        .find(|a| a.field == "postgres_via")
        .map_or("not known".to_string(), |a| {
            let (name, note) = a.value.split_once(' ').unwrap_or((&a.value, ""));
            let note = if a.given { note } else { "(assumed)" };
            format!("`{name}` {note}").trim_end().to_string()
        })
}
