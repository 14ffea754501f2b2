//! A job's "runs twice without a lock": the queue or scheduler it runs under, the setting of it
//! that acts as a lease, its chance per run and per year of starting the job a second time, what
//! to set it to, and what the job's lock does about it (issue 53).

use lockbench_core::records::runner::RunnerPricing;

use crate::TtlRecommendation;
use crate::report::doc::Block;
use crate::runner::{advice_said, lease_said, lock_said, setting_said};

use super::common::Doc;

/// The heading of a job's runner part.
pub(super) fn heading(job: &str) -> String {
    format!("{job} 2: runs twice without a lock")
}

/// The job's runner priced, when its spec names one.
pub(super) fn write_job(r: &TtlRecommendation, doc: &mut Doc) {
    let Some(p) = &r.runner else {
        return;
    };
    doc.push(Block::Heading(3, heading(&r.workload)));
    doc.push(Block::Para(format!(
        "The job runs under {}: {}.",
        setting_said(p),
        lease_said(p)
    )));
    doc.push(Block::Table {
        head: vec!["figure".into(), "value".into(), "how it was derived".into()],
        rows: rows(r, p),
    });
}

fn rows(r: &TtlRecommendation, p: &RunnerPricing) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    if let Some(c) = &p.chance {
        let profile = p
            .profile
            .as_deref()
            .map(|profile| format!(", in `{profile}`"))
            .unwrap_or_default();
        rows.push(vec![
            "started twice, per run".into(),
            c.per_run_said(),
            format!("{}{profile} ({})", c.method.said(), c.cost_said()),
        ]);
        rows.push(vec![
            "started twice, a year".into(),
            c.per_year_short(r.runs_per_year),
            format!(
                "{}; {}",
                c.years_between_short(r.runs_per_year),
                r.runs_per_year_from.runs_a_year(r.runs_per_year)
            ),
        ]);
    }
    rows.push(vec![
        "what to set".into(),
        if p.recommended == p.value && !p.unreachable {
            "keep it".to_string()
        } else {
            lockbench_core::records::runner::spec_duration(p.recommended)
        },
        advice_said(p, r.runs_per_year),
    ]);
    if p.chance.is_some() {
        rows.push(vec![
            "the job's lock".into(),
            "does not prevent it".into(),
            lock_said(p.kind),
        ]);
    }
    rows
}
