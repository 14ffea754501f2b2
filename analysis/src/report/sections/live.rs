//! What the live replays say of a job: what they reproduced (a fixed TTL's double executions, the
//! incident on the decided backend held as decided), and whether the live runtimes agree with the
//! simulation. A miscalibration is claimed only where a test supports it: more live runs beyond
//! the simulated P90 (or below its P50) than chance allows at 5 %; otherwise the runs are
//! consistent, or too few to tell, and the record says which.

use lockbench_core::records::replay::{HoldMode, ReplayRecord};
use lockbench_core::{BackendId, format_count};
use lockbench_decision::{Decision, ModelKind};

use super::common::{Doc, secs, secs_f};
use crate::check::binomial_at_least;
use crate::report::doc::Block;
use crate::report::load::Inputs;

/// What the live replays of `d`'s job reproduced, as a list.
pub(super) fn reproduced(evidence: &Inputs, d: &Decision, doc: &mut Doc) {
    let mut items = Vec::new();
    for r in evidence
        .replays
        .iter()
        .map(|x| &x.record)
        .filter(|r| r.workload == d.job)
    {
        if r.undefended() && r.mode == HoldMode::Ttl && r.double_executions > 0 {
            items.push(format!(
                "A fixed TTL of {} under a runtime of {} (P50) double-executed {} items in {} of {} live runs on `{}`.",
                secs_f(r.ttl_s),
                secs(r.runtime_s.p50),
                format_count(r.double_executions),
                r.runs_with_double_execution,
                r.runs,
                r.backend
            ));
        }
        let held_as_decided = matches!(
            d.lock_model.kind,
            ModelKind::Session | ModelKind::Transaction | ModelKind::HeartbeatLease
        );
        if d.backend.map(BackendId::of) == Some(r.backend) && held_as_decided && r.undefended() {
            items.push(format!(
                "On the decided backend, `{}` held as decided ({}): {} items ran twice, in {} of {} live runs of `{}` at {} {}.",
                r.backend,
                d.lock_model.kind.name(),
                format_count(r.double_executions),
                r.runs_with_double_execution,
                r.runs,
                r.profile,
                format_count(r.volume),
                r.unit,
            ));
        }
    }
    if !items.is_empty() {
        doc.push(Block::List(items));
    }
}

/// The chance under the simulation of at least `k` of `n` live runs beyond a quantile that a run
/// passes with chance `p`.
fn tail(k: u64, n: u64, p: f64) -> f64 {
    binomial_at_least(k, n, p)
}

/// The live runtimes of `r` against its simulated ones, in one sentence.
pub fn agreement(r: &ReplayRecord) -> Option<String> {
    let sim = r.simulated.as_ref()?;
    let runtimes: Vec<f64> = r.per_run.iter().map(|j| j.runtime_s).collect();
    let n = runtimes.len() as u64;
    if n == 0 {
        return None;
    }
    let (p50, p90) = (
        sim.runtime_s.p50.as_secs_f64(),
        sim.runtime_s.p90.as_secs_f64(),
    );
    let above_p90 = runtimes.iter().filter(|t| **t > p90).count() as u64;
    let below_p50 = runtimes.iter().filter(|t| **t < p50).count() as u64;
    let slow = tail(above_p90, n, 0.1);
    let fast = tail(below_p50, n, 0.5);
    let setting = format!(
        "{}'s {} live run{} on `{}` at {} {} against {} simulated replays of `{}` at the same volume (P50 {}, P90 {})",
        r.workload,
        n,
        if n == 1 { "" } else { "s" },
        r.backend,
        format_count(r.volume),
        r.unit,
        format_count(sim.replays),
        r.profile,
        secs(sim.runtime_s.p50),
        secs(sim.runtime_s.p90),
    );
    Some(if slow < 0.05 {
        format!(
            "**The spec underestimates this job's runtime**: {setting}: {above_p90} of {n} live runs took longer than the simulated P90, which a calibrated spec gives with chance {:.3} (binomial, 10 % each). TTLs and thresholds derived from the simulation are too short until the spec is recalibrated (`lockbench calibrate`, or `ttl --observed`).",
            slow
        )
    } else if fast < 0.05 {
        format!(
            "The spec overestimates this job's runtime: {setting}: {below_p50} of {n} live runs were faster than the simulated P50 (chance {:.3} for a calibrated spec), which errs toward longer TTLs; recalibrate before shortening anything on its figures.",
            fast
        )
    } else {
        let median = {
            let mut sorted = runtimes.clone();
            sorted.sort_by(f64::total_cmp);
            sorted[sorted.len() / 2]
        };
        format!(
            "Consistent with the simulation: {setting}: the live median {}, and {above_p90} of {n} runs beyond the simulated P90, as a calibrated spec allows (1 in 10 each; {}).",
            lockbench_core::format_readable_s(median),
            if n < 5 {
                "too few runs to tell a miscalibration of less than a few times the spread"
                    .to_string()
            } else {
                format!("as many or more with chance {slow:.2}")
            }
        )
    })
}

/// The agreement of `workload`'s live replays with the simulation: a heartbeat replay first (one
/// holder at a time, as one simulated run has), one sentence.
pub(super) fn live_against_simulated(evidence: &Inputs, workload: &str, doc: &mut Doc) {
    let mut replays: Vec<&ReplayRecord> = evidence
        .replays
        .iter()
        .map(|x| &x.record)
        .filter(|r| r.workload == workload && r.simulated.is_some())
        .collect();
    replays.sort_by_key(|r| r.mode != HoldMode::Heartbeat);
    if let Some(text) = replays.first().and_then(|r| agreement(r)) {
        let warnings = replays.first().map_or(0, |r| r.warnings.len());
        doc.push(Block::Para(if warnings > 0 {
            format!(
                "{text} The replay could not hold every call to the latency it asked for ({warnings} warning{}; its directory has them).",
                if warnings == 1 { "" } else { "s" }
            )
        } else {
            text
        }));
    }
}
