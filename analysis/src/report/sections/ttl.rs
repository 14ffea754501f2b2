//! A job's part 2: its runtime at today's volume and at the target, and the lock model in force
//! (a fixed TTL's figures, or a heartbeat lease's; a session or a transaction has none), each
//! figure with its derivation, and the runtime charts. Every simulated profile and scale is
//! shared evidence.

use lockbench_core::records::tail_samples_needed;
use lockbench_core::records::ttl::TtlRule;
use lockbench_core::{format_chance, format_count, format_per_year, format_percent};
use std::time::Duration;

use lockbench_decision::alerts::{AlertPlan, Severity, Signal};
use lockbench_decision::{Decision, ModelKind};

use super::common::{
    ChartSpec, Doc, RuntimeLines, number, runtime_chart, secs, secs_f, simulated_at, today_against,
};
use crate::report::charts::{ALERT_COLOUR, RuntimeVsVolume, TODAY_COLOUR, TTL_COLOUR};
use crate::report::doc::Block;
use crate::report::load::Inputs;
use crate::{
    ALERT_SHARE, TriggerSearch, TriggerSimulation, TtlRecommendation, describe_trigger,
    heartbeat_derivation,
};

/// The heading of a job's runtime, TTL and lease.
pub(super) fn heading(job: &str) -> String {
    format!("{job} 2: runtime, TTL and lease")
}

/// The simulations and model checks of workloads no job's evidence covers, and every simulated
/// profile and scale in one table (shared evidence).
pub(super) fn write_shared(evidence: &Inputs, doc: &mut Doc) {
    let covered: Vec<&str> = evidence
        .ttls
        .iter()
        .map(|t| t.record.workload.as_str())
        .collect();
    every_simulation(evidence, &covered, doc);
    // Checks of a workload no TTL was derived for.
    let mut checked: Vec<&str> = Vec::new();
    for c in &evidence.checks {
        let w = c.record.workload.as_str();
        if !covered.contains(&w) && !checked.contains(&w) {
            checked.push(w);
            doc.push(Block::Heading(
                3,
                format!("{w}: the model against past runs"),
            ));
            super::model_check::write(evidence, w, doc);
        }
    }
}

/// One job's runtime and the lock model in force: its figures, its runtime and volume charts, its
/// model check. A model not in force gets no rows and no lines.
pub(super) fn write_job(
    evidence: &Inputs,
    d: Option<&Decision>,
    r: &TtlRecommendation,
    plan: Option<&AlertPlan>,
    doc: &mut Doc,
) {
    let workload = r.workload.clone();
    doc.push(Block::Heading(3, heading(&workload)));
    let model = d.filter(|d| d.backend.is_some()).map(|d| d.lock_model.kind);
    if let Some(note) = d.and_then(in_force) {
        doc.push(Block::Para(note));
    }
    doc.push(Block::Table {
        head: vec!["figure".into(), "value".into(), "how it was derived".into()],
        rows: figures(evidence, r, model),
    });
    let target_lines = match model {
        None | Some(ModelKind::FixedTtl) => vec![
            (
                format!("TTL {}", secs(r.ttl)),
                r.ttl.as_secs_f64(),
                TTL_COLOUR,
            ),
            (
                format!("review at {}", secs(r.alert_hold)),
                r.alert_hold.as_secs_f64(),
                ALERT_COLOUR,
            ),
        ],
        // A page is sized at today's volume: its line is drawn there, once.
        Some(_) => Vec::new(),
    };
    let lines = RuntimeLines {
        target: Some((r.target_scale, target_lines)),
        today: r
            .current_ttl
            .iter()
            .map(|c| {
                (
                    format!("today's TTL {}", secs(c.ttl)),
                    c.ttl.as_secs_f64(),
                    TODAY_COLOUR,
                )
            })
            .chain(page_line(plan).filter(|_| model != Some(ModelKind::FixedTtl)))
            .collect(),
    };
    runtime_chart(evidence, &workload, lines, doc);
    volume_chart(r, model, plan, doc);
    super::model_check::write(evidence, &workload, doc);
    super::live::live_against_simulated(evidence, &workload, doc);
}

/// The lowest page on hold time, as a line across a runtime chart.
fn page_line(plan: Option<&AlertPlan>) -> Option<(String, f64, plotters::style::RGBColor)> {
    let t = plan?
        .alerts
        .iter()
        .filter(|a| a.severity == Severity::Page && a.signal == Signal::Hold)
        .filter_map(|a| a.threshold)
        .min()?;
    Some((
        format!("page at {}", secs(t)),
        t.as_secs_f64(),
        ALERT_COLOUR,
    ))
}

/// The P99.9 as the sample supports it: the figure from 10,000 replays up, else with the count it
/// comes from and what it would need.
fn p999_figure(r: &TtlRecommendation) -> (String, String) {
    if r.p999_reliable() {
        (secs(r.measured_p999), String::new())
    } else {
        (
            format!(
                "{} (from {} replays: too few, {} needed)",
                secs(r.measured_p999),
                format_count(r.replays),
                format_count(tail_samples_needed(0.999))
            ),
            "unreliable".to_string(),
        )
    }
}

/// The rows of a job's figures table: the runtime, the target, today's runtimes, and the model in
/// force (every model when no decision covers the job).
fn figures(evidence: &Inputs, r: &TtlRecommendation, model: Option<ModelKind>) -> Vec<Vec<String>> {
    let considered: Vec<String> = r
        .profiles_considered
        .iter()
        .map(|p| format!("{} {}", p.profile, secs(p.p999)))
        .collect();
    let (p999, unreliable) = p999_figure(r);
    let mut rows = vec![
        vec![
            "target volume".to_string(),
            format!("{} {}", format_count(r.target_volume), r.unit),
            format!(
                "{}: {}x today's volume",
                r.target_from.describe(),
                number(r.target_scale)
            ),
        ],
        vec![
            "P99.9 runtime at the target".to_string(),
            p999,
            format!(
                "{}; the worst profile of: {}",
                simulated_at(r),
                considered.join(", "),
            ),
        ],
    ];
    if unreliable.is_empty() {
        rows.push(vec![
            "its 95 % interval".to_string(),
            format!("{} to {}", secs_f(r.p999_ci_s[0]), secs_f(r.p999_ci_s[1])),
            format!(
                "{} simulated replays, seed {}{}",
                format_count(r.replays),
                r.seed,
                if r.p999_ci_open {
                    "; the upper end is unbounded: too few replays above P99.9"
                } else {
                    ""
                }
            ),
        ]);
    }
    for t in &r.today {
        rows.push(vec![
            format!("today, `{}`", t.profile),
            t.tail_said(),
            format!(
                "P50 {}, P99 {} at {} {} ({} replays{})",
                secs(t.p50),
                secs(t.p99),
                format_count(t.volume),
                r.unit,
                format_count(t.replays),
                if t.p999_reliable() {
                    ""
                } else {
                    ", too few for a P99.9"
                }
            ),
        ]);
    }
    if matches!(model, None | Some(ModelKind::FixedTtl)) {
        rows.extend(ttl_rows(r));
    }
    if matches!(model, None | Some(ModelKind::HeartbeatLease)) {
        rows.extend(lease_rows(r));
    }
    rows.extend(today_rows(evidence, r));
    rows.extend(tail_rows(r, model));
    rows
}

/// The tail priced for the schedule: the yearly budget, the TTL it needs beside the P99.9 rule's,
/// and the chance per run and a year of outliving the TTL or losing the lease, with their cost.
fn tail_rows(r: &TtlRecommendation, model: Option<ModelKind>) -> Vec<Vec<String>> {
    let Some(t) = &r.tail else {
        return Vec::new();
    };
    let q = &t.budget_runtime;
    let mut rows = vec![
        vec![
            "yearly budget".to_string(),
            format!(
                "{} double executions a year",
                format_per_year(t.accepted_per_year)
            ),
            format!(
                "{}: {} per run at {}",
                crate::budget_from_said(t.accepted_from),
                format_percent(t.per_run_budget),
                r.runs_per_year_from.runs_a_year(r.runs_per_year)
            ),
        ],
        vec![
            "runtime at that chance".to_string(),
            secs(Duration::from_secs_f64(q.seconds.max(0.0))),
            format!(
                "in `{}`, {} (95 % interval {} to {}, {} model runs)",
                t.budget_profile,
                q.method.said(),
                secs(Duration::from_secs_f64(q.lower_s.max(0.0))),
                secs(Duration::from_secs_f64(q.upper_s.max(0.0))),
                format_count(q.runs)
            ),
        ],
    ];
    if matches!(model, None | Some(ModelKind::FixedTtl)) {
        rows.push(vec![
            "TTL from the budget / from P99.9".to_string(),
            format!("{} / {}", secs(t.budget_ttl), secs(t.p999_ttl)),
            format!(
                "each x the safety factor; the {} governs",
                match t.governs {
                    TtlRule::YearlyBudget => "budget",
                    TtlRule::P999 => "P99.9 rule",
                }
            ),
        ]);
        rows.push(vec![
            "the TTL outlived".to_string(),
            t.recommended.per_run_said(),
            format!(
                "{} a run in `{}`: {} ({})",
                t.recommended.method.said(),
                t.recommended_profile,
                t.recommended.per_year_said(r.runs_per_year),
                t.recommended.cost_said()
            ),
        ]);
    }
    if let (Some(lease), Some(profile), true) = (
        &t.lease,
        &t.lease_profile,
        matches!(model, None | Some(ModelKind::HeartbeatLease)),
    ) {
        rows.push(vec![
            "the lease lost to a stall".to_string(),
            lease.per_run_said(),
            format!(
                "{} in `{profile}`: {}, {} the budget ({})",
                lease.method.said(),
                lease.per_year_said(r.runs_per_year),
                if lease.upper * r.runs_per_year <= t.accepted_per_year {
                    "within"
                } else {
                    "not within"
                },
                lease.cost_said()
            ),
        ]);
    }
    rows
}

/// A fixed TTL's rows: the factor, the TTL, the review threshold and the review trigger.
fn ttl_rows(r: &TtlRecommendation) -> Vec<Vec<String>> {
    let (trigger, how) = describe_trigger(r);
    vec![
        vec![
            "safety factor".to_string(),
            number(r.safety_factor),
            "kept apart from the measurement, so either can be revised alone".to_string(),
        ],
        vec![
            "**TTL**".to_string(),
            format!("**{}**", secs(r.ttl)),
            crate::ttl_rule_said(r),
        ],
        vec![
            "review threshold".to_string(),
            secs(r.alert_hold),
            format!(
                "{:.0} % of the TTL: a run holding the lock this long is investigated (a ticket, part 5)",
                ALERT_SHARE * 100.0
            ),
        ],
        vec!["review trigger".to_string(), trigger, how],
    ]
}

/// A heartbeat lease's rows.
fn lease_rows(r: &TtlRecommendation) -> Vec<Vec<String>> {
    let hb = &r.heartbeat;
    let derivation = heartbeat_derivation(hb);
    let mut rows = vec![vec![
        "heartbeat lease".to_string(),
        secs(hb.lease_ttl),
        derivation.lease.clone(),
    ]];
    if let Some(risk) = &derivation.risk {
        rows.push(vec![
            "lease lost per run".to_string(),
            hb.p_lease_lost.map_or("-".to_string(), format_chance),
            risk.clone(),
        ]);
    }
    if let (Some(closed), Some(p)) = (&derivation.closed_form, &hb.pricing) {
        rows.push(vec![
            "closed-form lease".to_string(),
            secs(p.closed_form_lease),
            closed.clone(),
        ]);
    }
    rows.extend([
        vec![
            "renewal interval".to_string(),
            secs(hb.renewal_interval),
            derivation.renewal,
        ],
        vec![
            "give-up deadline".to_string(),
            secs(hb.give_up_after),
            derivation.give_up,
        ],
    ]);
    rows
}

/// The rows that price the TTL in use today, when the spec gives one.
fn today_rows(evidence: &Inputs, r: &TtlRecommendation) -> Vec<Vec<String>> {
    let Some(current) = &r.current_ttl else {
        return Vec::new();
    };
    let mut rows = vec![
        vec![
            "today's TTL, at the target volume".to_string(),
            secs(current.ttl),
            format!(
                "outlived at {} {} by {}",
                format_count(r.target_volume),
                r.unit,
                current.chance(r.replays),
            ),
        ],
        vec![
            "its double executions a year".to_string(),
            current.per_year(r.replays, r.runs_per_year),
            format!(
                "at {}, a second worker waiting",
                r.runs_per_year_from.runs_a_year(r.runs_per_year)
            ),
        ],
    ];
    if let Some((how, figures)) = today_against(evidence, r, current.ttl) {
        rows.push(vec![
            "today's TTL, at today's volume".to_string(),
            format!("outlived {how}"),
            figures,
        ]);
    }
    rows
}

/// A job's P99.9 runtime against volume per profile, with the TTL and its review threshold (a
/// fixed TTL, or no decision) or the page's threshold (any other model), and the volume at which
/// a profile reaches it.
fn volume_chart(
    r: &TtlRecommendation,
    model: Option<ModelKind>,
    plan: Option<&AlertPlan>,
    doc: &mut Doc,
) {
    let profiles = volume_series(r);
    if profiles.is_empty() {
        return;
    }
    let workload = &r.workload;
    let ttl = matches!(model, None | Some(ModelKind::FixedTtl));
    let (lines, review) = if ttl {
        (
            vec![
                ("TTL".to_string(), r.ttl.as_secs_f64(), TTL_COLOUR),
                (
                    "review threshold (80 % of the TTL)".to_string(),
                    r.alert_hold.as_secs_f64(),
                    ALERT_COLOUR,
                ),
            ],
            r.review_trigger_volume
                .map(|v| ("review trigger".to_string(), v as f64)),
        )
    } else {
        let Some(line) = page_line(plan) else {
            return;
        };
        (
            vec![line],
            plan.and_then(|p| p.pages_from_volume)
                .map(|v| ("a normal run pages".to_string(), v as f64)),
        )
    };
    let caption = if ttl {
        format!(
            "{workload}: P99.9 runtime against volume per profile (the target, the growth runs and the review trigger's search), the TTL, its review threshold and the review trigger"
        )
    } else {
        format!(
            "{workload}: P99.9 runtime against volume per profile (today's, the target and the growth runs), the page's threshold and the volume at which a normal run would reach it"
        )
    };
    let largest = r.volume_points.iter().map(|p| p.volume as f64);
    let ceiling = match &r.review_trigger_from {
        TriggerSearch::Simulated { ceiling_volume, .. } if ttl => *ceiling_volume as f64,
        _ => 0.0,
    };
    // The axis ends a little past the trigger, or at the search's ceiling.
    let max_volume = review
        .as_ref()
        .map_or(ceiling, |(_, v)| v * 1.25)
        .max(largest.fold(0.0, f64::max) * 1.05);
    let spec = ChartSpec::Volume(
        format!("runtime-volume-{workload}"),
        RuntimeVsVolume {
            title: format!("{workload}: runtime against volume"),
            unit: r.unit.clone(),
            profiles,
            lines,
            review,
            max_volume,
        },
    );
    doc.chart(caption, spec);
}

/// Every simulated (profile, scale) in one table, and the runtime chart of a workload simulated
/// without a TTL derivation (`covered` lists those with one).
fn every_simulation(evidence: &Inputs, covered: &[&str], doc: &mut Doc) {
    let mut rows = Vec::new();
    for s in &evidence.simulations {
        for r in &s.record.results {
            rows.push(vec![
                r.workload.clone(),
                r.profile.clone(),
                number(r.scale),
                format!("{} {}", format_count(r.volume), r.unit),
                secs(r.runtime.p50),
                secs(r.runtime.p99),
                if r.p999_reliable {
                    secs(r.runtime.p999)
                } else {
                    format!("(slowest {})", secs(r.runtime.max))
                },
                format_count(r.replays),
            ]);
        }
    }
    if rows.is_empty() {
        return;
    }
    doc.push(Block::Heading(
        3,
        "Every simulated profile and scale".to_string(),
    ));
    doc.push(Block::Table {
        head: [
            "workload", "profile", "scale", "volume", "P50", "P99", "P99.9", "replays",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    });
    let mut seen: Vec<&str> = covered.to_vec();
    for s in &evidence.simulations {
        for r in &s.record.results {
            if !seen.contains(&r.workload.as_str()) {
                seen.push(&r.workload);
                runtime_chart(evidence, &r.workload, RuntimeLines::default(), doc);
            }
        }
    }
}

/// What the job's decision holds the lock by, when it is not a fixed TTL: the rows below are
/// the model in force and the runtime the alerts are sized against.
fn in_force(d: &Decision) -> Option<String> {
    let backend = d.backend?;
    let what = match d.lock_model.kind {
        ModelKind::FixedTtl => return None,
        ModelKind::HeartbeatLease => {
            "a heartbeat lease: the rows below are its lease, renewal interval and give-up deadline"
        }
        ModelKind::Session => {
            "a session lock, which has no TTL: the runtimes below are how long it is held, which its alerts (part 5) are sized against"
        }
        ModelKind::Transaction => {
            "a transaction lock, which has no TTL: the runtimes below are how long the transaction, and every lock it takes, stays open"
        }
    };
    Some(format!("**{} holds `{backend}`**, {what}.", d.job))
}

/// Every profile's P99.9 at the volumes simulated for `r`: the target, the worst profile's growth
/// runs, and the review trigger's search, a full-count run preferred over a narrowing one at the
/// same volume.
fn volume_series(r: &TtlRecommendation) -> Vec<(String, Vec<(f64, f64)>)> {
    let runs: &[TriggerSimulation] = match &r.review_trigger_from {
        TriggerSearch::Simulated { runs, .. } => runs,
        _ => &[],
    };
    r.profiles_considered
        .iter()
        .map(|p| {
            // (volume, replays, P99.9 seconds); the target's runs are the full count.
            let mut points: Vec<(u64, u64, f64)> =
                vec![(r.target_volume, u64::MAX, p.p999.as_secs_f64())];
            points.extend(
                r.today
                    .iter()
                    .filter(|t| t.profile == p.profile && t.p999_reliable())
                    .map(|t| (t.volume, u64::MAX, t.p999.as_secs_f64())),
            );
            if p.profile == r.profile {
                points.extend(
                    r.volume_points
                        .iter()
                        .map(|v| (v.volume, u64::MAX, v.p999.as_secs_f64())),
                );
            }
            points.extend(
                runs.iter()
                    .filter(|run| run.profile == p.profile)
                    .map(|run| (run.volume, run.replays, run.p999.as_secs_f64())),
            );
            points.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
            points.dedup_by_key(|x| x.0);
            let points = points.into_iter().map(|(v, _, y)| (v as f64, y)).collect();
            (p.profile.clone(), points)
        })
        .collect()
}
