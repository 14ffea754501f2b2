//! One trial: two worker processes (or, for a pool leak, the pool process and a contender), one
//! fault injected into what the lab started, and the figures read back from the protected
//! resource.

use std::path::Path;
use std::time::Duration;

use lockbench_locks::{BackendConfig, LockBackend};
use rand::RngExt;

use crate::FaultError;
use crate::clock::monotonic_ns;
use crate::forward::Forwarder;
use crate::link::ReplicationLink;
use crate::netns::Namespace;
use crate::overlap::{self, TrialFigures};
use crate::plan::{AnyPlan, BackendPlan, LeaseTracking, OnFailure, PoolMode, PoolPlan, WorkerPlan};
use crate::postgres::PrivatePostgres;
use crate::process::WorkerProcess;
use crate::protocol::Message;
use crate::resource::{LoggedEvent, Resource};
use crate::scenario::{Design, Scenario, Variant};
use crate::server::PrivateRedis;
use crate::zookeeper::PrivateZookeeper;

/// The workers' names in the log.
pub(crate) const HOLDER: &str = "holder";
pub(crate) const CONTENDER: &str = "contender";
/// Writes per job.
pub(crate) const WRITES: u32 = 20;

/// What a trial needs from the lab: the run's settings, where the workers find the protected
/// resource, and the lab's own connection to it (to read the trial's log back).
pub(crate) struct TrialContext<'a> {
    /// The lock TTL asked for.
    pub(crate) ttl: Duration,
    /// The protected resource's database URL, as reached from the host.
    pub(crate) resource_url: &'a str,
    /// The run's schema in it.
    pub(crate) resource_schema: &'a str,
    /// The lab's connection to the resource.
    pub(crate) resource: &'a mut Resource,
    /// The lockbench binary (its `fault-worker` mode runs the workers).
    pub(crate) worker_exe: &'a Path,
    /// The run's id (it names the pool process's session).
    pub(crate) run_id: &'a str,
}

/// What a cell's trials run on: the lab's own client of the lock, its private servers, and the
/// namespace of a partition.
pub(crate) struct Kit {
    pub(crate) client: Box<dyn LockBackend>,
    pub(crate) servers: Vec<PrivateRedis>,
    /// A partition's private Postgres (the pg-session cells).
    pub(crate) postgres: Option<PrivatePostgres>,
    /// The clock-jump control's private ZooKeeper.
    pub(crate) zookeeper: Option<PrivateZookeeper>,
    pub(crate) partition: Option<Partition>,
    /// A failover's replication link, between its primary and its replica.
    pub(crate) link: Option<ReplicationLink>,
    /// The holder's lock server URLs where they differ from the config's (a vanished host's:
    /// through its namespace, or with a per-connection keepalive).
    pub(crate) holder_urls: Option<Vec<String>>,
    /// A vanished host's forwarders to the configured lock servers.
    pub(crate) _forwarders: Vec<Forwarder>,
}

/// A partitioned holder's surroundings.
pub(crate) struct Partition {
    pub(crate) ns: Namespace,
    /// Carries the holder's connections to the resource across the namespace's edge.
    pub(crate) _forwarder: Forwarder,
    /// The resource's URL as seen from inside the namespace.
    pub(crate) resource_url: String,
}

/// The address of a Postgres URL, for a forwarder.
pub(crate) fn resource_addr(url: &str) -> Result<std::net::SocketAddr, FaultError> {
    server_addr(url, 5432)
}

/// The address a `scheme://host:port` URL names, `default_port` when it names none.
pub(crate) fn server_addr(
    url: &str,
    default_port: u16,
) -> Result<std::net::SocketAddr, FaultError> {
    let parsed =
        url::Url::parse(url).map_err(|e| FaultError::Resource(format!("the URL {url}: {e}")))?;
    let host = parsed.host_str().unwrap_or("127.0.0.1");
    let port = parsed.port().unwrap_or(default_port);
    std::net::ToSocketAddrs::to_socket_addrs(&(host, port))
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| FaultError::Resource(format!("cannot resolve {host}:{port}")))
}

/// What a trial measured, before it becomes a row.
pub(crate) struct TrialOutcome {
    pub(crate) figures: TrialFigures,
    pub(crate) window: Window,
    pub(crate) granted_ttl: Duration,
    pub(crate) log: Vec<LoggedEvent>,
    /// Advisory locks the idle pooled session held after both jobs (pool-leak trials).
    pub(crate) idle_session_locks: Option<u64>,
}

/// One trial's timing, by the machine's monotonic clock.
pub(crate) struct Window {
    pub(crate) start_ns: i64,
    pub(crate) end_ns: i64,
}

/// Runs one trial of `variant` on `kit`, as trial `id`, with the lock `key`.
pub(crate) async fn run(
    context: &mut TrialContext<'_>,
    variant: Variant,
    config: &BackendConfig,
    kit: &mut Kit,
    id: &str,
    key: &str,
    rng: &mut rand::rngs::StdRng,
) -> Result<TrialOutcome, FaultError> {
    let ttl = variant.trial_ttl(context.ttl);
    if let Variant::PoolLeak(mode) = variant {
        return run_pool_trial(context, mode, config, id, key).await;
    }
    // A warm-up acquisition, so that fencing counters are past their first value, as in any
    // deployment that has run for a while (a counter that restarts then goes back).
    // The lab's own connection may have been closed by the last trial's restart: the first
    // request after one fails and reconnects, so it is tried again.
    let mut tries = 0;
    loop {
        tries += 1;
        match kit.client.try_acquire(key, ttl).await {
            Ok(Some(lease)) => {
                kit.client.release(&lease).await?;
                break;
            }
            Ok(None) => break,
            Err(_) if tries < 3 => tokio::time::sleep(Duration::from_millis(50)).await,
            Err(e) => return Err(e.into()),
        }
    }
    if variant == Variant::RestartPowerLoss
        && let Some(server) = kit.servers.first()
    {
        server.snapshot_aof()?;
    }
    // The job: 20 writes, sized to a TTL (pauses) or to two thirds of one (restarts, whose
    // holder trusts its TTL and checks only at the release); a partitioned holder's job
    // lasts three TTLs, to outlive its partition.
    let (job, writes) = match variant.tracking() {
        _ if variant.partitions() => (ttl * 3, WRITES * 3),
        LeaseTracking::AtRelease | LeaseTracking::ValidityFirst => (ttl * 2 / 3, WRITES),
        _ => (ttl, WRITES),
    };
    let every = job / writes;
    let inside = kit.partition.as_ref().map(|p| p.resource_url.clone());
    // A failover's holder locks on the primary (waiting for the replica with `wait`), its
    // contender on the replica, which is promoted later: the clients of a failover.
    let (holder_backend, contender_backend) = match (variant, &kit.servers[..]) {
        (Variant::Failover { wait }, [primary, replica, ..]) => {
            let mut holder = config.clone();
            holder.urls = vec![primary.url()];
            holder.wait_replicas = u32::from(wait);
            let mut contender = config.clone();
            contender.urls = vec![replica.url()];
            (BackendPlan::of(&holder), BackendPlan::of(&contender))
        }
        _ => match &kit.holder_urls {
            Some(urls) => {
                let mut holder = config.clone();
                holder.urls = urls.clone();
                (BackendPlan::of(&holder), BackendPlan::of(config))
            }
            None => (BackendPlan::of(config), BackendPlan::of(config)),
        },
    };
    // What is held back while the holder acquires: the replication of a failover, one
    // Redlock node of a late start.
    let held_back = match variant {
        Variant::RedlockLateStart { .. } => kit.servers.first(),
        _ => None,
    };
    let slowed = held_back.is_some() || kit.link.is_some();
    let plan = |worker: &str, wait: Duration| WorkerPlan {
        trial: id.to_string(),
        worker: worker.to_string(),
        backend: if worker == HOLDER {
            holder_backend.clone()
        } else {
            contender_backend.clone()
        },
        // The holder of a partition reaches the resource from inside its namespace.
        resource_url: match &inside {
            Some(url) if worker == HOLDER => url.clone(),
            _ => context.resource_url.to_string(),
        },
        resource_schema: context.resource_schema.to_string(),
        key: key.to_string(),
        ttl_ms: ttl.as_millis() as u64,
        wait_ms: wait.as_millis() as u64,
        // A holder whose acquisition the lab slows waits to be told, once it is connected.
        wait_for_go: worker == CONTENDER || slowed,
        writes,
        write_every_ms: every.as_millis() as u64,
        tracking: if worker == HOLDER {
            variant.tracking()
        } else {
            LeaseTracking::AtRelease
        },
        on_failure: match variant {
            Variant::Outage(policy) if worker == CONTENDER => policy,
            _ => OnFailure::Queue,
        },
        detached: worker == HOLDER && variant == Variant::CrashWorkSurvives,
    };
    let connect = config.connect_timeout + Duration::from_secs(10);
    let exe = context.worker_exe;
    // The contender first: its start-up (a process, two connections) then cannot eat into the
    // holder's job; it asks for the lock when told to, just after the holder's grant.
    let mut contender =
        WorkerProcess::spawn(exe, CONTENDER, &AnyPlan::Lock(plan(CONTENDER, ttl))).await?;
    contender.connected(connect).await?;
    let prefix = kit.partition.as_ref().map_or(Vec::new(), |p| p.ns.prefix());
    let mut holder =
        WorkerProcess::spawn_in(&prefix, exe, HOLDER, &AnyPlan::Lock(plan(HOLDER, ttl * 2)))
            .await?;
    holder.connected(connect).await?;
    let acquisition_start = monotonic_ns();
    if let Some(server) = held_back {
        server.pause()?;
    }
    if let Some(link) = &kit.link {
        link.hold();
    }
    if slowed {
        holder.go(ttl * 2).await?;
    }
    match variant {
        // WAIT refuses every grant while the replica is stopped; let it see that for a TTL.
        Variant::Failover { wait: true } => tokio::time::sleep(ttl).await,
        // Past one node timeout (250 ms): the first acquisition has returned by then.
        Variant::RedlockLateStart { .. } => tokio::time::sleep(Duration::from_millis(300)).await,
        _ => {}
    }
    if let Some(server) = held_back {
        server.resume()?;
    }
    if let (Some(link), Variant::Failover { wait: true }) = (&kit.link, variant) {
        link.pass();
    }
    let granted_ttl = holder.granted(ttl * 2 + connect).await?;
    let outage = matches!(variant, Variant::Outage(_));
    let late_start = matches!(variant, Variant::RedlockLateStart { .. });
    // The fault's length, and how long anyone may have to wait for the lock because of it.
    let fault = match variant.pause_factor() {
        Some(k) => granted_ttl.mul_f64(k),
        None if variant == Variant::RestartDelayed => granted_ttl + Duration::from_secs(1),
        // Long enough for a short TCP keepalive to show against the system's default.
        None if variant.partitions() && kit.postgres.is_some() => {
            granted_ttl * 2 + Duration::from_secs(6)
        }
        None if variant.partitions() => granted_ttl * 2,
        // The contender's wait after the host vanished.
        None if variant.vanishes() => crate::scenario::VANISHED_WAIT,
        None if outage => ttl / 3,
        None => Duration::ZERO,
    };
    // A job process that outlives its holder runs three lock lifetimes.
    let survivor = if variant == Variant::CrashWorkSurvives {
        granted_ttl * 3
    } else {
        Duration::ZERO
    };
    let longest = fault + granted_ttl + job * 2 + survivor + Duration::from_secs(5);
    if !outage {
        contender.go(longest).await?;
    }
    // The fault begins somewhere in the first third of the job, by the seed. A pause begins
    // as the holder says it finished a write (read as it is said: the lab is waiting on the
    // line), so that the stop falls in its sleep before the next write.
    let after = rng.random_range(2..=WRITES / 3);
    if variant.pause_factor().is_some() || variant.isolates() {
        loop {
            let n = holder.wrote(every * 4 + Duration::from_secs(5)).await?;
            if n >= after {
                break;
            }
        }
    } else if !late_start {
        tokio::time::sleep(every * after).await;
    }
    let start_ns = if late_start {
        acquisition_start
    } else {
        monotonic_ns()
    };
    let mut end_ns = None;
    let crashed = variant.scenario() == Scenario::Crash;
    // A vanished host's contender answers before the lab ends the fault: its grant, or its
    // giving up, is the end of the window.
    let mut contender_step = None;
    if let (true, Some(partition)) = (variant.vanishes(), &mut kit.partition) {
        holder.pause()?;
        partition.ns.vanish()?;
        contender_step = Some(contender.next_step(longest).await?);
        let vanished_for = monotonic_ns();
        holder.kill()?;
        partition.ns.heal()?;
        end_ns = Some(vanished_for);
    } else if variant.pause_factor().is_some() {
        holder.pause()?;
        tokio::time::sleep(fault).await;
        holder.resume()?;
    } else if crashed {
        holder.kill()?;
    } else if outage {
        kit.servers[0].pause()?;
        contender.go(longest).await?;
        tokio::time::sleep(fault).await;
        kit.servers[0].resume()?;
    } else if let (Variant::Failover { .. }, [primary, replica, ..], Some(link)) =
        (variant, &mut kit.servers[..], &kit.link)
    {
        primary.kill().await;
        replica.promote().await?;
        // What the replica never received dies with the primary.
        link.sever();
    } else if let Some(zk) = &kit.zookeeper {
        zk.jump_clock((granted_ttl * 2).as_millis() as i64).await?;
    } else if let Some(partition) = &mut kit.partition {
        let port = match &kit.postgres {
            Some(pg) => pg.port(),
            None => kit.servers.first().map_or(0, PrivateRedis::port),
        };
        partition.ns.partition(port)?;
        tokio::time::sleep(fault).await;
        partition.ns.heal()?;
    } else if variant.restarts() || variant.jumps_clocks() {
        let [first, rest @ ..] = &mut kit.servers[..] else {
            return Err(FaultError::Server(
                "a server fault without a private server".to_string(),
            ));
        };
        if variant.jumps_clocks() {
            // Two nodes other than the one that restarts.
            let ahead = (granted_ttl * 2).as_millis() as i64;
            for server in rest.iter().take(2) {
                server.set_clock_offset(ahead)?;
            }
        }
        if variant.restarts() {
            first.kill().await;
            if variant == Variant::RestartPowerLoss {
                first.restore_aof()?;
            }
            tokio::time::sleep(fault).await;
            first.restart().await?;
        }
    }
    let window = Window {
        start_ns,
        end_ns: end_ns.unwrap_or_else(monotonic_ns),
    };
    if crashed {
        holder.reap(Duration::from_secs(10)).await;
        if variant == Variant::CrashWorkSurvives {
            await_end(context, id, longest).await?;
        }
    } else {
        holder.done(longest).await?;
        holder.finish(Duration::from_secs(10)).await?;
    }
    // A contender says either `granted` (then its job, then `done`) or `timed-out`.
    let step = match contender_step {
        Some(step) => step,
        None => contender.next_step(longest).await?,
    };
    if let Message::Granted { .. } = step {
        contender.done(longest).await?;
    }
    contender.finish(Duration::from_secs(10)).await?;
    if variant.jumps_clocks() {
        for server in &kit.servers {
            server.set_clock_offset(0)?;
        }
    }
    if let Some(zk) = &kit.zookeeper {
        zk.reset_clock()?;
    }
    // The next failover trial starts from a primary and a replica in sync again.
    if let (Variant::Failover { .. }, [primary, replica, ..], Some(link)) =
        (variant, &mut kit.servers[..], &kit.link)
    {
        primary.restart().await?;
        link.pass();
        replica.replicate(link.addr()).await?;
    }
    let log = context.resource.trial_log(id).await?;
    let figures = overlap::figures(&log, HOLDER, CONTENDER).ok_or_else(|| {
        FaultError::Resource(format!("trial {id}: the holder's grant is not in the log"))
    })?;
    Ok(TrialOutcome {
        figures,
        window,
        granted_ttl,
        log,
        idle_session_locks: None,
    })
}

/// Waits (at most `within`) until the holder's end is in the trial's log: a job process that
/// outlived its holder has finished.
async fn await_end(
    context: &mut TrialContext<'_>,
    id: &str,
    within: Duration,
) -> Result<(), FaultError> {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let log = context.resource.trial_log(id).await?;
        if log
            .iter()
            .any(|e| e.worker == HOLDER && e.event == crate::resource::Event::End)
        {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(FaultError::Worker(format!(
                "trial {id}: the holder's job process did not end within {within:?}"
            )));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A pool-leak trial: the pool process (two jobs on one pooled connection) and a contender
/// with a session of its own. The fault window runs from the first job's grant (its
/// connection given back holding the lock) to the pool closing the connection.
async fn run_pool_trial(
    context: &mut TrialContext<'_>,
    mode: PoolMode,
    config: &BackendConfig,
    id: &str,
    key: &str,
) -> Result<TrialOutcome, FaultError> {
    let ttl = context.ttl;
    let every = ttl / WRITES;
    let job = every * WRITES;
    let linger = ttl * 2;
    let application_name = format!("lockbench-fault-pool-{}", context.run_id);
    let pool_plan = PoolPlan {
        trial: id.to_string(),
        database_url: config.urls.first().cloned().unwrap_or_default(),
        resource_url: context.resource_url.to_string(),
        resource_schema: context.resource_schema.to_string(),
        lock_id: lockbench_locks::backends::postgres::lock_id(&format!(
            "{}:{key}",
            config.namespace
        )),
        mode,
        writes: WRITES,
        write_every_ms: every.as_millis() as u64,
        linger_ms: linger.as_millis() as u64,
        application_name: application_name.clone(),
    };
    let longest = job * 3 + linger + ttl + Duration::from_secs(10);
    let contender_plan = WorkerPlan {
        trial: id.to_string(),
        worker: CONTENDER.to_string(),
        backend: BackendPlan::of(config),
        resource_url: context.resource_url.to_string(),
        resource_schema: context.resource_schema.to_string(),
        key: key.to_string(),
        ttl_ms: ttl.as_millis() as u64,
        wait_ms: longest.as_millis() as u64,
        wait_for_go: true,
        writes: WRITES,
        write_every_ms: every.as_millis() as u64,
        tracking: LeaseTracking::AtRelease,
        on_failure: OnFailure::Queue,
        detached: false,
    };
    let exe = context.worker_exe;
    let connect = config.connect_timeout + Duration::from_secs(10);
    let mut contender =
        WorkerProcess::spawn(exe, CONTENDER, &AnyPlan::Lock(contender_plan)).await?;
    contender.connected(connect).await?;
    let mut pool = WorkerProcess::spawn(exe, "pool", &AnyPlan::Pool(pool_plan)).await?;
    pool.connected(connect).await?;
    let start_ns = monotonic_ns();
    pool.job_granted(HOLDER, connect).await?;
    contender.go(longest).await?;
    // The jobs are done (job 2 granted or not): what the idle pooled session still holds.
    loop {
        if pool.next_step(job * 3 + connect).await? == Message::Idle {
            break;
        }
    }
    let idle_session_locks = context
        .resource
        .advisory_locks_of(&application_name)
        .await?;
    pool.done(linger + connect).await?;
    let end_ns = monotonic_ns();
    if let Message::Granted { .. } = contender.next_step(longest).await? {
        contender.done(longest).await?;
    }
    pool.finish(Duration::from_secs(10)).await?;
    contender.finish(Duration::from_secs(10)).await?;
    let log = context.resource.trial_log(id).await?;
    let figures = overlap::figures(&log, HOLDER, CONTENDER).ok_or_else(|| {
        FaultError::Resource(format!(
            "trial {id}: the first job's grant is not in the log"
        ))
    })?;
    // The window starts at the first job's grant, which the log dates exactly.
    let window = Window {
        start_ns: figures.zero_ns.max(start_ns),
        end_ns,
    };
    Ok(TrialOutcome {
        figures,
        window,
        granted_ttl: ttl,
        log,
        idle_session_locks: Some(idle_session_locks),
    })
}
