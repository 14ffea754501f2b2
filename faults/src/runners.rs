//! The runner cells (`--scenario runner`): the real BullMQ, Celery and pg-boss workers, two of
//! each, given one job that writes to the protected resource, with the runner's own timeout
//! shorter than the job and then at the setting `ttl`'s rule recommends. No lock is taken: what
//! is measured is the runner starting a living job again by itself.
//!
//! Each trial starts its two workers afresh (a runner's redelivery state does not cross trials),
//! sends the job, and stops the runner from going on once it has run twice or ended once: the
//! private Redis is emptied for Celery, whose redeliveries would otherwise go on every timeout
//! for as long as some execution runs; BullMQ's `maxStalledCount` (1) and pg-boss's `retryLimit`
//! (1 in the lab) bound theirs. Executions, overlaps and stale writes come from the resource's
//! log, never from the runner's word.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

pub use lockbench_core::records::faults::TaskLock;
use lockbench_core::records::faults::{RunnerCell, RunnerTrialRow};
use lockbench_core::records::runner::{RunnerKind, RunnerSetting};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::FaultError;
use crate::resource::{Event, LoggedEvent, Resource};
use crate::server::{Persistence, PrivateRedis};

/// The runners the lab runs for real (Quartz is not packaged for this Debian; a cron slot is
/// not a runner process).
pub const RUNNERS: [RunnerKind; 3] = [RunnerKind::Bullmq, RunnerKind::Celery, RunnerKind::PgBoss];

/// How long the lab's job runs: long enough that the short setting's redelivery (the setting,
/// plus the runner's sweep of at most a second and its poll) starts within it.
pub const JOB: Duration = Duration::from_secs(4);

/// `ttl`'s default safety factor (lockbench_analysis::DEFAULT_SAFETY_FACTOR; a test of the
/// binary holds them equal): a fixed lease is recommended at the TTL, runtime x factor.
pub const SAFETY_FACTOR: f64 = 3.0;

/// Trials per cell when fewer are asked for: the figure is three of each.
pub const MIN_TRIALS: u32 = 3;

/// How long a worker may take to say it consumes.
const READY: Duration = Duration::from_secs(30);

/// The lease of [`TaskLock::Shorter`]: shorter than every short setting, so that it has run
/// out when the second execution starts.
pub const SHORT_TASK_LOCK: Duration = Duration::from_secs(1);

/// One cell: a runner, its setting shorter than the job or at the recommendation, and the job's
/// own lock inside the task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunnerPlan {
    /// The runner.
    pub runner: RunnerKind,
    /// True for the recommended setting.
    pub recommended: bool,
    /// The job's own lock.
    pub lock: TaskLock,
}

/// Whole seconds, rounded up.
fn whole(d: Duration) -> Duration {
    Duration::from_secs_f64(d.as_secs_f64().ceil())
}

impl RunnerPlan {
    /// Every cell of `runner`: its short setting, its recommended one, and the short one with a
    /// lock inside the task (one that outlives the job; for a Redis broker, one shorter than the
    /// runner's second start too).
    pub fn of(runner: RunnerKind) -> Vec<RunnerPlan> {
        let plan = |recommended, lock| RunnerPlan {
            runner,
            recommended,
            lock,
        };
        let mut plans = vec![
            plan(false, TaskLock::None),
            plan(true, TaskLock::None),
            plan(false, TaskLock::Outlives),
        ];
        if runner != RunnerKind::PgBoss {
            plans.push(plan(false, TaskLock::Shorter));
        }
        plans
    }

    /// Every cell, runner by runner.
    pub fn all() -> Vec<RunnerPlan> {
        RUNNERS.iter().flat_map(|&r| RunnerPlan::of(r)).collect()
    }

    /// The task lock's lease, where it has one.
    pub fn task_lock(self) -> Option<Duration> {
        match (self.lock, self.runner) {
            (TaskLock::None, _) | (TaskLock::Outlives, RunnerKind::PgBoss) => None,
            (TaskLock::Outlives, _) => Some(whole(JOB.mul_f64(SAFETY_FACTOR))),
            (TaskLock::Shorter, _) => Some(SHORT_TASK_LOCK),
        }
    }

    /// `LB_TASK_LOCK` for the scripts.
    fn task_lock_env(self) -> String {
        match (self.lock, self.task_lock()) {
            (TaskLock::None, _) => String::new(),
            (_, Some(lease)) => format!("redis:{}", lease.as_millis()),
            (_, None) => "pg".to_string(),
        }
    }

    /// The setting shorter than the job: half of it for a fixed lease (a redelivery within the
    /// job), a lock that a 4 s stretch outlasts for BullMQ.
    fn short(self) -> Duration {
        match self.runner {
            RunnerKind::Bullmq => Duration::from_millis(1500),
            _ => JOB / 2,
        }
    }

    /// The setting the cell runs with: the short one, or what `ttl`'s rule recommends for a job
    /// of [`JOB`] (`analysis::runner`): a fixed lease at runtime x [`SAFETY_FACTOR`]; a renewed
    /// lock lengthened by half (whole seconds) until the longest stall is shorter than it.
    pub fn setting(self) -> (RunnerSetting, Duration) {
        let setting = lease_setting(self.runner);
        if !self.recommended {
            return (setting, self.short());
        }
        let value = match setting {
            RunnerSetting::LockDuration => {
                let mut lease = self.short();
                while lease <= JOB {
                    lease = whole(lease.mul_f64(1.5));
                }
                lease
            }
            _ => whole(JOB.mul_f64(SAFETY_FACTOR)),
        };
        (setting, value)
    }

    /// Executions per trial the runner's design predicts: two with the setting shorter than the
    /// job (the runner gives up on the first and starts it again), one at the recommendation or
    /// when a task lock that outlives the job makes the second skip.
    pub fn expected_executions(self) -> u32 {
        if self.recommended || self.lock == TaskLock::Outlives {
            1
        } else {
            2
        }
    }

    /// Starts that found the task's lock held and did nothing, per trial.
    pub fn expected_skipped(self) -> u32 {
        u32::from(self.lock == TaskLock::Outlives && !self.recommended)
    }

    /// The cell's name: `runner/celery visibility_timeout 2s`, `... task-lock 12s`.
    pub fn label(self) -> String {
        let (setting, value) = self.setting();
        let lock = match (self.lock, self.task_lock()) {
            (TaskLock::None, _) => String::new(),
            (_, Some(lease)) => format!(" task-lock {}s", lease.as_secs_f64()),
            (_, None) => " task-lock session".to_string(),
        };
        format!(
            "runner/{} {} {}s{lock}",
            self.runner.word(),
            setting.field(),
            value.as_secs_f64()
        )
    }

    /// What the workers run and what is set, in one sentence.
    fn injected(self) -> String {
        let (setting, value) = self.setting();
        let job = JOB.as_secs_f64();
        let set = setting.native_value(value);
        let which = if self.recommended {
            "the setting ttl's rule recommends for it"
        } else {
            "shorter than the job"
        };
        let lock = match (self.lock, self.task_lock()) {
            (TaskLock::None, _) => String::new(),
            (_, Some(lease)) => format!(
                "; the task takes its own lock first (Redis SET NX PX {} ms on the broker, released at its end) and skips the job when it is held",
                lease.as_millis()
            ),
            (_, None) => "; the task takes its own lock first (pg_try_advisory_lock on its connection, held to its end) and skips the job when it is held".to_string(),
        };
        match self.runner {
            RunnerKind::Bullmq => format!(
                "two BullMQ workers (concurrency 1, stalledInterval 1000 ms, maxStalledCount 1) on a private redis-server; one job whose processor holds the event loop for {job} s (a CPU-bound stretch: no lock renewal runs); {set}, {which}{lock}"
            ),
            RunnerKind::Celery => format!(
                "two Celery workers (prefork, concurrency 1, acks_late, prefetch 1) on a private redis-server, kombu sweeping unacknowledged messages every second (every 100 s by default); one task sleeping {job} s, writing; {set}, {which}{lock}"
            ),
            _ => format!(
                "two pg-boss workers (batchSize 1, polling every 0.5 s) on a schema of their own, maintenance every second (every 120 s by default), retryLimit 1; one job sleeping {job} s, writing; {set}, {which}{lock}"
            ),
        }
    }

    /// The environment of its scripts.
    fn env(self, broker: &Broker, stage: &RunnerStage<'_>) -> Vec<(String, String)> {
        let mut env = runner_env(self.runner, self.setting().1, broker, stage);
        env.push(("LB_TASK_LOCK".to_string(), self.task_lock_env()));
        env
    }
}

/// The setting of `runner` that acts as a lease.
pub(crate) fn lease_setting(runner: RunnerKind) -> RunnerSetting {
    match runner {
        RunnerKind::Bullmq => RunnerSetting::LockDuration,
        RunnerKind::Celery => RunnerSetting::VisibilityTimeout,
        _ => RunnerSetting::ExpireIn,
    }
}

/// The environment every runner script reads: its broker, the protected resource, and the
/// runner's lease setting at `value` (BullMQ's stalled-job check every second, as Celery's sweep
/// and pg-boss's maintenance are in their scripts).
pub(crate) fn runner_env(
    runner: RunnerKind,
    value: Duration,
    broker: &Broker,
    stage: &RunnerStage<'_>,
) -> Vec<(String, String)> {
    let mut env = vec![
        ("LB_BROKER".to_string(), broker.url.clone()),
        ("LB_RESOURCE".to_string(), stage.resource_url.to_string()),
        ("LB_SCHEMA".to_string(), stage.schema.to_string()),
    ];
    let named = match lease_setting(runner) {
        RunnerSetting::LockDuration => {
            env.push(("LB_STALLED_INTERVAL".to_string(), "1".to_string()));
            "LB_LOCK_DURATION"
        }
        RunnerSetting::VisibilityTimeout => "LB_VISIBILITY_TIMEOUT",
        _ => {
            env.push(("LB_BOSS_SCHEMA".to_string(), broker.boss.clone()));
            "LB_EXPIRE_IN"
        }
    };
    env.push((named.to_string(), format!("{}", value.as_secs_f64())));
    env
}

/// One trial's figures, from the resource's log.
#[derive(Clone, Debug, PartialEq)]
pub struct RunnerTrial {
    /// Executions of the job.
    pub executions: u32,
    /// Seconds two executions ran at once.
    pub overlap_s: f64,
    /// Writes by an execution after another had started.
    pub stale_writes: u64,
    /// From the first execution's start to the second's.
    pub second_start_s: Option<f64>,
    /// Starts that found the task's lock held and did nothing.
    pub skipped: u32,
}

/// The figures of a trial's log: each execution is a worker name of its own (`a#1`), from its
/// grant to its last event.
pub fn trial_figures(log: &[LoggedEvent]) -> RunnerTrial {
    let mut starts: Vec<(&str, i64, i64)> = Vec::new();
    for e in log {
        if e.event == Event::Grant {
            starts.push((&e.worker, e.seq, e.t_ns));
        }
    }
    starts.sort_by_key(|s| s.2);
    let end_of = |worker: &str| {
        log.iter()
            .filter(|e| e.worker == worker)
            .map(|e| e.t_ns)
            .max()
            .unwrap_or(0)
    };
    // The longest time any two executions ran at once.
    let mut overlap_ns = 0i64;
    for (i, a) in starts.iter().enumerate() {
        for b in &starts[i + 1..] {
            let both = end_of(a.0).min(end_of(b.0)) - a.2.max(b.2);
            overlap_ns = overlap_ns.max(both);
        }
    }
    // A write is stale when another execution started after its own did, before it (in the
    // order the resource applied them).
    let stale_writes = log
        .iter()
        .filter(|e| e.event == Event::Write)
        .filter(|e| {
            let mine = starts.iter().find(|s| s.0 == e.worker).map(|s| s.1);
            mine.is_some_and(|mine| {
                starts
                    .iter()
                    .any(|s| s.0 != e.worker && s.1 > mine && s.1 < e.seq)
            })
        })
        .count() as u64;
    RunnerTrial {
        executions: starts.len() as u32,
        overlap_s: overlap_ns.max(0) as f64 / 1e9,
        stale_writes,
        second_start_s: (starts.len() >= 2).then(|| (starts[1].2 - starts[0].2) as f64 / 1e9),
        skipped: log.iter().filter(|e| e.event == Event::Skipped).count() as u32,
    }
}

/// A runner script as a command line.
#[derive(Clone, Debug)]
pub struct RunnerProgram {
    argv: Vec<PathBuf>,
    /// Its library and version (`celery 5.7.0`).
    pub library: String,
}

impl RunnerProgram {
    /// `kind`'s script, or what is missing.
    pub fn find(kind: RunnerKind) -> Result<Self, FaultError> {
        let (argv, library) = lockbench_clients::programs::runner_program(kind)
            .map_err(|e| FaultError::Unmet(e.to_string()))?;
        Ok(RunnerProgram { argv, library })
    }

    fn command(
        &self,
        args: &[&str],
        env: &[(String, String)],
        stderr: &Path,
    ) -> Result<Command, FaultError> {
        let mut command = Command::new(&self.argv[0]);
        command
            .args(&self.argv[1..])
            .args(args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(
                std::fs::File::create(stderr).map_err(|e| {
                    FaultError::Runner(format!("creating {}: {e}", stderr.display()))
                })?,
            )
            .kill_on_drop(true);
        crate::process::dies_with_the_lab(&mut command);
        Ok(command)
    }
}

/// The last line of a script's stderr, for an error.
pub(crate) fn last_line(path: &Path) -> String {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|s| {
            s.lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .map(str::to_string)
        })
        .unwrap_or_default()
}

/// A worker of a trial: killed by pid when dropped.
pub(crate) struct RunnerWorker {
    child: Child,
}

impl RunnerWorker {
    pub(crate) async fn start(
        program: &RunnerProgram,
        name: &str,
        env: &[(String, String)],
        dir: &Path,
    ) -> Result<Self, FaultError> {
        let stderr = dir.join(format!("{name}.stderr"));
        let mut child = program
            .command(&["worker", name], env, &stderr)?
            .spawn()
            .map_err(|e| {
                FaultError::Runner(format!("{}: starting worker {name}: {e}", program.library))
            })?;
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut lines = BufReader::new(stdout).lines();
        let ready = async {
            while let Ok(Some(line)) = lines.next_line().await {
                if line.trim() == "ready" {
                    return true;
                }
            }
            false
        };
        let said = match tokio::time::timeout(READY, ready).await {
            Ok(true) => None,
            Ok(false) => Some("exited before it said ready".to_string()),
            Err(_) => Some(format!("did not say ready within {READY:?}")),
        };
        if let Some(what) = said {
            return Err(FaultError::Runner(format!(
                "{}: worker {name} {what} (its stderr: {})",
                program.library,
                last_line(&stderr)
            )));
        }
        // The rest of its stdout is read and dropped, so that it never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Ok(RunnerWorker { child })
    }

    /// Waits up to `bound` for it to exit by itself; false when it had not (it is then killed).
    pub(crate) async fn exited(mut self, bound: Duration) -> bool {
        let exited = tokio::time::timeout(bound, self.child.wait()).await.is_ok();
        if !exited {
            let _ = self.child.kill().await;
        }
        exited
    }

    /// Asks it to stop (SIGTERM: the runner's own shutdown), and kills it after `bound`.
    pub(crate) async fn stop(mut self, bound: Duration) {
        if let Some(pid) = self
            .child
            .id()
            .and_then(|p| rustix::process::Pid::from_raw(p as i32))
        {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        }
        if tokio::time::timeout(bound, self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
        }
    }
}

/// The lanes that run pg-boss at once, each on a schema of its own: the runner cells' and the
/// stall cell's.
pub(crate) const BOSS_LANES: [&str; 2] = ["boss", "boss_stall"];

/// pg-boss's own schema for `lane` (of [`BOSS_LANES`]) in a run whose resource schema is
/// `schema`.
pub(crate) fn boss_schema(schema: &str, lane: &str) -> String {
    format!("{schema}_{lane}")
}

/// Where the runner and slot cells run: their brokers and the resource.
pub struct RunnerStage<'a> {
    /// The redis-server binary for private servers.
    pub redis_server: Option<&'a Path>,
    /// The wall-clock shim, written as a file (the slot cells' skewed node); `None` when this
    /// lockbench was built without it.
    pub shim: Option<&'a Path>,
    /// The resource's Postgres (pg-boss's broker too, in a schema of its own).
    pub resource_url: &'a str,
    /// The run's resource schema (pg-boss's own is named after it).
    pub schema: &'a str,
}

impl RunnerStage<'_> {
    /// A private redis-server on loopback, without persistence: a broker, or the slot cells'
    /// lock server.
    pub(crate) async fn private_redis(&self) -> Result<PrivateRedis, FaultError> {
        let binary = self.redis_server.ok_or_else(|| {
            FaultError::Server(
                "needs redis-server on PATH for a private server (scripts/services.sh up installs it)"
                    .to_string(),
            )
        })?;
        PrivateRedis::start(
            binary,
            Persistence::None,
            None,
            std::net::Ipv4Addr::LOCALHOST,
        )
        .await
    }
}

/// Runs the `trials` trials of `plan`; `progress` is told after each.
pub async fn run_cell(
    plan: RunnerPlan,
    trials: u32,
    stage: &RunnerStage<'_>,
    resource: &mut Resource,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<(RunnerCell, Vec<RunnerTrialRow>), FaultError> {
    let program = RunnerProgram::find(plan.runner)?;
    // Removed when dropped: at the cell's end, and when a stopped run drops the cell.
    let dir = crate::server::OwnedDir(crate::server::private_dir("runner")?);
    let rows = run_trials(plan, trials, stage, resource, progress, &program, &dir.0).await?;
    let (setting, value) = plan.setting();
    let mut seconds: Vec<f64> = rows.iter().filter_map(|r| r.second_start_s).collect();
    seconds.sort_by(f64::total_cmp);
    let cell = RunnerCell {
        runner: plan.runner,
        library: program.library.clone(),
        setting,
        setting_s: value.as_secs_f64(),
        recommended: plan.recommended,
        task_lock: plan.lock,
        task_lock_s: plan.task_lock().map(|d| d.as_secs_f64()),
        job_s: JOB.as_secs_f64(),
        injected: plan.injected(),
        expected_executions: plan.expected_executions(),
        expected_skipped: plan.expected_skipped(),
        skipped: rows.iter().map(|r| r.skipped).collect(),
        trials: rows.len() as u32,
        executions: rows.iter().map(|r| r.executions).collect(),
        overlap_max_s: rows.iter().map(|r| r.overlap_s).fold(0.0, f64::max),
        stale_writes: rows.iter().map(|r| r.stale_writes).sum(),
        second_start_p50_s: (!seconds.is_empty()).then(|| seconds[seconds.len() / 2]),
    };
    Ok((cell, rows))
}

/// A runner's broker for one cell: a private redis-server (BullMQ, Celery), or for pg-boss a
/// schema of its own in the resource's Postgres (registered as a leftover, dropped by
/// [`Broker::close`]).
pub(crate) struct Broker {
    redis: Option<PrivateRedis>,
    /// Its URL, as the scripts take it.
    pub(crate) url: String,
    /// pg-boss's schema.
    pub(crate) boss: String,
}

impl Broker {
    /// `lane` names pg-boss's schema (of [`BOSS_LANES`]).
    pub(crate) async fn start(
        runner: RunnerKind,
        stage: &RunnerStage<'_>,
        lane: &str,
    ) -> Result<Broker, FaultError> {
        let boss = boss_schema(stage.schema, lane);
        if runner == RunnerKind::PgBoss {
            crate::register::record(crate::register::Leftover::Schema {
                url: stage.resource_url.to_string(),
                schema: boss.clone(),
            });
            return Ok(Broker {
                redis: None,
                url: stage.resource_url.to_string(),
                boss,
            });
        }
        let redis = stage.private_redis().await?;
        Ok(Broker {
            url: format!("{}/0", redis.url()),
            redis: Some(redis),
            boss,
        })
    }

    /// Empties a Redis broker: no message, delivery or lock of a trial is left for the next,
    /// and Celery's redeliveries stop with its keys.
    pub(crate) async fn empty(&self) -> Result<(), FaultError> {
        if let Some(redis) = &self.redis {
            redis.command(&["FLUSHALL"]).await?;
        }
        Ok(())
    }

    /// Drops pg-boss's schema (a Redis broker stops when dropped).
    pub(crate) async fn close(self, resource: &mut Resource) -> Result<(), FaultError> {
        if self.redis.is_none() {
            resource.drop_other_schema(&self.boss).await?;
        }
        Ok(())
    }
}

#[allow(clippy::too_many_arguments)]
async fn run_trials(
    plan: RunnerPlan,
    trials: u32,
    stage: &RunnerStage<'_>,
    resource: &mut Resource,
    progress: &(dyn Fn(&str) + Sync),
    program: &RunnerProgram,
    dir: &Path,
) -> Result<Vec<RunnerTrialRow>, FaultError> {
    let broker = Broker::start(plan.runner, stage, BOSS_LANES[0]).await?;
    let env = plan.env(&broker, stage);
    let mut rows = Vec::new();
    let mut failure = None;
    for trial in 0..trials.max(MIN_TRIALS) {
        let name = format!("{}#{trial}", plan.label());
        let job = Job {
            trial: &name,
            seconds: JOB.as_secs_f64(),
            bound: JOB * 2 + plan.setting().1.min(JOB * 4) + Duration::from_secs(10),
        };
        match one_trial(&job, program, &env, dir, &broker, resource).await {
            Ok(figures) => rows.push(RunnerTrialRow {
                runner: plan.runner,
                setting: plan.setting().0,
                setting_s: plan.setting().1.as_secs_f64(),
                recommended: plan.recommended,
                task_lock: plan.lock,
                trial,
                executions: figures.executions,
                overlap_s: figures.overlap_s,
                stale_writes: figures.stale_writes,
                second_start_s: figures.second_start_s,
                skipped: figures.skipped,
                stall_s: None,
            }),
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
        progress(&plan.label());
    }
    broker.close(resource).await?;
    match failure {
        Some(e) => Err(e),
        None => Ok(rows),
    }
}

/// The one job of a trial.
pub(crate) struct Job<'a> {
    /// The trial's name in the resource's log.
    pub(crate) trial: &'a str,
    /// How long its first execution runs, in seconds.
    pub(crate) seconds: f64,
    /// How long the trial may take before it is an error.
    pub(crate) bound: Duration,
}

/// One trial: two workers started, one job sent, the runner stopped from going on once the job
/// has run twice or ended once, every execution waited for, the workers stopped.
pub(crate) async fn one_trial(
    job: &Job<'_>,
    program: &RunnerProgram,
    env: &[(String, String)],
    dir: &Path,
    broker: &Broker,
    resource: &mut Resource,
) -> Result<RunnerTrial, FaultError> {
    broker.empty().await?;
    let workers = start_pair(program, env, dir).await?;
    let figures = send_and_count(job, program, env, dir, Some(broker), resource).await;
    for w in workers {
        w.stop(Duration::from_secs(5)).await;
    }
    figures
}

/// Two workers, `a` and `b`, started at once; each has said it consumes.
pub(crate) async fn start_pair(
    program: &RunnerProgram,
    env: &[(String, String)],
    dir: &Path,
) -> Result<[RunnerWorker; 2], FaultError> {
    let (a, b) = tokio::join!(
        RunnerWorker::start(program, "a", env, dir),
        RunnerWorker::start(program, "b", env, dir)
    );
    Ok([a?, b?])
}

/// Sends the trial's one job to the running workers and waits for every execution of it to end;
/// with `stop`, the broker is emptied once it has run twice or ended once (Celery's
/// redeliveries go on every timeout for as long as an execution runs).
pub(crate) async fn send_and_count(
    job: &Job<'_>,
    program: &RunnerProgram,
    env: &[(String, String)],
    dir: &Path,
    stop: Option<&Broker>,
    resource: &mut Resource,
) -> Result<RunnerTrial, FaultError> {
    let stderr = dir.join("enqueue.stderr");
    let seconds = format!("{}", job.seconds);
    let sent = program
        .command(&["enqueue", job.trial, &seconds], env, &stderr)?
        .output();
    let sent = tokio::time::timeout(READY, sent)
        .await
        .map_err(|_| {
            FaultError::Runner(format!("{}: enqueue took over {READY:?}", program.library))
        })?
        .map_err(|e| FaultError::Runner(format!("{}: enqueue: {e}", program.library)))?;
    if !sent.status.success() {
        return Err(FaultError::Runner(format!(
            "{}: enqueue exited with {} ({})",
            program.library,
            sent.status,
            last_line(&stderr)
        )));
    }
    let trial = job.trial;
    let deadline = Instant::now() + job.bound;
    let mut stopped = stop.is_none();
    loop {
        let log = resource.trial_log(trial).await?;
        let grants = log.iter().filter(|e| e.event == Event::Grant).count();
        let ends = log.iter().filter(|e| e.event == Event::End).count();
        if !stopped && (grants >= 2 || ends >= 1) {
            if let Some(broker) = stop {
                broker.empty().await?;
            }
            stopped = true;
        }
        if stopped && grants > 0 && ends >= grants {
            // A moment for a delivery already on its way to show.
            tokio::time::sleep(Duration::from_millis(500)).await;
            let log = resource.trial_log(trial).await?;
            let grants = log.iter().filter(|e| e.event == Event::Grant).count();
            let ends = log.iter().filter(|e| e.event == Event::End).count();
            if ends >= grants {
                return Ok(trial_figures(&log));
            }
        }
        if Instant::now() > deadline {
            let said: Vec<String> = ["a", "b"]
                .iter()
                .map(|w| format!("{w}: {}", last_line(&dir.join(format!("{w}.stderr")))))
                .collect();
            return Err(FaultError::Runner(format!(
                "{}: {trial}: {grants} executions started, {ends} ended within {:?} ({})",
                program.library,
                job.bound,
                said.join("; ")
            )));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(worker: &str, event: Event, ms: i64, seq: i64) -> LoggedEvent {
        LoggedEvent {
            seq,
            worker: worker.to_string(),
            event,
            t_ns: ms * 1_000_000,
            token: None,
            fenced_ok: None,
            detail: String::new(),
        }
    }

    #[test]
    fn a_job_started_again_while_it_runs_counts_twice_with_its_overlap_and_stale_writes() {
        let log = vec![
            ev("b#1", Event::Grant, 0, 1),
            ev("b#1", Event::Write, 500, 2),
            ev("a#1", Event::Grant, 2400, 3),
            ev("b#1", Event::Write, 3000, 4),
            ev("b#1", Event::End, 4000, 5),
            ev("a#1", Event::End, 6400, 6),
        ];
        let t = trial_figures(&log);
        assert_eq!(t.executions, 2);
        assert!((t.overlap_s - 1.6).abs() < 1e-9, "{t:?}");
        assert_eq!(t.stale_writes, 1);
        assert!((t.second_start_s.unwrap() - 2.4).abs() < 1e-9);
    }

    #[test]
    fn a_job_run_once_has_no_second_start() {
        let log = vec![
            ev("a#1", Event::Grant, 0, 1),
            ev("a#1", Event::Write, 500, 2),
            ev("a#1", Event::End, 4000, 3),
        ];
        let t = trial_figures(&log);
        assert_eq!(
            (t.executions, t.stale_writes, t.second_start_s),
            (1, 0, None)
        );
        assert_eq!(t.overlap_s, 0.0);
    }

    #[test]
    fn the_recommended_settings_outlast_the_job_and_the_short_ones_do_not() {
        for plan in RunnerPlan::all() {
            let (_, value) = plan.setting();
            assert_eq!(value > JOB, plan.recommended, "{}", plan.label());
        }
        let bullmq = RunnerPlan {
            runner: RunnerKind::Bullmq,
            recommended: true,
            lock: TaskLock::None,
        };
        // 1.5 s, then 3 s (no longer than the 4 s stretch), then 5 s.
        assert_eq!(bullmq.setting().1, Duration::from_secs(5));
        let celery = RunnerPlan {
            runner: RunnerKind::Celery,
            recommended: true,
            lock: TaskLock::None,
        };
        assert_eq!(celery.setting().1, Duration::from_secs(12));
    }

    #[test]
    fn a_task_lock_that_outlives_the_job_skips_the_second_start_and_a_shorter_one_does_not() {
        let plans = RunnerPlan::all();
        assert_eq!(plans.len(), 11);
        for plan in plans {
            let short_lease = plan.task_lock().is_some_and(|l| l < plan.setting().1);
            match plan.lock {
                TaskLock::Outlives => {
                    assert!(plan.task_lock().is_none_or(|l| l > JOB), "{}", plan.label());
                    assert_eq!(
                        (plan.expected_executions(), plan.expected_skipped()),
                        (1, 1)
                    );
                }
                TaskLock::Shorter => {
                    assert!(short_lease, "{}", plan.label());
                    assert_eq!(
                        (plan.expected_executions(), plan.expected_skipped()),
                        (2, 0)
                    );
                }
                TaskLock::None => assert_eq!(plan.expected_skipped(), 0),
            }
        }
    }
}
