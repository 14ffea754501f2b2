//! The protected resource: what the lock guards. Two tables in a Postgres schema the lab creates
//! for one run and drops after it: `log`, every critical section's grant, writes and end with the
//! machine's monotonic clock; and `fence`, the highest fencing token seen per trial.
//!
//! Every write is offered to both an unfenced resource (the log, which accepts everything) and a
//! fenced one (the `fence` row, which refuses a token below the highest it has seen: the replay's
//! `fence(token)` rule). One statement does both, so the two cannot disagree on order.

use lockbench_core::records::faults::JobEnd;
use std::time::Duration;

use lockbench_locks::Redacted;
use sqlx::{AssertSqlSafe, Connection, PgConnection, Row};

use crate::FaultError;
use crate::clock::monotonic_ns;

/// What a worker logs (the records' word for it).
pub use lockbench_core::records::faults::LogEvent as Event;

/// One logged event, as read back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoggedEvent {
    /// The order the resource applied it in (the fence decides in this order, not by `t_ns`).
    pub seq: i64,
    /// `holder` or `contender`.
    pub worker: String,
    /// What happened.
    pub event: Event,
    /// When, by the machine's monotonic clock (nanoseconds).
    pub t_ns: i64,
    /// The fencing token presented, where the backend gives one.
    pub token: Option<u64>,
    /// Whether the fenced resource accepted it (`None` for an end, or without a token).
    pub fenced_ok: Option<bool>,
    /// How the job ended, for an end.
    pub detail: String,
}

/// One connection to the resource.
pub struct Resource {
    conn: PgConnection,
    schema: String,
}

/// The schema of one run: the namespace, then the run's id.
pub fn schema_name(namespace: &str, run_id: &str) -> String {
    format!(
        "{}_faults_{}",
        lockbench_locks::sql_identifier(namespace),
        lockbench_locks::sql_identifier(run_id)
    )
}

/// Every statement on the resource is bounded.
const STATEMENT: Duration = Duration::from_secs(10);

async fn bounded<T>(
    what: &str,
    future: impl std::future::Future<Output = Result<T, sqlx::Error>>,
) -> Result<T, FaultError> {
    tokio::time::timeout(STATEMENT, future)
        .await
        .map_err(|_| FaultError::Resource(format!("{what}: no answer within {STATEMENT:?}")))?
        .map_err(|e| FaultError::Resource(format!("{what}: {e}")))
}

fn resource_error(url: &str, e: impl std::fmt::Display) -> FaultError {
    FaultError::Unreachable(format!(
        "Postgres at {}: {e}; start the local servers with scripts/services.sh up, or fix [backends.pg-session] in the config",
        Redacted(url)
    ))
}

impl Resource {
    /// Connects to the resource's database (bounded by `timeout`).
    pub async fn connect(url: &str, schema: &str, timeout: Duration) -> Result<Self, FaultError> {
        let conn = tokio::time::timeout(timeout, PgConnection::connect(url))
            .await
            .map_err(|_| resource_error(url, format!("no connection within {timeout:?}")))?
            .map_err(|e| resource_error(url, e))?;
        Ok(Resource {
            conn,
            schema: schema.to_string(),
        })
    }

    /// Creates the run's schema and tables (the lab, once per run).
    pub async fn create(&mut self) -> Result<(), FaultError> {
        let s = &self.schema;
        bounded(
            &format!("creating schema {s}"),
            sqlx::raw_sql(AssertSqlSafe(format!(
                "DROP SCHEMA IF EXISTS {s} CASCADE;
             CREATE SCHEMA {s};
             CREATE TABLE {s}.log (
                 seq bigserial PRIMARY KEY,
                 trial text NOT NULL,
                 worker text NOT NULL,
                 event text NOT NULL,
                 t_ns bigint NOT NULL,
                 token bigint,
                 fenced_ok boolean,
                 detail text NOT NULL DEFAULT '');
             CREATE INDEX ON {s}.log (trial);
             CREATE TABLE {s}.fence (trial text PRIMARY KEY, highest bigint NOT NULL);"
            )))
            .execute(&mut self.conn),
        )
        .await?;
        Ok(())
    }

    /// Drops the run's schema and everything in it.
    pub async fn drop_schema(&mut self) -> Result<(), FaultError> {
        let s = &self.schema;
        bounded(
            &format!("dropping schema {s}"),
            sqlx::raw_sql(AssertSqlSafe(format!("DROP SCHEMA IF EXISTS {s} CASCADE")))
                .execute(&mut self.conn),
        )
        .await?;
        Ok(())
    }

    /// Drops `schema`, another of the run's (a runner's own tables), and everything in it.
    pub async fn drop_other_schema(&mut self, schema: &str) -> Result<(), FaultError> {
        let schema = lockbench_locks::sql_identifier(schema);
        bounded(
            &format!("dropping schema {schema}"),
            sqlx::raw_sql(AssertSqlSafe(format!(
                "DROP SCHEMA IF EXISTS {schema} CASCADE"
            )))
            .execute(&mut self.conn),
        )
        .await?;
        Ok(())
    }

    /// Makes the slot cells' completion table empty and new: `(job, slot)`, one row per slot
    /// run (`clients/adapters/python/cron_node.py` inserts them).
    pub async fn reset_completion_records(&mut self) -> Result<(), FaultError> {
        let s = &self.schema;
        bounded(
            &format!("creating {s}.completion"),
            sqlx::raw_sql(AssertSqlSafe(format!(
                "DROP TABLE IF EXISTS {s}.completion;
                 CREATE TABLE {s}.completion (job text NOT NULL, slot bigint NOT NULL, PRIMARY KEY (job, slot))"
            )))
            .execute(&mut self.conn),
        )
        .await?;
        Ok(())
    }

    /// Drops the schema if it exists; whether it did.
    pub async fn drop_existing_schema(&mut self) -> Result<bool, FaultError> {
        let s = &self.schema;
        let exists: bool = bounded(
            &format!("looking for schema {s}"),
            sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)")
                .bind(s)
                .fetch_one(&mut self.conn),
        )
        .await?;
        if exists {
            self.drop_schema().await?;
        }
        Ok(exists)
    }

    /// Logs a grant or a write, offered to the fenced resource too; the time is taken just before
    /// the statement is sent. Returns whether the fenced resource accepted it.
    pub async fn write(
        &mut self,
        trial: &str,
        worker: &str,
        event: Event,
        token: Option<u64>,
    ) -> Result<Option<bool>, FaultError> {
        let s = &self.schema;
        let token = token.map(|t| t as i64);
        let t_ns = monotonic_ns();
        // The fence row accepts a token at least as high as the highest it has seen, atomically
        // (the conflict update takes the row lock); a write without a token is not offered.
        let row = bounded(
            &format!("writing to {s}.log"),
            sqlx::query(AssertSqlSafe(format!(
                "WITH f AS (
                 INSERT INTO {s}.fence AS x (trial, highest)
                 SELECT $1, $4::bigint WHERE $4::bigint IS NOT NULL
                 ON CONFLICT (trial) DO UPDATE SET highest = EXCLUDED.highest
                 WHERE x.highest <= EXCLUDED.highest
                 RETURNING 1)
             INSERT INTO {s}.log (trial, worker, event, t_ns, token, fenced_ok)
             VALUES ($1, $2, $3, $5, $4::bigint,
                     CASE WHEN $4::bigint IS NULL THEN NULL ELSE EXISTS (SELECT 1 FROM f) END)
             RETURNING fenced_ok"
            )))
            .bind(trial)
            .bind(worker)
            .bind(event.word())
            .bind(token)
            .bind(t_ns)
            .fetch_one(&mut self.conn),
        )
        .await?;
        Ok(row.get::<Option<bool>, _>(0))
    }

    /// Logs the end of a critical section, now.
    pub async fn end(&mut self, trial: &str, worker: &str, how: JobEnd) -> Result<(), FaultError> {
        self.end_at(trial, worker, how, monotonic_ns()).await
    }

    /// Logs the end of a critical section that ended at `t_ns` (the machine's monotonic clock).
    pub async fn end_at(
        &mut self,
        trial: &str,
        worker: &str,
        how: JobEnd,
        t_ns: i64,
    ) -> Result<(), FaultError> {
        self.note(trial, worker, Event::End, how.name(), t_ns).await
    }

    /// Logs that the client library told `worker` its lock is lost, at `t_ns` (the library's
    /// stamp), and how (`detail`).
    pub async fn told_at(
        &mut self,
        trial: &str,
        worker: &str,
        detail: &str,
        t_ns: i64,
    ) -> Result<(), FaultError> {
        self.note(trial, worker, Event::Told, detail, t_ns).await
    }

    /// Logs an event that carries no token and is dated by the caller.
    async fn note(
        &mut self,
        trial: &str,
        worker: &str,
        event: Event,
        detail: &str,
        t_ns: i64,
    ) -> Result<(), FaultError> {
        let s = &self.schema;
        let kind = event.word();
        bounded(&format!("writing to {s}.log"), sqlx::query(AssertSqlSafe(format!(
            "INSERT INTO {s}.log (trial, worker, event, t_ns, detail) VALUES ($1, $2, '{kind}', $3, $4)"
        )))
        .bind(trial)
        .bind(worker)
        .bind(t_ns)
        .bind(detail)
        .execute(&mut self.conn)).await?;
        Ok(())
    }

    /// A trial's log, in time order.
    pub async fn trial_log(&mut self, trial: &str) -> Result<Vec<LoggedEvent>, FaultError> {
        let s = &self.schema;
        let rows = bounded(
            &format!("reading {s}.log"),
            sqlx::query(AssertSqlSafe(format!(
                "SELECT worker, event, t_ns, token, fenced_ok, detail, seq FROM {s}.log
             WHERE trial = $1 ORDER BY t_ns, seq"
            )))
            .bind(trial)
            .fetch_all(&mut self.conn),
        )
        .await?;
        rows.iter()
            .map(|r| {
                let event: String = r.get(1);
                Ok(LoggedEvent {
                    worker: r.get(0),
                    event: Event::parse(&event).ok_or_else(|| {
                        FaultError::Resource(format!("{s}.log: unknown event {event:?}"))
                    })?,
                    t_ns: r.get(2),
                    token: r.get::<Option<i64>, _>(3).map(|t| t as u64),
                    fenced_ok: r.get(4),
                    detail: r.get(5),
                    seq: r.get(6),
                })
            })
            .collect()
    }

    /// Advisory locks granted to the sessions named `application_name` (what `pg_locks` shows
    /// an operator of a pool whose idle connection still holds one).
    pub async fn advisory_locks_of(&mut self, application_name: &str) -> Result<u64, FaultError> {
        let n: i64 = bounded(
            "reading pg_locks",
            sqlx::query_scalar(
                "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
             WHERE l.locktype = 'advisory' AND l.granted AND a.application_name = $1",
            )
            .bind(application_name)
            .fetch_one(&mut self.conn),
        )
        .await?;
        Ok(n as u64)
    }

    /// Closes the connection.
    pub async fn close(self) {
        let _ = self.conn.close().await;
    }
}
