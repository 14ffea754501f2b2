//! The report's text: a one-page decision record first (`adr`: context, decision, consequences,
//! rejected alternatives, actions), then the evidence by job, each in the five parts of a locking
//! decision record (backend and failure model, runtime and lock model, acquisition and release,
//! idempotency, alerts), then the evidence the jobs share, the appendix and the sources; one
//! file a part, filled with measured numbers, each figure with how it was derived. What more than
//! one part draws with is in `common`.

mod adr;
mod backends;
mod common;
mod contention;
mod decision;
mod faults;
mod idempotency;
mod libraries;
mod live;
mod model_check;
mod observability;
mod protocol;
mod runner;
mod sources;
mod ttl;

pub use live::agreement;

pub use common::ChartSpec;

use common::Doc;

use lockbench_decision::Decision;
use lockbench_decision::alerts::{self, AlertPlan, AlertSettings};

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
    /// The signal that stopped the run, when one did: the steps still to run never will.
    pub stopped: Option<String>,
}

/// What the report is made with besides the results.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReportOptions {
    /// The monitoring the alerts' timing is checked against.
    pub alerts: AlertSettings,
    /// The command that made the results (`lockbench run --quick`), when the caller knows.
    pub made_by: Option<String>,
}

/// The blocks and the charts they refer to.
pub struct Content {
    /// The record's title.
    pub title: String,
    /// The document.
    pub blocks: Vec<Block>,
    /// The charts, in order of appearance.
    pub charts: Vec<ChartSpec>,
    /// Each job's alerts, for the rules files.
    pub plans: Vec<AlertPlan>,
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

/// The line at the top of an interim record: what it covers, what is still being measured (or,
/// when a signal stopped the run, what never will be), and that the decisions read only what is
/// here.
fn interim_label(interim: &Interim) -> String {
    let pending = match interim.pending.as_slice() {
        [] => "nothing more".to_string(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{}, then {last}", rest.join(", ")),
    };
    match &interim.stopped {
        Some(by) => format!(
            "**Interim record of a stopped run.** `lockbench run` wrote this after {}, then {by} stopped it: {pending} never ran. The decisions below read only the results listed under Sources; where a step that never ran would have added evidence, they show none.",
            interim.after
        ),
        None => format!(
            "**Interim record.** `lockbench run` wrote this after {}, and is still measuring: {pending}. The decisions below read only the results listed under Sources: where a step still to run would add evidence, they show none yet, and a decision may change when it lands. The run rewrites this record, whole, as each step lands; a run stopped now keeps this one, marked stopped.",
            interim.after
        ),
    }
}

/// How the record was made and how to read its figures, in one paragraph.
fn made(evidence: &Inputs, options: &ReportOptions) -> String {
    let sources = evidence.sources();
    let newest = sources.iter().max_by_key(|s| s.created_unix_s);
    let builds: Vec<&str> = {
        let mut b: Vec<&str> = sources
            .iter()
            .filter_map(|s| s.build.map(lockbench_core::BuildProfile::describe))
            .collect();
        b.sort_unstable();
        b.dedup();
        b
    };
    let machine = newest.map(|s| {
        format!(
            "{} ({} {}, {} CPUs)",
            s.machine.hostname.as_deref().unwrap_or("an unnamed host"),
            s.machine.os,
            s.machine.arch,
            s.machine.cpus
        )
    });
    format!(
        "Made {}by lockbench {}{} from {} results directories{}{}. Figures are **simulated**, **live**, **lab** (at the lab's short TTL, named) or **bench**, each with its sample count; none is from production.",
        options
            .made_by
            .as_ref()
            .map(|m| format!("with `{m}` "))
            .unwrap_or_default(),
        lockbench_core::TOOL_VERSION,
        if builds.is_empty() {
            String::new()
        } else {
            format!(" ({})", builds.join(" and "))
        },
        sources.len(),
        machine.map(|m| format!(" on {m}")).unwrap_or_default(),
        newest
            .map(|s| format!(", {}", lockbench_core::format_date(s.created_unix_s)))
            .unwrap_or_default(),
    )
}

/// Builds the document from `evidence` and the decisions it supports: the one-page record, the
/// evidence by job, what the jobs share, the appendix and the sources.
pub fn content(
    evidence: &Inputs,
    decisions: &[Decision],
    interim: Option<&Interim>,
    options: &ReportOptions,
) -> Content {
    let title = title(decisions);
    let mut doc = Doc {
        blocks: vec![Block::Heading(1, title.clone())],
        charts: Vec::new(),
    };
    if let Some(interim) = interim {
        doc.push(Block::Para(interim_label(interim)));
    }
    doc.push(Block::Para(made(evidence, options)));
    // A blocked decision's alerts are those of the decision after its blocking actions: the one
    // its actions put in place.
    let plans: Vec<AlertPlan> = decisions
        .iter()
        .map(|d| {
            let ttl = evidence
                .ttls
                .iter()
                .map(|t| &t.record)
                .find(|r| r.workload == d.job);
            let implemented = d
                .after
                .as_deref()
                .filter(|_| d.status == lockbench_decision::Status::Blocked)
                .unwrap_or(d);
            alerts::plan(implemented, ttl, &options.alerts)
        })
        .collect();
    adr::write(evidence, decisions, &plans, &mut doc);
    doc.push(Block::Toc);
    // The date of the newest evidence: the record reads the same when re-reported.
    let date = evidence
        .sources()
        .iter()
        .map(|s| s.created_unix_s)
        .max()
        .map_or("undated".to_string(), lockbench_core::format_date);
    for (d, plan) in decisions.iter().zip(&plans) {
        doc.push(Block::Heading(2, adr::evidence_heading(&d.job)));
        let server = d.backend.and_then(|b| backends::server_of(evidence, b));
        decision::full(d, &date, server, &mut doc);
        decision::alternatives(d, evidence, &mut doc);
        if let Some(t) = evidence.ttls.iter().find(|t| t.record.workload == d.job) {
            ttl::write_job(evidence, Some(d), &t.record, Some(plan), &mut doc);
            runner::write_job(evidence, &t.record, &mut doc);
        }
        decision::reconciliation(d, &mut doc);
        decision::policy(d, evidence, &mut doc);
        decision::steps(d, &mut doc);
        live::reproduced(evidence, d, &mut doc);
        observability::write_job(d, plan, &options.alerts, &mut doc);
    }
    // A TTL derived for a workload no decision covers (its spec answers nothing).
    for t in &evidence.ttls {
        if !decisions.iter().any(|d| d.job == t.record.workload) {
            doc.push(Block::Heading(2, adr::evidence_heading(&t.record.workload)));
            ttl::write_job(evidence, None, &t.record, None, &mut doc);
            runner::write_job(evidence, &t.record, &mut doc);
        }
    }
    doc.push(Block::Heading(2, "Shared evidence".to_string()));
    backends::write(evidence, &mut doc);
    faults::write_grid(evidence, &mut doc);
    libraries::write(evidence, &mut doc);
    idempotency::write(evidence, &mut doc);
    ttl::write_shared(evidence, &mut doc);
    observability::metrics(&mut doc);
    faults::write_matrix(evidence, &mut doc);
    sources::write(evidence, &mut doc);
    Content {
        title,
        blocks: doc.blocks,
        charts: doc.charts,
        plans,
    }
}
