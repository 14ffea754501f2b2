//! The fault matrix as `faults` prints it.

use lockbench_core::records::faults::{FaultCell, FaultsRecord};

use super::table::table;

fn seconds_pair(p50: Option<f64>, max: Option<f64>) -> String {
    match (p50, max) {
        (Some(p50), Some(max)) => format!("{p50:.2} / {max:.2}"),
        _ => "-".to_string(),
    }
}

/// What the fence did with the stale writes: "n/m refused", or why there is no figure.
fn fenced(c: &FaultCell) -> String {
    match c.stale_rejected_by_fence {
        None => "no token".to_string(),
        Some(_) if c.stale_writes == 0 => "-".to_string(),
        Some(n) => format!("{n}/{} refused", c.stale_writes),
    }
}

/// One row per cell, then what each variant injected, then what could not run.
pub fn fault_matrix(r: &FaultsRecord) -> String {
    let mut out = if r.cells.is_empty() && r.skipped.is_empty() {
        String::new()
    } else {
        lock_matrix(r)
    };
    out.push_str(&runner_table(r));
    out
}

/// The runner cells: how often the real runner ran the one job, beside what its design predicts.
fn runner_table(r: &FaultsRecord) -> String {
    let mut out = String::new();
    if !r.runners.is_empty() {
        let header = [
            "runner cell",
            "library",
            "job s",
            "executions per trial",
            "skipped",
            "overlap max s",
            "stale writes",
            "second start P50 s",
            "expected",
        ];
        let rows: Vec<Vec<String>> = r
            .runners
            .iter()
            .map(|c| {
                vec![
                    c.label(),
                    c.library.clone(),
                    format!("{:.1}", c.job_s),
                    counts(&c.executions),
                    counts(&c.skipped),
                    format!("{:.2}", c.overlap_max_s),
                    c.stale_writes.to_string(),
                    c.second_start_p50_s
                        .map_or("-".to_string(), |s| format!("{s:.2}")),
                    format!(
                        "{}{} {}",
                        c.expected_executions,
                        if c.expected_skipped > 0 {
                            format!(", {} skipped", c.expected_skipped)
                        } else {
                            String::new()
                        },
                        if c.as_predicted() {
                            "(as predicted)"
                        } else {
                            "(NOT as predicted)"
                        }
                    ),
                ]
            })
            .collect();
        if !out.is_empty() || !r.cells.is_empty() {
            out.push('\n');
        }
        let injected: Vec<(String, &str)> = r
            .runners
            .iter()
            .map(|c| (c.label(), c.injected.as_str()))
            .collect();
        out.push_str(&cells_table(
            "runner cells: the real runner's own timeout decides (a lock inside the task only where named); executions of one job per trial, and starts that found the task's lock held and skipped, from the protected resource's log",
            &header,
            &rows,
            &injected,
        ));
    }
    if !r.stalls.is_empty() {
        let header = [
            "stall cell",
            "library",
            "trials",
            "run twice",
            "model: stall > setting",
            "a check late",
            "95 % range",
            "against the mechanism",
            "verdict",
        ];
        let rows: Vec<Vec<String>> = r
            .stalls
            .iter()
            .map(|c| {
                let (low, high) = c.expected_twice;
                vec![
                    c.label(),
                    c.library.clone(),
                    c.trials.to_string(),
                    c.twice().to_string(),
                    format!("{:.3}", c.model_p),
                    format!("{:.3}", c.model_late_p),
                    format!("{low}-{high}"),
                    against_the_mechanism(c).to_string(),
                    if c.as_predicted() {
                        "within".to_string()
                    } else {
                        "OUTSIDE".to_string()
                    },
                ]
            })
            .collect();
        let injected: Vec<(String, &str)> = r
            .stalls
            .iter()
            .map(|c| (c.label(), c.injected.as_str()))
            .collect();
        out.push('\n');
        out.push_str(&cells_table(
            "stall cells: the first execution stalled for a time drawn from a pause law; trials the real runner ran twice, beside the model's chance (ttl's, the runner looking at once; and the runner looking a whole check late) and the range of trials the two allow 95 % of the time; against the mechanism: a stall shorter than the setting run twice, or one past the setting and a whole check run once",
            &header,
            &rows,
            &injected,
        ));
    }
    if !r.slots.is_empty() {
        let header = [
            "slot cell",
            "job s",
            "period s",
            "runs per slot",
            "skipped",
            "second run P50 s",
            "expected",
        ];
        let rows: Vec<Vec<String>> = r
            .slots
            .iter()
            .map(|c| {
                vec![
                    c.label(),
                    format!("{:.1}", c.job_s),
                    format!("{:.0}", c.period_s),
                    counts(&c.runs),
                    counts(&c.skipped),
                    c.second_run_p50_s
                        .map_or("-".to_string(), |s| format!("{s:.2}")),
                    format!(
                        "{} {}",
                        c.expected_runs,
                        if c.as_predicted() {
                            "(as predicted)"
                        } else {
                            "(NOT as predicted)"
                        }
                    ),
                ]
            })
            .collect();
        let injected: Vec<(String, &str)> = r
            .slots
            .iter()
            .map(|c| (c.label(), c.injected.as_str()))
            .collect();
        out.push('\n');
        out.push_str(&cells_table(
            "slot cells: one cron slot fired by two scheduler nodes, the second's clock behind; runs of each slot (nothing overlaps: a second run is a whole duplicate)",
            &header,
            &rows,
            &injected,
        ));
    }
    if !r.runners_not_run.is_empty() {
        out.push_str("\nrunner cells not run:\n");
        for line in &r.runners_not_run {
            out.push_str(&format!("  {line}\n"));
        }
    }
    out
}

/// Trials of a stall cell whose outcome the runner's mechanism does not explain: a stall
/// shorter than the setting run twice, or one longer than the setting and a whole check once.
fn against_the_mechanism(c: &lockbench_core::records::faults::RunnerStallCell) -> usize {
    c.stalls_s
        .iter()
        .zip(&c.executions)
        .filter(|(stall, n)| {
            (**stall < c.setting_s && **n >= 2) || (**stall > c.setting_s + c.check_s && **n < 2)
        })
        .count()
}

/// Counts, one per trial or slot: `2 2 2`.
fn counts(each: &[u32]) -> String {
    each.iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(" ")
}

/// A titled table of cells, then what each injected.
fn cells_table(
    title: &str,
    header: &[&str],
    rows: &[Vec<String>],
    injected: &[(String, &str)],
) -> String {
    let mut out = format!("{title}\n\n{}", table(header, rows, 3));
    out.push_str("\ninjected:\n");
    for (label, how) in injected {
        out.push_str(&format!("  {label}: {how}\n"));
    }
    out
}

/// The lock cells' matrix.
fn lock_matrix(r: &FaultsRecord) -> String {
    let header = [
        "scenario/variant",
        "backend",
        "fencing",
        "TTL s",
        "overlap",
        "overlap P50/max s",
        "stale writes",
        "fence",
        "holder refused",
        "to next grant P50/max s",
        "expected",
    ];
    let rows: Vec<Vec<String>> = r
        .cells
        .iter()
        .map(|c| {
            vec![
                c.label(),
                c.backend_through(),
                c.fencing.clone(),
                format!("{:.1}", c.granted_ttl_s),
                format!("{}/{}", c.trials_with_overlap, c.trials),
                seconds_pair(c.overlap_p50_s, c.overlap_max_s),
                c.stale_writes.to_string(),
                fenced(c),
                c.legitimate_rejected_by_fence
                    .map_or("no token".to_string(), |n| n.to_string()),
                match c.contender_timed_out {
                    0 => seconds_pair(c.recovery_p50_s, c.recovery_max_s),
                    n if n == c.trials => c.not_granted(),
                    n => format!(
                        "{} ({n} {})",
                        seconds_pair(c.recovery_p50_s, c.recovery_max_s),
                        c.not_granted()
                    ),
                },
                c.expected.clone(),
            ]
        })
        .collect();
    let mut out = format!(
        "{} trials per cell, TTL asked {:.1} s (granted shown), seed {}; overlap: trials in which two workers believed they held the lock at once; stale writes: writes after the lock had passed on (an unfenced resource accepts them all); holder refused: the new holder's writes the fence refused\n\n",
        r.trials_per_cell, r.ttl_s, r.seed
    );
    out.push_str(&table(&header, &rows, 3));
    let mut injected: Vec<(String, &str)> = Vec::new();
    for c in &r.cells {
        let label = c.label();
        if !injected.iter().any(|(l, _)| *l == label) {
            injected.push((label, &c.injected));
        }
    }
    if !injected.is_empty() {
        out.push_str("\ninjected:\n");
        for (label, how) in injected {
            out.push_str(&format!("  {label}: {how}\n"));
        }
    }
    let told: Vec<String> = r
        .cells
        .iter()
        .filter_map(|c| c.lost_told.as_ref().map(|t| (c, t)))
        .map(|(c, t)| {
            format!(
                "  {} on {}: {}\n",
                c.label(),
                c.backend_through(),
                told_line(c, t)
            )
        })
        .collect();
    if !told.is_empty() {
        out.push_str("\nwhat the library told its holder of the lost lock:\n");
        out.push_str(&told.concat());
    }
    let ended: Vec<String> = r
        .cells
        .iter()
        .filter(|c| c.trials_ended_before_fault > 0)
        .map(|c| {
            format!(
                "  {} on {}: in {} of {} trials the holder's job ended before the fault began \
                 (its client ended the lock first); counted, nothing injected\n",
                c.label(),
                c.backend_through(),
                c.trials_ended_before_fault,
                c.trials
            )
        })
        .collect();
    if !ended.is_empty() {
        out.push_str("\nended before the fault:\n");
        out.push_str(&ended.concat());
    }
    let elected: Vec<String> = r
        .cells
        .iter()
        .filter_map(|c| {
            let (p50, max) = (c.new_leader_p50_s?, c.new_leader_max_s?);
            Some(format!(
                "  {} on {}: {p50:.2} / {max:.2} s (P50 / max) from the fault to {}\n",
                c.label(),
                c.backend_through(),
                match c.variant {
                    lockbench_core::Variant::ClusterPrimaryPromoted => {
                        "the promoted standby taking writes"
                    }
                    lockbench_core::Variant::ClusterSentinelFailover { .. }
                    | lockbench_core::Variant::ClusterSentinelPrimaryIsolated { .. } => {
                        "the Sentinels naming a promoted replica"
                    }
                    lockbench_core::Variant::ClusterMemberRestarted => {
                        "the restarted member answering in the cluster"
                    }
                    _ => "a new leader answering",
                }
            ))
        })
        .collect();
    if !elected.is_empty() {
        out.push_str("\nfailover:\n");
        out.push_str(&elected.concat());
    }
    let pooled: Vec<String> = r
        .cells
        .iter()
        .filter_map(|c| {
            c.idle_session_advisory_locks_max.map(|n| {
                format!(
                    "  {}: the idle pooled session held {n} advisory lock(s) after its jobs (pg_locks)\n",
                    c.label()
                )
            })
        })
        .collect();
    if !pooled.is_empty() {
        out.push_str("\nwhat an operator sees:\n");
        out.push_str(&pooled.concat());
    }
    if !r.skipped.is_empty() {
        out.push_str("\nnot run:\n");
        for s in &r.skipped {
            out.push_str(&format!("  {} on {}: {}\n", s.label(), s.backend, s.reason));
        }
    }
    out
}

/// One line per thing a gone fault lab left that was removed, or could not be; false if any
/// could not.
pub fn swept(swept: &[lockbench_faults::leftovers::Swept]) -> (Vec<String>, bool) {
    let mut lines = Vec::new();
    let mut all = true;
    for lab in swept {
        for line in &lab.removed {
            lines.push(format!(
                "removed {line} (left by lab pid {}, no longer running)",
                lab.pid
            ));
        }
        for line in &lab.failed {
            all = false;
            lines.push(format!(
                "could not remove what lab pid {} left: {line}",
                lab.pid
            ));
        }
    }
    (lines, all)
}

/// One cell's telling: how many trials, how, and when against the next holder's grant.
fn told_line(
    c: &lockbench_core::records::faults::FaultCell,
    t: &lockbench_core::records::faults::LostTold,
) -> String {
    let mut line = format!("told in {}/{} trials", t.told, c.trials);
    if t.told > 0 {
        line.push_str(&format!(
            " ({} by an event it pushed, {} by an answer)",
            t.by_event,
            t.told - t.by_event
        ));
    }
    if let (Some(p50), Some(max)) = (t.after_next_grant_p50_s, t.after_next_grant_max_s) {
        line.push_str(&format!(
            ", {p50:+.2} s from the next holder's grant (P50; latest {max:+.2} s)"
        ));
    }
    if t.never_told_overlaps > 0 {
        line.push_str(&format!(
            "; never told in {} trial(s) that overlapped",
            t.never_told_overlaps
        ));
    }
    line
}
