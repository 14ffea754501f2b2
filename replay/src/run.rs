//! One job run: the tables reset, the run's episodes drawn, every worker racing for the lock,
//! then what went twice counted from the tables.

use futures::future::join_all;
use lockbench_core::records::replay::JobRunRecord;
use lockbench_workloads::{LiveScenario, replay_rng};
use sqlx::PgConnection;
use tokio::sync::watch;

use crate::plan::{Accumulator, LiveError, ReplayPlan, RunContext, Start, Worker};
use crate::protocol::work;
use crate::tables::{count, reset};

/// One job run with every worker; returns its record.
pub(crate) async fn run_once(
    plan: &ReplayPlan,
    workers: &mut [Worker],
    admin: &mut PgConnection,
    run: u64,
    acc: &mut Accumulator,
) -> Result<JobRunRecord, LiveError> {
    reset(plan, admin).await?;
    let mut rng = replay_rng(plan.options.seed, run);
    let context = RunContext {
        run,
        scenario: LiveScenario::draw(&plan.model, &mut rng),
        start: watch::channel(Start::Waiting).0,
    };
    let work = join_all(
        workers
            .iter_mut()
            .enumerate()
            .map(|(i, w)| work(plan, &context, w, i == 0)),
    );
    let outcomes = tokio::time::timeout(plan.options.run_timeout, work)
        .await
        .map_err(|_| {
            LiveError::Run(format!(
                "run {run} did not finish within {:?} of wall time",
                plan.options.run_timeout
            ))
        })?;
    let outcomes = outcomes.into_iter().collect::<Result<Vec<_>, _>>()?;
    // Fencing counters and the like start again at the next run, as the fence table does.
    workers[0].backend.cleanup(&plan.key).await?;
    let first = &outcomes[0];
    if let Some(granted) = first.granted_ttl {
        let asked = plan.lease_ttl();
        if granted > asked.mul_f64(1.1) {
            acc.warn(format!(
                "{} granted a {:?} lease for a requested {:?} (etcd rounds leases up to whole seconds, a ZooKeeper lease is its session timeout): the lock lasts longer than the compressed TTL, so double executions are undercounted; raise --time-scale",
                plan.options.backend.label(),
                granted,
                asked
            ));
        }
    }
    let runtime = first.runtime.unwrap_or_default();
    let (double, duplicates, out_of_order) = count(plan, admin, run).await?;
    Ok(JobRunRecord {
        run,
        runtime_s: runtime.as_secs_f64() / plan.f(),
        double_executions: double,
        duplicate_charges_accepted: duplicates,
        stale_writes_rejected: outcomes.iter().map(|o| o.stale).sum(),
        out_of_order,
        takeovers: outcomes.iter().filter(|o| o.takeover).count() as u64,
        aborted: outcomes.iter().filter(|o| o.aborted).count() as u64,
        releases_refused: outcomes.iter().filter(|o| o.release_refused).count() as u64,
    })
}
