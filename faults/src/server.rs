//! Private Redis servers: started by the lab on a free loopback port with a data directory of
//! their own, killed and restarted as the fault asks, stopped by pid and their directory removed
//! when dropped. The shared local servers are never touched.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, Command};

use crate::FaultError;

pub use lockbench_core::fault::Persistence;

/// The redis-server arguments of a persistence setting.
trait ServerArgs {
    fn args(self) -> Vec<&'static str>;
}

impl ServerArgs for Persistence {
    fn args(self) -> Vec<&'static str> {
        match self {
            Persistence::None => vec!["--save", "", "--appendonly", "no"],
            Persistence::Rdb => vec!["--save", "3600 1 300 100 60 10000", "--appendonly", "no"],
            Persistence::AofEverysec => {
                vec![
                    "--save",
                    "",
                    "--appendonly",
                    "yes",
                    "--appendfsync",
                    "everysec",
                ]
            }
            Persistence::AofAlways => {
                vec![
                    "--save",
                    "",
                    "--appendonly",
                    "yes",
                    "--appendfsync",
                    "always",
                ]
            }
        }
    }
}

/// A redis-server the lab started.
pub struct PrivateRedis {
    binary: PathBuf,
    persistence: Persistence,
    port: u16,
    dir: PathBuf,
    /// The wall-clock shim it runs with, if any (its clock can then be jumped).
    shim: Option<PathBuf>,
    /// The address it listens on: loopback, or a lab namespace's host end.
    bind: Ipv4Addr,
    /// Off loopback, a random password: the host end's address is reachable from more than the
    /// lab's namespace.
    password: Option<String>,
    /// The command prefix that runs it inside a lab namespace; empty on the host.
    prefix: Vec<String>,
    child: Option<Child>,
}

/// The file the shim reads the clock offset from, inside the server's directory.
pub(crate) const CLOCK_FILE: &str = "wallclock-offset-ms";

/// Where the append-only files live inside the data directory (Redis 7).
const AOF_DIR: &str = "appendonlydir";
const BACKUP_DIR: &str = "aof-backup";

/// `redis-server` on PATH, for the private servers of the restart scenarios
/// ([`crate::LabOptions::redis_server`]).
pub fn redis_server_on_path() -> Option<PathBuf> {
    crate::find_on_path("redis-server")
}

/// A free port on `ip` (the lab's private servers listen on it).
pub(crate) fn free_port(ip: Ipv4Addr) -> Result<u16, FaultError> {
    let listener = std::net::TcpListener::bind((ip, 0))
        .map_err(|e| FaultError::Server(format!("finding a free loopback port: {e}")))?;
    Ok(listener
        .local_addr()
        .map_err(|e| FaultError::Server(e.to_string()))?
        .port())
}

/// A new directory `lockbench-faults-PID-KIND-N` under the system's temporary directory for a
/// private server (the lab's pid in its name, so that a process list and the tests can tell whose).
pub(crate) fn private_dir(kind: &str) -> Result<PathBuf, FaultError> {
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "lockbench-faults-{}-{kind}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    crate::register::record(crate::register::Leftover::Dir { path: dir.clone() });
    std::fs::create_dir_all(&dir)
        .map_err(|e| FaultError::Server(format!("creating {}: {e}", dir.display())))?;
    Ok(dir)
}

/// A directory the lab wrote, removed when dropped (at the end, after an error, on Ctrl-C).
pub(crate) struct OwnedDir(pub(crate) PathBuf);

impl Drop for OwnedDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Sets the wall-clock shim's offset for the server whose directory is `dir`, written aside and
/// renamed so that the shim never reads half a number.
pub(crate) fn write_clock_offset(dir: &Path, ms: i64) -> Result<(), FaultError> {
    let file = dir.join(CLOCK_FILE);
    lockbench_core::write_whole(&file, ms.to_string())
        .map_err(|e| FaultError::Server(format!("writing {}: {e}", file.display())))
}

/// Spawns `command`, a redis-server (a Sentinel too) that dies with the lab, and waits up to
/// 5 s until `ready` says it answers; the error names `what` and the last line of its `log`. A
/// server that never answers is killed with the child dropped here.
pub(crate) async fn spawn_ready<F, Fut>(
    command: &mut Command,
    what: &str,
    log: &Path,
    ready: F,
) -> Result<Child, FaultError>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let program = command
        .as_std()
        .get_program()
        .to_string_lossy()
        .into_owned();
    let child = crate::process::dies_with_the_lab(command)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| {
            FaultError::Server(format!(
                "starting {program} for {what}: {e}; scripts/services.sh up installs redis-server"
            ))
        })?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while tokio::time::Instant::now() < deadline {
        if ready().await {
            return Ok(child);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let log = std::fs::read_to_string(log).unwrap_or_default();
    Err(FaultError::Server(format!(
        "{what} did not answer within 5s: {}",
        log.lines().last().unwrap_or("no log")
    )))
}

/// The RESP form of one command.
fn resp(args: &[&str]) -> String {
    let mut request = format!("*{}\r\n", args.len());
    for a in args {
        request += &format!("${}\r\n{a}\r\n", a.len());
    }
    request
}

/// A connection to a private server, authenticated when it has a password.
async fn connect(
    ip: Ipv4Addr,
    port: u16,
    password: Option<&str>,
) -> Result<tokio::net::TcpStream, String> {
    let mut stream = tokio::net::TcpStream::connect((ip, port))
        .await
        .map_err(|e| e.to_string())?;
    if let Some(password) = password {
        stream
            .write_all(resp(&["AUTH", password]).as_bytes())
            .await
            .map_err(|e| e.to_string())?;
        let mut reply = [0u8; 5];
        tokio::time::timeout(Duration::from_millis(500), stream.read_exact(&mut reply))
            .await
            .map_err(|_| "no answer to AUTH".to_string())?
            .map_err(|e| e.to_string())?;
        if &reply != b"+OK\r\n" {
            return Err(format!("AUTH refused: {}", String::from_utf8_lossy(&reply)));
        }
    }
    Ok(stream)
}

/// True when `redis-server` answers PING on `ip:port`.
async fn pong(ip: Ipv4Addr, port: u16, password: Option<&str>) -> bool {
    let Ok(mut stream) = connect(ip, port, password).await else {
        return false;
    };
    if stream.write_all(b"PING\r\n").await.is_err() {
        return false;
    }
    let mut reply = [0u8; 7];
    let read = tokio::time::timeout(Duration::from_millis(500), stream.read_exact(&mut reply));
    matches!(read.await, Ok(Ok(_))) && &reply == b"+PONG\r\n"
}

impl PrivateRedis {
    /// Starts a server with `persistence` on a free port, in a new directory under the system's
    /// temporary directory; ready when it answers PING (within 5 s). With `shim` (the wall-clock
    /// shim's path) its clock can be jumped. It listens on `bind`: loopback, or the host end of a
    /// lab namespace (with a random password there: the host end is reachable from the host too).
    pub async fn start(
        binary: &Path,
        persistence: Persistence,
        shim: Option<&Path>,
        bind: Ipv4Addr,
    ) -> Result<Self, FaultError> {
        let dir = private_dir("redis")?;
        let mut server = PrivateRedis {
            binary: binary.to_path_buf(),
            persistence,
            port: free_port(bind)?,
            dir,
            shim: shim.map(Path::to_path_buf),
            bind,
            password: (!bind.is_loopback()).then(|| format!("{:032x}", rand::random::<u128>())),
            prefix: Vec::new(),
            child: None,
        };
        server.launch().await?;
        Ok(server)
    }

    /// Starts a server without persistence on `bind` with `password` (which it also sends to
    /// a primary it replicates: one password for a whole set), run through `prefix` (inside a
    /// lab namespace; empty on the host).
    pub(crate) async fn start_in(
        binary: &Path,
        bind: Ipv4Addr,
        password: &str,
        prefix: Vec<String>,
    ) -> Result<Self, FaultError> {
        // A port free on the host is free inside a new namespace too.
        let port = free_port(if prefix.is_empty() {
            bind
        } else {
            Ipv4Addr::LOCALHOST
        })?;
        let mut server = PrivateRedis {
            binary: binary.to_path_buf(),
            persistence: Persistence::None,
            port,
            dir: private_dir("redis")?,
            shim: None,
            bind,
            password: Some(password.to_string()),
            prefix,
            child: None,
        };
        server.launch().await?;
        Ok(server)
    }

    /// Its URL (with its password, if it has one).
    pub fn url(&self) -> String {
        match &self.password {
            Some(password) => format!("redis://:{password}@{}:{}", self.bind, self.port),
            None => format!("redis://{}:{}", self.bind, self.port),
        }
    }

    /// Its port.
    pub fn port(&self) -> u16 {
        self.port
    }

    async fn launch(&mut self) -> Result<(), FaultError> {
        let port = self.port.to_string();
        let dir = self.dir.display().to_string();
        let bind = self.bind.to_string();
        // Protected mode refuses clients off loopback when the server has no password; off
        // loopback it has one.
        let mut args = vec![
            "--port",
            &port,
            "--bind",
            &bind,
            "--protected-mode",
            "yes",
            "--dir",
            &dir,
            "--daemonize",
            "no",
            "--logfile",
            "redis.log",
            // Keep the command line (its --dir names the lab): a process list then tells whose
            // server it is.
            "--set-proc-title",
            "no",
            // A replica's first sync starts at once (the default waits 5 s for more replicas).
            "--repl-diskless-sync-delay",
            "0",
        ];
        args.extend(self.persistence.args());
        if let Some(password) = &self.password {
            args.extend(["--requirepass", password.as_str()]);
            args.extend(["--masterauth", password.as_str()]);
        }
        let mut command = match self.prefix.split_first() {
            Some((program, rest)) => {
                let mut command = Command::new(program);
                command.args(rest).arg(&self.binary);
                command
            }
            None => Command::new(&self.binary),
        };
        if let Some(shim) = &self.shim {
            command
                .env("LD_PRELOAD", shim)
                .env("LOCKBENCH_WALLCLOCK_FILE", self.dir.join(CLOCK_FILE));
        }
        command.args(&args);
        let (bind, port, password) = (self.bind, self.port, self.password.clone());
        let child = spawn_ready(
            &mut command,
            &format!("redis-server on port {port}"),
            &self.dir.join("redis.log"),
            || {
                let password = password.clone();
                async move { pong(bind, port, password.as_deref()).await }
            },
        )
        .await?;
        self.child = Some(child);
        Ok(())
    }

    /// Moves its wall clock `ms` milliseconds ahead of the machine's (0: back in step), as an NTP
    /// step does; keys with an absolute expiry then expire that much earlier.
    pub fn set_clock_offset(&self, ms: i64) -> Result<(), FaultError> {
        if self.shim.is_none() {
            return Err(FaultError::Server(
                "this server runs without the wall-clock shim".to_string(),
            ));
        }
        write_clock_offset(&self.dir, ms)
    }

    /// Stops it whole (SIGSTOP): it keeps its connections and answers nothing, as a server that
    /// hangs or a link that drops everything does.
    pub fn pause(&self) -> Result<(), FaultError> {
        self.signal(rustix::process::Signal::STOP)
    }

    /// Lets it go on (SIGCONT).
    pub fn resume(&self) -> Result<(), FaultError> {
        self.signal(rustix::process::Signal::CONT)
    }

    fn signal(&self, signal: rustix::process::Signal) -> Result<(), FaultError> {
        let pid = self
            .child
            .as_ref()
            .and_then(Child::id)
            .and_then(|id| rustix::process::Pid::from_raw(id as i32))
            .ok_or_else(|| {
                FaultError::Server(format!("redis-server on port {} is not running", self.port))
            })?;
        rustix::process::kill_process(pid, signal).map_err(|e| {
            FaultError::Server(format!(
                "signalling redis-server on port {}: {e}",
                self.port
            ))
        })
    }

    /// Sends one command (RESP, within 2 s) and returns its first reply line.
    pub async fn command(&self, args: &[&str]) -> Result<String, FaultError> {
        let fail = |e: String| {
            FaultError::Server(format!(
                "redis-server on port {}: {}: {e}",
                self.port,
                args.join(" ")
            ))
        };
        let request = resp(args);
        let exchange = async {
            let mut stream = connect(self.bind, self.port, self.password.as_deref()).await?;
            stream
                .write_all(request.as_bytes())
                .await
                .map_err(|e| e.to_string())?;
            let mut reply = Vec::new();
            let mut byte = [0u8; 1];
            while !reply.ends_with(b"\r\n") && reply.len() < 4096 {
                stream
                    .read_exact(&mut byte)
                    .await
                    .map_err(|e| e.to_string())?;
                reply.push(byte[0]);
            }
            Ok::<String, String>(String::from_utf8_lossy(&reply).trim_end().to_string())
        };
        let line = tokio::time::timeout(Duration::from_secs(2), exchange)
            .await
            .map_err(|_| fail("no answer within 2s".to_string()))?
            .map_err(fail)?;
        if line.starts_with('-') {
            return Err(fail(line));
        }
        Ok(line)
    }

    /// Makes it a replica of the primary at `from` (a replication link in front of it) and waits
    /// (at most 5 s) until the link is up and the first sync done: it then holds what the
    /// primary holds.
    pub async fn replicate(&self, from: (Ipv4Addr, u16)) -> Result<(), FaultError> {
        let (ip, port) = from;
        self.command(&["REPLICAOF", &ip.to_string(), &port.to_string()])
            .await?;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while tokio::time::Instant::now() < deadline {
            let info = self.info_replication().await.unwrap_or_default();
            if info.contains("master_link_status:up") && !info.contains("master_sync_in_progress:1")
            {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let info = self.info_replication().await.unwrap_or_default();
        let state: Vec<&str> = info
            .lines()
            .filter(|l| {
                l.starts_with("master_link_status")
                    || l.starts_with("master_sync_in_progress")
                    || l.starts_with("role")
            })
            .collect();
        Err(FaultError::Server(format!(
            "redis-server on port {} did not finish syncing from port {port} within 5s ({})",
            self.port,
            state.join(", ")
        )))
    }

    /// Promotes it (REPLICAOF NO ONE): it takes writes from now on, with what it had.
    pub async fn promote(&self) -> Result<(), FaultError> {
        self.command(&["REPLICAOF", "NO", "ONE"]).await.map(|_| ())
    }

    /// True when it says it is a primary (`role:master`).
    pub(crate) async fn is_primary(&self) -> bool {
        self.info_replication()
            .await
            .is_ok_and(|info| info.contains("role:master"))
    }

    /// `INFO replication`'s text.
    async fn info_replication(&self) -> Result<String, String> {
        self.info("replication").await
    }

    /// `INFO section`'s text.
    async fn info(&self, section: &str) -> Result<String, String> {
        let mut stream = connect(self.bind, self.port, self.password.as_deref()).await?;
        stream
            .write_all(resp(&["INFO", section]).as_bytes())
            .await
            .map_err(|e| e.to_string())?;
        let mut buf = vec![0u8; 8192];
        let n = tokio::time::timeout(Duration::from_millis(500), stream.read(&mut buf))
            .await
            .map_err(|_| "no answer".to_string())?
            .map_err(|e| e.to_string())?;
        Ok(String::from_utf8_lossy(&buf[..n]).into_owned())
    }

    /// SIGKILL: the server dies without writing anything more, as in a crash.
    pub async fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill().await;
        }
    }

    /// Starts it again on the same port with the same data directory.
    pub async fn restart(&mut self) -> Result<(), FaultError> {
        self.kill().await;
        self.launch().await
    }

    /// Copies the append-only files as they hold the dataset now (what the disk held at a
    /// moment: a power loss later drops everything written since). The files are rewritten from
    /// memory first: with `appendfsync everysec` Redis may hold back its write of the last
    /// commands while an fsync is slow (a loaded machine), and a copy taken then would hold a
    /// key whose deletion was acknowledged (the warm-up's lock, seen at CI as a grant only at
    /// the TTL's end after the "power loss").
    pub async fn snapshot_aof(&self) -> Result<(), FaultError> {
        // "already in progress" is an error reply, and the wait below covers it.
        let _ = self.command(&["BGREWRITEAOF"]).await;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            let info = self.info("persistence").await.unwrap_or_default();
            if info.contains("aof_rewrite_in_progress:0")
                && info.contains("aof_rewrite_scheduled:0")
            {
                break;
            }
            if tokio::time::Instant::now() > deadline {
                return Err(FaultError::Server(format!(
                    "redis-server on port {}: the append-only file's rewrite did not end within 10s",
                    self.port
                )));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let from = self.dir.join(AOF_DIR);
        let to = self.dir.join(BACKUP_DIR);
        let _ = std::fs::remove_dir_all(&to);
        copy_dir(&from, &to)
    }

    /// Puts the copied append-only files back (the server must be stopped).
    pub fn restore_aof(&self) -> Result<(), FaultError> {
        let aof = self.dir.join(AOF_DIR);
        let _ = std::fs::remove_dir_all(&aof);
        copy_dir(&self.dir.join(BACKUP_DIR), &aof)
    }
}

fn copy_dir(from: &Path, to: &Path) -> Result<(), FaultError> {
    let fail = |e: std::io::Error| {
        FaultError::Server(format!(
            "copying {} to {}: {e}",
            from.display(),
            to.display()
        ))
    };
    std::fs::create_dir_all(to).map_err(fail)?;
    for entry in std::fs::read_dir(from).map_err(fail)? {
        let entry = entry.map_err(fail)?;
        std::fs::copy(entry.path(), to.join(entry.file_name())).map_err(fail)?;
    }
    Ok(())
}

impl Drop for PrivateRedis {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.start_kill();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
