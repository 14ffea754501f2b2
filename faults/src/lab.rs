//! Runs the matrix: every selected (variant, backend) cell for N trials, each trial two worker
//! processes, one fault, and the figures read back from the protected resource.

use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::time::Duration;

use lockbench_core::records::faults::{
    FaultCell, FaultEventRow, FaultTrialRow, FaultsRecord, SkippedCell,
};
use lockbench_locks::{BackendConfig, BackendKind, LockBackend, Redacted};
use rand::{RngExt, SeedableRng};

use crate::FaultError;
use crate::clock::monotonic_ns;
use crate::forward::Forwarder;
use crate::netns::Namespace;
use crate::overlap::{self, TrialFigures};
use crate::pool::{PoolMode, PoolPlan};
use crate::postgres::PrivatePostgres;
use crate::process::WorkerProcess;
use crate::resource::{LoggedEvent, Resource, schema_name};
use crate::scenario::Variant;
use crate::server::PrivateRedis;
use crate::worker::{AnyPlan, BackendPlan, Check, WorkerPlan};
use crate::zookeeper::PrivateZookeeper;

/// What to run.
#[derive(Clone, Debug)]
pub struct LabOptions {
    /// The backends to inject faults into (their configured servers; restarts use private ones).
    pub backends: Vec<BackendConfig>,
    /// The protected resource's database.
    pub resource_url: String,
    /// The variants, in order.
    pub variants: Vec<Variant>,
    /// The lock TTL asked for.
    pub ttl: Duration,
    /// Trials per cell.
    pub trials: u32,
    /// Seed of the fault timing.
    pub seed: u64,
    /// The lockbench binary (its hidden `fault-worker` mode runs the workers).
    pub worker_exe: PathBuf,
    /// The redis-server binary for private servers; `None` when none was found.
    pub redis_server: Option<PathBuf>,
}

/// What the lab measured.
#[derive(Clone, Debug)]
pub struct LabOutput {
    /// The matrix.
    pub record: FaultsRecord,
    /// One row per trial.
    pub trials: Vec<FaultTrialRow>,
    /// The resource's log of every trial.
    pub events: Vec<FaultEventRow>,
}

/// A prepared lab: the run's resource schema exists.
pub struct FaultLab {
    options: LabOptions,
    run_id: String,
    resource: Resource,
    /// Every (backend, key) a trial used, for the cleanup.
    used: Vec<(BackendConfig, String)>,
    /// Where the wall-clock shim was written, once a cell needed it (removed when dropped).
    shim_dir: Option<OwnedDir>,
}

/// The wall-clock shim (`shim/wallclock.c`, built by build.rs; empty without a C compiler).
static WALLCLOCK_SHIM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/libwallclock.so"));

/// The workers' names in the log.
const HOLDER: &str = "holder";
const CONTENDER: &str = "contender";
/// Writes per job.
const WRITES: u32 = 20;

/// What a cell's trials run on: the lab's own client of the lock, its private servers, and the
/// namespace of a partition.
struct Kit {
    client: Box<dyn LockBackend>,
    servers: Vec<PrivateRedis>,
    /// A partition's private Postgres (the pg-session cells).
    postgres: Option<PrivatePostgres>,
    /// The clock-jump control's private ZooKeeper.
    zookeeper: Option<PrivateZookeeper>,
    partition: Option<Partition>,
}

/// A partitioned holder's surroundings.
struct Partition {
    ns: Namespace,
    /// Carries the holder's connections to the resource across the namespace's edge.
    _forwarder: Forwarder,
    /// The resource's URL as seen from inside the namespace.
    resource_url: String,
}

/// The address of a Postgres URL, for a forwarder.
fn resource_addr(url: &str) -> Result<std::net::SocketAddr, FaultError> {
    let parsed =
        url::Url::parse(url).map_err(|e| FaultError::Resource(format!("the resource URL: {e}")))?;
    let host = parsed.host_str().unwrap_or("127.0.0.1");
    let port = parsed.port().unwrap_or(5432);
    std::net::ToSocketAddrs::to_socket_addrs(&(host, port))
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| FaultError::Resource(format!("cannot resolve {host}:{port}")))
}

/// What a trial measured, before it becomes a row.
struct TrialOutcome {
    figures: TrialFigures,
    window: Window,
    granted_ttl: Duration,
    log: Vec<LoggedEvent>,
    /// Advisory locks the idle pooled session held after both jobs (pool-leak trials).
    idle_session_locks: Option<u64>,
}

/// One trial's timing, by the machine's monotonic clock.
struct Window {
    start_ns: i64,
    end_ns: i64,
}

impl FaultLab {
    /// Connects to the resource and creates the run's schema.
    pub async fn prepare(options: LabOptions) -> Result<Self, FaultError> {
        let run_id = format!("{:08x}", rand::random::<u32>());
        let namespace = options
            .backends
            .first()
            .map_or("lockbench".to_string(), |c| c.namespace.clone());
        let mut resource = Resource::connect(
            &options.resource_url,
            &schema_name(&namespace, &run_id),
            Duration::from_secs(5),
        )
        .await?;
        resource.create().await?;
        Ok(FaultLab {
            options,
            run_id,
            resource,
            used: Vec::new(),
            shim_dir: None,
        })
    }

    /// Cells to run, in order: (variant, backend), and the ones that cannot run here.
    fn cells(&self) -> (Vec<(Variant, BackendConfig)>, Vec<SkippedCell>) {
        let mut run = Vec::new();
        let mut skipped = Vec::new();
        for &variant in &self.options.variants {
            for config in &self.options.backends {
                // Private Redis servers, except for a partition on Postgres (a private postgres).
                let needs_server = variant.persistence().is_some()
                    && !(variant.partitions() && config.kind == BackendKind::PgSession)
                    && self.options.redis_server.is_none();
                // A variant that does not apply to a backend is not a cell (the options refuse a
                // selection with no cell at all).
                if !variant.applies_to(config.kind) {
                    continue;
                }
                let missing = if needs_server {
                    Some(
                        "needs redis-server on PATH for a private server (scripts/services.sh up installs it)",
                    )
                } else if variant.jumps_clocks() && WALLCLOCK_SHIM.is_empty() {
                    Some(
                        "needs the wall-clock shim, which this lockbench was built without (no C compiler at build time)",
                    )
                } else if variant == Variant::ClockJump && config.kind == BackendKind::Etcd {
                    Some(
                        "etcd is a Go binary: it reads the wall clock from the vDSO, which no LD_PRELOAD reaches, and the machine's clock is not the lab's to change (its leases expire by Go's monotonic clock)",
                    )
                } else if variant == Variant::ClockJump {
                    if WALLCLOCK_SHIM.is_empty() {
                        Some(
                            "needs the wall-clock shim, which this lockbench was built without (no C compiler at build time)",
                        )
                    } else {
                        crate::zookeeper::unavailable()
                    }
                } else if variant.partitions() {
                    crate::netns::unavailable().or_else(|| {
                        (config.kind == BackendKind::PgSession)
                            .then(crate::postgres::unavailable)
                            .flatten()
                    })
                } else {
                    None
                };
                match missing {
                    Some(reason) => skipped.push(SkippedCell {
                        scenario: variant.scenario().to_string(),
                        variant: variant.name().to_string(),
                        backend: config.kind.name().to_string(),
                        reason: reason.to_string(),
                    }),
                    None => run.push((variant, config.clone())),
                }
            }
        }
        (run, skipped)
    }

    /// How many trials the run will do (for a progress bar).
    pub fn total_trials(&self) -> u64 {
        self.cells().0.len() as u64 * u64::from(self.options.trials)
    }

    /// Runs every cell. `progress` is told after each trial; `note` gets a line for each cell that
    /// failed (it is recorded as skipped with the reason, and the rest runs).
    pub async fn run(
        &mut self,
        progress: &(dyn Fn(&str) + Sync),
        note: &(dyn Fn(&str) + Sync),
    ) -> Result<LabOutput, FaultError> {
        let (cells, mut skipped) = self.cells();
        let mut out = LabOutput {
            record: FaultsRecord {
                ttl_s: self.options.ttl.as_secs_f64(),
                trials_per_cell: self.options.trials,
                seed: self.options.seed,
                resource: format!(
                    "Postgres at {}, schema {} (dropped after the run)",
                    Redacted(&self.options.resource_url),
                    self.resource_schema()
                ),
                namespace: self.namespace(),
                cells: Vec::new(),
                skipped: Vec::new(),
            },
            trials: Vec::new(),
            events: Vec::new(),
        };
        let mut rng = rand::rngs::StdRng::seed_from_u64(self.options.seed);
        for (index, (variant, config)) in cells.into_iter().enumerate() {
            match self
                .run_cell(index, variant, &config, &mut rng, progress)
                .await
            {
                Ok((cell, trials, events)) => {
                    out.record.cells.push(cell);
                    out.trials.extend(trials);
                    out.events.extend(events);
                }
                Err(e) => {
                    let reason = e.to_string();
                    note(&format!(
                        "{} on {}: {reason}",
                        variant.label(),
                        config.kind.name()
                    ));
                    skipped.push(SkippedCell {
                        scenario: variant.scenario().to_string(),
                        variant: variant.name().to_string(),
                        backend: config.kind.name().to_string(),
                        reason,
                    });
                }
            }
        }
        out.record.skipped = skipped;
        Ok(out)
    }

    async fn run_cell(
        &mut self,
        index: usize,
        variant: Variant,
        config: &BackendConfig,
        rng: &mut rand::rngs::StdRng,
        progress: &(dyn Fn(&str) + Sync),
    ) -> Result<(FaultCell, Vec<FaultTrialRow>, Vec<FaultEventRow>), FaultError> {
        let mut config = config.clone();
        config.namespace = self.namespace();
        // ZooKeeper's lock lives as long as its session: the TTL is the session timeout, which
        // the server clamps to 2 to 20 ticks (the grant reports what it negotiated).
        config.session_timeout = self.options.ttl;
        // A partition: the holder in a namespace of the lab's, the server on its host end, the
        // resource reached through a forwarder the partition does not cut.
        let partition = if variant.partitions() {
            let ns = Namespace::create(&format!("{}{index}", self.run_id))?;
            let forwarder =
                Forwarder::start(ns.host_ip(), resource_addr(&self.options.resource_url)?).await?;
            let mut inside = url::Url::parse(&self.options.resource_url)
                .map_err(|e| FaultError::Resource(format!("the resource URL: {e}")))?;
            let _ = inside.set_host(Some(&ns.host_ip().to_string()));
            let _ = inside.set_port(Some(forwarder.port()));
            Some(Partition {
                ns,
                _forwarder: forwarder,
                resource_url: inside.to_string(),
            })
        } else {
            None
        };
        let bind = partition
            .as_ref()
            .map_or(Ipv4Addr::LOCALHOST, |p| p.ns.host_ip());
        let mut servers = Vec::new();
        let mut postgres = None;
        let on_postgres = config.kind == BackendKind::PgSession;
        let mut zookeeper = None;
        if variant == Variant::ClockJump {
            let shim = self.shim()?;
            let server = PrivateZookeeper::start(&shim).await?;
            config.urls = vec![server.url()];
            zookeeper = Some(server);
        } else if variant.partitions() && on_postgres {
            let settings: Vec<String> = if variant == Variant::PartitionKeepalive {
                [
                    "tcp_keepalives_idle=1",
                    "tcp_keepalives_interval=1",
                    "tcp_keepalives_count=2",
                ]
                .map(String::from)
                .to_vec()
            } else {
                Vec::new()
            };
            let server = PrivatePostgres::start(bind, &settings).await?;
            config.urls = vec![server.url()];
            postgres = Some(server);
        } else if let (Some(persistence), Some(binary)) =
            (variant.persistence(), self.options.redis_server.clone())
        {
            let shim = if variant.jumps_clocks() {
                Some(self.shim()?)
            } else {
                None
            };
            for _ in 0..variant.private_servers() {
                servers
                    .push(PrivateRedis::start(&binary, persistence, shim.as_deref(), bind).await?);
            }
            config.urls = servers.iter().map(PrivateRedis::url).collect();
        }
        let client = lockbench_locks::connect(&config).await?;
        let capabilities = client.capabilities();
        let mut kit = Kit {
            client,
            servers,
            postgres,
            zookeeper,
            partition,
        };
        let mut rows = Vec::new();
        let mut events = Vec::new();
        let mut outcome = Ok(());
        let mut keys = Vec::new();
        for trial in 0..self.options.trials {
            let key = format!("c{index}t{trial}");
            keys.push(key.clone());
            // Keys on a private server go with it; the shared servers' are removed at the end
            // even when the run is interrupted.
            if kit.servers.is_empty() {
                self.used.push((config.clone(), key.clone()));
            }
            let id = format!("{}:{}:{trial}", variant.label(), config.kind.name());
            let result = self
                .run_trial(variant, &config, &mut kit, &id, &key, rng)
                .await;
            match result {
                Ok(outcome) => {
                    let zero = outcome.figures.zero_ns;
                    rows.push(trial_row(variant, &config, trial, &outcome));
                    events.extend(
                        outcome
                            .log
                            .iter()
                            .map(|e| event_row(variant, &config, trial, zero, e)),
                    );
                }
                Err(e) => {
                    outcome = Err(FaultError::Worker(format!("trial {trial}: {e}")));
                    break;
                }
            }
            progress(&format!("{} on {}", variant.label(), config.kind.name()));
        }
        for key in &keys {
            let _ = kit.client.cleanup(key).await;
        }
        self.used.retain(|(c, _)| c.namespace != config.namespace);
        let _ = kit.client.cleanup_namespace().await;
        let _ = kit.client.close().await;
        for server in &mut kit.servers {
            server.kill().await;
        }
        if let Some(pg) = &mut kit.postgres {
            pg.stop().await;
        }
        if let Some(zk) = &mut kit.zookeeper {
            zk.stop().await;
        }
        outcome?;
        let cell = aggregate(variant, &config, capabilities, &rows);
        Ok((cell, rows, events))
    }

    async fn run_trial(
        &mut self,
        variant: Variant,
        config: &BackendConfig,
        kit: &mut Kit,
        id: &str,
        key: &str,
        rng: &mut rand::rngs::StdRng,
    ) -> Result<TrialOutcome, FaultError> {
        let ttl = self.options.ttl;
        if let Variant::PoolLeak(mode) = variant {
            return self.run_pool_trial(mode, config, id, key).await;
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
        let (job, writes) = match variant.check() {
            _ if variant.partitions() => (ttl * 3, WRITES * 3),
            Check::AtRelease => (ttl * 2 / 3, WRITES),
            _ => (ttl, WRITES),
        };
        let every = job / writes;
        let inside = kit.partition.as_ref().map(|p| p.resource_url.clone());
        let plan = |worker: &str, wait: Duration| WorkerPlan {
            trial: id.to_string(),
            worker: worker.to_string(),
            backend: BackendPlan::of(config),
            // The holder of a partition reaches the resource from inside its namespace.
            resource_url: match &inside {
                Some(url) if worker == HOLDER => url.clone(),
                _ => self.options.resource_url.clone(),
            },
            resource_schema: self.resource_schema(),
            key: key.to_string(),
            ttl_ms: ttl.as_millis() as u64,
            wait_ms: wait.as_millis() as u64,
            writes,
            write_every_ms: every.as_millis() as u64,
            check: variant.check(),
        };
        let connect = config.connect_timeout + Duration::from_secs(10);
        let exe = self.options.worker_exe.clone();
        let prefix = kit.partition.as_ref().map_or(Vec::new(), |p| p.ns.prefix());
        let mut holder =
            WorkerProcess::spawn_in(&prefix, &exe, HOLDER, &AnyPlan::Lock(plan(HOLDER, ttl * 2)))
                .await?;
        holder.expect("connected", connect).await?;
        let granted = holder.expect("granted", ttl * 2 + connect).await?;
        let granted_ttl = granted
            .split_whitespace()
            .next()
            .and_then(|ms| ms.parse::<u64>().ok())
            .map(Duration::from_millis)
            .ok_or_else(|| FaultError::Worker(format!("holder: unreadable grant \"{granted}\"")))?;
        // The fault's length, and how long anyone may have to wait for the lock because of it.
        let fault = match variant.pause_factor() {
            Some(k) => granted_ttl.mul_f64(k),
            None if variant == Variant::RestartDelayed => granted_ttl + Duration::from_secs(1),
            // Long enough for a short TCP keepalive to show against the system's default.
            None if variant.partitions() && kit.postgres.is_some() => {
                granted_ttl * 2 + Duration::from_secs(6)
            }
            None if variant.partitions() => granted_ttl * 2,
            None => Duration::ZERO,
        };
        let longest = fault + granted_ttl + job * 2 + Duration::from_secs(5);
        let mut contender =
            WorkerProcess::spawn(&exe, CONTENDER, &AnyPlan::Lock(plan(CONTENDER, longest))).await?;
        contender.expect("connected", connect).await?;
        // The fault begins somewhere in the first third of the job, by the seed. A pause begins
        // as the holder says it finished a write (read as it is said, not from a backlog), so
        // that the stop falls in its sleep before the next write.
        let after = rng.random_range(2..=WRITES / 3);
        if variant.pause_factor().is_some() || variant.partitions() {
            loop {
                let n = holder
                    .expect("wrote", every * 4 + Duration::from_secs(5))
                    .await?;
                if n.parse::<u32>().is_ok_and(|n| n >= after) {
                    break;
                }
            }
        } else {
            tokio::time::sleep(every * after).await;
        }
        let start_ns = monotonic_ns();
        if variant.pause_factor().is_some() {
            holder.pause()?;
            tokio::time::sleep(fault).await;
            holder.resume()?;
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
        } else {
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
            end_ns: monotonic_ns(),
        };
        holder.expect("done", longest).await?;
        // A contender says either `granted` (then its job, then `done`) or `timed-out`.
        if contender.next_step(longest).await?.starts_with("granted") {
            contender.expect("done", longest).await?;
        }
        holder.finish(Duration::from_secs(10)).await?;
        contender.finish(Duration::from_secs(10)).await?;
        if variant.jumps_clocks() {
            for server in &kit.servers {
                server.set_clock_offset(0)?;
            }
        }
        if let Some(zk) = &kit.zookeeper {
            zk.reset_clock()?;
        }
        let log = self.resource.trial_log(id).await?;
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

    /// A pool-leak trial: the pool process (two jobs on one pooled connection) and a contender
    /// with a session of its own. The fault window runs from the first job's grant (its
    /// connection given back holding the lock) to the pool closing the connection.
    async fn run_pool_trial(
        &mut self,
        mode: PoolMode,
        config: &BackendConfig,
        id: &str,
        key: &str,
    ) -> Result<TrialOutcome, FaultError> {
        let ttl = self.options.ttl;
        let every = ttl / WRITES;
        let job = every * WRITES;
        let linger = ttl * 2;
        let application_name = format!("lockbench-fault-pool-{}", self.run_id);
        let pool_plan = PoolPlan {
            trial: id.to_string(),
            database_url: config.urls.first().cloned().unwrap_or_default(),
            resource_url: self.options.resource_url.clone(),
            resource_schema: self.resource_schema(),
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
            resource_url: self.options.resource_url.clone(),
            resource_schema: self.resource_schema(),
            key: key.to_string(),
            ttl_ms: ttl.as_millis() as u64,
            wait_ms: longest.as_millis() as u64,
            writes: WRITES,
            write_every_ms: every.as_millis() as u64,
            check: Check::AtRelease,
        };
        let exe = self.options.worker_exe.clone();
        let connect = config.connect_timeout + Duration::from_secs(10);
        let mut pool = WorkerProcess::spawn(&exe, "pool", &AnyPlan::Pool(pool_plan)).await?;
        pool.expect("connected", connect).await?;
        let mut contender =
            WorkerProcess::spawn(&exe, CONTENDER, &AnyPlan::Lock(contender_plan)).await?;
        contender.expect("connected", connect).await?;
        let start_ns = monotonic_ns();
        pool.expect("granted holder", connect).await?;
        // The jobs are done (job 2 granted or not): what the idle pooled session still holds.
        loop {
            if pool.next_step(job * 3 + connect).await? == "idle" {
                break;
            }
        }
        let idle_session_locks = self.resource.advisory_locks_of(&application_name).await?;
        pool.expect("done", linger + connect).await?;
        let end_ns = monotonic_ns();
        if contender.next_step(longest).await?.starts_with("granted") {
            contender.expect("done", longest).await?;
        }
        pool.finish(Duration::from_secs(10)).await?;
        contender.finish(Duration::from_secs(10)).await?;
        let log = self.resource.trial_log(id).await?;
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

    /// The wall-clock shim as a file a server can preload (written once per run).
    fn shim(&mut self) -> Result<PathBuf, FaultError> {
        let dir = std::env::temp_dir().join(format!(
            "lockbench-faults-{}-shim-{}",
            std::process::id(),
            self.run_id
        ));
        let file = dir.join("libwallclock.so");
        if self.shim_dir.is_none() {
            std::fs::create_dir_all(&dir)
                .and_then(|()| std::fs::write(&file, WALLCLOCK_SHIM))
                .map_err(|e| FaultError::Server(format!("writing {}: {e}", file.display())))?;
            self.shim_dir = Some(OwnedDir(dir));
        }
        Ok(file)
    }

    /// The config's namespace (one for every backend of a config file).
    fn config_namespace(&self) -> &str {
        self.options
            .backends
            .first()
            .map_or("lockbench", |c| c.namespace.as_str())
    }

    /// The namespace of this run's keys: a concurrent run, or a leftover, cannot meet them.
    pub fn namespace(&self) -> String {
        format!("{}-faults-{}", self.config_namespace(), self.run_id)
    }

    /// The protected resource's schema for this run.
    pub fn resource_schema(&self) -> String {
        schema_name(self.config_namespace(), &self.run_id)
    }

    /// Removes what the run left: the keys of a cell that was interrupted, its namespace, the
    /// resource schema. Worker processes and private servers are gone already (killed when
    /// dropped, private directories removed).
    pub async fn cleanup(mut self) -> Result<(), FaultError> {
        let used = std::mem::take(&mut self.used);
        if let Some((config, _)) = used.first()
            && let Ok(client) = lockbench_locks::connect(config).await
        {
            for (_, key) in &used {
                let _ = client.cleanup(key).await;
            }
            let _ = client.cleanup_namespace().await;
            let _ = client.close().await;
        }
        let dropped = self.resource.drop_schema().await;
        self.resource.close().await;
        dropped
    }
}

/// A directory the lab wrote, removed when dropped (at the end, after an error, on Ctrl-C).
struct OwnedDir(PathBuf);

impl Drop for OwnedDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn seconds_from(zero: i64, ns: i64) -> f64 {
    (ns - zero) as f64 / 1e9
}

fn trial_row(
    variant: Variant,
    config: &BackendConfig,
    trial: u32,
    outcome: &TrialOutcome,
) -> FaultTrialRow {
    let (f, window) = (&outcome.figures, &outcome.window);
    let fault_start_s = seconds_from(f.zero_ns, window.start_ns);
    FaultTrialRow {
        scenario: variant.scenario().to_string(),
        variant: variant.name().to_string(),
        backend: config.kind.name().to_string(),
        trial,
        granted_ttl_s: outcome.granted_ttl.as_secs_f64(),
        fault_start_s,
        fault_end_s: seconds_from(f.zero_ns, window.end_ns),
        holder_end_s: f.holder_end_s,
        holder_outcome: f.holder_outcome.clone(),
        contender_grant_s: f.contender_grant_s,
        contender_end_s: f.contender_end_s,
        overlap_s: f.overlap_s,
        stale_writes: f.stale_writes,
        stale_rejected_by_fence: f.stale_rejected,
        legitimate_rejected_by_fence: f.legitimate_rejected,
        recovery_s: f.contender_grant_s.map(|g| g - fault_start_s),
        idle_session_advisory_locks: outcome.idle_session_locks,
    }
}

fn event_row(
    variant: Variant,
    config: &BackendConfig,
    trial: u32,
    zero: i64,
    e: &LoggedEvent,
) -> FaultEventRow {
    FaultEventRow {
        scenario: variant.scenario().to_string(),
        variant: variant.name().to_string(),
        backend: config.kind.name().to_string(),
        trial,
        worker: e.worker.clone(),
        event: e.event.as_str().to_string(),
        t_s: seconds_from(zero, e.t_ns),
        token: e.token,
        fenced_accepted: e.fenced_ok,
        detail: e.detail.clone(),
    }
}

/// The median and the largest of a few trials' figures (at most `--trials` values).
fn p50_max(mut values: Vec<f64>) -> (Option<f64>, Option<f64>) {
    if values.is_empty() {
        return (None, None);
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    let p50 = if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    };
    (Some(p50), values.last().copied())
}

fn aggregate(
    variant: Variant,
    config: &BackendConfig,
    capabilities: lockbench_locks::Capabilities,
    rows: &[FaultTrialRow],
) -> FaultCell {
    let overlaps: Vec<f64> = rows
        .iter()
        .map(|r| r.overlap_s)
        .filter(|o| *o > 0.0)
        .collect();
    let recoveries: Vec<f64> = rows.iter().filter_map(|r| r.recovery_s).collect();
    let trials_with_overlap = overlaps.len() as u32;
    let (overlap_p50_s, overlap_max_s) = p50_max(overlaps);
    let (recovery_p50_s, recovery_max_s) = p50_max(recoveries);
    let sum = |f: fn(&FaultTrialRow) -> Option<u64>| -> Option<u64> {
        rows.iter().map(f).try_fold(0, |acc, v| v.map(|v| acc + v))
    };
    FaultCell {
        scenario: variant.scenario().to_string(),
        variant: variant.name().to_string(),
        backend: config.kind.name().to_string(),
        injected: variant.injected(),
        expected: if variant.predicts_overlap(capabilities.scope) {
            "overlap"
        } else {
            "no overlap"
        }
        .to_string(),
        fencing: capabilities.fencing.describe().to_string(),
        granted_ttl_s: rows.iter().map(|r| r.granted_ttl_s).fold(0.0, f64::max),
        trials: rows.len() as u32,
        trials_with_overlap,
        overlap_p50_s,
        overlap_max_s,
        stale_writes: rows.iter().map(|r| r.stale_writes).sum(),
        stale_rejected_by_fence: sum(|r| r.stale_rejected_by_fence),
        legitimate_rejected_by_fence: sum(|r| r.legitimate_rejected_by_fence),
        recovery_p50_s,
        recovery_max_s,
        contender_timed_out: rows
            .iter()
            .filter(|r| r.contender_grant_s.is_none())
            .count() as u32,
        idle_session_advisory_locks_max: rows
            .iter()
            .filter_map(|r| r.idle_session_advisory_locks)
            .max(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_of_an_even_count_is_the_mean_of_the_middle_two() {
        assert_eq!(p50_max(vec![]), (None, None));
        assert_eq!(p50_max(vec![3.0, 1.0, 2.0]), (Some(2.0), Some(3.0)));
        assert_eq!(p50_max(vec![4.0, 1.0, 2.0, 3.0]), (Some(2.5), Some(4.0)));
    }
}
