//! The sources: every results directory the report read, with its seed and commit.

use super::common::Doc;
use crate::report::doc::Block;
use crate::report::load::Inputs;

pub(super) fn write(evidence: &Inputs, doc: &mut Doc) {
    doc.push(Block::Heading(2, "Sources".to_string()));
    let rows = evidence
        .sources()
        .iter()
        .map(|s| {
            vec![
                format!("`{}`", s.label),
                format!("`{}`", s.command),
                s.seed
                    .map_or("none (real servers)".to_string(), |v| v.to_string()),
                s.git_commit
                    .clone()
                    .unwrap_or_else(|| "unknown".to_string()),
            ]
        })
        .collect();
    doc.push(Block::Table {
        head: vec![
            "results directory".into(),
            "command".into(),
            "seed".into(),
            "lockbench commit".into(),
        ],
        rows,
    });
    if !evidence.skipped.is_empty() {
        doc.push(Block::List(
            evidence
                .skipped
                .iter()
                .map(|(p, why)| format!("`{}`: {why}", p.display()))
                .collect(),
        ));
    }
}
