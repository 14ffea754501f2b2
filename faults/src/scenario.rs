//! The scenarios and their variants: what each injects, how, and what the backend's design
//! predicts (docs/FAULTS.md has the reasoning and the literature).

use std::time::Duration;

use lockbench_locks::{BackendKind, LockScope};

use crate::plan::{LeaseTracking, OnFailure, PoolMode};
use crate::server::Persistence;

/// A fault and one configuration of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
    /// Two jobs on one pooled Postgres connection; the first skips its release.
    PoolLeak(PoolMode),
    /// The holder cut off from its Redis for 2 x TTL; a heartbeat renews and the job stops at
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
    /// A private primary and replica, the replica held back (SIGSTOP) while the holder acquires
    /// on the primary; the primary killed, the replica promoted, a contender acquiring on it.
    /// `wait`: the holder's acquisition waits for the replica to acknowledge it (`WAIT 1`).
    Failover {
        /// `WAIT 1` after acquiring.
        wait: bool,
    },
    /// The lock server unreachable (SIGSTOPped) as the next run starts, which follows the policy.
    Outage(OnFailure),
    /// Redlock with one node stopped during the holder's acquisition, so that little of the
    /// validity is left when it returns. `checked`: the client compares the validity left with
    /// its job before starting it.
    RedlockLateStart {
        /// The client checks the validity before its critical section.
        checked: bool,
    },
}

/// Every variant, in the matrix's order.
pub const ALL: [Variant; 30] = [
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
];

/// How long the contender of a vanished host waits for the lock after the host vanished (at
/// least): long enough to tell a keepalive of seconds from Linux's default of 2 h 11 min.
pub const VANISHED_WAIT: Duration = Duration::from_secs(60);

/// The per-connection keepalive of `crash/host-vanished-keepalive`: idle, interval (seconds),
/// count. The decision prescribes the same three settings sized from the job's budget.
pub const LAB_KEEPALIVE: (u64, u64, u32) = (1, 1, 2);

/// When the server gives up on a silent peer under [`LAB_KEEPALIVE`]: idle + interval x count.
pub fn lab_keepalive_bound_s() -> u64 {
    LAB_KEEPALIVE.0 + LAB_KEEPALIVE.1 * u64::from(LAB_KEEPALIVE.2)
}

/// The scenario names, for `--scenario` and messages.
pub const SCENARIOS: [&str; 9] = [
    "pause",
    "restart",
    "redlock",
    "pool-leak",
    "partition",
    "clock-jump",
    "crash",
    "failover",
    "outage",
];

impl Variant {
    /// The scenario it belongs to.
    pub fn scenario(self) -> &'static str {
        match self {
            Variant::PauseNaive | Variant::PauseHeartbeatShort | Variant::PauseHeartbeatLong => {
                "pause"
            }
            Variant::RedlockRestart
            | Variant::RedlockClockJump
            | Variant::RedlockRestartAndClockJump
            | Variant::RedlockLateStart { .. } => "redlock",
            Variant::PoolLeak(_) => "pool-leak",
            Variant::CrashKilled
            | Variant::CrashWorkSurvives
            | Variant::CrashHostVanished { .. } => "crash",
            Variant::Failover { .. } => "failover",
            Variant::Outage(_) => "outage",
            Variant::PartitionHeartbeat
            | Variant::PartitionNoGiveUp
            | Variant::PartitionKeepalive => "partition",
            Variant::ClockJump => "clock-jump",
            _ => "restart",
        }
    }

    /// Its name within the scenario.
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
            Variant::RedlockLateStart { checked: false } => "late-start",
            Variant::RedlockLateStart { checked: true } => "late-start-checked",
        }
    }

    /// `scenario/variant`.
    pub fn label(self) -> String {
        format!("{}/{}", self.scenario(), self.name())
    }

    /// The variants `--scenario NAME` selects: a scenario (every variant of it) or one
    /// `scenario/variant`.
    pub fn select(name: &str) -> Option<Vec<Variant>> {
        let picked: Vec<Variant> = ALL
            .into_iter()
            .filter(|v| v.scenario() == name || v.label() == name)
            .collect();
        (!picked.is_empty()).then_some(picked)
    }

    /// Every accepted `--scenario` value, for messages.
    pub fn names() -> String {
        let mut names: Vec<String> = SCENARIOS.iter().map(|s| s.to_string()).collect();
        names.extend(ALL.iter().map(|v| v.label()));
        names.join(", ")
    }

    /// Whether the variant applies to `backend`: pauses to every backend shared by processes,
    /// restarts to a single Redis node (a private server the lab starts), the redlock faults to
    /// Redlock (five private servers).
    pub fn applies_to(self, backend: BackendKind) -> bool {
        match (self.scenario(), backend) {
            (_, BackendKind::Memory) => false,
            // The per-connection keepalive is a Postgres setting.
            ("crash", kind) if self == (Variant::CrashHostVanished { keepalive: true }) => {
                matches!(kind, BackendKind::PgSession | BackendKind::PgXact)
            }
            ("pause" | "crash", _) => true,
            ("failover" | "outage", kind) => kind == BackendKind::Redis,
            ("restart", kind) => kind == BackendKind::Redis,
            ("partition", BackendKind::PgSession) => true,
            ("clock-jump", kind) => matches!(kind, BackendKind::Zookeeper | BackendKind::Etcd),
            ("partition", kind) => {
                kind == BackendKind::Redis && self != Variant::PartitionKeepalive
            }
            ("pool-leak", kind) => kind == BackendKind::PgSession,
            (_, kind) => kind == BackendKind::Redlock,
        }
    }

    /// Private Redis servers the variant needs (it then locks on them, not on the configured
    /// ones).
    pub fn private_servers(self) -> usize {
        match self.scenario() {
            "restart" | "partition" | "outage" => 1,
            "failover" => 2,
            "redlock" => 5,
            _ => 0,
        }
    }

    /// True when the variant jumps a server's wall clock (the shim must be loaded into it).
    pub fn jumps_clocks(self) -> bool {
        matches!(
            self,
            Variant::RedlockClockJump | Variant::RedlockRestartAndClockJump
        )
    }

    /// True when the variant cuts the holder off from its server (a network namespace).
    pub fn partitions(self) -> bool {
        self.scenario() == "partition"
    }

    /// True when the holder's host vanishes (a namespace of its own, cut whole, and a frozen
    /// process).
    pub fn vanishes(self) -> bool {
        matches!(self, Variant::CrashHostVanished { .. })
    }

    /// True when the holder runs in a network namespace of the lab's (a partition, a vanished
    /// host).
    pub fn isolates(self) -> bool {
        self.partitions() || self.vanishes()
    }

    /// The trials a cell of this variant runs on `backend` when `asked` were asked for. A
    /// vanished host on Postgres with Linux's default keepalive runs one: its contender waits
    /// [`VANISHED_WAIT`] and is not granted, because the server's TCP keeps the session for
    /// 2 h 11 min, a timer every further trial would only wait out again.
    pub fn trials(self, backend: BackendKind, asked: u32) -> u32 {
        let censored = self == (Variant::CrashHostVanished { keepalive: false })
            && matches!(backend, BackendKind::PgSession | BackendKind::PgXact);
        if censored { asked.min(1) } else { asked }
    }

    /// True when the variant restarts the first private server empty.
    pub fn restarts(self) -> bool {
        self.scenario() == "restart"
            || matches!(
                self,
                Variant::RedlockRestart | Variant::RedlockRestartAndClockJump
            )
    }

    /// The backends it applies to, for messages.
    pub fn applies_to_names(self) -> String {
        BackendKind::ALL
            .iter()
            .filter(|k| self.applies_to(**k))
            .map(|k| k.name())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// How the workers check their lease in this variant.
    pub fn tracking(self) -> LeaseTracking {
        match self {
            Variant::PauseNaive => LeaseTracking::AfterEachWrite,
            Variant::PauseHeartbeatShort
            | Variant::PauseHeartbeatLong
            | Variant::PartitionHeartbeat
            | Variant::PartitionKeepalive => LeaseTracking::Heartbeat,
            Variant::PartitionNoGiveUp => LeaseTracking::HeartbeatUnchecked,
            // A client that waits for its replica (or for five nodes) counts what the waiting
            // spent of the TTL.
            Variant::RedlockLateStart { checked: true } | Variant::Failover { wait: true } => {
                LeaseTracking::ValidityFirst
            }
            // A job sized to end within its TTL, which is what a TTL recommendation is for.
            _ => LeaseTracking::AtRelease,
        }
    }

    /// The TTL a trial asks for: the lab's (`--ttl`), except for Redlock's late start, whose
    /// 250 ms node timeout must spend most of it.
    pub fn trial_ttl(self, asked: Duration) -> Duration {
        match self {
            Variant::RedlockLateStart { .. } => Duration::from_millis(400),
            _ => asked,
        }
    }

    /// The operation timeout the workers use, where the variant needs its own: an outage's
    /// requests time out within the outage, and Redlock's late start waits the whole node timeout
    /// (250 ms) on its stopped node.
    pub fn operation_timeout(self, ttl: Duration) -> Option<Duration> {
        match self {
            Variant::Outage(_) => Some(ttl / 5),
            Variant::RedlockLateStart { .. } => Some(Duration::from_millis(250)),
            _ => None,
        }
    }

    /// The pause, as a multiple of the granted TTL (pause scenarios).
    pub fn pause_factor(self) -> Option<f64> {
        match self {
            Variant::PauseNaive => Some(2.0),
            Variant::PauseHeartbeatShort => Some(1.0 / 6.0),
            Variant::PauseHeartbeatLong => Some(1.5),
            _ => None,
        }
    }

    /// The private server's persistence (restart scenarios).
    pub fn persistence(self) -> Option<Persistence> {
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
            | Variant::Outage(_) => Some(Persistence::None),
            _ => None,
        }
    }

    /// What is injected and how, in one sentence.
    pub fn injected(self) -> String {
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
            Variant::PartitionHeartbeat => "holder in a network namespace of the lab's, its packets to and from its private server (redis-server, or postgres) dropped by nftables for 2 x TTL (Postgres: 2 x TTL + 6 s); a heartbeat renews every TTL/3 and the job stops when no renewal succeeded for 2/3 TTL".to_string(),
            Variant::PartitionNoGiveUp => "as partition/heartbeat, but the job never asks the heartbeat and keeps working through the partition".to_string(),
            Variant::PartitionKeepalive => "as partition/heartbeat on Postgres, the server's TCP keepalive giving up after about 3 s (tcp_keepalives_idle 1 s, interval 1 s, count 2) instead of the system's two hours".to_string(),
            Variant::ClockJump => "a private server's wall clock jumps 2 x TTL ahead while the lock is held (the LD_PRELOAD shim in its JVM; checked by the creation time it stamps on a znode), the same jump that takes Redlock nodes' keys".to_string(),
            Variant::CrashKilled => "the holder process SIGKILLed mid-job (its connections closed by the kernel); the contender, waiting, is granted when the backend notices: the crash-recovery time".to_string(),
            Variant::CrashHostVanished { keepalive: false } => format!("the holder's host vanishes: its process SIGSTOPped and every packet of its network namespace dropped by nftables (no FIN, no RST, no keepalive answer), the lock server and its settings as configured (Postgres: Linux's default keepalive); the contender, waiting up to {} s, is granted when the backend gives up on the holder", VANISHED_WAIT.as_secs()),
            Variant::CrashHostVanished { keepalive: true } => format!("as crash/host-vanished, the holder's own connection opened with options='-c tcp_keepalives_idle={} -c tcp_keepalives_interval={} -c tcp_keepalives_count={}' (the per-connection setting the decision prescribes, scaled to the lab: the server gives up {} s after the last answer)", LAB_KEEPALIVE.0, LAB_KEEPALIVE.1, LAB_KEEPALIVE.2, lab_keepalive_bound_s()),
            Variant::CrashWorkSurvives => "the holder runs its job in a process of its own (a wrapper that holds the lock and starts the job); the wrapper is SIGKILLed, its lock freed as in holder-killed, while the job process writes on".to_string(),
            Variant::Failover { wait: false } => "a private primary and replica (no persistence); the replica SIGSTOPped so that it never receives the key, the holder granted on the primary, then the primary SIGKILLed, the replica resumed and promoted (REPLICAOF NO ONE) and a contender acquiring on it".to_string(),
            Variant::Failover { wait: true } => "as failover/no-wait, the holder's acquisition followed by WAIT 1: refused while the replica is stopped, granted once it has the key (the TTL counted from the SET: a grant with less left than the job is given back); then the same kill and promotion".to_string(),
            Variant::Outage(policy) => format!("the holder granted on a private redis-server, which is then SIGSTOPped for TTL/3 (every request times out) as the contender's run starts; the contender's acquisition fails and it {}", match policy {
                OnFailure::Skip => "skips the run (and would alert)",
                OnFailure::Queue => "retries with backoff until it is granted",
                OnFailure::RunUnlocked => "runs its job without the lock",
            }),
            Variant::RedlockLateStart { checked } => format!("Redlock over five private redis-servers, TTL 400 ms; one node SIGSTOPped during the holder's acquisition, so it returns after the 250 ms node timeout with about 140 ms of validity left; the holder {}", if checked {
                "compares the validity left with its job (267 ms) and tries again when it is shorter"
            } else {
                "starts its 267 ms job trusting the TTL it asked for"
            }),
        }
    }

    /// What the backend's design predicts: true for an overlap.
    pub fn predicts_overlap(self, scope: LockScope) -> bool {
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
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scenario_selects_its_variants_and_a_label_selects_one() {
        assert_eq!(Variant::select("pause").unwrap().len(), 3);
        assert_eq!(Variant::select("restart").unwrap().len(), 6);
        assert_eq!(Variant::select("pool-leak").unwrap().len(), 3);
        assert_eq!(Variant::select("partition").unwrap().len(), 3);
        assert_eq!(Variant::select("redlock").unwrap().len(), 5);
        assert_eq!(Variant::select("crash").unwrap().len(), 4);
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
        assert_eq!(Variant::select("failover").unwrap().len(), 2);
        assert_eq!(Variant::select("outage").unwrap().len(), 3);
        assert_eq!(
            Variant::CrashKilled.applies_to_names(),
            "redis, redlock, pg-session, pg-xact, etcd, zookeeper"
        );
        assert_eq!(Variant::Failover { wait: true }.applies_to_names(), "redis");
        assert!(Variant::PartitionKeepalive.applies_to(BackendKind::PgSession));
        assert!(!Variant::PartitionKeepalive.applies_to(BackendKind::Redis));
        assert_eq!(Variant::ClockJump.applies_to_names(), "etcd, zookeeper");
        assert_eq!(
            Variant::select("restart/aof-always").unwrap(),
            vec![Variant::Restart(Persistence::AofAlways)]
        );
        assert!(Variant::select("flood").is_none());
        for v in ALL {
            assert_eq!(Variant::select(&v.label()).unwrap(), vec![v]);
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
