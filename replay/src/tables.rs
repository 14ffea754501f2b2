//! The job's tables: created under a schema of the replay's own, reset for each run, counted after
//! it, dropped at the end.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use lockbench_locks::Lease;
use sqlx::postgres::PgConnectOptions;
use sqlx::{AssertSqlSafe, Connection, PgConnection, Row};

use crate::plan::{JobKind, LiveError, MIN_REAL_ROWS, ReplayPlan};

/// The message of the exception the fencing function raises.
const STALE: &str = "stale fencing token";

/// A schema name no other replay uses: namespace, process, counter.
pub(crate) fn schema_name(namespace: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let clean = lockbench_locks::sql_identifier(namespace);
    format!(
        "{clean}_replay_{}_{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

pub(crate) async fn exec(conn: &mut PgConnection, sql: String) -> Result<(), sqlx::Error> {
    sqlx::raw_sql(AssertSqlSafe(sql))
        .execute(conn)
        .await
        .map(|_| ())
}

pub(crate) fn db_error(what: &str, e: sqlx::Error) -> LiveError {
    LiveError::Database(format!("postgres: {what}: {e}"))
}

pub(crate) async fn create_tables(
    admin: &mut PgConnection,
    s: &str,
    kind: JobKind,
    items: u64,
) -> Result<(), LiveError> {
    let common = format!(
        "CREATE SCHEMA {s};
         CREATE TABLE {s}.fence_token (token bigint NOT NULL);
         INSERT INTO {s}.fence_token VALUES (0);
         CREATE FUNCTION {s}.fence(t bigint) RETURNS void LANGUAGE plpgsql AS $f$
         BEGIN
             UPDATE {s}.fence_token SET token = t WHERE token <= t;
             IF NOT FOUND THEN RAISE EXCEPTION '{STALE} %', t; END IF;
         END $f$;
         CREATE TABLE {s}.job_done (run bigint PRIMARY KEY, worker bigint NOT NULL);"
    );
    let specific = match kind {
        JobKind::Billing => format!(
            "CREATE TABLE {s}.customers (id bigint PRIMARY KEY, amount_cents bigint NOT NULL,
                 status text NOT NULL DEFAULT 'due', charged_by bigint)
                 WITH (fillfactor = 50);
             INSERT INTO {s}.customers (id, amount_cents)
                 SELECT g, 900 + (g * 7919) % 29000 FROM generate_series(1, {items}) g;"
        ),
        JobKind::Migration => format!(
            "CREATE TABLE {s}.pointer (applied bigint NOT NULL);
             INSERT INTO {s}.pointer VALUES (0);
             CREATE TABLE {s}.migration_log (run bigint NOT NULL, migration bigint NOT NULL,
                 worker bigint NOT NULL, pointer_before bigint NOT NULL);"
        ),
    };
    exec(admin, format!("{common}\n{specific}"))
        .await
        .map_err(|e| db_error("creating the replay tables", e))
}

/// Drops the replay's schema and everything in it, waiting at most 10 s for the locks of an
/// interrupted worker's session to go.
pub(crate) async fn drop_schema(
    admin_db: &PgConnectOptions,
    schema: &str,
) -> Result<(), LiveError> {
    let mut conn = PgConnection::connect_with(admin_db)
        .await
        .map_err(|e| db_error("dropping the replay schema", e))?;
    let result = exec(
        &mut conn,
        format!("SET lock_timeout = '10s'; DROP SCHEMA IF EXISTS {schema} CASCADE"),
    )
    .await
    .map_err(|e| db_error(&format!("dropping schema {schema}"), e));
    let _ = conn.close().await;
    result
}

/// Resets the tables for run `run`.
pub(crate) async fn reset(plan: &ReplayPlan, admin: &mut PgConnection) -> Result<(), LiveError> {
    let s = &plan.schema;
    let sql = match plan.kind {
        JobKind::Billing => format!(
            "UPDATE {s}.customers SET status = 'due', charged_by = NULL;
             UPDATE {s}.fence_token SET token = 0;"
        ),
        JobKind::Migration => format!(
            "DROP TABLE IF EXISTS {s}.accounts;
             CREATE TABLE {s}.accounts (id bigint PRIMARY KEY, balance bigint NOT NULL);
             INSERT INTO {s}.accounts SELECT g, g % 1000 FROM generate_series(1, {}) g;
             UPDATE {s}.pointer SET applied = 0;
             UPDATE {s}.fence_token SET token = 0;",
            plan.real_rows.unwrap_or(MIN_REAL_ROWS)
        ),
    };
    exec(admin, sql)
        .await
        .map_err(|e| db_error("resetting the replay tables", e))
}

/// Counts what went twice in run `run`: (double executions, duplicate charges accepted, out of
/// order migrations).
pub(crate) async fn count(
    plan: &ReplayPlan,
    admin: &mut PgConnection,
    run: u64,
) -> Result<(u64, Option<u64>, Option<u64>), LiveError> {
    match plan.kind {
        JobKind::Billing => {
            let charges: Vec<_> = {
                let mut ledger = plan.ledger.lock().expect("ledger poisoned");
                let (this, rest): (Vec<_>, Vec<_>) =
                    ledger.charges.drain(..).partition(|c| c.period == run);
                ledger.charges = rest;
                this
            };
            let mut by_customer: HashMap<u64, (Vec<u64>, u64)> = HashMap::new();
            for c in charges {
                let entry = by_customer.entry(c.customer).or_default();
                if !entry.0.contains(&c.worker) {
                    entry.0.push(c.worker);
                }
                entry.1 += u64::from(c.accepted);
            }
            let double = by_customer.values().filter(|(w, _)| w.len() > 1).count() as u64;
            let duplicates = by_customer
                .values()
                .map(|(_, accepted)| accepted.saturating_sub(1))
                .sum();
            Ok((double, Some(duplicates), None))
        }
        JobKind::Migration => {
            let s = &plan.schema;
            let row = sqlx::raw_sql(AssertSqlSafe(format!(
                "SELECT
                   (SELECT count(*) FROM (SELECT migration FROM {s}.migration_log WHERE run = {run}
                        GROUP BY migration HAVING count(*) > 1) twice),
                   (SELECT count(*) FROM {s}.migration_log
                        WHERE run = {run} AND pointer_before >= migration)"
            )))
            .fetch_one(admin)
            .await
            .map_err(|e| db_error("counting migrations applied twice", e))?;
            let twice: i64 = row.try_get(0).map_err(|e| db_error("reading a count", e))?;
            let out_of_order: i64 = row.try_get(1).map_err(|e| db_error("reading a count", e))?;
            Ok((twice as u64, None, Some(out_of_order as u64)))
        }
    }
}

/// The statement that checks a fencing token, when fencing is on.
pub(crate) fn fence(plan: &ReplayPlan, lease: &Lease) -> String {
    match (plan.options.fencing, lease.fencing) {
        (true, Some(token)) => format!("SELECT {}.fence({token}); ", plan.schema),
        _ => String::new(),
    }
}

pub(crate) fn is_stale(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(d) if d.message().contains(STALE))
}
