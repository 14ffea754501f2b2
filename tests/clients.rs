//! `lockbench clients`: the shipped adapters listed with their pinned versions, and `clients
//! check` against the real servers: a shipped adapter passes, a broken one fails in one line, a
//! bad name is refused with exit 2. The libraries come from `scripts/clients.sh up`.

mod common;

use common::{CONFIG, lockbench, own_adapter, refused};

#[test]
fn the_shipped_adapters_are_listed_with_their_pinned_versions() {
    let out = lockbench().arg("clients").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for (name, version) in [
        ("redis-py", "8.1.0"),
        ("python-redis-lock", "4.0.1"),
        ("pottery", "3.0.1"),
        ("kazoo", "2.11.0"),
        ("node-redlock", "5.0.0-beta.2"),
        ("curator", "5.4.0"),
        ("etcd-go", "3.4.23"),
        ("redis-semaphore", "5.8.0"),
        ("tooz", "9.1.0"),
    ] {
        let line = text
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no {name} in {text}"));
        assert!(line.contains(version), "{line}");
        assert!(
            line.ends_with("yes"),
            "{name} is not installed: scripts/clients.sh up installs it ({line})"
        );
    }
}

#[test]
fn a_shipped_adapter_passes_the_check_and_a_broken_one_fails_in_one_line() {
    let out = lockbench()
        .args(["clients", "check", "--config", CONFIG, "kazoo"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{} (servers: scripts/services.sh up; libraries: scripts/clients.sh up)",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.starts_with("kazoo: passes the adapter protocol (kazoo 2.11.0 on zookeeper"),
        "{stdout}"
    );

    // The broken adapter (wall-clock stamps), run by the project's interpreter.
    let dir = tempfile::tempdir().unwrap();
    let wrapper = own_adapter(
        dir.path(),
        "wall-clock-adapter",
        "clients/tests/adapters/wall_clock.py",
    );
    let wrapper = wrapper.as_str();
    let out = lockbench()
        .args([
            "clients",
            "check",
            "--config",
            CONFIG,
            "--backend",
            "redis",
            wrapper,
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("fails the adapter protocol at \"acquire a free key\"")
            && stderr.contains("CLOCK_MONOTONIC"),
        "{stderr}"
    );

    // A user's adapter needs its backend named.
    refused(
        &["clients", "check", "--config", CONFIG, wrapper],
        &["--backend", "is not a shipped adapter"],
    );
}

#[test]
fn an_unknown_adapter_is_refused_naming_the_shipped_ones() {
    refused(
        &["clients", "check", "--config", CONFIG, "jedis"],
        &[
            "unknown client \"jedis\"",
            "redis-py, python-redis-lock, redis-semaphore, pottery, node-redlock, kazoo, curator, etcd-go, tooz",
        ],
    );
}
