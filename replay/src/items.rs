//! The job's items for real: each step's SQL through the latency proxy or call to the payment
//! stub, held for what the model asks; the item loop with its pauses; where the job stands.

use std::time::{Duration, Instant};

use lockbench_locks::{Heartbeat, Lease};
use lockbench_workloads::{LivePauses, replay_rng};
use rand::SeedableRng;
use rand::rngs::SmallRng;
use sqlx::{AssertSqlSafe, Row};

use crate::hold::hold_until;
use crate::plan::{Action, JobKind, LiveError, Outcome, ReplayPlan, RunContext, Start, Worker};
use crate::proxy::HOLD_TAG;
use crate::tables::{db_error, exec, fence, is_stale};

/// The first item still to do, or `None` when the job is finished for this run.
pub(crate) async fn next_item(
    plan: &ReplayPlan,
    context: &RunContext,
    worker: &mut Worker,
) -> Result<Option<u64>, LiveError> {
    let s = &plan.schema;
    match plan.kind {
        JobKind::Billing => {
            let row = sqlx::raw_sql(AssertSqlSafe(format!(
                "SELECT count(*) FROM {s}.job_done WHERE run = {}",
                context.run
            )))
            .fetch_one(&mut worker.db)
            .await
            .map_err(|e| db_error("checking whether the job ran", e))?;
            let done: i64 = row.try_get(0).map_err(|e| db_error("reading", e))?;
            Ok((done == 0).then_some(1))
        }
        JobKind::Migration => {
            let row = sqlx::raw_sql(AssertSqlSafe(format!("SELECT applied FROM {s}.pointer")))
                .fetch_one(&mut worker.db)
                .await
                .map_err(|e| db_error("reading the migration pointer", e))?;
            let applied: i64 = row.try_get(0).map_err(|e| db_error("reading", e))?;
            let next = applied as u64 + 1;
            Ok((next <= plan.model.items()).then_some(next))
        }
    }
}

pub(crate) async fn mark_done(
    plan: &ReplayPlan,
    context: &RunContext,
    worker: &mut Worker,
    lease: &Lease,
    outcome: &mut Outcome,
) -> Result<(), LiveError> {
    if plan.kind != JobKind::Billing {
        return Ok(());
    }
    let sql = format!(
        "{}INSERT INTO {}.job_done (run, worker) VALUES ({}, {}) ON CONFLICT DO NOTHING",
        fence(plan, lease),
        plan.schema,
        context.run,
        worker.index
    );
    match exec(&mut worker.db, sql).await {
        Ok(()) => Ok(()),
        Err(e) if is_stale(&e) => {
            outcome.stale += 1;
            outcome.aborted = true;
            Ok(())
        }
        Err(e) => Err(db_error("marking the job done", e)),
    }
}

/// What a step's real work came to.
enum Done {
    Ok,
    /// A fenced write was refused: this worker no longer holds the lock.
    Stale,
}

/// Runs items from `next` on; true when every item was done, false when the job stopped early.
pub(crate) async fn run_job(
    plan: &ReplayPlan,
    context: &RunContext,
    worker: &mut Worker,
    lease: &Lease,
    heartbeat: Option<&Heartbeat>,
    next: u64,
    outcome: &mut Outcome,
) -> Result<bool, LiveError> {
    let f = plan.f();
    let started = Instant::now();
    let stream = plan.options.seed ^ worker.index.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut rng = replay_rng(stream, context.run);
    let mut pauses = LivePauses::new(
        &plan.model,
        SmallRng::seed_from_u64(stream ^ context.run.rotate_left(32) ^ 0x7061_7573_6573),
    );
    let run_start = match *context.start.borrow() {
        Start::Started(at) => at,
        _ => started,
    };
    for item in next..=plan.model.items() {
        if heartbeat.is_some_and(|h| !h.may_continue()) {
            outcome.aborted = true;
            return Ok(false);
        }
        let pause = pauses.due(started.elapsed().as_secs_f64() / f);
        if pause > 0.0 {
            hold_until(Instant::now() + Duration::from_secs_f64(pause * f)).await;
        }
        let mut amount = 0i64;
        for (i, action) in plan.actions.iter().enumerate() {
            // Episodes are the environment's: their clock is the run's, not this worker's.
            let t = run_start.elapsed().as_secs_f64() / f;
            let requested = context.scenario.call_seconds(&plan.model, i, t, &mut rng) * f * 1e9;
            let target = plan.model.steps()[i].target;
            let hold = worker.costs.hold_for(i, target, requested);
            let call_started = Instant::now();
            let done = step(
                plan,
                context,
                worker,
                lease,
                *action,
                item,
                hold,
                &mut amount,
            )
            .await?;
            let achieved = call_started.elapsed().as_nanos() as f64;
            worker.costs.observe(i, requested, achieved);
            let stats = &mut worker.stats[i];
            stats.requested.record_ns(requested as u64);
            stats.achieved.record_ns(achieved as u64);
            stats.hold_ns += hold;
            stats.achieved_ns += achieved;
            if let Done::Stale = done {
                outcome.stale += 1;
                outcome.aborted = true;
                return Ok(false);
            }
        }
    }
    Ok(true)
}

/// Does one step's real work, asking the proxy or the stub to hold it for `hold_ns`.
#[allow(clippy::too_many_arguments)]
async fn step(
    plan: &ReplayPlan,
    context: &RunContext,
    worker: &mut Worker,
    lease: &Lease,
    action: Action,
    item: u64,
    hold_ns: f64,
    amount: &mut i64,
) -> Result<Done, LiveError> {
    let s = &plan.schema;
    let w = worker.index;
    let hold = Duration::from_nanos(hold_ns as u64);
    let tag = format!("{HOLD_TAG}{}*/ ", hold.as_nanos());
    match action {
        Action::Read => {
            let row = sqlx::raw_sql(AssertSqlSafe(format!(
                "{tag}SELECT amount_cents FROM {s}.customers WHERE id = {item}"
            )))
            .fetch_one(&mut worker.db)
            .await
            .map_err(|e| db_error("reading a subscription", e))?;
            *amount = row.try_get(0).map_err(|e| db_error("reading", e))?;
            Ok(Done::Ok)
        }
        Action::Charge => {
            // A refused duplicate means the customer is charged already: the job moves on.
            worker
                .api
                .charge(
                    context.run,
                    item,
                    *amount,
                    w,
                    hold,
                    plan.options.idempotency_keys,
                )
                .await
                .map_err(|e| LiveError::Run(format!("payment-API stub: {e}")))?;
            Ok(Done::Ok)
        }
        Action::Call => {
            worker
                .api
                .post("/ping", "", hold, None)
                .await
                .map_err(|e| LiveError::Run(format!("payment-API stub: {e}")))?;
            Ok(Done::Ok)
        }
        Action::Local => {
            hold_until(Instant::now() + hold).await;
            Ok(Done::Ok)
        }
        Action::Write => {
            let sql = format!(
                "{tag}{}UPDATE {s}.customers SET status = 'charged', charged_by = {w} WHERE id = {item}",
                fence(plan, lease)
            );
            match exec(&mut worker.db, sql).await {
                Ok(()) => Ok(Done::Ok),
                Err(e) if is_stale(&e) => Ok(Done::Stale),
                Err(e) => Err(db_error("updating a subscription", e)),
            }
        }
        Action::Migrate {
            open,
            backfill,
            verify,
            advance,
        } => {
            let k = item;
            let mut sql = tag;
            if open {
                sql += &format!("BEGIN; LOCK TABLE {s}.accounts IN SHARE ROW EXCLUSIVE MODE; ");
            }
            if backfill {
                sql += &format!(
                    "ALTER TABLE {s}.accounts ADD COLUMN IF NOT EXISTS m{k} bigint; \
                     UPDATE {s}.accounts SET m{k} = balance * {k}; "
                );
            }
            if verify {
                sql += &format!(
                    "SELECT count(*) FROM pg_attribute WHERE attrelid = '{s}.accounts'::regclass \
                     AND attname = 'm{k}' AND NOT attisdropped; "
                );
            }
            if advance {
                sql += &format!(
                    "{}INSERT INTO {s}.migration_log (run, migration, worker, pointer_before) \
                     SELECT {run}, {k}, {w}, applied FROM {s}.pointer; \
                     UPDATE {s}.pointer SET applied = {k}; COMMIT",
                    fence(plan, lease),
                    run = context.run
                );
            }
            let result = sqlx::raw_sql(AssertSqlSafe(sql))
                .fetch_all(&mut worker.db)
                .await;
            match result {
                Ok(rows) => {
                    if verify && backfill_anywhere(plan) {
                        let found: i64 = rows
                            .last()
                            .map(|r| r.try_get(0))
                            .transpose()
                            .map_err(|e| db_error("reading", e))?
                            .unwrap_or(0);
                        if found != 1 {
                            let _ = exec(&mut worker.db, "ROLLBACK".to_string()).await;
                            return Err(LiveError::Run(format!(
                                "migration {k}: schema verification found no column m{k}"
                            )));
                        }
                    }
                    Ok(Done::Ok)
                }
                Err(e) => {
                    let _ = exec(&mut worker.db, "ROLLBACK".to_string()).await;
                    if is_stale(&e) {
                        Ok(Done::Stale)
                    } else {
                        Err(db_error(&format!("applying migration {k}"), e))
                    }
                }
            }
        }
    }
}

fn backfill_anywhere(plan: &ReplayPlan) -> bool {
    plan.actions
        .iter()
        .any(|a| matches!(a, Action::Migrate { backfill: true, .. }))
}
