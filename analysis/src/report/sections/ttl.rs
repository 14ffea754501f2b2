//! Section 2: the TTL and the heartbeat, each figure with its derivation, and the runtime charts.

use lockbench_core::{format_chance, format_count};

use lockbench_decision::{Decision, ModelKind};

use super::common::{
    ChartSpec, Doc, RuntimeLines, decision_of, number, runtime_chart, secs, secs_f, simulated_at,
    today_against, yearly,
};
use crate::report::charts::{ALERT_COLOUR, RuntimeVsVolume, TODAY_COLOUR, TTL_COLOUR};
use crate::report::doc::Block;
use crate::report::load::Inputs;
use crate::{
    ALERT_SHARE, TriggerSearch, TriggerSimulation, TtlRecommendation, describe_trigger,
    heartbeat_derivation,
};

pub(super) fn write(evidence: &Inputs, decisions: &[Decision], doc: &mut Doc) {
    doc.push(Block::Heading(
        2,
        "2. Lock TTL and heartbeat model".to_string(),
    ));
    if evidence.ttls.is_empty() {
        doc.push(Block::Para(
            "No TTL derivation in these results: run `lockbench ttl SPEC` (or `lockbench run`) and report again.".to_string(),
        ));
    }
    for t in &evidence.ttls {
        write_job(evidence, decisions, &t.record, doc);
    }
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

/// One job's TTL and heartbeat: its figures, its runtime and volume charts, its model check.
fn write_job(evidence: &Inputs, decisions: &[Decision], r: &TtlRecommendation, doc: &mut Doc) {
    let workload = r.workload.clone();
    doc.push(Block::Heading(3, format!("{workload}: TTL and heartbeat")));
    let otherwise = decided_otherwise(decision_of(decisions, &workload));
    if let Some(note) = &otherwise {
        doc.push(Block::Para(note.clone()));
    }
    doc.push(Block::Table {
        head: vec!["figure".into(), "value".into(), "how it was derived".into()],
        rows: figures(evidence, r),
    });
    // A job decided otherwise has no TTL in force: its lines say they are the alternative.
    let aside = if otherwise.is_some() {
        " (not in force)"
    } else {
        ""
    };
    let lines = RuntimeLines {
        target: Some((
            r.target_scale,
            vec![
                (
                    format!("TTL {}{aside}", secs(r.ttl)),
                    r.ttl.as_secs_f64(),
                    TTL_COLOUR,
                ),
                (
                    format!("alert {}{aside}", secs(r.alert_hold)),
                    r.alert_hold.as_secs_f64(),
                    ALERT_COLOUR,
                ),
            ],
        )),
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
            .collect(),
    };
    runtime_chart(evidence, &workload, lines, doc);
    volume_chart(r, doc);
    super::model_check::write(evidence, &workload, doc);
}

/// The rows of a job's figures table: each figure, its value and how it was derived.
fn figures(evidence: &Inputs, r: &TtlRecommendation) -> Vec<Vec<String>> {
    let considered: Vec<String> = r
        .profiles_considered
        .iter()
        .map(|p| format!("{} {}", p.profile, secs(p.p999)))
        .collect();
    let hb = &r.heartbeat;
    let derivation = heartbeat_derivation(hb);
    let mut rows = vec![
        vec![
            "P99.9 runtime".to_string(),
            secs(r.measured_p999),
            format!(
                "{}; the worst profile of: {}",
                simulated_at(r),
                considered.join(", "),
            ),
        ],
        vec![
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
        ],
        vec![
            "safety factor".to_string(),
            number(r.safety_factor),
            "kept apart from the measurement, so either can be revised alone".to_string(),
        ],
        vec![
            "**TTL**".to_string(),
            format!("**{}**", secs(r.ttl)),
            "simulated P99.9 x safety factor".to_string(),
        ],
        vec![
            "alert threshold".to_string(),
            secs(r.alert_hold),
            format!("{:.0} % of the TTL", ALERT_SHARE * 100.0),
        ],
        vec![
            "heartbeat lease".to_string(),
            secs(hb.lease_ttl),
            derivation.lease.clone(),
        ],
    ];
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
    let (trigger, how) = describe_trigger(r);
    rows.push(vec!["review trigger".to_string(), trigger, how]);
    rows.extend(today_rows(evidence, r));
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
                "outlived by {} of {} simulated runs at {} {}: {:.2} % per run (95 % upper bound {:.2} %)",
                format_count(current.replays_exceeding),
                format_count(r.replays),
                format_count(r.target_volume),
                r.unit,
                current.p_exceed * 100.0,
                current.p_exceed_upper95 * 100.0,
            ),
        ],
        vec![
            "its double executions a year".to_string(),
            yearly(current),
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

/// A job's P99.9 runtime against volume per profile, with the TTL, the alert line and the review
/// trigger.
fn volume_chart(r: &TtlRecommendation, doc: &mut Doc) {
    let profiles = volume_series(r);
    if profiles.is_empty() {
        return;
    }
    let workload = &r.workload;
    let caption = format!(
        "{workload}: P99.9 runtime against volume per profile (the target, the growth runs and the review trigger's search), the TTL, the alert line and the review trigger"
    );
    let largest = r.volume_points.iter().map(|p| p.volume as f64);
    let ceiling = match &r.review_trigger_from {
        TriggerSearch::Simulated { ceiling_volume, .. } => *ceiling_volume as f64,
        _ => 0.0,
    };
    // The axis ends a little past the trigger, or at the search's ceiling.
    let max_volume = r
        .review_trigger_volume
        .map_or(ceiling, |v| v as f64 * 1.25)
        .max(largest.fold(0.0, f64::max) * 1.05);
    let spec = ChartSpec::Volume(
        format!("runtime-volume-{workload}"),
        RuntimeVsVolume {
            title: format!("{workload}: runtime against volume"),
            unit: r.unit.clone(),
            profiles,
            ttl_s: r.ttl.as_secs_f64(),
            alert_s: r.alert_hold.as_secs_f64(),
            review_volume: r.review_trigger_volume.map(|v| v as f64),
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
                secs(r.runtime.p999),
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

/// What a job's decision makes of this section's figures, when it is not a fixed TTL.
fn decided_otherwise(d: Option<&Decision>) -> Option<String> {
    let d = d?;
    let backend = d.backend?;
    let what = match d.lock_model.kind {
        ModelKind::FixedTtl => return None,
        ModelKind::HeartbeatLease => {
            "a heartbeat lease: its lease, renewal interval and give-up deadline below are what the job uses; the fixed TTL and its alert are the alternative considered, not in force"
        }
        ModelKind::Session => {
            "a session lock, which has no TTL: the fixed TTL, its alert and the lease below are the alternatives considered, not in force; the runtime figures are what section 5 watches hold time against"
        }
        ModelKind::Transaction => {
            "a transaction lock, which has no TTL: the fixed TTL, its alert and the lease below are the alternatives considered, not in force; the runtime figures are how long the transaction stays open"
        }
    };
    Some(format!("**{} is decided `{backend}`**, {what}.", d.job))
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
