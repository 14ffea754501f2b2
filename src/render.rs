//! Terminal output: the tables and the recommendation as people read them, from the typed records
//! alone.

mod calibrate;
mod check;
mod compare;
mod decision;
mod faults;
mod table;
pub use calibrate::calibration_text;
pub use check::check_text;
pub use compare::comparison_text;
pub use decision::decisions;
pub use faults::{fault_matrix, swept};
use table::table;

use std::fmt::Write as _;
use std::time::Duration;

use lockbench_analysis::{ALERT_SHARE, TtlRecommendation, describe_trigger, heartbeat_derivation};
use lockbench_core::records::bench::BenchRow;
use lockbench_core::records::replay::{HoldMode, ReplayRecord};
use lockbench_core::records::simulate::{SimulationRecord, SimulationRow};
use lockbench_core::records::tail_samples_needed;
use lockbench_core::{
    format_chance, format_column, format_count, format_duration, format_long, format_readable,
    format_seconds,
};

/// A command's record on stdout: its JSON with `--json` (what `results.json` holds), else `text`
/// of it. The one place a command chooses between the two.
pub fn show<T: serde::Serialize>(
    json: bool,
    record: &T,
    text: impl FnOnce(&T) -> String,
) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    if json {
        stdout.write_all(&lockbench_core::records::to_json(record))
    } else {
        stdout.write_all(text(record).as_bytes())
    }
}

/// `simulate`'s terminal text: the table, then the throughput.
pub fn simulation_text(record: &SimulationRecord) -> String {
    format!(
        "{}\n{}\n",
        simulation_table(record),
        throughput_line(record)
    )
}

/// The `simulate` table, followed by any warnings about sample sizes.
pub fn simulation_table(record: &SimulationRecord) -> String {
    let mut out = String::new();
    let replays = record.results.first().map_or(0, |r| r.replays);
    let processes = if record.shards > 1 {
        format!(
            "{} shards of up to {} threads",
            record.shards, record.threads
        )
    } else {
        format!("{} threads", record.threads)
    };
    let _ = writeln!(
        out,
        "seed {} (rerun with --seed {} to reproduce), {} replays per row, {processes}\n",
        record.seed,
        record.seed,
        format_count(replays),
    );
    let header = [
        "workload",
        "profile",
        "scale",
        "volume",
        "P50",
        "P90",
        "P99",
        "P99.9",
        "max",
        "mean",
        "P99.9 95% CI",
    ];
    let rows: Vec<Vec<String>> = record.results.iter().map(table_row).collect();
    out.push_str(&table(&header, &rows, 2));
    if record.results.iter().any(|r| !r.p999_reliable) {
        let _ = writeln!(
            out,
            "\nnote: {} replays leave fewer than 10 runs above P99.9, so P99.9 is an anecdote, not an estimate; use --replays {} or more.",
            format_count(replays),
            tail_samples_needed(0.999)
        );
    }
    out
}

fn seconds(s: f64) -> Duration {
    Duration::try_from_secs_f64(s).unwrap_or_default()
}

fn table_row(r: &SimulationRow) -> Vec<String> {
    let t = &r.runtime;
    let [lo, hi] = r.p999_ci_s.map(seconds);
    let ci = if r.p999_ci_open {
        format!("{} - unbounded", format_column(lo))
    } else {
        format!("{} - {}", format_column(lo), format_column(hi))
    };
    vec![
        r.workload.clone(),
        r.profile.clone(),
        format!("{}", r.scale),
        format!("{} {}", format_count(r.volume), r.unit),
        format_column(t.p50),
        format_column(t.p90),
        format_column(t.p99),
        format_column(t.p999),
        format_column(t.max),
        format_column(t.mean),
        ci,
    ]
}

/// One line on simulator speed; for a merged run, per process over the shards' summed time.
pub fn throughput_line(record: &SimulationRecord) -> String {
    let time = if record.shards > 1 {
        format!(
            "{:.2} s summed over {} shards",
            record.elapsed_s, record.shards
        )
    } else {
        format!("{:.2} s", record.elapsed_s)
    };
    format!(
        "simulated {} latency samples in {time}: {:.1} M samples/s{}",
        format_count(record.latency_samples),
        record.samples_per_s / 1e6,
        if record.shards > 1 {
            " per process"
        } else {
            ""
        }
    )
}

/// The `ttl` recommendation, each figure with how it was derived.
pub fn ttl_report(r: &TtlRecommendation) -> String {
    let mut o = String::new();
    let unit = &r.unit;
    if let Some(check) = r.model_check.as_ref().filter(|c| !c.consistent) {
        let _ = writeln!(o, "WARNING: {}", rejected_model(check));
    }
    let _ = writeln!(
        o,
        "TTL for {} at scale {} ({} {unit}), profile {}",
        r.workload,
        r.target_scale,
        format_count(r.target_volume),
        r.profile
    );
    if let Some(check) = r.model_check.as_ref().filter(|c| c.consistent) {
        let _ = writeln!(
            o,
            "  model checked against {} past runs in {}: {}",
            format_count(check.runs),
            check.observed,
            check.verdict
        );
    }
    if r.profiles_considered.len() > 1 {
        let list: Vec<String> = r
            .profiles_considered
            .iter()
            .map(|p| format!("{} {}", p.profile, format_readable(p.p999)))
            .collect();
        let _ = writeln!(o, "  chosen as the highest P99.9 of: {}", list.join(", "));
    }
    let _ = writeln!(
        o,
        "  seed {}, {} replays per scale\n",
        r.seed,
        format_count(r.replays)
    );

    let ci = format!(
        "95% CI {} - {}{}",
        format_seconds(seconds(r.p999_ci_s[0])),
        format_seconds(seconds(r.p999_ci_s[1])),
        if r.p999_ci_open {
            " (upper end unbounded)"
        } else {
            ""
        }
    );
    let _ = writeln!(
        o,
        "  measured P99.9 runtime   {}   ({ci})",
        format_long(r.measured_p999)
    );
    let _ = writeln!(o, "  safety factor            {}", r.safety_factor);
    let _ = writeln!(
        o,
        "  fixed TTL                {}   = measured P99.9 x safety factor",
        format_long(r.ttl)
    );
    if r.replays < tail_samples_needed(0.999) {
        let _ = writeln!(
            o,
            "  warning: {} replays are too few for P99.9; use --replays {} or more",
            format_count(r.replays),
            tail_samples_needed(0.999)
        );
    }

    let hb = &r.heartbeat;
    let _ = writeln!(
        o,
        "\n  heartbeat alternative (for jobs whose runtime has no safe bound)"
    );
    let derivation = heartbeat_derivation(hb);
    let _ = writeln!(
        o,
        "    lease TTL              {}   = {}",
        format_duration(hb.lease_ttl),
        derivation.lease
    );
    // A priced lease (the only kind with a risk line) always has its chance.
    if let (Some(risk), Some(p)) = (&derivation.risk, hb.p_lease_lost) {
        let _ = writeln!(
            o,
            "    lease risk per run     {}   {risk}",
            format_chance(p)
        );
    }
    if let Some(closed) = &derivation.closed_form {
        let _ = writeln!(o, "    closed form            {closed}");
    }
    let _ = writeln!(
        o,
        "    renewal interval       {}   = {}",
        format_duration(hb.renewal_interval),
        derivation.renewal
    );
    let _ = writeln!(
        o,
        "    give up after          {}   = {}",
        format_duration(hb.give_up_after),
        derivation.give_up
    );
    let _ = writeln!(
        o,
        "    a crashed holder frees the lock within {}; the last third of the lease covers the renewal round trip and clock drift",
        format_duration(hb.lease_ttl)
    );

    let _ = writeln!(
        o,
        "\n  alert threshold          {}   = {:.0} % of the TTL: a run holding the lock longer is investigated",
        format_long(r.alert_hold),
        ALERT_SHARE * 100.0
    );
    let (mut trigger, how) = describe_trigger(r);
    if r.review_trigger_volume.is_some_and(|v| v > r.target_volume) {
        trigger = format!("re-derive before volume exceeds {trigger}");
    }
    let _ = writeln!(
        o,
        "  review trigger           {trigger}\n                           {how}"
    );
    if let Some(c) = &r.current_ttl {
        let _ = writeln!(o, "\n  current TTL {}", format_duration(c.ttl));
        let _ = writeln!(
            o,
            "    chance per run that the job outlives it   {}   (95% upper bound {}; {} of {} replays)",
            format_chance(c.p_exceed),
            format_chance(c.p_exceed_upper95),
            format_count(c.replays_exceeding),
            format_count(r.replays)
        );
        let _ = writeln!(
            o,
            "    expected double executions per year       {:.3}   (upper bound {:.3}; {}, a second worker waiting)",
            c.expected_double_runs_per_year,
            c.expected_double_runs_per_year_upper95,
            r.runs_per_year_from.runs_a_year(r.runs_per_year)
        );
        if c.ttl < r.ttl {
            let _ = writeln!(
                o,
                "    it is shorter than the recommended {}",
                format_long(r.ttl)
            );
        }
    }
    o
}

/// The first line of a TTL whose model the observed runs reject.
pub fn rejected_model(check: &lockbench_core::records::model::ModelCheck) -> String {
    format!(
        "the model behind this TTL is rejected by the {} past runs in {}: {}. The figures below come from that model; recalibrate the spec (lockbench calibrate) before filing them",
        format_count(check.runs),
        check.observed,
        check.verdict
    )
}

/// The `bench` table: one row per backend, mode and contention level, latencies in microseconds.
pub fn bench_table(results: &[BenchRow]) -> String {
    let header = [
        "backend",
        "mode",
        "keys",
        "wait",
        "C",
        "ops",
        "errors",
        "acq P50",
        "P90",
        "P99",
        "P99.9",
        "max",
        "renew P50",
        "release P50",
        "handoff P50",
        "P99",
        "try fail",
        "req/grant",
        "fair",
        "ops/s",
    ];
    let us = |v: f64| format!("{v:.1}");
    let rows: Vec<Vec<String>> = results
        .iter()
        .map(|r| {
            vec![
                r.backend.to_string(),
                match r.rate_per_s {
                    Some(rate) => format!("open {rate}/s"),
                    None => r.mode.to_string(),
                },
                r.keys.to_string(),
                r.wait_mode.to_string(),
                r.contenders.to_string(),
                format_count(r.ops),
                format_count(r.errors),
                us(r.acquire_us.p50),
                us(r.acquire_us.p90),
                us(r.acquire_us.p99),
                us(r.acquire_us.p999),
                us(r.acquire_us.max),
                us(r.renew_us.p50),
                us(r.release_us.p50),
                if r.handoff_us.count == 0 {
                    "-".to_string()
                } else {
                    us(r.handoff_us.p50)
                },
                if r.handoff_us.count == 0 {
                    "-".to_string()
                } else {
                    us(r.handoff_us.p99)
                },
                format!("{:.1} %", r.try_fail_rate * 100.0),
                r.requests_per_grant
                    .map_or("-".to_string(), |n| format!("{n:.2}")),
                r.fairness_jain
                    .map_or("-".to_string(), |j| format!("{j:.3}")),
                format!("{:.0}", r.throughput_per_s),
            ]
        })
        .collect();
    let mut out = String::from(
        "latencies in microseconds; acquire includes waiting for the lock; handoff: from a release to the grant of a contender that was waiting for it; req/grant: requests sent to the server per grant (- = no server); fair: Jain's index of the contenders' grants (1 = equal shares, - = one contender or open loop)\n\n",
    );
    out.push_str(&table(&header, &rows, 4));
    out
}

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
