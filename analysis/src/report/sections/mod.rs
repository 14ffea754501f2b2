//! The report's text: the five sections of a locking decision record, with a summary before them
//! and the sources after, one file each, filled with measured numbers from the evidence, each
//! figure with how it was derived. What more than one section draws with is in `common`.

mod backends;
mod common;
mod contention;
mod faults;
mod idempotency;
mod model_check;
mod observability;
mod protocol;
mod sources;
mod summary;
mod ttl;

pub use common::ChartSpec;

use common::Doc;

use super::doc::Block;
use super::load::Evidence;

/// The blocks and the charts they refer to.
pub struct Content {
    /// The document.
    pub blocks: Vec<Block>,
    /// The charts, in order of appearance.
    pub charts: Vec<ChartSpec>,
}

/// Builds the document from `evidence`.
pub fn content(evidence: &Evidence) -> Content {
    let mut doc = Doc {
        blocks: vec![Block::Heading(
            1,
            "Locking decision record: the evidence".to_string(),
        )],
        charts: Vec::new(),
    };
    doc.push(Block::Para(format!(
        "Written by lockbench {} from {} results directories (listed under Sources). Every figure is measured by lockbench on the servers and workloads named; how each one is derived is said beside it. The five sections follow the locking decision record: backend and failure model, TTL and heartbeat, acquisition and release, idempotency, observability.",
        lockbench_core::TOOL_VERSION,
        evidence.sources().len()
    )));
    summary::write(evidence, &mut doc);
    backends::write(evidence, &mut doc);
    ttl::write(evidence, &mut doc);
    protocol::write(evidence, &mut doc);
    idempotency::write(evidence, &mut doc);
    observability::write(evidence, &mut doc);
    sources::write(evidence, &mut doc);
    Content {
        blocks: doc.blocks,
        charts: doc.charts,
    }
}
