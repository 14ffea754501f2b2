//! A private PgBouncer in front of a private Postgres: a configuration of the lab's in a directory
//! of its own, listening on a free loopback port, run as the `postgres` user (PgBouncer refuses
//! root) in the foreground, so that it dies with the lab; stopped by pid and its directory
//! removed when dropped.

use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::time::Duration;

use tokio::process::{Child, Command};

use crate::FaultError;
use crate::scenario::{POOLER_IDLE_TIMEOUT, PoolerMode};
use crate::server::{free_port, private_dir};

/// Debian's path of the binary (the package puts it outside a user's PATH).
const BINARY: &str = "/usr/sbin/pgbouncer";

fn fail(what: impl std::fmt::Display) -> FaultError {
    FaultError::Server(format!("private pgbouncer: {what}"))
}

/// Why the lab could not run a private PgBouncer here, if it could not.
pub fn unavailable() -> Option<&'static str> {
    let found =
        std::path::Path::new(BINARY).is_file() || crate::find_on_path("pgbouncer").is_some();
    (!found || crate::postgres::unavailable().is_some())
        .then_some("needs pgbouncer and postgresql (scripts/services.sh up installs them)")
}

/// A PgBouncer the lab started.
pub struct PrivatePgbouncer {
    dir: PathBuf,
    port: u16,
    child: Option<Child>,
}

impl PrivatePgbouncer {
    /// Starts one in `mode` in front of the Postgres on 127.0.0.1:`postgres_port`; ready when a
    /// query through it is answered (within 15 s).
    pub async fn start(postgres_port: u16, mode: PoolerMode) -> Result<Self, FaultError> {
        let binary = if std::path::Path::new(BINARY).is_file() {
            PathBuf::from(BINARY)
        } else {
            crate::find_on_path("pgbouncer")
                .ok_or_else(|| fail("not installed; scripts/services.sh up installs pgbouncer"))?
        };
        let (uid, gid) = crate::postgres::postgres_user()?;
        let dir = private_dir("pgbouncer")?;
        let port = free_port(Ipv4Addr::LOCALHOST)?;
        let (pool_mode, reset) = match mode {
            PoolerMode::Transaction => ("transaction", "DISCARD ALL"),
            PoolerMode::Session => ("session", "DISCARD ALL"),
            PoolerMode::SessionNoReset => ("session", ""),
        };
        let ini = dir.join("pgbouncer.ini");
        let config = format!(
            "[databases]\n* = host=127.0.0.1 port={postgres_port} user=postgres\n\n\
             [pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\n\
             auth_type = any\npool_mode = {pool_mode}\nserver_reset_query = {reset}\n\
             max_client_conn = 100\ndefault_pool_size = 10\nserver_idle_timeout = {idle}\n\
             ignore_startup_parameters = extra_float_digits,options\n\
             logfile = {log}\n",
            idle = POOLER_IDLE_TIMEOUT.as_secs(),
            log = dir.join("pgbouncer.log").display(),
        );
        std::fs::write(&ini, config).map_err(fail)?;
        for path in [&dir, &ini] {
            std::os::unix::fs::chown(path, Some(uid), Some(gid))
                .map_err(|e| fail(format!("chown {}: {e}", path.display())))?;
        }
        let mut command = Command::new(binary);
        command.arg(&ini);
        let child = crate::postgres::spawn_as(&mut command, (uid, gid))
            .map_err(|e| fail(format!("starting pgbouncer: {e}")))?;
        let server = PrivatePgbouncer {
            dir,
            port,
            child: Some(child),
        };
        if crate::postgres::answers_within(&server.url(), Duration::from_secs(15)).await {
            Ok(server)
        } else {
            Err(fail(format!("no answer on 127.0.0.1:{port} within 15s")))
        }
    }

    /// Its URL.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// Stops it (SIGKILL: it keeps nothing) and waits for it to be gone.
    pub async fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill().await;
        }
    }
}

impl Drop for PrivatePgbouncer {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.start_kill();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
