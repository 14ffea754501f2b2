//! The typed records against the committed run (analysis/tests/fixtures/run): every file reads
//! through its type and writes back to the same JSON, and what does not fit is refused with the
//! file and the field named.

use std::path::{Path, PathBuf};

use lockbench_core::Manifest;
use lockbench_core::records::bench::BenchRecord;
use lockbench_core::records::faults::{FaultEventRow, FaultsRecord};
use lockbench_core::records::replay::ReplayRecord;
use lockbench_core::records::simulate::{SimulationCsvRow, SimulationRecord};
use lockbench_core::records::ttl::TtlRecommendation;
use lockbench_core::records::{Body, RecordError, from_csv, from_json, read_dir, to_csv, to_json};
use serde::Serialize;
use serde::de::DeserializeOwned;

fn fixture(dir: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../analysis/tests/fixtures/run")
        .join(dir)
}

/// Reads `file` as `T`, writes it back, and checks nothing was lost or added.
fn round_trip<T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(file: &Path) -> T {
    let bytes = std::fs::read(file).unwrap();
    let record: T = from_json(file, &bytes).unwrap_or_else(|e| panic!("{e}"));
    let written = to_json(&record);
    let original: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    let again: serde_json::Value = serde_json::from_slice(&written).unwrap();
    assert_eq!(
        original,
        again,
        "{} does not write back as read",
        file.display()
    );
    let reread: T = from_json(file, &written).unwrap();
    assert_eq!(reread, record, "{}", file.display());
    record
}

#[test]
fn every_record_of_the_committed_run_writes_back_as_it_was_read() {
    for dir in [
        "simulate",
        "ttl-billing",
        "ttl-migration",
        "bench",
        "replay-billing-ttl",
        "replay-billing-heartbeat",
        "replay-billing-fencing",
        "replay-billing-idempotency-keys",
        "faults",
    ] {
        round_trip::<Manifest>(&fixture(dir).join("manifest.json"));
    }
    let sim: SimulationRecord = round_trip(&fixture("simulate/results.json"));
    assert_eq!(sim.results.len(), 24);
    let ttl: TtlRecommendation = round_trip(&fixture("ttl-billing/results.json"));
    assert!(ttl.current_ttl.is_some());
    let bench: BenchRecord = round_trip(&fixture("bench/results.json"));
    assert_eq!(
        bench.backends.len(),
        6,
        "every backend the fixture's run reached declared itself (etcd was down)"
    );
    for mode in ["ttl", "heartbeat", "fencing", "idempotency-keys"] {
        let r: ReplayRecord = round_trip(&fixture(&format!("replay-billing-{mode}/results.json")));
        assert_eq!(r.per_run.len() as u64, r.runs);
    }
    let faults: FaultsRecord = round_trip(&fixture("faults/results.json"));
    assert!(faults.cells.iter().any(|c| c.trials_with_overlap > 0));
}

#[test]
fn a_fault_run_reads_as_matrix_trials_and_log() {
    let read = read_dir(&fixture("faults")).unwrap();
    match read.body {
        Body::Faults {
            record,
            trials,
            events,
        } => {
            let per_cell: u32 = record.cells.iter().map(|c| c.trials).sum();
            assert_eq!(trials.len() as u32, per_cell);
            assert!(
                events
                    .iter()
                    .any(|e| e.event == lockbench_core::records::faults::LogEvent::Grant)
            );
            let again: Vec<FaultEventRow> =
                from_csv(Path::new("events.csv"), &to_csv(&events)).unwrap();
            assert_eq!(again, events);
        }
        other => panic!("read as {other:?}"),
    }
}

#[test]
fn a_fault_cell_without_its_pool_figure_is_refused() {
    // The cell's last field, with the comma before it.
    let dir = doctored("faults", "results.json", |t| {
        t.replacen(",\n      \"idle_session_advisory_locks_max\": null", "", 1)
    });
    let e = read_dir(dir.path()).unwrap_err().to_string();
    assert!(
        e.contains("results.json") && e.contains("idle_session_advisory_locks_max"),
        "{e}"
    );
}

#[test]
fn csv_rows_write_back_as_they_were_read() {
    let file = fixture("simulate/summary.csv");
    let rows: Vec<SimulationCsvRow> = from_csv(&file, &std::fs::read(&file).unwrap()).unwrap();
    let again: Vec<SimulationCsvRow> = from_csv(&file, &to_csv(&rows)).unwrap();
    assert_eq!(rows, again);
}

#[test]
fn a_whole_directory_reads_by_its_command() {
    let read = read_dir(&fixture("replay-billing-ttl")).unwrap();
    match read.body {
        Body::Replay { record, rows } => assert_eq!(rows, record.per_run),
        other => panic!("read as {other:?}"),
    }
    assert!(!read.histograms.is_empty());
}

fn doctored(dir: &str, file: &str, edit: impl Fn(&str) -> String) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(fixture(dir)).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), tmp.path().join(entry.file_name())).unwrap();
    }
    let path = tmp.path().join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    let changed = edit(&text);
    assert_ne!(text, changed, "the edit changed nothing");
    std::fs::write(&path, changed).unwrap();
    tmp
}

#[test]
fn a_renamed_field_is_refused_naming_file_and_field() {
    let tmp = doctored("ttl-billing", "results.json", |t| {
        t.replace("\"measured_p999_s\"", "\"measured_p999_seconds\"")
    });
    let err = read_dir(tmp.path()).unwrap_err().to_string();
    assert!(err.contains("results.json"), "{err}");
    assert!(err.contains("measured_p999_seconds"), "{err}");
    assert!(err.contains("schema_version 4"), "{err}");
}

#[test]
fn a_missing_optional_field_is_refused_not_read_as_absent() {
    // `current_ttl` may be null, but it must be there: a dropped key is not "no current TTL".
    let tmp = doctored("ttl-billing", "results.json", |t| {
        let mut v: serde_json::Value = serde_json::from_str(t).unwrap();
        v.as_object_mut().unwrap().remove("current_ttl");
        serde_json::to_string_pretty(&v).unwrap()
    });
    let err = read_dir(tmp.path()).unwrap_err().to_string();
    assert!(err.contains("missing field `current_ttl`"), "{err}");
}

#[test]
fn a_dropped_csv_column_is_refused() {
    let tmp = doctored("simulate", "summary.csv", |t| {
        let column = t
            .lines()
            .next()
            .and_then(|h| h.split(',').position(|c| c == "runtime_p99_s"))
            .expect("summary.csv has a runtime_p99_s column");
        t.lines()
            .map(|l| {
                let mut cells: Vec<&str> = l.split(',').collect();
                cells.remove(column);
                cells.join(",") + "\n"
            })
            .collect()
    });
    let err = read_dir(tmp.path()).unwrap_err().to_string();
    assert!(err.contains("summary.csv"), "{err}");
    assert!(err.contains("runtime_p99_s"), "{err}");
}

#[test]
fn another_schema_version_is_refused() {
    let tmp = doctored("bench", "manifest.json", |t| {
        t.replace("\"schema_version\": 4", "\"schema_version\": 5")
    });
    let err = read_dir(tmp.path()).unwrap_err();
    assert!(matches!(err, RecordError::Version { .. }), "{err}");
    let err = err.to_string();
    assert!(err.contains("manifest.json: schema_version 5"), "{err}");
    assert!(err.contains("reads schema_version 4"), "{err}");
    assert!(err.contains("newer lockbench"), "{err}");
    // A directory of the layout before merged simulations said their shards (schema_version 3).
    let tmp = doctored("bench", "manifest.json", |t| {
        t.replace("\"schema_version\": 4", "\"schema_version\": 3")
    });
    let err = read_dir(tmp.path()).unwrap_err().to_string();
    assert!(err.contains("schema_version 3"), "{err}");
    assert!(err.contains("older lockbench"), "{err}");
    let tmp = doctored("bench", "manifest.json", |t| {
        t.replace("\"schema_version\": 4,", "")
    });
    let err = read_dir(tmp.path()).unwrap_err().to_string();
    assert!(err.contains("schema_version missing"), "{err}");
}

#[test]
fn a_negative_duration_is_refused() {
    let tmp = doctored("ttl-billing", "results.json", |t| {
        t.replacen("\"alert_hold_s\": ", "\"alert_hold_s\": -", 1)
    });
    let err = read_dir(tmp.path()).unwrap_err().to_string();
    assert!(err.contains("alert_hold_s"), "{err}");
    assert!(err.contains("not a duration"), "{err}");
}
