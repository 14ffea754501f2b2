//! The pool-leak worker: one process, one connection pool of one Postgres connection that is not
//! reset when given back, and two jobs on it, as a web or worker service runs them.
//!
//! Job 1 takes the session advisory lock on a pooled connection, gives the connection back (the
//! lock stays with the session), works, and leaves by an error path that skips the release.
//! Job 2 starts while job 1 works, gets the same connection from the pool and asks for the lock:
//! advisory locks are re-entrant per session, so it is granted at once, a double grant. Every
//! other session (the contender, another process) waits until the pooled connection is closed.
//! The mitigations change only how the pool treats a connection given back, or how the jobs lock:
//! `unlock-all` runs `pg_advisory_unlock_all()` on return (what `DISCARD ALL` includes), `xact`
//! takes `pg_advisory_xact_lock` inside a transaction held for the whole job.

use lockbench_core::records::faults::JobEnd;
use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{ConnectOptions as _, Executor as _};
use tokio::sync::Notify;

use crate::FaultError;
use crate::plan::{PoolMode, PoolPlan, Role};
use crate::protocol::{Message, say};
use crate::resource::{Event, Resource};

fn db(e: impl std::fmt::Display) -> FaultError {
    FaultError::Worker(format!("pool: {e}"))
}

/// One job: lock, write, and leave (job 1 by the error path, job 2 by a release). Returns whether
/// it was granted.
async fn job(
    plan: &PoolPlan,
    pool: &sqlx::PgPool,
    resource: &mut Resource,
    worker: Role,
    leaks: bool,
    started: &Notify,
) -> Result<(), FaultError> {
    let every = Duration::from_millis(plan.write_every_ms);
    let lock = match plan.mode {
        PoolMode::Xact => "SELECT pg_try_advisory_xact_lock($1)",
        _ => "SELECT pg_try_advisory_lock($1)",
    };
    // A transaction keeps its connection checked out; a session lock gives it back at once.
    let mut tx = match plan.mode {
        PoolMode::Xact => Some(pool.begin().await.map_err(db)?),
        _ => None,
    };
    let granted: bool = match &mut tx {
        Some(tx) => sqlx::query_scalar(lock)
            .bind(plan.lock_id)
            .fetch_one(&mut **tx)
            .await
            .map_err(db)?,
        None => {
            let mut conn = pool.acquire().await.map_err(db)?;
            sqlx::query_scalar(lock)
                .bind(plan.lock_id)
                .fetch_one(&mut *conn)
                .await
                .map_err(db)?
        }
    };
    if !granted {
        say(&Message::JobNotGranted {
            job: worker.word().to_string(),
        });
        started.notify_one();
        return Ok(());
    }
    resource
        .write(&plan.trial, worker.word(), Event::Grant, None)
        .await?;
    say(&Message::JobGranted {
        job: worker.word().to_string(),
    });
    for n in 1..=plan.writes {
        tokio::time::sleep(every).await;
        resource
            .write(&plan.trial, worker.word(), Event::Write, None)
            .await?;
        if n == 3 {
            started.notify_one();
        }
    }
    let how = match (tx, leaks) {
        // The error path: the transaction is dropped, which rolls it back.
        (Some(tx), true) => {
            drop(tx);
            JobEnd::ErrorPathRolledBack
        }
        (Some(tx), false) => {
            tx.commit().await.map_err(db)?;
            JobEnd::Committed
        }
        (None, true) => JobEnd::ErrorPathReleaseSkipped,
        (None, false) => {
            let mut conn = pool.acquire().await.map_err(db)?;
            sqlx::query("SELECT pg_advisory_unlock($1)")
                .bind(plan.lock_id)
                .execute(&mut *conn)
                .await
                .map_err(db)?;
            JobEnd::Released
        }
    };
    resource.end(&plan.trial, worker.word(), how).await?;
    Ok(())
}

/// Runs the pool process: both jobs, then the idle pool for `linger`, then closes it.
pub async fn run_pool(plan: PoolPlan) -> Result<(), FaultError> {
    let mut resource = Resource::connect(
        &plan.resource_url,
        &plan.resource_schema,
        Duration::from_secs(5),
    )
    .await?;
    let mut resource_2 = Resource::connect(
        &plan.resource_url,
        &plan.resource_schema,
        Duration::from_secs(5),
    )
    .await?;
    let options: PgConnectOptions = plan
        .database_url
        .parse::<PgConnectOptions>()
        .map_err(db)?
        .application_name(&plan.application_name)
        .disable_statement_logging();
    let mut pool = PgPoolOptions::new()
        .max_connections(1)
        .min_connections(1)
        // Job 2 may wait for job 1's connection through its whole job (xact).
        .acquire_timeout(
            Duration::from_millis(plan.write_every_ms * u64::from(plan.writes) * 2)
                + Duration::from_secs(10),
        );
    if plan.mode == PoolMode::UnlockAll {
        pool = pool.after_release(|conn, _| {
            Box::pin(async move {
                conn.execute("SELECT pg_advisory_unlock_all()").await?;
                Ok(true)
            })
        });
    }
    let pool = pool.connect_with(options).await.map_err(db)?;
    say(&Message::Connected);
    let started = Arc::new(Notify::new());
    let first = job(&plan, &pool, &mut resource, Role::Holder, true, &started);
    let second = async {
        // Job 2 arrives while job 1 works (after its third write).
        started.notified().await;
        job(
            &plan,
            &pool,
            &mut resource_2,
            Role::SecondJob,
            false,
            &Notify::new(),
        )
        .await
    };
    // A failed job 1 ends the process at once (job 2 would wait for it forever).
    tokio::try_join!(first, second)?;
    say(&Message::Idle);
    tokio::time::sleep(Duration::from_millis(plan.linger_ms)).await;
    pool.close().await;
    say(&Message::Done {
        how: JobEnd::Closed,
    });
    resource.close().await;
    resource_2.close().await;
    Ok(())
}
