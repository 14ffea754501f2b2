//! Backends and fault variants are types (`lockbench_core::BackendId`, `BackendKind`, `Scenario`,
//! `Variant`), strings only at the serde boundary and in what lockbench prints. This test holds
//! it: outside the two files that define the names (core/src/backend.rs and core/src/fault.rs),
//! no source compares a string with a backend's name, a scenario's, or a `scenario/variant`
//! label: no `== "redis"`, no `"pg-session" =>` match arm, no `starts_with("restart/")`. A new
//! backend or variant then reaches every rule and section through the compiler, not through a
//! string somebody must remember. Comments and `#[cfg(test)]` modules are left out (a test may
//! spell a name to check it).

use std::path::{Path, PathBuf};

/// Where the workspace is.
const WORKSPACE: &str = env!("CARGO_MANIFEST_DIR");

/// The crates whose sources are read; the names' own definitions are skipped.
const SOURCES: [&str; 9] = [
    "src",
    "core/src",
    "analysis/src",
    "decision/src",
    "faults/src",
    "bench/src",
    "replay/src",
    "locks/src",
    "workloads/src",
];
const DEFINITIONS: [&str; 2] = ["core/src/backend.rs", "core/src/fault.rs"];

/// Every name a comparison must not spell: the backends' and the scenarios' (read from the
/// definitions, so that a new one is covered as soon as it exists). A `scenario/variant` label
/// starts with a scenario's name.
fn names() -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for (file, arm) in [
        (DEFINITIONS[0], "BackendKind::"),
        (DEFINITIONS[1], "Scenario::"),
    ] {
        let text = std::fs::read_to_string(Path::new(WORKSPACE).join(file)).unwrap();
        for line in text.lines() {
            // `BackendKind::PgSession => "pg-session",` in its `name()`.
            if let Some((head, rest)) = line.trim().split_once(" => \"")
                && head.starts_with(arm)
                && let Some((name, _)) = rest.split_once('"')
            {
                names.push(name.to_string());
            }
        }
    }
    names.push("redis-fair".to_string());
    names.sort();
    names.dedup();
    names
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a file without its `#[cfg(test)]` module and its comments.
fn code(text: &str) -> Vec<(usize, String)> {
    let text = text.split("#[cfg(test)]").next().unwrap_or_default();
    text.lines()
        .enumerate()
        .map(|(i, line)| {
            let code = match line.find("//") {
                // A `//` inside a string (a URL) is not a comment.
                Some(at) if line[..at].matches('"').count() % 2 == 0 => &line[..at],
                _ => line,
            };
            (i + 1, code.to_string())
        })
        .collect()
}

/// The comparisons of `line` that spell `name` (or a label starting with it).
fn compares(line: &str, name: &str) -> bool {
    let quoted = format!("\"{name}\"");
    let prefix = format!("\"{name}/");
    [
        format!("== {quoted}"),
        format!("!= {quoted}"),
        format!("{quoted} =>"),
        format!("{quoted} |"),
        format!("| {quoted}"),
        format!("starts_with({quoted}"),
        format!("starts_with({prefix}"),
        format!("Some({quoted}) =>"),
    ]
    .iter()
    .any(|p| line.contains(p.as_str()))
        || (line.contains(&prefix) && (line.contains("==") || line.contains("=>")))
}

#[test]
fn no_backend_or_variant_is_compared_as_a_string() {
    let names = names();
    assert!(
        names.len() == 21,
        "the names were not read from the definitions: {names:?}"
    );
    let mut files = Vec::new();
    for dir in SOURCES {
        rust_files(&Path::new(WORKSPACE).join(dir), &mut files);
    }
    let mut found = Vec::new();
    for file in files {
        let relative = file.strip_prefix(WORKSPACE).unwrap().display().to_string();
        if DEFINITIONS.contains(&relative.as_str()) {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        for (number, line) in code(&text) {
            for name in &names {
                if compares(&line, name) {
                    found.push(format!("{relative}:{number}: {}", line.trim()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "a backend or fault variant compared as a string (match on BackendKind, BackendId or Variant instead):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_check_sees_a_comparison_it_must_refuse() {
    // Positive control: each form the check looks for is caught, and a name in a sentence is not.
    for line in [
        r#"if r.backend == "memory" {"#,
        r#"Some("pg-session") => vec!["#,
        r#"("redis" | "redlock", n) => 1,"#,
        r#".any(|p| c.label().starts_with("restart/"))"#,
        r#""pause/naive" => (Mitigation::Heartbeat, "pause/heartbeat-short"),"#,
    ] {
        let hit = ["memory", "pg-session", "redis", "restart", "pause"]
            .iter()
            .any(|n| compares(line, n));
        assert!(hit, "{line}");
    }
    assert!(!compares(
        r#"format!("the redis server at {url}")"#,
        "redis"
    ));
    assert!(!compares(r#"Some(Service::Etcd) => "etcd","#, "etcd"));
}
