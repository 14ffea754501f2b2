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
use crate::netns::Namespace;
use crate::server::{free_port, private_dir};

/// Members of a private cluster: the smallest quorum that survives losing one.
pub const MEMBERS: usize = 3;

/// The member that leads a split cluster, inside the lab's namespace: the last (ZooKeeper's
/// highest id, which its first election picks).
pub(crate) const SPLIT: usize = MEMBERS - 1;

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
    /// The consensus store `kind` runs on, if it is one (etcd, ZooKeeper).
    pub fn of(kind: lockbench_locks::BackendKind) -> Option<Self> {
        match kind {
            lockbench_locks::BackendKind::Etcd => Some(Consensus::Etcd),
            lockbench_locks::BackendKind::Zookeeper => Some(Consensus::Zookeeper),
            lockbench_locks::BackendKind::Memory
            | lockbench_locks::BackendKind::Redis
            | lockbench_locks::BackendKind::Redlock
            | lockbench_locks::BackendKind::PgSession
            | lockbench_locks::BackendKind::PgXact => None,
        }
    }

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
    /// Where it listens: loopback, a lab namespace's host end, or (the member that leads a
    /// split cluster) the namespace's own end.
    bind: Ipv4Addr,
    /// The command prefix that runs it inside the namespace; empty on the host.
    prefix: Vec<String>,
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
        Self::start_on(kind, None).await
    }

    /// As [`PrivateCluster::start`], the member [`SPLIT`] inside `ns` (on its own end) and the
    /// others on its host end, and leading: the namespace's cut then leaves the leader, and
    /// whatever else runs inside, in a minority.
    pub(crate) async fn start_split(kind: Consensus, ns: &Namespace) -> Result<Self, FaultError> {
        let mut cluster = Self::start_on(kind, Some(ns)).await?;
        cluster.lead(SPLIT).await?;
        Ok(cluster)
    }

    async fn start_on(kind: Consensus, ns: Option<&Namespace>) -> Result<Self, FaultError> {
        if let Some(why) = unavailable(kind) {
            return Err(fail(kind, why));
        }
        let mut members = Vec::with_capacity(MEMBERS);
        for index in 0..MEMBERS {
            let (bind, prefix) = match ns {
                Some(ns) if index == SPLIT => (ns.inner_ip(), ns.prefix()),
                Some(ns) => (ns.host_ip(), Vec::new()),
                None => (Ipv4Addr::LOCALHOST, Vec::new()),
            };
            let id = index as u32 + 1;
            // A port free on the host is free inside a new namespace too.
            let free = |bind: Ipv4Addr| {
                free_port(if prefix.is_empty() {
                    bind
                } else {
                    Ipv4Addr::LOCALHOST
                })
            };
            members.push(Member {
                id,
                bind,
                client_port: free(bind)?,
                peer_port: free(bind)?,
                election_port: free(bind)?,
                dir: private_dir(&format!("{}-m{id}", kind.name()))?,
                prefix: prefix.clone(),
                child: None,
            });
        }
        // Its directories are in this process's register (a SIGKILL leaves them to the next
        // lab's sweep), which outlives the cluster only if something else keeps it: `bench`
        // starts clusters outside any lab. Dropping the cluster ends its part.
        crate::register::lab_started();
        let mut cluster = PrivateCluster {
            kind,
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

    /// Makes member `index` the leader: etcd hands leadership over (`MoveLeader`); ZooKeeper,
    /// which has no such request, loses its leader until `index` wins the election (the highest
    /// id among members whose logs are equal), each lost member started again at once.
    pub(crate) async fn lead(&mut self, index: usize) -> Result<(), FaultError> {
        // A member back from a cut may call an election as it rejoins (etcd 3.4 runs without
        // pre-vote), so leadership can move under a request: each try reads it afresh.
        let mut last = None;
        for _ in 0..10 {
            let leader = self.leader_within(ELECTION_WITHIN, None).await?;
            if leader == index {
                return Ok(());
            }
            match self.kind {
                Consensus::Etcd => {
                    if let Err(e) = self.move_leader(leader, index).await {
                        last = Some(e);
                        tokio::time::sleep(Duration::from_millis(300)).await;
                        continue;
                    }
                }
                Consensus::Zookeeper => {
                    self.kill(leader).await;
                    self.leader_within(ELECTION_WITHIN, Some(leader)).await?;
                    self.heal().await?;
                }
            }
            let deadline = tokio::time::Instant::now() + ELECTION_WITHIN;
            while self.leader().await == Some(leader) && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        Err(last.unwrap_or_else(|| {
            fail(
                self.kind,
                format!("member {} did not become the leader", index + 1),
            )
        }))
    }

    /// etcd: asks the leader (member `from`) to hand leadership to member `to`.
    async fn move_leader(&self, from: usize, to: usize) -> Result<(), FaultError> {
        let (leader, target) = (&self.members[from], &self.members[to]);
        let (Some((_, _)), Some((target_id, _))) = (
            etcd_status(leader.bind, leader.client_port).await,
            etcd_status(target.bind, target.client_port).await,
        ) else {
            return Err(fail(self.kind, "a member did not answer its status"));
        };
        let endpoint = format!("http://{}:{}", leader.bind, leader.client_port);
        let mut client = etcd_client::Client::connect([endpoint], None)
            .await
            .map_err(|e| fail(self.kind, e))?;
        tokio::time::timeout(Duration::from_secs(5), client.move_leader(target_id))
            .await
            .map_err(|_| fail(self.kind, "MoveLeader did not answer within 5s"))?
            .map_err(|e| fail(self.kind, format!("MoveLeader: {e}")))?;
        Ok(())
    }

    /// The members' client addresses as a backend config's URLs: one per member for etcd, one
    /// connect string for ZooKeeper.
    pub fn urls(&self) -> Vec<String> {
        self.urls_of(|_| true)
    }

    /// [`PrivateCluster::urls`] of member `index` alone: a client that cannot move to another.
    pub(crate) fn member_urls(&self, index: usize) -> Vec<String> {
        self.urls_of(|i| i == index)
    }

    /// [`PrivateCluster::urls`] of the members outside the namespace of a split cluster: where
    /// a client on the majority's side is configured.
    pub(crate) fn majority_urls(&self) -> Vec<String> {
        self.urls_of(|index| index != SPLIT)
    }

    fn urls_of(&self, keep: impl Fn(usize) -> bool) -> Vec<String> {
        let addresses = self
            .members
            .iter()
            .enumerate()
            .filter(|(index, _)| keep(*index))
            .map(|(_, m)| format!("{}:{}", m.bind, m.client_port));
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
                Consensus::Etcd => format!("m{}=http://{}:{}", m.id, m.bind, m.peer_port),
                Consensus::Zookeeper => format!(
                    "server.{}={}:{}:{}",
                    m.id, m.bind, m.peer_port, m.election_port
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
        let token = self.token.clone();
        let member = &mut self.members[index];
        let bind = member.bind;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(member.dir.join("member.log"))
            .map_err(|e| fail(kind, e))?;
        let (program, args) = match kind {
            Consensus::Etcd => etcd_command(member, bind, &peers, &token),
            Consensus::Zookeeper => zookeeper_command(member, bind, &peers)?,
        };
        let mut command = match member.prefix.split_first() {
            Some((first, rest)) => {
                let mut command = Command::new(first);
                command.args(rest).arg(program);
                command
            }
            None => Command::new(program),
        };
        command.args(args);
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
                Consensus::Etcd => etcd_status(member.bind, member.client_port).await.is_some(),
                Consensus::Zookeeper => {
                    matches!(
                        zookeeper_mode(member.bind, member.client_port)
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
            let status = etcd_status(member.bind, member.client_port).await;
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
            if zookeeper_mode(member.bind, member.client_port)
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
        let mut clean = true;
        for member in &mut self.members {
            if let Some(child) = &mut member.child {
                let _ = child.start_kill();
            }
            // Gone before its directory is removed (a JVM writes until it dies): 3 s at most.
            if let Some(child) = &mut member.child {
                let deadline = std::time::Instant::now() + Duration::from_secs(3);
                while matches!(child.try_wait(), Ok(None)) && std::time::Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
            clean &= std::fs::remove_dir_all(&member.dir).is_ok() || !member.dir.exists();
        }
        crate::register::lab_ended(clean);
    }
}

/// The program and arguments that start etcd member `member` of the cluster `peers` (default
/// heartbeat and election timeout: 100 ms and 1 s, what a deployment runs with).
fn etcd_command(
    member: &Member,
    bind: Ipv4Addr,
    peers: &str,
    token: &str,
) -> (String, Vec<String>) {
    let client = format!("http://{bind}:{}", member.client_port);
    let peer = format!("http://{bind}:{}", member.peer_port);
    let args = [
        "--name",
        &format!("m{}", member.id),
        "--data-dir",
        &member.dir.join("data").display().to_string(),
        "--listen-client-urls",
        &client,
        "--advertise-client-urls",
        &client,
        "--listen-peer-urls",
        &peer,
        "--initial-advertise-peer-urls",
        &peer,
        "--initial-cluster",
        peers,
        "--initial-cluster-state",
        "new",
        "--initial-cluster-token",
        token,
        "--logger",
        "zap",
        "--log-level",
        "warn",
    ];
    (
        "etcd".to_string(),
        args.iter().map(|a| a.to_string()).collect(),
    )
}

/// The program and arguments that start ZooKeeper server `member` of the ensemble `peers` (its
/// `zoo.cfg` and `myid` written first): tickTime 500 ms, as the lab's standalone ZooKeeper, so
/// that sessions of 1 s to 10 s can be negotiated; a 128 MiB heap.
fn zookeeper_command(
    member: &Member,
    bind: Ipv4Addr,
    peers: &str,
) -> Result<(String, Vec<String>), FaultError> {
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
    let args = vec![
        "-Xmx128m".to_string(),
        "-XX:+UseSerialGC".to_string(),
        "-cp".to_string(),
        format!("{}:{ZK_JAR}", member.dir.display()),
        "org.apache.zookeeper.server.quorum.QuorumPeerMain".to_string(),
        member.dir.join("zoo.cfg").display().to_string(),
    ];
    Ok(("java".to_string(), args))
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
