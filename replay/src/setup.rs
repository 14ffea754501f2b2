//! Setting a replay up and taking it down: the schema and tables, the latency proxy, the payment
//! stub, one lock client and one calibrated database and API connection per worker; and, at the
//! end or after an interrupted run, every lease, key and table removed.

use std::net::SocketAddr;
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use lockbench_core::stats::median;
use lockbench_locks::{FencingSource, LockBackend, Redacted};
use lockbench_workloads::JobModel;
use sqlx::postgres::{PgConnectOptions, PgSslMode};
use sqlx::{Connection, PgConnection};

use crate::costs::CallCosts;
use crate::hold::hold_until;
use crate::plan::{
    Accumulator, JobKind, LiveError, LiveOptions, LockMode, MAX_LIVE_ITEMS, MAX_REAL_ROWS,
    MIN_REAL_ROWS, ReplayPlan, TargetStats, Worker, classify,
};
use crate::proxy::{HOLD_TAG, PgProxy};
use crate::stub::{PaymentStub, StubClient};
use crate::tables::{create_tables, db_error, drop_schema, exec, schema_name};

/// Calls per worker and target measured before the first run, to learn what a call costs on top
/// of its hold, and the hold they ask for (long enough to hide the server's own work).
const CALIBRATION_CALLS: u32 = 20;
const CALIBRATION_HOLD: Duration = Duration::from_millis(2);

/// Everything a prepared replay holds.
pub(crate) struct Prepared {
    pub(crate) plan: ReplayPlan,
    pub(crate) workers: Vec<Worker>,
    pub(crate) backends: Vec<Arc<dyn LockBackend>>,
    pub(crate) admin: PgConnection,
    pub(crate) report: Accumulator,
    pub(crate) proxy: PgProxy,
    pub(crate) stub: PaymentStub,
}

/// Builds everything; removes what it made if a later step fails.
pub(crate) async fn prepare(
    model: &JobModel,
    options: &LiveOptions,
) -> Result<Prepared, LiveError> {
    if model.concurrency() > 1 {
        return Err(LiveError::Unsupported {
            input: None,
            message: format!(
                "live replay runs one lane per worker; the spec has concurrency {}",
                model.concurrency()
            ),
        });
    }
    if model.items() > MAX_LIVE_ITEMS {
        return Err(LiveError::Unsupported {
            input: Some("--scale"),
            message: format!(
                "{} items per run is more than a live replay runs ({MAX_LIVE_ITEMS}); expected a lower scale",
                model.items()
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
                message: format!("{} gives no fencing token", options.backend.label()),
            });
        }
    }
    let schema = schema_name(&options.backend.namespace);
    let real_rows = (kind == JobKind::Migration).then(|| {
        ((model.volume as f64 * options.time_scale).round() as u64)
            .clamp(MIN_REAL_ROWS, MAX_REAL_ROWS)
    });
    let key = format!("replay:{}:{}", model.workload, schema);
    let result = async {
        create_tables(&mut admin, &schema, kind, model.items()).await?;
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
        let plan = ReplayPlan {
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
            let worker = connect_worker(&plan, index, backend, stub.addr).await;
            match worker {
                Ok(w) => workers.push(w),
                Err(e) => {
                    close_all(&backends).await;
                    return Err(e);
                }
            }
        }
        let mut warnings = Vec::new();
        if matches!(options.mode, LockMode::Heartbeat(_)) && model.has_pauses() {
            warnings.push(
                "pauses stop the job's calls but not its heartbeat, which runs on a task of its own: \
                 live runs do not show a lease lost to a long pause"
                    .to_string(),
            );
        }
        Ok(Prepared {
            plan,
            workers,
            backends,
            admin,
            report: Accumulator {
                runs: Vec::new(),
                warnings,
            },
            proxy,
            stub,
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
    plan: &ReplayPlan,
    index: u64,
    backend: Arc<dyn LockBackend>,
    stub: SocketAddr,
) -> Result<Worker, LiveError> {
    let mut db = connect_db(&plan.worker_db, &plan.database, &plan.options).await?;
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
    let cost = costs.map(|c| (median(&c).unwrap_or(0.0) - hold.as_nanos() as f64).max(0.0));
    let costs = CallCosts {
        cost_ns: cost,
        debt_ns: vec![0.0; plan.model.steps().len()],
        shared_debt_ns: 0.0,
    };
    Ok(Worker {
        index,
        backend,
        db,
        api,
        costs,
        stats: vec![TargetStats::default(); plan.model.steps().len()],
    })
}

/// Closes every lock client (revoking leases an interrupted worker held), removes the lock key and
/// the namespace's leftovers with a fresh client, and drops the schema.
pub(crate) async fn cleanup(
    plan: &ReplayPlan,
    backends: &[Arc<dyn LockBackend>],
) -> Result<(), LiveError> {
    close_all(backends).await;
    let mut first_error = None;
    match lockbench_locks::connect(&plan.options.backend).await {
        Ok(client) => {
            if let Err(e) = client.cleanup(&plan.key).await {
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
    if let Err(e) = drop_schema(&plan.admin_db, &plan.schema).await {
        first_error.get_or_insert(e);
    }
    match first_error {
        None => Ok(()),
        Some(e) => Err(e),
    }
}
