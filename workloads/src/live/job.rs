//! The job the workers run, and the bookkeeping of one live run.

use std::net::SocketAddr;
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::join_all;
use lockbench_locks::{FencingSource, Heartbeat, HeartbeatPolicy, Lease, LockBackend, Redacted};
use rand::SeedableRng;
use rand::rngs::SmallRng;
use sqlx::postgres::{PgConnectOptions, PgSslMode};
use sqlx::{AssertSqlSafe, Connection, PgConnection, Row};
use tokio::sync::watch;

use super::clock::Clock;
use super::fidelity::TargetStats;
use super::hold::hold_until;
use super::proxy::{HOLD_TAG, PgProxy};
use super::stub::{Ledger, PaymentStub, StubClient};
use super::tables::{
    count, create_tables, db_error, drop_schema, exec, fence, is_stale, reset, schema_name,
};
use super::{JobRunRecord, LiveError, LiveOptions, LiveReplay, LockMode};
use crate::model::ReplayModel;
use crate::sim::{LivePauses, LiveScenario, replay_rng};
use crate::spec::Target;

/// Most items (customers) one live run may have: each is several real round trips.
pub const MAX_LIVE_ITEMS: u64 = 200_000;
/// Rows of a migration's real table at most: the injected latency carries the rest of the volume.
const MAX_REAL_ROWS: u64 = 20_000;
pub(super) const MIN_REAL_ROWS: u64 = 100;
/// Calls per worker and target measured before the first run, to learn what a call costs on top
/// of its hold, and the hold they ask for (long enough to hide the server's own work).
const CALIBRATION_CALLS: u32 = 20;
const CALIBRATION_HOLD: Duration = Duration::from_millis(2);
/// A retry worker tries the lock this often (real-equivalent), and never more than every 2 ms.
const RETRY_EVERY: Duration = Duration::from_secs(1);
const MIN_RETRY: Duration = Duration::from_millis(2);

/// What kind of job a spec becomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// One item per unit of volume: customers.
    Billing,
    /// A fixed number of items on the whole volume: migrations.
    Migration,
}

/// What one step does for real.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Action {
    /// Read the customer's subscription.
    Read,
    /// Charge the customer through the stub.
    Charge,
    /// Another API call (no charge).
    Call,
    /// Write the customer's status (fenced on request).
    Write,
    /// Local work: a wait.
    Local,
    /// Part of a migration: which statements this step sends.
    Migrate {
        open: bool,
        backfill: bool,
        verify: bool,
        advance: bool,
    },
}

/// Everything the workers share for the whole replay.
pub(crate) struct Shared {
    pub model: ReplayModel,
    pub options: LiveOptions,
    pub schema: String,
    pub key: String,
    pub kind: Kind,
    pub actions: Vec<Action>,
    pub real_rows: Option<u64>,
    pub worker_db: PgConnectOptions,
    pub admin_db: PgConnectOptions,
    pub database: String,
    pub ledger: Arc<Mutex<Ledger>>,
}

impl Shared {
    pub(super) fn f(&self) -> f64 {
        self.options.time_scale
    }

    /// The TTL each acquisition asks for, compressed.
    fn lease_ttl(&self) -> Duration {
        match self.options.mode {
            LockMode::FixedTtl(ttl) => ttl.mul_f64(self.f()),
            LockMode::Heartbeat(p) => p.lease_ttl.mul_f64(self.f()),
        }
    }

    fn heartbeat(&self) -> Option<HeartbeatPolicy> {
        match self.options.mode {
            LockMode::FixedTtl(_) => None,
            LockMode::Heartbeat(p) => Some(HeartbeatPolicy {
                lease_ttl: p.lease_ttl.mul_f64(self.f()),
                renewal_interval: p.renewal_interval.mul_f64(self.f()),
                give_up_after: p.give_up_after.mul_f64(self.f()),
            }),
        }
    }
}

/// One worker: its own lock client, database connection (through the proxy) and API connection.
pub(crate) struct Worker {
    index: u64,
    backend: Arc<dyn LockBackend>,
    db: PgConnection,
    api: StubClient,
    clock: Clock,
    pub(super) stats: Vec<TargetStats>,
}

/// What a worker did in one run.
#[derive(Debug, Default)]
struct Outcome {
    runtime: Option<Duration>,
    takeover: bool,
    aborted: bool,
    stale: u64,
    release_refused: bool,
    granted_ttl: Option<Duration>,
}

/// Where the run stands, as the retry workers see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Start {
    Waiting,
    Started(Instant),
    Failed,
}

/// One run's shared state.
struct RunContext {
    run: u64,
    scenario: LiveScenario,
    start: watch::Sender<Start>,
}

/// What the replay accumulates over its runs.
pub(crate) struct Accumulator {
    pub runs: Vec<JobRunRecord>,
    pub(super) warnings: Vec<String>,
}

impl Accumulator {
    fn warn(&mut self, message: String) {
        if !self.warnings.contains(&message) {
            self.warnings.push(message);
        }
    }
}

/// Builds everything; removes what it made if a later step fails.
pub(crate) async fn prepare(
    model: &ReplayModel,
    options: &LiveOptions,
) -> Result<LiveReplay, LiveError> {
    if model.concurrency > 1 {
        return Err(LiveError::Unsupported {
            input: None,
            message: format!(
                "live replay runs one lane per worker; the spec has concurrency {}",
                model.concurrency
            ),
        });
    }
    if model.items > MAX_LIVE_ITEMS {
        return Err(LiveError::Unsupported {
            input: Some("--scale"),
            message: format!(
                "{} items per run is more than a live replay runs ({MAX_LIVE_ITEMS}); expected a lower scale",
                model.items
            ),
        });
    }
    let (kind, actions) = classify(model)?;
    let database = Redacted(&options.database_url).to_string();
    let admin_db = PgConnectOptions::from_str(&options.database_url)
        .map_err(|e| LiveError::Database(format!("replay database {database}: {e}")))?;
    let mut admin = connect_db(&admin_db, &database, options).await?;
    let upstream = tokio::net::lookup_host((admin_db.get_host(), admin_db.get_port()))
        .await
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| {
            LiveError::Database(format!(
                "replay database {database}: cannot resolve {}",
                admin_db.get_host()
            ))
        })?;
    if options.fencing {
        let probe = lockbench_locks::connect(&options.backend).await?;
        let source = probe.capabilities().fencing;
        let _ = probe.close().await;
        if source == FencingSource::None || !options.backend.fencing {
            return Err(LiveError::Unsupported {
                input: Some("--fencing"),
                message: format!("{} gives no fencing token", options.backend.kind.name()),
            });
        }
    }
    let schema = schema_name(&options.backend.namespace);
    let real_rows = (kind == Kind::Migration).then(|| {
        ((model.volume as f64 * options.time_scale).round() as u64)
            .clamp(MIN_REAL_ROWS, MAX_REAL_ROWS)
    });
    let key = format!("replay:{}:{}", model.workload, schema);
    let result = async {
        create_tables(&mut admin, &schema, kind, model.items).await?;
        let proxy = PgProxy::start(upstream)
            .await
            .map_err(|e| LiveError::Run(format!("starting the latency proxy: {e}")))?;
        let stub = PaymentStub::start()
            .await
            .map_err(|e| LiveError::Run(format!("starting the payment-API stub: {e}")))?;
        // A commit's fsync is real cost the model does not ask for (the spec's latency stands for
        // the database's whole answer): without it a write's real cost stays well under a
        // compressed call.
        let worker_db = admin_db
            .clone()
            .host("127.0.0.1")
            .port(proxy.addr.port())
            .ssl_mode(PgSslMode::Disable)
            .options([("synchronous_commit", "off")]);
        let shared = Shared {
            model: model.clone(),
            options: options.clone(),
            schema: schema.clone(),
            key: key.clone(),
            kind,
            actions,
            real_rows,
            worker_db,
            admin_db: admin_db.clone(),
            database: database.clone(),
            ledger: stub.ledger.clone(),
        };
        let mut workers = Vec::new();
        let mut backends = Vec::new();
        for index in 1..=options.workers as u64 {
            let backend: Arc<dyn LockBackend> =
                Arc::from(lockbench_locks::connect(&options.backend).await?);
            backends.push(backend.clone());
            let worker = connect_worker(&shared, index, backend, stub.addr).await;
            match worker {
                Ok(w) => workers.push(w),
                Err(e) => {
                    close_all(&backends).await;
                    return Err(e);
                }
            }
        }
        let mut warnings = Vec::new();
        if matches!(options.mode, LockMode::Heartbeat(_)) && model.pauses.is_some() {
            warnings.push(
                "pauses stop the job's calls but not its heartbeat, which runs on a task of its own: \
                 live runs do not show a lease lost to a long pause"
                    .to_string(),
            );
        }
        Ok(LiveReplay {
            shared,
            workers,
            backends,
            admin: Some(admin),
            report: Accumulator {
                runs: Vec::new(),
                warnings,
            },
            _proxy: proxy,
            _stub: stub,
        })
    }
    .await;
    if result.is_err() {
        let _ = drop_schema(&admin_db, &schema).await;
    }
    result
}

async fn close_all(backends: &[Arc<dyn LockBackend>]) {
    for b in backends {
        let _ = b.close().await;
    }
}

/// Turns the spec's steps into real work (see the module documentation of `live`).
fn classify(model: &ReplayModel) -> Result<(Kind, Vec<Action>), LiveError> {
    let steps = &model.steps;
    let db: Vec<usize> = (0..steps.len())
        .filter(|&i| steps[i].target == Target::Db)
        .collect();
    if model.fixed_items {
        let (Some(&first), Some(&last)) = (db.first(), db.last()) else {
            return Err(LiveError::Unsupported {
                input: None,
                message:
                    "a spec with a fixed item count runs live as migrations, which need a db step"
                        .to_string(),
            });
        };
        let actions = steps
            .iter()
            .enumerate()
            .map(|(i, s)| match s.target {
                Target::Db => {
                    let backfill = s.per_unit.is_some();
                    Action::Migrate {
                        open: i == first,
                        backfill,
                        advance: i == last,
                        verify: i != first && i != last && !backfill,
                    }
                }
                Target::Api => Action::Call,
                Target::Cpu => Action::Local,
            })
            .collect();
        return Ok((Kind::Migration, actions));
    }
    let first_api = steps.iter().position(|s| s.target == Target::Api);
    let last_db = db.last().copied();
    let actions = steps
        .iter()
        .enumerate()
        .map(|(i, s)| match s.target {
            Target::Db => {
                let writes = match first_api {
                    Some(a) => i > a,
                    None => Some(i) == last_db,
                };
                if writes { Action::Write } else { Action::Read }
            }
            Target::Api if Some(i) == first_api => Action::Charge,
            Target::Api => Action::Call,
            Target::Cpu => Action::Local,
        })
        .collect();
    Ok((Kind::Billing, actions))
}

async fn connect_db(
    options: &PgConnectOptions,
    shown: &str,
    live: &LiveOptions,
) -> Result<PgConnection, LiveError> {
    match tokio::time::timeout(
        live.backend.connect_timeout,
        PgConnection::connect_with(options),
    )
    .await
    {
        Ok(Ok(conn)) => Ok(conn),
        Ok(Err(e)) => Err(unreachable_db(shown, &e.to_string())),
        Err(_) => Err(unreachable_db(
            shown,
            &format!("no answer within {:?}", live.backend.connect_timeout),
        )),
    }
}

fn unreachable_db(shown: &str, reason: &str) -> LiveError {
    LiveError::Database(format!(
        "postgres: cannot reach the replay database {shown}: {reason}; start the local servers with scripts/services.sh up, or set [replay] database in the config"
    ))
}

async fn connect_worker(
    shared: &Shared,
    index: u64,
    backend: Arc<dyn LockBackend>,
    stub: SocketAddr,
) -> Result<Worker, LiveError> {
    let mut db = connect_db(&shared.worker_db, &shared.database, &shared.options).await?;
    let mut api = StubClient::connect(stub)
        .await
        .map_err(|e| LiveError::Run(format!("connecting to the payment-API stub: {e}")))?;
    // What a call costs on top of its hold: the hops between the job and the proxy or the stub and
    // the hold's own lateness. Measured with a hold long enough to hide the server's work (the
    // hold runs from the request's arrival), as a median: a fresh connection's first answers
    // are slow.
    let mut costs: [Vec<f64>; 3] = Default::default();
    let hold = CALIBRATION_HOLD;
    let tag = format!("{HOLD_TAG}{}*/ SELECT 1", hold.as_nanos());
    for _ in 0..CALIBRATION_CALLS {
        let started = Instant::now();
        exec(&mut db, tag.clone())
            .await
            .map_err(|e| db_error("calibrating", e))?;
        costs[0].push(started.elapsed().as_nanos() as f64);
        let started = Instant::now();
        api.post("/ping", "", hold, None)
            .await
            .map_err(|e| LiveError::Run(format!("calibrating the payment-API stub: {e}")))?;
        costs[1].push(started.elapsed().as_nanos() as f64);
        let started = Instant::now();
        hold_until(started + hold).await;
        costs[2].push(started.elapsed().as_nanos() as f64);
    }
    let cost = costs.map(|mut c| (median(&mut c) - hold.as_nanos() as f64).max(0.0));
    let clock = Clock {
        cost_ns: cost,
        debt_ns: vec![0.0; shared.model.steps.len()],
        shared_debt_ns: 0.0,
    };
    Ok(Worker {
        index,
        backend,
        db,
        api,
        clock,
        stats: vec![TargetStats::default(); shared.model.steps.len()],
    })
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

/// One job run with every worker; returns its record.
pub(crate) async fn run_once(
    shared: &Shared,
    workers: &mut [Worker],
    admin: &mut PgConnection,
    run: u64,
    acc: &mut Accumulator,
) -> Result<JobRunRecord, LiveError> {
    reset(shared, admin).await?;
    let mut rng = replay_rng(shared.options.seed, run);
    let context = RunContext {
        run,
        scenario: LiveScenario::draw(&shared.model, &mut rng),
        start: watch::channel(Start::Waiting).0,
    };
    let work = join_all(
        workers
            .iter_mut()
            .enumerate()
            .map(|(i, w)| work(shared, &context, w, i == 0)),
    );
    let outcomes = tokio::time::timeout(shared.options.run_timeout, work)
        .await
        .map_err(|_| {
            LiveError::Run(format!(
                "run {run} did not finish within {:?} of wall time",
                shared.options.run_timeout
            ))
        })?;
    let outcomes = outcomes.into_iter().collect::<Result<Vec<_>, _>>()?;
    // Fencing counters and the like start again at the next run, as the fence table does.
    workers[0].backend.cleanup(&shared.key).await?;
    let first = &outcomes[0];
    if let Some(granted) = first.granted_ttl {
        let asked = shared.lease_ttl();
        if granted > asked.mul_f64(1.1) {
            acc.warn(format!(
                "{} granted a {:?} lease for a requested {:?} (etcd rounds leases up to whole seconds, a ZooKeeper lease is its session timeout): the lock lasts longer than the compressed TTL, so double executions are undercounted; raise --time-scale",
                shared.options.backend.kind.name(),
                granted,
                asked
            ));
        }
    }
    let runtime = first.runtime.unwrap_or_default();
    let (double, duplicates, out_of_order) = count(shared, admin, run).await?;
    Ok(JobRunRecord {
        run,
        runtime_s: runtime.as_secs_f64() / shared.f(),
        double_executions: double,
        duplicate_charges_accepted: duplicates,
        stale_writes_rejected: outcomes.iter().map(|o| o.stale).sum(),
        out_of_order,
        takeovers: outcomes.iter().filter(|o| o.takeover).count() as u64,
        aborted: outcomes.iter().filter(|o| o.aborted).count() as u64,
        releases_refused: outcomes.iter().filter(|o| o.release_refused).count() as u64,
    })
}

/// One worker's part of a run: take the lock (first) or keep trying it (retry), run the job
/// unless it is finished, release.
async fn work(
    shared: &Shared,
    context: &RunContext,
    worker: &mut Worker,
    first: bool,
) -> Result<Outcome, LiveError> {
    let result = work_inner(shared, context, worker, first).await;
    if first && result.is_err() {
        context.start.send_replace(Start::Failed);
    }
    result
}

async fn work_inner(
    shared: &Shared,
    context: &RunContext,
    worker: &mut Worker,
    first: bool,
) -> Result<Outcome, LiveError> {
    let ttl = shared.lease_ttl();
    let mut outcome = Outcome::default();
    let lease = if first {
        let lease = worker
            .backend
            .try_acquire(&shared.key, ttl)
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
        let every = RETRY_EVERY.mul_f64(shared.f()).max(MIN_RETRY);
        // Bounded by the run's timeout around every worker.
        loop {
            if let Some(lease) = worker.backend.try_acquire(&shared.key, ttl).await? {
                break lease;
            }
            if *context.start.borrow() == Start::Failed {
                return Ok(outcome);
            }
            tokio::time::sleep(every).await;
        }
    };
    let acquired = Instant::now();
    let heartbeat = shared
        .heartbeat()
        .map(|policy| Heartbeat::spawn(worker.backend.clone(), lease.clone(), policy));
    let next = next_item(shared, context, worker).await?;
    if let Some(next) = next {
        outcome.takeover = !first;
        let finished = run_job(
            shared,
            context,
            worker,
            &lease,
            heartbeat.as_ref(),
            next,
            &mut outcome,
        )
        .await?;
        if finished {
            mark_done(shared, context, worker, &lease, &mut outcome).await?;
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

/// The first item still to do, or `None` when the job is finished for this run.
async fn next_item(
    shared: &Shared,
    context: &RunContext,
    worker: &mut Worker,
) -> Result<Option<u64>, LiveError> {
    let s = &shared.schema;
    match shared.kind {
        Kind::Billing => {
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
        Kind::Migration => {
            let row = sqlx::raw_sql(AssertSqlSafe(format!("SELECT applied FROM {s}.pointer")))
                .fetch_one(&mut worker.db)
                .await
                .map_err(|e| db_error("reading the migration pointer", e))?;
            let applied: i64 = row.try_get(0).map_err(|e| db_error("reading", e))?;
            let next = applied as u64 + 1;
            Ok((next <= shared.model.items).then_some(next))
        }
    }
}

async fn mark_done(
    shared: &Shared,
    context: &RunContext,
    worker: &mut Worker,
    lease: &Lease,
    outcome: &mut Outcome,
) -> Result<(), LiveError> {
    if shared.kind != Kind::Billing {
        return Ok(());
    }
    let sql = format!(
        "{}INSERT INTO {}.job_done (run, worker) VALUES ({}, {}) ON CONFLICT DO NOTHING",
        fence(shared, lease),
        shared.schema,
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
async fn run_job(
    shared: &Shared,
    context: &RunContext,
    worker: &mut Worker,
    lease: &Lease,
    heartbeat: Option<&Heartbeat>,
    next: u64,
    outcome: &mut Outcome,
) -> Result<bool, LiveError> {
    let f = shared.f();
    let started = Instant::now();
    let stream = shared.options.seed ^ worker.index.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut rng = replay_rng(stream, context.run);
    let mut pauses = LivePauses::new(
        &shared.model,
        SmallRng::seed_from_u64(stream ^ context.run.rotate_left(32) ^ 0x7061_7573_6573),
    );
    let run_start = match *context.start.borrow() {
        Start::Started(at) => at,
        _ => started,
    };
    for item in next..=shared.model.items {
        if heartbeat.is_some_and(|h| !h.may_continue()) {
            outcome.aborted = true;
            return Ok(false);
        }
        let pause = pauses.due(started.elapsed().as_secs_f64() / f);
        if pause > 0.0 {
            hold_until(Instant::now() + Duration::from_secs_f64(pause * f)).await;
        }
        let mut amount = 0i64;
        for (i, action) in shared.actions.iter().enumerate() {
            // Episodes are the environment's: their clock is the run's, not this worker's.
            let t = run_start.elapsed().as_secs_f64() / f;
            let requested = context.scenario.call_seconds(&shared.model, i, t, &mut rng) * f * 1e9;
            let target = shared.model.steps[i].target;
            let hold = worker.clock.hold_for(i, target, requested);
            let call_started = Instant::now();
            let done = step(
                shared,
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
            worker.clock.observe(i, requested, achieved);
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
    shared: &Shared,
    context: &RunContext,
    worker: &mut Worker,
    lease: &Lease,
    action: Action,
    item: u64,
    hold_ns: f64,
    amount: &mut i64,
) -> Result<Done, LiveError> {
    let s = &shared.schema;
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
                    shared.options.idempotency_keys,
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
                fence(shared, lease)
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
                    fence(shared, lease),
                    run = context.run
                );
            }
            let result = sqlx::raw_sql(AssertSqlSafe(sql))
                .fetch_all(&mut worker.db)
                .await;
            match result {
                Ok(rows) => {
                    if verify && backfill_anywhere(shared) {
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

fn backfill_anywhere(shared: &Shared) -> bool {
    shared
        .actions
        .iter()
        .any(|a| matches!(a, Action::Migrate { backfill: true, .. }))
}

/// Closes every lock client (revoking leases an interrupted worker held), removes the lock key and
/// the namespace's leftovers with a fresh client, and drops the schema.
pub(crate) async fn cleanup(
    shared: &Shared,
    backends: &[Arc<dyn LockBackend>],
) -> Result<(), LiveError> {
    close_all(backends).await;
    let mut first_error = None;
    match lockbench_locks::connect(&shared.options.backend).await {
        Ok(client) => {
            if let Err(e) = client.cleanup(&shared.key).await {
                first_error.get_or_insert(LiveError::from(e));
            }
            if let Err(e) = client.cleanup_namespace().await {
                first_error.get_or_insert(LiveError::from(e));
            }
            let _ = client.close().await;
        }
        Err(e) => {
            first_error.get_or_insert(LiveError::from(e));
        }
    }
    if let Err(e) = drop_schema(&shared.admin_db, &shared.schema).await {
        first_error.get_or_insert(e);
    }
    match first_error {
        None => Ok(()),
        Some(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::WorkloadSpec;

    fn model(file: &str, profile: &str) -> ReplayModel {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("specs")
            .join(file);
        ReplayModel::new(&WorkloadSpec::load(&path).unwrap(), profile, 0.1).unwrap()
    }

    #[test]
    fn shipped_specs_become_billing_and_migration_jobs() {
        let (kind, actions) = classify(&model("billing.toml", "baseline")).unwrap();
        assert_eq!(kind, Kind::Billing);
        assert_eq!(actions, [Action::Read, Action::Charge, Action::Write]);
        let (kind, actions) = classify(&model("migration.toml", "baseline")).unwrap();
        assert_eq!(kind, Kind::Migration);
        let flags: Vec<(bool, bool, bool, bool)> = actions
            .iter()
            .map(|a| match a {
                Action::Migrate {
                    open,
                    backfill,
                    verify,
                    advance,
                } => (*open, *backfill, *verify, *advance),
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        assert_eq!(
            flags,
            [
                (true, false, false, false),
                (false, true, false, false),
                (false, false, true, false),
                (false, false, false, true)
            ]
        );
    }
}
