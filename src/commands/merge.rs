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

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use lockbench_analysis::{LeaseCurve, Simulated, TtlParams, TtlRuns, add_curves, derive};
use lockbench_bench::{BenchResult, Metrics};
use lockbench_core::records::bench::BenchRecord;
use lockbench_core::records::simulate::{SimulationRecord, SimulationRow};
use lockbench_core::records::{Body, ResultsRead, read_dir, to_json};
use lockbench_core::{Manifest, ResultsDir, RuntimeHistogram, ShardOrigin, ShardRecord};
use lockbench_workloads::WorkloadSpec;

use crate::cli::MergeArgs;
use crate::commands::shared::{write_bench_results, write_results};
use crate::options::{SimulationOptions, UsageError, usage};
use crate::render;

struct Shard {
    dir: PathBuf,
    read: ResultsRead,
    shard: ShardRecord,
}

pub fn run(args: &MergeArgs) -> Result<ExitCode> {
    let out = ResultsDir::new(&args.out)?;
    let mut shards = Vec::new();
    for dir in &args.dirs {
        let read = read_dir(dir)?;
        let shard = read.manifest.shard.clone().ok_or_else(|| {
            refuse(
                dir,
                format!(
                    "not a shard: its {} run was not split (run it with --shard I/N --run-id ID)",
                    read.manifest.command
                ),
            )
        })?;
        shards.push(Shard {
            dir: dir.clone(),
            read,
            shard,
        });
    }
    check(&mut shards)?;
    same_histograms(&shards)?;
    let first = &shards[0];
    if let Body::Bench { record, .. } = &first.read.body {
        let merged = merge_bench(&shards, record)?;
        if let Some(warning) = start_skew(&shards, record) {
            eprintln!("lockbench: merge: warning: {warning}");
        }
        render::show(args.json, &merged.0, |r| render::bench_table(&r.results))?;
        let origins: Vec<ShardOrigin> = shards.iter().map(origin).collect();
        let m = &first.read.manifest;
        write_bench_results(out, &merged.1, &merged.0, |out| Manifest {
            backends: m.backends.clone(),
            config: m.config.clone(),
            merged_from: origins,
            ..crate::commands::shared::manifest(out, "bench", None, 0, Vec::new())
        })?;
        say_merged(&shards);
        return Ok(ExitCode::SUCCESS);
    }
    let specs = specs(first)?;
    let merged = merged_runs(&shards)?;
    let simulation = SimulationOptions {
        // The runs' own --replays: ttl's pausing profiles run more, to price the lease.
        replays: merged
            .iter()
            .map(|s| s.histogram.count())
            .min()
            .unwrap_or(0),
        seed: first.read.manifest.seed.unwrap_or_default(),
        // Threads of one process: a merged run is as many processes as shards, each with its own.
        threads: shards
            .iter()
            .map(|s| s.read.manifest.threads)
            .max()
            .unwrap_or(1),
        json: args.json,
        out: None,
        shard: None,
    };
    let origins: Vec<ShardOrigin> = shards.iter().map(origin).collect();
    let spec_refs: Vec<&WorkloadSpec> = specs.iter().collect();
    match &first.read.body {
        Body::Simulate { .. } => {
            let records: Vec<&SimulationRecord> = shards
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
            };
            render::show(args.json, &record, render::simulation_text)?;
            let bytes = to_json(&record);
            write_results(
                out,
                "simulate",
                &simulation,
                &spec_refs,
                &merged,
                bytes,
                origins,
            )?;
        }
        Body::Ttl { record, .. } => {
            let params = TtlParams::of(record);
            let curves = merged_curves(&shards)?;
            let (candidates, growth) = merged.split_at(record.profiles_considered.len());
            let runs = TtlRuns { candidates, growth };
            let derived = derive(&specs[0], &params, runs, curves)?;
            let recommendation = derived.recommendation;
            // What a whole run writes: the candidates and the chosen profile's growth runs.
            let n = candidates.len();
            let (below, above) = (derived.below + n, derived.above + n);
            let kept: Vec<Simulated> = merged
                .into_iter()
                .enumerate()
                .filter(|(i, _)| *i < n || *i == below || *i == above)
                .map(|(_, s)| s)
                .collect();
            let bytes = to_json(&recommendation);
            render::show(args.json, &recommendation, render::ttl_report)?;
            write_results(out, "ttl", &simulation, &spec_refs, &kept, bytes, origins)?;
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
    say_merged(&shards);
    Ok(ExitCode::SUCCESS)
}

/// Start skew a merge warns about: more than this share of a level's measured part.
const SKEW_TOLERANCE: f64 = 0.01;

/// How far apart bench shards really started, by the lock server's clock, when that is more than
/// [`SKEW_TOLERANCE`] of the shortest measured part (or cannot be known).
fn start_skew(shards: &[Shard], record: &BenchRecord) -> Option<String> {
    let offsets: Vec<(f64, f64)> = shards
        .iter()
        .filter_map(|s| s.shard.clock_offset_ms.zip(s.shard.clock_rtt_ms))
        .collect();
    if offsets.len() < shards.len() {
        return Some(format!(
            "{} of {} shards could not read the lock server's clock, so how far apart they started is not known",
            shards.len() - offsets.len(),
            shards.len()
        ));
    }
    let lo = offsets.iter().map(|o| o.0).fold(f64::INFINITY, f64::min);
    let hi = offsets
        .iter()
        .map(|o| o.0)
        .fold(f64::NEG_INFINITY, f64::max);
    let within = offsets.iter().map(|o| o.1 / 2.0).fold(0.0, f64::max);
    let measured_ms = record
        .results
        .iter()
        .map(|r| r.measured_s * 1e3)
        .fold(f64::INFINITY, f64::min);
    let skew = hi - lo;
    (skew > SKEW_TOLERANCE * measured_ms).then(|| {
        format!(
            "the shards started up to {skew:.1} ms apart by the lock server's clock (their clocks differ from it by {lo:.1} to {hi:.1} ms, each to within {within:.1} ms), more than {:.0} % of the {:.1} s measured per level: they contended for less of it than the figures assume; synchronise the hosts' clocks (chrony, NTP) or measure for longer",
            SKEW_TOLERANCE * 100.0,
            measured_ms / 1e3
        )
    })
}

fn say_merged(shards: &[Shard]) {
    let first = &shards[0];
    eprintln!(
        "merged {} shards of run {} ({})",
        shards.len(),
        first.shard.run_id,
        first.read.manifest.command
    );
}

/// Bench shards added up row by row: each row's histograms and counters summed over the shards,
/// the contenders' grants side by side, over the longest measured part.
fn merge_bench(
    shards: &[Shard],
    record: &BenchRecord,
) -> Result<(BenchRecord, Vec<BenchResult>), UsageError> {
    let mut results = Vec::new();
    for like in &record.results {
        let tag = like.tag();
        let mut metrics = Metrics::default();
        let mut measured = 0.0f64;
        for s in shards {
            let Body::Bench { record: theirs, .. } = &s.read.body else {
                return Err(refuse(&s.dir, "not a bench directory".to_string()));
            };
            let row = theirs
                .results
                .iter()
                .find(|r| r.tag() == tag)
                .ok_or_else(|| refuse(&s.dir, format!("has no row {tag}")))?;
            let histogram = |metric: &str| {
                let want = format!("{tag}/{metric}");
                s.read
                    .histograms
                    .iter()
                    .find(|(t, _)| *t == want)
                    .map(|(_, h)| h.clone())
                    .ok_or_else(|| refuse(&s.dir, format!("latency.hlog has no `{want}`")))
            };
            let part = Metrics {
                acquire: histogram("acquire")?,
                renew: histogram("renew")?,
                release: histogram("release")?,
                handoff: histogram("handoff")?,
                attempts: row.attempts,
                failed_attempts: row.failed_attempts,
                gave_up: row.gave_up,
                errors: row.errors,
                first_error: row.first_error.clone(),
                requests: row.requests,
                contender_grants: Vec::new(),
            };
            metrics.merge(&part);
            metrics.contender_grants.extend(&row.contender_grants);
            measured = measured.max(row.measured_s);
        }
        results.push(BenchResult::merged(
            like,
            metrics,
            std::time::Duration::from_secs_f64(measured),
        ));
    }
    let mut failed = Vec::new();
    for s in shards {
        if let Body::Bench { record, .. } = &s.read.body {
            for f in &record.failed {
                if !failed.contains(f) {
                    failed.push(f.clone());
                }
            }
        }
    }
    let merged = BenchRecord {
        results: results.iter().map(|r| r.row.clone()).collect(),
        failed,
        backends: record.backends.clone(),
    };
    Ok((merged, results))
}

fn refuse(dir: &Path, message: String) -> UsageError {
    usage(&dir.display().to_string(), message)
}

/// An optional value as a person reads it: the value, or "none".
fn or_none<T: std::fmt::Display>(value: Option<T>) -> String {
    value.map_or_else(|| "none".to_string(), |v| v.to_string())
}

/// What every shard of one run has alike (the specs and settings apart), as (what, value).
fn identity(s: &Shard) -> [(&'static str, String); 7] {
    let m = &s.read.manifest;
    let servers: Vec<String> = m
        .backends
        .iter()
        .map(|b| format!("{} at {} (namespace {})", b.backend, b.urls, b.namespace))
        .collect();
    [
        ("command", m.command.clone()),
        ("run id", s.shard.run_id.clone()),
        ("shard count", s.shard.count.to_string()),
        ("seed", or_none(m.seed)),
        (
            "servers",
            or_none((!servers.is_empty()).then(|| servers.join(", "))),
        ),
        (
            "start (--start-at, ms since the epoch)",
            or_none(s.shard.start_at_unix_ms),
        ),
        (
            "lockbench build",
            format!(
                "{} (commit {})",
                m.version,
                or_none(m.git_commit.as_deref())
            ),
        ),
    ]
}

/// Checks the shards belong to one run and are all there; sorts them by index.
fn check(shards: &mut [Shard]) -> Result<(), UsageError> {
    shards.sort_by_key(|s| s.shard.index);
    let first = &shards[0];
    let expected = identity(first);
    for s in shards.iter().skip(1) {
        for ((what, a), (_, b)) in expected.iter().zip(identity(s)) {
            if *a != b {
                return Err(refuse(
                    &s.dir,
                    format!(
                        "another run: its {what} is {b}, but {} has {a}",
                        first.dir.display()
                    ),
                ));
            }
        }
        // Setting by setting, as each shard resolved its flags (`--seed 1` and `--seed=1` alike).
        let (ours, theirs) = (&first.shard.settings, &s.shard.settings);
        for name in ours.keys().chain(theirs.keys()) {
            let (a, b) = (ours.get(name), theirs.get(name));
            if a != b {
                return Err(refuse(
                    &s.dir,
                    format!(
                        "another run: its {name} is {}, but {} has {}",
                        or_none(b),
                        first.dir.display(),
                        or_none(a)
                    ),
                ));
            }
        }
        let texts = |m: &Manifest| m.specs.iter().map(|x| x.text.clone()).collect::<Vec<_>>();
        if texts(&first.read.manifest) != texts(&s.read.manifest) {
            return Err(refuse(
                &s.dir,
                format!(
                    "another run: its specs differ from those of {}",
                    first.dir.display()
                ),
            ));
        }
    }
    for pair in shards.windows(2) {
        if pair[0].shard.index == pair[1].shard.index {
            return Err(refuse(
                &pair[1].dir,
                format!(
                    "shard {} of {} given twice (also {})",
                    pair[1].shard.index,
                    pair[1].shard.count,
                    pair[0].dir.display()
                ),
            ));
        }
    }
    let count = first.shard.count;
    let have: Vec<u64> = shards.iter().map(|s| s.shard.index).collect();
    if let Some(missing) = (0..count).find(|i| !have.contains(i)) {
        let list: Vec<String> = have.iter().map(u64::to_string).collect();
        return Err(usage(
            "merge",
            format!(
                "shard {missing} of {count} of run {} is missing (given: {})",
                first.shard.run_id,
                list.join(", ")
            ),
        ));
    }
    Ok(())
}

/// Every shard holds the same histograms, in the same order, in the same unit and counting the
/// same thresholds, and (bench) the same rows: otherwise they cannot be added.
fn same_histograms(shards: &[Shard]) -> Result<(), UsageError> {
    let first = &shards[0];
    let shape = |s: &Shard| -> Vec<(String, &'static str, Vec<u64>)> {
        s.read
            .histograms
            .iter()
            .map(|(tag, h)| {
                let limits = h.exact().thresholds.iter().map(|t| t.limit_ns).collect();
                (tag.clone(), h.unit_name(), limits)
            })
            .collect()
    };
    let rows = |s: &Shard| -> Vec<String> {
        match &s.read.body {
            Body::Bench { record, .. } => record.results.iter().map(|r| r.tag()).collect(),
            _ => Vec::new(),
        }
    };
    let expected = shape(first);
    if expected.is_empty() {
        return Err(refuse(
            &first.dir,
            "holds no histogram to merge (nothing was measured)".to_string(),
        ));
    }
    for s in &shards[1..] {
        if shape(s) != expected {
            return Err(refuse(
                &s.dir,
                format!(
                    "its histograms (tags, unit or thresholds) are not those of {}",
                    first.dir.display()
                ),
            ));
        }
        if rows(s) != rows(first) {
            return Err(refuse(
                &s.dir,
                format!("its rows are not those of {}", first.dir.display()),
            ));
        }
    }
    if let Body::Ttl { record, .. } = &first.read.body {
        let candidates = record.profiles_considered.len();
        if candidates == 0 || candidates + 2 > expected.len() {
            return Err(refuse(
                &first.dir,
                format!(
                    "names {candidates} candidate profiles but holds {} histograms",
                    expected.len()
                ),
            ));
        }
    }
    Ok(())
}

/// The specs the run used, from the first shard's manifest.
fn specs(shard: &Shard) -> Result<Vec<WorkloadSpec>> {
    Ok(shard
        .read
        .manifest
        .specs
        .iter()
        .map(|s| WorkloadSpec::parse(&s.text, Path::new(&s.path)))
        .collect::<Result<Vec<_>, _>>()?)
}

/// Every simulated run of the shards, histograms added (their shapes were checked by
/// [`same_histograms`]), rows summarised again from the sums: summary.csv names each run, in the
/// log's order, for simulate and ttl alike.
fn merged_runs(shards: &[Shard]) -> Result<Vec<Simulated>, UsageError> {
    let first = &shards[0];
    let (Body::Simulate { rows, .. } | Body::Ttl { rows, .. }) = &first.read.body else {
        return Err(refuse(&first.dir, "has no summary rows".to_string()));
    };
    if rows.len() != first.read.histograms.len() {
        return Err(refuse(
            &first.dir,
            format!(
                "summary.csv has {} rows for the log's {} histograms",
                rows.len(),
                first.read.histograms.len()
            ),
        ));
    }
    Ok(rows
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let mut sum: RuntimeHistogram = first.read.histograms[i].1.clone();
            for s in &shards[1..] {
                sum.merge(&s.read.histograms[i].1);
            }
            Simulated {
                row: SimulationRow::new(&r.workload, &r.profile, r.scale, r.volume, &r.unit, &sum),
                histogram: sum,
            }
        })
        .collect())
}

/// The ttl shards' heartbeat lease losses, added: every shard priced the same candidate leases
/// of the same profiles.
fn merged_curves(shards: &[Shard]) -> Result<Vec<LeaseCurve>, UsageError> {
    let curves = |s: &Shard| match &s.read.body {
        Body::Ttl { record, .. } => record
            .heartbeat
            .pricing
            .as_ref()
            .map(|p| p.curves.clone())
            .ok_or_else(|| refuse(&s.dir, "its heartbeat lease was not priced".to_string())),
        _ => Err(refuse(&s.dir, "is not a ttl directory".to_string())),
    };
    let mut total = curves(&shards[0])?;
    for s in &shards[1..] {
        if !add_curves(&mut total, &curves(s)?) {
            return Err(refuse(
                &s.dir,
                format!(
                    "its heartbeat lease curves (profiles or candidate leases) are not those of {}",
                    shards[0].dir.display()
                ),
            ));
        }
    }
    Ok(total)
}

fn origin(s: &Shard) -> ShardOrigin {
    ShardOrigin {
        shard: s.shard.clone(),
        hostname: s.read.manifest.machine.hostname.clone(),
        created_unix_s: s.read.manifest.created_unix_s,
        threads: s.read.manifest.threads,
        git_commit: s.read.manifest.git_commit.clone(),
    }
}
