//! `lockbench run`: the main job. Each step is this same binary run as a child with `--out` into
//! a staging folder (so each step's output and exit code are exactly what a user running it by
//! hand gets). Once the simulated runtimes and TTLs are in, and again as each later step lands,
//! an interim record (the report of what is measured so far, labelled with what is not) is
//! published into the results folder whole; the final report replaces it at the end, and a run
//! stopped in between keeps the last one.

use std::net::{TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use lockbench_analysis::{MainJobPlan, Replay};
use lockbench_core::BackendId;
use lockbench_core::ClientChoice;
use lockbench_core::records::{Body, read_dir};
use lockbench_core::{ResultsDir, ResultsError};
use lockbench_workloads::WorkloadSpec;

use crate::cli::MainJobArgs;
use crate::exit::Exit;
use crate::failure::Outcome;
use crate::options::MainJobSettings;
use crate::signals::{Interrupted, Stop, StopSignals};

/// How long a step may take to clean up after the signal `run` passed on, before it is killed.
const STEP_GRACE: Duration = Duration::from_secs(60);
/// The main job's plan (its steps as typed values) and what running it needs.
struct Plan {
    job: MainJobPlan,
    config: PathBuf,
    /// Every spec, read once: each may name the TTL it has today and the profile of its incident.
    specs: Vec<WorkloadSpec>,
    staging: PathBuf,
    /// Where the results go (the staging folder is renamed to it at the end).
    out: PathBuf,
    /// The stages the record now in `out` covers, in words, and those it was still waiting for;
    /// `None` before the first.
    published: std::cell::RefCell<Option<(String, Vec<String>)>>,
    /// What the report is made with: `run`'s own name and the alerts' timing.
    report: lockbench_analysis::report::ReportOptions,
    /// True when a spec names a client library, so that the lab runs through it.
    libraries: bool,
    /// True when the config has etcd or ZooKeeper: bench measures them on private clusters too.
    consensus: bool,
    /// The step running now (its title and pid), to pass a signal on to.
    current: std::cell::RefCell<Option<(String, u32)>>,
    /// The signal that stopped the run, once one came.
    stopped: tokio::sync::watch::Sender<Option<Stop>>,
    /// Each step that ran, and how long it took.
    took: std::cell::RefCell<Vec<(String, Duration)>>,
}

impl Plan {
    /// A SIGINT or SIGTERM to `run` itself (from a terminal, a supervisor, `kill PID`) goes on to
    /// the step in flight, which cleans up after itself; no step starts after it. A signal from a
    /// terminal also reaches the step directly: a second one changes nothing.
    fn stop(&self, by: Stop) {
        let first = self.stopped.borrow().is_none();
        if first {
            self.stopped.send_replace(Some(by));
        }
        if let Some((title, pid)) = &*self.current.borrow() {
            if first {
                eprintln!(
                    "\nlockbench: run: {} received; passing it to the step in flight ({title}) and waiting for its cleanup (at most {}s)",
                    by.name(),
                    STEP_GRACE.as_secs()
                );
            }
            if let Some(pid) = rustix::process::Pid::from_raw(*pid as i32) {
                let _ = rustix::process::kill_process(pid, by.signal());
            }
        }
    }

    fn stopped(&self) -> Option<Stop> {
        *self.stopped.borrow()
    }

    /// What a run that ends now leaves in `out`: the last interim record, if one was published.
    fn kept(&self) -> Option<String> {
        self.published.borrow().as_ref().map(|(after, _)| {
            format!(
                "{} keeps the interim record written after {after}",
                self.out.display()
            )
        })
    }

    /// The stages of the main job in order, in words, as an interim record names them; the
    /// libraries' only when a spec names one.
    fn stages(&self) -> Vec<Stage> {
        Stage::ALL
            .into_iter()
            .filter(|s| *s != Stage::Libraries || self.libraries)
            .collect()
    }

    /// Writes the report of what the steps so far measured, labelled as an interim record, and
    /// publishes a copy of the results into `out` whole.
    fn publish(&self, done: Stage) -> Result<()> {
        let stages = self.stages();
        let words: Vec<&str> = stages.iter().map(|s| s.words()).collect();
        let split = stages
            .iter()
            .position(|s| *s == done)
            .map_or(words.len(), |i| i + 1);
        let after = words_list(&words[..split]);
        let interim = lockbench_analysis::report::Interim {
            after: after.clone(),
            pending: words[split..].iter().map(|w| w.to_string()).collect(),
            stopped: None,
        };
        let report = self.staging.join("report");
        if report.exists() {
            std::fs::remove_dir_all(&report)
                .with_context(|| format!("replacing {}", report.display()))?;
        }
        crate::output::write_report_interim(
            std::slice::from_ref(&self.staging),
            ResultsDir::new(&report)?,
            false,
            Some(&interim),
            &self.report,
        )?;
        lockbench_core::publish_copy(&self.staging, &self.out)
            .context("publishing the interim record")?;
        *self.published.borrow_mut() = Some((after.clone(), interim.pending.clone()));
        eprintln!(
            "\nlockbench: run: interim record after {after}: {}",
            self.out.join("report").join("report.html").display()
        );
        Ok(())
    }
}

impl Plan {
    /// Rewrites the interim record kept in `out` to say that `by` stopped the run and which steps
    /// never ran, so that nobody reads it as a run still measuring.
    fn mark_stopped(&self, by: Stop) -> Result<()> {
        let Some((after, pending)) = self.published.borrow().clone() else {
            return Ok(());
        };
        let interim = lockbench_analysis::report::Interim {
            after,
            pending,
            stopped: Some(by.name().to_string()),
        };
        let report = self.out.join("report");
        let fresh = lockbench_core::staging_for(&self.out.join("report-stopped"));
        crate::output::write_report_interim(
            std::slice::from_ref(&self.out),
            ResultsDir::new(&fresh)?,
            false,
            Some(&interim),
            &self.report,
        )?;
        lockbench_core::replace_with(&fresh, &report).context("marking the record stopped")?;
        Ok(())
    }
}

/// The main job's stages, each ending in an interim record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Simulated,
    Bench,
    Faults,
    Libraries,
    Replays,
}

impl Stage {
    const ALL: [Stage; 5] = [
        Stage::Simulated,
        Stage::Bench,
        Stage::Faults,
        Stage::Libraries,
        Stage::Replays,
    ];

    fn words(self) -> &'static str {
        match self {
            Stage::Simulated => "the simulation (runtimes and TTLs)",
            Stage::Bench => "the benchmark of every reachable backend",
            Stage::Faults => "the fault lab",
            Stage::Libraries => "the fault lab through the client libraries",
            Stage::Replays => "the live replays",
        }
    }
}

/// `a`, `a and b`, `a, b and c`.
fn words_list(words: &[&str]) -> String {
    match words {
        [] => String::new(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

pub fn run(args: &MainJobArgs) -> Outcome {
    let MainJobSettings {
        out,
        config,
        specs,
        seed,
        quick,
        alerts,
        consensus,
    } = MainJobSettings::resolve(args, timestamp)?;
    // Refuses an occupied --out before any work (exit 2), as every command does.
    ResultsDir::new(&out)?;
    let staging = staging_dir(&out)?;
    let libraries = specs
        .iter()
        .any(|s| s.answers().decision.and_then(|d| d.client).is_some());
    let plan = Plan {
        job: MainJobPlan::new(quick, seed),
        config,
        specs,
        staging: staging.clone(),
        out: out.clone(),
        published: std::cell::RefCell::new(None),
        libraries,
        consensus,
        current: std::cell::RefCell::new(None),
        stopped: tokio::sync::watch::Sender::new(None),
        took: std::cell::RefCell::new(Vec::new()),
        report: lockbench_analysis::report::ReportOptions {
            alerts,
            made_by: Some(if quick {
                "lockbench run --quick".to_string()
            } else {
                "lockbench run".to_string()
            }),
        },
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let outcome = runtime.block_on(async {
        let mut signals = StopSignals::listen()?;
        let work = steps(&plan);
        tokio::pin!(work);
        loop {
            tokio::select! {
                r = &mut work => break r,
                by = signals.recv() => plan.stop(by),
            }
        }
    });
    match outcome {
        Ok(skipped) => {
            // The last interim record's report gives way to the final one.
            let report = staging.join("report");
            if report.exists() {
                std::fs::remove_dir_all(&report)
                    .with_context(|| format!("replacing {}", report.display()))?;
            }
            crate::output::write_report(
                std::slice::from_ref(&staging),
                ResultsDir::new(&staging.join("report"))?,
                false,
                &plan.report,
            )
            .inspect_err(|_| {
                let _ = std::fs::remove_dir_all(&staging);
            })?;
            lockbench_core::replace_with(&staging, &out)
                .context("moving the results into place")?;
            eprintln!("\nlockbench: run: step times on this machine:");
            for (title, took) in plan.took.borrow().iter() {
                eprintln!("  {:>8}  {title}", lockbench_core::format_readable(*took));
            }
            eprintln!();
            for line in &skipped {
                eprintln!("lockbench: run: skipped {line}");
            }
            eprintln!(
                "lockbench: run: done; the report is {}",
                out.join("report").join("report.html").display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&staging);
            if let Some(stopped) = e.downcast_ref::<Interrupted>()
                && let Err(why) = plan.mark_stopped(stopped.by)
            {
                eprintln!("lockbench: run: could not mark the kept record stopped: {why:#}");
            }
            if e.downcast_ref::<Interrupted>().is_none()
                && let Some(kept) = plan.kept()
            {
                eprintln!("lockbench: run: {kept}");
            }
            Err(e.into())
        }
    }
}

/// `20261201-081755`: the default folder name's timestamp, UTC, from humantime's RFC 3339 form.
fn timestamp() -> String {
    let rfc3339 = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let digits: String = rfc3339.chars().filter(char::is_ascii_digit).collect();
    format!("{}-{}", &digits[..8], &digits[8..14])
}

/// A hidden sibling of `out` where the steps write, moved into place at the end (the one a
/// results directory is staged in). Staging folders beside it of runs that are gone (killed
/// outright) are removed first.
fn staging_dir(out: &Path) -> Result<PathBuf> {
    let staging = lockbench_core::staging_for(out);
    if let Some(parent) = staging.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|cause| ResultsError::Io {
                path: parent.to_path_buf(),
                cause,
            })
            .context("creating the results folder")?;
    }
    for stale in lockbench_core::remove_stale_staging(out) {
        eprintln!(
            "lockbench: run: removed {}, the staging folder of a run that is no longer running",
            stale.display()
        );
    }
    if staging.exists() {
        std::fs::remove_dir_all(&staging).ok();
    }
    std::fs::create_dir(&staging).with_context(|| format!("creating {}", staging.display()))?;
    // An empty target folder given by the user is replaced by the finished one.
    if out.is_dir() {
        std::fs::remove_dir(out).ok();
    }
    Ok(staging)
}

/// Runs this binary with `args`; returns its exit code, or the interruption when a signal stopped
/// the run (before the step, or while it ran: it then had [`STEP_GRACE`] to clean up).
async fn step(plan: &Plan, title: &str, args: &[String]) -> Result<Exit> {
    let interrupted = |by: Stop, what: &str| -> anyhow::Error {
        Interrupted {
            by,
            what: match plan.kept() {
                Some(kept) => format!("{what}; removed the staging folder; {kept}"),
                None => format!("{what}; removed the staging folder, no results written"),
            },
        }
        .into()
    };
    if let Some(by) = plan.stopped() {
        return Err(interrupted(by, "stopped before the next step"));
    }
    eprintln!("\n== {title}");
    let started = std::time::Instant::now();
    // Every step runs the binary this run started from: `/proc/self/exe` is read in the forked
    // child before it executes, so it names this binary's file even when a build has replaced
    // the one at its path since (the path `current_exe` gives then ends in "(deleted)").
    let mut command = tokio::process::Command::new("/proc/self/exe");
    command.arg0("lockbench");
    // The main job is one whole run, even inside a Job or an array that splits others.
    for name in crate::options::shard::ENGINE_VARIABLES {
        command.env_remove(name);
    }
    // A `run` killed outright (SIGKILL, after a supervisor's grace period) still stops its step
    // the way a SIGTERM does: the kernel sends it one.
    let mut child =
        lockbench_faults::with_parent_death_signal(&mut command, rustix::process::Signal::TERM)
            .args(args)
            .env(crate::output::STAGED, "1")
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("running lockbench {}", args.join(" ")))?;
    let name = args.first().cloned().unwrap_or_default();
    *plan.current.borrow_mut() = child.id().map(|pid| (name.clone(), pid));
    let mut stopped = plan.stopped.subscribe();
    let grace_over = async {
        let _ = stopped.wait_for(Option::is_some).await;
        tokio::time::sleep(STEP_GRACE).await;
    };
    let status = tokio::select! {
        status = child.wait() => status,
        () = grace_over => {
            eprintln!("lockbench: run: {name} did not stop within {}s; killing it", STEP_GRACE.as_secs());
            let _ = child.start_kill();
            child.wait().await
        }
    }
    .with_context(|| format!("waiting for lockbench {name}"));
    *plan.current.borrow_mut() = None;
    let took = started.elapsed();
    eprintln!("== {name}: {}", lockbench_core::format_readable(took));
    plan.took.borrow_mut().push((title.to_string(), took));
    if let Some(by) = plan.stopped() {
        return Err(interrupted(
            by,
            &format!("{name} stopped and cleaned up after itself"),
        ));
    }
    Ok(Exit::of(status?.code()))
}

fn spec_name(spec: &WorkloadSpec) -> String {
    spec.path
        .file_stem()
        .map_or("spec".into(), |s| s.to_string_lossy().into_owned())
}

/// Every step; returns what was skipped, one line each.
async fn steps(plan: &Plan) -> Result<Vec<String>> {
    let mut skipped = Vec::new();
    let job = &plan.job;
    let out = |name: &str| plan.staging.join(name);
    let specs: Vec<&Path> = plan.specs.iter().map(|s| s.path.as_path()).collect();

    let args = job.simulate_args(&specs, &out("simulate"));
    let code = step(plan, "runtimes of every profile at today's volume", &args).await?;
    if code != Exit::Ok {
        anyhow::bail!("simulate failed ({code}); see above");
    }

    for spec in &plan.specs {
        let name = spec_name(spec);
        let args = job.ttl_args(
            &spec.path,
            spec.workload.current_ttl,
            &out(&format!("ttl-{name}")),
        );
        let code = step(plan, &format!("TTL for {name} at its target volume"), &args).await?;
        if code != Exit::Ok {
            anyhow::bail!("ttl {name} failed ({code}); see above");
        }
    }
    plan.publish(Stage::Simulated)?;

    let args = job.bench_args(&plan.config, &out("bench"), plan.consensus);
    let code = step(
        plan,
        "acquisition latency of every reachable backend",
        &args,
    )
    .await?;
    // Partial: some backend could not be measured; the rest were, and the record says which.
    if code != Exit::Ok && code != Exit::Partial {
        anyhow::bail!("bench failed ({code}); see above");
    }
    let bench = match read_dir(&plan.staging.join("bench"))
        .context("reading the benchmark's results back")?
        .body
    {
        Body::Bench { record, .. } => record,
        _ => anyhow::bail!("the bench step wrote no bench record"),
    };
    for failed in &bench.failed {
        skipped.push(format!("backend {}: {}", failed.backend, failed.error));
    }
    // The configured backends the benchmark timed at least one acquisition of (not the private
    // clusters it started and stopped).
    let measured: Vec<BackendId> = bench
        .results
        .iter()
        .filter(|r| r.ops > 0 && !r.backend.cluster)
        .map(|r| r.backend)
        .collect();
    plan.publish(Stage::Bench)?;
    faults_of(plan, &measured, &mut skipped).await?;
    plan.publish(Stage::Faults)?;
    if plan.libraries {
        libraries_of(plan, &measured, &mut skipped).await?;
        plan.publish(Stage::Libraries)?;
    }

    let incidents: Vec<&WorkloadSpec> = plan
        .specs
        .iter()
        .filter(|s| s.workload.incident_profile.is_some())
        .collect();
    let database = lockbench_locks::replay_database(
        &std::fs::read_to_string(&plan.config).unwrap_or_default(),
    )
    .ok()
    .flatten();
    match (incidents.is_empty(), database) {
        (true, _) => skipped
            .push("the live replay: no spec in the specs folder names an incident_profile".into()),
        (_, None) => skipped.push(format!(
            "the live replay: {} names no Postgres ([replay] database)",
            plan.config.display()
        )),
        (false, Some(url)) => {
            let target = host_port(&url);
            if !reachable(&target) {
                let line = format!(
                    "the live replay: Postgres at {target} is not reachable; start the local servers with scripts/services.sh up"
                );
                eprintln!("\nlockbench: run: {line}");
                skipped.push(line);
            } else {
                // What the record will decide from what was measured so far: each job's
                // incident is also replayed on its decided backend.
                let evidence =
                    lockbench_analysis::report::load(std::slice::from_ref(&plan.staging))
                        .map(|e| e.for_decision())
                        .unwrap_or_default();
                for spec in incidents {
                    let decided = lockbench_decision::decide(&spec.answers(), &evidence);
                    match spec.workload.current_ttl {
                        Some(ttl) => replays_of(plan, spec, ttl, &measured, &decided).await?,
                        None => skipped.push(format!(
                            "the live replay of {}: it names an incident_profile but no current_ttl to replay it with",
                            spec.path.display()
                        )),
                    }
                }
            }
        }
    }
    Ok(skipped)
}

/// A short fault matrix on every networked backend the benchmark reached (its cells are the
/// plan's); it needs Postgres for its protected resource.
async fn faults_of(plan: &Plan, measured: &[BackendId], skipped: &mut Vec<String>) -> Result<()> {
    let Some(backends) = plan.job.fault_backends(measured) else {
        skipped.push("the fault lab: it needs the configured Postgres (pg-session) for its protected resource, and the benchmark did not reach it".to_string());
        return Ok(());
    };
    let args = plan
        .job
        .faults_args(&plan.config, &backends, &plan.staging.join("faults"));
    let code = step(plan,
        "what each backend cannot prevent: pauses, restarts, clock jumps, pool leaks, partitions, crashes, failovers, outages, late releases, slow jobs, slow replies, a cluster's leader or primary lost",
        &args,
    )
    .await?;
    // Partial: some cell could not run; the record says which and why.
    if code != Exit::Ok && code != Exit::Partial {
        anyhow::bail!("faults failed ({code}); see above");
    }
    Ok(())
}

/// The fault lab through each client library a spec names (`[decision] client`), on its
/// backend: the library's cells are what the record judges it by. Then through the shipped
/// library a decision moves a fenced job to, when it chooses a backend the named library does
/// not lock on: the record then says what that candidate did.
async fn libraries_of(
    plan: &Plan,
    measured: &[BackendId],
    skipped: &mut Vec<String>,
) -> Result<()> {
    let mut clients: Vec<lockbench_core::Client> = Vec::new();
    for spec in &plan.specs {
        match spec.answers().decision.and_then(|d| d.client) {
            Some(ClientChoice::Shipped(c)) if !clients.contains(&c) => clients.push(c),
            // The backend it locks on is the team's to name; its record says how to measure it.
            Some(own @ ClientChoice::Own(_)) => {
                let line = format!(
                    "the fault lab through the team's own adapter {path}: it runs once you name the backend it locks on; run `lockbench faults --client {path} --backend NAME --out RESULTS/faults-{name}` into this run's results folder, then `lockbench report RESULTS`",
                    path = own.argument(),
                    name = own.name()
                );
                if !skipped.contains(&line) {
                    skipped.push(line);
                }
            }
            _ => {}
        }
    }
    if !clients.is_empty() && plan.job.fault_backends(measured).is_none() {
        skipped.push("the fault lab through the client libraries: it needs the configured Postgres (pg-session) for its protected resource, and the benchmark did not reach it".to_string());
        return Ok(());
    }
    for &client in &clients {
        let title = format!(
            "what {} does under a pause, through its adapter on {}",
            client.library(),
            client.backend()
        );
        library_lab(plan, client, &title, measured, skipped).await?;
    }
    if clients.is_empty() {
        return Ok(());
    }
    // What the record decides from the libraries' cells: a fenced job moved off its library's
    // backend needs a new client, and the shipped one that hands out the token is measured.
    let evidence = lockbench_analysis::report::load(std::slice::from_ref(&plan.staging))
        .map(|e| e.for_decision())
        .unwrap_or_default();
    let mut candidates: Vec<(lockbench_core::Client, String)> = Vec::new();
    for spec in &plan.specs {
        let answers = spec.answers();
        let decided = lockbench_decision::decide(&answers, &evidence);
        for c in lockbench_decision::replacement_clients(&answers, &decided, &evidence) {
            if !clients.contains(&c) && !candidates.iter().any(|(seen, _)| *seen == c) {
                candidates.push((c, answers.job.clone()));
            }
        }
    }
    for (client, job) in candidates {
        let title = format!(
            "what {} does under a pause, through its adapter on {} (the {job} job's decision moves it there)",
            client.library(),
            client.backend()
        );
        library_lab(plan, client, &title, measured, skipped).await?;
    }
    Ok(())
}

/// The lab through `client` on its backend, into `faults-CLIENT`, when its backend was reached
/// and its library is installed; otherwise a line in `skipped`.
async fn library_lab(
    plan: &Plan,
    client: lockbench_core::Client,
    title: &str,
    measured: &[BackendId],
    skipped: &mut Vec<String>,
) -> Result<()> {
    let backend = client.backend();
    if !measured.contains(&BackendId::of(backend)) {
        skipped.push(format!(
            "the fault lab through {client}: the benchmark did not reach {backend}"
        ));
        return Ok(());
    }
    if !lockbench_clients::programs::installed(client) {
        skipped.push(format!(
            "the fault lab through {client}: its library is not installed; install it with scripts/clients.sh up"
        ));
        return Ok(());
    }
    let out = plan.staging.join(format!("faults-{client}"));
    let args = plan.job.library_args(&plan.config, client, &out);
    let code = step(plan, title, &args).await?;
    if code != Exit::Ok && code != Exit::Partial {
        anyhow::bail!("faults through {client} failed ({code}); see above");
    }
    Ok(())
}

/// A spec's incident live with the TTL it has today (scaled with the replayed volume), then each
/// defence, on the first networked backend measured; then once on the job's decided backend, held
/// as the decision holds it, where that is another measured backend.
async fn replays_of(
    plan: &Plan,
    spec: &WorkloadSpec,
    current_ttl: Duration,
    measured: &[BackendId],
    decided: &lockbench_decision::Decision,
) -> Result<()> {
    let job = &plan.job;
    let backend = job.replay_backend(measured);
    let profile = spec
        .workload
        .incident_profile
        .as_deref()
        .unwrap_or("baseline");
    let name = spec_name(spec);
    let replay = Replay {
        spec: &spec.path,
        profile,
        current_ttl,
        config: &plan.config,
    };
    for &mode in &job.replays.modes {
        let mode_name = mode.name();
        let out = plan.staging.join(format!("replay-{name}-{mode_name}"));
        let args = job.replay_args(replay, backend, mode, &out);
        let code = step(
            plan,
            &format!("live replay of the {name} incident ({profile}) on {backend}: {mode_name}"),
            &args,
        )
        .await?;
        if code != Exit::Ok {
            anyhow::bail!("replay of {name} ({mode_name}) failed ({code}); see above");
        }
    }
    let Some((chosen, mode)) = job.decided_replay(decided, backend, measured) else {
        return Ok(());
    };
    let out = plan.staging.join(format!("replay-{name}-decided"));
    let args = job.replay_args(replay, chosen, mode, &out);
    let code = step(
        plan,
        &format!(
            "live replay of the {name} incident ({profile}) on its decided backend, {chosen} ({})",
            decided.lock_model.kind.name()
        ),
        &args,
    )
    .await?;
    if code != Exit::Ok {
        anyhow::bail!("replay of {name} on {chosen} failed ({code}); see above");
    }
    Ok(())
}

/// `host:port` of a Postgres URL (default port 5432).
fn host_port(database: &str) -> String {
    match url::Url::parse(database) {
        Ok(u) => format!(
            "{}:{}",
            u.host_str().unwrap_or("localhost"),
            u.port().unwrap_or(5432)
        ),
        // A key=value connection string: sqlx reads it, the reachability probe does not.
        Err(_) => database.to_string(),
    }
}

fn reachable(target: &str) -> bool {
    target
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .is_some_and(|addr| TcpStream::connect_timeout(&addr, Duration::from_secs(2)).is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postgres_urls_give_host_and_port() {
        assert_eq!(
            host_port("postgres://postgres@127.0.0.1:5442/postgres"),
            "127.0.0.1:5442"
        );
        assert_eq!(
            host_port("postgres://u:p@db.example/x?sslmode=require"),
            "db.example:5432"
        );
    }

    #[test]
    fn timestamps_are_utc_digits() {
        let t = timestamp();
        assert_eq!(t.len(), 15, "{t}");
        assert_eq!(&t[8..9], "-");
        assert!(t.starts_with("20"), "{t}");
    }
}
