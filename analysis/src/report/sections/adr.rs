//! The record's first page, as an architecture decision record: the context in each job's
//! numbers, one decision line per job, the consequences, each rejected alternative with its one
//! reason, and the actions table (what to change, who, how to verify it done). Everything after it
//! is evidence, by job. Kept short on purpose: a test holds it under 1,200 words.

use lockbench_core::records::ttl::TtlRecommendation;
use lockbench_core::records::ttl::{BudgetFrom, TtlRule};
use lockbench_core::{BackendKind, format_count, format_readable};
use lockbench_decision::alerts::{AlertPlan, Severity};
use lockbench_decision::{Action, Decision, ModelKind, Status, VerdictKind};

use super::common::{Doc, secs};
use crate::report::doc::{Block, slug};
use crate::report::load::Inputs;

/// The heading the evidence of a job starts under (the ADR links to it).
pub(super) fn evidence_heading(job: &str) -> String {
    format!("Evidence: {job}")
}

/// The first page.
pub(super) fn write(evidence: &Inputs, decisions: &[Decision], plans: &[AlertPlan], doc: &mut Doc) {
    if decisions.is_empty() {
        return;
    }
    doc.push(Block::Heading(2, "Context".to_string()));
    doc.push(Block::List(
        decisions.iter().map(|d| context(evidence, d)).collect(),
    ));
    doc.push(Block::Heading(2, "Decision".to_string()));
    doc.push(Block::Table {
        head: ["job", "lock", "on acquisition failure", "status"]
            .map(String::from)
            .to_vec(),
        rows: decisions.iter().map(decision_row).collect(),
    });
    doc.push(Block::Heading(2, "Consequences".to_string()));
    doc.push(Block::List(
        decisions
            .iter()
            .map(|d| consequences(d, plans.iter().find(|p| p.workload == d.job)))
            .collect(),
    ));
    doc.push(Block::Heading(2, "Rejected alternatives".to_string()));
    rejected(decisions, doc);
    doc.push(Block::Heading(2, "Actions".to_string()));
    actions(evidence, decisions, plans, doc);
}

fn ttl_of<'a>(evidence: &'a Inputs, job: &str) -> Option<&'a TtlRecommendation> {
    evidence
        .ttls
        .iter()
        .map(|t| &t.record)
        .find(|r| r.workload == job)
}

/// What went wrong or could, in the job's numbers: what a second run does, and today's lock
/// against the slowest profile at today's volume and at the target.
fn context(evidence: &Inputs, d: &Decision) -> String {
    let mut sentences = vec![format!(
        "**{}**: a second run {}.",
        d.job,
        lockbench_decision::effect(d.double_run)
    )];
    let Some(r) = ttl_of(evidence, &d.job) else {
        return sentences.join(" ");
    };
    if let Some(t) = r.today.iter().max_by_key(|t| t.max) {
        let against = r.current_ttl.as_ref().map(|c| {
            format!(
                "; today's {} TTL is outlived by {}",
                secs(c.ttl),
                if t.p50 > c.ttl {
                    "more than half of them"
                } else if t.p99 > c.ttl {
                    "more than 1 in 100"
                } else if t.max > c.ttl {
                    "the slowest"
                } else {
                    "none"
                }
            )
        });
        sentences.push(format!(
            "Today ({} {}) a `{}` run takes {} (P50) to {} (simulated){}.",
            format_count(t.volume),
            r.unit,
            t.profile,
            format_readable(t.p50),
            t.tail_said(),
            against.unwrap_or_default()
        ));
    }
    // Today's TTL and the recommended one, priced for the schedule, in one sentence.
    let mut priced = Vec::new();
    if let Some(c) = &r.current_ttl {
        // The method and the counts are in the job's evidence; the page keeps the figure.
        let figure = c.per_year_short(r.replays, r.runs_per_year);
        priced.push(format!(
            "At {} {} ({}) today's TTL is outlived {figure}",
            format_count(r.target_volume),
            r.unit,
            match r.target_from {
                lockbench_core::records::ttl::TargetFrom::Assumed => "assumed: no growth answered",
                _ => "the target",
            },
        ));
    }
    if let Some(t) = &r.tail {
        let sized = match (t.governs, t.accepted_from) {
            (TtlRule::YearlyBudget, BudgetFrom::Default) => {
                format!("sized to an assumed {} a year", t.accepted_per_year)
            }
            (TtlRule::YearlyBudget, _) => format!("sized to {} a year", t.accepted_per_year),
            (TtlRule::P999, _) => "P99.9 x the factor".to_string(),
        };
        priced.push(format!(
            "the recommended {} ({sized}) {} ({})",
            secs(r.ttl),
            t.recommended.per_year_short(r.runs_per_year),
            t.recommended.years_between_short(r.runs_per_year)
        ));
    }
    if !priced.is_empty() {
        let mut sentence = priced.join("; ");
        if let Some(first) = sentence.get(..1) {
            sentence = first.to_uppercase() + &sentence[1..];
        }
        sentences.push(sentence + ".");
    }
    sentences.join(" ")
}

/// The lock a decision holds, with its figures: "`etcd`, heartbeat lease of 37 s renewed every
/// 12.3 s, given up after 24.7 s".
fn lock(d: &Decision) -> String {
    let Some(b) = d.backend else {
        return "no backend fits the answers".to_string();
    };
    let m = &d.lock_model;
    let figures = match m.kind {
        ModelKind::FixedTtl => m
            .ttl_s
            .map(|t| format!(" of {}", lockbench_core::format_readable_s(t))),
        ModelKind::HeartbeatLease => m.lease_s.zip(m.renew_every_s).map(|(l, r)| {
            format!(
                " of {}, renewed every {}",
                lockbench_core::format_readable_s(l),
                lockbench_core::format_readable_s(r)
            )
        }),
        ModelKind::Session | ModelKind::Transaction => None,
    };
    format!("`{b}`, {}{}", m.kind.name(), figures.unwrap_or_default())
}

fn decision_row(d: &Decision) -> Vec<String> {
    let status = match (d.status, &d.after) {
        (Status::Blocked, Some(after)) => format!(
            "**blocked** on {}; then {} ({})",
            blocking_list(d),
            lock(after),
            after.status.name()
        ),
        (Status::Blocked, None) => format!("**blocked** on {}", blocking_list(d)),
        (s, _) => s.name().to_string(),
    };
    vec![
        format!("[{}](#{})", d.job, slug(&evidence_heading(&d.job))),
        lock(d),
        d.failure_policy.kind.name().to_string(),
        status,
    ]
}

/// "guards on `debit_source` and `credit_destination`": what a blocked decision waits for (with
/// a decision after them, only what that decision assumes).
fn blocking_list(d: &Decision) -> String {
    let waits: Vec<&Action> = listed(d)
        .into_iter()
        .filter(|(a, of)| a.blocking && std::ptr::eq(*of, d))
        .map(|(a, _)| a)
        .collect();
    let steps: Vec<String> = waits
        .iter()
        .filter_map(|a| a.step.as_ref().map(|s| format!("`{s}`")))
        .collect();
    let others = waits.iter().filter(|a| a.step.is_none()).count();
    let mut parts = Vec::new();
    if !steps.is_empty() {
        parts.push(format!("guards on {}", lockbench_decision::list(steps)));
    }
    if others > 0 {
        parts.push(format!(
            "{others} other action{}",
            if others == 1 { "" } else { "s" }
        ));
    }
    lockbench_decision::list(parts)
}

/// What the decision costs and what it leaves, in one line.
fn consequences(d: &Decision, plan: Option<&AlertPlan>) -> String {
    let d = d
        .after
        .as_deref()
        .filter(|_| d.status == Status::Blocked)
        .unwrap_or(d);
    let infra = match d.backend {
        None => "no lock fits".to_string(),
        Some(b) if d.adds_infrastructure => format!("adds {} to run", added(b)),
        Some(_) => "adds nothing to run".to_string(),
    };
    let pages: Vec<String> = plan
        .map(|p| {
            p.alerts
                .iter()
                .filter(|a| a.severity == Severity::Page)
                .filter_map(|a| {
                    Some(format!(
                        "held past {} (before {})",
                        secs(a.threshold?),
                        a.deadline?.describe()
                    ))
                })
                .collect()
        })
        .unwrap_or_default();
    let paged = if pages.is_empty() {
        if d.double_run.harms() {
            "no page (why: its alerts section)".to_string()
        } else {
            "never pages: its double run is harmless, so tickets only".to_string()
        }
    } else {
        format!("pages when {}", pages.join(" or "))
    };
    let accepted: Vec<String> = d
        .residual
        .iter()
        .filter(|r| r.accepted)
        .map(|r| r.short(d))
        .collect();
    format!(
        "**{}**{}: {infra}; {paged}; accepted: {}.",
        d.job,
        if d.assumed.is_empty() {
            String::new()
        } else {
            " (once unblocked)".to_string()
        },
        lockbench_decision::list(accepted)
    )
}

fn added(b: BackendKind) -> &'static str {
    match b {
        BackendKind::Redlock => "five Redis nodes",
        BackendKind::Etcd => "an etcd cluster",
        BackendKind::Zookeeper => "a ZooKeeper ensemble",
        BackendKind::Redis => "a Redis server",
        BackendKind::PgSession | BackendKind::PgXact => "a Postgres server",
        BackendKind::Memory => "nothing",
    }
}

/// Every backend against every job: chosen, acceptable, or the kind of fact that rejects it.
fn rejected(decisions: &[Decision], doc: &mut Doc) {
    let mut backends: Vec<BackendKind> = Vec::new();
    for v in decisions.iter().flat_map(|d| &d.alternatives) {
        if !backends.contains(&v.backend) {
            backends.push(v.backend);
        }
    }
    let mut head = vec!["backend".to_string()];
    head.extend(decisions.iter().map(|d| d.job.clone()));
    let rows = backends
        .iter()
        .map(|b| {
            let mut row = vec![format!("`{b}`")];
            row.extend(decisions.iter().map(|d| {
                d.alternatives
                    .iter()
                    .find(|v| v.backend == *b)
                    .map_or("-".to_string(), |v| match v.verdict {
                        VerdictKind::Chosen => "**chosen**".to_string(),
                        VerdictKind::Acceptable => "acceptable".to_string(),
                        VerdictKind::Rejected => {
                            v.reason.map_or("rejected", |r| r.short()).to_string()
                        }
                    })
            }));
            row
        })
        .collect();
    doc.push(Block::Table { head, rows });
}

/// The actions of a job as the record lists them: for a blocked decision, the blocking actions
/// the decision after assumes, then that decision's own; otherwise its own.
fn listed(d: &Decision) -> Vec<(&Action, &Decision)> {
    match &d.after {
        Some(after) if d.status == Status::Blocked => d
            .actions
            .iter()
            .filter(|a| a.blocking && a.assume.as_ref().is_some_and(|x| after.assumed.contains(x)))
            .map(|a| (a, d))
            .chain(after.actions.iter().map(|a| (a, after.as_ref())))
            .collect(),
        _ => d.actions.iter().map(|a| (a, d)).collect(),
    }
}

/// The actions table: what to change, who, and how to verify it done, one row for an action that
/// several jobs share word for word; the blocking ones first within each job, the alerting rules
/// last.
fn actions(evidence: &Inputs, decisions: &[Decision], plans: &[AlertPlan], doc: &mut Doc) {
    // (jobs, blocking, what, owner, verify)
    let mut rows: Vec<(Vec<String>, bool, String, String, String)> = Vec::new();
    for d in decisions {
        // The job's runner's own timeout, where it starts the job twice more often than the
        // budget allows: the lock cannot prevent it.
        if let Some((r, p)) = ttl_of(evidence, &d.job)
            .and_then(|r| Some((r, r.runner.as_ref()?)))
            .filter(|(_, p)| p.recommended != p.value || p.unreachable)
        {
            rows.push((
                vec![d.job.clone()],
                false,
                crate::runner::action_said(p, r.runs_per_year),
                "job owners".to_string(),
                format!("`lockbench ttl`: {} within the budget", p.setting.field()),
            ));
        }
        for (a, of) in listed(d) {
            let what = a.what();
            let owner = a
                .owner
                .replace(&format!("the {} job's owners", d.job), "job owners");
            let verify = a.verify(of);
            match rows
                .iter_mut()
                .find(|r| !a.blocking && !r.1 && r.2 == what && r.3 == owner && r.4 == verify)
            {
                Some(row) => row.0.push(d.job.clone()),
                None => rows.push((vec![d.job.clone()], a.blocking, what, owner, verify)),
            }
        }
    }
    if plans.iter().any(|p| !p.alerts.is_empty()) {
        rows.push((
            vec!["all".to_string()],
            false,
            "load `prometheus-rules.yml` (beside this record) into Prometheus; export the `lock_*` metrics it reads".to_string(),
            "on-call".to_string(),
            "`promtool test rules prometheus-rules.test.yml` passes".to_string(),
        ));
    }
    if rows.is_empty() {
        doc.push(Block::Para("Nothing to change.".to_string()));
        return;
    }
    doc.push(Block::Table {
        head: ["#", "job", "change", "owner", "verify"]
            .map(String::from)
            .to_vec(),
        rows: rows
            .into_iter()
            .enumerate()
            .map(|(i, (jobs, blocking, what, owner, verify))| {
                vec![
                    (i + 1).to_string(),
                    format!(
                        "{}{}",
                        jobs.join(", "),
                        if blocking { " (**blocks**)" } else { "" }
                    ),
                    what,
                    owner,
                    verify,
                ]
            })
            .collect(),
    });
}
