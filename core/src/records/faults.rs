//! The record of `faults`: `results.json` (the fault matrix), `trials.csv` (one row per trial) and
//! `events.csv` (the protected resource's log of every trial, for timelines).
//!
//! Times are seconds. In a trial's rows they count from the holder's grant, by the one monotonic
//! clock of the machine every process of the trial wrote with.

use serde::{Deserialize, Serialize};

use crate::backend::BackendId;
use crate::client::ClientUsed;
use crate::fault::{CellId, Scenario, Variant};

use super::codec::present;
use super::runner::{RunnerKind, RunnerSetting};

/// One row per trial.
pub const CSV: &str = "trials.csv";
/// The protected resource's log, one row per logged event.
pub const EVENTS_CSV: &str = "events.csv";

/// `results.json` of `faults`: what `--json` prints.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultsRecord {
    /// The lock TTL asked for (`--ttl`); each cell says the TTL the backend granted.
    pub ttl_s: f64,
    /// Trials per cell (`--trials`).
    pub trials_per_cell: u32,
    /// Seed of the fault timing (where in the job each fault starts).
    pub seed: u64,
    /// Where the protected resource lives (a Postgres schema), password removed.
    pub resource: String,
    /// The namespace of every key, lease and znode this run created (removed after it).
    pub namespace: String,
    /// One per (scenario, variant, backend) that ran.
    pub cells: Vec<FaultCell>,
    /// Cells that could not run here, and why.
    pub skipped: Vec<SkippedCell>,
    /// The runner cells (`--scenario runner`): real job runners whose own timeout starts a
    /// living job again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runners: Vec<RunnerCell>,
    /// The slot cells (`--scenario runner`): two cron-style scheduler nodes, one's clock behind
    /// the other's, firing the same slots.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slots: Vec<SlotCell>,
    /// The stall cells (`--scenario runner`): each runner's first execution stalled for a time
    /// drawn from a pause law, the runs twice it caused beside the model's chance.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stalls: Vec<RunnerStallCell>,
    /// Runner cells that could not run, each `label: why`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runners_not_run: Vec<String>,
}

/// The job's own lock, taken inside the task: it cannot stop the runner from starting the job
/// again, only make the second execution skip (or, with a lease shorter than the first
/// execution, run beside it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskLock {
    /// No lock in the task.
    None,
    /// A lock that outlives the job: Redis `SET NX PX` of runtime x [`SAFETY_FACTOR`] on the
    /// broker's Redis, a session advisory lock for pg-boss.
    Outlives,
    /// A Redis lease shorter than the time the runner takes to start the job again.
    Shorter,
}

/// What keeps a slot fired by two scheduler nodes from running twice, in a slot cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SlotRemedy {
    /// The job's lock alone, given back when the run ends.
    Plain,
    /// The lock kept `hold` after the run started (ShedLock's `lockAtLeastFor`).
    Hold,
    /// The slot fired by the database's clock, not the node's.
    DbClock,
    /// A completion record per slot, inserted before the run; a slot recorded is skipped.
    Completion,
}

impl SlotRemedy {
    /// As a cell's name says it.
    pub fn word(self) -> &'static str {
        match self {
            SlotRemedy::Plain => "plain",
            SlotRemedy::Hold => "hold",
            SlotRemedy::DbClock => "db-clock",
            SlotRemedy::Completion => "completion",
        }
    }
}

/// What the slots of one slot cell measured: runs of each slot by two scheduler nodes whose
/// clocks are `skew_s` apart, the job shorter than the skew.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlotCell {
    /// How far the second node's wall clock is behind the first's, in seconds.
    pub skew_s: f64,
    /// What guards the slot.
    pub remedy: SlotRemedy,
    /// The hold, for [`SlotRemedy::Hold`], in seconds.
    pub hold_s: Option<f64>,
    /// How long the job runs, in seconds.
    pub job_s: f64,
    /// The schedule's period, in seconds.
    pub period_s: f64,
    /// What the nodes ran and what guarded it, in one sentence.
    pub injected: String,
    /// The runs per slot the design predicts.
    pub expected_runs: u32,
    /// Runs of each slot.
    pub runs: Vec<u32>,
    /// Starts of each slot that found the lock held or the slot recorded and did nothing.
    pub skipped: Vec<u32>,
    /// From a slot's first run to its second, the median over the slots that had one.
    pub second_run_p50_s: Option<f64>,
}

impl SlotCell {
    /// `slot/hold 4s skew 2s`.
    pub fn label(&self) -> String {
        let hold = self.hold_s.map_or(String::new(), |h| format!(" {h}s"));
        format!("slot/{}{hold} skew {}s", self.remedy.word(), self.skew_s)
    }

    /// True when every slot ran as often as the design predicts.
    pub fn as_predicted(&self) -> bool {
        self.runs.iter().all(|n| *n == self.expected_runs)
    }
}

/// One row per trial of a runner cell.
pub const RUNNERS_CSV: &str = "runners.csv";

/// What the trials of one runner under one setting measured: the real runner's workers, one job
/// that writes to the protected resource, and the runner's own timeout (never a lock) deciding
/// whether it runs again.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunnerCell {
    /// The runner.
    pub runner: RunnerKind,
    /// Its library and version, as installed from the pins (`celery 5.7.0`).
    pub library: String,
    /// The setting that acts as a lease.
    pub setting: RunnerSetting,
    /// Its value in the cell, in seconds.
    pub setting_s: f64,
    /// True for the setting `ttl`'s rule recommends for this job; false for one shorter than it.
    pub recommended: bool,
    /// The job's own lock inside the task.
    pub task_lock: TaskLock,
    /// Its lease in seconds, where it has one (a Redis key's; a session lock has none).
    pub task_lock_s: Option<f64>,
    /// How long the job runs (BullMQ's holds its worker's event loop: a CPU-bound stretch).
    pub job_s: f64,
    /// What the workers ran and what was set, in one sentence.
    pub injected: String,
    /// The executions the runner's design predicts per trial.
    pub expected_executions: u32,
    /// The starts per trial that the design predicts find the task's lock held and skip.
    pub expected_skipped: u32,
    /// Starts that found the task's lock held and did nothing, per trial.
    pub skipped: Vec<u32>,
    /// Trials run.
    pub trials: u32,
    /// Executions of the one job, per trial.
    pub executions: Vec<u32>,
    /// The longest time two executions of a trial ran at once, in seconds.
    pub overlap_max_s: f64,
    /// Writes made by an execution after another had started, over all trials.
    pub stale_writes: u64,
    /// From the first execution's start to the second's, the median over the trials that had
    /// one.
    pub second_start_p50_s: Option<f64>,
}

impl RunnerCell {
    /// `runner/celery visibility_timeout 2s`, `... task-lock 1s`.
    pub fn label(&self) -> String {
        let lock = match (self.task_lock, self.task_lock_s) {
            (TaskLock::None, _) => String::new(),
            (_, Some(s)) => format!(" task-lock {s}s"),
            (_, None) => " task-lock session".to_string(),
        };
        format!(
            "runner/{} {} {}s{lock}{}",
            self.runner.word(),
            self.setting.field(),
            self.setting_s,
            if self.recommended {
                " (recommended)"
            } else {
                ""
            }
        )
    }

    /// True when every trial ran the job, and skipped it, as often as the design predicts.
    pub fn as_predicted(&self) -> bool {
        self.executions
            .iter()
            .all(|n| *n == self.expected_executions)
            && self.skipped.iter().all(|n| *n == self.expected_skipped)
    }
}

/// One trial of a runner cell, as `runners.csv` holds it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunnerTrialRow {
    /// The runner.
    pub runner: RunnerKind,
    /// The setting that acts as a lease.
    pub setting: RunnerSetting,
    /// Its value, in seconds.
    pub setting_s: f64,
    /// True for the recommended setting.
    pub recommended: bool,
    /// The job's own lock inside the task.
    pub task_lock: TaskLock,
    /// The trial's number within its cell.
    pub trial: u32,
    /// Executions of the job.
    pub executions: u32,
    /// Seconds two executions ran at once.
    pub overlap_s: f64,
    /// Writes made by an execution after another had started.
    pub stale_writes: u64,
    /// From the first execution's start to the second's, in seconds.
    pub second_start_s: Option<f64>,
    /// Starts that found the task's lock held and did nothing.
    pub skipped: u32,
    /// The first execution's stall, in seconds, in a stall cell.
    pub stall_s: Option<f64>,
}

/// What a stall cell measured: the real runner's workers, trial after trial, the first execution
/// of each trial's one job stalled for a time drawn from a Pareto pause law, and how often the
/// runner started it again, beside the chance the model gives.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunnerStallCell {
    /// The runner.
    pub runner: RunnerKind,
    /// Its library and version.
    pub library: String,
    /// The setting that acts as a lease.
    pub setting: RunnerSetting,
    /// Its value, in seconds.
    pub setting_s: f64,
    /// How often the runner looks for a job past its setting in the lab (its stalled-job check,
    /// sweep or maintenance), in seconds.
    pub check_s: f64,
    /// The pause law's scale (its least stall), in seconds.
    pub law_scale_s: f64,
    /// Its shape (tail index).
    pub law_shape: f64,
    /// Its cap, in seconds.
    pub law_max_s: f64,
    /// What the workers ran and what was set, in one sentence.
    pub injected: String,
    /// Trials run.
    pub trials: u32,
    /// The first execution's stall in each trial, in seconds.
    pub stalls_s: Vec<f64>,
    /// Executions of the job in each trial.
    pub executions: Vec<u32>,
    /// The model's chance per run as `ttl` prices the setting: the stall outlives it (the
    /// runner looking the moment it runs out).
    pub model_p: f64,
    /// The model's chance when the runner looks a whole check late: the stall outlives the
    /// setting and `check_s`. The chance in the lab lies between the two, as the phase of the
    /// runner's check falls.
    pub model_late_p: f64,
    /// The range of trials run twice the model allows: the lowest that `model_late_p` gives
    /// 97.5 % of the time and the highest that `model_p` does (binomial).
    pub expected_twice: (u32, u32),
}

impl RunnerStallCell {
    /// `runner/celery visibility_timeout 2s stalls`.
    pub fn label(&self) -> String {
        format!(
            "runner/{} {} {}s stalls",
            self.runner.word(),
            self.setting.field(),
            self.setting_s
        )
    }

    /// Trials in which the job ran more than once.
    pub fn twice(&self) -> u32 {
        self.executions.iter().filter(|n| **n >= 2).count() as u32
    }

    /// True when the trials run twice lie in the model's 95 % range.
    pub fn as_predicted(&self) -> bool {
        let (low, high) = self.expected_twice;
        (low..=high).contains(&self.twice())
    }
}

/// What `trials` trials of one (scenario, variant, backend) measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultCell {
    /// The fault (`pause`, `restart`).
    pub scenario: Scenario,
    /// Its configuration (`naive`, `heartbeat-short`, `aof-always` ...).
    pub variant: Variant,
    /// Backend name.
    pub backend: BackendId,
    /// The client library the cell was measured through (its adapter and version); absent for
    /// lockbench's own client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<ClientUsed>,
    /// What was injected and how, in one sentence.
    pub injected: String,
    /// What the backend's design predicts: "overlap" or "no overlap".
    pub expected: String,
    /// Where the backend's fencing tokens come from ("none" when it gives none).
    pub fencing: String,
    /// The TTL the backend granted the holder (ZooKeeper: the negotiated session timeout), the
    /// largest over the trials.
    pub granted_ttl_s: f64,
    /// Trials run.
    pub trials: u32,
    /// Trials in which two workers believed they held the lock at the same time.
    pub trials_with_overlap: u32,
    /// Median overlap over the trials that overlapped; `None` when none did.
    #[serde(deserialize_with = "present")]
    pub overlap_p50_s: Option<f64>,
    /// Longest overlap; `None` when no trial overlapped.
    #[serde(deserialize_with = "present")]
    pub overlap_max_s: Option<f64>,
    /// Writes by a worker after the lock had passed to another (an unfenced resource accepts
    /// every one of them).
    pub stale_writes: u64,
    /// Of those, refused by the fenced resource; `None` when the backend gives no fencing token.
    #[serde(deserialize_with = "present")]
    pub stale_rejected_by_fence: Option<u64>,
    /// Writes by the current holder that the fenced resource refused (a fencing counter that went
    /// back); `None` when the backend gives no fencing token.
    #[serde(deserialize_with = "present")]
    pub legitimate_rejected_by_fence: Option<u64>,
    /// Median time from the fault's start to the contender's grant; `None` when no contender was
    /// granted within its wait.
    #[serde(deserialize_with = "present")]
    pub recovery_p50_s: Option<f64>,
    /// Longest such time; `None` as above.
    #[serde(deserialize_with = "present")]
    pub recovery_max_s: Option<f64>,
    /// Trials whose contender was not granted the lock within its wait.
    pub contender_timed_out: u32,
    /// The shortest time from the fault's start to a contender's giving up, over the trials
    /// whose contender was not granted: "not granted within this long". `None` when every
    /// contender was granted, and in records written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_granted_within_s: Option<f64>,
    /// pool-leak: the most advisory locks the idle pooled session held after its jobs (what
    /// `pg_locks` shows an operator); `None` for other faults.
    #[serde(deserialize_with = "present")]
    pub idle_session_advisory_locks_max: Option<u64>,
    /// Through a client library: what the library told its holder of a lost lock. Absent for
    /// lockbench's own client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_told: Option<LostTold>,
    /// cluster: the median time from the fault's start to a new leader (or a promoted standby
    /// taking writes); absent for other faults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_leader_p50_s: Option<f64>,
    /// The longest such time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_leader_max_s: Option<f64>,
    /// Trials whose holder's job ended before the fault's onset (a library that ended the lock
    /// first: pottery refusing a fourth extension), so that the fault was not injected: counted
    /// among the trials, as what the holder's client did; 0 (absent) otherwise.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub trials_ended_before_fault: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// What a client library told the holder of a lost lock, over a cell's trials: a pushed event
/// (kazoo's `KazooState.LOST`), or a "no" to a renewal or a release, at the library's own time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LostTold {
    /// Trials in which the library told the holder.
    pub told: u32,
    /// Of those, trials whose first telling was an event the library pushed unasked.
    pub by_event: u32,
    /// Trials that overlapped and in which the library never told the holder.
    pub never_told_overlaps: u32,
    /// From the next holder's grant to the telling, over the trials that have both: the median
    /// (negative when the holder was told before another was granted).
    #[serde(deserialize_with = "present")]
    pub after_next_grant_p50_s: Option<f64>,
    /// The latest such telling.
    #[serde(deserialize_with = "present")]
    pub after_next_grant_max_s: Option<f64>,
}

/// A cell that could not run on this machine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkippedCell {
    /// The fault.
    pub scenario: Scenario,
    /// Its configuration.
    pub variant: Variant,
    /// Backend name.
    pub backend: BackendId,
    /// The client library it was to be measured through; absent for lockbench's own client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<ClientUsed>,
    /// What it needs that is missing, in one line.
    pub reason: String,
}

impl FaultCell {
    /// `scenario/variant`: the cell's name in every table, the grid and the decision rules.
    pub fn label(&self) -> String {
        self.variant.label()
    }

    /// What it measured: its variant on its backend.
    pub fn id(&self) -> CellId {
        CellId {
            variant: self.variant,
            backend: self.backend,
            client: self.client.as_ref().map(|c| c.name),
        }
    }

    /// Its backend as tables show it, with the library it was measured through
    /// (`redis via redis-py 8.1.0`).
    pub fn backend_through(&self) -> String {
        match &self.client {
            Some(used) => format!("{} via {} {}", self.backend, used.name, used.version),
            None => self.backend.to_string(),
        }
    }

    /// True when it is `variant` on `backend` (the backend's default configuration), through
    /// lockbench's own client.
    pub fn is(&self, variant: Variant, backend: crate::BackendKind) -> bool {
        self.variant == variant && self.backend == backend && self.client.is_none()
    }

    /// What the trials whose contender was not granted show: "not granted within 66 s", or
    /// "never granted" where the record does not say how long the contender waited.
    pub fn not_granted(&self) -> String {
        self.not_granted_within_s
            .map_or("never granted".to_string(), |s| {
                format!("not granted within {}", crate::format_readable_s(s))
            })
    }
}

impl SkippedCell {
    /// `scenario/variant`, as [`FaultCell::label`].
    pub fn label(&self) -> String {
        self.variant.label()
    }
}

/// One trial, as a `trials.csv` line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultTrialRow {
    /// The fault.
    pub scenario: Scenario,
    /// Its configuration.
    pub variant: Variant,
    /// Backend name.
    pub backend: BackendId,
    /// Trial number in its cell, from 0.
    pub trial: u32,
    /// The TTL the backend granted the holder.
    pub granted_ttl_s: f64,
    /// When the fault began.
    pub fault_start_s: f64,
    /// When it ended (the SIGCONT, the server answering again).
    pub fault_end_s: f64,
    /// When the holder stopped believing it held the lock (its last logged event).
    pub holder_end_s: f64,
    /// How the holder's job ended.
    pub holder_outcome: JobEnd,
    /// When the contender was granted the lock; `None` when it was not within its wait.
    #[serde(deserialize_with = "present")]
    pub contender_grant_s: Option<f64>,
    /// When the contender stopped; `None` as above.
    #[serde(deserialize_with = "present")]
    pub contender_end_s: Option<f64>,
    /// Time both believed they held the lock.
    pub overlap_s: f64,
    /// Writes after the lock had passed to another worker.
    pub stale_writes: u64,
    /// Of those, refused by the fenced resource; `None` without fencing tokens.
    #[serde(deserialize_with = "present")]
    pub stale_rejected_by_fence: Option<u64>,
    /// The current holder's writes the fenced resource refused; `None` without fencing tokens.
    #[serde(deserialize_with = "present")]
    pub legitimate_rejected_by_fence: Option<u64>,
    /// From the fault's start to the contender's grant; `None` as above.
    #[serde(deserialize_with = "present")]
    pub recovery_s: Option<f64>,
    /// pool-leak: advisory locks the idle pooled session held after its jobs; `None` otherwise.
    #[serde(deserialize_with = "present")]
    pub idle_session_advisory_locks: Option<u64>,
    /// Through a client library: when it first told the holder the lock was lost, from the
    /// holder's grant; empty when it never did, for lockbench's own client, and in files written
    /// before it was kept.
    #[serde(default, deserialize_with = "present")]
    pub told_s: Option<f64>,
    /// How it told (`event: KazooState.LOST`, `answer: renewal refused`); empty as above.
    #[serde(default, deserialize_with = "present")]
    pub told_how: Option<String>,
    /// cluster: from the fault's start to the moment a surviving member answered as the new
    /// leader (or the promoted standby took writes); empty for other faults and in files
    /// written before it was kept.
    #[serde(default, deserialize_with = "present")]
    pub new_leader_s: Option<f64>,
    /// False when the holder's job ended before the fault's onset and the fault was not
    /// injected (its start and end are then that moment); true in files written before it was
    /// kept.
    #[serde(default = "injected")]
    pub fault_injected: bool,
}

fn injected() -> bool {
    true
}

/// How a worker's critical section ended: an `end` event's detail in the protected resource's
/// log, and the holder's outcome in `trials.csv` (the words are the serialized forms).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum JobEnd {
    /// Its job done, its release took the lock back.
    Released,
    /// Its job done, its release found the lock no longer its own.
    LostAtRelease,
    /// Its release failed three times (a server restarting).
    ReleaseFailed,
    /// The positive control's plain delete removed a lock.
    Deleted,
    /// The plain delete found no lock to remove.
    DeletedNothing,
    /// It ran without the lock (an outage's run-unlocked policy).
    RanUnlocked,
    /// Its heartbeat's give-up deadline passed: it stopped its job.
    GaveUp,
    /// A renewal after a write was refused: it stopped its job.
    Lost,
    /// It logged no end: the lab killed it.
    Killed,
    /// A detached job process ran to its end.
    JobProcessEnded,
    /// A pooled job's transaction committed (its transaction lock with it).
    Committed,
    /// A pooled job's error path dropped its transaction, which rolled back.
    #[serde(rename = "error-path (rolled back)")]
    ErrorPathRolledBack,
    /// A pooled job's error path left without unlocking its session lock.
    #[serde(rename = "error-path (release skipped)")]
    ErrorPathReleaseSkipped,
    /// The pool process closed its pool after its jobs (its `done`, not a job's end).
    Closed,
}

impl JobEnd {
    /// Every way a critical section ends.
    pub const ALL: [JobEnd; 14] = [
        JobEnd::Released,
        JobEnd::LostAtRelease,
        JobEnd::ReleaseFailed,
        JobEnd::Deleted,
        JobEnd::DeletedNothing,
        JobEnd::RanUnlocked,
        JobEnd::GaveUp,
        JobEnd::Lost,
        JobEnd::Killed,
        JobEnd::JobProcessEnded,
        JobEnd::Committed,
        JobEnd::ErrorPathRolledBack,
        JobEnd::ErrorPathReleaseSkipped,
        JobEnd::Closed,
    ];

    /// Its word in the log and the records.
    pub fn name(self) -> &'static str {
        match self {
            JobEnd::Released => "released",
            JobEnd::LostAtRelease => "lost-at-release",
            JobEnd::ReleaseFailed => "release-failed",
            JobEnd::Deleted => "deleted",
            JobEnd::DeletedNothing => "deleted-nothing",
            JobEnd::RanUnlocked => "ran-unlocked",
            JobEnd::GaveUp => "gave-up",
            JobEnd::Lost => "lost",
            JobEnd::Killed => "killed",
            JobEnd::JobProcessEnded => "job-process-ended",
            JobEnd::Committed => "committed",
            JobEnd::ErrorPathRolledBack => "error-path (rolled back)",
            JobEnd::ErrorPathReleaseSkipped => "error-path (release skipped)",
            JobEnd::Closed => "closed",
        }
    }

    /// The end named `word`.
    pub fn parse(word: &str) -> Option<JobEnd> {
        JobEnd::ALL.into_iter().find(|e| e.name() == word)
    }
}

impl std::fmt::Display for JobEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What a worker writes to the protected resource's log (`events.csv`'s `event`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogEvent {
    /// The first write after a grant, presenting the new token.
    Grant,
    /// A write inside the critical section.
    Write,
    /// The worker stopped believing it held the lock.
    End,
    /// The client library told the worker the lock is lost (a pushed event, or a "no" to a
    /// renewal, a "do you hold it" or a release), at the library's own timestamp. Not part of
    /// the critical section: the worker may have stopped believing before, or after.
    Told,
    /// A job started by its runner found its own lock held by another execution and did
    /// nothing (the runner cells' task lock).
    Skipped,
}

impl LogEvent {
    /// Every event.
    pub const ALL: [LogEvent; 5] = [
        LogEvent::Grant,
        LogEvent::Write,
        LogEvent::End,
        LogEvent::Told,
        LogEvent::Skipped,
    ];

    /// As the log stores it.
    pub fn word(self) -> &'static str {
        match self {
            LogEvent::Grant => "grant",
            LogEvent::Write => "write",
            LogEvent::End => "end",
            LogEvent::Told => "told",
            LogEvent::Skipped => "skipped",
        }
    }

    /// The event `word` names.
    pub fn parse(word: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.word() == word)
    }
}

/// Who writes in a lock cell's trial (`events.csv`'s `worker`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// The first to hold the lock: the fault strikes it.
    Holder,
    /// The one waiting for the lock.
    Contender,
    /// The holder's next run, where a fault has one (`release/*`).
    NextRun,
    /// The pool leak's second job, on the pool whose session still holds the first's lock.
    #[serde(rename = "holder-2")]
    SecondJob,
}

impl Role {
    /// Every role.
    pub const ALL: [Role; 4] = [
        Role::Holder,
        Role::Contender,
        Role::NextRun,
        Role::SecondJob,
    ];

    /// As the log writes it.
    pub fn word(self) -> &'static str {
        match self {
            Role::Holder => "holder",
            Role::Contender => "contender",
            Role::NextRun => "next-run",
            Role::SecondJob => "holder-2",
        }
    }

    /// The role `word` names.
    pub fn parse(word: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.word() == word)
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.word())
    }
}

impl std::fmt::Display for LogEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.word())
    }
}

/// One event of the protected resource's log, as an `events.csv` line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultEventRow {
    /// The fault.
    pub scenario: Scenario,
    /// Its configuration.
    pub variant: Variant,
    /// Backend name.
    pub backend: BackendId,
    /// Trial number in its cell.
    pub trial: u32,
    /// Who wrote it.
    pub worker: Role,
    /// What it wrote.
    pub event: LogEvent,
    /// When, from the holder's grant.
    pub t_s: f64,
    /// The fencing token presented; `None` when the backend gives none.
    #[serde(deserialize_with = "present")]
    pub token: Option<u64>,
    /// Whether the fenced resource accepted the write; `None` for an `end`, or without a token.
    #[serde(deserialize_with = "present")]
    pub fenced_accepted: Option<bool>,
    /// For an `end`: how the job ended; empty otherwise.
    pub detail: String,
}

/// Which file of a faults directory disagrees with its record, and how.
#[derive(Debug, PartialEq)]
pub enum RowsMismatch {
    /// `results.json`.
    Results(String),
    /// `trials.csv`.
    Trials(String),
    /// `events.csv`.
    Events(String),
}

/// Checks that `trials.csv` and `events.csv` are whole for `record`: each cell's trials, numbered
/// from 0, once each, and no other; every event belongs to a trial; every trial keeps the events
/// its row says happened (the holder's end unless it was killed, the contender's grant when it
/// was granted). A directory that lost a row is refused, not read as a smaller one.
pub fn check_rows(
    record: &FaultsRecord,
    trials: &[FaultTrialRow],
    events: &[FaultEventRow],
) -> Result<(), RowsMismatch> {
    use std::collections::{BTreeSet, HashMap};
    // A directory holds one client's cells: rows name the variant and the backend.
    let cell = |variant: Variant, backend: BackendId| CellId {
        variant,
        backend,
        client: None,
    };
    let named = |id: &CellId| format!("{} on {}", id.variant.label(), id.backend);
    // A variant names its scenario: a row that names another is not one lockbench wrote.
    let stray = [
        record
            .cells
            .iter()
            .map(|c| (c.scenario, c.variant))
            .chain(record.skipped.iter().map(|c| (c.scenario, c.variant)))
            .find(|(s, v)| v.scenario() != *s)
            .map(|(s, v)| (RowsMismatch::Results as fn(String) -> RowsMismatch, s, v)),
        trials
            .iter()
            .map(|t| (t.scenario, t.variant))
            .find(|(s, v)| v.scenario() != *s)
            .map(|(s, v)| (RowsMismatch::Trials as fn(String) -> RowsMismatch, s, v)),
        events
            .iter()
            .map(|e| (e.scenario, e.variant))
            .find(|(s, v)| v.scenario() != *s)
            .map(|(s, v)| (RowsMismatch::Events as fn(String) -> RowsMismatch, s, v)),
    ];
    if let Some((mismatch, s, v)) = stray.into_iter().flatten().next() {
        return Err(mismatch(format!(
            "variant {} belongs to scenario {}, not {}",
            v.name(),
            v.scenario().name(),
            s.name()
        )));
    }
    let mut expected: HashMap<CellId, u32> = HashMap::new();
    for c in &record.cells {
        expected.insert(cell(c.variant, c.backend), c.trials);
    }
    let mut seen: HashMap<CellId, BTreeSet<u32>> = HashMap::new();
    for (i, t) in trials.iter().enumerate() {
        let id = cell(t.variant, t.backend);
        let Some(&count) = expected.get(&id) else {
            return Err(RowsMismatch::Trials(format!(
                "row {}: a trial of {}, a cell results.json does not have",
                i + 1,
                named(&id)
            )));
        };
        if t.trial >= count || !seen.entry(id).or_default().insert(t.trial) {
            return Err(RowsMismatch::Trials(format!(
                "row {}: trial {} of {} is out of place (the cell has trials 0 to {}, once each)",
                i + 1,
                t.trial,
                named(&id),
                count.saturating_sub(1)
            )));
        }
    }
    // In the record's order, so that the cell named is the same every time.
    for c in &record.cells {
        let id = cell(c.variant, c.backend);
        let have = seen.get(&id).map_or(0, BTreeSet::len);
        if have != c.trials as usize {
            return Err(RowsMismatch::Trials(format!(
                "{} has {have} trial rows, but results.json says it ran {} trials: a row is missing",
                named(&id),
                c.trials
            )));
        }
    }
    let mut logged: HashMap<(CellId, u32), Vec<&FaultEventRow>> = HashMap::new();
    for (i, e) in events.iter().enumerate() {
        let id = cell(e.variant, e.backend);
        if !seen.get(&id).is_some_and(|t| t.contains(&e.trial)) {
            return Err(RowsMismatch::Events(format!(
                "row {}: an event of trial {} of {}, which trials.csv does not have",
                i + 1,
                e.trial,
                named(&id)
            )));
        }
        logged.entry((id, e.trial)).or_default().push(e);
    }
    for t in trials {
        let id = cell(t.variant, t.backend);
        let of = logged.get(&(id, t.trial)).map_or(&[][..], Vec::as_slice);
        let has = |worker: Role, event: LogEvent| {
            of.iter().any(|e| e.worker == worker && e.event == event)
        };
        if t.holder_outcome != JobEnd::Killed && !has(Role::Holder, LogEvent::End) {
            return Err(RowsMismatch::Events(format!(
                "trial {} of {} has no holder end event, though its holder {}: a row is missing",
                t.trial,
                named(&id),
                t.holder_outcome
            )));
        }
        if t.contender_grant_s.is_some() && !has(Role::Contender, LogEvent::Grant) {
            return Err(RowsMismatch::Events(format!(
                "trial {} of {} has no contender grant event, though trials.csv says it was granted: a row is missing",
                t.trial,
                named(&id)
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_end_reads_back_from_its_word_and_serializes_to_it() {
        for end in JobEnd::ALL {
            assert_eq!(JobEnd::parse(end.name()), Some(end));
            assert_eq!(
                serde_json::to_string(&end).unwrap(),
                format!("\"{}\"", end.name())
            );
        }
        assert_eq!(JobEnd::parse("done"), None);
    }
}
