//! Section 1's part on the client libraries: the fault-lab cells measured with both workers
//! locking through a real library's adapter (`faults --client`), as a grid of scenario/variant
//! against library with a chart, and what each library told its holder of a lost lock.

use lockbench_core::ClientUsed;
use lockbench_core::fault::Variant;
use lockbench_core::records::faults::FaultCell;

use super::common::{Doc, secs_f, us};
use super::faults::{GridChart, grid_cell, push_grid};
use crate::report::doc::{Block, GridCell, GridRow, Tone};
use crate::report::load::Inputs;

/// The heading of the part.
pub(super) const HEADING: &str = "Through the client libraries";

/// Every cell measured through a client library, with the library.
fn library_cells(evidence: &Inputs) -> Vec<(&ClientUsed, &FaultCell)> {
    evidence
        .faults
        .iter()
        .flat_map(|f| &f.record.cells)
        .filter_map(|c| c.client.as_ref().map(|client| (client, c)))
        .collect()
}

/// "redis-py 8.1.0 on redis".
fn library_name(client: &ClientUsed, cell: &FaultCell) -> String {
    format!("{} {} on {}", client.name, client.version, cell.backend)
}

/// What the library hands out and does, in a few words.
fn traits(client: &ClientUsed) -> String {
    let c = client.name;
    let own = match c.own() {
        Some(own) => format!(
            "the team's own adapter (`{}`), as it describes itself: {} {}; ",
            own.adapter, own.library, own.version
        ),
        None => String::new(),
    };
    format!(
        "{own}{}; {}; {}",
        if c.renews_itself() {
            "renews by itself"
        } else if c.backend().scope() == lockbench_core::LockScope::Session {
            "held while its connection lives (no TTL)"
        } else {
            "renewed by its user"
        },
        if c.gives_fencing_token() {
            "a fencing token"
        } else {
            "no fencing token"
        },
        if c.tells_of_loss() {
            "tells of a lost lock"
        } else {
            "tells only when asked"
        }
    )
}

/// How the library told its holder in a cell, in words ("3/3 by an answer, +0.95 s (latest
/// +1.10 s)"), or "never" for a cell that overlapped and was never told; and in how many trials
/// it ended the lock before the fault began.
fn told(c: &FaultCell) -> String {
    let told = told_of_loss(c);
    match c.trials_ended_before_fault {
        0 => told,
        n => format!(
            "{told}; in {n}/{} it ended the lock before the fault began",
            c.trials
        ),
    }
}

fn told_of_loss(c: &FaultCell) -> String {
    let Some(t) = &c.lost_told else {
        return "-".to_string();
    };
    if t.told == 0 {
        return if c.trials_with_overlap > 0 {
            "never".to_string()
        } else {
            "-".to_string()
        };
    }
    let how = match (t.by_event, t.told - t.by_event) {
        (0, _) => "by an answer it was asked for".to_string(),
        (_, 0) => "by an event it pushed".to_string(),
        (e, a) => format!("{e} by an event, {a} by an answer"),
    };
    let signed = |s: f64| {
        if s < 0.0 {
            format!("-{}", secs_f(-s))
        } else {
            format!("+{}", secs_f(s))
        }
    };
    let when = match (t.after_next_grant_p50_s, t.after_next_grant_max_s) {
        (Some(p50), Some(max)) if (max - p50).abs() >= 0.005 => {
            format!(", {} (latest {})", signed(p50), signed(max))
        }
        (Some(p50), _) => format!(", {}", signed(p50)),
        _ => String::new(),
    };
    let never = if t.never_told_overlaps > 0 {
        format!(
            "; {} overlapping trial(s) never told",
            t.never_told_overlaps
        )
    } else {
        String::new()
    };
    format!("{}/{} {how}{when}{never}", t.told, c.trials)
}

/// Stale writes that reached the resource: all of them without a token, those the fence let
/// through with one.
fn reached(c: &FaultCell) -> String {
    match c.stale_rejected_by_fence {
        _ if c.stale_writes == 0 => "0".to_string(),
        None => format!("{} (no token)", c.stale_writes),
        Some(refused) => format!(
            "{} of {} (the fence refused {refused})",
            c.stale_writes - refused.min(c.stale_writes),
            c.stale_writes
        ),
    }
}

/// The part, when the results hold cells or bench rows measured through a library.
pub(super) fn write(evidence: &Inputs, doc: &mut Doc) {
    let cells = library_cells(evidence);
    let bench = bench_rows(evidence);
    if cells.is_empty() && bench.is_empty() {
        return;
    }
    doc.push(Block::Heading(3, HEADING.to_string()));
    if !cells.is_empty() {
        write_cells(&cells, doc);
    }
    if !bench.is_empty() {
        doc.push(Block::Para(
            "What each library costs (bench): acquire and release through the library's adapter, beside lockbench's own client on the same server, in the same run and at the same contention. Part of each figure is the adapter protocol's own round trip (about 37 µs through a Python adapter, docs/PERFORMANCE.md).".to_string(),
        ));
        doc.push(Block::Table {
            head: [
                "through",
                "contenders",
                "acquire P50",
                "acquire P99",
                "release P50",
                "lockbench's own client: acquire P50",
                "acquisitions",
            ]
            .map(String::from)
            .to_vec(),
            rows: bench,
        });
    }
}

/// A row per bench level measured through a library, with lockbench's own figure at the same
/// level of the same run.
fn bench_rows(evidence: &Inputs) -> Vec<Vec<String>> {
    evidence
        .benches
        .iter()
        .flat_map(|b| {
            b.library_rows.iter().filter_map(move |r| {
                let client = r.client.as_ref()?;
                let own = b.record.results.iter().find(|o| {
                    o.client.is_none()
                        && o.backend == r.backend
                        && o.mode == r.mode
                        && o.keys == r.keys
                        && o.contenders == r.contenders
                });
                Some(vec![
                    format!("`{} {} on {}`", client.name, client.version, r.backend),
                    r.contenders.to_string(),
                    us(r.acquire_us.p50),
                    // The record's rule: no P99 from fewer than 100 acquisitions.
                    if r.acquire_us.count >= 100 {
                        us(r.acquire_us.p99)
                    } else {
                        "-".to_string()
                    },
                    us(r.release_us.p50),
                    own.map_or("-".to_string(), |o| us(o.acquire_us.p50)),
                    r.acquire_us.count.to_string(),
                ])
            })
        })
        .collect()
}

/// The fault-lab cells measured through the libraries: a grid and what each told its holder.
fn write_cells(cells: &[(&ClientUsed, &FaultCell)], doc: &mut Doc) {
    let mut libraries: Vec<(&ClientUsed, String)> = Vec::new();
    let mut variants: Vec<Variant> = Vec::new();
    for &(client, c) in cells {
        let name = library_name(client, c);
        if !libraries.iter().any(|(_, n)| *n == name) {
            libraries.push((client, name));
        }
        if !variants.contains(&c.variant) {
            variants.push(c.variant);
        }
    }
    doc.push(Block::Para(
        "The same faults with both workers locking through a real client library's adapter (`lockbench faults --client`, docs/CLIENTS.md) instead of lockbench's own client (lab): the library's own renewal, notification and fencing token, or their absence. Each cell: trials in which two workers both believed they held the lock, and the longest overlap. A library that hands out no fencing token leaves every stale write to the resource, whatever its backend could fence. The libraries measured:".to_string(),
    ));
    doc.push(Block::List(
        libraries
            .iter()
            .map(|(client, name)| format!("`{name}`: {}.", traits(client)))
            .collect(),
    ));
    let find = |v: Variant, name: &str| {
        cells
            .iter()
            .find(|(client, c)| c.variant == v && library_name(client, c) == name)
            .map(|&(_, c)| c)
    };
    let rows = variants
        .iter()
        .map(|&v| GridRow {
            label: format!("`{v}`"),
            anchor: format!("library-{}", super::faults::grid_anchor(&v.label())),
            cells: libraries
                .iter()
                .map(|(_, name)| {
                    find(v, name).map_or(
                        GridCell {
                            text: "-".to_string(),
                            tone: Tone::Off,
                        },
                        grid_cell,
                    )
                })
                .collect(),
        })
        .collect();
    push_grid(
        doc,
        GridChart {
            name: "library-grid",
            title: "Through the client libraries: trials with an overlap",
            caption: "The fault grid through the client libraries: trials with an overlap per scenario/variant and library, the longest overlap, coloured by outcome",
            off: "not run through this library",
        },
        libraries.iter().map(|(_, n)| format!("`{n}`")).collect(),
        rows,
    );
    write_told(cells, doc);
}

/// What each library told its holder of a lost lock, where one overlapped or told.
fn write_told(cells: &[(&ClientUsed, &FaultCell)], doc: &mut Doc) {
    doc.push(Block::Para(
        "What each library told its holder of a lost lock: a pushed event, or its first definite \"no\" to a renewal, a `held` or the release, measured from the next holder's grant (the first moment the lab sees the lock gone: a positive figure is how long the holder went on believing it held the lock after another was granted). A holder never told learned nothing from its library: it stopped at its own heartbeat's give-up deadline (the heartbeat variants, with no stale write) or not at all.".to_string(),
    ));
    let rows: Vec<Vec<String>> = cells
        .iter()
        .filter(|(_, c)| {
            c.trials_with_overlap > 0 || c.lost_told.as_ref().is_some_and(|t| t.told > 0)
        })
        .map(|&(client, c)| {
            vec![
                format!("`{}`", library_name(client, c)),
                format!("`{}`", c.variant),
                format!("{}/{}", c.trials_with_overlap, c.trials),
                reached(c),
                told(c),
            ]
        })
        .collect();
    if !rows.is_empty() {
        doc.push(Block::Table {
            head: [
                "library",
                "scenario/variant",
                "trials with overlap",
                "stale writes reaching the resource",
                "told its holder",
            ]
            .map(String::from)
            .to_vec(),
            rows,
        });
    }
}
