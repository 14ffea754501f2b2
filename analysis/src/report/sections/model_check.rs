//! Section 2's check of the model against past job runs (`lockbench check` directories): the
//! verdict, the tests behind it and the chart.

use lockbench_core::format_count;

use super::common::{ChartSpec, Doc, secs_f};
use crate::report::check_chart::{ModelCheckChart, RunPoint};
use crate::report::doc::Block;
use crate::report::load::Inputs;

/// The checks of `workload`'s model: a paragraph and a chart each.
pub(super) fn write(evidence: &Inputs, workload: &str, doc: &mut Doc) {
    for (i, c) in evidence
        .checks
        .iter()
        .filter(|c| c.record.workload == workload)
        .enumerate()
    {
        let r = &c.record;
        let mut text = format!(
            "**Model checked against {} past runs** (`{}`, {} replays per volume, seed {}): **{}**. Where the runs fall in the simulated distribution at their volume: KS distance {:.3} (p = {:.3}), the median run at the simulated P{:.0}. Beyond the simulated P99: {} ({:.1} expected, binomial p = {:.3}); beyond the simulated P99.9: {} ({:.1} expected, p = {:.3}). Each test at {} significance.",
            format_count(r.runs),
            r.observed,
            format_count(r.replays),
            r.seed,
            r.verdict,
            r.ks_distance,
            r.ks_p_value,
            r.median_pit * 100.0,
            r.beyond_p99,
            r.expected_beyond_p99,
            r.p99_p_value,
            r.beyond_p999,
            r.expected_beyond_p999,
            r.p999_p_value,
            r.alpha
        );
        if let Some(t) = &r.tail_fit {
            text += &format!(" The runs' own tail: {}.", t.said());
        }
        if !r.consistent {
            text += " The TTL above comes from this model: recalibrate the spec from observed latencies (`lockbench calibrate`) and derive it again before relying on it.";
        }
        doc.push(Block::Para(text));
        let mut profiles: Vec<&str> = r.bands.iter().map(|b| b.profile.as_str()).collect();
        profiles.dedup();
        let bands = profiles
            .iter()
            .map(|p| {
                let mut points: Vec<(f64, f64, f64, f64)> = r
                    .bands
                    .iter()
                    .filter(|b| b.profile == *p)
                    .map(|b| (b.volume as f64, b.p50_s, b.p99_s, b.p999_s))
                    .collect();
                points.sort_by(|a, b| a.0.total_cmp(&b.0));
                (p.to_string(), points)
            })
            .collect();
        let runs = c
            .runs
            .iter()
            .map(|run| RunPoint {
                volume: run.volume as f64,
                seconds: run.duration_s,
                beyond: if run.duration_s > run.sim_p999_s {
                    2
                } else {
                    u8::from(run.duration_s > run.sim_p99_s)
                },
            })
            .collect();
        let name = if i == 0 {
            format!("model-check-{workload}")
        } else {
            format!("model-check-{workload}-{}", i + 1)
        };
        let longest = c.runs.iter().map(|r| r.duration_s).fold(0.0, f64::max);
        doc.chart(
            format!(
                "{workload}: {} past runs over the simulated P50, P99 and P99.9 at their volume (longest {}), and where each fell in the simulated distribution against where a right model puts it",
                format_count(r.runs),
                secs_f(longest)
            ),
            ChartSpec::Check(
                name,
                ModelCheckChart {
                    title: format!("{workload}: the model against {} past runs", format_count(r.runs)),
                    unit: r.unit.clone(),
                    bands,
                    runs,
                    pits: c.runs.iter().map(|r| r.pit).collect(),
                },
            ),
        );
    }
}
