//! A trial's figures as its rows, and a cell's trials as its line in the matrix.

use crate::FaultError;
use lockbench_core::records::faults::{FaultCell, FaultEventRow, FaultTrialRow, Role};
use lockbench_locks::BackendConfig;

use crate::resource::LoggedEvent;
use crate::scenario::{Design, Variant};
use crate::trial::TrialOutcome;

fn seconds_from(zero: i64, ns: i64) -> f64 {
    (ns - zero) as f64 / 1e9
}

pub(crate) fn trial_row(
    variant: Variant,
    config: &BackendConfig,
    trial: u32,
    outcome: &TrialOutcome,
) -> FaultTrialRow {
    let (f, window) = (&outcome.figures, &outcome.window);
    let fault_start_s = seconds_from(f.zero_ns, window.start_ns);
    FaultTrialRow {
        scenario: variant.scenario(),
        variant,
        backend: config.id(),
        trial,
        granted_ttl_s: outcome.granted_ttl.as_secs_f64(),
        fault_start_s,
        fault_end_s: seconds_from(f.zero_ns, window.end_ns),
        holder_end_s: f.holder_end_s,
        holder_outcome: f.holder_outcome,
        contender_grant_s: f.contender_grant_s,
        contender_end_s: f.contender_end_s,
        overlap_s: f.overlap_s,
        stale_writes: f.stale_writes,
        stale_rejected_by_fence: f.stale_rejected,
        legitimate_rejected_by_fence: f.legitimate_rejected,
        recovery_s: f.contender_grant_s.map(|g| g - fault_start_s),
        idle_session_advisory_locks: outcome.idle_session_locks,
        told_s: f.told.as_ref().map(|t| t.0),
        told_how: f.told.as_ref().map(|t| t.1.clone()),
        new_leader_s: outcome.new_leader.map(|d| d.as_secs_f64()),
        fault_injected: outcome.injected,
    }
}

/// A trial's log as rows, its times from the holder's grant.
pub(crate) fn event_rows(
    variant: Variant,
    config: &BackendConfig,
    trial: u32,
    outcome: &TrialOutcome,
) -> Result<Vec<FaultEventRow>, FaultError> {
    let zero = outcome.figures.zero_ns;
    outcome
        .log
        .iter()
        .map(|e| event_row(variant, config, trial, zero, e))
        .collect()
}

fn event_row(
    variant: Variant,
    config: &BackendConfig,
    trial: u32,
    zero: i64,
    e: &LoggedEvent,
) -> Result<FaultEventRow, FaultError> {
    Ok(FaultEventRow {
        scenario: variant.scenario(),
        variant,
        backend: config.id(),
        trial,
        worker: Role::parse(&e.worker).ok_or_else(|| {
            FaultError::Resource(format!(
                "trial {trial}: a worker the lab did not start wrote to the log: {:?}",
                e.worker
            ))
        })?,
        event: e.event,
        t_s: seconds_from(zero, e.t_ns),
        token: e.token,
        fenced_accepted: e.fenced_ok,
        detail: e.detail.clone(),
    })
}

/// The median and the largest of a few trials' figures (at most `--trials` values).
fn p50_max(values: Vec<f64>) -> (Option<f64>, Option<f64>) {
    (
        lockbench_core::stats::median(&values),
        values.iter().copied().reduce(f64::max),
    )
}

pub(crate) fn aggregate(
    variant: Variant,
    config: &BackendConfig,
    capabilities: lockbench_locks::Capabilities,
    rows: &[FaultTrialRow],
) -> FaultCell {
    let overlaps: Vec<f64> = rows
        .iter()
        .map(|r| r.overlap_s)
        .filter(|o| *o > 0.0)
        .collect();
    let recoveries: Vec<f64> = rows.iter().filter_map(|r| r.recovery_s).collect();
    let trials_with_overlap = overlaps.len() as u32;
    let (overlap_p50_s, overlap_max_s) = p50_max(overlaps);
    let (recovery_p50_s, recovery_max_s) = p50_max(recoveries);
    let (new_leader_p50_s, new_leader_max_s) =
        p50_max(rows.iter().filter_map(|r| r.new_leader_s).collect());
    let sum = |f: fn(&FaultTrialRow) -> Option<u64>| -> Option<u64> {
        rows.iter().map(f).try_fold(0, |acc, v| v.map(|v| acc + v))
    };
    FaultCell {
        scenario: variant.scenario(),
        variant,
        backend: config.id(),
        client: None,
        injected: variant.injected(),
        expected: if variant.predicts_overlap(capabilities.scope) {
            "overlap"
        } else {
            "no overlap"
        }
        .to_string(),
        fencing: capabilities.fencing.describe().to_string(),
        granted_ttl_s: rows.iter().map(|r| r.granted_ttl_s).fold(0.0, f64::max),
        trials: rows.len() as u32,
        trials_with_overlap,
        overlap_p50_s,
        overlap_max_s,
        stale_writes: rows.iter().map(|r| r.stale_writes).sum(),
        stale_rejected_by_fence: sum(|r| r.stale_rejected_by_fence),
        legitimate_rejected_by_fence: sum(|r| r.legitimate_rejected_by_fence),
        recovery_p50_s,
        recovery_max_s,
        contender_timed_out: rows
            .iter()
            .filter(|r| r.contender_grant_s.is_none())
            .count() as u32,
        not_granted_within_s: rows
            .iter()
            .filter(|r| r.contender_grant_s.is_none())
            .map(|r| r.fault_end_s - r.fault_start_s)
            .reduce(f64::min),
        idle_session_advisory_locks_max: rows
            .iter()
            .filter_map(|r| r.idle_session_advisory_locks)
            .max(),
        lost_told: None,
        new_leader_p50_s,
        new_leader_max_s,
        trials_ended_before_fault: rows.iter().filter(|r| !r.fault_injected).count() as u32,
    }
}

/// What a client library told its holders over a cell's `rows` (a cell measured through one).
pub(crate) fn lost_told(rows: &[FaultTrialRow]) -> lockbench_core::records::faults::LostTold {
    let after_grant: Vec<f64> = rows
        .iter()
        .filter_map(|r| Some(r.told_s? - r.contender_grant_s?))
        .collect();
    let (after_next_grant_p50_s, after_next_grant_max_s) = p50_max(after_grant);
    lockbench_core::records::faults::LostTold {
        told: rows.iter().filter(|r| r.told_s.is_some()).count() as u32,
        by_event: rows
            .iter()
            .filter(|r| {
                r.told_how
                    .as_deref()
                    .is_some_and(|h| h.starts_with("event"))
            })
            .count() as u32,
        never_told_overlaps: rows
            .iter()
            .filter(|r| r.overlap_s > 0.0 && r.told_s.is_none())
            .count() as u32,
        after_next_grant_p50_s,
        after_next_grant_max_s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_of_an_even_count_is_the_mean_of_the_middle_two() {
        assert_eq!(p50_max(vec![]), (None, None));
        assert_eq!(p50_max(vec![3.0, 1.0, 2.0]), (Some(2.0), Some(3.0)));
        assert_eq!(p50_max(vec![4.0, 1.0, 2.0, 3.0]), (Some(2.5), Some(4.0)));
    }
}
