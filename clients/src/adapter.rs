//! A running adapter: the process, its requests and replies, and the events its library pushed.
//! [`AdapterLock`] puts it behind lockbench's [`LockBackend`], so that the fault lab's worker and
//! bench drive a real library exactly as they drive lockbench's own clients.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use lockbench_core::{BackendKind, FencingSource};
use lockbench_locks::{BackendConfig, Capabilities, Lease, LockBackend, LockError, Operation};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::{Mutex, mpsc};

use crate::ClientsError;
use crate::programs::Program;
use crate::protocol::{Description, Hello, Line, PROTOCOL, Renewal, Request};

/// Lines of the adapter's stderr kept for an error message.
const STDERR_TAIL: usize = 20;

/// Something the library told its user unasked: a lost lock, a suspended session.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// What it told.
    pub kind: crate::protocol::EventKind,
    /// The key it concerns.
    pub key: String,
    /// The library's words.
    pub said: Option<String>,
    /// When the adapter wrote it (CLOCK_MONOTONIC, ns).
    pub t_ns: i64,
}

/// The adapter's process and the channel its replies arrive on.
struct Wire {
    stdin: ChildStdin,
    replies: mpsc::UnboundedReceiver<Line>,
}

/// A real library's lock, through its adapter.
pub struct AdapterLock {
    program: Program,
    description: Description,
    /// `library version`, as records name it.
    named: &'static str,
    backend: BackendKind,
    wire: Mutex<Wire>,
    child: std::sync::Mutex<Child>,
    events: Arc<std::sync::Mutex<Vec<Event>>>,
    /// The library's first "no" to a renewal, a `held` or a release: its stamp and the request.
    refused: std::sync::Mutex<Option<(i64, String)>>,
    stderr: Arc<std::sync::Mutex<VecDeque<String>>>,
    next_id: AtomicU64,
    operation_timeout: Duration,
    session_timeout: Duration,
}

impl AdapterLock {
    /// Starts `program`, sends it the hello for `config`'s servers and reads its description.
    /// The adapter dies with the thread that started it (a paused or killed worker takes its
    /// adapter with it; the lab signals the worker's whole process group).
    pub async fn start(program: &Program, config: &BackendConfig) -> Result<Self, ClientsError> {
        let mut command = Command::new(&program.argv[0]);
        command
            .args(&program.argv[1..])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        // SAFETY: between fork and exec the closure makes one system call, which allocates
        // nothing and takes no lock.
        unsafe {
            command.pre_exec(|| {
                rustix::process::set_parent_process_death_signal(Some(
                    rustix::process::Signal::KILL,
                ))?;
                Ok(())
            });
        }
        let mut child = command.spawn().map_err(|e| ClientsError::Start {
            adapter: program.name.clone(),
            error: e.to_string(),
        })?;
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = child.stdout.take().expect("stdout is piped");
        let stderr = child.stderr.take().expect("stderr is piped");
        let events = Arc::new(std::sync::Mutex::new(Vec::new()));
        let tail = Arc::new(std::sync::Mutex::new(VecDeque::new()));
        let (sender, replies) = mpsc::unbounded_channel();
        tokio::spawn(read_stdout(stdout, sender, events.clone(), tail.clone()));
        tokio::spawn(read_stderr(stderr, tail.clone()));
        let mut wire = Wire { stdin, replies };
        let hello = Hello {
            op: "hello".to_string(),
            protocol: PROTOCOL,
            backend: config.kind.name().to_string(),
            urls: config.urls.clone(),
            namespace: config.namespace.clone(),
            operation_timeout_ms: config.operation_timeout.as_millis() as u64,
            connect_timeout_ms: config.connect_timeout.as_millis() as u64,
            session_timeout_ms: config.session_timeout.as_millis() as u64,
            sentinel_master: config.sentinel_master.clone(),
        };
        // An interpreter's start-up and the library's first connection both count here.
        let timeout = config.connect_timeout + Duration::from_secs(10);
        let reply = exchange(&mut wire, &serde_json::to_string(&hello)?, None, timeout).await;
        let reply = match reply {
            Ok(reply) => reply,
            Err(e) => return Err(with_stderr(e, &tail, &program.name)),
        };
        let description = match (reply.ok, reply.description) {
            (Some(true), Some(d)) => d,
            (Some(false), _) => {
                return Err(ClientsError::Refused {
                    adapter: program.name.clone(),
                    op: "hello".to_string(),
                    said: reply.error.unwrap_or_default(),
                });
            }
            _ => {
                return Err(ClientsError::Protocol {
                    adapter: program.name.clone(),
                    what: "its reply to the hello has no library, version, backend, renewal, \
                           fencing, notifies_loss and protocol"
                        .to_string(),
                });
            }
        };
        if lockbench_core::BackendKind::parse(&description.backend) != Some(config.kind) {
            return Err(ClientsError::Protocol {
                adapter: program.name.clone(),
                what: format!(
                    "it locks on {}, not on {}",
                    description.backend,
                    config.kind.name()
                ),
            });
        }
        let named: &'static str =
            Box::leak(format!("{} {}", description.library, description.version).into_boxed_str());
        Ok(AdapterLock {
            program: program.clone(),
            description,
            named,
            backend: config.kind,
            wire: Mutex::new(wire),
            child: std::sync::Mutex::new(child),
            events,
            refused: std::sync::Mutex::new(None),
            stderr: tail,
            next_id: AtomicU64::new(1),
            operation_timeout: config.operation_timeout,
            session_timeout: config.session_timeout,
        })
    }

    /// What the library said it is and does.
    pub fn description(&self) -> &Description {
        &self.description
    }

    /// Every event the library pushed so far.
    pub fn events(&self) -> Vec<Event> {
        self.events.lock().expect("events lock").clone()
    }

    /// When the library first answered "no" to a renewal, a `held` or a release (its own
    /// stamp), and to which: a definite answer, never an error or a timeout.
    pub fn first_refusal(&self) -> Option<(i64, String)> {
        self.refused.lock().expect("refused lock").clone()
    }

    /// The adapter's process id.
    pub fn pid(&self) -> Option<u32> {
        self.child.lock().expect("child lock").id()
    }

    /// Sends `request` and waits for its reply (at most `timeout`).
    pub async fn request(&self, request: Request, timeout: Duration) -> Result<Line, ClientsError> {
        let line = serde_json::to_string(&request)?;
        let mut wire = self.wire.lock().await;
        let reply = exchange(&mut wire, &line, Some(request.id()), timeout).await;
        if matches!(reply, Err(ClientsError::Timeout(_))) {
            // The request may still complete in the library (an acquire granted late would hold
            // a lock nobody releases): the adapter is ended, and every later request fails.
            let _ = self.child.lock().expect("child lock").start_kill();
        }
        reply.map_err(|e| with_stderr(e, &self.stderr, &self.program.name))
    }

    fn id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// The reply's answer, or the library's failure as a lock error.
    fn answer(&self, op: &str, line: Line, field: Option<bool>) -> Result<bool, LockError> {
        if line.ok != Some(true) {
            return Err(self.failed(ClientsError::Refused {
                adapter: self.program.name.clone(),
                op: op.to_string(),
                said: line.error.unwrap_or_default(),
            }));
        }
        if field == Some(false) && op != "acquire" {
            let mut refused = self.refused.lock().expect("refused lock");
            if refused.is_none() {
                *refused = Some((line.t.unwrap_or(0), op.to_string()));
            }
        }
        field.ok_or_else(|| {
            self.failed(ClientsError::Protocol {
                adapter: self.program.name.clone(),
                what: format!("its reply to {op} has no answer"),
            })
        })
    }

    fn failed(&self, e: ClientsError) -> LockError {
        LockError::Server {
            backend: self.backend,
            operation: Operation::Adapter,
            message: format!("{}: {e}", self.named),
        }
    }

    /// What one request may take: the library's own timeout, plus the wait asked for.
    fn budget(&self, wait: Duration) -> Duration {
        self.operation_timeout * 2 + wait + Duration::from_secs(1)
    }
}

/// Writes `line` and reads replies until the one for `id` (a reply left over from a request that
/// timed out is skipped). The hello's reply has no id.
async fn exchange(
    wire: &mut Wire,
    line: &str,
    id: Option<u64>,
    timeout: Duration,
) -> Result<Line, ClientsError> {
    let mut bytes = Vec::with_capacity(line.len() + 1);
    bytes.extend_from_slice(line.as_bytes());
    bytes.push(b'\n');
    wire.stdin
        .write_all(&bytes)
        .await
        .map_err(|_| ClientsError::Exited)?;
    wire.stdin.flush().await.map_err(|_| ClientsError::Exited)?;
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        match tokio::time::timeout_at(deadline, wire.replies.recv()).await {
            Err(_) => return Err(ClientsError::Timeout(timeout)),
            Ok(None) => return Err(ClientsError::Exited),
            Ok(Some(reply)) if reply.id == id => return Ok(reply),
            Ok(Some(_)) => continue,
        }
    }
}

/// Reads the adapter's stdout: events to `events`, replies to `replies`; a line that is neither
/// ends the adapter's conversation (the adapter is broken).
async fn read_stdout(
    stdout: tokio::process::ChildStdout,
    replies: mpsc::UnboundedSender<Line>,
    events: Arc<std::sync::Mutex<Vec<Event>>>,
    tail: Arc<std::sync::Mutex<VecDeque<String>>>,
) {
    let mut lines = BufReader::new(stdout).lines();
    while let Ok(Some(text)) = lines.next_line().await {
        let Ok(line) = serde_json::from_str::<Line>(&text) else {
            // Not a message (a library that prints to stdout): no reply. The request times
            // out, and its error shows the line.
            keep(&tail, format!("on stdout, not a message: {text}"));
            continue;
        };
        match (&line.event, line.id) {
            (Some(kind), _) => events.lock().expect("events lock").push(Event {
                kind: *kind,
                key: line.key.clone().unwrap_or_default(),
                said: line.said.clone(),
                t_ns: line.t.unwrap_or(0),
            }),
            (None, _) => {
                if replies.send(line).is_err() {
                    return;
                }
            }
        }
    }
}

/// Keeps the last lines of the adapter's stderr (a traceback's last line names the failure).
async fn read_stderr(
    stderr: tokio::process::ChildStderr,
    tail: Arc<std::sync::Mutex<VecDeque<String>>>,
) {
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(text)) = lines.next_line().await {
        keep(&tail, text);
    }
}

/// Keeps `text` among the last [`STDERR_TAIL`] lines.
fn keep(tail: &std::sync::Mutex<VecDeque<String>>, text: String) {
    let mut tail = tail.lock().expect("stderr lock");
    if tail.len() == STDERR_TAIL {
        tail.pop_front();
    }
    tail.push_back(text);
}

/// `error`, with the adapter's last stderr line when it exited or did not answer.
fn with_stderr(
    error: ClientsError,
    tail: &std::sync::Mutex<VecDeque<String>>,
    adapter: &str,
) -> ClientsError {
    match error {
        ClientsError::Exited | ClientsError::Timeout(_) => ClientsError::Failed {
            adapter: adapter.to_string(),
            what: match error {
                ClientsError::Exited => "exited".to_string(),
                _ => format!("did not answer within {error}"),
            },
            stderr: tail
                .lock()
                .expect("stderr lock")
                .iter()
                .rev()
                .find(|l| !l.trim().is_empty())
                .cloned()
                .unwrap_or_default(),
        },
        other => other,
    }
}

#[async_trait]
impl LockBackend for AdapterLock {
    fn name(&self) -> &'static str {
        self.backend.name()
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            fencing: if self.description.fencing {
                FencingSource::Counter
            } else {
                FencingSource::None
            },
            native_ttl: true,
            wait_queue: self.backend == BackendKind::Zookeeper,
            native_wait: true,
            scope: self.backend.scope(),
        }
    }

    async fn try_acquire(&self, key: &str, ttl: Duration) -> Result<Option<Lease>, LockError> {
        self.acquire(key, ttl, Duration::ZERO).await
    }

    /// The library's own acquisition, with its own wait.
    async fn acquire(
        &self,
        key: &str,
        ttl: Duration,
        wait: Duration,
    ) -> Result<Option<Lease>, LockError> {
        let request = Request::Acquire {
            id: self.id(),
            key: key.to_string(),
            ttl_ms: ttl.as_millis() as u64,
            wait_ms: wait.as_millis() as u64,
        };
        let line = self
            .request(request, self.budget(wait))
            .await
            .map_err(|e| self.failed(e))?;
        let (token, fencing, validity, held) = (
            line.token.clone(),
            line.fencing_token,
            line.validity_ms,
            line.held,
        );
        if !self.answer("acquire", line, held)? {
            return Ok(None);
        }
        Ok(Some(Lease {
            key: key.to_string(),
            token: token.unwrap_or_else(lockbench_locks::new_token),
            fencing,
            // The library's validity where it reports one; a ZooKeeper lock lives as long as the
            // session asked for at connect.
            ttl: match (validity, self.backend) {
                (Some(ms), _) => Duration::from_millis(ms),
                (None, BackendKind::Zookeeper) => self.session_timeout,
                (
                    None,
                    BackendKind::Memory
                    | BackendKind::Redis
                    | BackendKind::Redlock
                    | BackendKind::PgSession
                    | BackendKind::PgXact
                    | BackendKind::Etcd,
                ) => ttl,
            },
            acquired_at: Instant::now(),
        }))
    }

    async fn renew(&self, lease: &Lease, ttl: Duration) -> Result<bool, LockError> {
        let request = match self.description.renewal {
            Renewal::Manual => Request::Renew {
                id: self.id(),
                key: lease.key.clone(),
                ttl_ms: ttl.as_millis() as u64,
            },
            // A library that renews by itself is asked whether it still holds the lock.
            Renewal::Automatic | Renewal::None => Request::Held {
                id: self.id(),
                key: lease.key.clone(),
            },
        };
        let line = self
            .request(request, self.budget(Duration::ZERO))
            .await
            .map_err(|e| self.failed(e))?;
        let held = line.held;
        self.answer("renew", line, held)
    }

    async fn release(&self, lease: &Lease) -> Result<bool, LockError> {
        let request = Request::Release {
            id: self.id(),
            key: lease.key.clone(),
        };
        let line = self
            .request(request, self.budget(Duration::ZERO))
            .await
            .map_err(|e| self.failed(e))?;
        let released = line.released;
        self.answer("release", line, released)
    }

    async fn cleanup(&self, _key: &str) -> Result<(), LockError> {
        Ok(())
    }

    async fn close(&self) -> Result<(), LockError> {
        let _ = self
            .request(Request::Bye { id: self.id() }, Duration::from_secs(5))
            .await;
        Ok(())
    }

    fn client_library(&self) -> Option<&'static str> {
        Some(self.named)
    }
}
