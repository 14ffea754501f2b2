//! The report's text: the five sections of a locking decision record, with a summary before them
//! and the sources after, one file each, filled with measured numbers from the evidence, each
//! figure with how it was derived. What more than one section draws with is in `common`.

mod backends;
mod common;
mod contention;
mod decision;
mod faults;
mod idempotency;
mod libraries;
mod model_check;
mod observability;
mod protocol;
mod sources;
mod summary;
mod ttl;

pub use common::ChartSpec;

use common::Doc;

use lockbench_decision::Decision;

use super::doc::Block;
use super::load::Inputs;

/// What an interim record (written by `lockbench run` between its steps) covers and what is still
/// being measured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interim {
    /// The steps whose results the record reads, in words (`the simulated runtimes and TTLs`).
    pub after: String,
    /// The steps still to run, in words.
    pub pending: Vec<String>,
}

/// The blocks and the charts they refer to.
pub struct Content {
    /// The record's title.
    pub title: String,
    /// The document.
    pub blocks: Vec<Block>,
    /// The charts, in order of appearance.
    pub charts: Vec<ChartSpec>,
}

/// The record's title: the jobs it decides for.
fn title(decisions: &[Decision]) -> String {
    let jobs: Vec<&str> = decisions.iter().map(|d| d.job.as_str()).collect();
    match jobs.len() {
        0 => "Locking decision record: the evidence".to_string(),
        1 => format!("Locking decision record: {}", jobs[0]),
        n => format!(
            "Locking decision record: {} and {}",
            jobs[..n - 1].join(", "),
            jobs[n - 1]
        ),
    }
}

/// The line at the top of an interim record: what it covers, what is still being measured, and
/// that the decisions below read only what is here.
fn interim_label(interim: &Interim) -> String {
    format!(
        "**Interim record.** `lockbench run` wrote this after {}, and is still measuring: {}. The decisions and sections below read only the results listed under Sources: where a step still to run would add evidence, they show none yet, and a decision may change when it lands. The run rewrites this record, whole, as each step lands; a run stopped now keeps this one.",
        interim.after,
        match interim.pending.as_slice() {
            [] => "nothing more".to_string(),
            [one] => one.clone(),
            [rest @ .., last] => format!("{}, then {last}", rest.join(", ")),
        }
    )
}

/// What the record is written from, how to read its figures, and each job's decision in one
/// line.
fn preamble(evidence: &Inputs, decisions: &[Decision], doc: &mut Doc) {
    doc.push(Block::Para(format!(
        "Written by lockbench {} from {} results directories (listed under Sources). {}Each figure says where it comes from and how many samples stand behind it: **simulated** (replays of the workload spec in virtual time, at the volume named, which is often a multiple of today's), **live** (runs of the job against a real Postgres, payment-API stub and lock server, on the backend named), **lab** (fault-lab trials on private servers, with the lab's short TTL) or **bench** (operations timed against the local servers). None is a measurement of production. The five sections follow the locking decision record: backend and failure model, TTL and heartbeat, acquisition and release, idempotency, observability.",
        lockbench_core::TOOL_VERSION,
        evidence.sources().len(),
        if decisions.is_empty() {
            String::new()
        } else {
            "Each job's decision comes first: computed from the job's answers (the `[decision]` table of its spec) and from what these results measured, by the rules of docs/DECISION.md. ".to_string()
        }
    )));
    if decisions.is_empty() {
        return;
    }
    doc.push(Block::Table {
        head: [
            "job",
            "backend",
            "lock model",
            "on acquisition failure",
            "status",
        ]
        .map(String::from)
        .to_vec(),
        rows: decisions
            .iter()
            .map(|d| {
                vec![
                    format!("[{}](#{})", d.job, super::doc::slug(&decision::heading(d))),
                    d.backend
                        .as_ref()
                        .map_or("none fits".to_string(), |b| format!("`{b}`")),
                    d.lock_model.kind.name().to_string(),
                    d.failure_policy.kind.name().to_string(),
                    d.status.name().to_string(),
                ]
            })
            .collect(),
    });
}

/// Builds the document from `evidence` and the decisions it supports: each job's decision
/// first, then the evidence in the record's five sections, the appendix and the sources.
pub fn content(evidence: &Inputs, decisions: &[Decision], interim: Option<&Interim>) -> Content {
    let title = title(decisions);
    let mut doc = Doc {
        blocks: vec![Block::Heading(1, title.clone())],
        charts: Vec::new(),
    };
    if let Some(interim) = interim {
        doc.push(Block::Para(interim_label(interim)));
    }
    // The date of the newest evidence: the record reads the same when re-reported.
    let date = evidence
        .sources()
        .iter()
        .map(|s| s.created_unix_s)
        .max()
        .map_or("undated".to_string(), lockbench_core::format_date);
    preamble(evidence, decisions, &mut doc);
    doc.push(Block::Toc);
    for d in decisions {
        let server = d.backend.and_then(|b| backends::server_of(evidence, b));
        decision::block(d, &date, server, &mut doc);
    }
    summary::write(evidence, decisions, &mut doc);
    doc.push(Block::Heading(
        2,
        "1. Lock backend and failure model".to_string(),
    ));
    for d in decisions {
        decision::alternatives(d, evidence, &mut doc);
    }
    backends::write(evidence, &mut doc);
    faults::write_grid(evidence, &mut doc);
    libraries::write(evidence, &mut doc);
    ttl::write(evidence, decisions, &mut doc);
    for d in decisions {
        decision::reconciliation(d, &mut doc);
    }
    protocol::write(evidence, decisions, &mut doc);
    for d in decisions {
        decision::policy(d, &mut doc);
    }
    doc.push(Block::Heading(
        2,
        "4. Idempotency and the lock's role".to_string(),
    ));
    for d in decisions {
        decision::steps(d, &mut doc);
    }
    idempotency::write(evidence, &mut doc);
    observability::write(evidence, decisions, &mut doc);
    faults::write_matrix(evidence, &mut doc);
    sources::write(evidence, &mut doc);
    Content {
        title,
        blocks: doc.blocks,
        charts: doc.charts,
    }
}
