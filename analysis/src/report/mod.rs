//! Reports: results directories in, a locking decision record out (`report.md`, a self-contained
//! `report.html`, and every chart as PNG and SVG).
//!
//! [`load`] reads what `simulate`, `ttl`, `bench` and `replay` wrote with `--out` (a directory
//! without a manifest is searched one level down, as `lockbench run` nests them); [`build`] turns
//! that [`Evidence`] into the document and its charts. Nothing here knows how the figures were
//! produced: only what the results directories say.

pub mod charts;
mod doc;
mod load;
mod sections;

use std::collections::BTreeMap;
use std::path::PathBuf;

pub use doc::{Block, html, markdown};
pub use load::{Bench, Evidence, Histograms, Replay, Simulation, Source, Ttl, load};

/// Why a report could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// An input directory or file is not what a report reads.
    #[error("{}: {message}", path.display())]
    Input {
        /// The directory or file.
        path: PathBuf,
        /// What is wrong, and what was expected.
        message: String,
    },
    /// A results directory does not read as the records of this schema version.
    #[error(transparent)]
    Record(#[from] lockbench_core::records::RecordError),
    /// A chart could not be drawn.
    #[error("{0}")]
    Chart(String),
}

/// A report ready to write.
pub struct Report {
    /// `report.md`.
    pub markdown: String,
    /// `report.html`.
    pub html: String,
    /// Charts by file stem.
    pub charts: Vec<(String, charts::Rendered)>,
}

/// The report of `evidence`.
pub fn build(evidence: &Evidence) -> Result<Report, ReportError> {
    let content = sections::content(evidence);
    let mut rendered = Vec::new();
    for spec in &content.charts {
        let (name, result) = match spec {
            sections::ChartSpec::Curves(n, c) => (n, charts::render(c)),
            sections::ChartSpec::Volume(n, c) => (n, charts::render(c)),
            sections::ChartSpec::Bars(n, c) => (n, charts::render(c)),
        };
        rendered.push((name.clone(), result.map_err(ReportError::Chart)?));
    }
    let svgs: BTreeMap<String, String> = rendered
        .iter()
        .map(|(n, r)| (n.clone(), r.svg.clone()))
        .collect();
    Ok(Report {
        markdown: markdown(&content.blocks),
        html: html(
            "Locking decision record: the evidence",
            &content.blocks,
            &svgs,
        ),
        charts: rendered,
    })
}
