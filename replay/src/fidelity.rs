//! How faithfully the calls took what they were asked to, and the report of a replay.

use lockbench_core::RuntimeHistogram;

use lockbench_core::records::replay::InjectedLatency;

use crate::costs::TARGETS;
use crate::plan::{Accumulator, LiveReport, MeasuredLatency, ReplayPlan, TargetStats, Worker};

/// The fidelity target: within 5 % or 100 us (compressed) of the request.
const TOLERANCE_SHARE: f64 = lockbench_core::records::replay::LIVE_AGREEMENT;
const TOLERANCE_ABS_NS: f64 = 100_000.0;

impl Accumulator {
    /// The report, from the runs and every worker's measurements.
    pub(crate) fn finish(&self, plan: &ReplayPlan, workers: &[Worker]) -> LiveReport {
        let f = plan.f();
        let mut runtimes = RuntimeHistogram::new();
        for r in &self.runs {
            runtimes.record_ns((r.runtime_s * 1e9).round() as u64);
        }
        let mut warnings = self.warnings.clone();
        let steps = plan.model.steps();
        let merged = |chosen: &dyn Fn(usize) -> bool| {
            let mut total = TargetStats::default();
            for w in workers {
                for (_, st) in w.stats.iter().enumerate().filter(|(i, _)| chosen(*i)) {
                    total.requested.merge(&st.requested);
                    total.achieved.merge(&st.achieved);
                    total.hold_ns += st.hold_ns;
                    total.achieved_ns += st.achieved_ns;
                }
            }
            total
        };
        let injected: Vec<MeasuredLatency> = TARGETS
            .iter()
            .filter_map(|t| fidelity(t.name(), None, merged(&|i| steps[i].target == *t), f))
            .collect();
        let per_step: Vec<MeasuredLatency> = steps
            .iter()
            .enumerate()
            .filter_map(|(i, st)| {
                fidelity(
                    st.target.name(),
                    Some(st.name.clone()),
                    merged(&|j| j == i),
                    f,
                )
            })
            .collect();
        for row in per_step.iter().map(|m| &m.row) {
            if !row.within_tolerance {
                warnings.push(format!(
                    "step {} ({}): achieved P50 {:.3} ms / P99 {:.3} ms against requested {:.3} / {:.3} ms (compressed), outside 5 % or 100 us: a call's real cost ({:.0} us) is large next to what this --time-scale asks for",
                    row.step.as_deref().unwrap_or(""),
                    row.target,
                    row.achieved_p50_ms * f,
                    row.achieved_p99_ms * f,
                    row.requested_p50_ms * f,
                    row.requested_p99_ms * f,
                    row.real_cost_us
                ));
            }
        }
        LiveReport {
            runs: self.runs.clone(),
            runtimes,
            injected,
            per_step,
            real_rows: plan.real_rows,
            warnings,
        }
    }
}

/// Requested against achieved for one group of calls; `None` when it has none.
fn fidelity(
    target: &str,
    step: Option<String>,
    total: TargetStats,
    f: f64,
) -> Option<MeasuredLatency> {
    let calls = total.achieved.count();
    if calls == 0 {
        return None;
    }
    let ns = |h: &RuntimeHistogram, q: f64| h.quantile(q).as_nanos() as f64;
    let ms = |ns: f64| ns / f / 1e6;
    let close = |r: f64, a: f64| (a - r).abs() <= (TOLERANCE_SHARE * r).max(TOLERANCE_ABS_NS);
    let (r50, a50) = (ns(&total.requested, 0.5), ns(&total.achieved, 0.5));
    let (r99, a99) = (ns(&total.requested, 0.99), ns(&total.achieved, 0.99));
    let row = InjectedLatency {
        target: target.to_string(),
        step,
        calls,
        requested_p50_ms: ms(r50),
        achieved_p50_ms: ms(a50),
        requested_p99_ms: ms(r99),
        achieved_p99_ms: ms(a99),
        requested_mean_ms: ms(total.requested.mean().as_nanos() as f64),
        achieved_mean_ms: ms(total.achieved.mean().as_nanos() as f64),
        real_cost_us: (total.achieved_ns - total.hold_ns) / calls as f64 / 1e3,
        within_tolerance: close(r50, a50) && close(r99, a99),
    };
    Some(MeasuredLatency {
        row,
        requested: total.requested,
        achieved: total.achieved,
    })
}
