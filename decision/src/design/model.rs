//! How the chosen lock lasts: a transaction or a session on Postgres, else a fixed TTL where it
//! fits the crash-recovery budget and the lock only saves work, else a heartbeat lease as `ttl`
//! sized it.

use lockbench_core::BackendKind;
use lockbench_core::format_readable;
use lockbench_core::records::ttl::TtlRecommendation;

use crate::answers::Resolved;
use crate::record::{LockModel, ModelKind, Role};

/// How the chosen lock lasts.
pub(crate) fn lock_model(
    kind: Option<BackendKind>,
    r: &Resolved,
    role: &Role,
    ttl: Option<&TtlRecommendation>,
) -> LockModel {
    let none = LockModel {
        kind: ModelKind::HeartbeatLease,
        ttl_s: None,
        lease_s: None,
        renew_every_s: None,
        give_up_after_s: None,
        reason: String::new(),
    };
    match kind {
        Some(BackendKind::PgXact) => {
            return LockModel {
                kind: ModelKind::Transaction,
                reason: "pg_advisory_xact_lock inside the job's transaction: COMMIT or ROLLBACK frees it, a crash too (the session ends, the transaction rolls back); no TTL to outlive".into(),
                ..none
            };
        }
        Some(BackendKind::PgSession) => {
            return LockModel {
                kind: ModelKind::Session,
                reason: "pg_advisory_lock on a connection held for the whole job: no TTL to outlive; the server frees it when the session ends".into(),
                ..none
            };
        }
        None => {
            return LockModel {
                reason: "no backend fits the answers".into(),
                ..none
            };
        }
        // A lease: a fixed TTL or one renewed on a heartbeat, decided below.
        Some(
            BackendKind::Redis
            | BackendKind::Redlock
            | BackendKind::Etcd
            | BackendKind::Zookeeper
            | BackendKind::Memory,
        ) => {}
    }
    let Some(t) = ttl else {
        return LockModel {
            reason: "the job's runtime is not measured here (run `lockbench ttl SPEC`): a lease renewed on a heartbeat does not depend on it".into(),
            ..none
        };
    };
    let fits = r.crash_recovery.is_some_and(|c| t.ttl <= c);
    // A ZooKeeper lock is an ephemeral node whose session the client's pings keep alive: it is a
    // heartbeat lease whatever the runtime, never a fixed TTL.
    if fits && !role.correctness && kind != Some(BackendKind::Zookeeper) {
        return LockModel {
            kind: ModelKind::FixedTtl,
            ttl_s: Some(t.ttl.as_secs_f64()),
            reason: format!(
                "the fixed TTL of {} ({} x safety factor {}) is within the crash recovery allowed ({}): nothing to renew",
                format_readable(t.ttl),
                t.p999_said(),
                t.safety_factor,
                r.crash_recovery.map_or(String::new(), format_readable),
            ),
            ..none
        };
    }
    heartbeat_lease(kind, r, role, t)
}

/// The heartbeat lease a TTL backend holds when a fixed TTL will not do, and why not.
fn heartbeat_lease(
    kind: Option<BackendKind>,
    r: &Resolved,
    role: &Role,
    t: &TtlRecommendation,
) -> LockModel {
    let hb = &t.heartbeat;
    let why = match r.crash_recovery {
        _ if kind == Some(BackendKind::Zookeeper) => {
            "a ZooKeeper lock lives as long as its holder's session, which the client keeps alive by pinging: the session timeout is a lease".to_string()
        }
        Some(c) if t.ttl > c => format!(
            "a fixed TTL of {} would also block the job for {} after a crash, more than the {} allowed",
            format_readable(t.ttl),
            format_readable(t.ttl),
            format_readable(c)
        ),
        _ if role.correctness => {
            "the lock must not pass to another worker while its holder works: a fixed TTL is outlived by a slow run, a renewed lease is not".to_string()
        }
        Some(_) => "the crash recovery allowed fits a fixed TTL, but a renewed lease frees the lock sooner after a crash".to_string(),
        None => format!(
            "the crash recovery allowed is not answered: a lease of {} bounds it whatever the runtime",
            format_readable(hb.lease_ttl)
        ),
    };
    LockModel {
        kind: ModelKind::HeartbeatLease,
        ttl_s: None,
        lease_s: Some(hb.lease_ttl.as_secs_f64()),
        renew_every_s: Some(hb.renewal_interval.as_secs_f64()),
        give_up_after_s: Some(hb.give_up_after.as_secs_f64()),
        reason: format!(
            "{why}; lease {} renewed every {}, sized by `ttl`{}{}",
            format_readable(hb.lease_ttl),
            format_readable(hb.renewal_interval),
            hb.sized_by_profile
                .as_ref()
                .map(|p| format!(" from the pauses of `{p}`"))
                .unwrap_or_default(),
            if kind == Some(BackendKind::Zookeeper) {
                " (the session timeout; the client's pings are its heartbeat)"
            } else {
                ""
            }
        ),
    }
}
