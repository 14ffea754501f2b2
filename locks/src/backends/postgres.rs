//! Postgres advisory locks, session scope (`pg_try_advisory_lock`, held by one dedicated
//! connection from acquire to release) and transaction scope (`pg_try_advisory_xact_lock` inside
//! a transaction held open until COMMIT).
//!
//! Never lock and unlock through the pool: two statements on `&pool` can land on two sessions and
//! leak the lock. Each lease owns its connection until release, and a connection goes back to the
//! pool only when it provably holds nothing: the session-scope release sends
//! `pg_advisory_unlock(k)` and `pg_advisory_unlock_all()` in one round trip, the transaction-scope
//! release is `COMMIT`, and a try that was refused took nothing. A connection in any other state
//! (an error, a statement cancelled by a timeout, a lease never released) is closed instead of
//! returned, and Postgres frees every lock of a closed session. An `after_release` hook running
//! `pg_advisory_unlock_all()` on every return did the same at the price of an extra statement per
//! acquisition, which the server ran while the next acquisition was in flight (about 10 us on the
//! mean here).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgPool, PgPoolOptions};
use sqlx::{AssertSqlSafe, Postgres, Row};

use crate::error::timed;
use crate::{
    BackendConfig, Capabilities, FencingSource, Lease, LockBackend, LockError, LockScope, Redacted,
    new_token,
};

/// Connections in the pool: enough for the benchmark's largest contention level plus waiters.
const POOL_SIZE: u32 = 64;

/// Which advisory lock flavour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// `pg_try_advisory_lock`: held until unlocked or the session ends.
    Session,
    /// `pg_try_advisory_xact_lock`: held until the transaction ends.
    Transaction,
}

/// A pooled connection that returns to the pool only when marked clean; dropped in any other
/// state it is closed, which frees whatever it held.
struct Session {
    conn: PoolConnection<Postgres>,
    clean: bool,
}

impl Session {
    fn new(conn: PoolConnection<Postgres>) -> Self {
        Session { conn, clean: false }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if !self.clean {
            self.conn.close_on_drop();
        }
    }
}

struct Held {
    session: Session,
    lock_id: i64,
}

/// Postgres advisory locks.
pub struct PgLock {
    pool: PgPool,
    scope: Scope,
    namespace: String,
    sequence: String,
    timeout: Duration,
    held: Mutex<HashMap<String, Held>>,
}

/// The advisory lock id of a namespaced key: FNV-1a, kept positive so that it reads back from
/// `pg_locks` as (classid << 32) | objid without sign trouble.
pub fn lock_id(namespaced_key: &str) -> i64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in namespaced_key.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    (hash & 0x3fff_ffff_ffff_ffff) as i64
}

fn identifier(namespace: &str) -> String {
    format!("{}_fencing", crate::sql_identifier(namespace))
}

impl PgLock {
    /// Connects a pool to the first configured URL and creates the namespace's fencing sequence.
    pub async fn connect(config: &BackendConfig, scope: Scope) -> Result<Self, LockError> {
        let backend = match scope {
            Scope::Session => "pg-session",
            Scope::Transaction => "pg-xact",
        };
        let url = config.urls.first().cloned().unwrap_or_default();
        let unreachable = |reason: String| LockError::Unreachable {
            backend,
            url: Redacted(&url).to_string(),
            reason,
        };
        let pool = PgPoolOptions::new()
            .max_connections(POOL_SIZE)
            .acquire_timeout(config.connect_timeout)
            // sqlx pings a pooled connection before handing it out by default: a hidden round
            // trip on every acquisition. A broken connection fails the acquire statement instead.
            .test_before_acquire(false)
            .connect(&url)
            .await
            .map_err(|e| unreachable(e.to_string()))?;
        let sequence = identifier(&config.namespace);
        sqlx::raw_sql(AssertSqlSafe(format!(
            "CREATE SEQUENCE IF NOT EXISTS {sequence}"
        )))
        .execute(&pool)
        .await
        .map_err(|e| LockError::server(backend, "create fencing sequence", e))?;
        Ok(PgLock {
            pool,
            scope,
            namespace: config.namespace.clone(),
            sequence,
            timeout: config.operation_timeout,
            held: Mutex::new(HashMap::new()),
        })
    }

    fn backend(&self) -> &'static str {
        match self.scope {
            Scope::Session => "pg-session",
            Scope::Transaction => "pg-xact",
        }
    }

    fn take(&self, token: &str) -> Option<Held> {
        self.held
            .lock()
            .expect("lease table poisoned")
            .remove(token)
    }

    fn put(&self, token: String, held: Held) {
        self.held
            .lock()
            .expect("lease table poisoned")
            .insert(token, held);
    }

    async fn try_acquire_inner(
        &self,
        key: &str,
        ttl: Duration,
    ) -> Result<Option<Lease>, LockError> {
        let backend = self.backend();
        let namespaced = format!("{}:{key}", self.namespace);
        let id = lock_id(&namespaced);
        let mut session = Session::new(
            self.pool
                .acquire()
                .await
                .map_err(|e| LockError::server(backend, "take a connection", e))?,
        );
        let conn = &mut session.conn;
        // One round trip: the lock, and the fencing number only if the lock was granted.
        let fencing: Option<i64> = match self.scope {
            Scope::Session => sqlx::query_scalar(
                "SELECT CASE WHEN pg_try_advisory_lock($1) THEN nextval($2::regclass) END",
            )
            .bind(id)
            .bind(&self.sequence)
            .fetch_one(&mut **conn)
            .await
            .map_err(|e| LockError::server(backend, "acquire", e))?,
            Scope::Transaction => {
                let sql = format!(
                    "BEGIN; SELECT CASE WHEN pg_try_advisory_xact_lock({id}) THEN nextval('{}') END",
                    self.sequence
                );
                let rows = sqlx::raw_sql(AssertSqlSafe(sql))
                    .fetch_all(&mut **conn)
                    .await
                    .map_err(|e| LockError::server(backend, "acquire", e))?;
                let fencing = rows
                    .first()
                    .map(|r| r.try_get::<Option<i64>, _>(0))
                    .transpose()
                    .map_err(|e| LockError::server(backend, "acquire", e))?
                    .flatten();
                if fencing.is_none() {
                    sqlx::raw_sql("ROLLBACK")
                        .execute(&mut **conn)
                        .await
                        .map_err(|e| LockError::server(backend, "acquire", e))?;
                }
                fencing
            }
        };
        let Some(fencing) = fencing else {
            // Refused: the session took nothing (and a transaction was rolled back).
            session.clean = true;
            return Ok(None);
        };
        let token = new_token();
        self.put(
            token.clone(),
            Held {
                session,
                lock_id: id,
            },
        );
        Ok(Some(Lease {
            key: namespaced,
            token,
            fencing: Some(fencing as u64),
            ttl,
            acquired_at: Instant::now(),
        }))
    }
}

#[async_trait]
impl LockBackend for PgLock {
    fn name(&self) -> &'static str {
        self.backend()
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            fencing: FencingSource::Sequence,
            native_ttl: false,
            wait_queue: true,
            scope: match self.scope {
                Scope::Session => LockScope::Session,
                Scope::Transaction => LockScope::Transaction,
            },
        }
    }

    async fn try_acquire(&self, key: &str, ttl: Duration) -> Result<Option<Lease>, LockError> {
        timed(
            self.backend(),
            "acquire",
            self.timeout,
            self.try_acquire_inner(key, ttl),
        )
        .await
    }

    /// Advisory locks have no TTL: the lock lives as long as its session (or transaction). Renew
    /// checks that this lease's connection still holds it.
    async fn renew(&self, lease: &Lease, _ttl: Duration) -> Result<bool, LockError> {
        let Some(mut held) = self.take(&lease.token) else {
            return Ok(false);
        };
        let backend = self.backend();
        let still = timed(backend, "renew", self.timeout, async {
            sqlx::query_scalar::<_, bool>(
                "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted \
                 AND pid = pg_backend_pid() AND ((classid::bigint << 32) | objid::bigint) = $1)",
            )
            .bind(held.lock_id)
            .fetch_one(&mut *held.session.conn)
            .await
            .map_err(|e| LockError::server(backend, "renew", e))
        })
        .await;
        match still {
            Ok(true) => {
                self.put(lease.token.clone(), held);
                Ok(true)
            }
            // Dropping the session closes its connection, which frees anything it still held.
            other => other.map(|_| false),
        }
    }

    async fn release(&self, lease: &Lease) -> Result<bool, LockError> {
        let Some(mut held) = self.take(&lease.token) else {
            return Ok(false);
        };
        let backend = self.backend();
        timed(backend, "release", self.timeout, async {
            let conn = &mut *held.session.conn;
            let released = match self.scope {
                // One round trip: our unlock (its answer says whether we still held it), then
                // anything else this session might hold, so that it returns to the pool empty.
                Scope::Session => {
                    let sql = format!(
                        "SELECT pg_advisory_unlock({}); SELECT pg_advisory_unlock_all()",
                        held.lock_id
                    );
                    let rows = sqlx::raw_sql(AssertSqlSafe(sql))
                        .fetch_all(&mut *conn)
                        .await
                        .map_err(|e| LockError::server(backend, "release", e))?;
                    rows.first()
                        .map(|r| r.try_get::<bool, _>(0))
                        .transpose()
                        .map_err(|e| LockError::server(backend, "release", e))?
                        .unwrap_or(false)
                }
                Scope::Transaction => {
                    sqlx::raw_sql("COMMIT")
                        .execute(&mut *conn)
                        .await
                        .map_err(|e| LockError::server(backend, "release", e))?;
                    true
                }
            };
            held.session.clean = true;
            Ok(released)
        })
        .await
    }

    async fn cleanup(&self, _key: &str) -> Result<(), LockError> {
        // Advisory locks leave nothing behind; the namespace's sequence goes in `close`.
        Ok(())
    }

    async fn close(&self) -> Result<(), LockError> {
        // Dropped unreleased, the sessions close their connections, which frees their locks.
        let held: Vec<Held> = self
            .held
            .lock()
            .expect("lease table poisoned")
            .drain()
            .map(|(_, h)| h)
            .collect();
        drop(held);
        self.pool.close().await;
        Ok(())
    }

    async fn cleanup_namespace(&self) -> Result<(), LockError> {
        sqlx::raw_sql(AssertSqlSafe(format!(
            "DROP SEQUENCE IF EXISTS {}",
            self.sequence
        )))
        .execute(&self.pool)
        .await
        .map(|_| ())
        .map_err(|e| LockError::server(self.backend(), "drop fencing sequence", e))
    }
}
