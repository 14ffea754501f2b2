//! Backends and fault variants are types (`lockbench_core::BackendId`, `BackendKind`, `Scenario`,
//! `Variant`), strings only at the serde boundary and in what lockbench prints. This test holds
//! it: outside the two files that define the names (core/src/backend.rs and core/src/fault.rs),
//! no source compares a string with a backend's name, a scenario's, or a `scenario/variant`
//! label: no `== "redis"`, no `"pg-session" =>` match arm, no `starts_with("restart/")`. A new
//! backend or variant then reaches every rule and section through the compiler, not through a
//! string somebody must remember. Comments and `#[cfg(test)]` modules are left out (a test may
//! spell a name to check it). Nor does any source compare an identity through its rendered name
//! (`a.label() == b.label()`, `x.name() == name`) outside the functions that parse a name.

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

/// Every code line of the sources under `dirs` (the definitions left out) for which `hit` holds,
/// as `file:line: code`.
fn code_lines_where(dirs: &[&str], hit: impl Fn(&str) -> bool) -> Vec<String> {
    let mut files = Vec::new();
    for dir in dirs {
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
            if hit(&line) {
                found.push(format!("{relative}:{number}: {}", line.trim()));
            }
        }
    }
    found
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
    let found = code_lines_where(&SOURCES, |line| names.iter().any(|n| compares(line, n)));
    assert!(
        found.is_empty(),
        "a backend or fault variant compared as a string (match on BackendKind, BackendId or Variant instead):\n{}",
        found.join("\n")
    );
}

/// A comparison through a rendered name (`a.label() == b.label()`, `x.name() == name`): the
/// identity round-tripped through its string, which the compiler cannot follow either. Allowed
/// only where a name is parsed (`Self::ALL.into_iter().find(|k| k.name() == name)`).
fn round_trips(line: &str) -> bool {
    let rendered = [".name()", ".label()"];
    let compared = rendered.iter().any(|r| {
        [
            format!("{r} =="),
            format!("{r} !="),
            format!("{r}.starts_with("),
        ]
        .iter()
        .any(|p| line.contains(p.as_str()))
            || ["== ", "!= "].iter().any(|op| {
                line.split(op).skip(1).any(|rhs| {
                    let operand = rhs
                        .split([' ', '&', '|', ',', ';', '{'])
                        .next()
                        .unwrap_or("");
                    operand.contains(r)
                })
            })
    });
    compared && !line.contains("ALL.into_iter()")
}

#[test]
fn no_identity_is_compared_through_its_rendered_name() {
    let dirs: Vec<&str> = SOURCES.iter().copied().chain(["clients/src"]).collect();
    let found = code_lines_where(&dirs, round_trips);
    assert!(
        found.is_empty(),
        "an identity compared through its rendered name (compare the typed values; parse a name where it comes in):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_round_trip_check_sees_what_it_must_refuse() {
    for line in [
        "g[0].2.label() == config.label() && !own_servers(g[0].1, g[0].2.kind)",
        "let named_alone = |v: &Variant| args.scenarios.iter().any(|n| *n == v.label());",
        "if description.backend != config.kind.name() {",
        ".filter(|c| c.client.as_ref().is_some_and(|u| u.name.name() == name))",
    ] {
        assert!(round_trips(line), "{line}");
    }
    for line in [
        "Self::ALL.into_iter().find(|k| k.name() == name)",
        "if lockbench_core::BackendKind::parse(&description.backend) != Some(config.kind) {",
        r#"format!("{} on {}", v.label(), c.name())"#,
    ] {
        assert!(!round_trips(line), "{line}");
    }
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

/// The variants of `pub enum NAME` in `file`, as written (the identifiers on their own lines).
fn variants_of(file: &str, name: &str) -> Vec<String> {
    let text = std::fs::read_to_string(Path::new(WORKSPACE).join(file)).unwrap();
    let start = text
        .find(&format!("pub enum {name} {{"))
        .unwrap_or_else(|| panic!("no `pub enum {name}` in {file}"));
    let body = &text[start..];
    let body = &body[body.find('{').unwrap() + 1..body.find("\n}").unwrap()];
    body.lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("//") && !l.starts_with("#[") && !l.is_empty())
        .filter_map(|l| {
            let ident = l.trim_end_matches(',');
            ident
                .chars()
                .all(|c| c.is_ascii_alphanumeric())
                .then(|| ident.to_string())
        })
        .collect()
}

#[test]
fn every_backend_and_service_is_in_its_all_list() {
    // `ALL` is what the commands, the checklist test and the decision's candidates iterate: a
    // kind missing from it would be invisible to all of them, and the compiler does not see it.
    let kinds: Vec<String> = lockbench_core::BackendKind::ALL
        .iter()
        .map(|k| format!("{k:?}"))
        .collect();
    let written = variants_of("core/src/backend.rs", "BackendKind");
    assert_eq!(written.len(), 7, "the enum was not read: {written:?}");
    assert_eq!(
        {
            let mut w = written.clone();
            w.sort();
            w
        },
        {
            let mut k = kinds.clone();
            k.sort();
            k
        },
        "BackendKind::ALL ({kinds:?}) must list every variant of the enum ({written:?})"
    );
    let services: Vec<String> = lockbench_core::Service::ALL
        .iter()
        .map(|s| format!("{s:?}"))
        .collect();
    let mut written = variants_of("core/src/backend.rs", "Service");
    written.sort();
    let mut listed = services.clone();
    listed.sort();
    assert_eq!(written, listed, "Service::ALL must list every variant");
}
