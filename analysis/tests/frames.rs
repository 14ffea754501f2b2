//! Results directories as polars frames, and `compare` between two sets of them.

use std::path::{Path, PathBuf};

use lockbench_analysis::frames::{compare, load_frames};

fn fixture() -> PathBuf {
    PathBuf::from("tests/fixtures/run")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

#[test]
fn every_results_directory_loads_into_frames() {
    let f = load_frames(&[fixture()]).unwrap();
    // simulate: 4 workloads x 3 profiles x 2 scales; ttl adds its half and double scales of the
    // worst profile; rows seen twice are kept once.
    assert_eq!(f.runtimes.height(), 32, "{}", f.runtimes);
    assert_eq!(
        f.bench.height(),
        12,
        "six reachable backends (etcd was not) at 1 and 4 contenders"
    );
    assert_eq!(f.replays.height(), 4);
    assert_eq!(
        f.faults.height(),
        28,
        "one row per fault cell: {}",
        f.faults
    );
    for column in ["workload", "profile", "scale", "runtime_p999_s"] {
        assert!(f.runtimes.column(column).is_ok(), "{column}");
    }
}

#[test]
fn comparing_a_run_with_itself_changes_nothing() {
    let f = load_frames(&[fixture()]).unwrap();
    let changes = compare(&f, &f).unwrap();
    // Rows x metrics: runtimes, bench, replays, faults, and the four TTL derivations.
    assert_eq!(f.ttls.height(), 4, "{}", f.ttls);
    assert_eq!(changes.len(), 32 * 3 + 12 * 6 + 4 * 4 + 28 * 5 + 4 * 6);
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
    let dir = tempfile::tempdir().unwrap();
    let after = dir.path().join("after");
    copy_dir(&fixture(), &after);
    // Billing baseline at scale 1 got 10 % slower at the median; the redis benchmark is gone.
    let csv_path = after.join("simulate/summary.csv");
    let csv = std::fs::read_to_string(&csv_path).unwrap();
    let mut lines: Vec<String> = csv.lines().map(str::to_string).collect();
    let row = lines
        .iter()
        .position(|l| l.starts_with("billing,baseline,1.0,"))
        .unwrap();
    let mut cells: Vec<String> = lines[row].split(',').map(str::to_string).collect();
    let p50: f64 = cells[6].parse().unwrap();
    cells[6] = format!("{:.6}", p50 * 1.1);
    lines[row] = cells.join(",");
    std::fs::write(&csv_path, lines.join("\n") + "\n").unwrap();
    let bench_path = after.join("bench/bench.csv");
    let bench: Vec<String> = std::fs::read_to_string(&bench_path)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with("redis,"))
        .map(str::to_string)
        .collect();
    std::fs::write(&bench_path, bench.join("\n") + "\n").unwrap();

    let changes = compare(
        &load_frames(&[fixture()]).unwrap(),
        &load_frames(&[after]).unwrap(),
    )
    .unwrap();
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
