//! Runs the matrix: every selected (variant, backend) cell for N trials (each trial in
//! `trial`), the cell's private servers and namespace set up around them, the figures gathered
//! into the record (`matrix`), and everything the run made removed at the end.

use std::path::PathBuf;
use std::time::Duration;

use lockbench_core::records::faults::{
    FaultCell, FaultEventRow, FaultTrialRow, FaultsRecord, SkippedCell,
};
use lockbench_locks::{BackendConfig, BackendKind, Redacted};
use rand::SeedableRng;

use crate::FaultError;
use crate::fault::Fault;
use crate::matrix::{aggregate, event_row, trial_row};
use crate::resource::{Resource, schema_name};
use crate::scenario::{Design, Variant};
use crate::stage::{Need, Partition, Stage, StageSetup};
use crate::trial::TrialContext;

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
    /// The client library both workers of every trial lock through (its adapter); `None` for
    /// lockbench's own client.
    pub client: Option<lockbench_clients::Program>,
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
        refuse_pooled_session_locks(&options.backends).await?;
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

    /// Cells to run, in order: (variant, backend), and the ones that cannot run here (the first
    /// of its fault's needs this machine does not meet).
    fn cells(&self) -> (Vec<(Variant, BackendConfig)>, Vec<SkippedCell>) {
        let mut run = Vec::new();
        let mut skipped = Vec::new();
        for &variant in &self.options.variants {
            let fault = crate::fault::of(variant);
            for config in &self.options.backends {
                // A variant that does not apply to a backend is not a cell (the options refuse a
                // selection with no cell at all).
                if !variant.applies_to(config.kind) {
                    continue;
                }
                let missing = fault
                    .needs(config.kind)
                    .into_iter()
                    .find_map(|need| self.unmet(need));
                match missing {
                    Some(reason) => skipped.push(SkippedCell {
                        scenario: variant.scenario(),
                        variant,
                        backend: config.id(),
                        client: self.client_pinned(),
                        reason: reason.to_string(),
                    }),
                    None => run.push((variant, config.clone())),
                }
            }
        }
        (run, skipped)
    }

    /// The client library of a cell that did not run, at the version its install script pins.
    fn client_pinned(&self) -> Option<lockbench_core::ClientUsed> {
        let client = self.options.client.as_ref()?.client?;
        Some(lockbench_core::ClientUsed {
            name: client,
            version: lockbench_clients::programs::pinned(client).unwrap_or_default(),
        })
    }

    /// Why `need` is not met here, if it is not.
    fn unmet(&self, need: Need) -> Option<&'static str> {
        const NO_SHIM: &str = "needs the wall-clock shim, which this lockbench was built without (no C compiler at build time)";
        match need {
            Need::RedisServer => self.options.redis_server.is_none().then_some(
                "needs redis-server on PATH for a private server (scripts/services.sh up installs it)",
            ),
            Need::Shim => WALLCLOCK_SHIM.is_empty().then_some(NO_SHIM),
            Need::Zookeeper => crate::zookeeper::unavailable(),
            Need::Netns => crate::netns::unavailable(),
            Need::Postgres => crate::postgres::unavailable(),
            Need::Pgbouncer => crate::pgbouncer::unavailable(),
            Need::Impossible(reason) => Some(reason),
        }
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
                        client: self.client_pinned(),
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
        let fault = crate::fault::of(variant);
        let mut config = config.clone();
        config.namespace = self.namespace();
        // ZooKeeper's lock lives as long as its session: the TTL is the session timeout, which
        // the server clamps to 2 to 20 ticks (the grant reports what it negotiated).
        let ttl = variant.trial_ttl(self.options.ttl);
        config.session_timeout = ttl;
        if let Some(timeout) = variant.operation_timeout(ttl) {
            config.operation_timeout = timeout;
        }
        let mut stage = self.stage(index, fault.as_ref(), &mut config).await?;
        let client = lockbench_locks::connect(&config).await?;
        // Through a client library, the cell is what the library does: its capabilities (no
        // fencing token from redis-py, say), and its name and version in the record.
        let (capabilities, used) = match &self.options.client {
            Some(program) => library_of(program, &config).await?,
            None => (client.capabilities(), None),
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
            adapter: self.options.client.as_ref(),
        };
        for trial in 0..variant.trials(config.kind, self.options.trials) {
            let key = format!("c{index}t{trial}");
            keys.push(key.clone());
            // Keys on a private server go with it; the shared servers' are removed at the end
            // even when the run is interrupted.
            if !stage.private() {
                self.used.push((config.clone(), key.clone()));
            }
            let id = format!("{}:{}:{trial}", variant.label(), config.label());
            let result = fault
                .trial(
                    &mut context,
                    &config,
                    client.as_ref(),
                    &mut stage,
                    &id,
                    &key,
                    rng,
                )
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
            progress(&format!("{} on {}", variant.label(), config.label()));
        }
        for key in &keys {
            let _ = client.cleanup(key).await;
        }
        self.used.retain(|(c, _)| c.namespace != config.namespace);
        let _ = client.cleanup_namespace().await;
        let _ = client.close().await;
        stage.stop().await;
        outcome?;
        let mut cell = aggregate(variant, &config, capabilities, &rows);
        if used.is_some() {
            cell.lost_told = Some(crate::matrix::lost_told(&rows));
        }
        cell.client = used;
        Ok((cell, rows, events))
    }

    /// The cell's stage: the holder's namespace where the variant isolates it (the resource
    /// reached through a forwarder the cut does not cut), then what the fault's prepare phase
    /// starts. A shared server's keys are put in the register first: a SIGKILL would leave the
    /// run's keys there, outliving their TTL.
    async fn stage(
        &mut self,
        index: usize,
        fault: &dyn Fault,
        config: &mut BackendConfig,
    ) -> Result<Stage, FaultError> {
        let mut stage = Stage::default();
        if fault.variant().isolates() {
            let tag = format!("{}{index}", self.run_id);
            stage.partition = Some(Partition::create(&tag, &self.options.resource_url).await?);
        }
        let redis_server = self.options.redis_server.clone();
        let mut shim = || self.shim();
        let mut setup = StageSetup {
            config,
            stage: &mut stage,
            redis_server: redis_server.as_deref(),
            shim: &mut shim,
        };
        fault.prepare(&mut setup).await?;
        let entry = (config.kind, config.urls.clone());
        if !stage.private() && config.kind != BackendKind::Memory && !self.shared.contains(&entry) {
            crate::register::record(crate::register::Leftover::Keys {
                backend: config.kind,
                urls: config.urls.clone(),
                namespace: config.namespace.clone(),
            });
            self.shared.push(entry);
        }
        Ok(stage)
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
            // The lab's namespace is its own and its workers are gone: what a holder killed
            // mid-trial still holds (a ZooKeeper node whose session has not expired yet) goes too.
            let _ = client.purge_namespace().await;
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

/// Refuses a pg-session backend whose URL goes through a transaction-mode pooler before any cell
/// runs, in one line, creating nothing there. Any other failure to connect is the cell's,
/// recorded when it runs.
async fn refuse_pooled_session_locks(backends: &[BackendConfig]) -> Result<(), FaultError> {
    for config in backends.iter().filter(|c| c.kind == BackendKind::PgSession) {
        lockbench_locks::backends::postgres::refuse_pooled_session(config).await?;
    }
    Ok(())
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

/// What `program`'s library declares, asked once before a cell's trials (an adapter that cannot
/// start fails the cell here, not in a worker): its capabilities, and its name and version.
async fn library_of(
    program: &lockbench_clients::Program,
    config: &BackendConfig,
) -> Result<
    (
        lockbench_locks::Capabilities,
        Option<lockbench_core::ClientUsed>,
    ),
    FaultError,
> {
    use lockbench_locks::LockBackend as _;
    let adapter = lockbench_clients::AdapterLock::start(program, config)
        .await
        .map_err(|e| FaultError::Worker(e.to_string()))?;
    let capabilities = adapter.capabilities();
    let used = program.client.map(|name| lockbench_core::ClientUsed {
        name,
        version: adapter.description().version.clone(),
    });
    let _ = adapter.close().await;
    Ok((capabilities, used))
}
