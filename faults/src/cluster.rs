//! Private consensus clusters: three etcd members or a three-server ZooKeeper ensemble, started by
//! the lab on loopback (each member with its own ports and data directory, small heaps), the
//! leader found by asking the members, a member killed by pid and started again on its own
//! directory. Stopped by pid and removed when dropped; the shared local servers are never touched.
//!
//! The leader is read from the members themselves: etcd's `Status` (the member's id and the
//! leader it follows), ZooKeeper's `srvr` four-letter word (`Mode: leader`).

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, Command};

use crate::FaultError;
use crate::server::{free_port, private_dir};

/// Members of a private cluster: the smallest quorum that survives losing one.
pub const MEMBERS: usize = 3;

/// How long a cluster may take to elect its first leader, or a new one.
const ELECTION_WITHIN: Duration = Duration::from_secs(30);

/// Which consensus store a cluster runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Consensus {
    /// etcd members (Debian's etcd-server).
    Etcd,
    /// ZooKeeper servers in an ensemble (Debian's zookeeper).
    Zookeeper,
}

impl Consensus {
    fn name(self) -> &'static str {
        match self {
            Consensus::Etcd => "etcd",
            Consensus::Zookeeper => "zookeeper",
        }
    }
}

/// Where Debian's zookeeper package puts the server.
const ZK_JAR: &str = "/usr/share/java/zookeeper.jar";

/// Why the lab could not run a private cluster of `kind` here, if it could not.
pub fn unavailable(kind: Consensus) -> Option<&'static str> {
    match kind {
        Consensus::Etcd => crate::find_on_path("etcd")
            .is_none()
            .then_some("needs etcd on PATH (scripts/services.sh up installs etcd-server)"),
        Consensus::Zookeeper => crate::zookeeper::unavailable(),
    }
}

/// One member: its id (etcd's name `m<id>`, ZooKeeper's myid), its ports and directory, and its
/// process while it runs.
struct Member {
    id: u32,
    client_port: u16,
    /// etcd: the peer port; ZooKeeper: the quorum port.
    peer_port: u16,
    /// ZooKeeper's leader-election port (unused by etcd).
    election_port: u16,
    dir: PathBuf,
    child: Option<Child>,
}

/// A cluster the lab started.
pub struct PrivateCluster {
    kind: Consensus,
    bind: Ipv4Addr,
    members: Vec<Member>,
    /// The cluster's token (etcd refuses to join members of another cluster by it).
    token: String,
}

fn fail(kind: Consensus, what: impl std::fmt::Display) -> FaultError {
    FaultError::Server(format!("private {} cluster: {what}", kind.name()))
}

impl PrivateCluster {
    /// Starts [`MEMBERS`] members of `kind` on loopback, each on free ports in a directory of
    /// its own; ready when every member answers and they agree on a leader (within 30 s).
    pub async fn start(kind: Consensus) -> Result<Self, FaultError> {
        if let Some(why) = unavailable(kind) {
            return Err(fail(kind, why));
        }
        let bind = Ipv4Addr::LOCALHOST;
        let mut members = Vec::with_capacity(MEMBERS);
        for id in 1..=MEMBERS as u32 {
            members.push(Member {
                id,
                client_port: free_port(bind)?,
                peer_port: free_port(bind)?,
                election_port: free_port(bind)?,
                dir: private_dir(&format!("{}-m{id}", kind.name()))?,
                child: None,
            });
        }
        let mut cluster = PrivateCluster {
            kind,
            bind,
            members,
            token: format!(
                "lockbench-{}-{:08x}",
                std::process::id(),
                rand::random::<u32>()
            ),
        };
        // ZooKeeper elects the highest id among the first quorum whose logs are equal: the
        // last member starts first, so that the leader is the same member in every run.
        for index in (0..MEMBERS).rev() {
            cluster.launch(index)?;
        }
        cluster.leader_within(ELECTION_WITHIN, None).await?;
        Ok(cluster)
    }

    /// The members' client addresses as a backend config's URLs: one per member for etcd, one
    /// connect string for ZooKeeper.
    pub fn urls(&self) -> Vec<String> {
        let addresses = self
            .members
            .iter()
            .map(|m| format!("{}:{}", self.bind, m.client_port));
        match self.kind {
            Consensus::Etcd => addresses.map(|a| format!("http://{a}")).collect(),
            Consensus::Zookeeper => vec![addresses.collect::<Vec<_>>().join(",")],
        }
    }

    /// The peer list every member is started with.
    fn peers(&self) -> String {
        self.members
            .iter()
            .map(|m| match self.kind {
                Consensus::Etcd => format!("m{}=http://{}:{}", m.id, self.bind, m.peer_port),
                Consensus::Zookeeper => format!(
                    "server.{}={}:{}:{}",
                    m.id, self.bind, m.peer_port, m.election_port
                ),
            })
            .collect::<Vec<_>>()
            .join(match self.kind {
                Consensus::Etcd => ",",
                Consensus::Zookeeper => "\n",
            })
    }

    /// Starts member `index` on its directory (a new one, or the one it was killed with).
    fn launch(&mut self, index: usize) -> Result<(), FaultError> {
        let kind = self.kind;
        let peers = self.peers();
        let bind = self.bind;
        let token = self.token.clone();
        let member = &mut self.members[index];
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(member.dir.join("member.log"))
            .map_err(|e| fail(kind, e))?;
        let mut command = match kind {
            Consensus::Etcd => etcd_command(member, bind, &peers, &token),
            Consensus::Zookeeper => zookeeper_command(member, bind, &peers)?,
        };
        let child = crate::process::dies_with_the_lab(&mut command)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| fail(kind, format!("starting member {}: {e}", member.id)))?;
        member.child = Some(child);
        Ok(())
    }

    /// The member that leads now, if the members that answer agree on one.
    pub async fn leader(&self) -> Option<usize> {
        match self.kind {
            Consensus::Etcd => self.etcd_leader().await,
            Consensus::Zookeeper => self.zookeeper_leader().await,
        }
    }

    /// Waits (at most `within`) for a leader other than `not`; returns it.
    pub async fn leader_within(
        &self,
        within: Duration,
        not: Option<usize>,
    ) -> Result<usize, FaultError> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            if let Some(leader) = self.leader().await
                && Some(leader) != not
            {
                return Ok(leader);
            }
            if tokio::time::Instant::now() > deadline {
                let log = self
                    .members
                    .iter()
                    .filter_map(|m| last_line(&m.dir.join("member.log")))
                    .next()
                    .unwrap_or_else(|| "no log".to_string());
                return Err(fail(
                    self.kind,
                    format!("no leader within {within:?} (a member's log: {log})"),
                ));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// SIGKILLs member `index`: it dies without a word to its peers, as a crashed host does.
    pub async fn kill(&mut self, index: usize) {
        if let Some(mut child) = self.members.get_mut(index).and_then(|m| m.child.take()) {
            let _ = child.kill().await;
        }
    }

    /// Starts every member that is not running again, on its own directory, and waits until
    /// the cluster has a leader and every member answers.
    pub async fn heal(&mut self) -> Result<(), FaultError> {
        for index in 0..self.members.len() {
            if self.members[index].child.is_none() {
                self.launch(index)?;
            }
        }
        let deadline = tokio::time::Instant::now() + ELECTION_WITHIN;
        loop {
            if self.leader().await.is_some() && self.all_answer().await {
                return Ok(());
            }
            if tokio::time::Instant::now() > deadline {
                return Err(fail(
                    self.kind,
                    format!("not every member back within {ELECTION_WITHIN:?}"),
                ));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// True when every member answers as a leader or a follower.
    async fn all_answer(&self) -> bool {
        for member in &self.members {
            let answered = match self.kind {
                Consensus::Etcd => etcd_status(self.bind, member.client_port).await.is_some(),
                Consensus::Zookeeper => {
                    matches!(
                        zookeeper_mode(self.bind, member.client_port)
                            .await
                            .as_deref(),
                        Some("leader" | "follower")
                    )
                }
            };
            if !answered {
                return false;
            }
        }
        true
    }

    /// Stops every member.
    pub async fn stop(&mut self) {
        for index in 0..self.members.len() {
            self.kill(index).await;
        }
    }

    async fn etcd_leader(&self) -> Option<usize> {
        // A member's id is etcd's own (a hash); the leader is named by it.
        let mut ids = Vec::new();
        let mut leaders = Vec::new();
        for member in &self.members {
            if member.child.is_none() {
                ids.push(None);
                continue;
            }
            let status = etcd_status(self.bind, member.client_port).await;
            ids.push(status.map(|(id, _)| id));
            if let Some((_, leader)) = status
                && leader != 0
            {
                leaders.push(leader);
            }
        }
        let first = *leaders.first()?;
        if leaders.iter().any(|l| *l != first) {
            return None;
        }
        ids.iter().position(|id| *id == Some(first))
    }

    async fn zookeeper_leader(&self) -> Option<usize> {
        for (index, member) in self.members.iter().enumerate() {
            if member.child.is_none() {
                continue;
            }
            if zookeeper_mode(self.bind, member.client_port)
                .await
                .as_deref()
                == Some("leader")
            {
                return Some(index);
            }
        }
        None
    }
}

impl Drop for PrivateCluster {
    fn drop(&mut self) {
        for member in &mut self.members {
            if let Some(child) = &mut member.child {
                let _ = child.start_kill();
            }
            let _ = std::fs::remove_dir_all(&member.dir);
        }
    }
}

/// The command that starts etcd member `member` of the cluster `peers` (default heartbeat and
/// election timeout: 100 ms and 1 s, what a deployment runs with).
fn etcd_command(member: &Member, bind: Ipv4Addr, peers: &str, token: &str) -> Command {
    let client = format!("http://{bind}:{}", member.client_port);
    let peer = format!("http://{bind}:{}", member.peer_port);
    let mut command = Command::new("etcd");
    command
        .args(["--name", &format!("m{}", member.id)])
        .arg("--data-dir")
        .arg(member.dir.join("data"))
        .args(["--listen-client-urls", &client])
        .args(["--advertise-client-urls", &client])
        .args(["--listen-peer-urls", &peer])
        .args(["--initial-advertise-peer-urls", &peer])
        .args(["--initial-cluster", peers])
        .args(["--initial-cluster-state", "new"])
        .args(["--initial-cluster-token", token])
        .args(["--logger", "zap", "--log-level", "warn"]);
    command
}

/// The command that starts ZooKeeper server `member` of the ensemble `peers` (its `zoo.cfg`
/// and `myid` written first): tickTime 500 ms, as the lab's standalone ZooKeeper, so that
/// sessions of 1 s to 10 s can be negotiated; a 128 MiB heap.
fn zookeeper_command(member: &Member, bind: Ipv4Addr, peers: &str) -> Result<Command, FaultError> {
    let kind = Consensus::Zookeeper;
    let data = member.dir.join("data");
    std::fs::create_dir_all(&data).map_err(|e| fail(kind, e))?;
    std::fs::write(data.join("myid"), member.id.to_string()).map_err(|e| fail(kind, e))?;
    let config = format!(
        "tickTime=500\ninitLimit=20\nsyncLimit=5\ndataDir={}\nclientPort={}\nclientPortAddress={bind}\nadmin.enableServer=false\n4lw.commands.whitelist=srvr\n{peers}\n",
        data.display(),
        member.client_port,
    );
    std::fs::write(member.dir.join("zoo.cfg"), config).map_err(|e| fail(kind, e))?;
    std::fs::write(
        member.dir.join("log4j.properties"),
        "log4j.rootLogger=WARN, CONSOLE\nlog4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender\nlog4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout\n",
    )
    .map_err(|e| fail(kind, e))?;
    let mut command = Command::new("java");
    command
        .args(["-Xmx128m", "-XX:+UseSerialGC", "-cp"])
        .arg(format!("{}:{ZK_JAR}", member.dir.display()))
        .arg("org.apache.zookeeper.server.quorum.QuorumPeerMain")
        .arg(member.dir.join("zoo.cfg"));
    Ok(command)
}

/// etcd's `Status` of the member at `bind:port`: its own id and the leader it knows (0 for
/// none); `None` when it does not answer within a second.
async fn etcd_status(bind: Ipv4Addr, port: u16) -> Option<(u64, u64)> {
    let endpoint = format!("http://{bind}:{port}");
    let options = etcd_client::ConnectOptions::new()
        .with_connect_timeout(Duration::from_millis(500))
        .with_timeout(Duration::from_millis(500));
    let ask = async {
        let mut client = etcd_client::Client::connect([endpoint], Some(options))
            .await
            .ok()?;
        let status = client.status().await.ok()?;
        Some((status.header()?.member_id(), status.leader()))
    };
    tokio::time::timeout(Duration::from_secs(1), ask)
        .await
        .ok()
        .flatten()
}

/// A ZooKeeper server's mode by its `srvr` answer (`leader`, `follower`, `standalone`); `None`
/// when it does not answer, or answers that it is not serving (an election under way).
async fn zookeeper_mode(bind: Ipv4Addr, port: u16) -> Option<String> {
    let ask = async {
        let mut stream = tokio::net::TcpStream::connect((bind, port)).await.ok()?;
        stream.write_all(b"srvr").await.ok()?;
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.ok()?;
        answer
            .lines()
            .find_map(|l| l.strip_prefix("Mode: "))
            .map(|m| m.trim().to_string())
    };
    tokio::time::timeout(Duration::from_secs(1), ask)
        .await
        .ok()
        .flatten()
}

fn last_line(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map(|l| l.chars().take(300).collect())
}
