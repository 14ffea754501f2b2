//! What `run --quick` does is a typed value (`lockbench_analysis::MainJobPlan`), and the
//! committed sample (results/sample) is what it produced: each step's command line, as the
//! step's manifest recorded it, is the plan's, step for step. Nothing runs. A change to the plan
//! fails here until the sample is regenerated (`lockbench run --quick --seed 2026`), so the sample
//! the README points to stays the output of the plan the code holds.

use std::path::{Path, PathBuf};
use std::time::Duration;

use lockbench_analysis::{MainJobPlan, Replay, ReplayMode};
use lockbench_core::{BackendId, BackendKind, Variant};
use lockbench_workloads::WorkloadSpec;
use serde_json::Value;

const WORKSPACE: &str = env!("CARGO_MANIFEST_DIR");

/// A sample step's command line without the binary, `--out` reduced to its folder's name, and
/// each `--scenario` expanded to the variants it selects (one per argument, sorted).
fn normalized(args: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut variants: Vec<String> = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--out" => {
                let dir = it.next().unwrap();
                let name = Path::new(dir).file_name().unwrap().to_string_lossy();
                out.extend(["--out".to_string(), name.into_owned()]);
            }
            "--scenario" => {
                let name = it.next().unwrap();
                let picked = Variant::select(name).unwrap_or_else(|| panic!("{name}"));
                variants.extend(picked.iter().map(|v| v.label()));
            }
            _ => out.push(a.clone()),
        }
    }
    variants.sort();
    for v in variants {
        out.extend(["--scenario".to_string(), v]);
    }
    out
}

/// The sample step's recorded arguments (the binary left out).
fn recorded(step: &str) -> Vec<String> {
    let path = Path::new(WORKSPACE)
        .join("results/sample")
        .join(step)
        .join("manifest.json");
    let manifest: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    manifest["args"].as_array().unwrap()[1..]
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect()
}

fn specs() -> Vec<PathBuf> {
    ["billing", "events", "ledger", "migration"]
        .iter()
        .map(|n| PathBuf::from(format!("workloads/specs/{n}.toml")))
        .collect()
}

#[test]
fn run_is_the_plan_that_made_the_committed_sample() {
    // The sample is a full run (`scripts/sample-report.sh`), not `--quick`: its P99.9s rest on
    // 20,000 replays.
    let plan = MainJobPlan::new(false, 2026);
    let config = Path::new("lockbench.toml");
    let out = |name: &str| PathBuf::from("/staging").join(name);
    let specs = specs();
    let refs: Vec<&Path> = specs.iter().map(PathBuf::as_path).collect();
    let same = |step: &str, planned: Vec<String>| {
        assert_eq!(
            normalized(&planned),
            normalized(&recorded(step)),
            "{step}: the plan and the committed sample differ"
        );
    };
    same("simulate", plan.simulate_args(&refs, &out("simulate")));
    for spec in &specs {
        let name = spec.file_stem().unwrap().to_string_lossy().into_owned();
        let step = format!("ttl-{name}");
        let today = WorkloadSpec::load(&Path::new(WORKSPACE).join(spec))
            .unwrap()
            .workload
            .current_ttl;
        same(&step, plan.ttl_args(spec, today, &out(&step)));
    }
    same("bench", plan.bench_args(config, &out("bench"), true));
    let networked: Vec<BackendId> = BackendKind::ALL
        .into_iter()
        .filter(|k| *k != BackendKind::Memory)
        .map(BackendId::of)
        .collect();
    let backends = plan.fault_backends(&networked).unwrap();
    same(
        "faults",
        plan.faults_args(config, &backends, &out("faults")),
    );
    // ledger names Curator: the lab again through it.
    same(
        "faults-curator",
        plan.library_args(
            config,
            lockbench_core::Client::Curator,
            &out("faults-curator"),
        ),
    );
    // ledger's decision moves it to etcd, off Curator's ZooKeeper, and its resource checks a
    // token: the lab again through the shipped library that hands out etcd's.
    same(
        "faults-etcd-go",
        plan.library_args(
            config,
            lockbench_core::Client::EtcdGo,
            &out("faults-etcd-go"),
        ),
    );
    // billing's incident: on the first preferred backend measured, each defence, then on its
    // decided pg-session, held as a session (today's TTL passed, ignored).
    let billing = Replay {
        spec: &specs[0],
        profile: "month-end-incident",
        current_ttl: Duration::from_secs(300),
        config,
    };
    let first = plan.replay_backend(&networked);
    assert_eq!(first, BackendKind::Redis);
    for mode in &plan.replays.modes {
        let step = format!("replay-billing-{}", mode.name());
        same(&step, plan.replay_args(billing, first, *mode, &out(&step)));
    }
    same(
        "replay-billing-decided",
        plan.replay_args(
            billing,
            BackendKind::PgSession,
            ReplayMode::Ttl,
            &out("replay-billing-decided"),
        ),
    );
}
