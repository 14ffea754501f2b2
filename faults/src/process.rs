//! Processes the lab starts: workers and private servers. Each is a child of the lab, killed by
//! pid when its handle is dropped (on success, on error and when a Ctrl-C drops the run).

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use rustix::process::{Pid, Signal, kill_process_group};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdout, Command};

use crate::FaultError;
use crate::plan::AnyPlan;
use crate::protocol::{Go, Message};

/// Makes a process the lab starts die with it: SIGKILL from the kernel when the lab's thread that
/// started it ends, whatever ends it (a SIGKILL of the lab included).
pub(crate) fn dies_with_the_lab(command: &mut Command) -> &mut Command {
    with_parent_death_signal(command, Signal::KILL)
}

/// Has the kernel send `signal` to the process `command` starts when the thread that started it
/// ends, whatever ends it (a SIGKILL included), set between fork and exec so that no window is
/// left; a parent already gone by then means the process does not start.
pub fn with_parent_death_signal(command: &mut Command, signal: Signal) -> &mut Command {
    let parent = rustix::process::getpid();
    // SAFETY: between fork and exec the closure makes two system calls (prctl, getppid), which
    // allocate nothing and take no lock.
    unsafe {
        command.pre_exec(move || {
            rustix::process::set_parent_process_death_signal(Some(signal))?;
            if rustix::process::getppid() != Some(parent) {
                return Err(std::io::Error::other("its parent is gone"));
            }
            Ok(())
        })
    }
}

/// Sends a worker process its plan: one line of JSON on its stdin.
pub(crate) async fn send_plan(
    stdin: &mut tokio::process::ChildStdin,
    plan: &AnyPlan,
) -> std::io::Result<()> {
    let mut json = serde_json::to_vec(plan).expect("a plan serialises");
    json.push(b'\n');
    stdin.write_all(&json).await
}

/// A worker process.
pub struct WorkerProcess {
    name: String,
    child: Child,
    /// Open after the plan, for the `go` line.
    stdin: Option<tokio::process::ChildStdin>,
    lines: tokio::io::Lines<BufReader<ChildStdout>>,
}

impl WorkerProcess {
    /// Starts `exe fault-worker --lab PID` with `plan` on its stdin (PID: this process, so that a
    /// process list tells whose worker it is).
    pub async fn spawn(exe: &Path, name: &str, plan: &AnyPlan) -> Result<Self, FaultError> {
        Self::spawn_in(&[], exe, name, plan).await
    }

    /// [`WorkerProcess::spawn`] behind `prefix` (`ip netns exec NAME`: inside a namespace; `ip`
    /// execs the worker, so the process is still the lab's child).
    pub async fn spawn_in(
        prefix: &[String],
        exe: &Path,
        name: &str,
        plan: &AnyPlan,
    ) -> Result<Self, FaultError> {
        let name = name.to_string();
        let mut command = match prefix.split_first() {
            Some((program, args)) => {
                let mut c = Command::new(program);
                c.args(args).arg(exe);
                c
            }
            None => Command::new(exe),
        };
        let mut child = dies_with_the_lab(&mut command)
            .arg("fault-worker")
            .arg("--lab")
            .arg(std::process::id().to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // A process group of its own, which a pause or a kill signals whole: a client
            // library's adapter, the worker's child, stops and dies with it.
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| FaultError::Worker(format!("starting {}: {e}", exe.display())))?;
        let mut stdin = child.stdin.take().expect("stdin is piped");
        send_plan(&mut stdin, plan)
            .await
            .map_err(|e| FaultError::Worker(format!("{name}: sending its plan: {e}")))?;
        let stdout = child.stdout.take().expect("stdout is piped");
        Ok(WorkerProcess {
            name,
            child,
            stdin: Some(stdin),
            lines: BufReader::new(stdout).lines(),
        })
    }

    /// Tells a worker that waits for it to go on, waiting at most `wait` for the lock.
    pub async fn go(&mut self, wait: Duration) -> Result<(), FaultError> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| FaultError::Worker(format!("{}: told to go twice", self.name)))?;
        stdin
            .write_all(format!("{}\n", Go { wait }).as_bytes())
            .await
            .and(stdin.flush().await)
            .map_err(|e| FaultError::Worker(format!("{}: telling it to go: {e}", self.name)))?;
        self.stdin = None;
        Ok(())
    }

    /// The worker's process id.
    pub fn pid(&self) -> Option<Pid> {
        self.child.id().and_then(|id| Pid::from_raw(id as i32))
    }

    /// The next message the worker says, within `timeout`; a line outside the protocol is an
    /// error naming it.
    async fn next_message(&mut self, timeout: Duration) -> Result<Message, FaultError> {
        let line = match tokio::time::timeout(timeout, self.lines.next_line()).await {
            Ok(Ok(Some(line))) => line,
            Ok(Ok(None)) => return Err(self.failure("exited before saying what it did").await),
            Ok(Err(e)) => return Err(FaultError::Worker(format!("{}: {e}", self.name))),
            Err(_) => {
                return Err(FaultError::Worker(format!(
                    "{}: said nothing within {timeout:?}",
                    self.name
                )));
            }
        };
        line.parse()
            .map_err(|e| FaultError::Worker(format!("{}: {e}", self.name)))
    }

    /// The next message other than the progress a worker says after each write
    /// ([`Message::Wrote`]), within `timeout`.
    pub async fn next_step(&mut self, timeout: Duration) -> Result<Message, FaultError> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let message = self.next_message(left).await?;
            if !matches!(message, Message::Wrote { .. }) {
                return Ok(message);
            }
        }
    }

    /// Waits (at most `timeout`) for the next step, which must be what `pick` takes (`what`
    /// names it in the error otherwise).
    async fn expect<T>(
        &mut self,
        what: &str,
        timeout: Duration,
        pick: impl FnOnce(&Message) -> Option<T>,
    ) -> Result<T, FaultError> {
        let message = self.next_step(timeout).await?;
        pick(&message).ok_or_else(|| {
            FaultError::Worker(format!(
                "{}: expected \"{what}\", it said \"{message}\"",
                self.name
            ))
        })
    }

    /// Waits (at most `timeout`) for the worker to say it is connected.
    pub async fn connected(&mut self, timeout: Duration) -> Result<(), FaultError> {
        self.expect("connected", timeout, |m| {
            matches!(m, Message::Connected).then_some(())
        })
        .await
    }

    /// Waits (at most `timeout`) for a lock worker's grant; returns the TTL granted.
    pub async fn granted(&mut self, timeout: Duration) -> Result<Duration, FaultError> {
        self.expect("granted", timeout, |m| match m {
            Message::Granted { ttl, .. } => Some(*ttl),
            _ => None,
        })
        .await
    }

    /// Waits (at most `timeout`) for the pool process to say its job `job` was granted.
    pub async fn job_granted(&mut self, job: &str, timeout: Duration) -> Result<(), FaultError> {
        self.expect(&format!("granted {job}"), timeout, |m| {
            matches!(m, Message::JobGranted { job: granted } if granted == job).then_some(())
        })
        .await
    }

    /// Waits (at most `timeout`) for the worker's next write, or for the end of its job: the
    /// write's number, or `None` when it said `done` (its client ended the lock first).
    pub async fn write_or_end(&mut self, timeout: Duration) -> Result<Option<u32>, FaultError> {
        match self.next_message(timeout).await? {
            Message::Wrote { n } => Ok(Some(n)),
            Message::Done { .. } => Ok(None),
            message => Err(FaultError::Worker(format!(
                "{}: expected \"wrote\" or \"done\", it said \"{message}\"",
                self.name
            ))),
        }
    }

    /// Waits (at most `timeout`) for a holder to say it is about to release (true), or that its
    /// job is done without a release to come (false).
    pub async fn releasing_or_end(&mut self, timeout: Duration) -> Result<bool, FaultError> {
        self.expect("releasing", timeout, |m| match m {
            Message::Releasing => Some(true),
            Message::Done { .. } => Some(false),
            _ => None,
        })
        .await
    }

    /// Waits (at most `timeout`) for the worker to say its job is done.
    pub async fn done(&mut self, timeout: Duration) -> Result<(), FaultError> {
        self.expect("done", timeout, |m| {
            matches!(m, Message::Done { .. }).then_some(())
        })
        .await
    }

    /// What the worker wrote on stderr, after it exited, as the error.
    async fn failure(&mut self, what: &str) -> FaultError {
        let _ = tokio::time::timeout(Duration::from_secs(5), self.child.wait()).await;
        let mut err = String::new();
        if let Some(mut stderr) = self.child.stderr.take() {
            let _ =
                tokio::time::timeout(Duration::from_secs(1), stderr.read_to_string(&mut err)).await;
        }
        let err = err.lines().last().unwrap_or("").trim().to_string();
        FaultError::Worker(format!("{} {what}: {err}", self.name))
    }

    /// Stops it whole (SIGSTOP): every thread, as a stop-the-world pause does.
    pub fn pause(&self) -> Result<(), FaultError> {
        self.signal(Signal::STOP)
    }

    /// Lets it go on (SIGCONT).
    pub fn resume(&self) -> Result<(), FaultError> {
        self.signal(Signal::CONT)
    }

    /// Kills it (SIGKILL): a crash, mid-job.
    pub fn kill(&self) -> Result<(), FaultError> {
        self.signal(Signal::KILL)
    }

    /// Waits (at most `timeout`) for a killed worker to be gone, whatever its exit.
    pub async fn reap(mut self, timeout: Duration) {
        let _ = tokio::time::timeout(timeout, self.child.wait()).await;
    }

    fn signal(&self, signal: Signal) -> Result<(), FaultError> {
        let pid = self
            .pid()
            .ok_or_else(|| FaultError::Worker(format!("{} has exited", self.name)))?;
        // The worker leads its group (`spawn_in`): the group is the worker and its adapter.
        kill_process_group(pid, signal)
            .map_err(|e| FaultError::Worker(format!("signalling {}: {e}", self.name)))
    }

    /// Waits for it to exit within `timeout` (killing it after); an exit other than 0 is an error.
    pub async fn finish(mut self, timeout: Duration) -> Result<(), FaultError> {
        match tokio::time::timeout(timeout, self.child.wait()).await {
            Ok(Ok(status)) if status.success() => Ok(()),
            Ok(Ok(_)) => Err(self.failure("failed").await),
            Ok(Err(e)) => Err(FaultError::Worker(format!("{}: {e}", self.name))),
            Err(_) => {
                let _ = self.child.kill().await;
                Err(FaultError::Worker(format!(
                    "{} did not finish within {timeout:?}; killed",
                    self.name
                )))
            }
        }
    }
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        // SIGKILL ends a stopped process too.
        let _ = self.child.start_kill();
    }
}
