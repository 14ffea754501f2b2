//! The checklist of docs/ARCHITECTURE.md ("Adding a fault variant", and a backend), held where
//! the compiler cannot hold it: every backend has its section in lockbench.toml and its row in
//! docs/BACKENDS.md, every service a backend runs on is started, stopped and reported by
//! scripts/services.sh, and every fault variant has its paragraph in docs/FAULTS.md and a test
//! against the real servers that looks at its cell; every shipped client library has its
//! adapter, its pin and its row in docs/CLIENTS.md. A new backend, variant or client fails here
//! until each is done.

use std::path::Path;

use lockbench_core::{BackendKind, Client, Scenario, Service, Variant};

const WORKSPACE: &str = env!("CARGO_MANIFEST_DIR");

fn read(file: &str) -> String {
    std::fs::read_to_string(Path::new(WORKSPACE).join(file)).unwrap()
}

#[test]
fn every_backend_is_configured_documented_and_served() {
    let config = read("lockbench.toml");
    let configured: Vec<BackendKind> = lockbench_locks::parse_config(&config)
        .unwrap()
        .iter()
        .map(|c| c.kind)
        .collect();
    let backends = read("docs/BACKENDS.md");
    let services = read("scripts/services.sh");
    let mut missing = Vec::new();
    for kind in BackendKind::ALL {
        if !configured.contains(&kind) {
            missing.push(format!("lockbench.toml has no [backends.{kind}]"));
        }
        if !backends.contains(&format!("| `{kind}` |")) {
            missing.push(format!("docs/BACKENDS.md has no row for `{kind}`"));
        }
    }
    for service in Service::ALL {
        let name = service.name();
        for (what, needle) in [
            ("starts it", format!("{name}_up")),
            ("reports it", format!("report {name} ")),
        ] {
            if !services.contains(&needle) {
                missing.push(format!(
                    "scripts/services.sh never {what} ({needle}) for {name}"
                ));
            }
        }
    }
    // Every networked backend runs on a service services.sh knows.
    for kind in BackendKind::ALL {
        if kind != BackendKind::Memory && kind.service().is_none() {
            missing.push(format!("{kind} names no service"));
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

#[test]
fn every_fault_variant_is_documented_and_tested_against_the_real_servers() {
    let docs = read("docs/FAULTS.md");
    let tests = ["tests/faults.rs", "tests/faults_decision.rs"]
        .map(read)
        .join("\n");
    let mut missing = Vec::new();
    for v in Variant::ALL {
        let label = v.label();
        if !docs.contains(&format!("`{label}`")) {
            missing.push(format!("docs/FAULTS.md does not describe `{label}`"));
        }
        // A test that reads the variant's cell (its positive control or its prediction).
        if !tests.contains(&format!("\"{label}\"")) {
            missing.push(format!(
                "no test in tests/faults*.rs looks at the cell of {label}"
            ));
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

#[test]
fn faults_help_names_every_scenario() {
    let cli = read("src/cli.rs");
    // The `--scenario` flag's doc comment, joined across its lines.
    let help: String = cli
        .lines()
        .skip_while(|l| !l.contains("/// Scenario ("))
        .take_while(|l| l.trim_start().starts_with("///"))
        .collect::<Vec<_>>()
        .join(" ");
    let missing: Vec<&str> = Scenario::ALL
        .iter()
        .map(|s| s.name())
        .filter(|name| !help.contains(name))
        .collect();
    assert!(
        missing.is_empty(),
        "faults --scenario's help does not name {missing:?}: {help}"
    );
}

#[test]
fn every_client_library_has_its_adapter_its_pin_and_its_row() {
    let clients = read("docs/CLIENTS.md");
    let mut missing = Vec::new();
    for client in Client::ALL {
        let shipped = lockbench_clients::programs::shipped(client).expect("a shipped adapter");
        if !Path::new(WORKSPACE).join(shipped.script).is_file() {
            missing.push(format!("{client}: no adapter at {}", shipped.script));
        }
        if lockbench_clients::programs::pinned(client).is_none() {
            missing.push(format!(
                "{client}: its package {} is not pinned",
                shipped.package
            ));
        }
        if !clients.contains(&format!("| `{client}` |")) {
            missing.push(format!("docs/CLIENTS.md has no row for `{client}`"));
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}
