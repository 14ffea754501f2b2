//! The scenarios and their variants: what each injects, how, and what the backend's design
//! predicts (docs/FAULTS.md has the reasoning and the literature).

use std::time::Duration;

use lockbench_locks::{BackendKind, LockScope};

pub use lockbench_core::fault::{
    OnFailure, Persistence, PoolMode, PoolerMode, ReplicaGuard, Scenario, Variant,
};

use crate::plan::LeaseTracking;

/// How long the contender of a vanished host waits for the lock after the host vanished (at
/// least): long enough to tell a keepalive of seconds from Linux's default of 2 h 11 min.
pub const VANISHED_WAIT: Duration = Duration::from_secs(60);

/// The least TTL of a Sentinel failover's trials: longer than the Sentinels take to promote a
/// replica (about 2.3 s here, `down-after-milliseconds` 1000), so that whether the lock survives
/// is the replication's doing, not its expiry's.
pub const SENTINEL_TTL: Duration = Duration::from_secs(8);

/// The least TTL of a Sentinel cell whose primary is cut off: three renewals a lease on a
/// heartbeat that a 2 s `WAIT` (half the TTL) cannot starve.
pub const SENTINEL_CUT_TTL: Duration = Duration::from_secs(4);

/// How long the lab's PgBouncer keeps an idle server connection (PgBouncer's default is 600 s):
/// what bounds a lock left on one with no holder.
pub const POOLER_IDLE_TIMEOUT: Duration = Duration::from_secs(5);

/// The per-connection keepalive of `crash/host-vanished-keepalive`: idle, interval (seconds),
/// count. The decision prescribes the same three settings sized from the job's budget.
pub const LAB_KEEPALIVE: (u64, u64, u32) = (1, 1, 2);

/// When the server gives up on a silent peer under [`LAB_KEEPALIVE`]: idle + interval x count.
pub fn lab_keepalive_bound_s() -> u64 {
    LAB_KEEPALIVE.0 + LAB_KEEPALIVE.1 * u64::from(LAB_KEEPALIVE.2)
}

/// What the lab does with a variant: where it applies, what it starts, how its holder tracks
/// its lease, what it injects and what the backend's design predicts.
pub trait Design: Copy {
    /// Whether the variant applies to `backend`.
    fn applies_to(self, backend: BackendKind) -> bool;
    /// The backends it applies to, for messages.
    fn applies_to_names(self) -> String;
    /// Private Redis servers the variant needs.
    fn private_servers(self) -> usize;
    /// True when the variant jumps a server's wall clock.
    fn jumps_clocks(self) -> bool;
    /// True when the variant cuts the holder off from its server.
    fn partitions(self) -> bool;
    /// True when the holder's host vanishes.
    fn vanishes(self) -> bool;
    /// True when the holder runs in a network namespace of the lab's.
    fn isolates(self) -> bool;
    /// True when a trial's verdict rests on the holder's job ending within a thin margin of its
    /// lease: its trials run with no other lane's work in flight.
    fn alone(self) -> bool;
    /// True when a trial's contender waits out [`VANISHED_WAIT`] whole on `backend`.
    fn waits_out(self, backend: BackendKind) -> bool;
    /// The trials a cell runs on `backend` when `asked` were asked for.
    fn trials(self, backend: BackendKind, asked: u32) -> u32;
    /// True when the variant restarts the first private server empty.
    fn restarts(self) -> bool;
    /// How the workers check their lease.
    fn tracking(self) -> LeaseTracking;
    /// The TTL a trial asks for.
    fn trial_ttl(self, asked: Duration) -> Duration;
    /// The operation timeout the workers use, where the variant needs its own.
    fn operation_timeout(self, ttl: Duration) -> Option<Duration>;
    /// The pause, as a multiple of the granted TTL.
    fn pause_factor(self) -> Option<f64>;
    /// The private server's persistence.
    fn persistence(self) -> Option<Persistence>;
    /// What is injected and how, in one sentence.
    fn injected(self) -> String;
    /// What the backend's design predicts: true for an overlap.
    fn predicts_overlap(self, scope: LockScope) -> bool;
}

impl Design for Variant {
    /// Whether the variant applies to `backend`: pauses to every backend shared by processes,
    /// restarts to a single Redis node (a private server the lab starts), the redlock faults to
    /// Redlock (five private servers).
    fn applies_to(self, backend: BackendKind) -> bool {
        let f = Family::of(backend);
        if f.in_process {
            return false;
        }
        match (self.scenario(), backend) {
            // The per-connection keepalive is a Postgres setting.
            (Scenario::Crash, _) if self == (Variant::CrashHostVanished { keepalive: true }) => {
                f.postgres
            }
            (Scenario::Pause | Scenario::Crash | Scenario::Overrun, _) => true,
            (Scenario::Failover | Scenario::Outage | Scenario::Restart, _) => f.one_redis,
            (Scenario::Partition, BackendKind::PgSession) => true,
            (Scenario::ClockJump, _) => f.consensus,
            // Redis behind a private server; Redlock, etcd and ZooKeeper through the lab's
            // forwarders to the configured servers, which expire the holder by their timers.
            (Scenario::Partition, _) => {
                (f.one_redis || f.redlock || f.consensus) && self != Variant::PartitionKeepalive
            }
            (Scenario::PoolLeak, kind) => kind == BackendKind::PgSession,
            (Scenario::Pooler, _) => f.postgres,
            (Scenario::Redlock, _) => f.redlock,
            // A release after expiry needs a lock that expires under a live holder (Postgres
            // keeps a live session's); a plain delete, a lock that is one key any client can
            // delete.
            (Scenario::Release, _) => match self {
                Variant::ReleaseAfterExpiry { checked: true } => !f.postgres,
                _ => f.one_redis || f.redlock,
            },
            // A key whose TTL the server starts as the request arrives.
            (Scenario::Latency, _) => f.one_redis || f.redlock,
            // Consensus stores elect a leader; Postgres promotes a standby.
            (Scenario::Cluster, _) => match self {
                Variant::ClusterPrimaryPromoted => f.postgres,
                Variant::ClusterSentinelFailover { .. }
                | Variant::ClusterSentinelPrimaryIsolated { .. } => f.one_redis,
                _ => f.consensus,
            },
        }
    }

    /// Private Redis servers the variant needs (it then locks on them, not on the configured
    /// ones).
    fn private_servers(self) -> usize {
        match self.scenario() {
            Scenario::Restart | Scenario::Partition | Scenario::Outage => 1,
            Scenario::Failover => 2,
            Scenario::Redlock => 5,
            Scenario::Pause
            | Scenario::PoolLeak
            | Scenario::ClockJump
            | Scenario::Crash
            | Scenario::Pooler
            | Scenario::Release
            | Scenario::Overrun
            | Scenario::Latency
            | Scenario::Cluster => 0,
        }
    }

    /// True when the variant jumps a server's wall clock (the shim must be loaded into it).
    fn jumps_clocks(self) -> bool {
        matches!(
            self,
            Variant::RedlockClockJump | Variant::RedlockRestartAndClockJump
        )
    }

    /// True when the variant cuts the holder off from its server (a network namespace).
    fn partitions(self) -> bool {
        self.scenario() == Scenario::Partition
    }

    /// True when the holder's host vanishes (a namespace of its own, cut whole, and a frozen
    /// process).
    fn vanishes(self) -> bool {
        matches!(self, Variant::CrashHostVanished { .. })
    }

    /// True when the holder runs in a network namespace of the lab's (a partition, a vanished
    /// host).
    fn isolates(self) -> bool {
        self.partitions()
            || self.vanishes()
            || matches!(
                self,
                Variant::ClusterLeaderIsolated { .. }
                    | Variant::ClusterSentinelPrimaryIsolated { .. }
            )
    }

    /// A late start's checked holder has 393 ms of validity for its 267 ms job: 20 writes that
    /// take 1.6 ms each on a quiet machine and 6 to 9 ms while two other lanes start servers and
    /// write, enough to outlive the validity in 2 of 3 trials. The margin is the cell's design
    /// (a check against the job's expected length); the machine's load is not.
    fn alone(self) -> bool {
        matches!(self, Variant::RedlockLateStart { .. })
    }

    /// The trials a cell of this variant runs on `backend` when `asked` were asked for. A
    /// vanished host on Postgres with Linux's default keepalive runs one: its contender waits
    /// [`VANISHED_WAIT`] and is not granted, because the server's TCP keeps the session for
    /// 2 h 11 min, a timer every further trial would only wait out again.
    fn trials(self, backend: BackendKind, asked: u32) -> u32 {
        if self.waits_out(backend) {
            asked.min(1)
        } else {
            asked
        }
    }

    /// A vanished host on Postgres with Linux's default keepalive: its server keeps the session.
    fn waits_out(self, backend: BackendKind) -> bool {
        self == (Variant::CrashHostVanished { keepalive: false })
            && matches!(backend, BackendKind::PgSession | BackendKind::PgXact)
    }

    /// True when the variant restarts the first private server empty.
    fn restarts(self) -> bool {
        self.scenario() == Scenario::Restart
            || matches!(
                self,
                Variant::RedlockRestart | Variant::RedlockRestartAndClockJump
            )
    }

    /// The backends it applies to, for messages.
    fn applies_to_names(self) -> String {
        BackendKind::ALL
            .iter()
            .filter(|k| self.applies_to(**k))
            .map(|k| k.name())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// How the workers check their lease in this variant.
    fn tracking(self) -> LeaseTracking {
        match self {
            Variant::PauseNaive => LeaseTracking::AfterEachWrite,
            Variant::PauseHeartbeatShort
            | Variant::PauseHeartbeatLong
            | Variant::PartitionHeartbeat
            | Variant::PartitionKeepalive
            | Variant::Overrun { heartbeat: true } => LeaseTracking::Heartbeat,
            Variant::PartitionNoGiveUp | Variant::ClusterLeaderIsolated { give_up: false } => {
                LeaseTracking::HeartbeatUnchecked
            }
            Variant::ClusterLeaderIsolated { give_up: true }
            | Variant::ClusterSentinelFailover { .. }
            | Variant::ClusterSentinelPrimaryIsolated { .. } => LeaseTracking::Heartbeat,
            // A client that waits for its replica (or for five nodes) counts what the waiting
            // spent of the TTL.
            Variant::RedlockLateStart { checked: true }
            | Variant::Failover { wait: true }
            | Variant::SlowReply { checked: true } => LeaseTracking::ValidityFirst,
            // A job sized to end within its TTL, which is what a TTL recommendation is for.
            _ => LeaseTracking::AtRelease,
        }
    }

    /// The TTL a trial asks for: the lab's (`--ttl`), except for Redlock's late start, whose
    /// 250 ms node timeout must spend most of it.
    fn trial_ttl(self, asked: Duration) -> Duration {
        match self {
            Variant::RedlockLateStart { .. } => Duration::from_millis(400),
            Variant::ClusterSentinelFailover { .. } => asked.max(SENTINEL_TTL),
            Variant::ClusterSentinelPrimaryIsolated { .. } => asked.max(SENTINEL_CUT_TTL),
            _ => asked,
        }
    }

    /// The operation timeout the workers use, where the variant needs its own: an outage's
    /// requests time out within the outage, and Redlock's late start waits the whole node timeout
    /// (250 ms) on its stopped node.
    fn operation_timeout(self, ttl: Duration) -> Option<Duration> {
        match self {
            Variant::Outage(_) => Some(ttl / 5),
            Variant::RedlockLateStart { .. } => Some(Duration::from_millis(250)),
            // The held reply must not time the request out.
            Variant::SlowReply { .. } => Some(ttl * 3),
            // A contender connected to the primary before the cut hears nothing from it: a
            // request given up within a quarter of the lease sends the next one through the
            // Sentinels to the promoted replica, as a worker started after the cut would.
            Variant::ClusterSentinelPrimaryIsolated { .. } => Some(ttl / 4),
            _ => None,
        }
    }

    /// The pause, as a multiple of the granted TTL (pause scenarios).
    fn pause_factor(self) -> Option<f64> {
        match self {
            Variant::PauseNaive => Some(2.0),
            Variant::PauseHeartbeatShort => Some(1.0 / 6.0),
            Variant::PauseHeartbeatLong => Some(1.5),
            // Half a lease past its end, whenever the job ended within it.
            Variant::ReleaseAfterExpiry { .. } => Some(1.5),
            _ => None,
        }
    }

    /// The private server's persistence (restart scenarios).
    fn persistence(self) -> Option<Persistence> {
        match self {
            Variant::Restart(p) => Some(p),
            Variant::RestartPowerLoss => Some(Persistence::AofEverysec),
            Variant::RestartDelayed => Some(Persistence::None),
            Variant::RedlockRestart
            | Variant::RedlockClockJump
            | Variant::RedlockRestartAndClockJump
            | Variant::RedlockLateStart { .. }
            | Variant::PartitionHeartbeat
            | Variant::PartitionNoGiveUp
            | Variant::PartitionKeepalive
            | Variant::Failover { .. }
            | Variant::ClusterSentinelFailover { .. }
            | Variant::ClusterSentinelPrimaryIsolated { .. }
            | Variant::Outage(_) => Some(Persistence::None),
            _ => None,
        }
    }

    /// What is injected and how, in one sentence.
    fn injected(self) -> String {
        let persistence = match self.persistence() {
            Some(Persistence::None) => "no persistence",
            Some(Persistence::Rdb) => "RDB snapshots only",
            Some(Persistence::AofEverysec) => "appendfsync everysec",
            Some(Persistence::AofAlways) => "appendfsync always",
            None => "",
        };
        match self {
            Variant::PauseNaive => "holder process SIGSTOPped for 2 x TTL then SIGCONTed; it writes once, then renews (token-checked)".to_string(),
            Variant::PauseHeartbeatShort => "heartbeat every TTL/3, give-up after 2/3 TTL; holder SIGSTOPped for TTL/6 (never reaches the give-up deadline)".to_string(),
            Variant::PauseHeartbeatLong => "heartbeat every TTL/3, give-up after 2/3 TTL; holder SIGSTOPped for 1.5 x TTL (more than any time left on the lease)".to_string(),
            Variant::Restart(_) => format!("private redis-server ({persistence}) SIGKILLed while the lock is held, restarted at once on the same port"),
            Variant::RestartPowerLoss => "private redis-server (appendfsync everysec) SIGKILLed; its AOF replaced by a copy taken before the acquisition (a power loss), then restarted".to_string(),
            Variant::RestartDelayed => "private redis-server (no persistence) SIGKILLed, restarted only after TTL + 1 s".to_string(),
            Variant::RedlockRestart => "Redlock over five private redis-servers (no persistence); one SIGKILLed and restarted at once, empty".to_string(),
            Variant::RedlockClockJump => "Redlock over five private redis-servers; the wall clocks of two jump 2 x TTL ahead (an LD_PRELOAD shim shifts their gettimeofday)".to_string(),
            Variant::RedlockRestartAndClockJump => "Redlock over five private redis-servers; one restarted empty and the wall clocks of two others jump 2 x TTL ahead, at once".to_string(),
            Variant::PoolLeak(PoolMode::NoReset) => "one process, a pool of one Postgres connection given back without a reset: job 1 takes the session lock, gives the connection back, works, skips its release; job 2 takes the same connection while job 1 works; the pool closes it 2 x TTL after both".to_string(),
            Variant::PoolLeak(PoolMode::UnlockAll) => "as no-reset, but the pool runs pg_advisory_unlock_all() on every connection given back (what DISCARD ALL includes)".to_string(),
            Variant::PoolLeak(PoolMode::Xact) => "as no-reset, but each job takes pg_advisory_xact_lock in a transaction held to its end (job 1's error path rolls it back)".to_string(),
            Variant::PartitionHeartbeat => "holder in a network namespace of the lab's, its packets to and from its server dropped by nftables for 2 x TTL (Postgres: 2 x TTL + 6 s): a private redis-server or postgres, or the lab's forwarders to the configured Redlock nodes, etcd or ZooKeeper; a heartbeat renews every TTL/3 and the job stops when no renewal succeeded for 2/3 TTL".to_string(),
            Variant::PartitionNoGiveUp => "as partition/heartbeat, but the job never asks the heartbeat and keeps working through the partition".to_string(),
            Variant::PartitionKeepalive => "as partition/heartbeat on Postgres, the server's TCP keepalive giving up after about 3 s (tcp_keepalives_idle 1 s, interval 1 s, count 2) instead of the system's two hours".to_string(),
            Variant::ClockJump => "a private server's wall clock jumps 2 x TTL ahead while the lock is held (the LD_PRELOAD shim in its JVM; checked by the creation time it stamps on a znode), the same jump that takes Redlock nodes' keys".to_string(),
            Variant::CrashKilled => "the holder process SIGKILLed mid-job (its connections closed by the kernel); the contender, waiting, is granted when the backend notices: the crash-recovery time".to_string(),
            Variant::CrashHostVanished { keepalive: false } => format!("the holder's host vanishes: its process SIGSTOPped and every packet of its network namespace dropped by nftables (no FIN, no RST, no keepalive answer), the lock server and its settings as configured (Postgres: Linux's default keepalive); the contender, waiting up to {} s, is granted when the backend gives up on the holder", VANISHED_WAIT.as_secs()),
            Variant::CrashHostVanished { keepalive: true } => format!("as crash/host-vanished, the holder's own connection opened with options='-c tcp_keepalives_idle={} -c tcp_keepalives_interval={} -c tcp_keepalives_count={}' (the per-connection setting the decision prescribes, scaled to the lab: the server gives up {} s after the last answer)", LAB_KEEPALIVE.0, LAB_KEEPALIVE.1, LAB_KEEPALIVE.2, lab_keepalive_bound_s()),
            Variant::CrashWorkSurvives => "the holder runs its job in a process of its own (a wrapper that holds the lock and starts the job); the wrapper is SIGKILLed, its lock freed as in holder-killed, while the job process writes on".to_string(),
            Variant::Failover { wait: false } => "a private primary and replica (no persistence); the replica SIGSTOPped so that it never receives the key, the holder granted on the primary, then the primary SIGKILLed, the replica resumed and promoted (REPLICAOF NO ONE) and a contender acquiring on it".to_string(),
            Variant::Failover { wait: true } => "as failover/no-wait, the holder's acquisition followed by WAIT 1: refused while the replica is stopped, granted once it has the key (the TTL counted from the SET: a grant with less left than the job is given back; the job a third of the TTL, in both variants, so that the wait cannot make it outlive its lease); then the same kill and promotion".to_string(),
            Variant::Pooler(PoolerMode::Transaction) => format!("holder and contender reach a private Postgres through a PgBouncer of the lab's in transaction mode (server_idle_timeout {} s); the holder takes the lock, works through its job and releases it, the contender asks for it just after the grant", POOLER_IDLE_TIMEOUT.as_secs()),
            Variant::Pooler(PoolerMode::Session) => "as pooler/transaction-mode, PgBouncer in session mode with its default server_reset_query (DISCARD ALL); the holder SIGKILLed mid-job, its server connection given back to the pool".to_string(),
            Variant::Pooler(PoolerMode::SessionNoReset) => format!("as pooler/session-mode, server_reset_query empty: the dead holder's server connection goes back to the pool as it is, until PgBouncer closes it idle (server_idle_timeout {} s in the lab, 600 s by default)", POOLER_IDLE_TIMEOUT.as_secs()),
            Variant::Outage(policy) => format!("the holder granted on a private redis-server, which is then SIGSTOPped for TTL/3 (every request times out) as the contender's run starts; the contender's acquisition fails and it {}", match policy {
                OnFailure::Skip => "skips the run (and would alert)",
                OnFailure::Queue => "retries with backoff until it is granted",
                OnFailure::RunUnlocked => "runs its job without the lock",
            }),
            Variant::SlowReply { checked } => format!("the holder reaches its lock server(s) through a forwarder of the lab's that holds the reply to its first acquisition for 1.5 x TTL (requests pass at once; the hold is lifted 100 ms after the holder is told to go): the key has expired when the acquisition returns, and the contender asks at the holder's grant; {}", if checked {
                "the job starts only if the validity left (what the client reports, never more than the TTL less the acquisition's own time) covers it, and acquires again otherwise"
            } else {
                "the job trusts the TTL it asked for"
            }),
            Variant::Overrun { heartbeat } => format!("nothing injected: the holder's job, alive and writing, lasts twice the lease it was granted (a slow query, a slow API); {}", if heartbeat {
                "lockbench's heartbeat renews every third of the lease (through the library's own renewal) and the job stops at the give-up deadline"
            } else {
                "the job trusts its TTL: the lease is renewed only if the client does so by itself (a library's auto-renewal, a session its client keeps alive)"
            }),
            Variant::ReleaseAfterExpiry { checked } => format!("the holder's job (two thirds of the TTL) ends, then its process stops itself (SIGSTOP) before sending its release and is SIGCONTed 1.5 granted leases later; a contender takes the expired lock for a job of two leases and the holder's job, under a lease of its own one lease longer; the holder's release ({}) arrives; a next run asks for the lock once the holder is done, waiting half a lease", if checked {
                "the client's own: token-checked in lockbench's clients, the library's own through an adapter"
            } else {
                "a plain DEL of the lock's key, as a hand-written release does"
            }),
            Variant::ClusterMemberRestarted => "three private members on loopback as in cluster/leader-killed, the leader the same member in every trial; the holder given every member's address, the contender one follower's only (its client cannot move); that follower SIGKILLed as the holder starts its release and started again on its data a quarter of the TTL later, so that it must catch up with the release from the leader before it can grant the lock on to its client".to_string(),
            Variant::ClusterLeaderKilled => "three private members on loopback (etcd: default heartbeat 100 ms, election 1 s; ZooKeeper: tickTime 500 ms), every client given every member's address; the leader SIGKILLed while the lock is held, the contender waiting; the member restarted after the trial".to_string(),
            Variant::ClusterLeaderIsolated { give_up } => format!("three private members, the leader (and the holder) in a network namespace of the lab's, the other two on its host end; nftables in the namespace then drops every packet between the two sides but the holder's to the protected resource, for three TTLs and 4 s (the majority's election): the leader and the holder (given every member's address) in a minority, the contender with the majority (given its members'); a heartbeat renews every TTL/3 and {}", if give_up {
                "the job stops when no renewal succeeded for 2/3 TTL"
            } else {
                "the job never asks it and works on through the cut"
            }),
            Variant::ClusterPrimaryPromoted => "a private Postgres primary and its streaming standby (pg_basebackup -R); the primary lost while the lock is held (immediate shutdown: its sessions closed), the standby promoted (pg_promote), a contender acquiring on it; rebuilt after the trial".to_string(),
            Variant::ClusterSentinelFailover { guard } => format!("a private primary and two replicas (no persistence) watched by three Sentinels (quorum 2, down-after-milliseconds {}), every client finding the primary through them; the TTL at least {} s, so that the lock outlives the Sentinels' failover, a heartbeat renewing every TTL/3 through a job of 1.5 TTL; {}; the primary SIGKILLed while the lock is held and the contender waits, the Sentinels promote a replica; a new set after the trial", crate::sentinel::DOWN_AFTER_MS, SENTINEL_TTL.as_secs(), match guard {
                ReplicaGuard::Wait => "one replica's replication held back from the holder's acquisition on, the holder's grant followed by WAIT 1 (the other replica acknowledges it)",
                ReplicaGuard::None => "both replicas' replication held back from the holder's acquisition on (replication lag): no replica has the key",
                ReplicaGuard::MinReplicas => "min-replicas-to-write 1 and min-replicas-max-lag 1 on every server; both replicas' replication held back from the holder's acquisition on while their acknowledgements of the stream go on reaching the primary (a replica connected and behind): the primary takes the grant, and no replica has the key",
            }),
            Variant::ClusterSentinelPrimaryIsolated { wait } => format!("the Sentinel set of cluster/sentinel-failover, split: the primary (and the holder) in a network namespace of the lab's, the two replicas and three Sentinels on its host end (one random password for all), the contender and the lab's client outside; the TTL at least {} s, a heartbeat renewing every TTL/3; a few writes into the holder's job, nftables in the namespace drops every packet between the two sides but the holder's to the protected resource for two TTLs and 4 s: the Sentinels promote a replica while the old primary {}; a new set after the trial", SENTINEL_CUT_TTL.as_secs(), if wait {
                "refuses to count a renewal no replica acknowledges (WAIT 1 after the grant and after each renewal): the holder's heartbeat gives up from its last acknowledged renewal"
            } else {
                "goes on taking the holder's renewals, which no replica sees"
            }),
            Variant::RedlockLateStart { checked } => format!("Redlock over five private redis-servers, TTL 400 ms; one node SIGSTOPped during the holder's acquisition, so it returns after the 250 ms node timeout with about 140 ms of validity left; the holder {}", if checked {
                "compares the validity left with its job (267 ms) and tries again when it is shorter"
            } else {
                "starts its 267 ms job trusting the TTL it asked for"
            }),
        }
    }

    /// What the backend's design predicts: true for an overlap.
    fn predicts_overlap(self, scope: LockScope) -> bool {
        let expires = !matches!(scope, LockScope::Session | LockScope::Transaction);
        match self {
            Variant::PauseNaive | Variant::PauseHeartbeatLong => expires,
            Variant::PauseHeartbeatShort => false,
            Variant::Restart(Persistence::None | Persistence::Rdb) => true,
            Variant::Restart(Persistence::AofEverysec | Persistence::AofAlways) => false,
            Variant::RestartPowerLoss => true,
            Variant::RestartDelayed => false,
            Variant::RedlockRestart | Variant::RedlockClockJump => false,
            Variant::RedlockRestartAndClockJump => true,
            // Re-entrant per session: job 2 is granted while job 1 works. Unlocking on return
            // ends the leak, not the misuse: job 1 keeps working after its lock went back.
            Variant::PoolLeak(PoolMode::NoReset | PoolMode::UnlockAll) => true,
            Variant::PoolLeak(PoolMode::Xact) => false,
            Variant::PartitionHeartbeat => false,
            // Postgres holds the lock for the open session whatever the job does: a stall.
            Variant::PartitionNoGiveUp => expires,
            Variant::PartitionKeepalive => false,
            // Sessions and leases expire by a monotonic clock.
            Variant::ClockJump => false,
            // A dead holder writes nothing; the next one is granted after it.
            Variant::CrashKilled => false,
            // A frozen holder writes nothing either, whenever the next one is granted.
            Variant::CrashHostVanished { .. } => false,
            // The lock goes with the process that held it, not with the work it started.
            Variant::CrashWorkSurvives => true,
            Variant::Failover { wait } => !wait,
            Variant::Outage(policy) => policy == OnFailure::RunUnlocked,
            Variant::RedlockLateStart { checked } => !checked,
            // A session lock stays on a server connection the pooler hands to the contender; a
            // transaction lock pins its connection to its transaction.
            Variant::Pooler(PoolerMode::Transaction) => scope == LockScope::Session,
            // A dead holder's lock, reset or not, blocks; it writes nothing.
            Variant::Pooler(PoolerMode::Session | PoolerMode::SessionNoReset) => false,
            // A token-checked release deletes only its own lock; a plain delete deletes the
            // contender's, and the next run is granted beside it.
            Variant::ReleaseAfterExpiry { checked } => !checked && expires,
            // A lease runs out under a live job unless something renews it; a session lock, and
            // a consensus session its client keeps alive, stay with the live holder.
            // The key expires under a reply still on its way; Redlock's client counts the
            // acquisition's time against the validity and refuses an expired one.
            Variant::SlowReply { checked } => !checked && scope == LockScope::Key,
            Variant::Overrun { heartbeat } => {
                !heartbeat
                    && matches!(
                        scope,
                        LockScope::Key | LockScope::Majority | LockScope::ConsensusLease
                    )
            }
            // The lease or session lives in the replicated log: a new leader keeps it.
            Variant::ClusterLeaderKilled => false,
            // Every grant is a write through the leader: a restarted member tells its client
            // nothing it has not caught up on, so the contender waits, it is not granted early.
            Variant::ClusterMemberRestarted => false,
            // The majority lets the cut-off holder's lease or session run out and grants the
            // lock on; a job that stops at its give-up deadline has stopped by then.
            Variant::ClusterLeaderIsolated { give_up } => !give_up,
            // Advisory locks are in the primary's memory, never in the WAL: the promoted
            // standby grants the lock at once while the old holder works on.
            Variant::ClusterPrimaryPromoted => true,
            // Sentinel promotes the replica furthest ahead: with WAIT 1 one that has the key,
            // and the holder renews it there; without, none has it, and min-replicas-to-write
            // counts replicas that answer, not ones that have the write.
            Variant::ClusterSentinelFailover { guard } => guard != ReplicaGuard::Wait,
            // The isolated primary extends the key under the holder while the promoted replica
            // lets it expire; renewals that count only once a replica has them stop the holder
            // a third of a lease before that.
            Variant::ClusterSentinelPrimaryIsolated { wait } => !wait,
        }
    }
}

/// The families of the lab's faults a backend belongs to, answered once per backend: a new
/// backend must say here which cells can exist for it (`Design::applies_to`).
#[derive(Clone, Copy, Default)]
struct Family {
    /// The in-process baseline: no server to fault.
    in_process: bool,
    /// A Postgres server (session or transaction locks).
    postgres: bool,
    /// One Redis server, which the lab can start privately (restart, failover, outage).
    one_redis: bool,
    /// Redlock's independent Redis nodes.
    redlock: bool,
    /// A consensus store that elects a leader.
    consensus: bool,
}

impl Family {
    fn of(kind: BackendKind) -> Family {
        let none = Family::default();
        match kind {
            BackendKind::Memory => Family {
                in_process: true,
                ..none
            },
            BackendKind::Redis => Family {
                one_redis: true,
                ..none
            },
            BackendKind::Redlock => Family {
                redlock: true,
                ..none
            },
            BackendKind::PgSession | BackendKind::PgXact => Family {
                postgres: true,
                ..none
            },
            BackendKind::Etcd | BackendKind::Zookeeper => Family {
                consensus: true,
                ..none
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_variant_applies_where_its_fault_can_be_injected() {
        assert_eq!(
            Variant::CrashHostVanished { keepalive: false }.applies_to_names(),
            "redis, redlock, pg-session, pg-xact, etcd, zookeeper"
        );
        assert_eq!(
            Variant::CrashHostVanished { keepalive: true }.applies_to_names(),
            "pg-session, pg-xact"
        );
        let vanished = Variant::CrashHostVanished { keepalive: false };
        assert_eq!(vanished.trials(BackendKind::PgSession, 3), 1);
        assert_eq!(vanished.trials(BackendKind::Redis, 3), 3);
        assert_eq!(
            Variant::CrashHostVanished { keepalive: true }.trials(BackendKind::PgXact, 3),
            3
        );
        assert_eq!(
            Variant::CrashKilled.applies_to_names(),
            "redis, redlock, pg-session, pg-xact, etcd, zookeeper"
        );
        assert_eq!(Variant::Failover { wait: true }.applies_to_names(), "redis");
        assert!(Variant::PartitionKeepalive.applies_to(BackendKind::PgSession));
        assert!(!Variant::PartitionKeepalive.applies_to(BackendKind::Redis));
        assert_eq!(Variant::ClockJump.applies_to_names(), "etcd, zookeeper");
        assert_eq!(
            Variant::ReleaseAfterExpiry { checked: true }.applies_to_names(),
            "redis, redlock, etcd, zookeeper"
        );
        assert_eq!(
            Variant::ReleaseAfterExpiry { checked: false }.applies_to_names(),
            "redis, redlock"
        );
        // Every variant applies somewhere, and never to the in-process baseline.
        for v in Variant::ALL {
            assert!(!v.applies_to_names().is_empty(), "{v}");
            assert!(!v.applies_to(BackendKind::Memory), "{v}");
        }
    }

    #[test]
    fn restarts_are_for_redis_and_nothing_runs_on_the_in_process_baseline() {
        assert!(Variant::RestartDelayed.applies_to(BackendKind::Redis));
        assert!(!Variant::RestartDelayed.applies_to(BackendKind::Etcd));
        assert!(Variant::PauseNaive.applies_to(BackendKind::Etcd));
        assert!(!Variant::PauseNaive.applies_to(BackendKind::Memory));
        assert_eq!(Variant::RestartDelayed.applies_to_names(), "redis");
        assert_eq!(Variant::RedlockClockJump.applies_to_names(), "redlock");
    }
}
