//! Runs the matrix: every selected (variant, backend) cell for N trials (each trial in
//! `trial`), the cell's private servers and namespace set up around them, the figures gathered
//! into the record (`matrix`), and everything the run made removed at the end.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use lockbench_core::records::faults::{
    FaultCell, FaultEventRow, FaultTrialRow, FaultsRecord, RunnerTrialRow, SkippedCell,
};
use lockbench_locks::{BackendConfig, BackendKind, Redacted};
use rand::SeedableRng;

use crate::FaultError;
use crate::fault::Fault;
use crate::matrix::{aggregate, event_rows, trial_row};
use crate::resource::{Resource, schema_name};
use crate::scenario::{Design, Variant};
use crate::server::OwnedDir;
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
    /// How many cells run at once (at least 1): see [`backend_groups`] for what a lane takes.
    pub lanes: usize,
    /// Whether the runner cells run too (`--scenario runner`), after the matrix.
    pub runners: bool,
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
    /// One row per trial of the runner cells.
    pub runner_trials: Vec<RunnerTrialRow>,
}

/// A prepared lab: the run's resource schema exists.
pub struct FaultLab {
    options: LabOptions,
    run_id: String,
    resource: Resource,
    /// Every (backend, key) a trial used, for the cleanup. The lanes share this and the two
    /// below; no lock is held across an await.
    used: Mutex<Vec<(BackendConfig, String)>>,
    /// Where the wall-clock shim was written, once a cell needed it (removed when dropped).
    shim_dir: Mutex<Option<OwnedDir>>,
    /// The shared servers whose keys under the run's namespace are in the register.
    shared: Mutex<Vec<(BackendKind, Vec<String>)>>,
}

/// What one cell gave: its row of the matrix, its trials and its log, or why it failed.
type CellResult = Result<(FaultCell, Vec<FaultTrialRow>, Vec<FaultEventRow>), FaultError>;

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
            used: Mutex::new(Vec::new()),
            shim_dir: Mutex::new(None),
            shared: Mutex::new(Vec::new()),
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
            Need::Cluster(kind) => crate::cluster::unavailable(kind),
            Need::Impossible(reason) => Some(reason),
        }
    }

    /// How many trials the run will do (for a progress bar).
    pub fn total_trials(&self) -> u64 {
        self.cells()
            .0
            .iter()
            .map(|(v, c)| u64::from(v.trials(c.kind, self.options.trials)))
            .sum::<u64>()
            + self.runner_plans().len() as u64
                * u64::from(self.options.trials.max(crate::runners::MIN_TRIALS))
            + if self.options.runners {
                crate::runners::RUNNERS.len() as u64 * u64::from(crate::stalls::TRIALS)
            } else {
                0
            }
            + if self.options.runners {
                crate::slots::SlotPlan::all().len() as u64
            } else {
                0
            }
    }

    /// The runner cells to run.
    fn runner_plans(&self) -> Vec<crate::runners::RunnerPlan> {
        if self.options.runners {
            crate::runners::RunnerPlan::all()
        } else {
            Vec::new()
        }
    }

    /// Runs the runner cells, each runner's in a lane of its own (its own broker, workers and
    /// resource connection; the three at once), one cell after another within it; a cell that
    /// fails is noted and left out, as a matrix cell is.
    async fn run_runners(
        &self,
        out: &mut LabOutput,
        progress: &(dyn Fn(&str) + Sync),
        note: &(dyn Fn(&str) + Sync),
    ) -> Result<(), FaultError> {
        if !self.options.runners {
            return Ok(());
        }
        let schema = self.resource_schema();
        // A lockbench built without a C compiler has no shim: its slot cells say so.
        let shim = if WALLCLOCK_SHIM.is_empty() {
            None
        } else {
            self.shim().ok()
        };
        let stage = crate::runners::RunnerStage {
            redis_server: self.options.redis_server.as_deref(),
            shim: shim.as_deref(),
            resource_url: &self.options.resource_url,
            schema: &schema,
        };
        let mut lanes = Vec::new();
        for runner in crate::runners::RUNNERS {
            let mut resource = self.connect_resource().await?;
            let stage = &stage;
            lanes.push(async move {
                let mut done = Vec::new();
                for plan in crate::runners::RunnerPlan::of(runner) {
                    let result = crate::runners::run_cell(
                        plan,
                        self.options.trials,
                        stage,
                        &mut resource,
                        progress,
                    )
                    .await;
                    done.push((plan, result));
                }
                resource.close().await;
                done
            });
        }
        // Each runner's stall cell in a lane of its own too: its trials run one after another on
        // two workers, and its lane is as long as the runner cells'.
        let mut stall_lanes = Vec::new();
        for runner in crate::runners::RUNNERS {
            let mut resource = self.connect_resource().await?;
            let stage = &stage;
            stall_lanes.push(async move {
                let plan = crate::stalls::StallPlan { runner };
                let stalled = crate::stalls::run_cell(
                    plan,
                    self.options.seed,
                    stage,
                    &mut resource,
                    progress,
                )
                .await;
                resource.close().await;
                (plan, stalled)
            });
        }
        let slot_lane = async {
            let mut done = Vec::new();
            let mut resource = self.connect_resource().await?;
            for plan in crate::slots::SlotPlan::all() {
                let result = crate::slots::run_cell(
                    plan,
                    self.options.trials,
                    &stage,
                    &mut resource,
                    progress,
                )
                .await;
                done.push((plan, result));
            }
            resource.close().await;
            Ok::<_, FaultError>(done)
        };
        let (runner_cells, stall_cells, slot_cells) = futures::future::join3(
            futures::future::join_all(lanes),
            futures::future::join_all(stall_lanes),
            slot_lane,
        )
        .await;
        let mut not_run = |label: String, e: FaultError| {
            let line = format!("{label}: {e}");
            note(&format!("{line} (not run)"));
            out.record.runners_not_run.push(line);
        };
        for (plan, result) in slot_cells? {
            match result {
                Ok(cell) => out.record.slots.push(cell),
                Err(e) => not_run(plan.label(), e),
            }
        }
        for (plan, result) in runner_cells.into_iter().flatten() {
            match result {
                Ok((cell, rows)) => {
                    out.record.runners.push(cell);
                    out.runner_trials.extend(rows);
                }
                Err(e) => not_run(plan.label(), e),
            }
        }
        for (plan, result) in stall_cells {
            match result {
                Ok((cell, rows)) => {
                    out.record.stalls.push(cell);
                    out.runner_trials.extend(rows);
                }
                Err(e) => not_run(plan.label(), e),
            }
        }
        Ok(())
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
                runners: Vec::new(),
                slots: Vec::new(),
                stalls: Vec::new(),
                runners_not_run: Vec::new(),
            },
            trials: Vec::new(),
            events: Vec::new(),
            runner_trials: Vec::new(),
        };
        let mut results = self.run_lanes(cells, progress).await?;
        results.sort_by_key(|(index, ..)| *index);
        for (_, variant, config, result) in results {
            match result {
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
        self.run_runners(&mut out, progress, note).await?;
        Ok(out)
    }

    /// Runs `cells` in [`LabOptions::lanes`] lanes at once, each with its own connection to the
    /// resource: a lane takes a whole group of [`backend_groups`], in order, so that no shared
    /// server has two faults at once. The cells of a variant that must run alone ([`Design::alone`]) run
    /// last, one after another, once every lane has finished (at the start, the lab's first
    /// worker starts cold: a late start's first trial once began its acquisition after the
    /// stopped node was back). The lanes share one task: a fault's
    /// timing is the runtime's timers, and the workers, servers and adapters it drives are
    /// processes of their own.
    async fn run_lanes(
        &self,
        cells: Vec<(Variant, BackendConfig)>,
        progress: &(dyn Fn(&str) + Sync),
    ) -> Result<Vec<(usize, Variant, BackendConfig, CellResult)>, FaultError> {
        let (alone, shared): (Vec<_>, Vec<_>) = cells
            .into_iter()
            .enumerate()
            .map(|(index, (variant, config))| (index, variant, config))
            .partition(|(_, variant, _)| variant.alone());
        let groups = backend_groups(shared, self.options.trials);
        let lanes = self.options.lanes.clamp(1, groups.len().max(1));
        let queue = Mutex::new(groups);
        let mut resources = Vec::with_capacity(lanes);
        for _ in 0..lanes {
            resources.push(self.connect_resource().await?);
        }
        let lane = |mut resource: Resource| {
            let queue = &queue;
            async move {
                let mut done = Vec::new();
                while let Some(group) = queue.lock().ok().and_then(|mut q| q.pop_front()) {
                    done.extend(self.run_in_order(&mut resource, group, progress).await);
                }
                resource.close().await;
                done
            }
        };
        let lanes = futures::future::join_all(resources.into_iter().map(lane)).await;
        let mut done: Vec<_> = lanes.into_iter().flatten().collect();
        if !alone.is_empty() {
            let mut resource = self.connect_resource().await?;
            done.extend(self.run_in_order(&mut resource, alone, progress).await);
            resource.close().await;
        }
        Ok(done)
    }

    /// A lane's own connection to the protected resource.
    async fn connect_resource(&self) -> Result<Resource, FaultError> {
        let schema = self.resource_schema();
        Resource::connect(&self.options.resource_url, &schema, Duration::from_secs(5)).await
    }

    /// `cells`, one after another, on one connection to the resource.
    async fn run_in_order(
        &self,
        resource: &mut Resource,
        cells: Vec<(usize, Variant, BackendConfig)>,
        progress: &(dyn Fn(&str) + Sync),
    ) -> Vec<(usize, Variant, BackendConfig, CellResult)> {
        let mut done = Vec::with_capacity(cells.len());
        for (index, variant, config) in cells {
            let result = self
                .run_seeded(resource, index, variant, &config, progress)
                .await;
            done.push((index, variant, config, result));
        }
        done
    }

    /// One cell, its timing drawn from the seed and the cell's name alone, whichever others run
    /// and in whichever lane.
    async fn run_seeded(
        &self,
        resource: &mut Resource,
        index: usize,
        variant: Variant,
        config: &BackendConfig,
        progress: &(dyn Fn(&str) + Sync),
    ) -> CellResult {
        let mut rng = rand::rngs::StdRng::seed_from_u64(
            self.options.seed ^ cell_hash(&variant.label(), config.label()),
        );
        self.run_cell(resource, index, variant, config, &mut rng, progress)
            .await
    }

    async fn run_cell(
        &self,
        resource: &mut Resource,
        index: usize,
        variant: Variant,
        config: &BackendConfig,
        rng: &mut rand::rngs::StdRng,
        progress: &(dyn Fn(&str) + Sync),
    ) -> CellResult {
        let fault = crate::fault::of(variant);
        let mut config = self.cell_config(variant, config);
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
            resource,
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
                lock(&self.used).push((config.clone(), key.clone()));
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
                Ok(judged) => {
                    rows.push(trial_row(variant, &config, trial, &judged));
                    match event_rows(variant, &config, trial, &judged) {
                        Ok(logged) => events.extend(logged),
                        Err(e) => {
                            outcome = Err(e);
                            break;
                        }
                    }
                }
                Err(e) => {
                    outcome = Err(match e {
                        FaultError::Unmet(why) => {
                            FaultError::Unmet(format!("trial {trial}: {why}"))
                        }
                        e => FaultError::Worker(format!("trial {trial}: {e}")),
                    });
                    break;
                }
            }
            progress(&format!("{} on {}", variant.label(), config.label()));
        }
        self.end_cell(client.as_ref(), &mut stage, &keys).await;
        outcome?;
        let mut cell = aggregate(variant, &config, capabilities, &rows);
        if used.is_some() {
            cell.lost_told = Some(crate::matrix::lost_told(&rows));
        }
        cell.client = used;
        Ok((cell, rows, events))
    }

    /// The cell's backend config: the lab's namespace, and the variant's TTL and timeouts.
    fn cell_config(&self, variant: Variant, config: &BackendConfig) -> BackendConfig {
        let mut config = config.clone();
        config.namespace = self.namespace();
        // ZooKeeper's lock lives as long as its session: the TTL is the session timeout, which
        // the server clamps to 2 to 20 ticks (the grant reports what it negotiated).
        let ttl = variant.trial_ttl(self.options.ttl);
        config.session_timeout = ttl;
        if let Some(timeout) = variant.operation_timeout(ttl) {
            config.operation_timeout = timeout;
        }
        config
    }

    /// After a cell's trials, whatever they did: its keys removed from the server (bounded: a
    /// server that went away with its cell, a private one or a namespace's address, would
    /// otherwise hold the lane until TCP gives up, many minutes later), its client closed, its
    /// servers stopped.
    async fn end_cell(
        &self,
        client: &dyn lockbench_locks::LockBackend,
        stage: &mut Stage,
        keys: &[String],
    ) {
        let bound = Duration::from_secs(5);
        for key in keys {
            let _ = tokio::time::timeout(bound, client.cleanup(key)).await;
        }
        lock(&self.used).retain(|(_, key)| !keys.contains(key));
        // A shared server's namespace outlives the cell: another lane may still lock under it
        // (pg-session and pg-xact share Postgres's fencing sequence); the lab removes it at the
        // end.
        if stage.private() {
            let _ = tokio::time::timeout(bound, client.cleanup_namespace()).await;
        }
        let _ = tokio::time::timeout(bound, client.close()).await;
        stage.stop().await;
    }

    /// The cell's stage: the holder's namespace where the variant isolates it (the resource
    /// reached through a forwarder the cut does not cut), then what the fault's prepare phase
    /// starts. A shared server's keys are put in the register first: a SIGKILL would leave the
    /// run's keys there, outliving their TTL.
    async fn stage(
        &self,
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
        let mut shared = lock(&self.shared);
        if !stage.private() && config.kind != BackendKind::Memory && !shared.contains(&entry) {
            crate::register::record(crate::register::Leftover::Keys {
                backend: config.kind,
                urls: config.urls.clone(),
                namespace: config.namespace.clone(),
            });
            shared.push(entry);
        }
        drop(shared);
        Ok(stage)
    }

    /// The wall-clock shim as a file a server can preload (written once per run).
    fn shim(&self) -> Result<PathBuf, FaultError> {
        let dir = std::env::temp_dir().join(format!(
            "lockbench-faults-{}-shim-{}",
            std::process::id(),
            self.run_id
        ));
        let file = dir.join("libwallclock.so");
        let mut shim_dir = lock(&self.shim_dir);
        if shim_dir.is_none() {
            crate::register::record(crate::register::Leftover::Dir { path: dir.clone() });
            std::fs::create_dir_all(&dir)
                .and_then(|()| std::fs::write(&file, WALLCLOCK_SHIM))
                .map_err(|e| FaultError::Server(format!("writing {}: {e}", file.display())))?;
            *shim_dir = Some(OwnedDir(dir));
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
        let used = std::mem::take(&mut *lock(&self.used));
        let shared = std::mem::take(&mut *lock(&self.shared));
        let bound = Duration::from_secs(10);
        for (kind, urls) in shared {
            let mut config = self
                .options
                .backends
                .iter()
                .find(|c| c.kind == kind)
                .cloned()
                .unwrap_or_else(|| BackendConfig::new(kind, Vec::new(), ""));
            config.urls = urls;
            config.namespace = self.namespace();
            let Ok(Ok(client)) =
                tokio::time::timeout(bound, lockbench_locks::connect(&config)).await
            else {
                continue;
            };
            for (_, key) in used
                .iter()
                .filter(|(c, _)| c.kind == kind && c.urls == config.urls)
            {
                let _ = tokio::time::timeout(bound, client.cleanup(key)).await;
            }
            // The lab's namespace is its own and its workers are gone: what a holder killed
            // mid-trial still holds (a ZooKeeper node whose session has not expired yet) goes
            // too, and what the namespace itself left (Postgres's fencing sequence).
            let _ = tokio::time::timeout(bound, client.purge_namespace()).await;
            let _ = tokio::time::timeout(bound, client.close()).await;
        }
        // pg-boss's own schemas, where a runner or stall cell was stopped before it dropped its.
        for lane in crate::runners::BOSS_LANES {
            let boss = crate::runners::boss_schema(&self.resource_schema(), lane);
            let _ = self.resource.drop_other_schema(&boss).await;
        }
        let dropped = self.resource.drop_schema().await;
        self.resource.close().await;
        // The private directories go when their servers are dropped; the shim's with the lab.
        *lock(&self.shim_dir) = None;
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

/// The cells in groups a lane takes whole: a backend's cells on its shared server, in the cells'
/// order, and each cell that locks on servers of its own alone (a restart's private Redis, a
/// vanished host's private Postgres), since it meets no other cell there. The groups that take
/// longest go first, so that a lane that takes a long one early does not finish last alone.
fn backend_groups(
    cells: Vec<(usize, Variant, BackendConfig)>,
    trials: u32,
) -> VecDeque<Vec<(usize, Variant, BackendConfig)>> {
    let mut groups: Vec<Vec<(usize, Variant, BackendConfig)>> = Vec::new();
    for (index, variant, config) in cells {
        let shared = |g: &&mut Vec<(usize, Variant, BackendConfig)>| {
            g[0].2.id() == config.id() && !own_servers(g[0].1, g[0].2.kind)
        };
        match groups.iter_mut().find(shared) {
            Some(group) if !own_servers(variant, config.kind) => {
                group.push((index, variant, config))
            }
            _ => groups.push(vec![(index, variant, config)]),
        }
    }
    let seconds = |group: &Vec<(usize, Variant, BackendConfig)>| -> u64 {
        group
            .iter()
            .map(|(_, v, c)| rough_seconds(*v, c.kind, trials))
            .sum()
    };
    // Stable: groups of equal length keep the cells' order.
    groups.sort_by_key(|g| std::cmp::Reverse(seconds(g)));
    groups.into()
}

/// Whether a cell of `variant` on `backend` locks on servers the lab starts for it alone.
fn own_servers(variant: Variant, backend: BackendKind) -> bool {
    crate::fault::of(variant).needs(backend).iter().any(|need| {
        matches!(
            need,
            Need::RedisServer | Need::Zookeeper | Need::Postgres | Need::Cluster(_)
        )
    })
}

/// A cell's rough length, only to order the groups: 3 s a trial (a few TTLs of 1 s), and the
/// whole wait of a contender that waits it out (a minute).
fn rough_seconds(variant: Variant, backend: BackendKind, asked: u32) -> u64 {
    if variant.waits_out(backend) {
        crate::scenario::VANISHED_WAIT.as_secs() + 6
    } else {
        3 * u64::from(variant.trials(backend, asked))
    }
}

/// A lane-shared list, whatever a panicking lane left in it.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
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

#[cfg(test)]
mod tests {
    use super::*;

    fn config(kind: BackendKind) -> BackendConfig {
        BackendConfig::new(kind, vec!["x://127.0.0.1".to_string()], "t")
    }

    fn indexed(cells: Vec<(Variant, BackendConfig)>) -> Vec<(usize, Variant, BackendConfig)> {
        cells
            .into_iter()
            .enumerate()
            .map(|(i, (v, c))| (i, v, c))
            .collect()
    }

    #[test]
    fn a_lane_takes_a_backends_shared_cells_whole_and_a_cell_with_its_own_servers_alone() {
        let redis = config(BackendKind::Redis);
        let pg = config(BackendKind::PgSession);
        let vanished = Variant::CrashHostVanished { keepalive: false };
        let cells = vec![
            (Variant::PauseNaive, redis.clone()),
            (Variant::PauseNaive, pg.clone()),
            (Variant::CrashKilled, redis.clone()),
            // A private Postgres, and a contender that waits a minute: a group of its own, first.
            (vanished, pg.clone()),
            (Variant::CrashKilled, pg.clone()),
            // A private Postgres on the namespace's host end.
            (Variant::PartitionHeartbeat, pg.clone()),
            // A private Redis.
            (
                Variant::Restart(crate::scenario::Persistence::None),
                redis.clone(),
            ),
        ];
        let groups = backend_groups(indexed(cells), 3);
        let shape: Vec<Vec<(usize, &str)>> = groups
            .iter()
            .map(|g| g.iter().map(|(i, _, c)| (*i, c.label())).collect())
            .collect();
        // The vanished host about 66 s; the shared cells 6 trials on each backend (Redis's
        // group made first); the partition (a private Postgres) and the restart 3 trials each.
        // Each group keeps its cells' order.
        assert_eq!(
            shape,
            vec![
                vec![(3, "pg-session")],
                vec![(0, "redis"), (2, "redis")],
                vec![(1, "pg-session"), (4, "pg-session")],
                vec![(5, "pg-session")],
                vec![(6, "redis")],
            ]
        );
        // At equal weight the cells' order decides.
        let groups = backend_groups(
            indexed(vec![
                (Variant::PauseNaive, redis.clone()),
                (Variant::PauseNaive, pg.clone()),
            ]),
            3,
        );
        assert_eq!(groups[0][0].2.label(), "redis");
    }
}
