//! Reports: results directories in, a locking decision record out (`report.md`, a self-contained
//! `report.html`, every chart as PNG and SVG, and the alerting rules with their `promtool` tests).
//!
//! [`load`] reads what `simulate`, `ttl`, `bench`, `replay` and `faults` wrote with `--out` (a directory
//! without a manifest is searched one level down, as `lockbench run` nests them); [`build`] turns
//! that [`Inputs`] into the document and its charts. Nothing here knows how the figures were
//! produced: only what the results directories say.

pub mod charts;
pub mod check_chart;
mod doc;
mod error;
mod grid_chart;
pub mod lines;
mod load;
pub mod rules;
mod runtime_chart;
mod sections;
pub mod timeline;

use std::collections::BTreeMap;

pub use doc::{Block, html, markdown};
pub use error::ReportError;
pub use load::{Bench, Faults, Histograms, Inputs, Replay, Simulation, Source, Ttl, load};
pub use sections::{Interim, ReportOptions, agreement};

/// A report ready to write.
pub struct Report {
    /// `report.md`.
    pub markdown: String,
    /// `report.html`.
    pub html: String,
    /// Charts by file stem.
    pub charts: Vec<(String, charts::Rendered)>,
    /// `prometheus-rules.yml`.
    pub rules: String,
    /// `prometheus-rules.test.yml`.
    pub rules_test: String,
}

/// The report of `evidence`: the decision for every job its `ttl` and `simulate` directories
/// name, then the evidence.
pub fn build(evidence: &Inputs, options: &ReportOptions) -> Result<Report, ReportError> {
    build_interim(evidence, None, options)
}

/// [`build`], labelled as an interim record when `interim` says what is still being measured.
pub fn build_interim(
    evidence: &Inputs,
    interim: Option<&Interim>,
    options: &ReportOptions,
) -> Result<Report, ReportError> {
    let decisions = evidence.decisions()?;
    let content = sections::content(evidence, &decisions, interim, options);
    let mut rendered = Vec::new();
    for spec in &content.charts {
        let (name, result) = match spec {
            sections::ChartSpec::Curves(n, c) => (n, charts::render(c)),
            sections::ChartSpec::Volume(n, c) => (n, charts::render(c)),
            sections::ChartSpec::Runtime(n, c) => (n, charts::render(c)),
            sections::ChartSpec::Bars(n, c) => (n, charts::render(c)),
            sections::ChartSpec::Timeline(n, c) => (n, charts::render(c)),
            sections::ChartSpec::Contention(n, c) => (n, charts::render(c)),
            sections::ChartSpec::Check(n, c) => (n, charts::render(c)),
            sections::ChartSpec::Grid(n, c) => (n, charts::render(c)),
        };
        rendered.push((name.clone(), result.map_err(ReportError::Chart)?));
    }
    let svgs: BTreeMap<String, String> = rendered
        .iter()
        .map(|(n, r)| (n.clone(), r.svg.clone()))
        .collect();
    Ok(Report {
        markdown: markdown(&content.blocks),
        html: html(&content.title, &content.blocks, &svgs),
        charts: rendered,
        rules: rules::rules_yaml(&content.plans),
        rules_test: rules::rules_test_yaml(&content.plans, &options.alerts),
    })
}
