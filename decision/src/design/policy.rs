//! What a worker does when it cannot get the lock: from the answers alone, then once the lock
//! model is known (a lock that cannot pass while its holder lives lets a retry wait within the
//! crash-recovery budget), with what the lab's `outage` cells measured of each policy.

use lockbench_core::BackendKind;
use lockbench_core::records::faults::FaultCell;
use lockbench_core::{format_readable, format_readable_s};
use lockbench_workloads::{DoubleRun, JobAnswers};

use crate::answers::{Resolved, effect};
use crate::evidence::Evidence;
use crate::record::{FailurePolicy, LockModel, ModelKind, PolicyKind};

/// The acquisition-failure policy, from the answers alone: a job whose double run does harm
/// never runs without the lock; one whose steps are all idempotent and whose double run is
/// absorbed may; the rest wait for the next window.
pub(crate) fn policy(job: &JobAnswers, r: &Resolved) -> FailurePolicy {
    let all_idempotent = job.steps.iter().all(|s| s.idempotent == Some(true));
    let (kind, reason) = if r.double_run.harms() {
        (
            PolicyKind::SkipAndAlert,
            format!(
                "A second run {}, so the job never runs without the lock. A missed run waits for the next window or a person; a double run cannot be undone",
                effect(r.double_run)
            ),
        )
    } else if r.double_run == DoubleRun::Absorbed && all_idempotent {
        (
            PolicyKind::RunUnlocked,
            "Every step is idempotent and a double run is absorbed, so a missed run costs more than an overlap".to_string(),
        )
    } else {
        (
            PolicyKind::Queue,
            format!(
                "A second run {}{}. Retry with backoff until the next window rather than miss the run",
                effect(r.double_run),
                if all_idempotent {
                    ""
                } else {
                    ", but not every step is idempotent, so it never runs without the lock"
                }
            ),
        )
    };
    FailurePolicy {
        kind,
        reason,
        retry_for_s: None,
        measured: Vec::new(),
    }
}

/// What the lab's `outage` cells measured of each policy on the chosen backend (a cell on
/// another backend says nothing of this job's lock).
pub(crate) fn outage_measured(ev: &Evidence, kind: Option<BackendKind>) -> Vec<String> {
    let Some(kind) = kind else {
        return Vec::new();
    };
    [
        PolicyKind::SkipAndAlert,
        PolicyKind::Queue,
        PolicyKind::RunUnlocked,
    ]
    .iter()
    .filter_map(|p| {
        ev.cell(p.outage_variant(), kind)
            .map(|c| outage_line(*p, c))
    })
    .collect()
}

/// The policy once the lock model is known (docs/DECISION.md, "retry within the budget"): a job
/// that must not run twice retries for as long as its crash-recovery budget allows where the lock
/// cannot be granted while its holder lives (a session or a transaction, or a lease whose fence
/// refuses the old holder), and never retries a fixed TTL, whose expiry can let a retry in beside
/// a holder that outlived it.
pub(crate) fn within_budget(
    policy: FailurePolicy,
    r: &Resolved,
    model: &LockModel,
    fenced_lease: bool,
) -> FailurePolicy {
    if policy.kind != PolicyKind::SkipAndAlert {
        return policy;
    }
    let holder_excludes = match model.kind {
        ModelKind::Session => Some("a session lock is held as long as its holder's session"),
        ModelKind::Transaction => {
            Some("a transaction lock is held as long as its holder's transaction")
        }
        ModelKind::HeartbeatLease if fenced_lease => Some(
            "a renewed lease does not pass while its holder renews, and the fence refuses a holder that stopped renewing",
        ),
        ModelKind::HeartbeatLease => None,
        ModelKind::FixedTtl => {
            return FailurePolicy {
                reason: format!(
                    "{}. No retry: a fixed TTL runs out under a holder that outlives it, and a retry granted then runs beside it",
                    policy.reason
                ),
                ..policy
            };
        }
    };
    let (Some(why), Some(budget)) = (holder_excludes, r.crash_recovery) else {
        return policy;
    };
    FailurePolicy {
        kind: PolicyKind::RetryThenAlert,
        reason: format!(
            "A second run {}, but {why}, so a retry cannot run beside a live holder. Retry with backoff for up to the {} the job allows after a crash, then alert. Once granted, check that this window's run has not already completed",
            effect(r.double_run),
            format_readable(budget)
        ),
        retry_for_s: Some(budget.as_secs_f64()),
        measured: policy.measured,
    }
}

/// One policy's `outage` cell, in words: overlaps, and the runs missed or how late they began.
fn outage_line(policy: PolicyKind, c: &FaultCell) -> String {
    let overlapped = format!("overlap in {}/{} trials", c.trials_with_overlap, c.trials);
    match policy {
        PolicyKind::SkipAndAlert => format!(
            "{} on {}: {overlapped}, {} of {} runs missed",
            c.label(),
            c.backend,
            c.contender_timed_out,
            c.trials
        ),
        PolicyKind::Queue | PolicyKind::RetryThenAlert => format!(
            "{} on {}: {overlapped}, the run {}",
            c.label(),
            c.backend,
            c.recovery_p50_s
                .map_or("never ran".to_string(), |s| format!(
                    "began {} after the outage did",
                    format_readable_s(s)
                ))
        ),
        PolicyKind::RunUnlocked => format!("{} on {}: {overlapped}", c.label(), c.backend),
    }
}
