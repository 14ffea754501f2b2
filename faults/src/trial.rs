//! What every trial shares, whatever its fault: the lab's context, the workers' names, the
//! outcome, and the judging, from the protected resource's log (the phases that inject a fault
//! are `fault`'s).

use std::path::Path;
use std::time::Duration;

use crate::FaultError;
use crate::overlap::{self, TrialFigures};
use crate::plan::Role;
use crate::resource::{LoggedEvent, Resource};

/// Writes per job.
pub(crate) const WRITES: u32 = 20;

/// What a trial needs from the lab: the run's settings, where the workers find the protected
/// resource, and the lab's own connection to it (to read the trial's log back).
pub(crate) struct TrialContext<'a> {
    /// The lock TTL asked for.
    pub(crate) ttl: Duration,
    /// The protected resource's database URL, as reached from the host.
    pub(crate) resource_url: &'a str,
    /// The run's schema in it.
    pub(crate) resource_schema: &'a str,
    /// The lab's connection to the resource.
    pub(crate) resource: &'a mut Resource,
    /// The lockbench binary (its `fault-worker` mode runs the workers).
    pub(crate) worker_exe: &'a Path,
    /// The run's id (it names the pool process's session).
    pub(crate) run_id: &'a str,
    /// The client library both workers lock through; `None` for lockbench's own client.
    pub(crate) adapter: Option<&'a lockbench_clients::Program>,
}

/// What a trial measured, before it becomes a row.
pub(crate) struct TrialOutcome {
    pub(crate) figures: TrialFigures,
    pub(crate) window: Window,
    pub(crate) granted_ttl: Duration,
    pub(crate) log: Vec<LoggedEvent>,
    /// Advisory locks the idle pooled session held after both jobs (pool-leak trials).
    pub(crate) idle_session_locks: Option<u64>,
    /// From the fault's start to a new leader or primary (cluster trials).
    pub(crate) new_leader: Option<Duration>,
    /// False when the holder's job ended before the fault's onset, which was then not injected.
    pub(crate) injected: bool,
}

/// One trial's timing, by the machine's monotonic clock.
pub(crate) struct Window {
    pub(crate) start_ns: i64,
    pub(crate) end_ns: i64,
}

/// Judges a trial: its log read back from the resource, and the figures computed from it.
pub(crate) async fn judge(
    context: &mut TrialContext<'_>,
    id: &str,
    window: Window,
    granted_ttl: Duration,
    idle_session_locks: Option<u64>,
) -> Result<TrialOutcome, FaultError> {
    let log = context.resource.trial_log(id).await?;
    let figures =
        overlap::figures(&log, Role::Holder.word(), Role::Contender.word()).ok_or_else(|| {
            FaultError::Resource(format!("trial {id}: the holder's grant is not in the log"))
        })?;
    Ok(TrialOutcome {
        figures,
        window,
        granted_ttl,
        log,
        idle_session_locks,
        new_leader: None,
        injected: true,
    })
}

/// Waits (at most `within`) until the holder's end is in the trial's log: a job process that
/// outlived its holder has finished.
pub(crate) async fn await_end(
    context: &mut TrialContext<'_>,
    id: &str,
    within: Duration,
) -> Result<(), FaultError> {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let log = context.resource.trial_log(id).await?;
        if log
            .iter()
            .any(|e| e.worker == Role::Holder.word() && e.event == crate::resource::Event::End)
        {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(FaultError::Worker(format!(
                "trial {id}: the holder's job process did not end within {within:?}"
            )));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
