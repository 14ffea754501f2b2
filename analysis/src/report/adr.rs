//! The report's text: the five sections of a locking decision record, filled with measured numbers
//! from the evidence, each figure with how it was derived.

use std::time::Duration;

use lockbench_core::{RuntimeHistogram, format_count, format_seconds};
use serde_json::Value;

use super::charts::{
    ALERT_COLOUR, Curve, HBars, PercentileCurves, RefLine, RuntimeVsVolume, TTL_COLOUR,
};
use super::doc::Block;
use super::load::{Evidence, Runtimes};
use crate::ALERT_SHARE;

/// A chart to draw: its file stem and the chart.
pub enum ChartSpec {
    /// Percentile curves.
    Curves(String, PercentileCurves),
    /// Runtime against volume.
    Volume(String, RuntimeVsVolume),
    /// Horizontal bars.
    Bars(String, HBars),
}

impl ChartSpec {
    fn name(&self) -> &str {
        match self {
            ChartSpec::Curves(n, _) | ChartSpec::Volume(n, _) | ChartSpec::Bars(n, _) => n,
        }
    }
}

/// Puts a chart in the text where it is referred to, and in the list of charts to draw.
fn add_chart(
    blocks: &mut Vec<Block>,
    charts: &mut Vec<ChartSpec>,
    caption: String,
    spec: ChartSpec,
) {
    blocks.push(Block::Chart {
        name: spec.name().to_string(),
        caption,
    });
    charts.push(spec);
}

/// The runtime-by-percentile chart of `workload`, with `lines` (TTL, alert) when it has a TTL;
/// nothing when no histogram of it was recorded.
fn runtime_chart(
    evidence: &Evidence,
    workload: &str,
    lines: Vec<RefLine>,
    blocks: &mut Vec<Block>,
    charts: &mut Vec<ChartSpec>,
) {
    let curves = workload_curves(evidence, workload);
    if curves.is_empty() {
        return;
    }
    let caption = if lines.is_empty() {
        format!("{workload}: job runtime by percentile, per profile and scale")
    } else {
        format!(
            "{workload}: job runtime by percentile, per profile and scale, with the TTL and the 80 % alert line"
        )
    };
    let spec = ChartSpec::Curves(
        format!("runtime-percentiles-{workload}"),
        PercentileCurves {
            title: format!("{workload}: job runtime distribution"),
            y_label: "runtime (s)".to_string(),
            log_y: false,
            curves,
            lines,
        },
    );
    add_chart(blocks, charts, caption, spec);
}

/// The blocks and the charts they refer to.
pub struct Content {
    /// The document.
    pub blocks: Vec<Block>,
    /// The charts, in order of appearance.
    pub charts: Vec<ChartSpec>,
}

fn secs(v: &Value) -> String {
    v.as_f64()
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map_or("-".to_string(), |s| {
            format_seconds(Duration::from_secs_f64(s))
        })
}

fn us(v: &Value) -> String {
    v.as_f64().map_or("-".to_string(), |x| {
        if x >= 100.0 {
            format_count(x.round() as u64)
        } else {
            format!("{x:.1}")
        }
    })
}

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

/// What a backend cannot prevent, from its design (docs/BACKENDS.md has the reasoning).
fn cannot_prevent(backend: &str) -> &'static str {
    match backend {
        "memory" => {
            "anything across processes: it is the zero-network baseline, not a lock to deploy"
        }
        "redis" => {
            "a double holder after a failover or restart that lost the key (asynchronous replication, AOF/RDB gaps); a holder outliving its TTL"
        }
        "redlock" => {
            "clock drift or jumps between nodes, a node restarting without the key, a paused holder past its validity; it has no safe fencing token"
        }
        "pg-session" => {
            "a session lock leaking through a pooled connection that is not reset; a holder that lost its connection still running"
        }
        "pg-xact" => {
            "work done outside the transaction (API calls) after the lock is gone; long transactions block vacuum"
        }
        "etcd" => {
            "a paused holder past its lease TTL (use the fencing revision); unavailability without quorum"
        }
        "zookeeper" => {
            "a paused holder past its session timeout (use the fencing sequence); unavailability without quorum"
        }
        _ => "see docs/BACKENDS.md",
    }
}

fn fencing(backend: &str) -> &'static str {
    match backend {
        "redis" => "counter (INCR)",
        "redlock" => "none",
        "pg-session" | "pg-xact" => "sequence",
        "etcd" => "create revision",
        "zookeeper" => "node sequence",
        _ => "counter (in process)",
    }
}

/// Percentile points of a histogram in seconds (or `scale` units), up to the nines its count
/// supports (at most 99.99 %).
fn curve_points(h: &RuntimeHistogram, scale: f64) -> Vec<(f64, f64)> {
    let count = h.count().max(1) as f64;
    let top = count.log10().clamp(1.0, 4.0);
    let steps = (top * 20.0).round() as usize;
    (0..=steps)
        .map(|k| {
            let x = top * k as f64 / steps as f64;
            let q = 1.0 - 10f64.powf(-x);
            (x, h.quantile(q).as_secs_f64() * scale)
        })
        .collect()
}

/// Builds the document from `evidence`.
pub fn content(evidence: &Evidence) -> Content {
    let mut blocks = vec![Block::Heading(
        1,
        "Locking decision record: the evidence".to_string(),
    )];
    let mut charts = Vec::new();
    blocks.push(Block::Para(format!(
        "Written by lockbench {} from {} results directories (listed under Sources). Every figure is measured by lockbench on the servers and workloads named; how each one is derived is said beside it. The five sections follow the locking decision record: backend and failure model, TTL and heartbeat, acquisition and release, idempotency, observability.",
        lockbench_core::TOOL_VERSION,
        evidence.sources().len()
    )));
    summary(evidence, &mut blocks);
    backends(evidence, &mut blocks, &mut charts);
    ttl(evidence, &mut blocks, &mut charts);
    protocol(evidence, &mut blocks);
    idempotency(evidence, &mut blocks, &mut charts);
    observability(evidence, &mut blocks);
    sources(evidence, &mut blocks);
    Content { blocks, charts }
}

fn summary(evidence: &Evidence, blocks: &mut Vec<Block>) {
    let mut items = Vec::new();
    for t in &evidence.ttls {
        let j = &t.json;
        let mut line = format!(
            "**{}**: TTL **{}** = P99.9 runtime {} ({}, {} {}) x safety factor {}; or a heartbeat lease of {} renewed every {}.",
            text(&j["workload"]),
            secs(&j["ttl_s"]),
            secs(&j["measured_p999_s"]),
            text(&j["profile"]),
            format_count(j["target_volume"].as_u64().unwrap_or(0)),
            text(&j["unit"]),
            j["safety_factor"],
            secs(&j["heartbeat"]["lease_ttl_s"]),
            secs(&j["heartbeat"]["renewal_interval_s"]),
        );
        if let Some(current) = j["current_ttl"].as_object() {
            line += &format!(
                " Today's TTL of {} is outlived in {:.2} % of simulated runs (95 % upper bound {:.2} %), about {:.1} double executions a year.",
                secs(&current["ttl_s"]),
                current["p_exceed"].as_f64().unwrap_or(0.0) * 100.0,
                current["p_exceed_upper95"].as_f64().unwrap_or(0.0) * 100.0,
                current["expected_double_runs_per_year"]
                    .as_f64()
                    .unwrap_or(0.0),
            );
        }
        items.push(line);
    }
    let uncontended: Vec<&Value> = bench_rows(evidence)
        .into_iter()
        .filter(|r| r["contenders"] == 1 && text(&r["backend"]) != "memory")
        .collect();
    if let Some(fastest) = uncontended.iter().min_by(|a, b| {
        a["acquire_us"]["p50"]
            .as_f64()
            .unwrap_or(f64::MAX)
            .total_cmp(&b["acquire_us"]["p50"].as_f64().unwrap_or(f64::MAX))
    }) {
        items.push(format!(
            "Cheapest networked acquisition, uncontended: **{}** at {} us P50 ({} networked backends measured).",
            text(&fastest["backend"]),
            us(&fastest["acquire_us"]["p50"]),
            uncontended.len()
        ));
    }
    for r in &evidence.replays {
        let j = &r.json;
        let plain = j["fencing"] != true && j["idempotency_keys"] != true;
        if plain && j["mode"] == "ttl" && j["double_executions"].as_u64().unwrap_or(0) > 0 {
            items.push(format!(
                "Live replay: a fixed TTL of {} under a runtime of {} (P50) double-executed {} items in {} of {} runs on {}.",
                secs(&j["ttl_s"]),
                secs(&j["runtime_s"]["p50"]),
                format_count(j["double_executions"].as_u64().unwrap_or(0)),
                j["runs_with_double_execution"],
                j["runs"],
                text(&j["backend"])
            ));
        }
    }
    if !items.is_empty() {
        blocks.push(Block::Heading(2, "Summary".to_string()));
        blocks.push(Block::List(items));
    }
}

fn bench_rows(evidence: &Evidence) -> Vec<&Value> {
    evidence
        .benches
        .iter()
        .flat_map(|b| b.json["results"].as_array().into_iter().flatten())
        .collect()
}

fn backends(evidence: &Evidence, blocks: &mut Vec<Block>, charts: &mut Vec<ChartSpec>) {
    blocks.push(Block::Heading(
        2,
        "1. Lock backend and failure model".to_string(),
    ));
    let rows = bench_rows(evidence);
    if rows.is_empty() {
        blocks.push(Block::Para(
            "No backend benchmark in these results: run `lockbench bench` (or `lockbench run`) and report again.".to_string(),
        ));
        return;
    }
    blocks.push(Block::Para(
        "Acquire latency counts waiting for the lock; each contender has its own connection or session. Uncontended is one client; the highest contention level measured is shown beside it. What each backend cannot prevent comes from how it locks (docs/BACKENDS.md), not from this run.".to_string(),
    ));
    let mut names: Vec<&str> = Vec::new();
    for r in &rows {
        let name = text(&r["backend"]);
        if !names.contains(&name) {
            names.push(name);
        }
    }
    let mut table = Vec::new();
    for name in &names {
        let mine: Vec<&&Value> = rows
            .iter()
            .filter(|r| text(&r["backend"]) == *name)
            .collect();
        let alone = mine.iter().find(|r| r["contenders"] == 1);
        let most = mine
            .iter()
            .max_by_key(|r| r["contenders"].as_u64().unwrap_or(0));
        let figures = |r: Option<&&&Value>| {
            r.map_or("-".to_string(), |r| {
                format!(
                    "{} / {} / {}",
                    us(&r["acquire_us"]["p50"]),
                    us(&r["acquire_us"]["p99"]),
                    us(&r["acquire_us"]["p999"])
                )
            })
        };
        table.push(vec![
            format!("`{name}`"),
            fencing(name).to_string(),
            figures(alone),
            most.map_or("-".to_string(), |r| r["contenders"].to_string()),
            figures(most),
            most.map_or("-".to_string(), |r| us(&r["handoff_us"]["p50"])),
            most.map_or("-".to_string(), |r| {
                format_count(r["throughput_per_s"].as_f64().unwrap_or(0.0).round() as u64)
            }),
            cannot_prevent(name).to_string(),
        ]);
    }
    blocks.push(Block::Table {
        head: [
            "backend",
            "fencing token",
            "acquire P50 / P99 / P99.9, 1 client (us)",
            "contenders",
            "acquire P50 / P99 / P99.9 contended (us)",
            "handoff P50 (us)",
            "acquisitions/s",
            "cannot prevent",
        ]
        .map(String::from)
        .to_vec(),
        rows: table,
    });
    let failed: Vec<String> = evidence
        .benches
        .iter()
        .flat_map(|b| b.json["failed"].as_array().into_iter().flatten())
        .map(|f| format!("`{}`: {}", text(&f["backend"]), text(&f["error"])))
        .collect();
    if !failed.is_empty() {
        blocks.push(Block::Para("Not measured:".to_string()));
        blocks.push(Block::List(failed));
    }
    // Percentile curves of uncontended acquire latency, from the histograms.
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
                y_label: "acquire latency (us)".to_string(),
                log_y: true,
                curves,
                lines: Vec::new(),
            },
        );
        let caption = "Uncontended acquire latency by percentile, every backend (log scale)";
        add_chart(blocks, charts, caption.to_string(), spec);
    }
    let bars: Vec<(String, Vec<f64>)> = rows
        .iter()
        .map(|r| {
            (
                format!("{} c={}", text(&r["backend"]), r["contenders"]),
                ["p50", "p99", "p999"]
                    .iter()
                    .map(|p| r["acquire_us"][*p].as_f64().unwrap_or(0.0))
                    .collect(),
            )
        })
        .collect();
    let spec = ChartSpec::Bars(
        "acquire-bars".to_string(),
        HBars {
            title: "Acquire latency by backend and contenders".to_string(),
            x_label: "acquire latency (us)".to_string(),
            log_x: true,
            series: vec!["P50".into(), "P99".into(), "P99.9".into()],
            rows: bars,
        },
    );
    let caption = "Acquire latency P50, P99 and P99.9 per backend and contention level (log scale)";
    add_chart(blocks, charts, caption.to_string(), spec);
}

/// The runtime histograms of a workload, from every simulate and ttl directory.
fn workload_curves(evidence: &Evidence, workload: &str) -> Vec<Curve> {
    let all: Vec<&Runtimes> = evidence.simulations.iter().chain(&evidence.ttls).collect();
    let mut curves: Vec<Curve> = Vec::new();
    for r in all {
        for (tag, h) in &r.histograms {
            let parts: Vec<&str> = tag.split('/').collect();
            if parts.len() != 3 || parts[0] != workload || h.count() == 0 {
                continue;
            }
            let label = format!("{} {}", parts[1], parts[2].replace("scale=", "x"));
            if curves.iter().any(|(l, _)| *l == label) {
                continue;
            }
            curves.push((label, curve_points(h, 1.0)));
        }
    }
    curves.truncate(8);
    curves
}

fn ttl(evidence: &Evidence, blocks: &mut Vec<Block>, charts: &mut Vec<ChartSpec>) {
    blocks.push(Block::Heading(
        2,
        "2. Lock TTL and heartbeat model".to_string(),
    ));
    if evidence.ttls.is_empty() {
        blocks.push(Block::Para(
            "No TTL derivation in these results: run `lockbench ttl SPEC` (or `lockbench run`) and report again.".to_string(),
        ));
    }
    for t in &evidence.ttls {
        let j = &t.json;
        let workload = text(&j["workload"]).to_string();
        let unit = text(&j["unit"]).to_string();
        blocks.push(Block::Heading(3, workload.clone()));
        let considered: Vec<String> = j["profiles_considered"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| format!("{} {}", text(&p["profile"]), secs(&p["p999_s"])))
            .collect();
        let growth = &j["growth"];
        let mut rows = vec![
            vec![
                "measured P99.9 runtime".to_string(),
                secs(&j["measured_p999_s"]),
                format!(
                    "worst profile `{}` of {} at {} {} (scale {}), {} simulated replays, seed {}; 95 % interval {} to {}",
                    text(&j["profile"]),
                    considered.join(", "),
                    format_count(j["target_volume"].as_u64().unwrap_or(0)),
                    unit,
                    j["target_scale"],
                    format_count(j["replays"].as_u64().unwrap_or(0)),
                    j["seed"],
                    secs(&j["p999_ci_s"][0]),
                    secs(&j["p999_ci_s"][1])
                ),
            ],
            vec![
                "safety factor".to_string(),
                j["safety_factor"].to_string(),
                "kept apart from the measurement, so either can be revised alone".to_string(),
            ],
            vec![
                "**TTL**".to_string(),
                format!("**{}**", secs(&j["ttl_s"])),
                "measured P99.9 x safety factor".to_string(),
            ],
            vec![
                "alert threshold".to_string(),
                secs(&j["alert_hold_s"]),
                format!("{:.0} % of the TTL", ALERT_SHARE * 100.0),
            ],
            vec![
                "heartbeat lease".to_string(),
                secs(&j["heartbeat"]["lease_ttl_s"]),
                match j["heartbeat"]["sized_for_stall_s"].as_f64() {
                    Some(s) => format!(
                        "3 x the profile's pause P99.9 ({}), at least 30 s",
                        format_seconds(Duration::from_secs_f64(s))
                    ),
                    None => "30 s minimum: the profile injects no pauses".to_string(),
                },
            ],
            vec![
                "renewal interval".to_string(),
                secs(&j["heartbeat"]["renewal_interval_s"]),
                "a third of the lease".to_string(),
            ],
            vec![
                "give-up deadline".to_string(),
                secs(&j["heartbeat"]["give_up_after_s"]),
                format!(
                    "two thirds of the lease: stop work when no renewal succeeded for this long ({} failed renewal tolerated)",
                    j["heartbeat"]["max_consecutive_failures"]
                ),
            ],
        ];
        let largest = j["volume_points"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p["volume"].as_f64())
            .fold(0.0f64, f64::max);
        let review = j["review_trigger_volume"].as_f64();
        let far = review.is_some_and(|v| largest > 0.0 && v > 10.0 * largest);
        rows.push(vec![
            "review trigger".to_string(),
            j["review_trigger_volume"]
                .as_u64()
                .map_or("-".to_string(), |v| format!("{} {unit}", format_count(v))),
            format!(
                "volume at which P99.9 reaches the alert threshold, from runtime = {:.3} s x volume^{:.3} fitted at half, once and twice the target volume{}",
                growth["coefficient_s"].as_f64().unwrap_or(f64::NAN),
                growth["exponent"].as_f64().unwrap_or(f64::NAN),
                if far {
                    "; far beyond the volumes simulated, so an extrapolation: the runtime barely grows with volume (a fixed wait dominates it), so review when the workload changes rather than at a volume"
                } else {
                    ""
                }
            ),
        ]);
        if let Some(current) = j["current_ttl"].as_object() {
            rows.push(vec![
                "today's TTL".to_string(),
                secs(&current["ttl_s"]),
                format!(
                    "outlived by {} of {} simulated runs: {:.2} % per run (95 % upper bound {:.2} %), about {:.1} double executions a year at {} runs a year",
                    format_count(current["replays_exceeding"].as_u64().unwrap_or(0)),
                    format_count(j["replays"].as_u64().unwrap_or(0)),
                    current["p_exceed"].as_f64().unwrap_or(0.0) * 100.0,
                    current["p_exceed_upper95"].as_f64().unwrap_or(0.0) * 100.0,
                    current["expected_double_runs_per_year"].as_f64().unwrap_or(0.0),
                    j["runs_per_year"]
                ),
            ]);
        }
        blocks.push(Block::Table {
            head: vec!["figure".into(), "value".into(), "how it was derived".into()],
            rows,
        });
        let ttl_s = j["ttl_s"].as_f64().unwrap_or(0.0);
        let alert_s = j["alert_hold_s"].as_f64().unwrap_or(0.0);
        let lines = vec![
            (format!("TTL {}", secs(&j["ttl_s"])), ttl_s, TTL_COLOUR),
            (
                format!("alert {}", secs(&j["alert_hold_s"])),
                alert_s,
                ALERT_COLOUR,
            ),
        ];
        runtime_chart(evidence, &workload, lines, blocks, charts);
        let points: Vec<(f64, f64)> = j["volume_points"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| Some((p["volume"].as_f64()?, p["p999_s"].as_f64()?)))
            .collect();
        if !points.is_empty() {
            let caption = format!(
                "{workload}: P99.9 runtime against volume, the fitted growth, the TTL, the alert line and the review trigger"
            );
            let spec = ChartSpec::Volume(
                format!("runtime-volume-{workload}"),
                RuntimeVsVolume {
                    title: format!("{workload}: runtime against volume"),
                    unit,
                    points,
                    fit: growth["coefficient_s"]
                        .as_f64()
                        .zip(growth["exponent"].as_f64()),
                    ttl_s,
                    alert_s,
                    review_volume: j["review_trigger_volume"].as_f64(),
                },
            );
            add_chart(blocks, charts, caption, spec);
        }
    }
    let covered: Vec<&str> = evidence
        .ttls
        .iter()
        .map(|t| text(&t.json["workload"]))
        .collect();
    let mut rows = Vec::new();
    for s in &evidence.simulations {
        for r in s.json["results"].as_array().into_iter().flatten() {
            rows.push(vec![
                text(&r["workload"]).to_string(),
                text(&r["profile"]).to_string(),
                r["scale"].to_string(),
                format!(
                    "{} {}",
                    format_count(r["volume"].as_u64().unwrap_or(0)),
                    text(&r["unit"])
                ),
                secs(&r["runtime_s"]["p50"]),
                secs(&r["runtime_s"]["p99"]),
                secs(&r["runtime_s"]["p999"]),
                format_count(r["replays"].as_u64().unwrap_or(0)),
            ]);
        }
    }
    if !rows.is_empty() {
        blocks.push(Block::Heading(
            3,
            "Every simulated profile and scale".to_string(),
        ));
        blocks.push(Block::Table {
            head: [
                "workload", "profile", "scale", "volume", "P50", "P99", "P99.9", "replays",
            ]
            .map(String::from)
            .to_vec(),
            rows,
        });
        // Workloads simulated without a TTL derivation still get their runtime chart.
        let mut seen: Vec<&str> = covered;
        for s in &evidence.simulations {
            for r in s.json["results"].as_array().into_iter().flatten() {
                let w = text(&r["workload"]);
                if !seen.contains(&w) {
                    seen.push(w);
                    runtime_chart(evidence, w, Vec::new(), blocks, charts);
                }
            }
        }
    }
}

fn protocol(evidence: &Evidence, blocks: &mut Vec<Block>) {
    blocks.push(Block::Heading(
        2,
        "3. Lock acquisition and release protocol".to_string(),
    ));
    let rows = bench_rows(evidence);
    let worst = |metric: &str, p: &str| {
        rows.iter()
            .filter(|r| text(&r["backend"]) != "memory")
            .filter_map(|r| r[metric][p].as_f64())
            .fold(0.0f64, f64::max)
    };
    let mut items = vec![
        "Acquire with a bounded wait and a unique token per acquisition. When the wait ends without the lock, skip this run and alert; the next scheduled run retries. Never run without the lock.".to_string(),
        "Release on the success path and in every failure path, and only by token: compare-and-delete (Redis), `pg_advisory_unlock` on the session that locked plus `pg_advisory_unlock_all()` before a pooled connection goes back (Postgres), lease revoke (etcd), deleting one's own node (ZooKeeper). A release that finds the lock gone is a lost lease: log it as an incident.".to_string(),
        "Renew by token only (compare-and-expire): a stale holder must never extend the next holder's lock.".to_string(),
    ];
    if !rows.is_empty() {
        let acquire = worst("acquire_us", "p999");
        items.push(format!(
            "Measured: the slowest networked acquire P99.9 was {} us, release P99.9 {} us, renew P99.9 {} us. An acquisition wait of 10 x the acquire P99.9 ({}) or 1 s, whichever is longer, rides out contention without hiding an outage.",
            us(&Value::from(acquire)),
            us(&Value::from(worst("release_us", "p999"))),
            us(&Value::from(worst("renew_us", "p999"))),
            format_seconds(Duration::from_secs_f64((acquire * 10.0 / 1e6).max(1.0)))
        ));
    }
    for t in &evidence.ttls {
        let j = &t.json;
        items.push(format!(
            "{}: with a heartbeat, renew every {} and stop work when no renewal has succeeded for {}; renewal round trips measured above are far below the interval.",
            text(&j["workload"]),
            secs(&j["heartbeat"]["renewal_interval_s"]),
            secs(&j["heartbeat"]["give_up_after_s"])
        ));
    }
    blocks.push(Block::List(items));
}

fn mode_label(j: &Value) -> String {
    let mut label = match text(&j["mode"]) {
        "ttl" => format!("TTL {}", secs(&j["ttl_s"])),
        _ => "heartbeat".to_string(),
    };
    if j["fencing"] == true {
        label += " + fencing";
    }
    if j["idempotency_keys"] == true {
        label += " + idempotency keys";
    }
    label
}

fn idempotency(evidence: &Evidence, blocks: &mut Vec<Block>, charts: &mut Vec<ChartSpec>) {
    blocks.push(Block::Heading(
        2,
        "4. Idempotency and the lock's role".to_string(),
    ));
    if evidence.replays.is_empty() {
        blocks.push(Block::Para(
            "No live replay in these results: run `lockbench replay` (or `lockbench run` with Postgres reachable) to see what each mode does to double executions.".to_string(),
        ));
        return;
    }
    blocks.push(Block::Para(
        "Live replays: the job run for real against Postgres, a payment-API stub and the lock backend, with a retry worker taking the lock whenever the backend grants it. Runtimes are real-equivalent (compressed time divided by the time scale); the simulated P50 is the same spec, profile and scale in the simulator.".to_string(),
    ));
    let mut rows = Vec::new();
    let mut bars = Vec::new();
    // The story first (a fixed TTL, no defence), then each defence.
    let rank = |j: &Value| match (
        j["mode"] == "heartbeat",
        j["fencing"] == true,
        j["idempotency_keys"] == true,
    ) {
        (false, false, false) => 0,
        (true, false, false) => 1,
        (_, true, _) => 2,
        _ => 3,
    };
    let mut replays: Vec<&super::load::Replay> = evidence.replays.iter().collect();
    replays.sort_by_key(|r| rank(&r.json));
    for r in replays {
        let j = &r.json;
        let label = mode_label(j);
        rows.push(vec![
            format!("`{}`", text(&j["backend"])),
            format!(
                "{} / {} x{}",
                text(&j["workload"]),
                text(&j["profile"]),
                j["scale"]
            ),
            label.clone(),
            j["runs"].to_string(),
            secs(&j["runtime_s"]["p50"]),
            if j["simulated"].is_object() {
                secs(&j["simulated"]["runtime_s"]["p50"])
            } else {
                "-".to_string()
            },
            format!(
                "{} (in {} runs)",
                format_count(j["double_executions"].as_u64().unwrap_or(0)),
                j["runs_with_double_execution"]
            ),
            j["duplicate_charges_accepted"]
                .as_u64()
                .map_or("-".to_string(), format_count),
            format_count(j["stale_writes_rejected"].as_u64().unwrap_or(0)),
        ]);
        bars.push((
            format!("{} {}", text(&j["backend"]), label),
            vec![
                j["double_executions"].as_f64().unwrap_or(0.0),
                j["duplicate_charges_accepted"].as_f64().unwrap_or(0.0),
                j["stale_writes_rejected"].as_f64().unwrap_or(0.0),
            ],
        ));
    }
    blocks.push(Block::Table {
        head: [
            "backend",
            "workload",
            "mode",
            "runs",
            "runtime P50",
            "simulated P50",
            "double executions",
            "duplicate charges accepted",
            "stale writes refused",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    });
    let spec = ChartSpec::Bars(
        "double-executions".to_string(),
        HBars {
            title: "Live replay: what went twice, by mode".to_string(),
            x_label: "items over all runs".to_string(),
            log_x: false,
            series: vec![
                "double executions".into(),
                "duplicate charges accepted".into(),
                "stale writes refused".into(),
            ],
            rows: bars,
        },
    );
    let caption = "Double executions, duplicate charges accepted and stale writes refused, by live-replay mode";
    add_chart(blocks, charts, caption.to_string(), spec);
    let mut findings = Vec::new();
    let keys = evidence
        .replays
        .iter()
        .find(|r| r.json["idempotency_keys"] == true);
    if let Some(k) = keys {
        findings.push(format!(
            "With idempotency keys both workers still ran ({} items executed twice) and the payment API accepted {} duplicate charges: the key, not the lock, keeps a charge single.",
            format_count(k.json["double_executions"].as_u64().unwrap_or(0)),
            format_count(k.json["duplicate_charges_accepted"].as_u64().unwrap_or(0))
        ));
    }
    if let Some(f) = evidence.replays.iter().find(|r| r.json["fencing"] == true) {
        findings.push(format!(
            "Fencing refused {} stale writes and stopped the stale worker, yet {} items still ran twice: a fencing token protects the store that checks it, not a payment API that does not.",
            format_count(f.json["stale_writes_rejected"].as_u64().unwrap_or(0)),
            format_count(f.json["double_executions"].as_u64().unwrap_or(0))
        ));
    }
    if let Some(h) = evidence
        .replays
        .iter()
        .find(|r| r.json["mode"] == "heartbeat" && r.json["fencing"] != true)
    {
        findings.push(format!(
            "With heartbeat renewal the lock never expired under a running job: {} double executions in {} runs.",
            format_count(h.json["double_executions"].as_u64().unwrap_or(0)),
            h.json["runs"]
        ));
    }
    findings.push("The operation guarded here (charging a card, applying a migration) is not idempotent: the lock is a serialization aid, and the correctness mechanism is the idempotency key (or a unique constraint, or a conditional update).".to_string());
    blocks.push(Block::List(findings));
}

fn observability(evidence: &Evidence, blocks: &mut Vec<Block>) {
    blocks.push(Block::Heading(
        2,
        "5. Lock observability and monitoring".to_string(),
    ));
    blocks.push(Block::List(vec![
        "`lock_hold_seconds` (gauge, per job): time since the current holder acquired the lock; 0 when free.".to_string(),
        "`lock_ttl_seconds` (gauge, per job): the TTL or lease in force.".to_string(),
        "`lock_acquire_failures_total` and `lock_acquire_attempts_total` (counters): acquisition failure rate.".to_string(),
        "`lock_renewals_total` and `lock_renewal_failures_total` (counters): renewal success rate for heartbeat locks.".to_string(),
        "`lock_release_refused_total` (counter): releases that found the lock no longer theirs, each one a lost lease.".to_string(),
    ]));
    let mut rows = Vec::new();
    let mut rules = String::from("groups:\n  - name: lockbench-locks\n    rules:\n");
    for t in &evidence.ttls {
        let j = &t.json;
        let w = text(&j["workload"]);
        let alert = j["alert_hold_s"].as_f64().unwrap_or(0.0);
        rows.push(vec![
            format!("{w}: hold time above 80 % of the TTL"),
            format!("> {}", secs(&j["alert_hold_s"])),
            format!("TTL {} (section 2)", secs(&j["ttl_s"])),
        ]);
        rows.push(vec![
            format!("{w}: runtime above the measured P99.9"),
            format!("> {}", secs(&j["measured_p999_s"])),
            "a run slower than 999 in 1,000 simulated: investigate before it nears the TTL"
                .to_string(),
        ]);
        rows.push(vec![
            format!("{w}: renewal failures in a row (heartbeat)"),
            format!("> {}", j["heartbeat"]["max_consecutive_failures"]),
            format!(
                "the give-up deadline of {} allows this many",
                secs(&j["heartbeat"]["give_up_after_s"])
            ),
        ]);
        let alert_name: String = w
            .split(|c: char| !c.is_ascii_alphanumeric())
            .map(|p| {
                let mut c = p.chars();
                c.next().map_or(String::new(), |f| {
                    f.to_ascii_uppercase().to_string() + c.as_str()
                })
            })
            .collect();
        rules += &format!(
            "      - alert: {alert_name}LockHoldNearTtl\n        expr: lock_hold_seconds{{job=\"{w}\"}} > {alert:.1}\n        for: 1m\n        labels:\n          severity: page\n        annotations:\n          summary: \"{w} has held its lock for more than 80 % of its {} TTL\"\n          runbook: \"A second worker gets the lock at {}: check the job's progress, then extend or stop it.\"\n",
            secs(&j["ttl_s"]),
            secs(&j["ttl_s"]),
        );
    }
    let bench = bench_rows(evidence);
    if let Some(p999) = bench
        .iter()
        .filter(|r| text(&r["backend"]) != "memory")
        .filter_map(|r| r["acquire_us"]["p999"].as_f64())
        .reduce(f64::max)
    {
        rows.push(vec![
            "acquisition failure rate".to_string(),
            "> 1 % of attempts over 15 minutes".to_string(),
            format!(
                "the backends measured acquired within {} us at P99.9: failures mean an outage or a stuck holder",
                us(&Value::from(p999))
            ),
        ]);
    }
    if rows.is_empty() {
        blocks.push(Block::Para(
            "No TTL derivation in these results, so no thresholds to fill in: run `lockbench ttl`."
                .to_string(),
        ));
        return;
    }
    blocks.push(Block::Table {
        head: vec!["alert".into(), "threshold".into(), "from".into()],
        rows,
    });
    if !evidence.ttls.is_empty() {
        blocks.push(Block::Para(
            "A Prometheus alerting rule for hold time above 80 % of the TTL, with the figures above:".to_string(),
        ));
        blocks.push(Block::Code {
            lang: "yaml".to_string(),
            text: rules,
        });
    }
}

fn sources(evidence: &Evidence, blocks: &mut Vec<Block>) {
    blocks.push(Block::Heading(2, "Sources".to_string()));
    let rows = evidence
        .sources()
        .iter()
        .map(|s| {
            vec![
                format!("`{}`", s.label),
                format!("`{}`", s.command),
                s.seed.map_or("-".to_string(), |v| v.to_string()),
                s.git_commit.clone().unwrap_or_else(|| "-".to_string()),
            ]
        })
        .collect();
    blocks.push(Block::Table {
        head: vec![
            "results directory".into(),
            "command".into(),
            "seed".into(),
            "lockbench commit".into(),
        ],
        rows,
    });
    if !evidence.skipped.is_empty() {
        blocks.push(Block::List(
            evidence
                .skipped
                .iter()
                .map(|(p, why)| format!("`{}`: {why}", p.display()))
                .collect(),
        ));
    }
}
