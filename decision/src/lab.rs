//! What the fault lab's variants mean to the rules: each failure the lab injects is either
//! prevented by a mechanism a design can include (and the lab has a variant showing it
//! prevented), or left to the fence alone. docs/DECISION.md gives each pairing its source.

use lockbench_core::BackendKind;
use lockbench_core::fault::{OnFailure, Persistence, PoolMode, PoolerMode, ReplicaGuard, Variant};

/// A mechanism a design may include against a failure the lab injects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mitigation {
    /// Renewal on a heartbeat, and the job stops at the give-up deadline (a pause or a partition
    /// shorter than the deadline costs nothing; the lease never passes under a live holder that
    /// keeps working).
    Heartbeat,
    /// `appendfsync always`: an acknowledged acquisition survives a crash of the server.
    AppendfsyncAlways,
    /// `WAIT 1` after acquiring: a failover cannot promote a replica without the key.
    WaitReplicas,
    /// A connection of the job's own for its whole run, unlocked before it goes back to a pool.
    OwnConnection,
    /// Acquisition failure skips the run instead of running without the lock.
    SkipPolicy,
    /// The client checks the validity left (Redlock's, or the TTL less the acquisition's own
    /// time) before its critical section.
    ValidityCheck,
    /// The job's processes die with the process that holds the lock.
    DieWithHolder,
    /// Release (and renew) only by token: a holder whose lock passed on cannot free the next
    /// holder's.
    CheckedRelease,
}

/// The mitigation of the failure a variant injects, and the variant that shows it working;
/// `None` for a variant that is itself a control (or measures recovery), and for a failure only a
/// fence can answer. Exhaustive: a new variant does not compile until it says which it is.
pub fn mitigation(variant: Variant) -> Option<(Mitigation, Variant)> {
    Some(match variant {
        Variant::PauseNaive => (Mitigation::Heartbeat, Variant::PauseHeartbeatShort),
        Variant::PartitionNoGiveUp => (Mitigation::Heartbeat, Variant::PartitionHeartbeat),
        Variant::ClusterLeaderIsolated { give_up: false } => (
            Mitigation::Heartbeat,
            Variant::ClusterLeaderIsolated { give_up: true },
        ),
        Variant::Overrun { heartbeat: false } => {
            (Mitigation::Heartbeat, Variant::Overrun { heartbeat: true })
        }
        Variant::Restart(Persistence::None | Persistence::Rdb | Persistence::AofEverysec)
        | Variant::RestartPowerLoss => (
            Mitigation::AppendfsyncAlways,
            Variant::Restart(Persistence::AofAlways),
        ),
        Variant::Failover { wait: false } => {
            (Mitigation::WaitReplicas, Variant::Failover { wait: true })
        }
        Variant::ClusterSentinelFailover {
            guard: ReplicaGuard::None | ReplicaGuard::MinReplicas,
        } => (
            Mitigation::WaitReplicas,
            Variant::ClusterSentinelFailover {
                guard: ReplicaGuard::Wait,
            },
        ),
        Variant::ClusterSentinelPrimaryIsolated { wait: false } => (
            Mitigation::WaitReplicas,
            Variant::ClusterSentinelPrimaryIsolated { wait: true },
        ),
        Variant::PoolLeak(PoolMode::NoReset | PoolMode::UnlockAll) => {
            (Mitigation::OwnConnection, Variant::PoolLeak(PoolMode::Xact))
        }
        Variant::Outage(OnFailure::RunUnlocked) => {
            (Mitigation::SkipPolicy, Variant::Outage(OnFailure::Skip))
        }
        Variant::RedlockLateStart { checked: false } => (
            Mitigation::ValidityCheck,
            Variant::RedlockLateStart { checked: true },
        ),
        Variant::SlowReply { checked: false } => (
            Mitigation::ValidityCheck,
            Variant::SlowReply { checked: true },
        ),
        Variant::CrashWorkSurvives => (Mitigation::DieWithHolder, Variant::CrashKilled),
        Variant::ReleaseAfterExpiry { checked: false } => (
            Mitigation::CheckedRelease,
            Variant::ReleaseAfterExpiry { checked: true },
        ),
        // A session lock through a transaction-mode pooler: the lock on a connection of the
        // job's own, which a session-mode pooler (or none) gives it.
        Variant::Pooler(PoolerMode::Transaction) => (
            Mitigation::OwnConnection,
            Variant::Pooler(PoolerMode::Session),
        ),
        // Controls, recovery measurements, and failures only a fence answers.
        Variant::PauseHeartbeatShort
        | Variant::PauseHeartbeatLong
        | Variant::Restart(Persistence::AofAlways)
        | Variant::RestartDelayed
        | Variant::RedlockRestart
        | Variant::RedlockClockJump
        | Variant::RedlockRestartAndClockJump
        | Variant::RedlockLateStart { checked: true }
        | Variant::PoolLeak(PoolMode::Xact)
        | Variant::PartitionHeartbeat
        | Variant::PartitionKeepalive
        | Variant::ClockJump
        | Variant::CrashKilled
        | Variant::CrashHostVanished { .. }
        | Variant::Failover { wait: true }
        | Variant::ClusterSentinelFailover {
            guard: ReplicaGuard::Wait,
        }
        | Variant::ClusterSentinelPrimaryIsolated { wait: true }
        | Variant::Outage(OnFailure::Skip | OnFailure::Queue)
        | Variant::Pooler(PoolerMode::Session | PoolerMode::SessionNoReset)
        | Variant::ReleaseAfterExpiry { checked: true }
        | Variant::Overrun { heartbeat: true }
        | Variant::SlowReply { checked: true }
        // A consensus cluster's leader lost: a control. A promoted standby never had the
        // primary's advisory locks: no setting of the lock brings them over, only a fence
        // refuses the old holder.
        | Variant::ClusterLeaderKilled
        | Variant::ClusterMemberRestarted
        | Variant::ClusterLeaderIsolated { give_up: true }
        | Variant::ClusterPrimaryPromoted => return None,
    })
}

/// True for a variant whose overlap is the job's doing, not the backend's (work that outlives the
/// lock's holder, a worker that runs without the lock, a release that deletes whatever lock is
/// there): it belongs in no backend's "cannot prevent".
pub fn about_the_job(variant: Variant) -> bool {
    matches!(
        mitigation(variant),
        Some((
            Mitigation::DieWithHolder | Mitigation::SkipPolicy | Mitigation::CheckedRelease,
            _
        ))
    )
}

/// The mitigations the design for `backend` includes (docs/DECISION.md, "Mechanisms").
pub fn designed(backend: BackendKind, skip_policy: bool) -> Vec<Mitigation> {
    let mut m = match backend {
        BackendKind::Memory => Vec::new(),
        BackendKind::Redis => vec![Mitigation::Heartbeat, Mitigation::ValidityCheck],
        BackendKind::Redlock => vec![Mitigation::Heartbeat, Mitigation::ValidityCheck],
        BackendKind::PgSession => vec![Mitigation::Heartbeat, Mitigation::OwnConnection],
        BackendKind::PgXact => vec![Mitigation::OwnConnection],
        BackendKind::Etcd | BackendKind::Zookeeper => vec![Mitigation::Heartbeat],
    };
    m.push(Mitigation::DieWithHolder);
    // A transaction's lock is released by its commit, which has no token to check.
    if backend != BackendKind::PgXact {
        m.push(Mitigation::CheckedRelease);
    }
    if skip_policy {
        m.push(Mitigation::SkipPolicy);
    }
    m
}

/// True when the backend's lock and fencing token live in a store that does not lose an
/// acknowledged write to a crash or a failover (a consensus store, or one Postgres primary whose
/// sequence is WAL-logged). Redis replication is asynchronous and each Redlock node is
/// independent: neither is.
pub fn linearizable(backend: BackendKind) -> bool {
    match backend {
        BackendKind::PgSession
        | BackendKind::PgXact
        | BackendKind::Etcd
        | BackendKind::Zookeeper => true,
        BackendKind::Redis | BackendKind::Redlock | BackendKind::Memory => false,
    }
}
