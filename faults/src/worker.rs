//! One worker of a trial, in its own process (`lockbench fault-worker`, the plan on stdin), so
//! that a pause stops it whole, heartbeat and client threads included, as a real GC pause does.
//!
//! It connects, says so, acquires the lock within its wait, logs its grant to the protected
//! resource with its fencing token, runs its job (a fixed number of writes at a fixed interval),
//! and logs how the job ended. It tells the lab what it is doing by the messages of `protocol`
//! on stdout: connected, granted, wrote after each write (and its check), then done; or timed
//! out. The lab stops a holder just after a `wrote`, so the stop falls in the sleep before the
//! next write, never between a write and its check.

use lockbench_core::records::faults::JobEnd;
use std::sync::Arc;
use std::time::Duration;

use lockbench_locks::{Heartbeat, HeartbeatPolicy, Lease, LockBackend};

use crate::FaultError;
use crate::plan::{AnyPlan, LeaseTracking, OnFailure, WorkerPlan, WriterPlan};
use crate::protocol::{Go, Message, say};
use crate::resource::{Event, Resource};

/// Releases, trying again after an error: a client's first request after a server restart fails
/// on the old connection and reconnects.
async fn release(backend: &dyn LockBackend, lease: &lockbench_locks::Lease) -> JobEnd {
    for _ in 0..3 {
        match backend.release(lease).await {
            Ok(true) => return JobEnd::Released,
            Ok(false) => return JobEnd::LostAtRelease,
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
    JobEnd::ReleaseFailed
}

/// The release of a lease whose job ended: the worker first stops itself where its plan says
/// (the lab continues it), then releases with the client's own release or, as the plan's
/// positive control, a plain delete of the key.
async fn release_after_job(
    plan: &WorkerPlan,
    backend: &dyn LockBackend,
    lease: &Lease,
) -> Result<JobEnd, FaultError> {
    if plan.stop_before_release {
        say(&Message::Releasing);
        // The whole group, as the lab's pause does: the worker and its library's adapter.
        rustix::process::kill_current_process_group(rustix::process::Signal::STOP)
            .map_err(|e| FaultError::Worker(format!("stopping itself before the release: {e}")))?;
    }
    if !plan.plain_delete {
        return Ok(release(backend, lease).await);
    }
    match backend.delete_unchecked(lease).await {
        Some(Ok(true)) => Ok(JobEnd::Deleted),
        Some(Ok(false)) => Ok(JobEnd::DeletedNothing),
        Some(Err(_)) => Ok(JobEnd::ReleaseFailed),
        None => Err(FaultError::Worker(format!(
            "{} has no plain delete of a lock",
            plan.backend.kind
        ))),
    }
}

/// Waits for the lab's `go <wait_ms>` on stdin (the plan came before it, on its own line).
async fn go() -> Result<Duration, FaultError> {
    use tokio::io::AsyncBufReadExt as _;
    let mut line = String::new();
    tokio::io::BufReader::new(tokio::io::stdin())
        .read_line(&mut line)
        .await
        .map_err(|e| FaultError::Worker(format!("reading the lab's go: {e}")))?;
    line.parse::<Go>().map(|go| go.wait).map_err(|_| {
        FaultError::Worker(format!(
            "expected \"go <wait_ms>\" from the lab, got {line:?}"
        ))
    })
}

/// Runs whichever worker `plan` asks for.
pub async fn run(plan: AnyPlan) -> Result<(), FaultError> {
    match plan {
        AnyPlan::Lock(plan) => run_worker(*plan).await,
        AnyPlan::Pool(plan) => crate::pool::run_pool(plan).await,
        AnyPlan::Writer(plan) => run_writer(plan).await,
    }
}

/// True while the process `pid` exists.
fn alive(pid: u32) -> bool {
    rustix::process::Pid::from_raw(pid as i32)
        .is_some_and(|p| rustix::process::test_kill_process(p).is_ok())
}

/// A job process: its writes, then its end, unless the lab is gone first. It does not die with
/// the worker that started it (that is the failure it stands for); it dies with the lab.
async fn run_writer(plan: WriterPlan) -> Result<(), FaultError> {
    let mut resource = Resource::connect(
        &plan.resource_url,
        &plan.resource_schema,
        Duration::from_secs(5),
    )
    .await?;
    let every = Duration::from_millis(plan.write_every_ms);
    for _ in 0..plan.writes {
        tokio::time::sleep(every).await;
        if !alive(plan.lab) {
            break;
        }
        resource
            .write(&plan.trial, plan.worker.word(), Event::Write, plan.token)
            .await?;
    }
    let ended = crate::clock::monotonic_ns();
    resource
        .end_at(
            &plan.trial,
            plan.worker.word(),
            JobEnd::JobProcessEnded,
            ended,
        )
        .await?;
    resource.close().await;
    Ok(())
}

/// Starts the job process of `plan` (this binary's `fault-worker` with a [`WriterPlan`]) and
/// waits for it. The job lasts three lock lifetimes (`lease_ttl`), so that a lock freed when its
/// holder dies, at once or at the end of its TTL, is freed while the job still writes.
async fn run_detached(
    plan: &WorkerPlan,
    token: Option<u64>,
    lease_ttl: Duration,
) -> Result<(), FaultError> {
    let exe = std::env::current_exe()
        .map_err(|e| FaultError::Worker(format!("finding the lockbench binary: {e}")))?;
    let lab = std::os::unix::process::parent_id();
    let writer = AnyPlan::Writer(WriterPlan {
        trial: plan.trial.clone(),
        worker: plan.worker,
        resource_url: plan.resource_url.clone(),
        resource_schema: plan.resource_schema.clone(),
        token,
        writes: plan.writes,
        write_every_ms: plan
            .write_every_ms
            .max((lease_ttl * 3 / plan.writes.max(1)).as_millis() as u64),
        lab,
    });
    let mut child = tokio::process::Command::new(exe)
        // A group of its own: a kill of the worker's group (the worker and its adapter) leaves
        // the job running, which is the failure it stands for.
        .process_group(0)
        .arg("fault-worker")
        .arg("--lab")
        .arg(lab.to_string())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| FaultError::Worker(format!("starting the job process: {e}")))?;
    let mut stdin = child.stdin.take().expect("stdin is piped");
    crate::process::send_plan(&mut stdin, &writer)
        .await
        .map_err(|e| FaultError::Worker(format!("sending the job process its plan: {e}")))?;
    drop(stdin);
    let status = child
        .wait()
        .await
        .map_err(|e| FaultError::Worker(format!("waiting for the job process: {e}")))?;
    if status.success() {
        Ok(())
    } else {
        Err(FaultError::Worker(format!(
            "the job process failed ({status})"
        )))
    }
}

/// The worker's acquisition within its wait: `Some(lease)` once granted (`Some(None)` for a
/// worker that runs without the lock after a failure), `None` when it said it timed out or
/// skipped.
async fn acquire(
    plan: &WorkerPlan,
    backend: &dyn LockBackend,
    ttl: Duration,
    deadline: tokio::time::Instant,
    job: Duration,
) -> Result<Option<Option<Lease>>, FaultError> {
    let lease = loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let asked = std::time::Instant::now();
        // The validity left: what the client says, and never more than the TTL less the time
        // the acquisition itself took (the server started the TTL before its reply came back).
        let validity = |lease: &Lease| lease.ttl.min(ttl.saturating_sub(asked.elapsed()));
        match backend.acquire(&plan.key, ttl, left).await {
            Ok(Some(lease))
                if plan.tracking == LeaseTracking::ValidityFirst && validity(&lease) < job =>
            {
                // Too little left to finish within it: give it back and try again, while the
                // wait lasts.
                let _ = backend.release(&lease).await;
                if left.is_zero() {
                    say(&Message::TimedOut { skipped: false });
                    return Ok(None);
                }
            }
            Ok(Some(lease)) => break Some(lease),
            Ok(None) => {
                say(&Message::TimedOut { skipped: false });
                return Ok(None);
            }
            Err(_) if plan.on_failure == OnFailure::Skip => {
                say(&Message::TimedOut { skipped: true });
                return Ok(None);
            }
            Err(_) if plan.on_failure == OnFailure::RunUnlocked => break None,
            // A server restarting: try again until the wait is over.
            Err(_) if !left.is_zero() => tokio::time::sleep(Duration::from_millis(20)).await,
            Err(e) => return Err(e.into()),
        }
    };
    Ok(Some(lease))
}

/// The job: its writes at their pace (or, detached, a job process of its own), checking the lease
/// as the plan's tracking says; how it stopped early (gave up, lost), if it did.
async fn work(
    plan: &WorkerPlan,
    backend: &dyn LockBackend,
    resource: &mut Resource,
    lease: Option<&Lease>,
    heartbeat: Option<&Heartbeat>,
) -> Result<Option<JobEnd>, FaultError> {
    let every = Duration::from_millis(plan.write_every_ms);
    let ttl = Duration::from_millis(plan.ttl_ms);
    let fencing = lease.and_then(|l| l.fencing);
    let mut how = None;
    if plan.detached {
        // The job writes from a process of its own; this one holds the lock and waits for it.
        run_detached(plan, fencing, lease.map_or(ttl, |l| l.ttl)).await?;
    } else {
        for n in 1..=plan.writes {
            tokio::time::sleep(every).await;
            if let Some(h) = heartbeat
                && plan.tracking == LeaseTracking::Heartbeat
                && !h.may_continue()
            {
                how = Some(JobEnd::GaveUp);
                break;
            }
            resource
                .write(&plan.trial, plan.worker.word(), Event::Write, fencing)
                .await?;
            if let Some(lease) = lease
                && plan.tracking == LeaseTracking::AfterEachWrite
                && !matches!(backend.renew(lease, lease.ttl).await, Ok(true))
            {
                how = Some(JobEnd::Lost);
                break;
            }
            say(&Message::Wrote { n });
        }
    }
    Ok(how)
}

/// When and how the library first told the worker its lock on `key` was lost: a `lost` event it
/// pushed, or its first definite "no" to a renewal, a `held` or the release (an error or a
/// timeout is not a telling), at the library's own stamp, whichever came first.
fn told(adapter: &lockbench_clients::AdapterLock, key: &str) -> Option<(i64, String)> {
    let event = adapter
        .events()
        .into_iter()
        .filter(|e| e.kind == lockbench_clients::EventKind::Lost && e.key == key)
        .min_by_key(|e| e.t_ns)
        .map(|e| {
            let said = e.said.unwrap_or_default();
            (e.t_ns, format!("event: {said}"))
        });
    let answer = adapter
        .first_refusal()
        .map(|(t, op)| (t, format!("answer: {op} refused")));
    [event, answer]
        .into_iter()
        .flatten()
        .min_by_key(|(t, _)| *t)
}

/// The worker's lock client: the library's adapter when the plan names one (a child of this
/// process), else lockbench's own client.
async fn lock_client(
    plan: &WorkerPlan,
    config: &lockbench_locks::BackendConfig,
) -> Result<
    (
        Option<Arc<lockbench_clients::AdapterLock>>,
        Arc<dyn LockBackend>,
    ),
    FaultError,
> {
    let adapter = match &plan.adapter {
        Some(program) => Some(Arc::new(
            lockbench_clients::AdapterLock::start(program, config)
                .await
                .map_err(|e| FaultError::Worker(e.to_string()))?,
        )),
        None => None,
    };
    let backend: Arc<dyn LockBackend> = match &adapter {
        Some(adapter) => adapter.clone(),
        None => Arc::from(lockbench_locks::connect(config).await?),
    };
    Ok((adapter, backend))
}

/// A heartbeat renewing `lease` where the plan's tracking has one.
fn heartbeat(
    plan: &WorkerPlan,
    backend: &Arc<dyn LockBackend>,
    lease: Option<&Lease>,
) -> Option<Heartbeat> {
    lease
        .filter(|_| {
            matches!(
                plan.tracking,
                LeaseTracking::Heartbeat | LeaseTracking::HeartbeatUnchecked
            )
        })
        .map(|lease| {
            Heartbeat::spawn(
                backend.clone(),
                lease.clone(),
                HeartbeatPolicy::for_lease(lease.ttl),
            )
        })
}

/// Runs the worker to the end of its job. Errors are the lab's to report; the lease, if any, goes
/// with the process.
pub async fn run_worker(plan: WorkerPlan) -> Result<(), FaultError> {
    let config = plan.backend.config()?;
    let mut resource = Resource::connect(
        &plan.resource_url,
        &plan.resource_schema,
        config.connect_timeout,
    )
    .await?;
    let (adapter, backend) = lock_client(&plan, &config).await?;
    say(&Message::Connected);
    let wait = if plan.wait_for_go {
        go().await?
    } else {
        Duration::from_millis(plan.wait_ms)
    };
    let ttl = Duration::from_millis(plan.ttl_ms);
    let deadline = tokio::time::Instant::now() + wait;
    let job = Duration::from_millis(plan.write_every_ms) * plan.writes;
    let Some(lease) = acquire(&plan, backend.as_ref(), ttl, deadline, job).await? else {
        return Ok(());
    };
    // Without a lease (`run-unlocked`) the job logs its grant without a token and runs the same
    // writes, with nothing to renew or release.
    let fencing = lease.as_ref().and_then(|l| l.fencing);
    resource
        .write(&plan.trial, plan.worker.word(), Event::Grant, fencing)
        .await?;
    say(&Message::Granted {
        ttl: lease.as_ref().map_or(Duration::ZERO, |l| l.ttl),
        token: fencing,
    });
    let heartbeat = heartbeat(&plan, &backend, lease.as_ref());
    let how = work(
        &plan,
        backend.as_ref(),
        &mut resource,
        lease.as_ref(),
        heartbeat.as_ref(),
    )
    .await?;
    if let Some(h) = heartbeat {
        h.stop();
    }
    // The critical section ends when the job decides to release, before the release reaches
    // the server: a contender granted by the release must not seem to overlap it.
    let ended = crate::clock::monotonic_ns();
    let how = match (how, &lease) {
        (Some(how), _) => how,
        (None, Some(lease)) => release_after_job(&plan, backend.as_ref(), lease).await?,
        (None, None) => JobEnd::RanUnlocked,
    };
    resource
        .end_at(&plan.trial, plan.worker.word(), how, ended)
        .await?;
    if let Some(adapter) = &adapter
        && let Some((t_ns, detail)) = told(adapter, &plan.key)
    {
        resource
            .told_at(&plan.trial, plan.worker.word(), &detail, t_ns)
            .await?;
    }
    say(&Message::Done { how });
    let _ = backend.close().await;
    resource.close().await;
    Ok(())
}
