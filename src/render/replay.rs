//! `replay`'s summary.

use std::fmt::Write as _;
use std::time::Duration;

use lockbench_core::records::replay::{HoldMode, ReplayRecord};
use lockbench_core::{format_count, format_duration, format_seconds};

use super::table::seconds;

/// The summary `replay` prints: what ran, runtimes beside the simulator's, what went twice, and
/// how faithful the injected latency was.
pub fn replay_summary(r: &ReplayRecord) -> String {
    let secs = |d: Duration| format_seconds(d);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "replay {} / {} x{} ({} {}) on {}: {} runs, {} workers, time scale {} (1 s of the job took {})",
        r.workload,
        r.profile,
        r.scale,
        r.volume,
        r.unit,
        r.backend,
        r.runs,
        r.workers,
        r.time_scale,
        format_duration(Duration::from_secs_f64(r.time_scale)),
    );
    let mode = match (r.mode, &r.heartbeat) {
        (HoldMode::Ttl, _) => format!("fixed TTL {}", secs(seconds(r.ttl_s))),
        (HoldMode::Heartbeat, Some(h)) => format!(
            "heartbeat: lease {}, renew every {}, give up after {}",
            secs(h.lease_ttl),
            secs(h.renewal_interval),
            secs(h.give_up_after)
        ),
        (HoldMode::Heartbeat, None) => format!(
            "heartbeat: lease {} (renewal figures not recorded)",
            secs(seconds(r.ttl_s))
        ),
    };
    let mut extras = Vec::new();
    if r.fencing {
        extras.push("fencing");
    }
    if r.idempotency_keys {
        extras.push("idempotency keys");
    }
    let _ = writeln!(
        out,
        "lock: {mode}{}",
        if extras.is_empty() {
            String::new()
        } else {
            format!(", {}", extras.join(", "))
        }
    );
    let t = &r.runtime_s;
    let _ = writeln!(
        out,
        "\nruntime (real-equivalent)   P50 {:>10}  P99 {:>10}  max {:>10}  mean {:>10}",
        secs(t.p50),
        secs(t.p99),
        secs(t.max),
        secs(t.mean)
    );
    if let Some(sim) = &r.simulated {
        let s = &sim.runtime_s;
        let _ = writeln!(
            out,
            "simulated ({:>7} replays)  P50 {:>10}  P99 {:>10}  max {:>10}  mean {:>10}",
            format_count(sim.replays),
            secs(s.p50),
            secs(s.p99),
            secs(s.max),
            secs(s.mean)
        );
        let _ = writeln!(
            out,
            "live / simulated            P50 {:>10.3}  {:>25}  mean {:>10.3}",
            sim.p50_ratio, "", sim.mean_ratio
        );
    }
    let _ = writeln!(
        out,
        "\ndouble executions: {} items, in {} of {} runs",
        r.double_executions, r.runs_with_double_execution, r.runs
    );
    if let Some(n) = r.duplicate_charges_accepted {
        let _ = writeln!(out, "duplicate charges accepted by the payment API: {n}");
    }
    if let Some(n) = r.out_of_order {
        let _ = writeln!(out, "migrations applied at or behind the pointer: {n}");
    }
    let _ = writeln!(
        out,
        "stale writes refused by fencing: {}; retry-worker takeovers: {}; job runs stopped early: {}; releases refused (lease gone): {}",
        r.stale_writes_rejected, r.takeovers, r.aborted_job_runs, r.releases_refused
    );
    let rows: Vec<_> = r
        .injected_latency
        .iter()
        .chain(&r.injected_latency_per_step)
        .collect();
    if !rows.is_empty() {
        let _ = writeln!(
            out,
            "\ninjected latency (real-equivalent ms)    requested P50  achieved P50  requested P99  achieved P99  real cost"
        );
        for t in rows {
            let _ = writeln!(
                out,
                "  {:<22} {:>9} calls {:>10.3} {:>13.3} {:>14.3} {:>13.3} {:>8.0} us{}",
                match &t.step {
                    Some(step) => format!("  {step}"),
                    None => t.target.clone(),
                },
                format_count(t.calls),
                t.requested_p50_ms,
                t.achieved_p50_ms,
                t.requested_p99_ms,
                t.achieved_p99_ms,
                t.real_cost_us,
                if t.within_tolerance {
                    ""
                } else {
                    "  (outside 5 % / 100 us)"
                }
            );
        }
    }
    out
}
