//! `calibrate`'s terminal text.

use std::fmt::Write as _;

use lockbench_core::records::model::CalibrationRecord;
use lockbench_core::{format_count, format_duration_s};

/// The fit table, then each step's reason, latency line and warnings.
pub fn calibration_text(r: &CalibrationRecord) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{:<22} {:>9} {:<10} {:>22} {:>22} {:>22} {:>22} {:>7}",
        "step",
        "samples",
        "dist",
        "P50 obs / fit",
        "P90 obs / fit",
        "P99 obs / fit",
        "P99.9 obs / fit",
        "KS"
    );
    for s in &r.steps {
        let pair = |i: usize| {
            format!(
                "{} / {}",
                format_duration_s(s.observed_s[i]),
                format_duration_s(s.fitted_s[i])
            )
        };
        let _ = writeln!(
            o,
            "{:<22} {:>9} {:<10} {:>22} {:>22} {:>22} {:>22} {:>7.4}",
            s.step,
            format_count(s.samples),
            s.dist,
            pair(0),
            pair(1),
            pair(2),
            pair(3),
            s.ks_distance
        );
    }
    for s in &r.steps {
        let _ = writeln!(o, "  {}: {}", s.step, s.reason);
        let _ = writeln!(o, "    latency = {}", s.latency_toml);
        for w in &s.warnings {
            let _ = writeln!(o, "    warning: {w}");
        }
        if let Some(t) = &s.tail_fit {
            let _ = writeln!(o, "    tail: {}", t.said());
        }
    }
    o
}
