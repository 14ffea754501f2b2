//! Unit tests of the simulator.
use super::*;
use crate::WorkloadSpec;

/// A live call waits out a block window, then takes its work under the slowdowns active when
/// it starts, as the simulator's engines do.
#[test]
fn live_calls_wait_out_blocks_and_take_slowdowns() {
    let text = r#"
        [workload]
        name = "w"
        volume = 10
        [[steps]]
        name = "q"
        target = "db"
        latency = { dist = "constant", value = "1s" }
        [[profiles]]
        name = "p"
        [[profiles.episodes]]
        name = "block"
        target = "db"
        start = "10s"
        duration = "5s"
        block = true
        [[profiles.episodes]]
        name = "slow"
        target = "db"
        start = "12s"
        duration = "10s"
        slowdown = 3.0
    "#;
    let spec = WorkloadSpec::parse(text, std::path::Path::new("w.toml")).unwrap();
    let model = JobModel::new(&spec, "p", 1.0).unwrap();
    let mut rng = replay_rng(1, 0);
    let scenario = LiveScenario::draw(&model, &mut rng);
    assert_eq!(scenario.call_seconds(&model, 0, 0.0, &mut rng), 1.0);
    // Blocked from 11 s to 15 s, then 3 x 1 s under the slowdown active at 15 s.
    assert_eq!(scenario.call_seconds(&model, 0, 11.0, &mut rng), 4.0 + 3.0);
    assert_eq!(scenario.call_seconds(&model, 0, 30.0, &mut rng), 1.0);
}

#[test]
fn live_pauses_come_due_once() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("specs/billing.toml");
    let spec = WorkloadSpec::load(&path).unwrap();
    let model = JobModel::new(&spec, "gc-pressure", 1.0).unwrap();
    let mut pauses = LivePauses::new(&model, replay_rng(3, 0));
    let first = pauses.due(10_000.0);
    assert!(first > 0.0, "about 110 pauses are due in 10,000 s");
    assert_eq!(pauses.due(10_000.0), 0.0, "a pause is taken once");
    let none = JobModel::new(&spec, "baseline", 1.0).unwrap();
    assert_eq!(LivePauses::new(&none, replay_rng(3, 0)).due(1e9), 0.0);
}

/// The one-lane fast path must give exactly what the general lane engine gives.
#[test]
fn single_lane_matches_the_general_engine() {
    for file in ["billing.toml", "migration.toml"] {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("specs")
            .join(file);
        let spec = WorkloadSpec::load(&path).unwrap();
        for profile in &spec.profiles {
            let model = JobModel::new(&spec, &profile.name, 0.2).unwrap();
            let mut scratch = Scratch::default();
            for index in 0..200 {
                let fast = replay(&model, &mut replay_rng(9, index), &mut scratch);
                let mut rng = replay_rng(9, index);
                scratch.active.clear();
                for ep in &model.episodes {
                    if let Some(w) = realise(ep, &mut rng) {
                        scratch.active.push(w);
                    }
                }
                let pauses = pause_timeline(&model, &mut rng, &mut scratch.pauses);
                let general = lanes(
                    &model,
                    &mut rng,
                    &scratch.active,
                    &mut scratch.lanes,
                    pauses,
                );
                assert_eq!(fast, general, "{file} {} replay {index}", profile.name);
            }
        }
    }
}

#[test]
fn the_lease_rule_agrees_with_the_fault_labs_pause_scenario() {
    // The fault lab stops a heartbeat holder (renewing every TTL/3) for TTL/6 (heartbeat-short)
    // or 1.5 x TTL (heartbeat-long). Whatever the phase of the renewal cycle, the first never
    // loses the lease and the second always does: the lab measured exactly that on every backend
    // whose lock expires by itself.
    let lease = 30.0;
    for i in 0..100 {
        let start = 1.0 + f64::from(i) * 0.37;
        let mut lost = [0u64];
        count_lost(&[(start, lease / 6.0)], 1e6, &[lease], &mut lost);
        assert_eq!(lost[0], 0, "a stall of TTL/6 at {start} s");
        count_lost(&[(start, 1.5 * lease)], 1e6, &[lease], &mut lost);
        assert_eq!(lost[0], 1, "a stall of 1.5 TTL at {start} s");
    }
    // In between, the phase decides: 25 s lost just before a renewal (9.9 s after the last),
    // kept just after one.
    let mut lost = [0u64];
    count_lost(&[(9.9, 25.0)], 1e6, &[lease], &mut lost);
    assert_eq!(lost[0], 1);
    let mut kept = [0u64];
    count_lost(&[(10.1, 25.0)], 1e6, &[lease], &mut kept);
    assert_eq!(kept[0], 0);
    // A pause that begins after the run ended cannot take its lease.
    let mut after = [0u64];
    count_lost(&[(500.0, 100.0)], 400.0, &[lease], &mut after);
    assert_eq!(after[0], 0);
}
