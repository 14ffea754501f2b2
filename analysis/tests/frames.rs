//! Results directories as frames (keyed tables), and `compare` between two sets of them.

use std::path::PathBuf;

use lockbench_analysis::frames::{compare, load_frames};

fn fixture() -> PathBuf {
    PathBuf::from("tests/fixtures/run")
}

#[test]
fn every_results_directory_loads_into_frames() {
    let f = load_frames(&[fixture()]).unwrap();
    // simulate: 4 workloads x 3 profiles x 2 scales; ttl adds its half and double scales of the
    // worst profile; rows seen twice are kept once.
    assert_eq!(f.runtimes.height(), 32, "{:?}", f.runtimes);
    assert_eq!(
        f.bench.height(),
        12,
        "six reachable backends (etcd was not) at 1 and 4 contenders"
    );
    assert_eq!(f.replays.height(), 4);
    // 35 cells through lockbench's own client, 6 through redis-py and etcd-go (keyed
    // `redis via redis-py`).
    assert_eq!(
        f.faults.height(),
        41,
        "one row per fault cell: {:?}",
        f.faults
    );
    assert!(
        (0..f.faults.height()).any(|r| f.faults.key(r, "backend") == Some("etcd via etcd-go")),
        "{:?}",
        f.faults
    );
    let columns: Vec<_> = f.runtimes.columns().collect();
    assert_eq!(
        columns,
        [
            "workload",
            "profile",
            "scale",
            "runtime_p50_s",
            "runtime_p99_s",
            "runtime_p999_s"
        ]
    );
    assert_eq!(
        f.runtimes.key(0, "scale"),
        Some("1.0"),
        "a scale keys as 1.0"
    );
    assert!(f.runtimes.metric(0, "runtime_p999_s").is_some());
}

#[test]
fn comparing_a_run_with_itself_changes_nothing() {
    let f = load_frames(&[fixture()]).unwrap();
    let changes = compare(&f, &f);
    // Rows x metrics: runtimes, bench, replays, faults, and the four TTL derivations.
    assert_eq!(f.ttls.height(), 4, "{:?}", f.ttls);
    assert_eq!(changes.len(), 32 * 3 + 12 * 6 + 4 * 4 + 41 * 5 + 4 * 6);
    assert!(
        changes
            .iter()
            .any(|c| c.table == "ttls" && c.metric == "p_lease_lost_upper95" && c.before.is_some())
    );
    for c in &changes {
        assert_eq!(c.before, c.after, "{c:?}");
        if c.before.is_some_and(|b| b != 0.0) {
            assert_eq!(c.change_pct, Some(0.0), "{c:?}");
        }
    }
}

#[test]
fn a_slower_run_shows_its_change_and_rows_on_one_side_show_as_missing() {
    // Billing baseline at scale 1 got 10 % slower at the median; the redis benchmark is gone.
    // Made in the frames: an edited summary.csv no longer reads (it must agree with its
    // histograms), and a run that really was slower would differ everywhere.
    let mut after = load_frames(&[fixture()]).unwrap();
    let runtimes = &mut after.runtimes;
    let row = (0..runtimes.height())
        .find(|&i| {
            runtimes.key(i, "workload") == Some("billing")
                && runtimes.key(i, "profile") == Some("baseline")
                && runtimes.key(i, "scale") == Some("1.0")
        })
        .expect("billing baseline at scale 1");
    let p50 = runtimes.metric(row, "runtime_p50_s").unwrap();
    assert!(runtimes.set_metric(row, "runtime_p50_s", Some(p50 * 1.1)));
    after.bench.rows.retain(|r| r.keys[0] != "redis");

    let changes = compare(&load_frames(&[fixture()]).unwrap(), &after);
    let median = changes
        .iter()
        .find(|c| {
            c.key == "workload=billing profile=baseline scale=1.0" && c.metric == "runtime_p50_s"
        })
        .unwrap_or_else(|| panic!("{changes:#?}"));
    assert!(
        (median.change_pct.unwrap() - 10.0).abs() < 0.01,
        "{median:?}"
    );
    let gone: Vec<_> = changes
        .iter()
        .filter(|c| c.table == "bench" && c.key.starts_with("backend=redis"))
        .collect();
    assert!(!gone.is_empty());
    assert!(
        gone.iter()
            .all(|c| c.before.is_some() && c.after.is_none() && c.change_pct.is_none())
    );
}

#[test]
fn a_key_on_both_sides_is_one_row_and_rows_come_in_key_order() {
    let f = load_frames(&[fixture()]).unwrap();
    let mut shuffled = load_frames(&[fixture()]).unwrap();
    shuffled.bench.rows.reverse();
    let changes = compare(&f, &shuffled);
    let keys: Vec<&str> = changes
        .iter()
        .filter(|c| c.table == "bench" && c.metric == "acquire_p50_us")
        .map(|c| c.key.as_str())
        .collect();
    assert_eq!(
        keys.len(),
        12,
        "one row per key, whatever the order: {keys:#?}"
    );
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
    assert!(
        changes.iter().all(|c| c.before == c.after),
        "matched by key"
    );
}
