//! Postgres advisory locks, session scope (`pg_try_advisory_lock`, held by one dedicated
//! connection from acquire to release) and transaction scope (`pg_try_advisory_xact_lock` inside
//! a transaction held open until COMMIT).
//!
//! Never lock and unlock through a pool: two statements on a pool can land on two sessions and
//! leak the lock. Each lease owns its connection until release, and a connection goes back to
//! the idle stack only when it provably holds nothing: a session takes one lock per lease, so
//! a session-scope release whose `pg_advisory_unlock(k)` answers true leaves it empty (one that
//! answers false is closed), the transaction-scope release is `COMMIT`, and a try that was
//! refused took nothing. A connection
//! in any other state (an error, a statement cancelled by a timeout, a lease never released) is
//! dropped instead of returned, which closes it, and Postgres frees every lock of a closed
//! session.
//!
//! The idle stack is this module's own rather than sqlx's `Pool`: a `PoolConnection` goes back
//! to the pool through a task spawned on drop, and taking and returning one cost about 18 us per
//! acquisition with client and server on one vCPU (31.5 us P50 against 13.7 us on a bare
//! connection for the same statement), a cost the harness-overhead comparison with pgbench
//! cannot carry. Here a clean connection is pushed back synchronously and the next acquisition
//! pops it. (An `after_release` hook running `pg_advisory_unlock_all()` on every return, and
//! later that statement sent with the unlock, each cost a statement per acquisition that the
//! unlock's own answer makes unnecessary.)

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use sqlx::postgres::{PgConnectOptions, PgConnection};
use sqlx::{AssertSqlSafe, ConnectOptions, Connection, Row};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::{Operation, timed};
use crate::{
    BackendConfig, BackendKind, Capabilities, FencingSource, Lease, LockBackend, LockError,
    Redacted, Requests, new_token,
};

/// How soon a backend waiting in the lock queue notices that its client went away.
const DISCONNECT_CHECK: Duration = Duration::from_millis(50);

/// Connections open at once: enough for the benchmark's largest contention level plus waiters.
const MAX_CONNECTIONS: usize = 64;

/// Which advisory lock flavour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// `pg_try_advisory_lock`: held until unlocked or the session ends.
    Session,
    /// `pg_try_advisory_xact_lock`: held until the transaction ends.
    Transaction,
}

/// The backend's connections: those idle (each with the `lock_timeout` it was last set to), and
/// a permit per open one.
struct Connections {
    options: PgConnectOptions,
    idle: Mutex<Vec<(PgConnection, Option<u128>)>>,
    open: Arc<Semaphore>,
}

impl Connections {
    /// An idle connection, or a new one while fewer than [`MAX_CONNECTIONS`] are open.
    async fn take(self: &Arc<Self>) -> Result<Session, sqlx::Error> {
        let permit = self
            .open
            .clone()
            .acquire_owned()
            .await
            .expect("the semaphore is never closed");
        let idle = self.idle.lock().expect("idle connections poisoned").pop();
        let (conn, lock_timeout_ms) = match idle {
            Some(idle) => idle,
            None => (self.options.connect().await?, None),
        };
        Ok(Session {
            conn: Some(conn),
            clean: false,
            lock_timeout_ms,
            home: self.clone(),
            _permit: permit,
        })
    }
}

/// A connection that goes back to the idle stack only when marked clean; dropped in any other
/// state it is closed, which frees whatever it held.
struct Session {
    conn: Option<PgConnection>,
    clean: bool,
    /// The session's `lock_timeout` in milliseconds, as this module last set it (`None`: the
    /// server's default, no limit).
    lock_timeout_ms: Option<u128>,
    home: Arc<Connections>,
    _permit: OwnedSemaphorePermit,
}

impl Session {
    fn conn(&mut self) -> &mut PgConnection {
        self.conn
            .as_mut()
            .expect("a session has its connection until dropped")
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if self.clean
            && let Some(conn) = self.conn.take()
        {
            self.home
                .idle
                .lock()
                .expect("idle connections poisoned")
                .push((conn, self.lock_timeout_ms));
        }
    }
}

struct Held {
    session: Session,
    lock_id: i64,
}

/// Postgres advisory locks.
pub struct PgLock {
    connections: Arc<Connections>,
    scope: Scope,
    /// When false, acquire is the lock function alone and leases carry no fencing token.
    fencing: bool,
    namespace: String,
    sequence: String,
    timeout: Duration,
    held: Mutex<HashMap<String, Held>>,
    /// Query strings sent (a multi-statement string is one).
    requests: Requests,
    /// Simple-protocol queries only: the URL goes through a transaction-mode pooler (a prepared
    /// statement lives on one server connection, which such a pooler hands to other clients).
    simple: bool,
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
            Scope::Session => BackendKind::PgSession,
            Scope::Transaction => BackendKind::PgXact,
        };
        let url = config.urls.first().cloned().unwrap_or_default();
        let unreachable = |reason: String| LockError::Unreachable {
            backend,
            url: Redacted(&url).to_string(),
            reason,
        };
        // Set once per session at its start rather than per wait: a backend blocked on a lock
        // does not read its socket, and this has it notice a closed connection. A pooler that
        // refuses startup options (PgBouncer without `ignore_startup_parameters = options`) gets
        // a connection without it.
        let plain = PgConnectOptions::from_str(&url).map_err(|e| unreachable(e.to_string()))?;
        let checked = plain.clone().options([(
            "client_connection_check_interval",
            format!("{}ms", DISCONNECT_CHECK.as_millis()),
        )]);
        let connect = |options: PgConnectOptions| async move {
            let first = tokio::time::timeout(config.connect_timeout, options.connect())
                .await
                .map_err(|_| format!("no answer within {:?}", config.connect_timeout))?
                .map_err(|e| e.to_string())?;
            Ok::<_, String>((first, options))
        };
        let (mut first, options) = match connect(checked).await {
            Err(e) if e.contains("unsupported startup parameter") => connect(plain).await,
            other => other,
        }
        .map_err(unreachable)?;
        let pooled = pooler_on(&url, &options, &mut first, config.connect_timeout)
            .await
            .map_err(|e| LockError::server(backend, Operation::LookForPooler, e))?;
        if let (Scope::Session, Some(evidence), false) =
            (scope, &pooled, config.through_transaction_pooler)
        {
            return Err(refused(&url, evidence));
        }
        let sequence = identifier(&config.namespace);
        if config.fencing {
            sqlx::raw_sql(AssertSqlSafe(format!(
                "CREATE SEQUENCE IF NOT EXISTS {sequence}"
            )))
            .execute(&mut first)
            .await
            .map(|_| ())
            .or_else(|e| {
                // Two clients creating it at once (shards of one run starting together): one
                // wins, the other's IF NOT EXISTS loses a race on the catalog and says so.
                // A hot standby refuses every CREATE: the sequence comes to it from its
                // primary, and its nextval works once it is promoted (a client that connects to
                // the address a failover moves).
                if is_duplicate_object(&e) || is_read_only(&e) {
                    Ok(())
                } else {
                    Err(LockError::server(
                        backend,
                        Operation::CreateFencingSequence,
                        e,
                    ))
                }
            })?;
        }
        let connections = Arc::new(Connections {
            options,
            idle: Mutex::new(vec![(first, None)]),
            open: Arc::new(Semaphore::new(MAX_CONNECTIONS)),
        });
        Ok(PgLock {
            connections,
            scope,
            fencing: config.fencing,
            namespace: config.namespace.clone(),
            sequence,
            timeout: config.operation_timeout,
            held: Mutex::new(HashMap::new()),
            requests: Requests::default(),
            simple: pooled.is_some() || config.through_transaction_pooler,
        })
    }

    fn kind(&self) -> BackendKind {
        match self.scope {
            Scope::Session => BackendKind::PgSession,
            Scope::Transaction => BackendKind::PgXact,
        }
    }

    fn backend(&self) -> BackendKind {
        self.kind()
    }

    /// The one row of `sql`, whose `$1` is the lock id and `$2` (if any) the fencing sequence:
    /// a prepared statement, as pgbench's `-M prepared`. Through a transaction-mode pooler (pg-xact,
    /// or a session lock the fault lab measures there) one simple-protocol query with both
    /// written in instead: a prepared statement lives on a server connection such a pooler hands
    /// to other clients.
    async fn row(
        &self,
        conn: &mut PgConnection,
        sql: &'static str,
        id: i64,
    ) -> Result<sqlx::postgres::PgRow, sqlx::Error> {
        if self.simple {
            return sqlx::raw_sql(AssertSqlSafe(self.inlined(sql, id)))
                .fetch_one(conn)
                .await;
        }
        let query = sqlx::query(sql).bind(id);
        let query = if sql.contains("$2") {
            query.bind(&self.sequence)
        } else {
            query
        };
        query.fetch_one(conn).await
    }

    /// [`PgLock::row`] of a blocking wait: through a transaction-mode pooler, with its
    /// `lock_timeout` set in the same query (one transaction, so one server connection).
    async fn waiting_row(
        &self,
        conn: &mut PgConnection,
        sql: &'static str,
        id: i64,
        wait_ms: u128,
    ) -> Result<sqlx::postgres::PgRow, sqlx::Error> {
        if self.simple {
            let text = format!(
                "SET lock_timeout = '{wait_ms}ms'; {}",
                self.inlined(sql, id)
            );
            return sqlx::raw_sql(AssertSqlSafe(text)).fetch_one(conn).await;
        }
        self.row(conn, sql, id).await
    }

    /// `sql` with the lock id and the sequence's name (an identifier of ours) written in.
    fn inlined(&self, sql: &str, id: i64) -> String {
        sql.replace("$1", &id.to_string())
            .replace("$2", &format!("'{}'", self.sequence))
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

    /// What every acquisition starts with: the namespaced key, its advisory lock id and a
    /// session to ask on.
    async fn open(&self, key: &str) -> Result<(String, i64, Session), LockError> {
        let namespaced = format!("{}:{key}", self.namespace);
        let id = lock_id(&namespaced);
        let session = self
            .connections
            .take()
            .await
            .map_err(|e| LockError::server(self.backend(), Operation::TakeConnection, e))?;
        Ok((namespaced, id, session))
    }

    async fn try_acquire_inner(
        &self,
        key: &str,
        ttl: Duration,
    ) -> Result<Option<Lease>, LockError> {
        let backend = self.backend();
        let (namespaced, id, mut session) = self.open(key).await?;
        let conn = session.conn();
        self.requests.sent();
        // One round trip: the lock, and the fencing number only if the lock was granted.
        // Some(Some(n)): granted with fencing token n; Some(None): granted without; None: held.
        let granted: Option<Option<i64>> = match self.scope {
            Scope::Session if self.fencing => self
                .row(
                    conn,
                    "SELECT CASE WHEN pg_try_advisory_lock($1) THEN nextval($2::regclass) END",
                    id,
                )
                .await
                .and_then(|r| r.try_get::<Option<i64>, _>(0))
                .map_err(|e| LockError::server(backend, Operation::Acquire, e))?
                .map(Some),
            Scope::Session => self
                .row(conn, "SELECT pg_try_advisory_lock($1)", id)
                .await
                .and_then(|r| r.try_get::<bool, _>(0))
                .map_err(|e| LockError::server(backend, Operation::Acquire, e))?
                .then_some(None),
            Scope::Transaction => {
                let sql = if self.fencing {
                    format!(
                        "BEGIN; SELECT CASE WHEN pg_try_advisory_xact_lock({id}) THEN nextval('{}') END",
                        self.sequence
                    )
                } else {
                    format!(
                        "BEGIN; SELECT CASE WHEN pg_try_advisory_xact_lock({id}) THEN 0::bigint END"
                    )
                };
                let rows = sqlx::raw_sql(AssertSqlSafe(sql))
                    .fetch_all(&mut *conn)
                    .await
                    .map_err(|e| LockError::server(backend, Operation::Acquire, e))?;
                let granted = rows
                    .first()
                    .map(|r| r.try_get::<Option<i64>, _>(0))
                    .transpose()
                    .map_err(|e| LockError::server(backend, Operation::Acquire, e))?
                    .flatten();
                if granted.is_none() {
                    self.requests.sent();
                    sqlx::raw_sql("ROLLBACK")
                        .execute(&mut *conn)
                        .await
                        .map_err(|e| LockError::server(backend, Operation::Acquire, e))?;
                }
                granted.map(|n| self.fencing.then_some(n))
            }
        };
        let Some(fencing) = granted else {
            // Refused: the session took nothing (and a transaction was rolled back).
            session.clean = true;
            return Ok(None);
        };
        Ok(Some(self.grant(session, id, namespaced, fencing, ttl)))
    }

    /// Keeps a granted lock's session under a new token and returns its lease.
    fn grant(
        &self,
        session: Session,
        lock_id: i64,
        key: String,
        fencing: Option<i64>,
        ttl: Duration,
    ) -> Lease {
        let token = new_token();
        self.put(token.clone(), Held { session, lock_id });
        Lease {
            key,
            token,
            fencing: fencing.map(|n| n as u64),
            ttl,
            acquired_at: Instant::now(),
        }
    }

    /// Waits in Postgres's own lock queue: a blocking `pg_advisory_lock` (or `_xact_lock`) under
    /// the session's `lock_timeout`, set to the wait only when it differs from the last one this
    /// session was given (in a statement of its own, so that no rollback undoes it). A session
    /// lock is one prepared statement (with its fencing number when fencing), as pgbench's
    /// `-M prepared`; a transaction lock opens the transaction it is held by. A wait that times
    /// out leaves nothing queued (a transaction is rolled back). A wait abandoned midway (its
    /// future dropped) drops the session, which closes the connection; a backend blocked on a
    /// lock does not read its socket, so `client_connection_check_interval` (Postgres 14 and
    /// later, set at connect) has it notice the closed connection within [`DISCONNECT_CHECK`]
    /// and leave the queue, rather than at the wait's end.
    async fn acquire_queued(
        &self,
        key: &str,
        ttl: Duration,
        wait: Duration,
    ) -> Result<Option<Lease>, LockError> {
        let backend = self.backend();
        let failed = |e: sqlx::Error| LockError::server(backend, Operation::Acquire, e);
        let (namespaced, id, mut session) = self.open(key).await?;
        // lock_timeout is whole milliseconds, and 0 would mean no limit at all.
        let wait_ms = wait.as_millis().max(1);
        // Through a transaction-mode pooler a SET outlives its transaction on a server
        // connection the next query may not get: the wait's own query sets it (`row`).
        if session.lock_timeout_ms != Some(wait_ms) && !self.simple {
            self.requests.sent();
            sqlx::raw_sql(AssertSqlSafe(format!("SET lock_timeout = '{wait_ms}ms'")))
                .execute(session.conn())
                .await
                .map_err(failed)?;
            session.lock_timeout_ms = Some(wait_ms);
        }
        let conn = session.conn();
        self.requests.sent();
        let granted: Result<i64, sqlx::Error> = match self.scope {
            // The materialized CTE takes the lock before the sequence is read.
            Scope::Session if self.fencing => self
                .waiting_row(
                    conn,
                    "WITH l AS MATERIALIZED (SELECT pg_advisory_lock($1)) SELECT nextval($2::regclass) FROM l",
                    id,
                    wait_ms,
                )
                .await
                .and_then(|r| r.try_get::<i64, _>(0)),
            Scope::Session => self
                .waiting_row(conn, "SELECT pg_advisory_lock($1)", id, wait_ms)
                .await
                .map(|_| 0),
            // The transaction stays open: the lock is held until release commits it.
            Scope::Transaction => {
                let fence = if self.fencing {
                    format!("SELECT nextval('{}')", self.sequence)
                } else {
                    "SELECT 0::bigint".to_string()
                };
                let sql = format!("BEGIN; SELECT pg_advisory_xact_lock({id}); {fence}");
                match sqlx::raw_sql(AssertSqlSafe(sql)).fetch_all(&mut *conn).await {
                    Ok(rows) => Ok(rows
                        .last()
                        .map(|r| r.try_get::<i64, _>(0))
                        .transpose()
                        .map_err(failed)?
                        .ok_or_else(|| {
                            LockError::server(backend, Operation::Acquire, "no fencing row returned")
                        })?),
                    Err(e) if is_lock_timeout(&e) => {
                        self.requests.sent();
                        sqlx::raw_sql("ROLLBACK")
                            .execute(&mut *conn)
                            .await
                            .map_err(failed)?;
                        Err(e)
                    }
                    Err(e) => Err(e),
                }
            }
        };
        match granted {
            Ok(number) => {
                let fencing = self.fencing.then_some(number);
                Ok(Some(self.grant(session, id, namespaced, fencing, ttl)))
            }
            Err(e) if is_lock_timeout(&e) => {
                // Never granted (and a transaction rolled back): the session holds nothing.
                session.clean = true;
                Ok(None)
            }
            Err(e) => Err(failed(e)),
        }
    }
}

/// What this process found on each URL it connected to: what showed a transaction-mode pooler,
/// or `None`.
static POOLERS: LazyLock<Mutex<HashMap<String, Option<String>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// What is found on `url` (see [`transaction_pooler`]), looked for once per URL in this process:
/// a bench connects a client per contender, and each look needs a second server connection.
async fn pooler_on(
    url: &str,
    options: &PgConnectOptions,
    first: &mut PgConnection,
    within: Duration,
) -> Result<Option<String>, sqlx::Error> {
    let cached = POOLERS
        .lock()
        .expect("pooler findings poisoned")
        .get(url)
        .cloned();
    if let Some(found) = cached {
        return Ok(found);
    }
    let found = transaction_pooler(options, first, within).await?;
    POOLERS
        .lock()
        .expect("pooler findings poisoned")
        .insert(url.to_string(), found.clone());
    Ok(found)
}

/// pg-session's refusal on `url`, with what showed the pooler.
fn refused(url: &str, evidence: &str) -> LockError {
    LockError::Refused {
        backend: BackendKind::PgSession,
        url: Redacted(url).to_string(),
        reason: format!(
            "a transaction-mode pooler is in the path ({evidence}): a session lock would stay on a server connection the pooler then hands to other clients, and its unlock could go to another; use pg-xact, a direct connection to Postgres, or a session-mode pooler"
        ),
    }
}

/// Refuses a session lock on `config`'s URL when a transaction-mode pooler is in its path, as
/// [`PgLock::connect`] does, but creating nothing on the server (no fencing sequence): for a
/// caller that checks before it starts (the fault lab). A URL it cannot reach is left to the
/// connection that follows, which says so.
pub async fn refuse_pooled_session(config: &BackendConfig) -> Result<(), LockError> {
    let url = config.urls.first().cloned().unwrap_or_default();
    let Ok(options) = PgConnectOptions::from_str(&url) else {
        return Ok(());
    };
    let Ok(Ok(mut first)) = tokio::time::timeout(config.connect_timeout, options.connect()).await
    else {
        return Ok(());
    };
    let found = pooler_on(&url, &options, &mut first, config.connect_timeout).await;
    let _ = first.close().await;
    match found {
        Ok(Some(evidence)) => Err(refused(&url, &evidence)),
        _ => Ok(()),
    }
}

/// Connects to `url` and looks for a transaction-mode pooler in its path, every time (what
/// [`PgLock::connect`] does once per URL): for the benchmark of what the look costs.
pub async fn look_for_pooler(url: &str, within: Duration) -> Result<Option<String>, sqlx::Error> {
    let options = PgConnectOptions::from_str(url)?;
    let mut first = options.connect().await?;
    let found = transaction_pooler(&options, &mut first, within).await;
    let _ = first.close().await;
    found
}

/// What shows a transaction-mode pooler (PgBouncer's `pool_mode = transaction`, or statement
/// mode) between this client and Postgres, if one is there. A setting is made on `first`'s
/// session, then read back on it and on a second connection: directly, or through a
/// session-mode pooler, the first always reads its own value and the second never does; through
/// a transaction-mode pooler the setting stays on a server connection, which the pooler hands to
/// whoever asks next. Tried twice (a busy pooler may hand that connection to a third client in
/// between): one more connection and five round trips, the setting reset after.
///
/// A second connection that gets no server within `within` finds nothing: a transaction-mode
/// pooler would have handed it the first's, idle between its queries; a session-mode pooler at
/// its pool size has none to give.
pub async fn transaction_pooler(
    options: &PgConnectOptions,
    first: &mut PgConnection,
    within: Duration,
) -> Result<Option<String>, sqlx::Error> {
    let token = new_token();
    sqlx::raw_sql(AssertSqlSafe(format!(
        "SET lockbench.pooler_probe = '{token}'"
    )))
    .execute(&mut *first)
    .await?;
    let found = read_back(options, first, within, &token).await?;
    if found.is_none() {
        sqlx::raw_sql("RESET lockbench.pooler_probe")
            .execute(&mut *first)
            .await?;
    }
    Ok(found)
}

/// [`transaction_pooler`]'s reading: `token`, set on `first`, read back on it and on a second
/// connection, twice.
async fn read_back(
    options: &PgConnectOptions,
    first: &mut PgConnection,
    within: Duration,
    token: &str,
) -> Result<Option<String>, sqlx::Error> {
    const READ: &str =
        "SELECT current_setting('lockbench.pooler_probe', true), pg_backend_pid()::bigint";
    let Ok(second) = tokio::time::timeout(within, options.connect()).await else {
        return Ok(None);
    };
    let mut second = second?;
    let mut found = None;
    for _ in 0..2 {
        let own = sqlx::raw_sql(READ).fetch_one(&mut *first).await?;
        if own.try_get::<Option<String>, _>(0)?.as_deref() != Some(token) {
            found = Some(
                "a setting made on one session was gone from it at its next query".to_string(),
            );
            break;
        }
        let Ok(other) =
            tokio::time::timeout(within, sqlx::raw_sql(READ).fetch_one(&mut second)).await
        else {
            break;
        };
        let other = other?;
        if other.try_get::<Option<String>, _>(0)?.as_deref() == Some(token) {
            found = Some(format!(
                "a setting made on one client connection was read on another, both served by server process {}",
                other.try_get::<i64, _>(1)?
            ));
            break;
        }
    }
    let _ = second.close().await;
    Ok(found)
}

/// Postgres's answer when an object created concurrently already exists: a unique violation
/// on the catalog (23505) or duplicate_table (42P07).
fn is_duplicate_object(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(db) if matches!(db.code().as_deref(), Some("23505" | "42P07")))
}

/// Postgres's answer to a write on a hot standby (SQLSTATE 25006, read_only_sql_transaction).
fn is_read_only(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(db) if db.code().as_deref() == Some("25006"))
}

/// Postgres's answer when `lock_timeout` ends a wait (SQLSTATE 55P03, lock_not_available).
fn is_lock_timeout(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(db) if db.code().as_deref() == Some("55P03"))
}

#[async_trait]
impl LockBackend for PgLock {
    fn name(&self) -> &'static str {
        self.backend().name()
    }

    fn requests(&self) -> Option<u64> {
        Some(self.requests.count())
    }

    async fn server_version(&self) -> Option<Result<String, LockError>> {
        let backend = self.backend();
        Some(
            timed(backend, Operation::Version, self.timeout, async {
                let mut session = self
                    .connections
                    .take()
                    .await
                    .map_err(|e| LockError::server(backend, Operation::TakeConnection, e))?;
                // No parameter: the simple protocol, directly or through any pooler.
                let version = sqlx::raw_sql("SHOW server_version")
                    .fetch_one(session.conn())
                    .await
                    .and_then(|r| r.try_get::<String, _>(0))
                    .map_err(|e| LockError::server(backend, Operation::Version, e))?;
                session.clean = true;
                Ok(version)
            })
            .await,
        )
    }

    fn client_library(&self) -> Option<&'static str> {
        Some(crate::clients::POSTGRES)
    }

    fn transaction_pooler(&self) -> Option<bool> {
        Some(self.simple)
    }

    async fn server_clock_us(&self) -> Option<Result<u64, LockError>> {
        let backend = self.backend();
        Some(
            timed(backend, Operation::Clock, self.timeout, async {
                let mut session = self
                    .connections
                    .take()
                    .await
                    .map_err(|e| LockError::server(backend, Operation::TakeConnection, e))?;
                let us = sqlx::raw_sql(
                    "SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint",
                )
                .fetch_one(session.conn())
                .await
                .and_then(|r| r.try_get::<i64, _>(0))
                .map_err(|e| LockError::server(backend, Operation::Clock, e))?;
                session.clean = true;
                Ok(us.max(0) as u64)
            })
            .await,
        )
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            fencing: if self.fencing {
                self.kind().fencing()
            } else {
                FencingSource::None
            },
            native_ttl: false,
            wait_queue: true,
            native_wait: true,
            scope: self.kind().scope(),
        }
    }

    async fn try_acquire(&self, key: &str, ttl: Duration) -> Result<Option<Lease>, LockError> {
        timed(
            self.backend(),
            Operation::Acquire,
            self.timeout,
            self.try_acquire_inner(key, ttl),
        )
        .await
    }

    /// Waits in Postgres's lock queue, bounded by `wait` (plus the operation timeout for the
    /// round trip itself).
    async fn acquire(
        &self,
        key: &str,
        ttl: Duration,
        wait: Duration,
    ) -> Result<Option<Lease>, LockError> {
        timed(
            self.backend(),
            Operation::Acquire,
            wait + self.timeout,
            self.acquire_queued(key, ttl, wait),
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
        self.requests.sent();
        let still = timed(backend, Operation::Renew, self.timeout, async {
            self.row(
                held.session.conn(),
                "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted \
                 AND pid = pg_backend_pid() AND ((classid::bigint << 32) | objid::bigint) = $1)",
                held.lock_id,
            )
            .await
            .and_then(|r| r.try_get::<bool, _>(0))
            .map_err(|e| LockError::server(backend, Operation::Renew, e))
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
        self.requests.sent();
        timed(backend, Operation::Release, self.timeout, async {
            let conn = held.session.conn();
            let released = match self.scope {
                // A session takes one lock per lease, once: when this unlock says it released
                // it, the session holds nothing and may go back. When it says not held,
                // something else happened on this session and it is closed instead.
                Scope::Session => self
                    .row(conn, "SELECT pg_advisory_unlock($1)", held.lock_id)
                    .await
                    .and_then(|r| r.try_get::<bool, _>(0))
                    .map_err(|e| LockError::server(backend, Operation::Release, e))?,
                Scope::Transaction => {
                    sqlx::raw_sql("COMMIT")
                        .execute(&mut *conn)
                        .await
                        .map_err(|e| LockError::server(backend, Operation::Release, e))?;
                    true
                }
            };
            held.session.clean = released;
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
        let idle: Vec<(PgConnection, Option<u128>)> = std::mem::take(
            &mut *self
                .connections
                .idle
                .lock()
                .expect("idle connections poisoned"),
        );
        for (conn, _) in idle {
            // A polite goodbye; a connection that cannot say it is closed all the same.
            let _ = conn.close().await;
        }
        Ok(())
    }

    async fn cleanup_namespace(&self) -> Result<(), LockError> {
        let backend = self.backend();
        let mut session = self
            .connections
            .take()
            .await
            .map_err(|e| LockError::server(backend, Operation::TakeConnection, e))?;
        sqlx::raw_sql(AssertSqlSafe(format!(
            "DROP SEQUENCE IF EXISTS {}",
            self.sequence
        )))
        .execute(session.conn())
        .await
        .map_err(|e| LockError::server(backend, Operation::DropFencingSequence, e))?;
        session.clean = true;
        Ok(())
    }
}
