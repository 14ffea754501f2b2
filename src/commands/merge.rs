//! `lockbench merge`: the shards of a split `simulate`, `ttl` or `bench` run into the results
//! directory the whole run would have written.
//!
//! The shards must belong together: one command, one run id, one shard count with every index
//! once, one seed, the same specs, the same resolved settings (each shard's `settings`, compared
//! one by one; where a shard wrote and how many threads it had are its own) and the same
//! lockbench build. Their histograms are added exactly (HdrHistogram
//! buckets, and the exact count, sum, extremes and threshold counts of `exact.json`), so the
//! percentiles and counts are the single-process run's; a TTL is derived from the merged
//! histograms only, never from the shards' own.

use lockbench_core::RunKind;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use lockbench_analysis::{TtlOptions, TtlSimulations, derive, merged_curves, merged_simulations};
use lockbench_bench::{merge_bench, start_skew};
use lockbench_core::records::simulate::SimulationRecord;
use lockbench_core::records::{Body, to_json};
use lockbench_core::shards::{ShardSet, refuse};
use lockbench_core::{Manifest, ResultsDir, ShardOrigin};
use lockbench_workloads::WorkloadSpec;

use crate::cli::MergeArgs;
use crate::failure::Outcome;
use crate::options::SimulationSettings;
use crate::output::{self, Simulated, write_bench_results, write_results};
use crate::render;

pub fn run(args: &MergeArgs) -> Outcome {
    let out = ResultsDir::new(&args.out)?;
    let set = ShardSet::read(&args.dirs)?;
    let first = set.first();
    if let Body::Bench { record, .. } = &first.read.body {
        let (merged, results) = merge_bench(&set, record)?;
        if let Some(warning) = start_skew(&set, record) {
            eprintln!("lockbench: merge: warning: {warning}");
        }
        render::show(args.json, &merged, |r| render::bench_table(&r.results))?;
        let m = &first.read.manifest;
        write_bench_results(out, &results, &merged, |out| Manifest {
            backends: m.backends.clone(),
            config: m.config.clone(),
            merged_from: set.origins(),
            ..output::manifest(out, RunKind::Bench, None, 0, Vec::new())
        })?;
        say_merged(&set);
        return Ok(ExitCode::SUCCESS);
    }
    let specs = specs(&first.read.manifest)?;
    let merged = merged_simulations(&set)?;
    let simulation = SimulationSettings {
        // The runs' own --replays: ttl's pausing profiles run more, to price the lease.
        replays: merged
            .iter()
            .map(|s| s.histogram.count())
            .min()
            .unwrap_or(0),
        seed: first.read.manifest.seed.unwrap_or_default(),
        // Threads of one process: a merged run is as many processes as shards, each with its own.
        threads: set
            .shards
            .iter()
            .map(|s| s.read.manifest.threads)
            .max()
            .unwrap_or(1),
        json: args.json,
        out: None,
        shard: None,
        // The shards agree on it (their settings are compared); the merged record copies theirs.
        engine: lockbench_workloads::Engine::default(),
    };
    let origins: Vec<ShardOrigin> = set.origins();
    let spec_refs: Vec<&WorkloadSpec> = specs.iter().collect();
    match &first.read.body {
        Body::Simulate { .. } => {
            let records: Vec<&SimulationRecord> = set
                .shards
                .iter()
                .filter_map(|s| match &s.read.body {
                    Body::Simulate { record, .. } => Some(record),
                    _ => None,
                })
                .collect();
            let samples: u64 = records.iter().map(|r| r.latency_samples).sum();
            // Process seconds: whether the shards overlapped in time (so that their wall times
            // may not be added into a rate) is not known from their records.
            let elapsed: f64 = records.iter().map(|r| r.elapsed_s).sum();
            let record = SimulationRecord {
                seed: simulation.seed,
                threads: simulation.threads,
                shards: records.len() as u64,
                results: merged.iter().map(|s| s.row.clone()).collect(),
                latency_samples: samples,
                elapsed_s: elapsed,
                samples_per_s: samples as f64 / elapsed.max(1e-9),
                engine: records
                    .first()
                    .map_or_else(|| "exact".into(), |r| r.engine.clone()),
            };
            render::show(args.json, &record, render::simulation_text)?;
            let bytes = to_json(&record);
            write_results(
                out,
                RunKind::Simulate,
                &simulation,
                &spec_refs,
                &merged,
                bytes,
                origins,
            )?;
        }
        Body::Ttl { record, .. } => {
            let params = TtlOptions::of(record);
            let curves = merged_curves(&set)?;
            let (candidates, growth) = merged.split_at(record.profiles_considered.len());
            let runs = TtlSimulations { candidates, growth };
            let derived = derive(&specs[0], &params, runs, curves)?;
            let mut recommendation = derived.recommendation;
            // The tail is priced here, as a whole run prices it (a sharded ttl takes its budget
            // from the spec).
            let whole = lockbench_analysis::Budget::of(None, &specs[0]);
            let engine = if record.engine.starts_with("exact") {
                lockbench_workloads::Engine::Exact
            } else {
                lockbench_workloads::Engine::Blocks
            };
            output::price_tail_of(
                &specs[0],
                &mut recommendation,
                candidates,
                whole,
                &SimulationSettings {
                    engine,
                    ..simulation.clone()
                },
            )?;
            // The search is adaptive, so no shard can run a part of it: it runs here, whole, with
            // the run's seed and replays, as the whole run did.
            output::search_review_trigger(&specs[0], &mut recommendation, &simulation)?;
            // What a whole run writes: the candidates, the chosen profile's growth runs and every
            // profile at today's volume (one run of each).
            let n = candidates.len();
            let (below, above) = (derived.below + n, derived.above + n);
            let mut kept: Vec<Simulated> = Vec::new();
            for (i, s) in merged.into_iter().enumerate() {
                let today = s.row.scale == 1.0
                    && !kept
                        .iter()
                        .any(|k| k.row.profile == s.row.profile && k.row.scale == 1.0);
                if i < n || i == below || i == above || today {
                    kept.push(s);
                }
            }
            let bytes = to_json(&recommendation);
            render::show(args.json, &recommendation, render::ttl_report)?;
            write_results(
                out,
                RunKind::Ttl,
                &simulation,
                &spec_refs,
                &kept,
                bytes,
                origins,
            )?;
        }
        _ => {
            return Err(refuse(
                &first.dir,
                format!(
                    "a {} directory: merge reads shards of simulate, ttl and bench runs",
                    first.read.manifest.command
                ),
            )
            .into());
        }
    }
    say_merged(&set);
    Ok(ExitCode::SUCCESS)
}

fn say_merged(set: &ShardSet) {
    let first = set.first();
    eprintln!(
        "merged {} shards of run {} ({})",
        set.shards.len(),
        first.shard.run_id,
        first.read.manifest.command
    );
}

/// The specs the run used, from the first shard's manifest.
fn specs(manifest: &Manifest) -> Result<Vec<WorkloadSpec>> {
    Ok(manifest
        .specs
        .iter()
        .map(|s| WorkloadSpec::parse(&s.text, Path::new(&s.path)))
        .collect::<Result<Vec<_>, _>>()?)
}
