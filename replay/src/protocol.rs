//! A worker's lock protocol in one run: the first worker takes the lock, every other keeps trying
//! it; whoever holds it renews it on a heartbeat (when asked), runs the job unless it is finished,
//! and releases by token.

use std::time::{Duration, Instant};

use lockbench_locks::Heartbeat;

use crate::items::{mark_done, next_item, run_job};
use crate::plan::{LiveError, Outcome, ReplayPlan, RunContext, Start, Worker};

/// A retry worker tries the lock this often (real-equivalent), and never more than every 2 ms.
const RETRY_EVERY: Duration = Duration::from_secs(1);
const MIN_RETRY: Duration = Duration::from_millis(2);

/// One worker's part of a run: take the lock (first) or keep trying it (retry), run the job
/// unless it is finished, release.
pub(crate) async fn work(
    plan: &ReplayPlan,
    context: &RunContext,
    worker: &mut Worker,
    first: bool,
) -> Result<Outcome, LiveError> {
    let result = work_inner(plan, context, worker, first).await;
    if first && result.is_err() {
        context.start.send_replace(Start::Failed);
    }
    result
}

async fn work_inner(
    plan: &ReplayPlan,
    context: &RunContext,
    worker: &mut Worker,
    first: bool,
) -> Result<Outcome, LiveError> {
    let ttl = plan.lease_ttl();
    let mut outcome = Outcome::default();
    let lease = if first {
        let lease = worker
            .backend
            .try_acquire(&plan.key, ttl)
            .await?
            .ok_or_else(|| {
                LiveError::Run(format!(
                    "the lock was already held when run {} began",
                    context.run
                ))
            })?;
        context.start.send_replace(Start::Started(Instant::now()));
        outcome.granted_ttl = Some(lease.ttl);
        lease
    } else {
        let mut started = context.start.subscribe();
        let state = *started
            .wait_for(|s| *s != Start::Waiting)
            .await
            .map_err(|_| LiveError::Run("the first worker vanished".to_string()))?;
        if state == Start::Failed {
            return Ok(outcome);
        }
        let every = RETRY_EVERY.mul_f64(plan.f()).max(MIN_RETRY);
        // Bounded by the run's timeout around every worker.
        loop {
            if let Some(lease) = worker.backend.try_acquire(&plan.key, ttl).await? {
                break lease;
            }
            if *context.start.borrow() == Start::Failed {
                return Ok(outcome);
            }
            tokio::time::sleep(every).await;
        }
    };
    let acquired = Instant::now();
    let heartbeat = plan
        .heartbeat()
        .map(|policy| Heartbeat::spawn(worker.backend.clone(), lease.clone(), policy));
    let next = next_item(plan, context, worker).await?;
    if let Some(next) = next {
        outcome.takeover = !first;
        let finished = run_job(
            plan,
            context,
            worker,
            &lease,
            heartbeat.as_ref(),
            next,
            &mut outcome,
        )
        .await?;
        if finished {
            mark_done(plan, context, worker, &lease, &mut outcome).await?;
        }
    }
    if let Some(h) = heartbeat {
        h.stop();
    }
    outcome.release_refused = !worker.backend.release(&lease).await?;
    if first {
        outcome.runtime = Some(acquired.elapsed());
    }
    Ok(outcome)
}
