//! A job's "runs twice without a lock": the queue or scheduler it runs under, the setting of it
//! that acts as a lease, its chance per run and per year of starting the job a second time, what
//! to set it to, and what the job's lock does about it (issue 53).

use lockbench_core::records::faults::{RunnerCell, SlotCell, SlotRemedy, TaskLock};
use lockbench_core::records::runner::{RunnerKind, RunnerPricing};

use crate::TtlRecommendation;
use crate::report::doc::Block;
use crate::runner::{advice_said, lease_said, lock_said, setting_said};

use super::common::Doc;
use crate::report::load::Inputs;

/// The heading of a job's runner part.
pub(super) fn heading(job: &str) -> String {
    format!("{job} 2: runs twice without a lock")
}

/// The job's runner priced, when its spec names one, and what the fault lab measured of that
/// runner where a `faults --scenario runner` directory is among the inputs.
pub(super) fn write_job(evidence: &Inputs, r: &TtlRecommendation, doc: &mut Doc) {
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
    if let Some(measured) = measured(evidence, p.kind) {
        doc.push(Block::Para(measured));
    }
}

/// Counts, one per trial or slot: `2 2 2`.
fn counts(each: &[u32]) -> String {
    each.iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(" ")
}

/// What the fault lab measured of `kind`, in one paragraph naming its directory; `None` when no
/// input ran it.
fn measured(evidence: &Inputs, kind: RunnerKind) -> Option<String> {
    evidence.faults.iter().find_map(|f| {
        let source = &f.source.label;
        if kind == RunnerKind::Cron {
            return slots_said(&f.record.slots).map(|s| format!("Measured in the fault lab (`{source}`): {s}."));
        }
        let cells: Vec<&RunnerCell> = f.record.runners.iter().filter(|c| c.runner == kind).collect();
        let find = |recommended: bool, lock: TaskLock| {
            cells
                .iter()
                .find(|c| c.recommended == recommended && c.task_lock == lock)
        };
        let short = find(false, TaskLock::None)?;
        let mut said = vec![format!(
            "{} {} shorter than a {} s job ran it {} times a trial",
            short.setting.native(),
            lockbench_core::format_duration_s(short.setting_s),
            short.job_s,
            counts(&short.executions)
        )];
        if let Some(c) = find(true, TaskLock::None) {
            said.push(format!(
                "at the recommended {} {}",
                lockbench_core::format_duration_s(c.setting_s),
                counts(&c.executions)
            ));
        }
        if let Some(c) = find(false, TaskLock::Outlives) {
            said.push(format!(
                "with a lock inside the task that outlives the job, the runner started it again all the same and the second start skipped ({} skipped)",
                counts(&c.skipped)
            ));
        }
        if let Some(c) = find(false, TaskLock::Shorter) {
            said.push(format!(
                "with a lock whose lease runs out before the second start, both ran ({} times)",
                counts(&c.executions)
            ));
        }
        if let Some(c) = f.record.stalls.iter().find(|c| c.runner == kind) {
            let (low, high) = c.expected_twice;
            said.push(format!(
                "with the first execution stalled for a time drawn from a Pareto pause law (at least {} s, tail index {}), {} of {} trials ran twice; the model gives {:.2} a run as priced here (the runner looking at once) and {:.2} with the runner looking a whole {} s check late, {low} to {high} of {} trials 95 % of the time ({})",
                c.law_scale_s,
                c.law_shape,
                c.twice(),
                c.trials,
                c.model_p,
                c.model_late_p,
                c.check_s,
                c.trials,
                if c.as_predicted() { "within" } else { "outside: the model is off here" }
            ));
        }
        Some(format!(
            "Measured in the fault lab (`{source}`, {}, two workers, `faults --scenario runner`): {}.",
            short.library,
            said.join("; ")
        ))
    })
}

/// The slot cells in one sentence: the runs of each slot by remedy.
fn slots_said(cells: &[SlotCell]) -> Option<String> {
    let skewed: Vec<&SlotCell> = cells.iter().filter(|c| c.skew_s > 0.0).collect();
    let first = skewed.first()?;
    let each: Vec<String> = skewed
        .iter()
        .map(|c| {
            let what = match c.remedy {
                SlotRemedy::Plain => "the lock alone".to_string(),
                SlotRemedy::Hold => format!("a hold of {} s", c.hold_s.unwrap_or_default()),
                SlotRemedy::DbClock => "the database's clock".to_string(),
                SlotRemedy::Completion => "a completion record".to_string(),
            };
            format!("{what} {}", counts(&c.runs))
        })
        .collect();
    Some(format!(
        "two scheduler nodes {} s apart fired the same slots of a {} s job; runs of each slot with {}",
        first.skew_s,
        first.job_s,
        each.join(", ")
    ))
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
