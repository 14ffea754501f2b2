//! Section 1: the lock backend and its failure model, from the benchmark rows and what each
//! backend declared about itself.

use lockbench_core::records::bench::{BackendFacts, BenchRow, WaitKind};
use lockbench_core::stats::percentile_supported;
use lockbench_core::{BackendId, BackendKind, Service, format_count};

use super::common::{ChartSpec, Doc, bench_rows, curve_points, us};
use super::faults;
use crate::report::charts::{Curve, HBars, PercentileCurves, Unit};
use crate::report::doc::Block;
use crate::report::load::Inputs;

/// What the benchmark recorded about `backend`, from the first directory that measured it.
fn facts(evidence: &Inputs, backend: BackendId) -> Option<&BackendFacts> {
    evidence
        .benches
        .iter()
        .flat_map(|b| &b.record.backends)
        .find(|f| f.backend == backend)
}

/// The heading of the backend measurements.
const HEADING: &str = "What each backend costs";

pub(super) fn write(evidence: &Inputs, doc: &mut Doc) {
    doc.push(Block::Heading(3, HEADING.to_string()));
    let rows = bench_rows(evidence);
    if rows.is_empty() {
        doc.push(Block::Para(
            "No backend benchmark in these results: run `lockbench bench` (or `lockbench run`) and report again.".to_string(),
        ));
        return;
    }
    doc.push(Block::Para(
        "Acquire latency counts waiting for the lock; each contender has its own connection or session and waits in the backend's own queue (native) where lockbench has one for it, else polls. Uncontended is one client; the highest contention level measured is shown beside it, with the handoff (from a release to the grant of a contender that was waiting for it), the herd cost (requests the contenders sent to the server per grant, their waiting included) and Jain's fairness index of the contenders' grants (1: equal shares). What each backend cannot prevent is measured by the fault lab where these results hold a fault run (\"measured\"), else it is what follows from how the backend locks (docs/BACKENDS.md).".to_string(),
    ));
    // A row per backend and wait mode: the same backend measured waiting natively and polling is
    // two rows, not one of them hidden behind the other.
    let mut groups: Vec<(BackendId, WaitKind)> = Vec::new();
    for r in &rows {
        if !groups.contains(&(r.backend, r.wait_mode)) {
            groups.push((r.backend, r.wait_mode));
        }
    }
    let table: Vec<Vec<String>> = groups
        .iter()
        .map(|&(name, wait)| cost_row(evidence, &rows, name, wait))
        .collect();
    doc.push(Block::Table {
        head: [
            "backend",
            "fencing token",
            "acquire P50 / P99 / P99.9, 1 client",
            "contenders (wait)",
            "acquire P50 / P99 / P99.9 contended; longest wait",
            "handoff P50 / P99",
            "requests per grant",
            "acquisitions/s",
            "fairness (Jain)",
            "cannot prevent",
        ]
        .map(String::from)
        .to_vec(),
        rows: table,
    });
    let servers = servers_measured(evidence);
    if !servers.is_empty() {
        doc.push(Block::Para(
            "The servers and clients measured (versions as each server reported them):".to_string(),
        ));
        doc.push(Block::List(servers));
    }
    let failed: Vec<String> = evidence
        .benches
        .iter()
        .flat_map(|b| &b.record.failed)
        .map(|f| format!("`{}`: {}", f.backend, f.error))
        .collect();
    if !failed.is_empty() {
        doc.push(Block::Para("Not measured:".to_string()));
        doc.push(Block::List(failed));
    }
    acquire_curves(evidence, doc);
    acquire_bars(&rows, doc);
    super::contention::write(evidence, doc);
}

/// One row of the cost table: `name` waiting by `wait`, alone and at its highest contention.
fn cost_row(evidence: &Inputs, rows: &[&BenchRow], name: BackendId, wait: WaitKind) -> Vec<String> {
    let mine: Vec<&BenchRow> = rows
        .iter()
        .copied()
        .filter(|r| r.backend == name && r.wait_mode == wait)
        .collect();
    let alone = mine.iter().find(|r| r.contenders == 1);
    let most = mine.iter().max_by_key(|r| r.contenders);
    // P50 / P99 / P99.9, and the longest wait when contended.
    let figures = |r: Option<&&BenchRow>, longest: bool| {
        r.map_or("not measured".to_string(), |r| {
            if r.ops == 0 {
                return format!("no grant in {}", super::common::secs_f(r.measured_s));
            }
            let a = &r.acquire_us;
            let tail = if longest {
                format!("; {}", us(a.max))
            } else {
                String::new()
            };
            format!("{}{tail}", super::common::tail_figures(a))
        })
    };
    let facts = facts(evidence, name);
    vec![
        format!("`{name}`"),
        facts.map_or("not recorded".to_string(), |f| f.fencing.clone()),
        figures(alone, false),
        most.map_or("-".to_string(), |r| {
            format!("{} ({})", r.contenders, r.wait_mode)
        }),
        figures(most, true),
        most.map_or("-".to_string(), |r| {
            if r.ops == 0 {
                "no grant".to_string()
            } else if r.handoff_us.count == 0 {
                "no handoff (never waited)".to_string()
            } else {
                format!(
                    "{} / {}",
                    us(r.handoff_us.p50),
                    lockbench_core::format_tail_us(
                        0.99,
                        r.handoff_us.p99,
                        r.handoff_us.count,
                        r.handoff_us.max
                    )
                )
            }
        }),
        most.map_or("-".to_string(), |r| match (r.requests_per_grant, r.ops) {
            (Some(n), _) => format!("{n:.2}"),
            (None, 0) => "no grant".to_string(),
            (None, _) => "no server".to_string(),
        }),
        most.map_or("-".to_string(), |r| {
            format_count(r.throughput_per_s.round() as u64)
        }),
        most.map_or("-".to_string(), |r| match (r.fairness_jain, r.ops) {
            (Some(j), _) => format!("{j:.3}"),
            (None, 0) => "no grant".to_string(),
            (None, _) => "one contender or open loop".to_string(),
        }),
        faults::cannot_prevent(evidence, name).unwrap_or_else(|| {
            facts.map_or("not recorded".to_string(), |f| {
                format!("by design (no fault run): {}", f.cannot_prevent)
            })
        }),
    ]
}

/// Percentile curves of uncontended acquire latency, from the histograms.
fn acquire_curves(evidence: &Inputs, doc: &mut Doc) {
    let mut curves: Vec<Curve> = Vec::new();
    for b in &evidence.benches {
        for (tag, h) in &b.histograms {
            let parts: Vec<&str> = tag.split('/').collect();
            if let [backend, _, "one", "c=1", "acquire"] = parts[..]
                && h.count() > 0
            {
                curves.push((backend.to_string(), curve_points(h, 1e6)));
            }
        }
    }
    if !curves.is_empty() {
        let spec = ChartSpec::Curves(
            "acquire-percentiles".to_string(),
            PercentileCurves {
                title: "Acquire latency, one client".to_string(),
                y_label: "acquire latency".to_string(),
                log_y: true,
                unit: Unit::Micros,
                curves,
                lines: Vec::new(),
            },
        );
        let caption = "Uncontended acquire latency by percentile, every backend (log scale)";
        doc.chart(caption.to_string(), spec);
    }
}

/// Acquire P50, P99 and P99.9 per backend and contention level.
fn acquire_bars(rows: &[&BenchRow], doc: &mut Doc) {
    let bars: Vec<(String, Vec<f64>)> = rows
        .iter()
        .map(|r| {
            (
                format!("{} c={}", r.backend, r.contenders),
                // A tail the sample does not support is left out, not drawn as its maximum.
                [
                    (0.5, r.acquire_us.p50),
                    (0.99, r.acquire_us.p99),
                    (0.999, r.acquire_us.p999),
                ]
                .iter()
                .map(|&(q, v)| {
                    if percentile_supported(q, r.acquire_us.count) {
                        v
                    } else {
                        f64::NAN
                    }
                })
                .collect(),
            )
        })
        .collect();
    let spec = ChartSpec::Bars(
        "acquire-bars".to_string(),
        HBars {
            title: "Acquire latency by backend and contenders".to_string(),
            x_label: "acquire latency".to_string(),
            log_x: true,
            unit: Unit::Micros,
            series: vec!["P50".into(), "P99".into(), "P99.9".into()],
            rows: bars,
        },
    );
    let caption = "Acquire latency P50, P99 and P99.9 per backend and contention level (log scale); a P99 from fewer than 100 acquisitions or a P99.9 from fewer than 1,000 is left out";
    doc.chart(caption.to_string(), spec);
}

/// Each measured backend's server version, topology and client library: "`redis`: Redis 7.0.15,
/// one node (redis://127.0.0.1:6390), through redis-rs 1.8.1".
pub(crate) fn servers_measured(evidence: &Inputs) -> Vec<String> {
    let mut out = Vec::new();
    let mut seen: Vec<BackendId> = Vec::new();
    for b in &evidence.benches {
        for f in &b.record.backends {
            if f.backend.in_process() || seen.contains(&f.backend) {
                continue;
            }
            seen.push(f.backend);
            out.push(format!(
                "`{}`: {}",
                f.backend,
                server_line(f, &b.source.servers)
            ));
        }
    }
    out
}

/// One backend's server, topology and client, as a clause.
pub(crate) fn server_line(f: &BackendFacts, servers: &[lockbench_core::ServerRecord]) -> String {
    let product = match f.backend.kind.service() {
        Some(Service::Redis) => "Redis",
        Some(Service::Postgres) => "PostgreSQL",
        Some(Service::Etcd) => "etcd",
        Some(Service::Zookeeper) => "ZooKeeper",
        None => "in-process",
    };
    let version = f
        .server_version
        .as_deref()
        .map_or_else(|| "(version not recorded)".to_string(), str::to_string);
    let urls: Vec<&str> = servers
        .iter()
        .find(|s| s.backend == f.backend)
        .map(|s| s.urls.split(',').filter(|u| !u.is_empty()).collect())
        .unwrap_or_default();
    let consensus = f.backend.kind.is_consensus();
    let topology = match (f.backend.kind, urls.len()) {
        (_, 0) => "topology not recorded".to_string(),
        (BackendKind::Redlock, n) => format!("{n} independent nodes ({})", urls.join(", ")),
        (_, 1) if consensus => format!("a single member ({}), not a quorum", urls[0]),
        (_, n) if f.backend.cluster => format!(
            "{n} members of a private cluster lockbench started on loopback for the run ({})",
            urls.join(", ")
        ),
        (_, n) if consensus => format!("{n} members ({})", urls.join(", ")),
        (_, 1) => format!("one server ({}), no replica", urls[0]),
        (_, n) => format!("{n} servers ({})", urls.join(", ")),
    };
    let client = f
        .client
        .as_deref()
        .map_or_else(String::new, |c| format!(", through {c}"));
    format!("{product} {version}, {topology}{client}")
}

/// The server, topology and client `backend` was measured against, when a bench measured it.
pub(crate) fn server_of(evidence: &Inputs, backend: BackendKind) -> Option<String> {
    evidence.benches.iter().find_map(|b| {
        let f = b.record.backends.iter().find(|f| f.backend == backend)?;
        Some(server_line(f, &b.source.servers))
    })
}
