//! The slot cells (with `--scenario runner`): two nodes of a cron-style scheduler
//! (`clients/adapters/python/cron_node.py`), the second one's wall clock put behind the first's by
//! the lab's wall-clock shim, fire the same slots of a job shorter than the skew. Nothing
//! overlaps: the first run ends and gives the lock back before the second node's clock reaches
//! the slot. Counted with the job's lock alone, with a `lockAtLeastFor`-style hold, with the
//! database's clock instead of the node's, and with a completion record per slot.
//!
//! The outcome depends on the skew against the job, the hold and the period alone, so the lab
//! scales them to seconds: a skew of 2 s, a job of 0.5 s, slots every 5 s.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use lockbench_core::records::faults::{SlotCell, SlotRemedy};
use lockbench_core::records::runner::RunnerKind;

use crate::FaultError;
use crate::resource::{Event, Resource};
use crate::runners::{RunnerProgram, RunnerStage, RunnerWorker, trial_figures};
use crate::server::{CLOCK_FILE, write_clock_offset};

/// The clock skew between the two nodes in the cells that have one.
pub const SKEW: Duration = Duration::from_secs(2);
/// How long the job runs: shorter than the skew.
pub const JOB: Duration = Duration::from_millis(500);
/// The schedule's period: longer than the skew and the hold, so that a slot's hold never
/// reaches the next.
pub const PERIOD: Duration = Duration::from_secs(5);
/// ShedLock's `lockAtMostFor`: the lock's lease while the job runs.
const AT_MOST: Duration = Duration::from_secs(4);
/// From the cell's start to its first slot: time for both nodes to start (each takes about a
/// second to import its libraries on a loaded machine).
const LEAD: Duration = Duration::from_secs(3);

/// One slot cell: the skew and the remedy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotPlan {
    /// How far the second node's clock is behind the first's.
    pub skew: Duration,
    /// What guards the slot.
    pub remedy: SlotRemedy,
    /// The hold, for [`SlotRemedy::Hold`].
    pub hold: Option<Duration>,
}

impl SlotPlan {
    /// Every cell: the lock alone without a skew (the control) and with one, a hold shorter
    /// than the skew and one twice the skew (`ttl`'s recommendation), the database's clock, a
    /// completion record.
    pub fn all() -> Vec<SlotPlan> {
        let plan = |skew, remedy, hold| SlotPlan { skew, remedy, hold };
        vec![
            plan(Duration::ZERO, SlotRemedy::Plain, None),
            plan(SKEW, SlotRemedy::Plain, None),
            plan(SKEW, SlotRemedy::Hold, Some(SKEW / 2)),
            plan(SKEW, SlotRemedy::Hold, Some(SKEW * 2)),
            plan(SKEW, SlotRemedy::DbClock, None),
            plan(SKEW, SlotRemedy::Completion, None),
        ]
    }

    /// Runs per slot the design predicts: two when the second node's clock reaches the slot
    /// after the first run gave the lock back (a skew longer than the job and the hold), else
    /// one.
    pub fn expected_runs(self) -> u32 {
        let given_back = JOB.max(self.hold.unwrap_or(Duration::ZERO));
        match self.remedy {
            SlotRemedy::Plain | SlotRemedy::Hold => 1 + u32::from(self.skew > given_back),
            SlotRemedy::DbClock | SlotRemedy::Completion => 1,
        }
    }

    /// `slot/hold 4s skew 2s`.
    pub fn label(self) -> String {
        let hold = self
            .hold
            .map_or(String::new(), |h| format!(" {}s", h.as_secs_f64()));
        format!(
            "slot/{}{hold} skew {}s",
            self.remedy.word(),
            self.skew.as_secs_f64()
        )
    }

    fn injected(self) -> String {
        let guard = match self.remedy {
            SlotRemedy::Plain => "the job's lock (Redis SET NX PX, one key per job as ShedLock takes it) given back when the run ends".to_string(),
            SlotRemedy::Hold => format!(
                "the job's lock kept {} s after the run started (ShedLock's lockAtLeastFor)",
                self.hold.unwrap_or_default().as_secs_f64()
            ),
            SlotRemedy::DbClock => "the job's lock, each node firing the slot when the database's clock_timestamp() reaches it".to_string(),
            SlotRemedy::Completion => "the job's lock, and a (job, slot) row inserted before the run: a slot already recorded is skipped".to_string(),
        };
        format!(
            "two scheduler nodes (cron_node.py) fire a slot every {} s, the second node's wall clock {} s behind the first's (the lab's LD_PRELOAD shim); a job of {} s; {guard}",
            PERIOD.as_secs_f64(),
            self.skew.as_secs_f64(),
            JOB.as_secs_f64()
        )
    }
}

/// Runs `slots` slots of `plan` (at least 3); `progress` is told after the cell.
pub async fn run_cell(
    plan: SlotPlan,
    slots: u32,
    stage: &RunnerStage<'_>,
    resource: &mut Resource,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<SlotCell, FaultError> {
    let program = RunnerProgram::find(RunnerKind::Cron)?;
    // Removed when dropped: at the cell's end, and when a stopped run drops the cell.
    let dir = crate::server::OwnedDir(crate::server::private_dir("slot")?);
    let (runs, skipped, seconds) =
        run_slots(plan, slots.max(3), stage, resource, &program, &dir.0).await?;
    progress(&plan.label());
    let mut seconds = seconds;
    seconds.sort_by(f64::total_cmp);
    Ok(SlotCell {
        skew_s: plan.skew.as_secs_f64(),
        remedy: plan.remedy,
        hold_s: plan.hold.map(|h| h.as_secs_f64()),
        job_s: JOB.as_secs_f64(),
        period_s: PERIOD.as_secs_f64(),
        injected: plan.injected(),
        expected_runs: plan.expected_runs(),
        runs,
        skipped,
        second_run_p50_s: (!seconds.is_empty()).then(|| seconds[seconds.len() / 2]),
    })
}

type SlotFigures = (Vec<u32>, Vec<u32>, Vec<f64>);

async fn run_slots(
    plan: SlotPlan,
    slots: u32,
    stage: &RunnerStage<'_>,
    resource: &mut Resource,
    program: &RunnerProgram,
    dir: &Path,
) -> Result<SlotFigures, FaultError> {
    let shim = stage.shim.ok_or_else(|| {
        FaultError::Unmet(
            "needs the wall-clock shim, which this lockbench was built without (no C compiler at build time)"
                .to_string(),
        )
    })?;
    let redis = stage.private_redis().await?;
    resource.reset_completion_records().await?;
    let skew_ms = i64::try_from(plan.skew.as_millis()).unwrap_or(i64::MAX);
    write_clock_offset(dir, -skew_ms)?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let first = (now + LEAD).as_secs_f64();
    let label = plan.label();
    let env: Vec<(String, String)> = [
        ("LB_BROKER", format!("{}/0", redis.url())),
        ("LB_RESOURCE", stage.resource_url.to_string()),
        ("LB_SCHEMA", stage.schema.to_string()),
        ("LB_TRIAL", label.clone()),
        ("LB_PERIOD", PERIOD.as_secs_f64().to_string()),
        ("LB_FIRST_SLOT", format!("{first:.3}")),
        ("LB_SLOTS", slots.to_string()),
        ("LB_JOB", JOB.as_secs_f64().to_string()),
        ("LB_REMEDY", plan.remedy.word().to_string()),
        ("LB_LOCK_AT_MOST_FOR", AT_MOST.as_secs_f64().to_string()),
        (
            "LB_HOLD",
            plan.hold
                .map_or(String::new(), |h| h.as_secs_f64().to_string()),
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    // The second node: its wall clock behind by the skew. Both start at once, so that both are
    // up before the first slot on a loaded machine (a node late for the control's first slot
    // ran it again after the other had ended, with the stall cells beside it).
    let skewed: Vec<(String, String)> = env
        .iter()
        .cloned()
        .chain([
            ("LD_PRELOAD".to_string(), shim.display().to_string()),
            (
                "LOCKBENCH_WALLCLOCK_FILE".to_string(),
                dir.join(CLOCK_FILE).display().to_string(),
            ),
        ])
        .collect();
    let (first_node, second_node) = tokio::join!(
        RunnerWorker::start(program, "a", &env, dir),
        RunnerWorker::start(program, "b", &skewed, dir)
    );
    let (first_node, second_node) = (first_node?, second_node?);
    let late = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64()
        - first;
    if late > -0.2 {
        return Err(FaultError::Runner(format!(
            "{label}: the nodes were up {late:.2} s after the first slot's time less 0.2 s (the machine is too loaded for a slot {} s ahead)",
            LEAD.as_secs_f64()
        )));
    }
    let bound = LEAD + PERIOD * slots + plan.skew + JOB + Duration::from_secs(15);
    let (a, b) = tokio::join!(first_node.exited(bound), second_node.exited(bound));
    if !(a && b) {
        return Err(FaultError::Runner(format!(
            "{label}: the nodes did not finish their {slots} slots within {bound:?} (a: {}; b: {})",
            crate::runners::last_line(&dir.join("a.stderr")),
            crate::runners::last_line(&dir.join("b.stderr"))
        )));
    }
    let mut figures = (Vec::new(), Vec::new(), Vec::new());
    for k in 0..slots {
        let log = resource.trial_log(&format!("{label}/slot-{k}")).await?;
        if log.is_empty() {
            return Err(FaultError::Runner(format!(
                "{label}: slot {k} was not fired by either node (b: {})",
                crate::runners::last_line(&dir.join("b.stderr"))
            )));
        }
        let t = trial_figures(&log);
        figures.0.push(t.executions);
        figures
            .1
            .push(log.iter().filter(|e| e.event == Event::Skipped).count() as u32);
        if let Some(s) = t.second_start_s {
            figures.2.push(s);
        }
    }
    drop(redis);
    Ok(figures)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_skew_past_the_job_and_the_hold_runs_a_slot_twice() {
        let runs: Vec<(String, u32)> = SlotPlan::all()
            .into_iter()
            .map(|p| (p.label(), p.expected_runs()))
            .collect();
        assert_eq!(
            runs,
            [
                ("slot/plain skew 0s".to_string(), 1),
                ("slot/plain skew 2s".to_string(), 2),
                ("slot/hold 1s skew 2s".to_string(), 2),
                ("slot/hold 4s skew 2s".to_string(), 1),
                ("slot/db-clock skew 2s".to_string(), 1),
                ("slot/completion skew 2s".to_string(), 1),
            ]
        );
        // The hold ttl recommends (twice the skew) stays within the period.
        assert!(SKEW * 2 < PERIOD && SKEW + JOB < PERIOD);
    }
}
