//! The engine recipes in deploy/ and the Dockerfile: every Kubernetes document parses and says
//! what the shard contract needs, a shard started the way the Indexed Job starts it runs as that
//! shard, the ConfigMap carries the shipped spec, and the image builds the README's binary.
//!
//! The manifests are rendered first, as a user renders them (`deploy/kubernetes/render.sh`, run id
//! and start time filled in), then read by a YAML parser (yaml-rust2, YAML 1.2), scalars typed as
//! YAML types them.
//! scripts/test.sh validates the same rendered files against the Kubernetes schemas.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use yaml_rust2::{Yaml, YamlLoader};

mod common;
use common::{assert_refused, lockbench};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn read(path: &str) -> String {
    std::fs::read_to_string(Path::new(ROOT).join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The run id the recipe is rendered with here.
const RUN_ID: &str = "test-run-7";

/// The recipe rendered by `deploy/kubernetes/render.sh all` into a new directory.
fn rendered() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new("bash")
        .arg(format!("{ROOT}/deploy/kubernetes/render.sh"))
        .args(["all", "--run-id", RUN_ID, "--start-in", "5m", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "render.sh: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir
}

/// Every document of every rendered manifest, with its file.
fn documents() -> Vec<(String, Value)> {
    let rendered = rendered();
    let dir = rendered.path();
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    assert!(files.len() >= 4, "manifests in {}", dir.display());
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        assert!(
            !text.contains("@RUN_ID@") && !text.contains("@START_AT@"),
            "{}: a placeholder left unrendered",
            file.display()
        );
    }
    let mut out = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let name = file.file_name().unwrap().to_string_lossy().to_string();
        let docs = YamlLoader::load_from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        for doc in &docs {
            out.push((name.clone(), json(doc)));
        }
    }
    out
}

/// A YAML document as JSON, with the types YAML gives its scalars (`0` a number, `"0"` text).
fn json(yaml: &Yaml) -> Value {
    match yaml {
        Yaml::String(s) => Value::String(s.clone()),
        Yaml::Integer(i) => Value::from(*i),
        Yaml::Real(r) => Value::from(r.parse::<f64>().expect("a YAML real is a number")),
        Yaml::Boolean(b) => Value::Bool(*b),
        Yaml::Null => Value::Null,
        Yaml::Array(items) => Value::Array(items.iter().map(json).collect()),
        Yaml::Hash(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let key = k
                        .as_str()
                        .unwrap_or_else(|| panic!("a key that is not text: {k:?}"));
                    (key.to_string(), json(v))
                })
                .collect::<Map<_, _>>(),
        ),
        other => panic!("YAML this recipe does not use: {other:?}"),
    }
}

fn text(v: &Value) -> &str {
    v.as_str()
        .unwrap_or_else(|| panic!("expected a scalar, got {v}"))
}

fn env_value<'a>(container: &'a Value, name: &str) -> Option<&'a str> {
    container["env"]
        .as_array()?
        .iter()
        .find(|e| e["name"] == name)
        .and_then(|e| e["value"].as_str())
}

fn job<'a>(docs: &'a [(String, Value)], file: &str) -> &'a Value {
    let (_, doc) = docs.iter().find(|(f, _)| f == file).expect(file);
    assert_eq!(doc["kind"], "Job", "{file}");
    assert_eq!(doc["apiVersion"], "batch/v1", "{file}");
    doc
}

#[test]
fn every_manifest_parses_and_names_itself() {
    let docs = documents();
    for (file, doc) in &docs {
        for field in ["apiVersion", "kind"] {
            assert!(doc[field].is_string(), "{file}: {field}");
        }
        assert!(doc["metadata"]["name"].is_string(), "{file}: metadata.name");
    }
    let kinds: Vec<&str> = docs.iter().map(|(_, d)| text(&d["kind"])).collect();
    for kind in ["Job", "ConfigMap", "Secret", "PersistentVolumeClaim"] {
        assert!(kinds.contains(&kind), "a {kind} in deploy/kubernetes");
    }
}

/// The shard Job: Indexed, one pod per shard with LOCKBENCH_SHARDS equal to its completions, never
/// restarted in place, spread over zones, with a run id shared by its labels and the merge Job;
/// and started as Kubernetes starts its pod 3, lockbench runs shard 3 of 8 of that run.
#[test]
fn the_shard_job_keeps_the_shard_contract() {
    let docs = documents();
    let shards = job(&docs, "ttl-job.yaml");
    let spec = &shards["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    assert_eq!(
        spec["completions"], spec["parallelism"],
        "every shard at once"
    );
    let pod = &spec["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Never");
    assert_eq!(
        pod["topologySpreadConstraints"][0]["topologyKey"],
        "topology.kubernetes.io/zone"
    );
    let container = &pod["containers"][0];
    assert_eq!(
        env_value(container, "LOCKBENCH_SHARDS"),
        Some(spec["completions"].to_string().as_str()),
        "LOCKBENCH_SHARDS is the Job's completions"
    );
    let run_id = env_value(container, "LOCKBENCH_RUN_ID").expect("LOCKBENCH_RUN_ID");
    assert_eq!(shards["metadata"]["labels"]["lockbench/run-id"], run_id);
    assert_eq!(run_id, RUN_ID, "the run id set when rendered");
    let merge = job(&docs, "merge-job.yaml");
    let merger = &merge["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(env_value(merger, "LOCKBENCH_RUN_ID"), Some(run_id));
    assert!(text(&merger["command"][2]).starts_with("lockbench merge "));
    let claim = |job: &Value| {
        job["spec"]["template"]["spec"]["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .find_map(|v| v["persistentVolumeClaim"]["claimName"].as_str())
            .map(str::to_string)
    };
    assert_eq!(claim(shards), claim(merge), "both Jobs use one volume");
    // The pod's command line, run here as pod 3 with the repository's spec and few replays.
    let args: Vec<String> = container["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| text(a).to_string())
        .collect();
    let out = tempfile::tempdir().unwrap();
    let shard_dir = out.path().join("shard-3");
    let mut local: Vec<String> = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "/etc/lockbench/billing.toml" => {
                local.push(format!("{ROOT}/workloads/specs/billing.toml"))
            }
            "--replays" => {
                it.next();
                local.extend(["--replays".into(), "700".into()]);
            }
            "--out" => {
                let value = it.next().unwrap();
                assert!(
                    value.contains("$(JOB_COMPLETION_INDEX)"),
                    "one directory per shard"
                );
                local.extend(["--out".into(), shard_dir.display().to_string()]);
            }
            _ => local.push(a.clone()),
        }
    }
    let shards_count = env_value(container, "LOCKBENCH_SHARDS").unwrap();
    let run = lockbench()
        .args(&local)
        .env("JOB_COMPLETION_INDEX", "3")
        .env("LOCKBENCH_SHARDS", shards_count)
        .env("LOCKBENCH_RUN_ID", run_id)
        .env("LOCKBENCH_ZONE", "zone-b")
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(shard_dir.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["shard"]["index"], 3);
    assert_eq!(
        manifest["shard"]["count"],
        shards_count.parse::<u64>().unwrap()
    );
    assert_eq!(manifest["shard"]["run_id"], run_id);
    assert_eq!(manifest["shard"]["zone"], "zone-b");
}

/// The bench Job: Indexed, every pod at once, no retry of any kind (a shard run again later would
/// measure a lock the others no longer want), one start time for all, the shard from the Job.
#[test]
fn the_bench_job_starts_every_shard_together_and_never_again() {
    let docs = documents();
    let bench = job(&docs, "bench-job.yaml");
    let spec = &bench["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    assert_eq!(spec["completions"], spec["parallelism"]);
    assert_eq!(spec["backoffLimit"], 0);
    assert!(
        spec.get("backoffLimitPerIndex").is_none(),
        "no per-index retries"
    );
    let container = &spec["template"]["spec"]["containers"][0];
    assert_eq!(
        env_value(container, "LOCKBENCH_SHARDS"),
        Some(spec["completions"].to_string().as_str())
    );
    let args: Vec<&str> = container["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(text)
        .collect();
    assert_eq!(args[0], "bench");
    let start = args
        .iter()
        .position(|a| *a == "--start-at")
        .expect("--start-at");
    assert_eq!(args[start + 1], "$(START_AT)");
    // Rendered five minutes ahead: a time lockbench takes (RFC 3339, UTC, in the future).
    let at = env_value(container, "START_AT").expect("START_AT");
    let when = humantime::parse_rfc3339(at).unwrap_or_else(|e| panic!("START_AT {at}: {e}"));
    let ahead = when
        .duration_since(std::time::SystemTime::now())
        .expect("START_AT is in the future");
    assert!(ahead.as_secs() > 200 && ahead.as_secs() <= 300, "{at}");
    assert_eq!(
        bench["metadata"]["labels"]["lockbench/run-id"], RUN_ID,
        "the run id set when rendered"
    );
    assert_eq!(env_value(container, "LOCKBENCH_RUN_ID"), Some(RUN_ID));
    // The pods run as the image's user, with the results volume's group.
    let security = &spec["template"]["spec"]["securityContext"];
    assert_eq!(security["runAsUser"], 10001);
    assert_eq!(security["fsGroup"], 10001);
    assert!(!args.contains(&"--shard"), "the shard comes from the Job");
    assert_eq!(args.iter().filter(|a| **a == "--backend").count(), 1);
}

#[test]
fn the_configmap_carries_the_shipped_spec_and_a_config() {
    let docs = documents();
    let (_, map) = docs.iter().find(|(_, d)| d["kind"] == "ConfigMap").unwrap();
    assert_eq!(
        text(&map["data"]["billing.toml"]).trim_end(),
        read("workloads/specs/billing.toml").trim_end(),
        "deploy/kubernetes/configmap.yaml holds workloads/specs/billing.toml as it is"
    );
    lockbench_locks_config(text(&map["data"]["lockbench.toml"]));
}

/// The config parses as lockbench reads it (placeholders and all).
fn lockbench_locks_config(config: &str) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lockbench.toml");
    std::fs::write(&path, config).unwrap();
    let out = lockbench()
        .args([
            "bench",
            "--config",
            path.to_str().unwrap(),
            "--backend",
            "nope",
        ])
        .env("REDIS_PASSWORD", "from-the-secret")
        .env("PG_PASSWORD", "from-the-secret")
        .output()
        .unwrap();
    // The config was read: the only complaint is the unknown backend named on the command line.
    assert_refused(&out, "bench --backend nope", &["nope"]);
}

#[test]
fn the_image_builds_the_readmes_binary() {
    let dockerfile = read("Dockerfile");
    let readme = read("README.md");
    assert!(
        readme.contains("\ncargo build --release\n"),
        "README builds with cargo build --release"
    );
    assert!(
        dockerfile.contains("\nRUN cargo build --release\n"),
        "the same command in the image"
    );
    assert!(dockerfile.contains("COPY --from=build /src/target/release/lockbench "));
    let cargo = read("Cargo.toml");
    let version = cargo
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = "))
        .unwrap()
        .trim_matches('"');
    assert!(
        dockerfile.contains(&format!("FROM rust:{version}-")),
        "the build image is the workspace's rust-version {version}"
    );
    for script in ["deploy/slurm/ttl-array.sh", "deploy/slurm/merge.sh"] {
        let ok = std::process::Command::new("bash")
            .args(["-n", &format!("{ROOT}/{script}")])
            .status()
            .unwrap();
        assert!(ok.success(), "{script} is valid bash");
    }
}

/// `rust-version` and what the lock needs agree: no locked dependency asks for a newer compiler
/// than the workspace says it needs, every member says the workspace's, and the image builds on
/// exactly that version (or `docker build` would stop at the first dependency that needs more).
fn host_triple() -> String {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
    let out = std::process::Command::new(rustc)
        .arg("-vV")
        .output()
        .unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .expect("rustc -vV names its host")
        .to_string()
}

#[test]
fn rust_version_the_lock_and_the_image_agree() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let out = std::process::Command::new(cargo)
        // Only the host's packages: a clean cargo home has downloaded no Windows-only crate
        // (anstyle-wincon), and without the filter `--offline` refuses to resolve them.
        .args(["metadata", "--format-version", "1", "--locked", "--offline"])
        .args(["--filter-platform", &host_triple()])
        .current_dir(ROOT)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metadata: Value = serde_json::from_slice(&out.stdout).unwrap();
    let parse = |v: &str| -> Vec<u64> {
        let mut parts: Vec<u64> = v.split('.').map(|p| p.parse().unwrap()).collect();
        parts.resize(3, 0);
        parts
    };
    let workspace = read("Cargo.toml")
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = "))
        .unwrap()
        .trim_matches('"')
        .to_string();
    let members: Vec<&str> = metadata["workspace_members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect();
    let mut too_new = Vec::new();
    for package in metadata["packages"].as_array().unwrap() {
        let name = package["name"].as_str().unwrap();
        let needs = package["rust_version"].as_str();
        if members.contains(&package["id"].as_str().unwrap()) {
            assert_eq!(
                needs,
                Some(workspace.as_str()),
                "member {name} inherits rust-version"
            );
        } else if let Some(needs) = needs
            && parse(needs) > parse(&workspace)
        {
            too_new.push(format!("{name} {} needs {needs}", package["version"]));
        }
    }
    assert!(
        too_new.is_empty(),
        "locked dependencies above rust-version {workspace}: {too_new:?}"
    );
    assert!(
        read("Dockerfile").contains(&format!("\nFROM rust:{workspace}-bookworm AS build\n")),
        "the Dockerfile builds on rust {workspace}"
    );
}

/// The image's build passes the commit in: the Dockerfile takes it as a build argument, and
/// build.rs reads it when there is no .git to ask.
#[test]
fn a_container_build_names_its_commit() {
    let dockerfile = read("Dockerfile");
    assert!(dockerfile.contains("ARG LOCKBENCH_GIT_COMMIT"));
    assert!(dockerfile.contains("ENV LOCKBENCH_GIT_COMMIT=${LOCKBENCH_GIT_COMMIT}"));
    assert!(dockerfile.contains("--build-arg LOCKBENCH_GIT_COMMIT="));
    assert!(read(".dockerignore").lines().any(|l| l == ".git"));
    assert!(read("build.rs").contains("std::env::var(\"LOCKBENCH_GIT_COMMIT\")"));
}

/// docs/RESULTS.md names the schema version the binary writes as the current one.
#[test]
fn the_results_doc_names_the_schema_version_written() {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/RESULTS.md")).unwrap();
    let current = lockbench_core::records::SCHEMA_VERSION;
    assert!(
        doc.contains(&format!("Schema version {current} (this one)")),
        "docs/RESULTS.md does not call schema version {current} the current one"
    );
    assert!(
        doc.contains(&format!("this lockbench reads schema_version {current}")),
        "docs/RESULTS.md's example refusal names another version"
    );
}
