//! `ttl` as a user meets it: the recommendation from the worst profile, the price of the current
//! TTL, its text, and the results directory it writes (complete or not at all). `ttl` also prices
//! the heartbeat lease: sized from the profile whose stalls threaten it most, with the simulated
//! chance per run of losing it while its holder lives.

use predicates::prelude::*;
use serde_json::Value;

mod common;
use common::{BILLING, MIGRATION, json_of, lockbench, refused};

fn ttl_json(args: &[&str]) -> Value {
    json_of(&[&["ttl"], args, &["--json"]].concat())
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn billing_sizes_the_lease_from_gc_pressure_not_the_runtime_worst_case() {
    let v = ttl_json(&[BILLING, "--replays", "2000", "--seed", "3"]);
    // The fixed TTL comes from the incident's runtime; the lease from gc-pressure's pauses.
    assert_eq!(v["profile"], "month-end-incident");
    let hb = &v["heartbeat"];
    assert_eq!(hb["sized_by_profile"], "gc-pressure", "{hb}");
    let pricing = &hb["pricing"];
    // The default bound of 1e-4 needs 60,000 replays of the pausing profile.
    assert_eq!(pricing["replays"], 60_000);
    assert_eq!(pricing["max_lease_risk"], 1e-4);
    assert_eq!(pricing["risk_met"], true);
    assert!(f(&hb["p_lease_lost_upper95"]) < 1e-4, "{hb}");
    assert!(f(&hb["p_lease_lost"]) <= f(&hb["p_lease_lost_upper95"]));
    // The closed form (3 x pause P99.9, 34 s) is lost in some runs, so the lease is longer.
    assert_eq!(pricing["closed_form_lease_s"], 34.0);
    assert!(f(&pricing["closed_form_p_lease_lost"]) > 1e-4, "{pricing}");
    let lease = f(&hb["lease_ttl_s"]);
    assert!(lease > 34.0 && lease == lease.round(), "{lease}");
    assert!((f(&hb["renewal_interval_s"]) - lease / 3.0).abs() < 1e-6);
    // The lease is the shortest from which on every candidate's bound is met.
    let curve = pricing["curves"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["profile"] == "gc-pressure")
        .expect("gc-pressure's curve");
    let first = curve["first_lease_s"].as_u64().unwrap();
    let lost: Vec<u64> = curve["lost"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect();
    let at = |s: u64| lost[(s - first) as usize];
    assert_eq!(
        at(lease as u64),
        pricing["replays_lost"].as_u64().unwrap(),
        "{pricing}"
    );
    assert!(
        at(lease as u64 - 1) > 0,
        "a shorter lease must have lost some runs"
    );
    assert_eq!(
        *lost.last().unwrap(),
        0,
        "the longest candidate outlasts every pause"
    );
}

#[test]
fn a_looser_bound_gives_a_shorter_lease_with_a_nonzero_chance() {
    let v = ttl_json(&[
        BILLING,
        "--profile",
        "gc-pressure",
        "--replays",
        "20000",
        "--seed",
        "3",
        "--max-lease-risk",
        "0.002",
        // A budget loose enough that the lease the replays size stands (a tighter one lengthens
        // it: a_heartbeat_lease_follows_the_schedule_as_the_ttl_does).
        "--accepted-double-runs-per-year",
        "100",
    ]);
    let hb = &v["heartbeat"];
    assert!(hb["lengthened_from_s"].is_null(), "{hb}");
    assert_eq!(hb["pricing"]["replays"], 20_000);
    let p = f(&hb["p_lease_lost"]);
    assert!(p > 0.0, "{hb}");
    assert!(f(&hb["p_lease_lost_upper95"]) < 0.002, "{hb}");
    let expected = f(&hb["pricing"]["expected_double_runs_per_year"]);
    assert!((expected - 12.0 * p).abs() < 1e-12, "{expected}");
}

#[test]
fn a_spec_without_pauses_reports_zero_with_the_rule_of_three() {
    let v = ttl_json(&[MIGRATION, "--replays", "2000", "--seed", "3"]);
    let hb = &v["heartbeat"];
    assert!(hb["sized_by_profile"].is_null(), "{hb}");
    assert_eq!(hb["lease_ttl_s"], 30.0);
    assert_eq!(hb["p_lease_lost"], 0.0);
    let upper = f(&hb["p_lease_lost_upper95"]);
    assert!((upper - 3.0 / 2000.0).abs() / upper < 0.01, "{upper}");
    assert_eq!(hb["pricing"]["replays"], 2000);
    assert_eq!(hb["pricing"]["curves"], Value::Array(Vec::new()));
}

#[test]
fn max_lease_risk_is_checked() {
    for bad in ["0", "-1e-4", "0.9", "often"] {
        refused(
            &["ttl", BILLING, "--max-lease-risk", bad],
            &["--max-lease-risk".to_string()],
        );
    }
}

#[test]
fn ttl_recommends_from_the_worst_profile_and_prices_the_current_ttl() {
    let v = json_of(&[
        "ttl",
        BILLING,
        "--current-ttl",
        "300s",
        "--replays",
        "3000",
        "--seed",
        "3",
        "--json",
    ]);
    assert_eq!(
        v["profile"], "month-end-incident",
        "the default must be the pessimistic case"
    );
    let measured = v["measured_p999_s"].as_f64().unwrap();
    assert_eq!(v["safety_factor"], 3.0);
    assert_ttl_rule(&v);
    assert!(
        (v["alert_hold_s"].as_f64().unwrap() - 0.8 * v["ttl_s"].as_f64().unwrap()).abs() < 1e-3
    );
    let ci = v["p999_ci_s"].as_array().unwrap();
    assert!(ci[0].as_f64().unwrap() <= measured && measured <= ci[1].as_f64().unwrap());
    let hb = &v["heartbeat"];
    for field in [
        "lease_ttl_s",
        "renewal_interval_s",
        "give_up_after_s",
        "max_consecutive_failures",
    ] {
        assert!(!hb[field].is_null(), "heartbeat.{field}");
    }
    // The incident runs about 430 s: a 300 s TTL is outlived by almost every run.
    let current = &v["current_ttl"];
    assert_eq!(current["ttl_s"], 300.0);
    assert!(current["p_exceed"].as_f64().unwrap() > 0.99);
    assert!(current["expected_double_runs_per_year"].as_f64().unwrap() > 11.9);
    let trigger = v["review_trigger_volume"].as_u64().unwrap();
    assert!(
        trigger > 1800,
        "trigger {trigger} must lie above today's volume"
    );
}

#[test]
fn ttl_prices_the_specs_current_ttl_and_honours_profile_and_factor() {
    // No --current-ttl: billing's own current_ttl (300 s) is priced, and its target_volume
    // (3,600 customers) is where the TTL is sized, the flag taking precedence over it.
    let answered = json_of(&["ttl", BILLING, "--replays", "2000", "--seed", "3", "--json"]);
    assert_eq!(answered["current_ttl"]["ttl_s"], 300.0);
    assert_eq!(answered["target_volume"], 3600);
    assert_eq!(answered["target_from"], "spec");
    let today = answered["today"].as_array().expect("today's runtimes");
    assert_eq!(today.len(), 3, "every profile at today's volume");
    assert!(today.iter().all(|t| t["volume"] == 1800));
    let v = json_of(&[
        "ttl",
        BILLING,
        "--profile",
        "gc-pressure",
        "--target-scale",
        "2",
        "--safety-factor",
        "2",
        "--replays",
        "2000",
        "--seed",
        "3",
        "--json",
    ]);
    assert_eq!(v["profile"], "gc-pressure");
    assert_eq!(v["target_scale"], 2.0);
    assert_eq!(v["target_volume"], 3600);
    // gc-pressure injects pauses: the lease is sized from their P99.9 (over 10 s).
    assert!(v["heartbeat"]["lease_ttl_s"].as_f64().unwrap() > 30.0);
    assert_ttl_rule(&v);
}

/// The TTL is the longer of P99.9 x factor and the yearly budget's runtime x factor, and the
/// record says which governs.
fn assert_ttl_rule(v: &Value) {
    let factor = v["safety_factor"].as_f64().unwrap();
    let p999 = factor * v["measured_p999_s"].as_f64().unwrap();
    let tail = &v["tail"];
    let budget = factor * tail["budget_runtime"]["seconds"].as_f64().unwrap();
    let ttl = v["ttl_s"].as_f64().unwrap();
    assert!(
        (ttl - p999.max(budget)).abs() < 1e-3,
        "{ttl} against {p999} and {budget}"
    );
    assert!((tail["p999_ttl_s"].as_f64().unwrap() - p999).abs() < 1e-3);
    let governs = if budget > p999 {
        "yearly-budget"
    } else {
        "p999"
    };
    assert_eq!(tail["governs"], governs);
}

#[test]
fn a_minute_job_is_priced_by_subset_simulation_and_sized_to_its_budget() {
    // events runs 525,600 times a year: its replays cannot see the budget's 1.9e-8 per run.
    let v = json_of(&[
        "ttl",
        "workloads/specs/events.toml",
        "--replays",
        "2000",
        "--seed",
        "4",
        "--accepted-double-runs-per-year",
        "0.1",
        "--json",
    ]);
    let tail = &v["tail"];
    assert_eq!(tail["accepted_per_year"], 0.1);
    assert_eq!(tail["accepted_from"], "flag");
    let per_run = tail["per_run_budget"].as_f64().unwrap();
    assert!((per_run - 0.1 / 525_600.0).abs() < 1e-12, "{per_run}");
    assert_eq!(tail["budget_runtime"]["method"], "subset-simulation");
    assert_eq!(tail["governs"], "yearly-budget");
    assert_ttl_rule(&v);
    // The recommended TTL's chance a year stays within the budget, with an interval or a bound.
    let rec = &tail["recommended"];
    assert_eq!(rec["method"], "subset-simulation");
    assert!(rec["upper"].as_f64().unwrap() * 525_600.0 <= 0.1, "{rec}");
    assert!(rec["runs"].as_u64().unwrap() > 1_000);
    // Today's 60 s TTL: no replay outlived it, so subset simulation priced it.
    let current = &v["current_ttl"];
    assert_eq!(current["estimated"]["method"], "subset-simulation");
    assert!(
        current["expected_double_runs_per_year_upper95"]
            .as_f64()
            .unwrap()
            < 1.0
    );
    // Every candidate profile priced.
    assert_eq!(tail["profiles"].as_array().unwrap().len(), 3);
}

#[test]
fn a_budget_that_is_not_a_positive_count_is_refused_naming_it() {
    for bad in ["0", "-1", "abc", "inf"] {
        refused(
            &["ttl", BILLING, "--accepted-double-runs-per-year", bad],
            &["--accepted-double-runs-per-year".to_string()],
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(BILLING).unwrap().replacen(
        "[workload]\n",
        "[workload]\naccepted_double_runs_per_year = -0.5\n",
        1,
    );
    let spec = dir.path().join("billing.toml");
    std::fs::write(&spec, text).unwrap();
    let out = lockbench()
        .args(["ttl", spec.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("workload.accepted_double_runs_per_year"),
        "{err}"
    );
}

#[test]
fn ttl_text_keeps_measured_value_and_factor_apart() {
    lockbench()
        .args([
            "ttl",
            BILLING,
            "--profile",
            "baseline",
            "--current-ttl",
            "5m",
            "--replays",
            "2000",
            "--seed",
            "1",
        ])
        .assert()
        .success()
        .stdout(predicate::str::contains("measured P99.9 runtime"))
        .stdout(predicate::str::contains("safety factor"))
        .stdout(predicate::str::contains("renewal interval"))
        .stdout(predicate::str::contains("re-derive before volume exceeds"))
        .stdout(predicate::str::contains("current TTL 300.0 s"));
}

#[test]
fn out_writes_a_complete_results_directory() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    lockbench()
        .args([
            "ttl",
            BILLING,
            "--profile",
            "baseline",
            "--replays",
            "1000",
            "--seed",
            "8",
            "--json",
            "--out",
        ])
        .arg(&out)
        .assert()
        .success();
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["seed"], 8);
    assert_eq!(manifest["command"], "ttl");
    assert!(
        manifest["specs"][0]["text"]
            .as_str()
            .unwrap()
            .contains("[workload]")
    );
    let csv = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    assert_eq!(
        csv.lines().count(),
        4,
        "header + target + half + double scale:\n{csv}"
    );
    let hlog = std::fs::read_to_string(out.join("runtimes.hlog")).unwrap();
    assert!(hlog.contains("billing/baseline/scale=1"));
    let results: Value =
        serde_json::from_slice(&std::fs::read(out.join("results.json")).unwrap()).unwrap();
    assert_eq!(results["profile"], "baseline");

    // A second run into the same directory is refused and changes nothing.
    refused(
        &[
            "simulate",
            BILLING,
            "--replays",
            "10",
            "--out",
            out.to_str().unwrap(),
        ],
        &["--out", "not empty"],
    );
}

#[test]
fn bad_input_leaves_no_results_directory() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("never");
    refused(
        &[
            "ttl",
            BILLING,
            "--profile",
            "no-such",
            "--out",
            out.to_str().unwrap(),
        ],
        &["no-such"],
    );
    assert!(!out.exists());
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "no staging left behind"
    );
}

/// A job whose incident is a fixed wait: around the target its worst profile barely grows with
/// volume, while its baseline grows with every unit. A power law fitted on the worst profile puts
/// the trigger far away; the search finds the baseline reaching the alert threshold first, where a
/// direct simulation (another seed) agrees within 5 %.
const FLAT_WORST: &str = r#"
[workload]
name = "flat-worst"
volume = 100
unit = "items"
concurrency = 1

[[steps]]
name = "work"
target = "db"
latency = { dist = "lognormal", p50 = "1s", p99 = "1200ms" }

[[profiles]]
name = "baseline"

[[profiles]]
name = "blocked-then-cached"
description = "Waits out a 150 s lock, then finds every item cached: 100 x faster"

[[profiles.episodes]]
name = "held-lock"
target = "db"
start = "0s"
duration = "150s"
block = true

[[profiles.episodes]]
name = "warm-cache"
target = "db"
start = "0s"
duration = "1000000s"
slowdown = 0.01
"#;

#[test]
fn the_review_trigger_is_the_first_profile_to_reach_the_alert_not_the_worst_ones_fit() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("flat-worst.toml");
    std::fs::write(&spec, FLAT_WORST).unwrap();
    let spec = spec.to_str().unwrap();
    let v = ttl_json(&[spec, "--replays", "2000", "--seed", "5"]);
    assert_eq!(v["profile"], "blocked-then-cached", "{v}");
    let alert = f(&v["alert_hold_s"]);
    let search = &v["review_trigger_from"];
    assert_eq!(search["kind"], "simulated", "{search}");
    assert_eq!(search["profile"], "baseline", "{search}");
    let trigger = v["review_trigger_volume"].as_u64().unwrap();
    // The worst profile's fit barely grows: extended, it would not cross below 100 x the target.
    let fit = &v["growth"];
    let fitted = f(&fit["coefficient_s"]) * (100.0 * 100.0f64).powf(f(&fit["exponent"]));
    assert!(
        fitted < alert,
        "the fit {fit} crosses early: the test shows nothing"
    );
    // Baseline: about 100 s per 100 items, so the alert (2.4 x the worst, about 360 s) is reached
    // near 360 items.
    assert!((300..450).contains(&trigger), "{trigger}");
    let direct = json_of(&[
        "simulate",
        spec,
        "--profile",
        "baseline",
        "--scale",
        &(trigger as f64 / 100.0).to_string(),
        "--replays",
        "2000",
        "--seed",
        "6",
        "--json",
    ]);
    let p999 = f(&direct["results"][0]["runtime_s"]["p999"]);
    assert!(
        (p999 / alert - 1.0).abs() < 0.05,
        "direct P99.9 {p999} s at {trigger} items against the alert threshold {alert} s"
    );
}

#[test]
fn ttl_of_a_spec_without_a_target_or_a_current_ttl_says_it_assumed_todays_volume() {
    let dir = tempfile::tempdir().unwrap();
    let spec = common::write_file(
        dir.path(),
        "job.toml",
        b"[workload]\nname = \"job\"\nvolume = 100\n\n[[steps]]\nname = \"write\"\ntarget = \"db\"\nlatency = \"10ms\"\n",
    );
    let v = json_of(&["ttl", spec.to_str().unwrap(), "--replays", "1000", "--json"]);
    assert!(v["current_ttl"].is_null(), "{v}");
    assert_eq!(v["target_from"], "assumed");
    assert_eq!(v["target_scale"], 1.0);
    assert_eq!(v["target_volume"], 100);
}

#[test]
fn a_heartbeat_lease_follows_the_schedule_as_the_ttl_does() {
    // A minute job whose stalls reach two minutes: the lease the replays size at 1e-4 a run is
    // lost more often than 0.01 a year allows (1.9e-8 a run), so it is lengthened until the
    // estimator puts it within the budget; a stall can never outlast two thirds of it then.
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("pausy.toml");
    std::fs::write(
        &spec,
        r#"
[workload]
name = "pausy"
volume = 100
schedule = "1m"

[[steps]]
name = "call"
target = "db"
latency = { dist = "lognormal", p50 = "400ms", p99 = "1s" }

[[profiles]]
name = "gc"

[profiles.pauses]
mean_interval = "10s"
duration = { dist = "pareto", scale = "100ms", shape = 1.5, max = "120s" }
"#,
    )
    .unwrap();
    let v = json_of(&["ttl", spec.to_str().unwrap(), "--replays", "2000", "--json"]);
    let hb = &v["heartbeat"];
    let from = hb["lengthened_from_s"]
        .as_f64()
        .expect("the lease was lengthened");
    let lease = hb["lease_ttl_s"].as_f64().unwrap();
    assert!(lease > from, "{hb}");
    assert!(
        lease * 2.0 / 3.0 > 120.0,
        "a two-minute stall still loses {lease} s"
    );
    let lost = &v["tail"]["lease"];
    assert!(lost["upper"].as_f64().unwrap() <= v["tail"]["per_run_budget"].as_f64().unwrap());
    assert_eq!(v["tail"]["lease_profile"], "gc");
}

/// A small minute job (a hundred calls, about 2.5 s; a profile with frequent stalls up to 10 s)
/// under the runner `table`, written to `dir`: small enough that its tail climbs are quick.
fn tick_under(dir: &std::path::Path, table: &str) -> String {
    let text = format!(
        r#"[workload]
name = "tick"
volume = 100
schedule = "1m"

[[steps]]
name = "work"
target = "db"
latency = {{ dist = "lognormal", p50 = "20ms", p99 = "60ms" }}

[[profiles]]
name = "baseline"

[[profiles]]
name = "gc-pressure"

[profiles.pauses]
mean_interval = "1s"
duration = {{ dist = "pareto", scale = "50ms", shape = 1.8, max = "10s" }}

[runner]
{table}
"#
    );
    let path = common::write_file(dir, "tick.toml", text.as_bytes());
    path.to_str().unwrap().to_string()
}

fn runner_of(spec: &str) -> Value {
    let v = json_of(&["ttl", spec, "--replays", "2000", "--seed", "4", "--json"]);
    v["runner"].clone()
}

#[test]
fn a_bullmq_lock_shorter_than_the_stalls_is_priced_and_lengthened_until_within_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let spec = tick_under(dir.path(), "kind = \"bullmq\"\nlock_duration = \"2s\"");
    let r = runner_of(&spec);
    assert_eq!(r["kind"], "bullmq");
    assert_eq!(r["setting"], "lock_duration");
    assert_eq!(r["default"], false);
    // BullMQ renews every half lockDuration.
    assert_eq!(r["lease"]["kind"], "renewed");
    assert_eq!(f(&r["lease"]["every_s"]), 1.0);
    // gc-pressure's pauses (Pareto from 50 ms, up to 10 s) outlast 1 to 2 s: lost often.
    let now = &r["chance"];
    assert!(f(&now["p"]) > 1e-5, "{r}");
    assert_eq!(r["profile"], "gc-pressure");
    // Lengthened until the loss is within 0.01 a year at 525,600 runs.
    assert!(f(&r["recommended_s"]) > 10.0, "{r}");
    assert!(
        f(&r["recommended_chance"]["upper"]) * 525_600.0 <= 0.01,
        "{r}"
    );
    assert!(r.get("unreachable").is_none(), "{r}");
    let text = lockbench()
        .args(["ttl", &spec, "--replays", "2000", "--seed", "4"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("runs twice without a lock: BullMQ, lockDuration 2.0 s"),
        "{text}"
    );
    assert!(text.contains("set lock_duration = \""), "{text}");
    assert!(
        text.contains("does not stop BullMQ from starting the job again"),
        "{text}"
    );
}

#[test]
fn a_celery_visibility_timeout_shorter_than_the_run_is_set_to_the_recommended_ttl() {
    let dir = tempfile::tempdir().unwrap();
    // tick takes about 2.5 s: every run outlives 1 s.
    let spec = tick_under(
        dir.path(),
        "kind = \"celery\"\nacks_late = true\nvisibility_timeout = \"1s\"",
    );
    let v = json_of(&["ttl", &spec, "--replays", "2000", "--seed", "4", "--json"]);
    let r = &v["runner"];
    assert_eq!(r["lease"]["kind"], "fixed");
    assert!(f(&r["chance"]["p"]) > 0.9, "{r}");
    assert_eq!(r["chance"]["method"], "replays");
    assert_eq!(f(&r["recommended_s"]), f(&v["ttl_s"]).ceil(), "{r}");
    // Acknowledged as it starts: never delivered again, nothing to price.
    let spec = tick_under(dir.path(), "kind = \"celery\"");
    let r = runner_of(&spec);
    assert_eq!(r["lease"]["why"], "acked-on-receipt");
    assert!(r.get("chance").is_none(), "{r}");
    assert_eq!(r["default"], true);
    assert_eq!(f(&r["value_s"]), 3600.0);
}

#[test]
fn a_cron_slot_shorter_than_the_skew_runs_twice_until_held_past_it() {
    let dir = tempfile::tempdir().unwrap();
    let spec = tick_under(dir.path(), "kind = \"cron\"\nclock_skew = \"30s\"");
    let r = runner_of(&spec);
    assert_eq!(r["lease"]["kind"], "slot");
    // Every run ends within 30 s: every slot runs twice.
    assert!(f(&r["chance"]["lower"]) > 0.99, "{r}");
    // Twice the skew would block the next minute's slot: halfway from the skew to it.
    assert_eq!(f(&r["recommended_s"]), 45.0, "{r}");
    assert_eq!(r["recommended_chance"]["method"], "not-in-model");
    let spec = tick_under(
        dir.path(),
        "kind = \"cron\"\nclock_skew = \"30s\"\nslot_clock = \"database\"",
    );
    let r = runner_of(&spec);
    assert_eq!(r["lease"]["why"], "shared-slot");
}

#[test]
fn a_runner_table_that_is_wrong_is_refused_naming_its_field() {
    let dir = tempfile::tempdir().unwrap();
    for (table, field) in [
        ("kind = \"sidekiq\"", "runner.kind"),
        ("lock_duration = \"30s\"", "runner.kind"),
        (
            "kind = \"bullmq\"\nvisibility_timeout = \"1h\"",
            "runner.visibility_timeout",
        ),
        ("kind = \"cron\"", "runner.clock_skew"),
        ("kind = \"pg-boss\"\nexpire_in = \"0s\"", "runner.expire_in"),
        (
            "kind = \"pg-boss\"\nexpire_in = \"-5m\"",
            "runner.expire_in",
        ),
        (
            "kind = \"quartz\"\nrequests_recovery = \"yes\"",
            "runner.requests_recovery",
        ),
    ] {
        let spec = tick_under(dir.path(), table);
        let out = lockbench().args(["ttl", &spec]).output().unwrap();
        common::assert_refused(&out, table, &[field]);
    }
}

#[test]
fn the_record_says_what_the_runners_setting_costs_and_what_to_set_it_to() {
    let dir = tempfile::tempdir().unwrap();
    let spec = tick_under(dir.path(), "kind = \"bullmq\"\nlock_duration = \"2s\"");
    let spec = {
        // Answers enough for a decision, so that the record's first page lists the action.
        let text = std::fs::read_to_string(&spec).unwrap()
            + "\n[decision]\ndouble_run = \"absorbed\"\nalready_runs = [\"redis\"]\ndatabases = 1\n";
        common::write_file(dir.path(), "tick-decided.toml", text.as_bytes())
    };
    let out = dir.path().join("ttl-tick");
    lockbench()
        .args([
            "ttl",
            spec.to_str().unwrap(),
            "--replays",
            "2000",
            "--seed",
            "4",
            "--out",
        ])
        .arg(&out)
        .assert()
        .success();
    let report = dir.path().join("report");
    lockbench()
        .arg("report")
        .arg(&out)
        .arg("--out")
        .arg(&report)
        .assert()
        .success();
    let md = std::fs::read_to_string(report.join("report.md")).unwrap();
    let part = md
        .split("### tick 2: runs twice without a lock")
        .nth(1)
        .unwrap_or_else(|| panic!("no runner part in the record:\n{md}"));
    assert!(
        part.contains("The job runs under BullMQ, lockDuration 2.0 s"),
        "{part}"
    );
    assert!(part.contains("| started twice, a year |"), "{part}");
    assert!(part.contains("set lock_duration = \""), "{part}");
    // The first page's actions table carries the change, pointing at the part that prices it.
    let actions = md.split("## Actions").nth(1).unwrap();
    let actions = actions.split("\n## ").next().unwrap();
    assert!(
        actions.contains("set BullMQ's lock_duration to 18s (now 2.0 s; started twice "),
        "{actions}"
    );
    assert!(
        actions.contains("`lockbench ttl`: lock_duration within the budget"),
        "{actions}"
    );
}
