//! The report built from a committed `lockbench run --quick` output (tests/fixtures/run): the
//! Markdown against its snapshot, every chart a real, non-blank PNG and an SVG, and an HTML page
//! that refers to nothing outside itself.
//!
//! After an intended change to the report's text: `UPDATE_SNAPSHOTS=1 cargo test -p
//! lockbench-analysis --test report`, then read the diff of tests/snapshots/report.md.

use std::path::{Path, PathBuf};

use lockbench_analysis::report::{self, ReportError};
use lockbench_decision::ModelKind;

fn fixture() -> PathBuf {
    // Relative, so that the Sources table reads the same on every machine.
    PathBuf::from("tests/fixtures/run")
}

fn built() -> report::Report {
    let evidence = report::load(&[fixture()]).unwrap();
    assert_eq!(evidence.simulations.len(), 1);
    assert_eq!(evidence.ttls.len(), 4);
    assert_eq!(evidence.benches.len(), 1);
    assert_eq!(evidence.replays.len(), 4);
    report::build(&evidence, &Default::default()).unwrap()
}

#[test]
fn markdown_matches_its_snapshot() {
    let md = built().markdown;
    let snapshot = Path::new("tests/snapshots/report.md");
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(snapshot, &md).unwrap();
    }
    let expected = std::fs::read_to_string(snapshot).expect("snapshot exists");
    if md != expected {
        let first = md
            .lines()
            .zip(expected.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(0);
        panic!(
            "report.md differs from tests/snapshots/report.md from line {}:\n got: {}\nwant: {}\n(UPDATE_SNAPSHOTS=1 to accept)",
            first + 1,
            md.lines().nth(first).unwrap_or(""),
            expected.lines().nth(first).unwrap_or("")
        );
    }
}

#[test]
fn the_report_follows_the_decision_record() {
    let md = built().markdown;
    // One page first, as an ADR; then the evidence by job, each in the record's five parts.
    for heading in [
        "## Context",
        "## Decision",
        "## Consequences",
        "## Rejected alternatives",
        "## Actions",
        "## Shared evidence",
        "## Appendix A. Every fault-lab cell",
        "## Sources",
    ] {
        assert!(md.contains(&format!("\n{heading}\n")), "missing {heading}");
    }
    let evidence = md.find("## Evidence: billing").unwrap();
    assert!(md.find("## Actions").unwrap() < evidence);
    for job in ["billing", "events", "ledger", "migration"] {
        for part in [
            format!("### {job}: the decision in full"),
            format!("### {job} 1: backend and failure model"),
            format!("### {job} 2: runtime, TTL and lease"),
            format!("### {job} 2: crash recovery"),
            format!("### {job} 3: acquisition and release"),
            format!("### {job} 4: idempotency, step by step"),
            format!("### {job} 5: alerts and monitoring"),
        ] {
            assert!(md.contains(&part), "missing {part}");
        }
    }
    // billing is decided pg-session: no TTL to page on; its page is the hold time before its
    // budget.
    assert!(!md.contains("`BillingLockHeldNearTtl`"));
    assert!(md.contains("| `BillingLockHeldNearBudget` | **page** | held > 570 s |"));
    // The fault run replaces "by design" with the faults that overlapped, each linked to its row
    // of the grid, and says where the fence failed.
    assert!(md.contains("### What the fault lab measured"));
    assert!(md.contains("| `redis` | counter |"));
    assert!(md.contains("[pause/naive](#fault-pause-naive), [restart/no-persistence](#fault-restart-no-persistence), [failover/no-wait](#fault-failover-no-wait) |"));
    assert!(md.starts_with("# Locking decision record: billing, events, ledger and migration\n"));
    assert!(md.contains("- **Backend**: `pg-session`. The job already runs postgres"));
    assert!(md.contains("- **Backend**: `pg-xact`. "));
    // The crash cell gives every networked backend its recovery time, at the lab's TTL for it.
    // (etcd was unreachable when the fixture ran: nothing of it is measured.)
    let billing = &md[md.find("### billing 1: backend and failure model").unwrap()..];
    let row = |backend: &str| {
        billing
            .lines()
            .find(|l| l.starts_with(&format!("| `{backend}` |")))
            .unwrap()
    };
    for backend in ["redis", "redlock", "pg-session", "pg-xact", "zookeeper"] {
        assert!(!row(backend).contains("not measured"), "{}", row(backend));
        assert!(row(backend).contains(" at lab TTL "), "{}", row(backend));
    }
    // A vanished host: a session lock is freed by the keepalive on the job's own connection,
    // and not within the wait under Linux's defaults; a TTL is freed when it runs out.
    assert!(
        row("pg-session").contains(
            " / 2.95 s with its keepalive (not granted within 67.2 s without) at lab TTL 1.00 s |"
        ),
        "{}",
        row("pg-session")
    );
    assert!(
        row("redis").contains("| 832 ms / 872 ms at lab TTL 1.00 s |"),
        "{}",
        row("redis")
    );
    let etcd = row("etcd");
    assert!(
        etcd.ends_with("| not measured | not measured | not measured |"),
        "{etcd}"
    );
    assert!(md.contains("| `pause/naive` | 🟦 1/1, "));
    assert!(
        md.contains("The fence let stale writes through under `restart/no-persistence` on `redis`")
    );
    assert!(md.contains("`etcd`: etcd: cannot reach http://127.0.0.1:1"));
}

/// The record reads at a glance: no table cell of the main sections (before the appendix) holds
/// more than about 200 characters of text (links count by what they show), and no figure prints
/// more than four digits before its decimal point in us or ms where a larger unit fits.
#[test]
fn cells_stay_short_and_figures_readable() {
    let md = built().markdown;
    let main = &md[..md.find("## Appendix A").expect("an appendix")];
    let visible = |cell: &str| {
        // `[text](#anchor)` shows as `text`.
        let mut out = String::new();
        let mut rest = cell;
        while let Some(i) = rest.find("](#") {
            out.push_str(&rest[..i]);
            rest = &rest[i..];
            rest = rest.find(')').map_or("", |j| &rest[j + 1..]);
        }
        out + rest
    };
    for line in main
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("|---"))
    {
        for cell in line.trim_matches('|').split(" | ") {
            let shown = visible(cell);
            assert!(shown.len() <= 210, "{} characters: {shown}", shown.len());
        }
    }
    for word in md.split(|c: char| c.is_whitespace() || c == '|' || c == '(') {
        let digits: String = word
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == ',')
            .collect();
        let whole = digits.replace(',', "");
        let unit_follows = md.contains(&format!("{word} us")) || md.contains(&format!("{word} ms"));
        if !whole.is_empty() && whole.len() > 4 && word == digits && unit_follows {
            panic!("{word} us/ms: a larger unit fits");
        }
    }
}

fn decode(png_bytes: &[u8]) -> (u32, u32, Vec<u8>) {
    let decoder = png::Decoder::new(png_bytes);
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    buf.truncate(info.buffer_size());
    (info.width, info.height, buf)
}

#[test]
fn every_chart_is_a_real_png_and_svg() {
    let r = built();
    let names: Vec<&str> = r.charts.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "runtime-percentiles-billing",
            "runtime-volume-billing",
            "model-check-billing",
            "runtime-percentiles-events",
            "runtime-volume-events",
            "runtime-percentiles-ledger",
            "runtime-volume-ledger",
            "runtime-percentiles-migration",
            "runtime-volume-migration",
            "acquire-percentiles",
            "acquire-bars",
            "contention-handoff",
            "contention-grants",
            "contention-requests",
            "fault-grid",
            "library-grid",
            "double-executions",
            "fault-timeline-pause-naive",
            "fault-timeline-restart-no-persistence",
            "fault-timeline-redlock-restart-clock-jump",
            "fault-timeline-pool-leak-no-reset",
            "fault-timeline-crash-work-survives",
            "fault-timeline-failover-no-wait",
            "fault-timeline-outage-run-unlocked",
            "fault-timeline-redlock-late-start",
        ]
    );
    for (name, chart) in &r.charts {
        let (w, h, pixels) = decode(&chart.png);
        // The grid is as tall as its rows need, a runtime chart as its panels' keys need.
        let grows = name.ends_with("-grid") || name.starts_with("runtime-percentiles-");
        let expected = if grows { h } else { 540 };
        assert_eq!((w, h), (960, expected), "{name}");
        let drawn = pixels.chunks(3).filter(|p| *p != [255, 255, 255]).count();
        assert!(drawn > 8_000, "{name}: only {drawn} pixels drawn");
        // Axes and text are grey; the data is in colour.
        let chromatic = pixels
            .chunks(3)
            .filter(|p| p.iter().max().unwrap() - p.iter().min().unwrap() > 60)
            .count();
        assert!(chromatic > 300, "{name}: only {chromatic} coloured pixels");
        let colours: std::collections::HashSet<&[u8]> = pixels.chunks(3).collect();
        assert!(colours.len() > 10, "{name}: {} colours", colours.len());
        assert!(
            chart.svg.contains("<svg") && chart.svg.contains("<text"),
            "{name}"
        );
        assert!(
            r.markdown.contains(&format!("charts/{name}.png")),
            "{name} unused"
        );
    }
}

#[test]
fn the_html_page_refers_to_nothing_outside_itself() {
    let html = built().html;
    let lower = html.to_lowercase();
    for external in [
        "src=\"http",
        "href=\"http",
        "src='http",
        "href='http",
        "url(http",
        "url(//",
        "src=\"//",
        "href=\"//",
        "@import",
        "<link",
        "<script",
        "<iframe",
        "charts/",
    ] {
        assert!(
            !lower.contains(external),
            "the page refers outside: {external}"
        );
    }
    // Every chart inline but the fault grid, which the page draws as a coloured table.
    assert_eq!(lower.matches("<svg").count(), 23, "every chart inline");
    assert!(html.contains("<table class=\"grid\">"));
    assert!(html.contains("<tr id=\"fault-pause-naive\">"));
    assert!(html.contains("<nav class=\"toc\""));
}

#[test]
fn a_folder_without_results_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let err = report::load(&[dir.path().to_path_buf()]).unwrap_err();
    assert!(matches!(err, ReportError::Input { .. }));
    assert!(err.to_string().contains("no manifest.json"), "{err}");
    let err = report::load(&[dir.path().join("absent")]).unwrap_err();
    assert!(err.to_string().contains("not a directory"), "{err}");
}

/// The part of `md` from the heading `from` to the next heading of the same or a higher level
/// (a `#` inside a code block is no heading).
fn section(md: &str, from: &str) -> String {
    let level = from.chars().take_while(|c| *c == '#').count();
    let mut lines = md.lines().skip_while(|l| *l != from);
    let mut out = vec![lines.next().unwrap_or_else(|| panic!("no {from}"))];
    let mut code = false;
    for line in lines {
        if line.starts_with("```") {
            code = !code;
        }
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if !code && hashes > 0 && hashes <= level && line[hashes..].starts_with(' ') {
            break;
        }
        out.push(line);
    }
    out.join("\n")
}

/// Every job's parts follow its decided lock model: a TTL's figures and review threshold only for
/// the job whose lock has a TTL, renewals only for the one whose lock is renewed, the session and
/// transaction locks watched by what can go wrong with them, and a page only where a double run
/// does harm. The fixture's four jobs are decided on all four models.
#[test]
fn every_section_follows_each_jobs_lock_model() {
    let evidence = report::load(&[fixture()]).unwrap();
    let decisions = evidence.decisions().unwrap();
    // (job, model, harms, the model its alerts follow: after the blocking actions, if blocked)
    let models: Vec<(String, ModelKind, bool, ModelKind)> = decisions
        .iter()
        .map(|d| {
            let implemented = d
                .after
                .as_deref()
                .filter(|_| d.status == lockbench_decision::Status::Blocked)
                .unwrap_or(d);
            (
                d.job.clone(),
                d.lock_model.kind,
                d.double_run.harms(),
                implemented.lock_model.kind,
            )
        })
        .collect();
    for kind in [
        ModelKind::FixedTtl,
        ModelKind::HeartbeatLease,
        ModelKind::Session,
        ModelKind::Transaction,
    ] {
        assert!(
            models.iter().any(|(_, k, _, _)| *k == kind),
            "{kind:?} in {models:?}"
        );
    }
    let md = report::build(&evidence, &Default::default())
        .unwrap()
        .markdown;
    for (job, kind, harms, alerted) in &models {
        let name: String = job[..1].to_uppercase() + &job[1..];
        let ttl = *kind == ModelKind::FixedTtl;
        let renewed = *kind == ModelKind::HeartbeatLease;
        let held = matches!(kind, ModelKind::Session | ModelKind::Transaction);
        let runtime = section(&md, &format!("### {job} 2: runtime, TTL and lease"));
        let protocol = section(&md, &format!("### {job} 3: acquisition and release"));
        let alerts = section(&md, &format!("### {job} 5: alerts and monitoring"));
        // (where, what it must hold, whether the job's model says it should)
        let expected = [
            (&runtime, "| **TTL** |".to_string(), ttl),
            (&runtime, "| heartbeat lease |".to_string(), renewed),
            (
                &protocol,
                "stop work when no renewal has succeeded".to_string(),
                renewed,
            ),
            (
                &alerts,
                format!("`{name}LockRenewalFailing`"),
                *alerted == ModelKind::HeartbeatLease,
            ),
            (
                &alerts,
                format!("`{name}LockHeldNearBudget` | **page**"),
                *alerted != ModelKind::FixedTtl && *harms,
            ),
            (&alerts, "| **page** |".to_string(), *harms),
        ];
        for (text, needle, want) in expected {
            assert_eq!(text.contains(&needle), want, "{job} ({kind:?}): {needle}");
        }
        if held {
            // Its derived TTL and lease are not in force: not a row of them.
            assert!(!runtime.contains("safety factor"), "{job}");
            assert!(runtime.contains("which has no TTL"), "{job}");
        }
    }
    // Stale locks: the query or command for each decided backend.
    assert!(md.contains("WHERE l.locktype = 'advisory' AND l.granted AND a.state <> 'active'"));
    assert!(md.contains("redis-cli --scan"));
    // The header says what kind of figure each is.
    assert!(md.contains("**simulated**") && md.contains("**lab**") && md.contains("**bench**"));
}

/// A percentile is printed only where the sample supports it: a bench of 153 operations shows
/// its maximum with its count, never a P99.9 (or a P99).
#[test]
fn a_thin_bench_prints_no_tail_percentile() {
    let mut evidence = report::load(&[fixture()]).unwrap();
    let row = evidence.benches[0]
        .record
        .results
        .iter_mut()
        .find(|r| r.backend == lockbench_core::BackendKind::Zookeeper && r.contenders == 1)
        .expect("an uncontended zookeeper row");
    row.acquire_us.count = 153;
    row.ops = 153;
    let (p999, max) = (row.acquire_us.p999, row.acquire_us.max);
    let md = report::build(&evidence, &Default::default())
        .unwrap()
        .markdown;
    let costs = section(&md, "### What each backend costs");
    let zk = costs
        .lines()
        .find(|l| l.starts_with("| `zookeeper` |"))
        .expect("zookeeper's row");
    // 153 acquisitions support a P99 (100 do), not a P99.9 (1,000 would).
    assert!(zk.contains(" / max of 153: "), "{zk}");
    let shown = lockbench_core::format_readable_us;
    assert!(p999 == max || !zk.contains(&shown(p999)), "{zk}");
    // Fewer than 100 support no P99 either: the decision's alternatives cite the maximum.
    for row in evidence.benches[0].record.results.iter_mut() {
        if row.backend == lockbench_core::BackendKind::Zookeeper && row.contenders == 1 {
            row.acquire_us.count = 60;
            row.ops = 60;
        }
    }
    let md = report::build(&evidence, &Default::default())
        .unwrap()
        .markdown;
    let alternatives = section(&md, "### billing 1: backend and failure model");
    let row = alternatives
        .lines()
        .find(|l| l.starts_with("| `zookeeper` |"))
        .expect("zookeeper's verdict");
    assert!(row.contains("max of 60: "), "{row}");
    let costs = section(&md, "### What each backend costs");
    let zk = costs
        .lines()
        .find(|l| l.starts_with("| `zookeeper` |"))
        .expect("zookeeper's row");
    assert!(
        zk.contains("| node sequence | 1.13 ms / max of 60: "),
        "{zk}"
    );
}

/// A live runtime is called a miscalibration only where a test supports it: live runs beyond the
/// simulated P90 more often than chance allows. The fixture's two runs are consistent; two runs
/// both far above the P90 are not (chance 0.01).
#[test]
fn a_live_runtime_that_disagrees_with_the_simulation_is_said_only_when_tested() {
    let mut evidence = report::load(&[fixture()]).unwrap();
    let md = report::build(&evidence, &Default::default())
        .unwrap()
        .markdown;
    assert!(!md.contains("underestimates this job's runtime"), "{md}");
    assert!(md.contains("Consistent with the simulation"));
    for replay in &mut evidence.replays {
        if let Some(sim) = replay.record.simulated.clone() {
            let slow = sim.runtime_s.p90.as_secs_f64() * 1.3;
            for run in &mut replay.record.per_run {
                run.runtime_s = slow;
            }
        }
    }
    let md = report::build(&evidence, &Default::default())
        .unwrap()
        .markdown;
    let line = md
        .lines()
        .find(|l| l.contains("underestimates this job's runtime"))
        .unwrap_or_else(|| panic!("no disagreement said"));
    assert!(
        line.contains("took longer than the simulated P90"),
        "{line}"
    );
    assert!(line.contains("too short"), "{line}");
}
