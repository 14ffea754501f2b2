//! `check`'s terminal text.

use lockbench_core::records::model::CheckRecord;
use lockbench_core::{format_count, format_duration_s};

/// What the terminal shows.
pub fn check_text(r: &CheckRecord) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "check of {} against {} observed runs ({}), {} replays per volume, seed {}",
        r.workload,
        format_count(r.runs),
        r.observed,
        format_count(r.replays),
        r.seed
    );
    for b in &r.bands {
        let _ = writeln!(
            o,
            "  {} at {} {}: simulated P50 {}  P99 {}  P99.9 {}  ({} runs nearest)",
            b.profile,
            format_count(b.volume),
            r.unit,
            format_duration_s(b.p50_s),
            format_duration_s(b.p99_s),
            format_duration_s(b.p999_s),
            format_count(b.runs)
        );
    }
    let _ = writeln!(
        o,
        "  where the runs fall (PIT): KS distance {:.3} (p = {:.3}); the median run at the simulated P{:.0}",
        r.ks_distance,
        r.ks_p_value,
        r.median_pit * 100.0
    );
    let _ = writeln!(
        o,
        "  beyond the simulated P99:   {} of {} ({:.1} expected, binomial p = {:.3})",
        r.beyond_p99, r.runs, r.expected_beyond_p99, r.p99_p_value
    );
    let _ = writeln!(
        o,
        "  beyond the simulated P99.9: {} of {} ({:.1} expected, binomial p = {:.3})",
        r.beyond_p999, r.runs, r.expected_beyond_p999, r.p999_p_value
    );
    let _ = writeln!(o, "  verdict: {}", r.verdict);
    match &r.tail_fit {
        Some(t) => {
            let _ = writeln!(o, "  observed tail: {}", t.said());
        }
        None => {
            let _ = writeln!(
                o,
                "  observed tail: not fitted: fewer than {} runs above their 90th percentile",
                lockbench_workloads::tail_fit::MIN_EXCEEDANCES
            );
        }
    }
    if r.expected_beyond_p999 < 3.0 {
        let _ = writeln!(
            o,
            "  note: {} runs expect {:.1} beyond the simulated P99.9, too few for that test to reject much: they speak for the body and the P99 (about 3,000 runs are needed for the P99.9)",
            format_count(r.runs),
            r.expected_beyond_p999
        );
    }
    o
}
