//! A private ZooKeeper for the clock-jump control: a standalone server the lab starts on a free
//! loopback port with a data directory of its own and the wall-clock shim preloaded into its JVM,
//! stopped by pid and removed when dropped. ZooKeeper expires sessions by a monotonic clock, so a
//! wall-clock jump must not expire its locks; the lab checks that the jump reached the server by
//! the creation time the server stamps on a znode.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::process::{Child, Command};
use zookeeper_client::{Acls, Client, CreateMode};

use crate::FaultError;
use crate::server::{CLOCK_FILE, free_port, private_dir, write_clock_offset};

/// Where Debian's zookeeper package puts the server.
const JAR: &str = "/usr/share/java/zookeeper.jar";

/// A ZooKeeper server the lab started.
pub struct PrivateZookeeper {
    dir: PathBuf,
    port: u16,
    child: Option<Child>,
}

fn fail(what: impl std::fmt::Display) -> FaultError {
    FaultError::Server(format!("private zookeeper: {what}"))
}

/// Why the lab could not run a private ZooKeeper here, if it could not.
pub fn unavailable() -> Option<&'static str> {
    let java = crate::find_on_path("java").is_some();
    (!java || !Path::new(JAR).is_file())
        .then_some("needs java and the zookeeper package (scripts/services.sh up installs them)")
}

impl PrivateZookeeper {
    /// Starts a standalone server (tickTime 500 ms: sessions of 1 s to 10 s) with `shim`
    /// preloaded; ready when a client connects (within 20 s).
    pub async fn start(shim: &Path) -> Result<Self, FaultError> {
        let dir = private_dir("zk")?;
        std::fs::create_dir_all(dir.join("data")).map_err(fail)?;
        let port = free_port(Ipv4Addr::LOCALHOST)?;
        let config = format!(
            "tickTime=500\ndataDir={}\nclientPort={port}\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n",
            dir.join("data").display()
        );
        std::fs::write(dir.join("zoo.cfg"), config).map_err(fail)?;
        std::fs::write(
            dir.join("log4j.properties"),
            "log4j.rootLogger=WARN, CONSOLE\nlog4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender\nlog4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout\n",
        )
        .map_err(fail)?;
        let mut java = Command::new("java");
        let child = crate::process::dies_with_the_lab(&mut java)
            .args(["-Xmx128m", "-cp"])
            .arg(format!("{}:{JAR}", dir.display()))
            .arg("org.apache.zookeeper.server.ZooKeeperServerMain")
            .arg(dir.join("zoo.cfg"))
            .env("LD_PRELOAD", shim)
            .env("LOCKBENCH_WALLCLOCK_FILE", dir.join(CLOCK_FILE))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| fail(format!("starting java: {e}")))?;
        let server = PrivateZookeeper {
            dir,
            port,
            child: Some(child),
        };
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            if server.client().await.is_ok() {
                return Ok(server);
            }
            if tokio::time::Instant::now() > deadline {
                return Err(fail(format!("no session on 127.0.0.1:{port} within 20s")));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn client(&self) -> Result<Client, FaultError> {
        let address = self.url();
        let connector = Client::connector()
            .with_session_timeout(Duration::from_secs(2))
            .with_connection_timeout(Duration::from_secs(1));
        tokio::time::timeout(Duration::from_secs(2), connector.connect(&address))
            .await
            .map_err(|_| fail("no session within 2s"))?
            .map_err(fail)
    }

    /// Its address, as a config URL.
    pub fn url(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Moves its wall clock `ms` ahead, then checks the server sees it: a znode created now must
    /// carry a creation time that far ahead (within a second). Returns the measured shift, ms.
    pub async fn jump_clock(&self, ms: i64) -> Result<i64, FaultError> {
        write_clock_offset(&self.dir, ms)?;
        let client = self.client().await?;
        let options = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
        let (stat, _) = client
            .create("/lockbench-clock-check", b"", &options)
            .await
            .map_err(fail)?;
        let _ = client.delete("/lockbench-clock-check", None).await;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        let shift = stat.ctime - now;
        if (shift - ms).abs() > 1000 {
            return Err(fail(format!(
                "the clock jump did not reach the server: a znode's creation time is {shift} ms from now, {ms} ms asked"
            )));
        }
        Ok(shift)
    }

    /// Puts its wall clock back in step.
    pub fn reset_clock(&self) -> Result<(), FaultError> {
        write_clock_offset(&self.dir, 0)
    }

    /// Stops it.
    pub async fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill().await;
        }
    }
}

impl Drop for PrivateZookeeper {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.start_kill();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
