//! What more than one section draws with: the document being written, the charts it refers to,
//! and the formatting of figures. A leaf: the sections import it, it imports none of them.

use std::time::Duration;

use lockbench_core::records::bench::BenchRow;
use lockbench_core::{RuntimeHistogram, format_readable, format_readable_s, format_readable_us};

use crate::report::charts::{Curve, HBars, PercentileCurves, RefLine, RuntimeVsVolume, Unit};
use crate::report::check_chart::ModelCheckChart;
use crate::report::doc::Block;
use crate::report::grid_chart::FaultGridChart;
use crate::report::lines::ContentionLines;
use crate::report::load::Evidence;
use crate::report::timeline::FaultTimeline;

/// A chart to draw: its file stem and the chart.
pub enum ChartSpec {
    /// Percentile curves.
    Curves(String, PercentileCurves),
    /// Runtime against volume.
    Volume(String, RuntimeVsVolume),
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
pub(crate) fn bench_rows(evidence: &Evidence) -> Vec<&BenchRow> {
    evidence
        .benches
        .iter()
        .flat_map(|b| &b.record.results)
        .collect()
}

/// The worst value of `metric` over the networked backends (the in-process one excluded).
pub(crate) fn worst_networked(
    rows: &[&BenchRow],
    metric: impl Fn(&BenchRow) -> f64,
) -> Option<f64> {
    rows.iter()
        .filter(|r| r.backend != "memory")
        .map(|r| metric(r))
        .reduce(f64::max)
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

/// The runtime histograms of a workload, from every simulate and ttl directory.
pub(crate) fn workload_curves(evidence: &Evidence, workload: &str) -> Vec<Curve> {
    let mut curves: Vec<Curve> = Vec::new();
    for (tag, h) in evidence.runtime_histograms() {
        let parts: Vec<&str> = tag.split('/').collect();
        if parts.len() != 3 || parts[0] != workload || h.count() == 0 {
            continue;
        }
        let label = format!("{} {}", parts[1], parts[2].replace("scale=", "x"));
        if curves.iter().any(|(l, _)| *l == label) {
            continue;
        }
        curves.push((label, curve_points(h, 1.0)));
    }
    curves.truncate(8);
    curves
}

/// The runtime-by-percentile chart of `workload`, with `lines` (TTL, alert) when it has a TTL;
/// nothing when no histogram of it was recorded.
pub(crate) fn runtime_chart(
    evidence: &Evidence,
    workload: &str,
    lines: Vec<RefLine>,
    doc: &mut Doc,
) {
    let curves = workload_curves(evidence, workload);
    if curves.is_empty() {
        return;
    }
    let caption = if lines.is_empty() {
        format!("{workload}: job runtime by percentile, per profile and scale")
    } else {
        format!(
            "{workload}: job runtime by percentile, per profile and scale, with the TTL and the 80 % alert line"
        )
    };
    let spec = ChartSpec::Curves(
        format!("runtime-percentiles-{workload}"),
        PercentileCurves {
            title: format!("{workload}: job runtime distribution"),
            y_label: "runtime".to_string(),
            log_y: false,
            unit: Unit::Seconds,
            curves,
            lines,
        },
    );
    doc.chart(caption, spec);
}
