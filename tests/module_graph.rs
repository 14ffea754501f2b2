//! No module imports a module that imports it back (docs/ARCHITECTURE.md, "Inside a crate:
//! imports only point down"), in every crate of the workspace and in the binary.
//!
//! Each crate's module graph is read from its sources, std only: a module per `.rs` file (and per
//! inline `mod name { ... }`), found from `src/lib.rs` or `src/main.rs` through the `mod`
//! declarations. A module refers to another when its code names it: `crate::b`, `super::b`,
//! `self::b`, a child's own name, in `use` trees and in paths anywhere in the code, a name the
//! target module re-exports resolved to where it comes from. Comments, strings and items under
//! `#[cfg(test)]` are left out: a test module may use whatever it tests.
//!
//! The circles that matter are between siblings, so references are read at that level: between
//! the top-level modules of a crate, and between the children of one directory module (a
//! reference from deep inside `a/` to deep inside `b/` is an edge `a -> b`). A directory module's
//! own file is a node of its level too: a child using its parent's items (`super::Item`) is an
//! edge child -> parent, a parent using a child's (calls, `use` and `pub use` alike) parent ->
//! child; declaring `mod child` is not a reference. The crate root is no node: it is the crate's
//! front door, re-exporting its modules and holding the error type they all return.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where the workspace is.
const WORKSPACE: &str = env!("CARGO_MANIFEST_DIR");

/// At most this many circles are listed per crate (a tangle has many; the first ones say enough).
const MAX_CYCLES: usize = 200;

/// Bound on following re-exports (`pub use a::X` in `b`, `b::X` used elsewhere).
const MAX_REEXPORT_HOPS: usize = 8;

/// A module's path from its crate's root (`[]` is the root).
type ModPath = Vec<String>;

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    /// `::`
    PathSep,
    Punct(char),
}

/// A token and its line.
#[derive(Clone, Debug)]
struct Token {
    tok: Tok,
    line: usize,
}

/// The source's tokens, without comments, string and character literals or lifetimes.
fn tokenize(source: &str) -> Vec<Token> {
    let chars: Vec<char> = source.chars().collect();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && at(i + 1) == '/' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == '*' {
            // Block comments nest.
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if chars[i] == '\n' {
                        line += 1;
                    }
                    i += 1;
                }
            }
        } else if let Some(hashes) = raw_string_start(&chars, i) {
            // r"..", r#".."#, br"..", cr"..": up to the quote and as many hashes.
            while chars[i] != '"' {
                i += 1;
            }
            i += 1;
            loop {
                if i >= chars.len() {
                    break;
                }
                if chars[i] == '"' && (0..hashes).all(|k| at(i + 1 + k) == '#') {
                    i += 1 + hashes;
                    break;
                }
                if chars[i] == '\n' {
                    line += 1;
                }
                i += 1;
            }
        } else if c == '"' || ((c == 'b' || c == 'c') && at(i + 1) == '"') {
            if c != '"' {
                i += 1;
            }
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    i += 1;
                }
                if at(i) == '\n' {
                    line += 1;
                }
                i += 1;
            }
            i += 1;
        } else if c == '\'' || (c == 'b' && at(i + 1) == '\'') {
            let start = if c == 'b' { i + 1 } else { i };
            if at(start + 1) == '\\' {
                // An escaped character literal: '\n', '\u{..}', '\''.
                i = start + 2;
                i += 1;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if at(start + 2) == '\'' {
                i = start + 3;
            } else {
                // A lifetime or a label: the quote alone goes, the name stays an identifier.
                i = start + 1;
            }
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let mut word: String = chars[start..i].iter().collect();
            // A raw identifier, r#type.
            if word == "r" && at(i) == '#' && (at(i + 1).is_alphabetic() || at(i + 1) == '_') {
                let begin = i + 1;
                i = begin;
                while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
                word = chars[begin..i].iter().collect();
            }
            out.push(Token {
                tok: Tok::Ident(word),
                line,
            });
        } else if c.is_ascii_digit() {
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
        } else if c == ':' && at(i + 1) == ':' {
            out.push(Token {
                tok: Tok::PathSep,
                line,
            });
            i += 2;
        } else {
            out.push(Token {
                tok: Tok::Punct(c),
                line,
            });
            i += 1;
        }
    }
    out
}

/// The number of hashes when a raw string starts at `i`.
fn raw_string_start(chars: &[char], i: usize) -> Option<usize> {
    let previous_is_ident = i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
    if previous_is_ident {
        return None;
    }
    let mut j = i;
    if matches!(chars.get(j), Some('b' | 'c')) {
        j += 1;
    }
    if chars.get(j) != Some(&'r') {
        return None;
    }
    j += 1;
    let mut hashes = 0;
    while chars.get(j) == Some(&'#') {
        hashes += 1;
        j += 1;
    }
    (chars.get(j) == Some(&'"')).then_some(hashes)
}

/// The tokens without the items under `#[cfg(test)]` (the attribute, the attributes after it,
/// and the item: up to its `;` or through its `{ ... }` block).
fn without_test_items(tokens: Vec<Token>) -> Vec<Token> {
    let is = |t: Option<&Token>, tok: &Tok| t.is_some_and(|t| &t.tok == tok);
    let ident = |s: &str| Tok::Ident(s.to_string());
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let cfg_test = is(tokens.get(i), &Tok::Punct('#'))
            && is(tokens.get(i + 1), &Tok::Punct('['))
            && is(tokens.get(i + 2), &ident("cfg"))
            && is(tokens.get(i + 3), &Tok::Punct('('))
            && is(tokens.get(i + 4), &ident("test"))
            && is(tokens.get(i + 5), &Tok::Punct(')'))
            && is(tokens.get(i + 6), &Tok::Punct(']'));
        if !cfg_test {
            out.push(tokens[i].clone());
            i += 1;
            continue;
        }
        i += 7;
        // The item: nesting of (), [] and {} counted; it ends at a `;` outside any, or with
        // its first top-level block.
        let mut depth = 0usize;
        while i < tokens.len() {
            match tokens[i].tok {
                Tok::Punct('(' | '[' | '{') => depth += 1,
                Tok::Punct(')' | ']') => depth = depth.saturating_sub(1),
                Tok::Punct('}') => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        i += 1;
                        break;
                    }
                }
                Tok::Punct(';') if depth == 0 => {
                    i += 1;
                    break;
                }
                _ => {}
            }
            i += 1;
        }
    }
    out
}

/// A path as written, with where: `crate::a::B` in module `module`, line `line`.
#[derive(Clone, Debug)]
struct Written {
    module: ModPath,
    segments: Vec<String>,
    line: usize,
    /// From a `use` (with the name it brings into `module`, if not a glob).
    imports: Option<String>,
}

/// What one file says: the modules it declares (file or inline) and the paths it writes.
#[derive(Default)]
struct FileFacts {
    /// (declaring module, child name, inline).
    declared: Vec<(ModPath, String, bool)>,
    written: Vec<Written>,
}

fn ident(t: Option<&Token>) -> Option<&str> {
    match t {
        Some(Token {
            tok: Tok::Ident(s), ..
        }) => Some(s),
        _ => None,
    }
}

fn punct(t: Option<&Token>, c: char) -> bool {
    matches!(t, Some(Token { tok: Tok::Punct(p), .. }) if *p == c)
}

/// Reads one file of module `module`.
fn file_facts(source: &str, module: &ModPath) -> FileFacts {
    let tokens = without_test_items(tokenize(source));
    let mut facts = FileFacts::default();
    // Inline modules: (module path, brace depth at which its block closes).
    let mut stack: Vec<(ModPath, usize)> = vec![(module.clone(), 0)];
    let mut depth = 0usize;
    let mut i = 0;
    while i < tokens.len() {
        let current = stack.last().expect("the file's module").0.clone();
        match &tokens[i].tok {
            Tok::Punct('{') => {
                depth += 1;
                i += 1;
            }
            Tok::Punct('}') => {
                if stack.len() > 1 && stack.last().is_some_and(|(_, d)| *d == depth) {
                    stack.pop();
                }
                depth = depth.saturating_sub(1);
                i += 1;
            }
            Tok::Ident(word) if word == "mod" => {
                let Some(name) = ident(tokens.get(i + 1)) else {
                    i += 1;
                    continue;
                };
                if punct(tokens.get(i + 2), ';') {
                    facts.declared.push((current, name.to_string(), false));
                    i += 3;
                } else if punct(tokens.get(i + 2), '{') {
                    facts
                        .declared
                        .push((current.clone(), name.to_string(), true));
                    depth += 1;
                    let mut inner = current;
                    inner.push(name.to_string());
                    stack.push((inner, depth));
                    i += 3;
                } else {
                    i += 1;
                }
            }
            Tok::Ident(word) if word == "use" => {
                let mut j = i + 1;
                let mut paths = Vec::new();
                use_tree(&tokens, &mut j, Vec::new(), &mut paths);
                if punct(tokens.get(j), ';') {
                    j += 1;
                }
                for (segments, name) in paths {
                    facts.written.push(Written {
                        module: current.clone(),
                        segments,
                        line: tokens[i].line,
                        imports: name,
                    });
                }
                i = j;
            }
            Tok::Ident(first) => {
                let after_sep = i > 0 && tokens[i - 1].tok == Tok::PathSep;
                if after_sep || tokens.get(i + 1).map(|t| &t.tok) != Some(&Tok::PathSep) {
                    i += 1;
                    continue;
                }
                let mut segments = vec![first.clone()];
                let mut j = i + 1;
                while tokens.get(j).map(|t| &t.tok) == Some(&Tok::PathSep) {
                    match ident(tokens.get(j + 1)) {
                        Some(next) => segments.push(next.to_string()),
                        None => break,
                    }
                    j += 2;
                }
                facts.written.push(Written {
                    module: current,
                    segments,
                    line: tokens[i].line,
                    imports: None,
                });
                i = j;
            }
            _ => i += 1,
        }
    }
    facts
}

/// Reads one `use` tree from `tokens[*j]` on (a path, then a `{ ... }` group, a glob or an
/// `as`), pushing every full path with the name it brings in (`None` for a glob).
fn use_tree(
    tokens: &[Token],
    j: &mut usize,
    prefix: Vec<String>,
    out: &mut Vec<(Vec<String>, Option<String>)>,
) {
    let mut path = prefix;
    loop {
        match tokens.get(*j).map(|t| &t.tok) {
            Some(Tok::PathSep) => *j += 1,
            Some(Tok::Ident(s)) if s != "as" => {
                path.push(s.clone());
                *j += 1;
            }
            Some(Tok::Punct('*')) => {
                *j += 1;
                out.push((path, None));
                return;
            }
            Some(Tok::Punct('{')) => {
                *j += 1;
                while *j < tokens.len() {
                    if punct(tokens.get(*j), '}') {
                        *j += 1;
                        return;
                    }
                    use_tree(tokens, j, path.clone(), out);
                    if punct(tokens.get(*j), ',') {
                        *j += 1;
                    } else if !punct(tokens.get(*j), '}') {
                        return;
                    }
                }
                return;
            }
            _ => break,
        }
    }
    let mut name = path.last().cloned();
    if ident(tokens.get(*j)) == Some("as") {
        name = ident(tokens.get(*j + 1))
            .filter(|alias| *alias != "_")
            .map(str::to_string);
        *j += 2;
    }
    // `a::{self}` is `a`.
    if path.len() > 1 && path.last().is_some_and(|s| s == "self") {
        path.pop();
        name = path.last().cloned();
    }
    if !path.is_empty() {
        out.push((path, name));
    }
}

/// One crate's modules and what each writes.
struct Crate {
    /// Every module, with the file it is in.
    modules: BTreeMap<ModPath, PathBuf>,
    written: Vec<Written>,
    /// Module files that are declared but cannot be read.
    missing: Vec<String>,
}

/// The file of module `name` declared by module `parent` (in `parent_file`).
fn child_file(parent_file: &Path, parent_is_dir_root: bool, name: &str) -> [PathBuf; 2] {
    let dir = if parent_is_dir_root {
        parent_file
            .parent()
            .expect("a file has a directory")
            .to_path_buf()
    } else {
        parent_file.with_extension("")
    };
    [
        dir.join(format!("{name}.rs")),
        dir.join(name).join("mod.rs"),
    ]
}

/// Reads the crate whose root file is `root` (through `read`, so that a test can give sources).
fn read_crate(root: &Path, read: &dyn Fn(&Path) -> Option<String>) -> Crate {
    let mut modules = BTreeMap::new();
    let mut written = Vec::new();
    let mut missing = Vec::new();
    // (module, its file, whether its children live beside the file: lib.rs, main.rs, mod.rs).
    let mut todo: Vec<(ModPath, PathBuf, bool)> = vec![(Vec::new(), root.to_path_buf(), true)];
    while let Some((module, file, dir_root)) = todo.pop() {
        let Some(source) = read(&file) else {
            missing.push(format!("cannot read {}", file.display()));
            continue;
        };
        modules.insert(module.clone(), file.clone());
        let facts = file_facts(&source, &module);
        for (parent, name, inline) in facts.declared {
            let mut path = parent.clone();
            path.push(name.clone());
            if inline {
                modules.insert(path, file.clone());
                continue;
            }
            // A file module of an inline module lives in a directory named after it.
            let mut base = file.clone();
            let mut base_dir_root = dir_root;
            for inline_name in &parent[module.len()..] {
                let [next, _] = child_file(&base, base_dir_root, inline_name);
                base = next;
                base_dir_root = false;
            }
            let candidates = child_file(&base, base_dir_root, &name);
            let Some(found) = candidates.iter().find(|p| read(p).is_some()) else {
                missing.push(format!(
                    "{}: mod {name}: neither {} nor {} exists",
                    file.display(),
                    candidates[0].display(),
                    candidates[1].display()
                ));
                continue;
            };
            let is_mod_rs = found.file_name().is_some_and(|n| n == "mod.rs");
            todo.push((path, found.clone(), is_mod_rs));
        }
        written.extend(facts.written);
    }
    Crate {
        modules,
        written,
        missing,
    }
}

impl Crate {
    /// The absolute path `segments` means in `module`, if it starts inside this crate.
    fn absolute(&self, module: &ModPath, segments: &[String]) -> Option<Vec<String>> {
        let (first, rest) = segments.split_first()?;
        let mut base = match first.as_str() {
            "crate" => Vec::new(),
            "self" => module.clone(),
            "super" => {
                let mut base = module.clone();
                base.pop()?;
                let mut rest = rest;
                while rest.first().is_some_and(|s| s == "super") {
                    base.pop()?;
                    rest = &rest[1..];
                }
                base.extend(rest.iter().cloned());
                return Some(base);
            }
            child => {
                let mut path = module.clone();
                path.push(child.to_string());
                if !self.modules.contains_key(&path) {
                    return None;
                }
                module.clone()
            }
        };
        if !matches!(first.as_str(), "crate" | "self") {
            base.push(first.clone());
        }
        base.extend(rest.iter().cloned());
        Some(base)
    }

    /// The names each module brings in with `use`, resolved to absolute paths.
    fn imports(&self) -> BTreeMap<ModPath, BTreeMap<String, Vec<String>>> {
        let mut imports: BTreeMap<ModPath, BTreeMap<String, Vec<String>>> = BTreeMap::new();
        for w in &self.written {
            if let (Some(name), Some(path)) = (&w.imports, self.absolute(&w.module, &w.segments)) {
                imports
                    .entry(w.module.clone())
                    .or_default()
                    .insert(name.clone(), path);
            }
        }
        imports
    }

    /// The module an absolute path names (the longest module prefix, through re-exports).
    fn module_of(
        &self,
        path: &[String],
        imports: &BTreeMap<ModPath, BTreeMap<String, Vec<String>>>,
        hops: usize,
    ) -> ModPath {
        let mut module = Vec::new();
        for segment in path {
            let mut next = module.clone();
            next.push(segment.clone());
            if self.modules.contains_key(&next) {
                module = next;
                continue;
            }
            if hops < MAX_REEXPORT_HOPS
                && let Some(target) = imports.get(&module).and_then(|names| names.get(segment))
                && target.as_slice() != path
            {
                return self.module_of(target, imports, hops + 1);
            }
            break;
        }
        module
    }

    /// The references at each level: (level, from, to) with where one of them is written.
    fn edges(&self, crate_name: &str) -> BTreeMap<ModPath, BTreeMap<(String, String), String>> {
        let imports = self.imports();
        let mut levels: BTreeMap<ModPath, BTreeMap<(String, String), String>> = BTreeMap::new();
        for w in &self.written {
            let Some(path) = self.absolute(&w.module, &w.segments) else {
                continue;
            };
            let target = self.module_of(&path, &imports, 0);
            let from = &w.module;
            let common = from.iter().zip(&target).take_while(|(a, b)| a == b).count();
            let (level, a, b) = if common == from.len() && common == target.len() {
                continue;
            } else if common == target.len() {
                // An ancestor's own items: an edge from the child that holds `from`.
                (target.clone(), from[..common + 1].to_vec(), target.clone())
            } else if common == from.len() {
                (from.clone(), from.clone(), target[..common + 1].to_vec())
            } else {
                (
                    from[..common].to_vec(),
                    from[..common + 1].to_vec(),
                    target[..common + 1].to_vec(),
                )
            };
            // The crate root is no node.
            if a.is_empty() || b.is_empty() {
                continue;
            }
            let file = self
                .modules
                .get(&w.module)
                .expect("a written path's module");
            let file = file
                .strip_prefix(WORKSPACE)
                .unwrap_or(file)
                .display()
                .to_string();
            levels
                .entry(level)
                .or_default()
                .entry((a.join("::"), b.join("::")))
                .or_insert_with(|| {
                    format!(
                        "{crate_name}: {} -> {}: {file}:{} `{}`",
                        a.join("::"),
                        b.join("::"),
                        w.line,
                        w.segments.join("::")
                    )
                });
        }
        levels
    }

    /// Every circle, as `crate: a -> b -> a`, each followed by where its references are written.
    fn cycles(&self, crate_name: &str) -> Vec<String> {
        let mut found = Vec::new();
        for edges in self.edges(crate_name).values() {
            let mut next: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
            for (a, b) in edges.keys() {
                next.entry(a).or_default().push(b);
            }
            let nodes: Vec<&str> = next.keys().copied().collect();
            // Each elementary circle once: from its smallest node, through larger ones only.
            for &start in &nodes {
                let mut path = vec![start];
                circles(start, &next, &mut path, &mut |circle| {
                    if found.len() >= MAX_CYCLES {
                        return;
                    }
                    let mut text = format!("{crate_name}: {} -> {start}", circle.join(" -> "));
                    let mut ring = circle.to_vec();
                    ring.push(start);
                    for pair in ring.windows(2) {
                        text.push_str("\n    ");
                        text.push_str(&edges[&(pair[0].to_string(), pair[1].to_string())]);
                    }
                    found.push(text);
                });
            }
        }
        found
    }
}

/// Depth-first from the last node of `path`, through nodes larger than `path[0]`, calling
/// `found` for each way back to `path[0]`.
fn circles<'a>(
    start: &'a str,
    next: &BTreeMap<&'a str, Vec<&'a str>>,
    path: &mut Vec<&'a str>,
    found: &mut dyn FnMut(&[&'a str]),
) {
    let last = *path.last().expect("a path starts somewhere");
    for &n in next.get(last).into_iter().flatten() {
        if n == start {
            found(path);
        } else if n > start && !path.contains(&n) {
            path.push(n);
            circles(start, next, path, found);
            path.pop();
        }
    }
}

/// The workspace's members (`members = [...]` in its Cargo.toml), `.` being the binary.
fn members() -> Vec<String> {
    let manifest = std::fs::read_to_string(Path::new(WORKSPACE).join("Cargo.toml"))
        .expect("the workspace's Cargo.toml");
    let line = manifest
        .lines()
        .find(|l| l.trim_start().starts_with("members"))
        .expect("a members line in the workspace's Cargo.toml");
    let list = line
        .split_once('[')
        .and_then(|(_, rest)| rest.split_once(']'))
        .expect("members = [...] on one line")
        .0;
    list.split(',')
        .map(|m| m.trim().trim_matches('"').to_string())
        .filter(|m| !m.is_empty())
        .collect()
}

fn read_file(path: &Path) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

#[test]
fn no_module_imports_a_module_that_imports_it_back() {
    let members = members();
    for expected in [
        ".",
        "core",
        "workloads",
        "decision",
        "replay",
        "faults",
        "analysis",
        "locks",
        "bench",
    ] {
        assert!(
            members.iter().any(|m| m == expected),
            "{expected} is not among the members read from Cargo.toml: {members:?}"
        );
    }
    let mut cycles = Vec::new();
    let mut missing = Vec::new();
    for member in &members {
        let dir = if member == "." {
            PathBuf::from(WORKSPACE)
        } else {
            Path::new(WORKSPACE).join(member)
        };
        let name = if member == "." {
            "src"
        } else {
            member.as_str()
        };
        let roots = [dir.join("src/lib.rs"), dir.join("src/main.rs")];
        let roots: Vec<&PathBuf> = roots.iter().filter(|p| p.is_file()).collect();
        assert!(!roots.is_empty(), "{member}: no src/lib.rs or src/main.rs");
        for root in roots {
            let krate = read_crate(root, &read_file);
            assert!(
                krate.modules.len() > 1,
                "{member}: no module found from {}",
                root.display()
            );
            cycles.extend(krate.cycles(name));
            missing.extend(krate.missing);
        }
    }
    assert!(
        cycles.is_empty() && missing.is_empty(),
        "modules that import a module that imports them back ({} circles):\n{}\n{}",
        cycles.len(),
        cycles.join("\n"),
        missing.join("\n")
    );
}

/// A crate of sources in memory.
fn fake(files: &[(&str, &str)]) -> Crate {
    let files: BTreeMap<PathBuf, String> = files
        .iter()
        .map(|(p, s)| (PathBuf::from(p), s.to_string()))
        .collect();
    read_crate(Path::new("src/lib.rs"), &|p| files.get(p).cloned())
}

#[test]
fn a_circle_is_found_at_every_level_and_named_with_where_it_is_written() {
    let krate = fake(&[
        (
            "src/lib.rs",
            "pub mod a;\nmod b;\nmod d;\npub use b::B;\npub enum Error {}\n",
        ),
        // a -> b through a re-export of the root; b -> a by a path in code.
        (
            "src/a.rs",
            "use crate::Error;\nuse crate::B;\npub struct A;\n",
        ),
        (
            "src/b.rs",
            "pub use inner::B;\nmod inner;\nfn f() { crate::a::A; }\n",
        ),
        ("src/b/inner.rs", "pub struct B;\n"),
        // d's children: x uses the parent's item, the parent uses x.
        (
            "src/d/mod.rs",
            "mod x;\nmod y;\npub struct D;\nfn g() { x::f(); }\n",
        ),
        ("src/d/x.rs", "use super::D;\npub fn f() {}\n"),
        ("src/d/y.rs", "use super::x::f;\n"),
    ]);
    let cycles = krate.cycles("fake");
    let heads: Vec<&str> = cycles.iter().map(|c| c.lines().next().unwrap()).collect();
    assert_eq!(
        heads,
        ["fake: a -> b -> a", "fake: d -> d::x -> d"],
        "{cycles:#?}"
    );
    assert!(cycles[0].contains("src/a.rs:2 `crate::B`"), "{}", cycles[0]);
    assert!(
        cycles[0].contains("src/b.rs:3 `crate::a::A`"),
        "{}",
        cycles[0]
    );
}

#[test]
fn comments_strings_and_test_items_are_no_references() {
    let krate = fake(&[
        ("src/lib.rs", "mod a;\nmod b;\n"),
        ("src/a.rs", "use crate::b::B;\n"),
        (
            "src/b.rs",
            concat!(
                "pub struct B;\n",
                "// crate::a::X\n",
                "/* crate::a /* nested */ crate::a */\n",
                "const S: &str = \"crate::a::X\";\n",
                "const R: &str = r#\"crate::a \"quoted\" \"#;\n",
                "const C: char = '\"';\n",
                "fn f<'a>(x: &'a str) -> &'a str { x }\n",
                "#[cfg(test)]\nmod tests {\n    use crate::a;\n    fn g() { crate::a::h(); }\n}\n",
                "#[cfg(test)]\nuse crate::a::Y;\n",
                "pub(crate) fn k() {}\n",
            ),
        ),
    ]);
    assert_eq!(krate.cycles("fake"), Vec::<String>::new());
    // The same crate with one reference in code: a circle.
    let krate = fake(&[
        ("src/lib.rs", "mod a;\nmod b;\n"),
        ("src/a.rs", "use crate::b::B;\npub fn h() {}\n"),
        ("src/b.rs", "pub struct B;\nfn f() { super::a::h() }\n"),
    ]);
    assert_eq!(
        krate
            .cycles("fake")
            .iter()
            .map(|c| c.lines().next().unwrap())
            .collect::<Vec<_>>(),
        ["fake: a -> b -> a"]
    );
}
