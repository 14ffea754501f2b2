//! The fault lab's identities: a [`Scenario`], a [`Variant`] of it (with the settings a variant
//! is made of: [`Persistence`], [`PoolMode`], [`OnFailure`]), and the [`CellId`] of a measured
//! cell. They are types wherever lockbench reads them (the records, the rules, the report), and
//! strings only at the serde boundary, under the names results of schema 4 already carry: a
//! `scenario` field and a `variant` field. A match on a [`Variant`] is exhaustive, so a new one does
//! not compile until the rules and the report say what it means. What a variant injects and how
//! is the lab's (`lockbench-faults`), not this module's.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::backend::BackendId;

/// A fault the lab injects, of which each [`Variant`] is one configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scenario {
    /// The holder stopped (SIGSTOP) while it holds the lock.
    Pause,
    /// A Redis server killed and restarted while the lock is held.
    Restart,
    /// Redlock's nodes restarted, their clocks jumped, or one of them slow.
    Redlock,
    /// A pooled Postgres connection given back holding the lock.
    PoolLeak,
    /// The holder cut off from its server for a while.
    Partition,
    /// A server's wall clock jumped ahead.
    ClockJump,
    /// The holder gone: killed, its work surviving it, or its host vanished.
    Crash,
    /// A replica promoted without the key.
    Failover,
    /// The lock server unreachable as a run starts.
    Outage,
    /// Postgres reached through PgBouncer.
    Pooler,
    /// The holder's release reaching the server after its lease expired and another worker
    /// took the lock.
    Release,
    /// The holder's job, alive and working, runs past its lease (slow queries, a slow API).
    Overrun,
    /// A slow link between the holder and its lock server during its acquisition.
    Latency,
    /// A member of a private cluster lost while the lock is held: an etcd or ZooKeeper leader
    /// among three members, a Postgres primary with a streaming standby promoted in its place.
    Cluster,
}

impl Scenario {
    /// Every scenario, in the matrix's order.
    pub const ALL: [Scenario; 14] = [
        Scenario::Pause,
        Scenario::Restart,
        Scenario::Redlock,
        Scenario::PoolLeak,
        Scenario::Partition,
        Scenario::ClockJump,
        Scenario::Crash,
        Scenario::Failover,
        Scenario::Outage,
        Scenario::Pooler,
        Scenario::Release,
        Scenario::Overrun,
        Scenario::Latency,
        Scenario::Cluster,
    ];

    /// Its name on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Pause => "pause",
            Scenario::Restart => "restart",
            Scenario::Redlock => "redlock",
            Scenario::PoolLeak => "pool-leak",
            Scenario::Partition => "partition",
            Scenario::ClockJump => "clock-jump",
            Scenario::Crash => "crash",
            Scenario::Failover => "failover",
            Scenario::Outage => "outage",
            Scenario::Pooler => "pooler",
            Scenario::Release => "release",
            Scenario::Overrun => "overrun",
            Scenario::Latency => "latency",
            Scenario::Cluster => "cluster",
        }
    }
}

impl std::fmt::Display for Scenario {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// How a Redis server keeps its data across a restart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Persistence {
    /// Nothing: a restart comes back empty.
    None,
    /// RDB snapshots on Redis's default save points (none is due within a trial).
    Rdb,
    /// Append-only file, fsynced every second (written before each reply).
    AofEverysec,
    /// Append-only file, fsynced before each reply.
    AofAlways,
}

/// What a Redis primary must hear from its replicas before a lock's write counts, in a Sentinel
/// cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReplicaGuard {
    /// Nothing: replication is asynchronous.
    None,
    /// `WAIT 1` after the grant (`wait_replicas = 1`): the grant waits until a replica has it.
    Wait,
    /// `min-replicas-to-write 1` with `min-replicas-max-lag 1` on every server: the primary
    /// refuses writes unless a replica acknowledged its stream within a second, which says the
    /// replica answers, not that it has the write.
    MinReplicas,
}

/// How a pool treats a connection given back, and how its jobs lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PoolMode {
    /// Session locks, connections given back as they are (sqlx's default, PgBouncer in
    /// transaction mode without `server_reset_query`).
    NoReset,
    /// Session locks, `SELECT pg_advisory_unlock_all()` when a connection is given back.
    UnlockAll,
    /// Transaction locks: each job holds a transaction (and so its connection) to the end.
    Xact,
}

/// How the lab's PgBouncer pools server connections, and whether it resets one given back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PoolerMode {
    /// `pool_mode = transaction`: a server connection is a client's for one transaction.
    Transaction,
    /// `pool_mode = session`: a client's for its whole connection, reset with `DISCARD ALL`
    /// (PgBouncer's default `server_reset_query`) when the client goes.
    Session,
    /// Session mode with `server_reset_query` empty: given back as it is.
    SessionNoReset,
}

/// What a worker does when an acquisition fails (the server unreachable), as opposed to the
/// lock being held.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OnFailure {
    /// Skips the run (says `timed-out`): a missed run.
    Skip,
    /// Tries again until its wait is over.
    #[default]
    Queue,
    /// Runs the job without the lock.
    RunUnlocked,
}

/// A fault and one configuration of it. Each has a name of its own among all variants (a test
/// holds it), which is what results store beside the scenario's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Variant {
    /// The holder is stopped for 2 x TTL; after SIGCONT it writes once, then checks its lease.
    PauseNaive,
    /// A heartbeat renews every TTL/3 and gives up after 2/3 TTL without one; the holder is
    /// stopped for TTL/6, which never reaches the give-up deadline whenever the stop begins (the
    /// last renewal is at most TTL/3 old: TTL/6 of margin).
    PauseHeartbeatShort,
    /// As above, stopped for 1.5 x TTL: longer than any time left on the lease.
    PauseHeartbeatLong,
    /// The lock server is killed (SIGKILL) while the lock is held and restarted at once.
    Restart(Persistence),
    /// As `Restart(AofEverysec)`, but the append-only files are put back as they were before the
    /// acquisition (a power loss that dropped what was not yet fsynced).
    RestartPowerLoss,
    /// Killed, restarted empty only after the TTL has passed (the Redis distlock page's
    /// mitigation).
    RestartDelayed,
    /// Redlock over five private servers: one restarts without the key.
    RedlockRestart,
    /// Redlock over five private servers: two nodes' wall clocks jump ahead by 2 x TTL.
    RedlockClockJump,
    /// Both at once: the seed's migration story (a stale node plus two clock jumps).
    RedlockRestartAndClockJump,
    /// Redlock with one node stopped during the holder's acquisition, so that little of the
    /// validity is left when it returns. `checked`: the client compares the validity left with
    /// its job before starting it.
    RedlockLateStart {
        /// The client checks the validity before its critical section.
        checked: bool,
    },
    /// Two jobs on one pooled Postgres connection; the first skips its release.
    PoolLeak(PoolMode),
    /// The holder cut off from its server for 2 x TTL; a heartbeat renews and the job stops at
    /// the give-up deadline.
    PartitionHeartbeat,
    /// As above, but the job never asks the heartbeat: it keeps working.
    PartitionNoGiveUp,
    /// Postgres: as `PartitionHeartbeat`, the server's TCP keepalive set to give up after about
    /// 3 s (idle 1 s, 2 probes 1 s apart) instead of the system's two hours.
    PartitionKeepalive,
    /// A control: the lock server's wall clock jumps 2 x TTL ahead while the lock is held.
    ClockJump,
    /// The holder SIGKILLed mid-job: how long its lock blocks the next worker (crash recovery).
    CrashKilled,
    /// The process holding the lock SIGKILLed while the job process it started writes on.
    CrashWorkSurvives,
    /// The holder's host vanishes: its process frozen (SIGSTOP) and every packet of its network
    /// namespace dropped, so that no FIN, RST or keepalive answer ever leaves it; how long until
    /// the next worker is granted. `keepalive`: Postgres only, the holder's own connection
    /// carries the per-connection TCP keepalive the decision prescribes (scaled to the lab).
    CrashHostVanished {
        /// The holder's connection sets `tcp_keepalives_*` for its own session.
        keepalive: bool,
    },
    /// A private primary and replica, the replica held back while the holder acquires on the
    /// primary; the primary killed, the replica promoted, a contender acquiring on it.
    Failover {
        /// `WAIT 1` after acquiring: the holder's grant waits for the replica.
        wait: bool,
    },
    /// The lock server unreachable (SIGSTOPped) as the next run starts, which follows the policy.
    Outage(OnFailure),
    /// Holder and contender reach Postgres through the lab's PgBouncer: in transaction mode, a
    /// plain job; in session mode, the holder killed mid-job, with and without the reset.
    Pooler(PoolerMode),
    /// The holder's job ends within its TTL, then its process stops (SIGSTOP) before the
    /// release is sent, for 1.5 TTL; a contender takes the expired lock and works on; the
    /// holder's release arrives; a next run asks for the lock at once. `checked`: the client's
    /// own release (token-checked in lockbench's clients); unchecked: a plain `DEL` of the key,
    /// as hand-written locks do (the positive control).
    ReleaseAfterExpiry {
        /// The release is the client's own; otherwise a plain delete of the key.
        checked: bool,
    },
    /// No fault is injected: the holder's job, alive, lasts twice its granted lease. Without
    /// `heartbeat` it renews only if its client does by itself (a library's auto-renewal, a
    /// session kept alive); with it, lockbench's heartbeat renews every third of the lease and
    /// the job stops at the give-up deadline.
    Overrun {
        /// lockbench's heartbeat renews the lease.
        heartbeat: bool,
    },
    /// The server's reply to the holder's first acquisition is held for 1.5 x the TTL on its
    /// way back (a slow link): the lock has expired when the acquisition returns. `checked`:
    /// the job starts only if the validity left (what the client reports, and never more than
    /// the TTL less the acquisition's own time) covers its job, and acquires again otherwise.
    SlowReply {
        /// The job checks the validity left before it starts.
        checked: bool,
    },
    /// Three private members (etcd, ZooKeeper): the leader SIGKILLed while the lock is held and
    /// the contender waits; restarted after the trial.
    ClusterLeaderKilled,
    /// Three private members (etcd, ZooKeeper), the contender connected to a follower only: that
    /// member SIGKILLed as the holder releases, and started again a quarter of the TTL later;
    /// it must catch up with the release before it can grant the lock on.
    ClusterMemberRestarted,
    /// A private Postgres primary and its streaming standby: the primary lost (immediate
    /// shutdown) while the lock is held, the standby promoted, a contender acquiring on it.
    ClusterPrimaryPromoted,
    /// Three private members (etcd, ZooKeeper), the leader and the holder in a network namespace
    /// cut off from the other two (a minority), the contender with the majority. `give_up`: the
    /// holder's heartbeat stops its job at the give-up deadline; otherwise it works on.
    ClusterLeaderIsolated {
        /// The job stops when no renewal succeeded for 2/3 of the TTL.
        give_up: bool,
    },
    /// A private Redis primary, two replicas and three Sentinels, every client finding the
    /// primary through the Sentinels; what the primary sends both replicas held back (one
    /// replica's only with `WAIT 1`, so that the other acknowledges the grant); the primary
    /// SIGKILLed while the lock is held and the contender waits; the Sentinels promote a replica.
    ClusterSentinelFailover {
        /// What the grant must hear from a replica before it counts.
        guard: ReplicaGuard,
    },
    /// The same set, the primary and the holder in a network namespace cut off from the replicas
    /// and the Sentinels (a minority of one server), the contender with them; the Sentinels
    /// promote a replica while the old primary goes on taking the holder's renewals.
    ClusterSentinelPrimaryIsolated {
        /// `WAIT 1` after acquiring and after each renewal: a renewal no replica acknowledged
        /// fails, and the holder's heartbeat gives up from its last acknowledged one.
        wait: bool,
    },
}

impl Variant {
    /// Why the variant cannot run with the workers locking through a client library's adapter,
    /// if it cannot: it needs something of lockbench's own client that the adapter protocol
    /// does not carry, or a backend no shipped library locks on.
    pub fn needs_own_client(self) -> Option<&'static str> {
        match self {
            Variant::PauseNaive
            | Variant::PauseHeartbeatShort
            | Variant::PauseHeartbeatLong
            | Variant::Restart(_)
            | Variant::RestartPowerLoss
            | Variant::RestartDelayed
            | Variant::RedlockRestart
            | Variant::RedlockClockJump
            | Variant::RedlockRestartAndClockJump
            | Variant::RedlockLateStart { .. }
            | Variant::PartitionHeartbeat
            | Variant::PartitionNoGiveUp
            | Variant::ClockJump
            | Variant::CrashKilled
            | Variant::CrashWorkSurvives
            | Variant::CrashHostVanished { keepalive: false }
            | Variant::Failover { wait: false }
            | Variant::ReleaseAfterExpiry { checked: true }
            | Variant::Overrun { .. }
            | Variant::SlowReply { .. }
            | Variant::ClusterLeaderKilled
            | Variant::ClusterMemberRestarted
            | Variant::ClusterPrimaryPromoted
            | Variant::ClusterLeaderIsolated { .. }
            | Variant::ClusterSentinelFailover {
                guard: ReplicaGuard::None | ReplicaGuard::MinReplicas,
            }
            | Variant::ClusterSentinelPrimaryIsolated { wait: false } => None,
            Variant::ReleaseAfterExpiry { checked: false } => Some(
                "its holder releases with a plain DEL of lockbench's own key, the positive \
                 control of lockbench's client, which no library does",
            ),
            Variant::Failover { wait: true }
            | Variant::ClusterSentinelFailover {
                guard: ReplicaGuard::Wait,
            }
            | Variant::ClusterSentinelPrimaryIsolated { wait: true } => {
                Some("its holder sends WAIT 1 after the grant, which no library's lock does")
            }
            Variant::Outage(_) => Some(
                "its workers start while the server is unreachable, and an adapter needs the \
                 server at its hello",
            ),
            Variant::Pooler(_) => None,
            Variant::PoolLeak(_) => Some(
                "its two jobs share one pooled connection of lockbench's own pool, which no \
                 library's lock does",
            ),
            Variant::PartitionKeepalive | Variant::CrashHostVanished { keepalive: true } => Some(
                "its keepalive travels as options in the holder's Postgres URL, which a library \
                 need not pass on (tooz keeps only the host, port, database, user and password)",
            ),
        }
    }

    /// Every variant, in the matrix's order.
    pub const ALL: [Variant; 49] = [
        Variant::PauseNaive,
        Variant::PauseHeartbeatShort,
        Variant::PauseHeartbeatLong,
        Variant::Restart(Persistence::None),
        Variant::Restart(Persistence::Rdb),
        Variant::Restart(Persistence::AofEverysec),
        Variant::Restart(Persistence::AofAlways),
        Variant::RestartPowerLoss,
        Variant::RestartDelayed,
        Variant::RedlockRestart,
        Variant::RedlockClockJump,
        Variant::RedlockRestartAndClockJump,
        Variant::RedlockLateStart { checked: false },
        Variant::RedlockLateStart { checked: true },
        Variant::PoolLeak(PoolMode::NoReset),
        Variant::PoolLeak(PoolMode::UnlockAll),
        Variant::PoolLeak(PoolMode::Xact),
        Variant::PartitionHeartbeat,
        Variant::PartitionNoGiveUp,
        Variant::PartitionKeepalive,
        Variant::ClockJump,
        Variant::CrashKilled,
        Variant::CrashWorkSurvives,
        Variant::CrashHostVanished { keepalive: false },
        Variant::CrashHostVanished { keepalive: true },
        Variant::Failover { wait: false },
        Variant::Failover { wait: true },
        Variant::Outage(OnFailure::Skip),
        Variant::Outage(OnFailure::Queue),
        Variant::Outage(OnFailure::RunUnlocked),
        Variant::Pooler(PoolerMode::Transaction),
        Variant::Pooler(PoolerMode::Session),
        Variant::Pooler(PoolerMode::SessionNoReset),
        Variant::ReleaseAfterExpiry { checked: true },
        Variant::ReleaseAfterExpiry { checked: false },
        Variant::Overrun { heartbeat: false },
        Variant::Overrun { heartbeat: true },
        Variant::SlowReply { checked: false },
        Variant::SlowReply { checked: true },
        Variant::ClusterLeaderKilled,
        Variant::ClusterLeaderIsolated { give_up: true },
        Variant::ClusterLeaderIsolated { give_up: false },
        Variant::ClusterMemberRestarted,
        Variant::ClusterPrimaryPromoted,
        Variant::ClusterSentinelFailover {
            guard: ReplicaGuard::None,
        },
        Variant::ClusterSentinelFailover {
            guard: ReplicaGuard::Wait,
        },
        Variant::ClusterSentinelFailover {
            guard: ReplicaGuard::MinReplicas,
        },
        Variant::ClusterSentinelPrimaryIsolated { wait: false },
        Variant::ClusterSentinelPrimaryIsolated { wait: true },
    ];

    /// The scenario it belongs to.
    pub fn scenario(self) -> Scenario {
        match self {
            Variant::PauseNaive | Variant::PauseHeartbeatShort | Variant::PauseHeartbeatLong => {
                Scenario::Pause
            }
            Variant::Restart(_) | Variant::RestartPowerLoss | Variant::RestartDelayed => {
                Scenario::Restart
            }
            Variant::RedlockRestart
            | Variant::RedlockClockJump
            | Variant::RedlockRestartAndClockJump
            | Variant::RedlockLateStart { .. } => Scenario::Redlock,
            Variant::PoolLeak(_) => Scenario::PoolLeak,
            Variant::PartitionHeartbeat
            | Variant::PartitionNoGiveUp
            | Variant::PartitionKeepalive => Scenario::Partition,
            Variant::ClockJump => Scenario::ClockJump,
            Variant::CrashKilled
            | Variant::CrashWorkSurvives
            | Variant::CrashHostVanished { .. } => Scenario::Crash,
            Variant::Failover { .. } => Scenario::Failover,
            Variant::Outage(_) => Scenario::Outage,
            Variant::Pooler(_) => Scenario::Pooler,
            Variant::ReleaseAfterExpiry { .. } => Scenario::Release,
            Variant::Overrun { .. } => Scenario::Overrun,
            Variant::SlowReply { .. } => Scenario::Latency,
            Variant::ClusterLeaderKilled
            | Variant::ClusterMemberRestarted
            | Variant::ClusterPrimaryPromoted
            | Variant::ClusterLeaderIsolated { .. }
            | Variant::ClusterSentinelFailover { .. }
            | Variant::ClusterSentinelPrimaryIsolated { .. } => Scenario::Cluster,
        }
    }

    /// Its name within the scenario, unique among all variants.
    pub fn name(self) -> &'static str {
        match self {
            Variant::PauseNaive => "naive",
            Variant::PauseHeartbeatShort => "heartbeat-short",
            Variant::PauseHeartbeatLong => "heartbeat-long",
            Variant::Restart(Persistence::None) => "no-persistence",
            Variant::Restart(Persistence::Rdb) => "rdb",
            Variant::Restart(Persistence::AofEverysec) => "aof-everysec",
            Variant::Restart(Persistence::AofAlways) => "aof-always",
            Variant::RestartPowerLoss => "power-loss",
            Variant::RestartDelayed => "delayed-restart",
            Variant::RedlockRestart => "restart",
            Variant::RedlockClockJump => "clock-jump",
            Variant::RedlockRestartAndClockJump => "restart+clock-jump",
            Variant::RedlockLateStart { checked: false } => "late-start",
            Variant::RedlockLateStart { checked: true } => "late-start-checked",
            Variant::PoolLeak(PoolMode::NoReset) => "no-reset",
            Variant::PoolLeak(PoolMode::UnlockAll) => "unlock-all",
            Variant::PoolLeak(PoolMode::Xact) => "xact",
            Variant::PartitionHeartbeat => "heartbeat",
            Variant::PartitionNoGiveUp => "no-give-up",
            Variant::PartitionKeepalive => "keepalive",
            Variant::ClockJump => "forward",
            Variant::CrashKilled => "holder-killed",
            Variant::CrashWorkSurvives => "work-survives",
            Variant::CrashHostVanished { keepalive: false } => "host-vanished",
            Variant::CrashHostVanished { keepalive: true } => "host-vanished-keepalive",
            Variant::Failover { wait: false } => "no-wait",
            Variant::Failover { wait: true } => "wait",
            Variant::Outage(OnFailure::Skip) => "skip",
            Variant::Outage(OnFailure::Queue) => "queue",
            Variant::Outage(OnFailure::RunUnlocked) => "run-unlocked",
            Variant::Pooler(PoolerMode::Transaction) => "transaction-mode",
            Variant::Pooler(PoolerMode::Session) => "session-mode",
            Variant::Pooler(PoolerMode::SessionNoReset) => "session-mode-no-reset",
            Variant::ReleaseAfterExpiry { checked: true } => "after-expiry",
            Variant::ReleaseAfterExpiry { checked: false } => "after-expiry-plain-delete",
            Variant::Overrun { heartbeat: false } => "slow-job",
            Variant::Overrun { heartbeat: true } => "slow-job-heartbeat",
            Variant::SlowReply { checked: false } => "expired-at-grant",
            Variant::SlowReply { checked: true } => "expired-at-grant-checked",
            Variant::ClusterLeaderKilled => "leader-killed",
            Variant::ClusterMemberRestarted => "member-restarted",
            Variant::ClusterPrimaryPromoted => "primary-promoted",
            Variant::ClusterLeaderIsolated { give_up: true } => "leader-isolated",
            Variant::ClusterLeaderIsolated { give_up: false } => "leader-isolated-no-give-up",
            Variant::ClusterSentinelFailover {
                guard: ReplicaGuard::None,
            } => "sentinel-failover",
            Variant::ClusterSentinelFailover {
                guard: ReplicaGuard::Wait,
            } => "sentinel-failover-wait",
            Variant::ClusterSentinelFailover {
                guard: ReplicaGuard::MinReplicas,
            } => "sentinel-failover-min-replicas",
            Variant::ClusterSentinelPrimaryIsolated { wait: false } => "sentinel-primary-isolated",
            Variant::ClusterSentinelPrimaryIsolated { wait: true } => {
                "sentinel-primary-isolated-wait"
            }
        }
    }

    /// `scenario/variant`: its name in every table, the grid and the rules' sources.
    pub fn label(self) -> String {
        format!("{}/{}", self.scenario().name(), self.name())
    }

    /// The variant named `name` (its name alone: names are unique).
    pub fn parse(name: &str) -> Option<Variant> {
        Self::ALL.into_iter().find(|v| v.name() == name)
    }

    /// The variant whose label is `label` (`scenario/variant`).
    pub fn parse_label(label: &str) -> Option<Variant> {
        Self::ALL.into_iter().find(|v| v.label() == label)
    }

    /// The variants `--scenario NAME` selects: a scenario (every variant of it) or one
    /// `scenario/variant`; `None` when it names neither.
    pub fn select(name: &str) -> Option<Vec<Variant>> {
        let picked: Vec<Variant> = Self::ALL
            .into_iter()
            .filter(|v| v.scenario().name() == name || v.label() == name)
            .collect();
        (!picked.is_empty()).then_some(picked)
    }

    /// Every accepted `--scenario` value, comma-separated, for messages.
    pub fn names() -> String {
        let mut names: Vec<String> = Scenario::ALL.iter().map(|s| s.name().to_string()).collect();
        names.extend(Self::ALL.iter().map(|v| v.label()));
        names.join(", ")
    }
}

impl std::fmt::Display for Variant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.scenario().name(), self.name())
    }
}

/// Written as its name (the `variant` field of results).
impl Serialize for Variant {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Variant {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        Variant::parse(&name).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unknown fault variant {name:?}; expected one of {}",
                Variant::ALL.map(Variant::name).join(", ")
            ))
        })
    }
}

/// What a fault-lab cell measured: a variant on a backend, through lockbench's own client or a
/// real library's adapter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CellId {
    /// The fault.
    pub variant: Variant,
    /// The backend it was injected into.
    pub backend: BackendId,
    /// The library it was measured through; `None` for lockbench's own client.
    pub client: Option<crate::Client>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variant_has_a_name_of_its_own_and_reads_back_from_it() {
        for v in Variant::ALL {
            assert_eq!(Variant::parse(v.name()), Some(v), "{v}");
            assert_eq!(Variant::parse_label(&v.label()), Some(v));
            let json = serde_json::to_string(&v).unwrap();
            assert_eq!(serde_json::from_str::<Variant>(&json).unwrap(), v);
        }
        let mut names: Vec<&str> = Variant::ALL.map(Variant::name).to_vec();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Variant::ALL.len(), "two variants share a name");
        let err = serde_json::from_str::<Variant>("\"flood\"").unwrap_err();
        assert!(
            err.to_string().contains("unknown fault variant \"flood\""),
            "{err}"
        );
    }

    #[test]
    fn a_scenario_selects_its_variants_and_a_label_selects_one() {
        assert_eq!(Variant::select("pause").unwrap().len(), 3);
        assert_eq!(Variant::select("restart").unwrap().len(), 6);
        assert_eq!(Variant::select("crash").unwrap().len(), 4);
        assert_eq!(
            Variant::select("restart/aof-always").unwrap(),
            vec![Variant::Restart(Persistence::AofAlways)]
        );
        assert!(Variant::select("flood").is_none());
        for s in Scenario::ALL {
            assert!(Variant::ALL.iter().any(|v| v.scenario() == s), "{s:?}");
        }
    }
}
