//! Runs the matrix: every selected (variant, backend) cell for N trials (each trial in
//! `trial`), the cell's private servers and namespace set up around them, the figures gathered
//! into the record (`matrix`), and everything the run made removed at the end.

use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::time::Duration;

use lockbench_core::records::faults::{
    FaultCell, FaultEventRow, FaultTrialRow, FaultsRecord, SkippedCell,
};
use lockbench_locks::{BackendConfig, BackendKind, Redacted};
use rand::SeedableRng;

use crate::FaultError;
use crate::forward::Forwarder;
use crate::link::ReplicationLink;
use crate::matrix::{aggregate, event_row, trial_row};
use crate::netns::Namespace;
use crate::postgres::PrivatePostgres;
use crate::resource::{Resource, schema_name};
use crate::scenario::{Design, Variant};
use crate::server::PrivateRedis;
use crate::trial::{Kit, Partition, TrialContext, resource_addr};
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
    /// The shared servers whose keys under the run's namespace are in the register.
    shared: Vec<(BackendKind, Vec<String>)>,
}

/// The wall-clock shim (`shim/wallclock.c`, built by build.rs; empty without a C compiler).
static WALLCLOCK_SHIM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/libwallclock.so"));

impl FaultLab {
    /// Connects to the resource and creates the run's schema.
    pub async fn prepare(options: LabOptions) -> Result<Self, FaultError> {
        let run_id = format!("{:08x}", rand::random::<u32>());
        let namespace = options
            .backends
            .first()
            .map_or("lockbench".to_string(), |c| c.namespace.clone());
        let schema = schema_name(&namespace, &run_id);
        let mut resource =
            Resource::connect(&options.resource_url, &schema, Duration::from_secs(5)).await?;
        crate::register::lab_started();
        crate::register::record(crate::register::Leftover::Schema {
            url: options.resource_url.clone(),
            schema,
        });
        resource.create().await?;
        Ok(FaultLab {
            options,
            run_id,
            resource,
            used: Vec::new(),
            shim_dir: None,
            shared: Vec::new(),
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
                } else if variant.isolates() {
                    crate::netns::unavailable().or_else(|| {
                        private_postgres(variant, config.kind)
                            .then(crate::postgres::unavailable)
                            .flatten()
                    })
                } else {
                    None
                };
                match missing {
                    Some(reason) => skipped.push(SkippedCell {
                        scenario: variant.scenario(),
                        variant,
                        backend: config.id(),
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
        self.cells()
            .0
            .iter()
            .map(|(v, c)| u64::from(v.trials(c.kind, self.options.trials)))
            .sum()
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
        for (index, (variant, config)) in cells.into_iter().enumerate() {
            // Each cell's timing from the seed and the cell alone, whichever others were chosen.
            let mut rng = rand::rngs::StdRng::seed_from_u64(
                self.options.seed ^ cell_hash(&variant.label(), config.label()),
            );
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
                        config.label()
                    ));
                    skipped.push(SkippedCell {
                        scenario: variant.scenario(),
                        variant,
                        backend: config.id(),
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
        let ttl = variant.trial_ttl(self.options.ttl);
        config.session_timeout = ttl;
        if let Some(timeout) = variant.operation_timeout(ttl) {
            config.operation_timeout = timeout;
        }
        // A partition: the holder in a namespace of the lab's, the server on its host end, the
        // resource reached through a forwarder the partition does not cut.
        let partition = if variant.isolates() {
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
        let mut zookeeper = None;
        let mut link = None;
        let mut holder_urls = None;
        let mut forwarders = Vec::new();
        if variant == Variant::ClockJump {
            let shim = self.shim()?;
            let server = PrivateZookeeper::start(&shim).await?;
            config.urls = vec![server.url()];
            zookeeper = Some(server);
        } else if private_postgres(variant, config.kind) {
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
            if variant == (Variant::CrashHostVanished { keepalive: true }) {
                holder_urls = Some(vec![with_keepalive(&server.url())]);
            }
            postgres = Some(server);
        } else if variant.vanishes() {
            // The holder reaches the configured servers through forwarders on its namespace's
            // host end, which its vanishing cuts; the servers expire it by their own timers.
            let mut urls = Vec::new();
            for url in &config.urls {
                let (rerouted, through) = reroute(url, default_port(config.kind), bind).await?;
                urls.push(rerouted);
                forwarders.extend(through);
            }
            holder_urls = Some(urls);
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
            // A failover's second server replicates the first; the lab's client locks on the
            // primary, where the workers of a trial are pointed one each (trial.rs).
            if let [primary, replica] = &servers[..]
                && matches!(variant, Variant::Failover { .. })
            {
                let primary_addr = std::net::SocketAddr::from((bind, primary.port()));
                let through = ReplicationLink::start(primary_addr).await?;
                replica.replicate(through.addr()).await?;
                link = Some(through);
                config.urls.truncate(1);
            }
        }
        // On a shared server (none of the lab's own), a SIGKILL would leave the run's keys that
        // outlive their TTL there: the register names them first.
        let private = !servers.is_empty() || postgres.is_some() || zookeeper.is_some();
        let entry = (config.kind, config.urls.clone());
        if !private && config.kind != BackendKind::Memory && !self.shared.contains(&entry) {
            crate::register::record(crate::register::Leftover::Keys {
                backend: config.kind,
                urls: config.urls.clone(),
                namespace: config.namespace.clone(),
            });
            self.shared.push(entry);
        }
        let client = lockbench_locks::connect(&config).await?;
        let capabilities = client.capabilities();
        let mut kit = Kit {
            client,
            servers,
            postgres,
            zookeeper,
            partition,
            link,
            holder_urls,
            _forwarders: forwarders,
        };
        let mut rows = Vec::new();
        let mut events = Vec::new();
        let mut outcome = Ok(());
        let mut keys = Vec::new();
        let resource_schema = self.resource_schema();
        let mut context = TrialContext {
            ttl: self.options.ttl,
            resource_url: &self.options.resource_url,
            resource_schema: &resource_schema,
            resource: &mut self.resource,
            worker_exe: &self.options.worker_exe,
            run_id: &self.run_id,
        };
        for trial in 0..variant.trials(config.kind, self.options.trials) {
            let key = format!("c{index}t{trial}");
            keys.push(key.clone());
            // Keys on a private server go with it; the shared servers' are removed at the end
            // even when the run is interrupted.
            if kit.servers.is_empty() && kit.postgres.is_none() && kit.zookeeper.is_none() {
                self.used.push((config.clone(), key.clone()));
            }
            let id = format!("{}:{}:{trial}", variant.label(), config.label());
            let result =
                crate::trial::run(&mut context, variant, &config, &mut kit, &id, &key, rng).await;
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
            progress(&format!("{} on {}", variant.label(), config.label()));
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
    /// The wall-clock shim as a file a server can preload (written once per run).
    fn shim(&mut self) -> Result<PathBuf, FaultError> {
        let dir = std::env::temp_dir().join(format!(
            "lockbench-faults-{}-shim-{}",
            std::process::id(),
            self.run_id
        ));
        let file = dir.join("libwallclock.so");
        if self.shim_dir.is_none() {
            crate::register::record(crate::register::Leftover::Dir { path: dir.clone() });
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
        // The private directories go when their servers are dropped; the shim's with the lab.
        self.shim_dir = None;
        crate::register::lab_ended(dropped.is_ok());
        dropped
    }
}

/// True when the cell runs on a private Postgres of the lab's, listening on its namespace's host
/// end, so that the server's own socket meets the holder's cut (a partition, a vanished host).
fn private_postgres(variant: Variant, kind: BackendKind) -> bool {
    match kind {
        BackendKind::PgSession => variant.isolates(),
        BackendKind::PgXact => variant.vanishes(),
        _ => false,
    }
}

/// The port a backend's server listens on when its URL names none.
fn default_port(kind: BackendKind) -> u16 {
    match kind {
        BackendKind::Redis | BackendKind::Redlock => 6379,
        BackendKind::PgSession | BackendKind::PgXact => 5432,
        BackendKind::Etcd => 2379,
        BackendKind::Zookeeper => 2181,
        BackendKind::Memory => 0,
    }
}

/// A Postgres URL with the lab's per-connection keepalive in its startup options.
fn with_keepalive(url: &str) -> String {
    let (idle, interval, count) = crate::scenario::LAB_KEEPALIVE;
    let options = format!(
        "-c tcp_keepalives_idle={idle} -c tcp_keepalives_interval={interval} -c tcp_keepalives_count={count}"
    );
    match url::Url::parse(url) {
        Ok(mut parsed) => {
            parsed.query_pairs_mut().append_pair("options", &options);
            parsed.to_string()
        }
        Err(_) => url.to_string(),
    }
}

/// `url` with each server address in it replaced by a forwarder's on `ip` that passes on to it,
/// and the forwarders. A URL is `scheme://host:port/...` or ZooKeeper's `host:port,host:port/chroot`.
async fn reroute(
    url: &str,
    port: u16,
    ip: Ipv4Addr,
) -> Result<(String, Vec<Forwarder>), FaultError> {
    let mut forwarders = Vec::new();
    if url.contains("://") {
        let mut parsed = url::Url::parse(url)
            .map_err(|e| FaultError::Server(format!("the lock server URL {url}: {e}")))?;
        let target = crate::trial::server_addr(url, port)?;
        let forwarder = Forwarder::start(ip, target).await?;
        let _ = parsed.set_host(Some(&ip.to_string()));
        let _ = parsed.set_port(Some(forwarder.port()));
        forwarders.push(forwarder);
        return Ok((parsed.to_string(), forwarders));
    }
    let (hosts, chroot) = url.split_at(url.find('/').unwrap_or(url.len()));
    let mut rerouted = Vec::new();
    for host in hosts.split(',') {
        let target = crate::trial::server_addr(&format!("tcp://{host}"), port)?;
        let forwarder = Forwarder::start(ip, target).await?;
        rerouted.push(format!("{ip}:{}", forwarder.port()));
        forwarders.push(forwarder);
    }
    Ok((format!("{}{chroot}", rerouted.join(",")), forwarders))
}

/// FNV-1a of a cell's name: its share of the seed.
fn cell_hash(label: &str, backend: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in label.bytes().chain([b'@']).chain(backend.bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

/// A directory the lab wrote, removed when dropped (at the end, after an error, on Ctrl-C).
struct OwnedDir(PathBuf);

impl Drop for OwnedDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
