//! A private Postgres for a partitioned holder: initialised by the lab in a directory of its own
//! (`initdb`, trust authentication, no fsync), listening on a lab namespace's host end so that the
//! server sees the holder's own TCP connection, whose death only TCP keepalive can tell it about;
//! and for a failover, a streaming standby of it (`pg_basebackup -R`), promoted with `pg_promote`
//! and made again after. Run as the `postgres` user (Postgres refuses root), stopped by pid and
//! removed when dropped.

use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use sqlx::Connection as _;
use tokio::process::{Child, Command};

use crate::FaultError;
use crate::server::{free_port, private_dir};

/// A postgres the lab started.
pub struct PrivatePostgres {
    dir: PathBuf,
    port: u16,
    bind: Ipv4Addr,
    /// The `name=value` settings it runs with.
    settings: Vec<String>,
    child: Option<Child>,
}

fn fail(what: impl std::fmt::Display) -> FaultError {
    FaultError::Server(format!("private postgres: {what}"))
}

/// The newest installed server's binaries (Debian's layout).
fn bin_dir() -> Result<PathBuf, FaultError> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map_err(|e| {
            fail(format!(
                "/usr/lib/postgresql: {e}; scripts/services.sh up installs postgresql"
            ))
        })?
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|p| p.join("postgres").is_file())
        .collect();
    dirs.sort_by_key(|p| {
        p.parent()
            .and_then(|v| v.file_name())
            .and_then(|v| v.to_str())
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(0)
    });
    dirs.pop().ok_or_else(|| {
        fail("no server in /usr/lib/postgresql; scripts/services.sh up installs postgresql")
    })
}

/// The `postgres` user's uid and gid, from /etc/passwd.
pub(crate) fn postgres_user() -> Result<(u32, u32), FaultError> {
    let passwd = std::fs::read_to_string("/etc/passwd").map_err(fail)?;
    passwd
        .lines()
        .find_map(|line| {
            let fields: Vec<&str> = line.split(':').collect();
            (fields.first() == Some(&"postgres") && fields.len() > 3)
                .then(|| Some((fields[2].parse().ok()?, fields[3].parse().ok()?)))
                .flatten()
        })
        .ok_or_else(|| fail("no postgres user; scripts/services.sh up installs postgresql"))
}

/// Why the lab could not run a private postgres here, if it could not.
pub fn unavailable() -> Option<&'static str> {
    (bin_dir().is_err() || postgres_user().is_err())
        .then_some("needs a PostgreSQL server installed (scripts/services.sh up installs it)")
}

impl PrivatePostgres {
    /// Initialises and starts a server listening on `bind` (a free port), with `settings`
    /// (`name=value`) on its command line; ready when it accepts a connection (within 15 s).
    pub async fn start(bind: Ipv4Addr, settings: &[String]) -> Result<Self, FaultError> {
        let (uid, gid) = postgres_user()?;
        let mut server = PrivatePostgres::empty(bind, settings)?;
        let data = server.data();
        let mut init = Command::new(bin_dir()?.join("initdb"));
        init.args([
            "-A",
            "trust",
            "-U",
            "postgres",
            "--no-sync",
            "-E",
            "UTF8",
            "-D",
        ])
        .arg(&data);
        run_as(&mut init, (uid, gid), "initdb").await?;
        // Trust the lab's namespaces' addresses too.
        let hba = data.join("pg_hba.conf");
        let mut rules = std::fs::read_to_string(&hba).map_err(fail)?;
        rules.push_str("host all all 10.213.0.0/16 trust\n");
        std::fs::write(&hba, rules).map_err(fail)?;
        server.launch().await?;
        Ok(server)
    }

    /// A server not yet initialised: its directory (owned by `postgres`) and a free port.
    fn empty(bind: Ipv4Addr, settings: &[String]) -> Result<Self, FaultError> {
        let (uid, gid) = postgres_user()?;
        let server = PrivatePostgres {
            dir: private_dir("pg")?,
            port: free_port(bind)?,
            bind,
            settings: settings.to_vec(),
            child: None,
        };
        std::os::unix::fs::chown(&server.dir, Some(uid), Some(gid))
            .map_err(|e| fail(format!("chown {}: {e}", server.dir.display())))?;
        Ok(server)
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// Starts the server on its data directory; ready when it accepts a connection (15 s).
    async fn launch(&mut self) -> Result<(), FaultError> {
        let (uid, gid) = postgres_user()?;
        let mut command = Command::new(bin_dir()?.join("postgres"));
        command
            .arg("-D")
            .arg(self.data())
            .args(["-p", &self.port.to_string()])
            .args(["-c", &format!("listen_addresses={}", self.bind)])
            .args([
                "-c",
                &format!("unix_socket_directories={}", self.dir.display()),
            ])
            .args(["-c", "fsync=off", "-c", "max_connections=20"]);
        for setting in &self.settings {
            command.args(["-c", setting]);
        }
        let child = spawn_as(&mut command, (uid, gid))
            .map_err(|e| fail(format!("starting postgres: {e}")))?;
        self.child = Some(child);
        if answers_within(&self.url(), Duration::from_secs(15)).await {
            Ok(())
        } else {
            Err(fail(format!(
                "no connection on {}:{} within 15s",
                self.bind, self.port
            )))
        }
    }

    /// A streaming standby of this server (`pg_basebackup -R`, a fast checkpoint), on a port
    /// and in a directory of its own, started and answering (read-only).
    pub async fn standby(&self) -> Result<PrivatePostgres, FaultError> {
        let (uid, gid) = postgres_user()?;
        let mut standby = PrivatePostgres::empty(self.bind, &self.settings)?;
        let mut backup = Command::new(bin_dir()?.join("pg_basebackup"));
        backup
            .args(["-h", &self.bind.to_string()])
            .args(["-p", &self.port.to_string()])
            .args(["-U", "postgres", "-R", "-X", "stream", "--checkpoint=fast"])
            .arg("--no-sync")
            .arg("-D")
            .arg(standby.data());
        run_as(&mut backup, (uid, gid), "pg_basebackup").await?;
        standby.launch().await?;
        Ok(standby)
    }

    /// Promotes a standby (`pg_promote`, waiting for it): it takes writes from now on.
    pub async fn promote(&self) -> Result<(), FaultError> {
        let promote = async {
            let mut conn = sqlx::PgConnection::connect(&self.url()).await?;
            let done: bool = sqlx::query_scalar("SELECT pg_promote(true, 30)")
                .fetch_one(&mut conn)
                .await?;
            let _ = conn.close().await;
            Ok::<bool, sqlx::Error>(done)
        };
        match tokio::time::timeout(Duration::from_secs(35), promote).await {
            Ok(Ok(true)) => Ok(()),
            Ok(Ok(false)) => Err(fail("pg_promote did not finish within 30s")),
            Ok(Err(e)) => Err(fail(format!("pg_promote: {e}"))),
            Err(_) => Err(fail("pg_promote did not answer within 35s")),
        }
    }

    /// Starts it again on its data directory after [`PrivatePostgres::stop`] (crash recovery
    /// from its WAL, as after a power loss).
    pub async fn restart(&mut self) -> Result<(), FaultError> {
        self.stop().await;
        self.launch().await
    }

    /// Stops a standby and makes it again from `primary`, a new base backup in place of its
    /// data directory (a promoted standby's timeline is not the primary's any more).
    pub async fn rebuild_from(&mut self, primary: &PrivatePostgres) -> Result<(), FaultError> {
        self.stop().await;
        let fresh = primary.standby().await?;
        let old = std::mem::replace(self, fresh);
        drop(old);
        Ok(())
    }

    /// Its URL.
    pub fn url(&self) -> String {
        format!("postgres://postgres@{}:{}/postgres", self.bind, self.port)
    }

    /// Its port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Stops it: SIGQUIT (immediate shutdown, which takes its backends down with it), SIGKILL if
    /// it is still there after 5 s.
    pub async fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            quit(&child);
            if tokio::time::timeout(Duration::from_secs(5), child.wait())
                .await
                .is_err()
            {
                let _ = child.kill().await;
            }
        }
    }
}

/// Runs a Postgres tool as `postgres` to its end (30 s at most); its last line of error when it
/// fails.
async fn run_as(
    command: &mut Command,
    (uid, gid): (u32, u32),
    what: &str,
) -> Result<(), FaultError> {
    let run = crate::process::dies_with_the_lab(command)
        .uid(uid)
        .gid(gid)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .map_err(|_| fail(format!("{what} did not finish within 30s")))?
        .map_err(|e| fail(format!("{what}: {e}")))?;
    if out.status.success() {
        return Ok(());
    }
    Err(fail(format!(
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
            .lines()
            .last()
            .unwrap_or("")
    )))
}

/// Starts `command` as `user` (uid, gid: Postgres and PgBouncer refuse root), dying with the lab,
/// its output discarded.
pub(crate) fn spawn_as(command: &mut Command, (uid, gid): (u32, u32)) -> std::io::Result<Child> {
    crate::process::dies_with_the_lab(command)
        .uid(uid)
        .gid(gid)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
}

/// True once a query on `url` is answered, within `within` (a pooler accepts a client before
/// it has a server for it: the query is what says it is ready).
pub(crate) async fn answers_within(url: &str, within: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let attempt = async {
            let mut conn = sqlx::PgConnection::connect(url).await?;
            sqlx::raw_sql("SELECT 1").execute(&mut conn).await?;
            conn.close().await
        };
        if let Ok(Ok(())) = tokio::time::timeout(Duration::from_secs(2), attempt).await {
            return true;
        }
        if tokio::time::Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// SIGQUIT to the postmaster: a SIGKILL would leave its backends running until they notice.
fn quit(child: &Child) {
    if let Some(pid) = child
        .id()
        .and_then(|id| rustix::process::Pid::from_raw(id as i32))
    {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::QUIT);
    }
}

impl Drop for PrivatePostgres {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            quit(child);
            // Gone (its backends with it) before its directory is removed: 3 s at most, then
            // SIGKILL.
            let deadline = std::time::Instant::now() + Duration::from_secs(3);
            while matches!(child.try_wait(), Ok(None)) && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.start_kill();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
