//! The fault-lab scenarios the decision rules cite, against the real local servers
//! (scripts/services.sh up), each with its positive controls: a crash frees the lock (measured
//! per backend) and work that outlives its holder overlaps; a vanished host's session lock
//! outlives a 60 s wait under Linux's default keepalive and is freed within the per-connection
//! keepalive's bound; a failover loses the lock unless the
//! acquisition waited for the replica; an outage overlaps only a worker that runs without the
//! lock; a Redlock client that starts late overlaps unless it checks the validity left. Every run
//! leaves nothing behind.

mod common;

use common::lab::{assert_left_nothing, cell, faults, n};

#[test]
fn a_crashed_holder_frees_its_lock_per_backend_and_work_that_outlives_it_overlaps() {
    let (record, pid) = faults(&[
        "--scenario",
        "crash/holder-killed",
        "--scenario",
        "crash/work-survives",
        "--trials",
        "2",
        "--ttl",
        "1s",
    ]);
    assert!(record["skipped"].as_array().unwrap().is_empty(), "{record}");
    for backend in [
        "redis",
        "redlock",
        "pg-session",
        "pg-xact",
        "etcd",
        "zookeeper",
    ] {
        let killed = cell(&record, "crash/holder-killed", backend);
        assert_eq!(n(&killed["trials_with_overlap"]), 0, "{backend}: {killed}");
        assert_eq!(n(&killed["contender_timed_out"]), 0, "{backend}: {killed}");
        let recovery = killed["recovery_max_s"].as_f64().unwrap();
        let ttl = killed["granted_ttl_s"].as_f64().unwrap();
        match backend {
            // The session ends with the process: the server frees the lock at once.
            "pg-session" | "pg-xact" => assert!(recovery < 0.5, "{backend}: {killed}"),
            // A lease or a key outlives its dead holder by its TTL, not much more.
            _ => assert!(
                recovery > ttl * 0.5 && recovery < ttl + 2.5,
                "{backend}: {killed}"
            ),
        }
        let survives = cell(&record, "crash/work-survives", backend);
        assert_eq!(
            n(&survives["trials_with_overlap"]),
            2,
            "{backend}: {survives}"
        );
        assert_eq!(survives["expected"], "overlap");
        // Where there is a token, the fence refuses what the surviving job writes.
        if backend != "redlock" {
            assert_eq!(
                survives["stale_rejected_by_fence"], survives["stale_writes"],
                "{backend}: {survives}"
            );
        }
    }
    assert_left_nothing(&record, pid);
}

#[test]
fn a_vanished_host_holds_a_session_lock_until_the_keepalive_gives_up_and_a_lease_for_its_ttl() {
    let (record, pid) = faults(&[
        "--scenario",
        "crash/host-vanished",
        "--scenario",
        "crash/host-vanished-keepalive",
        "--trials",
        "2",
        "--ttl",
        "1s",
    ]);
    assert!(record["skipped"].as_array().unwrap().is_empty(), "{record}");
    // A key, a lease or a session timeout expires by the server's clock whatever the holder's
    // host does: the next worker waits what was left of it, as after a kill.
    for backend in ["redis", "redlock", "etcd", "zookeeper"] {
        let vanished = cell(&record, "crash/host-vanished", backend);
        assert_eq!(n(&vanished["trials"]), 2, "{backend}: {vanished}");
        assert_eq!(
            n(&vanished["trials_with_overlap"]),
            0,
            "{backend}: {vanished}"
        );
        assert_eq!(
            n(&vanished["contender_timed_out"]),
            0,
            "{backend}: {vanished}"
        );
        let recovery = vanished["recovery_max_s"].as_f64().unwrap();
        let ttl = vanished["granted_ttl_s"].as_f64().unwrap();
        assert!(
            recovery > ttl * 0.5 && recovery < ttl + 2.5,
            "{backend}: {vanished}"
        );
    }
    for backend in ["pg-session", "pg-xact"] {
        // The positive control: with Linux's default keepalive the server keeps the silent
        // session, and the lock, past the whole wait (one trial: the same two-hour timer).
        let defaults = cell(&record, "crash/host-vanished", backend);
        assert_eq!(n(&defaults["trials"]), 1, "{backend}: {defaults}");
        assert_eq!(
            n(&defaults["contender_timed_out"]),
            1,
            "{backend}: {defaults}"
        );
        assert_eq!(
            n(&defaults["trials_with_overlap"]),
            0,
            "{backend}: {defaults}"
        );
        assert!(
            defaults["not_granted_within_s"].as_f64().unwrap() >= 60.0,
            "{backend}: {defaults}"
        );
        // The per-connection keepalive (idle 1 s, interval 1 s, 2 probes) ends the session
        // within its 3 s bound, and the next worker is granted.
        let kept = cell(&record, "crash/host-vanished-keepalive", backend);
        assert_eq!(n(&kept["trials"]), 2, "{backend}: {kept}");
        assert_eq!(n(&kept["contender_timed_out"]), 0, "{backend}: {kept}");
        assert_eq!(n(&kept["trials_with_overlap"]), 0, "{backend}: {kept}");
        let freed = kept["recovery_max_s"].as_f64().unwrap();
        assert!(freed > 1.0 && freed < 4.5, "{backend}: {kept}");
    }
    assert_left_nothing(&record, pid);
}

#[test]
fn a_failover_hands_the_lock_on_unless_the_acquisition_waited_for_the_replica() {
    let (record, pid) = faults(&[
        "--scenario",
        "failover",
        "--trials",
        "3",
        "--ttl",
        "1s",
        "--backend",
        "redis",
    ]);
    let lost = cell(&record, "failover/no-wait", "redis");
    assert_eq!(n(&lost["trials_with_overlap"]), 3, "{lost}");
    assert_eq!(lost["expected"], "overlap");
    // The promoted replica never saw the counter either: the fence lets the stale writes in.
    assert_eq!(n(&lost["stale_rejected_by_fence"]), 0, "{lost}");
    // The contender is granted as soon as the replica is promoted.
    assert!(lost["recovery_max_s"].as_f64().unwrap() < 0.5, "{lost}");
    let kept = cell(&record, "failover/wait", "redis");
    assert_eq!(n(&kept["trials_with_overlap"]), 0, "{kept}");
    assert_eq!(n(&kept["stale_writes"]), 0, "{kept}");
    // The replica had the key: the contender waited for its TTL.
    assert!(kept["recovery_p50_s"].as_f64().unwrap() > 0.3, "{kept}");
    assert_left_nothing(&record, pid);
}

#[test]
fn an_outage_overlaps_only_a_worker_that_runs_without_the_lock() {
    // The fair queue's first wait subscribes: that too fails within the operation timeout.
    let (record, pid) = faults(&[
        "--scenario",
        "outage",
        "--trials",
        "2",
        "--ttl",
        "1s",
        "--backend",
        "redis",
        "--backend",
        "redis-fair",
    ]);
    for backend in ["redis", "redis-fair"] {
        let skip = cell(&record, "outage/skip", backend);
        assert_eq!(n(&skip["trials_with_overlap"]), 0, "{skip}");
        assert_eq!(
            n(&skip["contender_timed_out"]),
            2,
            "every run missed: {skip}"
        );
        let queue = cell(&record, "outage/queue", backend);
        assert_eq!(n(&queue["trials_with_overlap"]), 0, "{queue}");
        assert_eq!(
            n(&queue["contender_timed_out"]),
            0,
            "every run ran, late: {queue}"
        );
        assert!(queue["recovery_p50_s"].as_f64().unwrap() > 0.2, "{queue}");
        let unlocked = cell(&record, "outage/run-unlocked", backend);
        assert_eq!(n(&unlocked["trials_with_overlap"]), 2, "{unlocked}");
    }
    assert_left_nothing(&record, pid);
}

#[test]
fn a_redlock_client_that_starts_late_overlaps_unless_it_checks_the_validity_left() {
    let (record, pid) = faults(&[
        "--scenario",
        "redlock/late-start",
        "--scenario",
        "redlock/late-start-checked",
        "--trials",
        "3",
        "--ttl",
        "1s",
    ]);
    let late = cell(&record, "redlock/late-start", "redlock");
    assert_eq!(n(&late["trials_with_overlap"]), 3, "{late}");
    // It returned with little of its 400 ms left.
    assert!(late["granted_ttl_s"].as_f64().unwrap() < 0.25, "{late}");
    let checked = cell(&record, "redlock/late-start-checked", "redlock");
    assert_eq!(n(&checked["trials_with_overlap"]), 0, "{checked}");
    assert_eq!(n(&checked["stale_writes"]), 0, "{checked}");
    assert_left_nothing(&record, pid);
}
