//! How long a crash blocks the job, against what its owners allow: the fixed TTL or the lease in
//! force, or for a Postgres lock the keepalive that ends a vanished holder's session, with what
//! the lab measured of a killed process and a vanished host.

use lockbench_core::BackendKind;
use lockbench_core::fault::Variant;
use lockbench_core::format_readable_s;
use lockbench_core::records::faults::FaultCell;
use lockbench_core::records::ttl::TtlRecommendation;

use crate::answers::Resolved;
use crate::evidence::Evidence;
use crate::record::{CrashRecovery, LockModel, ModelKind};

/// The keepalive on the job's own connection that ends a vanished holder's session, and frees
/// its lock, within a quarter of the crash-recovery budget (at most 2 min): idle, interval, count.
pub(crate) fn keepalive(budget: Option<std::time::Duration>) -> (u64, u64, u32) {
    let target = budget.map_or(120, |b| (b.as_secs() / 4).clamp(8, 120));
    (target / 2, (target / 8).max(1), 4)
}

/// The keepalive's bound: how long after its host vanished the server ends the holder's session.
pub(crate) fn keepalive_bound_s(budget: Option<std::time::Duration>) -> u64 {
    let (idle, interval, count) = keepalive(budget);
    idle + interval * u64::from(count)
}

/// The lab's vanished-host cells of `kind`, in words ([`describe_vanished`]).
pub(crate) fn vanished_host(ev: &Evidence, kind: BackendKind) -> Option<String> {
    describe_vanished(
        ev.cell(Variant::CrashHostVanished { keepalive: true }, kind),
        ev.cell(Variant::CrashHostVanished { keepalive: false }, kind),
    )
}

/// A vanished host as measured, in words: with the per-connection keepalive (`kept`, Postgres)
/// and then with Linux's defaults, or with the backend as configured; `None` when neither ran.
pub fn describe_vanished(kept: Option<&FaultCell>, defaults: Option<&FaultCell>) -> Option<String> {
    let trials = |n: u32| format!("{n} trial{}", if n == 1 { "" } else { "s" });
    let granted = |c: &FaultCell| match (c.recovery_p50_s, c.recovery_max_s) {
        (Some(p50), Some(max)) if c.contender_timed_out == 0 => format!(
            "the next worker granted {} after the host vanished (longest {}, {})",
            format_readable_s(p50),
            format_readable_s(max),
            trials(c.trials)
        ),
        _ => format!(
            "{} in {} of {}",
            c.not_granted(),
            c.contender_timed_out,
            trials(c.trials)
        ),
    };
    match kept {
        Some(kept) => Some(format!(
            "{} on {}, per-connection keepalive scaled to the lab: {}{}",
            kept.label(),
            kept.backend,
            granted(kept),
            defaults.map_or(String::new(), |d| format!(
                "; with Linux's default keepalive ({}): {}",
                d.label(),
                granted(d)
            ))
        )),
        None => defaults.map(|d| {
            format!(
                "{} on {}, lab TTL {}: {}",
                d.label(),
                d.backend,
                format_readable_s(d.granted_ttl_s),
                granted(d)
            )
        }),
    }
}

/// Crash recovery against what the job allows.
pub(crate) fn crash_recovery(
    r: &Resolved,
    ev: &Evidence,
    kind: Option<BackendKind>,
    model: &LockModel,
    ttl: Option<&TtlRecommendation>,
) -> CrashRecovery {
    let allowed = r.crash_recovery.map(|c| c.as_secs_f64());
    let fixed = ttl.map(|t| t.ttl.as_secs_f64());
    let measured = kind.and_then(|k| ev.cell(Variant::CrashKilled, k));
    let vanished = kind.and_then(|k| vanished_host(ev, k));
    let chosen = match model.kind {
        ModelKind::FixedTtl => model.ttl_s,
        ModelKind::HeartbeatLease => model.lease_s,
        // The worst crash is a vanished host, not a killed process: the keepalive decides it.
        ModelKind::Session | ModelKind::Transaction => {
            Some(keepalive_bound_s(r.crash_recovery) as f64)
        }
    };
    let mut notes = Vec::new();
    // A fixed TTL is worth a sentence only where it is in force, or where it is why the lease in
    // force was chosen (it would block the job longer than allowed); a session or a transaction
    // has none.
    let weighed = match model.kind {
        ModelKind::FixedTtl => true,
        ModelKind::HeartbeatLease => fixed.zip(allowed).is_some_and(|(f, a)| f > a),
        ModelKind::Session | ModelKind::Transaction => false,
    };
    match (fixed.filter(|_| weighed), allowed) {
        (Some(f), Some(a)) if f > a => notes.push(format!(
            "A fixed TTL of {} is also a {} crash-recovery delay, above the {} allowed.",
            format_readable_s(f),
            format_readable_s(f),
            format_readable_s(a)
        )),
        (Some(f), Some(a)) => notes.push(format!(
            "The fixed TTL of {} is within the {} allowed for crash recovery.",
            format_readable_s(f),
            format_readable_s(a)
        )),
        (Some(f), None) => notes.push(format!(
            "A fixed TTL of {} would also block the job that long after a crash; `crash_recovery` is not answered.",
            format_readable_s(f)
        )),
        _ => {}
    }
    notes.push(match model.kind {
        ModelKind::FixedTtl => "The design keeps the fixed TTL.".to_string(),
        ModelKind::HeartbeatLease => match model.lease_s {
            Some(l) => format!(
                "The heartbeat lease frees the lock within {} of a crash.",
                format_readable_s(l)
            ),
            None => "A heartbeat lease frees the lock within one lease of a crash.".to_string(),
        },
        ModelKind::Session | ModelKind::Transaction => format!(
            "The server frees the lock when the holder's session ends: at once when its process dies (the kernel closes the socket), and, when its host vanishes, once the keepalive on the job's own connection gives up: within {} with the settings under Mechanisms (a bound computed from them{}), against about 2 h 11 min with Linux's defaults.",
            format_readable_s(keepalive_bound_s(r.crash_recovery) as f64),
            if vanished.is_some() {
                "; the lab measured the mechanism, below"
            } else {
                "; the lab's vanished-host variant is not in these results"
            }
        ),
    });
    if let Some(v) = &vanished {
        notes.push(format!("Host vanished, measured ({v})."));
    }
    if let Some(c) = measured {
        notes.push(format!(
            "Process killed, measured ({} on {}, lab TTL {}): the next worker was granted {} after the kill (longest {}).",
            c.label(),
            c.backend,
            format_readable_s(c.granted_ttl_s),
            c.recovery_p50_s.map_or("-".to_string(), format_readable_s),
            c.recovery_max_s.map_or("-".to_string(), format_readable_s)
        ));
    }
    CrashRecovery {
        allowed_s: allowed,
        fixed_ttl_s: fixed,
        chosen_s: chosen,
        within: match (chosen, allowed) {
            (Some(c), Some(a)) => Some(c <= a),
            _ => None,
        },
        note: notes.join(" "),
    }
}
