//! `ttl` prices the heartbeat lease: sized from the profile whose stalls threaten it most, with
//! the simulated chance per run of losing it while its holder lives.

use serde_json::Value;

mod common;
use common::{json_of, refused};

const BILLING: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/workloads/specs/billing.toml");
const MIGRATION: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/workloads/specs/migration.toml"
);

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
    ]);
    let hb = &v["heartbeat"];
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
