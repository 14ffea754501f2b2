//! The alerting rules as files the real tools read: `prometheus-rules.yml` (what Prometheus
//! loads, checked by `promtool check rules`) and `prometheus-rules.test.yml` (what `promtool test
//! rules` runs): each page fed a run whose hold time grows past its threshold and checked to be
//! firing with the time to act still left before its deadline, and fed a normal run at today's
//! volume and checked to stay quiet; each ticket fed the event it counts. Exporters return text;
//! the caller decides where it goes.

use std::fmt::Write as _;
use std::time::Duration;

use lockbench_decision::alerts::{Alert, AlertPlan, AlertSettings, Signal};

/// The file name the rules are written under, which the tests name.
pub const RULES_FILE: &str = "prometheus-rules.yml";
/// The tests' file name.
pub const RULES_TEST_FILE: &str = "prometheus-rules.test.yml";

/// A YAML double-quoted string.
fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A duration as Prometheus writes one: whole seconds (`570s`), minutes where exact (`5m`).
fn prom_duration(d: Duration) -> String {
    let s = d.as_secs();
    if s > 0 && s.is_multiple_of(60) {
        format!("{}m", s / 60)
    } else {
        format!("{s}s")
    }
}

/// The rules file: one group per job.
pub fn rules_yaml(plans: &[AlertPlan]) -> String {
    let mut out = String::from(
        "# Alerting rules derived by lockbench from each job's decided lock model (report.md, per job: alerts).\n# Check: promtool check rules prometheus-rules.yml; test: promtool test rules prometheus-rules.test.yml\ngroups:\n",
    );
    for p in plans.iter().filter(|p| !p.alerts.is_empty()) {
        let _ = writeln!(out, "  - name: lockbench-{}", p.workload);
        out.push_str("    rules:\n");
        for a in &p.alerts {
            let _ = writeln!(out, "      - alert: {}", a.name);
            let _ = writeln!(out, "        expr: {}", quoted(&a.expr()));
            let _ = writeln!(out, "        for: {}", prom_duration(a.for_));
            out.push_str("        labels:\n");
            let _ = writeln!(out, "          severity: {}", a.severity.label());
            out.push_str("        annotations:\n");
            let _ = writeln!(out, "          summary: {}", quoted(&a.summary));
            let _ = writeln!(out, "          description: {}", quoted(&a.runbook));
        }
    }
    out
}

/// One `alert_rule_test` entry: `alert` expected firing at `at`, or quiet.
fn expect(out: &mut String, a: &Alert, at: Duration, firing: bool) {
    let _ = writeln!(out, "      - eval_time: {}", prom_duration(at));
    let _ = writeln!(out, "        alertname: {}", a.name);
    if !firing {
        out.push_str("        exp_alerts: []\n");
        return;
    }
    out.push_str("        exp_alerts:\n");
    out.push_str("          - exp_labels:\n");
    let _ = writeln!(out, "              severity: {}", a.severity.label());
    let _ = writeln!(out, "              workload: {}", a.workload);
    out.push_str("            exp_annotations:\n");
    let _ = writeln!(out, "              summary: {}", quoted(&a.summary));
    let _ = writeln!(out, "              description: {}", quoted(&a.runbook));
}

/// One test: its name, the series it feeds and what it expects.
struct Case<'a> {
    name: String,
    series: Vec<(String, String)>,
    checks: Vec<(&'a Alert, Duration, bool)>,
}

/// The series of a run whose hold time grows one second a second from 0, `steps` scrapes long,
/// then stays: `0+15x40`.
fn growing(scrape: Duration, steps: u64) -> String {
    format!("0+{}x{steps}", scrape.as_secs())
}

/// A run that ends after `longest`: its hold time grows scrape by scrape up to just below it,
/// reaches it, then drops to 0 (the lock released).
fn ending(scrape: Duration, longest: Duration) -> String {
    let step = scrape.as_secs().max(1);
    let full = longest.as_secs() / step;
    format!(
        "0+{step}x{full} {} 0x8",
        lockbench_core::records::round_micro(longest.as_secs_f64())
    )
}

/// The cases that check `a`.
fn cases<'a>(a: &'a Alert, settings: &AlertSettings) -> Vec<Case<'a>> {
    let scrape = settings.scrape.max(Duration::from_secs(1));
    let w = &a.workload;
    let hold = format!("lock_hold_seconds{{workload=\"{w}\"}}");
    let lag = settings.lag(a.for_);
    match a.signal {
        Signal::Hold => {
            let threshold = a.threshold.unwrap_or_default();
            let fires_by = a.fires_by(settings);
            // A page must be firing with the time to act still left; a ticket once it fired.
            let check_at = a
                .deadline
                .map_or(fires_by, |d| d.after().saturating_sub(settings.act));
            let steps = check_at.as_secs() / scrape.as_secs() + 4;
            let mut out = vec![Case {
                name: match a.deadline {
                    Some(d) => format!(
                        "{} is firing at {}, {} to act before {}",
                        a.name,
                        prom_duration(check_at),
                        prom_duration(settings.act),
                        d.describe()
                    ),
                    None => format!("{} is firing by {}", a.name, prom_duration(fires_by)),
                },
                series: vec![(hold.clone(), growing(scrape, steps))],
                checks: vec![
                    (a, threshold.saturating_sub(scrape), false),
                    (a, check_at, true),
                ],
            }];
            if let Some(quiet) = a.quiet_above {
                let end =
                    Duration::from_secs(quiet.as_secs() / scrape.as_secs() * scrape.as_secs())
                        + scrape;
                out.push(Case {
                    name: format!(
                        "{} stays quiet on a normal run at today's volume ({} s)",
                        a.name,
                        lockbench_core::records::round_micro(quiet.as_secs_f64())
                    ),
                    series: vec![(hold, ending(scrape, quiet))],
                    checks: vec![(a, end, false), (a, end + lag, false)],
                });
            }
            out
        }
        Signal::SinceRenewal => {
            let fires_by = a.fires_by(settings);
            let check_at = a
                .deadline
                .map_or(fires_by, |d| d.after().saturating_sub(settings.act));
            let steps = check_at.as_secs() / scrape.as_secs() + 4;
            vec![Case {
                name: format!("{} is firing at {}", a.name, prom_duration(check_at)),
                series: vec![
                    (hold, growing(scrape, steps)),
                    (
                        format!("lock_last_renewal_timestamp_seconds{{workload=\"{w}\"}}"),
                        format!("0x{steps}"),
                    ),
                ],
                checks: vec![(a, check_at, true)],
            }]
        }
        Signal::AcquireErrors => {
            let errors = format!("lock_acquire_total{{workload=\"{w}\",outcome=\"error\"}}");
            let granted = format!("lock_acquire_total{{workload=\"{w}\",outcome=\"granted\"}}");
            let busy = format!("lock_acquire_total{{workload=\"{w}\",outcome=\"busy\"}}");
            let steps = (lag + Duration::from_secs(600)).as_secs() / scrape.as_secs() + 4;
            let at = lag + Duration::from_secs(300);
            vec![
                Case {
                    name: format!("{} is firing when 1 in 11 attempts errs", a.name),
                    series: vec![
                        (errors.clone(), format!("0+1x{steps}")),
                        (granted.clone(), format!("0+10x{steps}")),
                    ],
                    checks: vec![(a, at, true)],
                },
                Case {
                    name: format!(
                        "{} stays quiet while other workers find the lock busy",
                        a.name
                    ),
                    series: vec![
                        (errors, format!("0x{steps}")),
                        (granted, format!("0+1x{steps}")),
                        (busy, format!("0+10x{steps}")),
                    ],
                    checks: vec![(a, at, false)],
                },
            ]
        }
        Signal::RenewalFailed | Signal::GaveUp | Signal::LostLease | Signal::WaitGaveUp => {
            let metric = match a.signal {
                Signal::RenewalFailed => "lock_renewal_failures_total",
                Signal::GaveUp => "lock_gave_up_total",
                Signal::LostLease => "lock_release_refused_total",
                _ => "lock_wait_gave_up_total",
            };
            let series = format!("{metric}{{workload=\"{w}\"}}");
            vec![
                Case {
                    name: format!("{} is firing after the event", a.name),
                    series: vec![(series.clone(), "0 0 0 1 1 1 1 1 1 1".to_string())],
                    checks: vec![(a, scrape * 3 + lag, true)],
                },
                Case {
                    name: format!("{} stays quiet without it", a.name),
                    series: vec![(series, "0x10".to_string())],
                    checks: vec![(a, scrape * 3 + lag, false)],
                },
            ]
        }
    }
}

/// The tests file: every alert's cases, evaluated at the settings' evaluation interval.
pub fn rules_test_yaml(plans: &[AlertPlan], settings: &AlertSettings) -> String {
    let mut out = format!(
        "# promtool test rules prometheus-rules.test.yml: each page firing with {} to act before the deadline it guards, and quiet on a normal run at today's volume.\nrule_files:\n  - {RULES_FILE}\nevaluation_interval: {}\ntests:\n",
        prom_duration(settings.act),
        prom_duration(settings.evaluation.max(Duration::from_secs(1)))
    );
    for a in plans.iter().flat_map(|p| &p.alerts) {
        for case in cases(a, settings) {
            let _ = writeln!(out, "  - name: {}", quoted(&case.name));
            let _ = writeln!(
                out,
                "    interval: {}",
                prom_duration(settings.scrape.max(Duration::from_secs(1)))
            );
            out.push_str("    input_series:\n");
            for (series, values) in &case.series {
                let _ = writeln!(out, "      - series: {}", quoted(series));
                let _ = writeln!(out, "        values: {}", quoted(values));
            }
            out.push_str("    alert_rule_test:\n");
            for (alert, at, firing) in case.checks {
                expect(&mut out, alert, at, firing);
            }
        }
    }
    out
}
