//! Processes the lab starts: workers and private servers. Each is a child of the lab, killed by
//! pid when its handle is dropped (on success, on error and when a Ctrl-C drops the run).

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use rustix::process::{Pid, Signal, kill_process};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdout, Command};

use crate::FaultError;
use crate::worker::AnyPlan;

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
            .write_all(format!("go {}\n", wait.as_millis()).as_bytes())
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

    /// The next line the worker says, within `timeout`.
    async fn next_line(&mut self, timeout: Duration) -> Result<String, FaultError> {
        match tokio::time::timeout(timeout, self.lines.next_line()).await {
            Ok(Ok(Some(line))) => Ok(line),
            Ok(Ok(None)) => Err(self.failure("exited before saying what it did").await),
            Ok(Err(e)) => Err(FaultError::Worker(format!("{}: {e}", self.name))),
            Err(_) => Err(FaultError::Worker(format!(
                "{}: said nothing within {timeout:?}",
                self.name
            ))),
        }
    }

    /// The next line other than the progress lines a worker says after each write (`wrote N`),
    /// within `timeout`.
    pub async fn next_step(&mut self, timeout: Duration) -> Result<String, FaultError> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let line = self.next_line(left).await?;
            if !line.starts_with("wrote ") {
                return Ok(line);
            }
        }
    }

    /// Waits for a line starting with `word` (`wrote` included: the next write), within
    /// `timeout`; returns the rest of it.
    pub async fn expect(&mut self, word: &str, timeout: Duration) -> Result<String, FaultError> {
        let line = if word == "wrote" {
            self.next_line(timeout).await?
        } else {
            self.next_step(timeout).await?
        };
        match line.strip_prefix(word) {
            Some(rest) => Ok(rest.trim().to_string()),
            None => Err(FaultError::Worker(format!(
                "{}: expected \"{word}\", it said \"{line}\"",
                self.name
            ))),
        }
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
        kill_process(pid, signal)
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
