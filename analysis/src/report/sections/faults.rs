//! What the fault lab measured, for section 1 (the matrix, a timeline per overlapping variant,
//! each backend's measured "cannot prevent") and section 4 (stale writes and the fence).

use lockbench_core::fault::{CellId, Variant};
use lockbench_core::records::faults::{FaultCell, FaultEventRow, FaultTrialRow, LogEvent, Role};
use lockbench_core::{BackendId, format_count, format_readable_s};

use super::common::{ChartSpec, Doc, secs_f};
use crate::report::doc::{Block, Grid, GridCell, GridRow, Tone, slug};
use crate::report::grid_chart::FaultGridChart;
use crate::report::load::{Faults, Inputs};
use crate::report::timeline::{FaultTimeline, Lane, Mark, TrialLanes};

/// Every fault-lab cell of the run measured through lockbench's own client, with the faults
/// result it came from (a client library's cells are that library's evidence).
pub(super) fn cells(evidence: &Inputs) -> impl Iterator<Item = (&Faults, &FaultCell)> {
    evidence.faults.iter().flat_map(|f| {
        f.record
            .cells
            .iter()
            .filter(|c| c.client.is_none())
            .map(move |c| (f, c))
    })
}

/// The fault runs with a cell measured through lockbench's own client (a run through a library
/// alone is read by the library part).
pub(super) fn own_runs(evidence: &Inputs) -> impl Iterator<Item = &Faults> {
    evidence
        .faults
        .iter()
        .filter(|f| f.record.cells.iter().any(|c| c.client.is_none()))
}

fn s2(v: Option<f64>) -> String {
    v.map_or("-".to_string(), secs_f)
}

/// What the fence did with a cell's stale writes, in words.
fn fence_words(c: &FaultCell) -> String {
    match c.stale_rejected_by_fence {
        None => "no token to check".to_string(),
        Some(_) if c.stale_writes == 0 => "nothing stale to refuse".to_string(),
        Some(n) => format!("refused {n} of {}", c.stale_writes),
    }
}

/// The heading of the fault grid (section 1).
pub(super) const GRID_HEADING: &str = "What the fault lab measured";
/// The heading of the appendix with every cell's figures.
pub(super) const APPENDIX_HEADING: &str = "Appendix A. Every fault-lab cell";

/// The anchor of a scenario/variant's row in the fault grid.
pub(super) fn grid_anchor(label: &str) -> String {
    format!(
        "fault-{}",
        label
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect::<String>()
    )
}

/// "pause/naive, restart/no-persistence", each linked to its row of the fault grid.
pub(super) fn overlapped(labels: &[String]) -> String {
    if labels.is_empty() {
        return "none measured".to_string();
    }
    labels
        .iter()
        .map(|l| format!("[{l}](#{})", grid_anchor(l)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The measured "cannot prevent" of `backend` in a word per fault: the scenarios that overlapped
/// on it (not those where the job's own conduct overlapped: work outliving its holder, a run
/// without the lock), each linked to its grid row, or "none measured"; `None` when no fault run
/// covered it.
pub(super) fn cannot_prevent(evidence: &Inputs, backend: BackendId) -> Option<String> {
    let mine: Vec<&FaultCell> = cells(evidence)
        .map(|(_, c)| c)
        .filter(|c| c.backend == backend)
        .collect();
    if mine.is_empty() {
        return None;
    }
    let labels: Vec<String> = mine
        .iter()
        .filter(|c| c.trials_with_overlap > 0 && !lockbench_decision::lab::about_the_job(c.variant))
        .map(|c| c.label())
        .collect();
    Some(overlapped(&labels))
}

/// The tone and text of a cell in the grid.
pub(super) fn grid_cell(c: &FaultCell) -> GridCell {
    let text = if c.trials_with_overlap == 0 && c.contender_timed_out > 0 {
        // Nothing overlapped because nobody else got the lock: say so beside the count (how
        // long the contender waited is in the appendix; the chart's column has no room).
        format!("0/{}, not granted", c.trials)
    } else if c.trials_with_overlap == 0 {
        format!("0/{}", c.trials)
    } else {
        format!(
            "{}/{}, {}",
            c.trials_with_overlap,
            c.trials,
            s2(c.overlap_max_s)
        )
    };
    let tone = if c.trials_with_overlap == 0 {
        Tone::Good
    } else if c.stale_writes > 0 && lockbench_decision::fence_held(c) {
        Tone::Caught
    } else {
        Tone::Bad
    };
    GridCell { text, tone }
}

/// Section 1's part: the fault grid, as a table (HTML) and a chart (Markdown), with a link to
/// the appendix of every cell's figures.
pub(super) fn write_grid(evidence: &Inputs, doc: &mut Doc) {
    doc.push(Block::Heading(3, GRID_HEADING.to_string()));
    if own_runs(evidence).next().is_none() {
        doc.push(Block::Para(
            "No fault run in these results: what each backend cannot prevent comes from how it locks (docs/BACKENDS.md). Run `lockbench faults` (or `lockbench run`) to measure it.".to_string(),
        ));
        return;
    }
    let runs: Vec<String> = own_runs(evidence)
        .map(|f| {
            format!(
                "`{}` ({} trial{} per cell, TTL asked {}, seed {})",
                f.source.label,
                f.record.trials_per_cell,
                if f.record.trials_per_cell == 1 {
                    ""
                } else {
                    "s"
                },
                secs_f(f.record.ttl_s),
                f.record.seed
            )
        })
        .collect();
    doc.push(Block::Para(format!(
        "Each cell: trials in which two workers both believed they held the lock, of those run, and the longest overlap. Holder and contender are separate processes writing to a protected resource that logs every critical section with one monotonic clock and keeps the highest fencing token seen. From {}; every cell's figures (stale writes, what the fence refused, time to the next grant) are in [{APPENDIX_HEADING}](#{}).",
        runs.join(", "),
        slug(APPENDIX_HEADING)
    )));
    let (backends, rows) = grid_rows(evidence);
    push_grid(
        doc,
        GridChart {
            name: "fault-grid",
            title: "Fault lab: trials with an overlap, and the longest",
            caption: "The fault grid: trials with an overlap per scenario/variant and backend, the longest overlap, coloured by outcome",
            off: "not applicable, or not run here",
        },
        // Each column names the TTL the lab granted on it (a consensus store's minimum lease is
        // longer): overlap lengths compare within a column, not across columns.
        backends
            .iter()
            .map(|b| {
                let ttl = cells(evidence)
                    .filter(|(_, c)| c.backend == *b)
                    .map(|(_, c)| c.granted_ttl_s)
                    .fold(0.0, f64::max);
                format!("`{b}` (TTL {})", format_readable_s(ttl))
            })
            .collect(),
        rows,
    );
}

/// What names and explains a grid of fault-lab cells.
pub(super) struct GridChart {
    /// The chart's file name.
    pub name: &'static str,
    /// Its title, in the picture.
    pub title: &'static str,
    /// Its caption, under it.
    pub caption: &'static str,
    /// What a grey cell means.
    pub off: &'static str,
}

/// A grid of scenario/variant against `columns`, each cell coloured as [`grid_cell`] colours
/// it, pushed as a table (HTML) and a chart (Markdown).
pub(super) fn push_grid(doc: &mut Doc, chart: GridChart, columns: Vec<String>, rows: Vec<GridRow>) {
    let grid = Grid {
        corner: "scenario/variant".to_string(),
        columns,
        rows,
        legend: vec![
            (Tone::Bad, "overlap".to_string()),
            (
                Tone::Caught,
                "overlap, the fence refused every stale write".to_string(),
            ),
            (Tone::Good, "no overlap".to_string()),
            (Tone::Off, chart.off.to_string()),
        ],
        chart: Some((chart.name.to_string(), chart.caption.to_string())),
    };
    doc.charts.push(ChartSpec::Grid(
        chart.name.to_string(),
        FaultGridChart {
            title: chart.title.to_string(),
            grid: grid.clone(),
        },
    ));
    doc.push(Block::Grid(grid));
}

/// The grid's columns (every backend a cell ran on) and its rows (one per variant): each cell
/// measured, not run here, or not applicable.
fn grid_rows(evidence: &Inputs) -> (Vec<BackendId>, Vec<GridRow>) {
    let mut backends: Vec<BackendId> = Vec::new();
    let mut variants: Vec<Variant> = Vec::new();
    for (_, c) in cells(evidence) {
        if !backends.contains(&c.backend) {
            backends.push(c.backend);
        }
        if !variants.contains(&c.variant) {
            variants.push(c.variant);
        }
    }
    let skipped: Vec<CellId> = evidence
        .faults
        .iter()
        .flat_map(|f| &f.record.skipped)
        .map(|s| CellId {
            variant: s.variant,
            backend: s.backend,
            client: s.client.as_ref().map(|c| c.name),
        })
        .collect();
    let rows: Vec<GridRow> = variants
        .iter()
        .map(|v| GridRow {
            label: format!("`{v}`"),
            anchor: grid_anchor(&v.label()),
            cells: backends
                .iter()
                .map(
                    |b| match cells(evidence).find(|(_, c)| c.variant == *v && c.backend == *b) {
                        Some((_, c)) => grid_cell(c),
                        None if skipped.contains(&CellId {
                            variant: *v,
                            backend: *b,
                            client: None,
                        }) =>
                        {
                            GridCell {
                                text: "not run".to_string(),
                                tone: Tone::Off,
                            }
                        }
                        None => GridCell {
                            text: "-".to_string(),
                            tone: Tone::Off,
                        },
                    },
                )
                .collect(),
        })
        .collect();
    (backends, rows)
}

/// The first overlapping trial of `cell` as two lanes.
fn trial_lanes(f: &Faults, c: &FaultCell) -> Option<TrialLanes> {
    let same = |variant: Variant, backend: BackendId| variant == c.variant && backend == c.backend;
    let trial: &FaultTrialRow = f
        .trials
        .iter()
        .find(|t| same(t.variant, t.backend) && t.overlap_s > 0.0)?;
    let events: Vec<&FaultEventRow> = f
        .events
        .iter()
        .filter(|e| same(e.variant, e.backend) && e.trial == trial.trial)
        .collect();
    // A lane per worker that was granted, in the order of their grants.
    let mut grants: Vec<(Role, f64)> = events
        .iter()
        .filter(|e| e.event == LogEvent::Grant)
        .map(|e| (e.worker, e.t_s))
        .collect();
    grants.sort_by(|a, b| a.1.total_cmp(&b.1));
    let lanes = grants
        .iter()
        .map(|&(worker, granted)| {
            let mine: Vec<&&FaultEventRow> = events.iter().filter(|e| e.worker == worker).collect();
            let token = mine
                .iter()
                .find(|e| e.event == LogEvent::Grant)
                .and_then(|e| e.token)
                .map_or(String::new(), |t| format!(", token {t}"));
            let last = mine.iter().map(|e| e.t_s).fold(granted, f64::max);
            // Stale as the lab counts it: written after another worker was granted the lock
            // after this one was.
            let writes = mine
                .iter()
                .filter(|e| e.event != LogEvent::End)
                .map(|e| {
                    let stale = grants
                        .iter()
                        .any(|&(w, t)| w != worker && t > granted && t < e.t_s);
                    let mark = match (e.fenced_accepted, stale) {
                        (Some(false), _) => Mark::Refused,
                        (_, true) => Mark::StaleAccepted,
                        _ => Mark::Accepted,
                    };
                    (e.t_s, mark)
                })
                .collect();
            Lane {
                label: format!("{} {worker}{token}", c.backend),
                held: Some((granted, last)),
                writes,
            }
        })
        .collect();
    Some(TrialLanes {
        fault: (trial.fault_start_s, trial.fault_end_s),
        lanes,
    })
}

/// The appendix: every cell's figures, what each variant injected, and a timeline per variant
/// that overlapped somewhere.
pub(super) fn write_matrix(evidence: &Inputs, doc: &mut Doc) {
    if own_runs(evidence).next().is_none() {
        return;
    }
    doc.push(Block::Heading(2, APPENDIX_HEADING.to_string()));
    for f in own_runs(evidence) {
        doc.push(Block::Para(format!(
            "`{}`: {} trials per cell, TTL asked {}, seed {}. In every trial the holder and the contender are separate processes running the same job; both write to a protected resource ({}) that logs each critical section with the machine's monotonic clock and keeps the highest fencing token seen. Overlaps (both believed they held the lock), stale writes (written after the lock had passed on; an unfenced resource accepts them all) and what the fence refused are read from that log, not assumed.",
            f.source.label, f.record.trials_per_cell, secs_f(f.record.ttl_s), f.record.seed, f.record.resource
        )));
    }
    let rows: Vec<Vec<String>> = cells(evidence).map(|(_, c)| matrix_row(c)).collect();
    doc.push(Block::Table {
        head: [
            "scenario/variant",
            "backend",
            "trials with overlap",
            "overlap P50 / max",
            "stale writes",
            "fence",
            "new holder's writes refused",
            "fault to next grant P50 / max",
            "design predicts",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    });
    let mut injected: Vec<String> = Vec::new();
    for (_, c) in cells(evidence) {
        let line = format!("`{}`: {}", c.label(), c.injected);
        if !injected.contains(&line) {
            injected.push(line);
        }
    }
    doc.push(Block::Para("Injected:".to_string()));
    doc.push(Block::List(injected));
    let pooled: Vec<String> = cells(evidence)
        .filter_map(|(_, c)| {
            c.idle_session_advisory_locks_max.map(|n| {
                format!(
                    "`{}`: the idle pooled session held {n} advisory lock(s) after its jobs",
                    c.label()
                )
            })
        })
        .collect();
    if !pooled.is_empty() {
        doc.push(Block::Para(
            "What an operator sees in `pg_locks` (advisory locks granted to an idle session: the alert the observability section recommends):".to_string(),
        ));
        doc.push(Block::List(pooled));
    }
    let skipped: Vec<String> = evidence
        .faults
        .iter()
        .flat_map(|f| &f.record.skipped)
        .map(|s| format!("`{}` on `{}`: {}", s.label(), s.backend, s.reason))
        .collect();
    if !skipped.is_empty() {
        doc.push(Block::Para("Not run:".to_string()));
        doc.push(Block::List(skipped));
    }
    timelines(evidence, doc);
}

/// A cell's row in the appendix's matrix.
fn matrix_row(c: &FaultCell) -> Vec<String> {
    vec![
        format!("`{}`", c.label()),
        format!("`{}`", c.backend),
        format!("{}/{}", c.trials_with_overlap, c.trials),
        format!("{} / {}", s2(c.overlap_p50_s), s2(c.overlap_max_s)),
        format_count(c.stale_writes),
        fence_words(c),
        c.legitimate_rejected_by_fence
            .map_or("no token".to_string(), format_count),
        match c.contender_timed_out {
            0 => format!("{} / {}", s2(c.recovery_p50_s), s2(c.recovery_max_s)),
            n if n == c.trials => c.not_granted(),
            n => format!(
                "{} / {} ({n} {})",
                s2(c.recovery_p50_s),
                s2(c.recovery_max_s),
                c.not_granted()
            ),
        },
        if (c.trials_with_overlap > 0) == (c.expected == "overlap") {
            c.expected.clone()
        } else {
            format!("{} (measured otherwise)", c.expected)
        },
    ]
}

/// One timeline per variant that overlapped on some backend: its first overlapping trial on each
/// such backend.
fn timelines(evidence: &Inputs, doc: &mut Doc) {
    let mut variants: Vec<Variant> = Vec::new();
    for (_, c) in cells(evidence) {
        if c.trials_with_overlap > 0 && !variants.contains(&c.variant) {
            variants.push(c.variant);
        }
    }
    for variant in variants {
        // At most twelve lanes in one chart.
        let mut trials: Vec<TrialLanes> = Vec::new();
        for t in cells(evidence)
            .filter(|(_, c)| c.variant == variant)
            .filter_map(|(f, c)| trial_lanes(f, c))
        {
            if trials.iter().map(|t| t.lanes.len()).sum::<usize>() + t.lanes.len() > 12 {
                break;
            }
            trials.push(t);
        }
        if trials.is_empty() {
            continue;
        }
        // File names of letters, digits and dashes only (`restart+clock-jump` too).
        let stem: String = variant
            .label()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        let name = format!("fault-timeline-{stem}");
        let spec = ChartSpec::Timeline(
            name,
            FaultTimeline {
                title: format!("{variant}: one trial per backend that overlapped"),
                trials,
            },
        );
        doc.chart(
            format!("{variant}: when each worker believed it held the lock, the fault window shaded, every write marked (a cross: refused by the fence; an orange dot: a stale write accepted)"),
            spec,
        );
    }
}

/// Section 4's paragraph: what reached the protected resource after the lock had passed on.
pub(super) fn stale_writes(evidence: &Inputs) -> Option<String> {
    let all: Vec<&FaultCell> = cells(evidence).map(|(_, c)| c).collect();
    if all.is_empty() {
        return None;
    }
    let stale: u64 = all.iter().map(|c| c.stale_writes).sum();
    let fenced: Vec<&&FaultCell> = all
        .iter()
        .filter(|c| c.stale_rejected_by_fence.is_some() && c.stale_writes > 0)
        .collect();
    let refused: u64 = fenced
        .iter()
        .filter_map(|c| c.stale_rejected_by_fence)
        .sum();
    let fenced_stale: u64 = fenced.iter().map(|c| c.stale_writes).sum();
    let unfenced: u64 = all
        .iter()
        .filter(|c| c.stale_rejected_by_fence.is_none())
        .map(|c| c.stale_writes)
        .sum();
    let failed: Vec<String> = fenced
        .iter()
        .filter(|c| c.stale_rejected_by_fence < Some(c.stale_writes))
        .map(|c| format!("`{}` on `{}`", c.label(), c.backend))
        .collect();
    let mut text = format!(
        "In the fault lab, {} writes reached the protected resource after the lock had passed to another worker; an unfenced resource accepted every one. Where the backend gives a fencing token the fence refused {} of {}; {} came from backends without a token, which nothing refused.",
        format_count(stale),
        format_count(refused),
        format_count(fenced_stale),
        format_count(unfenced)
    );
    if !failed.is_empty() {
        text += &format!(
            " The fence let stale writes through under {}: a token is only as safe as the counter behind it: a counter in the same Redis restarts with it, so the new holder's token can be at or below the old holder's, and the fence then lets the old one through.",
            failed.join(", ")
        );
    }
    Some(text)
}
