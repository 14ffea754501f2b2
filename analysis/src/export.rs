//! Exporters return bytes; the caller decides where they go.

use std::time::Duration;

use crate::RuntimeSummary;

/// One row of a simulation summary: which job, profile and scale, and its runtimes.
#[derive(Clone, Debug, serde::Serialize)]
pub struct SimulationRow {
    /// Workload name.
    pub workload: String,
    /// Profile name.
    pub profile: String,
    /// Volume multiplier.
    pub scale: f64,
    /// Units of volume per run.
    pub volume: u64,
    /// What a unit of volume is.
    pub unit: String,
    /// Replays run.
    pub replays: u64,
    /// Runtime percentiles in seconds.
    #[serde(rename = "runtime_s")]
    pub runtime: RuntimeSummary,
    /// 95 % confidence interval of P99.9 in seconds.
    pub p999_ci_s: [f64; 2],
    /// False when there were too few replays for P99.9 to be trusted.
    pub p999_reliable: bool,
}

impl SimulationRow {
    /// Builds a row, copying the interval out of the summary.
    pub fn new(
        workload: &str,
        profile: &str,
        scale: f64,
        volume: u64,
        unit: &str,
        runtime: RuntimeSummary,
    ) -> Self {
        SimulationRow {
            workload: workload.to_string(),
            profile: profile.to_string(),
            scale,
            volume,
            unit: unit.to_string(),
            replays: runtime.replays,
            p999_ci_s: [
                crate::round_micro(runtime.p999_ci.0.as_secs_f64()),
                crate::round_micro(runtime.p999_ci.1.as_secs_f64()),
            ],
            p999_reliable: runtime.p999_is_reliable(),
            runtime,
        }
    }
}

/// The summary CSV of a simulation: one row per workload, profile and scale.
pub fn simulation_csv(rows: &[SimulationRow]) -> Vec<u8> {
    let mut out = String::from(
        "workload,profile,scale,volume,unit,replays,runtime_p50_s,runtime_p90_s,runtime_p99_s,runtime_p999_s,runtime_max_s,runtime_mean_s,p999_ci_lo_s,p999_ci_hi_s,p999_reliable\n",
    );
    let s = |d: Duration| format!("{:.6}", d.as_secs_f64());
    for r in rows {
        let t = &r.runtime;
        out.push_str(&format!(
            "{},{},{},{},{},{},{},{},{},{},{},{},{:.6},{:.6},{}\n",
            csv_field(&r.workload),
            csv_field(&r.profile),
            r.scale,
            r.volume,
            csv_field(&r.unit),
            r.replays,
            s(t.p50),
            s(t.p90),
            s(t.p99),
            s(t.p999),
            s(t.max),
            s(t.mean),
            r.p999_ci_s[0],
            r.p999_ci_s[1],
            r.p999_reliable
        ));
    }
    out.into_bytes()
}

/// Quotes a CSV field when it holds a separator, a quote or a line break (RFC 4180).
fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockbench_core::RuntimeHistogram;

    #[test]
    fn csv_has_a_header_and_quotes_awkward_names() {
        let mut h = RuntimeHistogram::new();
        h.record(Duration::from_secs(240));
        let row = SimulationRow::new(
            "bill,ing",
            "baseline",
            1.0,
            1800,
            "customers",
            RuntimeSummary::from_histogram(&h),
        );
        let text = String::from_utf8(simulation_csv(&[row])).unwrap();
        let lines: Vec<_> = text.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(lines[0].starts_with("workload,profile,scale"));
        assert!(
            lines[1].starts_with("\"bill,ing\",baseline,1,1800,customers,1,240.000000"),
            "{}",
            lines[1]
        );
    }
}
