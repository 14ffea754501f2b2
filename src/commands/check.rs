//! `lockbench check`: past job runs against the simulated distribution at each run's volume.

use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use lockbench_analysis::check::{CHECK_ALPHA, Quantiles, check_figures, pit_of, verdict};
use lockbench_core::records::model::{CHECK_CSV, CheckBand, CheckRecord, CheckedRun, ModelCheck};
use lockbench_core::records::{RESULTS_JSON, to_csv, to_json};
use lockbench_core::{SpecRecord, format_count, format_duration_s};
use lockbench_workloads::{JobModel, WorkloadSpec};

use crate::cli::CheckArgs;
use crate::commands::observed::{CsvColumns, Input};
use crate::commands::shared::{Simulated, commit, manifest, prepare_out, simulate_one};
use crate::options::{SimulationOptions, UsageError, usage};
use crate::progress::Progress;

/// Most volumes simulated per profile: beyond, eight volumes spread over the observed range and
/// each run compared with the distribution interpolated between its two neighbours.
pub const MAX_VOLUMES: usize = 8;

/// How a CSV of past runs names its columns.
#[derive(Clone, Debug)]
pub struct RunColumns {
    /// Durations with units.
    pub duration: String,
    /// Durations in milliseconds instead.
    pub ms: Option<String>,
    /// Volume of each run.
    pub volume: String,
    /// The profile a run is believed to be, when the file has this column.
    pub profile: String,
}

/// One past job run.
#[derive(Clone, Debug, PartialEq)]
pub struct ObservedRun {
    /// Line in the file.
    pub line: u64,
    /// The profile to compare it with.
    pub profile: String,
    /// Its volume.
    pub volume: u64,
    /// Its duration, seconds.
    pub seconds: f64,
}

/// The outcome of a check.
pub struct Checked {
    pub record: CheckRecord,
    pub runs: Vec<CheckedRun>,
}

impl Checked {
    /// What `ttl --observed` carries.
    pub fn summary(&self) -> ModelCheck {
        ModelCheck {
            observed: self.record.observed.clone(),
            runs: self.record.runs,
            consistent: self.record.consistent,
            verdict: self.record.verdict.clone(),
        }
    }
}

pub fn run(args: &CheckArgs) -> Result<ExitCode> {
    let simulation = SimulationOptions::resolve_whole(&args.simulation, "check")?;
    let spec = WorkloadSpec::load(&args.spec)?;
    let default_profile = default_profile(&spec, args.profile.as_deref())?;
    let out = prepare_out(&simulation)?;
    let runs = read_runs(
        &args.observed,
        &spec,
        &default_profile,
        &args.runs.columns(),
    )?;
    let checked = check_runs(&spec, &args.observed, &runs, &simulation)?;
    if simulation.json {
        std::io::stdout().write_all(&to_json(&checked.record))?;
    } else {
        print!("{}", text(&checked.record));
    }
    if let Some(mut out) = out {
        out.add(RESULTS_JSON, to_json(&checked.record))?;
        out.add(CHECK_CSV, to_csv(&checked.runs))?;
        let specs = vec![SpecRecord {
            path: spec.path.display().to_string(),
            text: spec.text.clone(),
        }];
        let m = manifest(
            &out,
            "check",
            Some(simulation.seed),
            simulation.threads,
            specs,
        );
        commit(out, m)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The profile of runs that name none: `--profile`, else the spec's first.
pub fn default_profile(spec: &WorkloadSpec, given: Option<&str>) -> Result<String> {
    Ok(match given {
        Some(name) => spec.profile(name)?.name.clone(),
        None => spec.profiles[0].name.clone(),
    })
}

/// Reads past runs: a duration, a volume and optionally a profile per row.
pub fn read_runs(
    path: &Path,
    spec: &WorkloadSpec,
    default_profile: &str,
    columns: &RunColumns,
) -> Result<Vec<ObservedRun>, UsageError> {
    let input = Input::load(
        path,
        "a CSV of past job runs with a header row (a duration and a volume column)",
    )?;
    let file = &input.file;
    if input.trace {
        return Err(usage(
            file,
            "a JSON file; expected a CSV of past job runs (duration and volume columns)",
        ));
    }
    let rows = input.observations(&CsvColumns {
        name: None,
        duration: columns.duration.clone(),
        ms: columns.ms.clone(),
    })?;
    let header: Vec<&str> = rows[0].cells.iter().map(|(h, _)| h.as_str()).collect();
    if !header.contains(&columns.volume.as_str()) {
        return Err(usage(
            &format!("{file}:1"),
            format!(
                "no column \"{}\" (columns: {}); name it with --volume-column",
                columns.volume,
                header.join(", ")
            ),
        ));
    }
    // Each (profile, volume) is compiled once here, so a volume the model cannot take is refused
    // at its line before anything is simulated.
    let mut compiled: Vec<(String, u64)> = Vec::new();
    let base = spec.workload.volume as f64;
    rows.iter()
        .map(|r| {
            let cell = |name: &str| {
                r.cells
                    .iter()
                    .find(|(h, _)| h == name)
                    .map(|(_, v)| v.as_str())
            };
            let raw = cell(&columns.volume).unwrap_or("");
            let volume = raw.parse::<u64>().ok().filter(|v| *v >= 1).ok_or_else(|| {
                usage(
                    &r.place,
                    format!(
                        "field {}: expected a whole number of at least 1, got \"{raw}\"",
                        columns.volume
                    ),
                )
            })?;
            let profile = match cell(&columns.profile).filter(|p| !p.is_empty()) {
                Some(p) => {
                    if spec.profile(p).is_err() {
                        let known: Vec<&str> =
                            spec.profiles.iter().map(|p| p.name.as_str()).collect();
                        return Err(usage(
                            &r.place,
                            format!(
                                "field {}: no profile \"{p}\" in {} (its profiles: {})",
                                columns.profile,
                                spec.path.display(),
                                known.join(", ")
                            ),
                        ));
                    }
                    p.to_string()
                }
                None => default_profile.to_string(),
            };
            if !compiled.contains(&(profile.clone(), volume)) {
                JobModel::new(spec, &profile, volume as f64 / base).map_err(|e| {
                    usage(
                        &r.place,
                        format!(
                            "field {}: {volume} cannot be simulated: {}",
                            columns.volume,
                            e.to_string().rsplit(": ").next().unwrap_or_default()
                        ),
                    )
                })?;
                compiled.push((profile.clone(), volume));
            }
            let line = r
                .place
                .rsplit(':')
                .next()
                .and_then(|l| l.parse().ok())
                .unwrap_or(0);
            Ok(ObservedRun {
                line,
                profile,
                volume,
                seconds: r.seconds,
            })
        })
        .collect()
}

/// The volumes simulated for runs of these volumes: all of them when there are few, else
/// [`MAX_VOLUMES`] spread evenly from the smallest to the largest.
fn grid(volumes: &[u64]) -> Vec<u64> {
    let mut distinct = volumes.to_vec();
    distinct.sort_unstable();
    distinct.dedup();
    if distinct.len() <= MAX_VOLUMES {
        return distinct;
    }
    let (lo, hi) = (distinct[0] as f64, distinct[distinct.len() - 1] as f64);
    let mut g: Vec<u64> = (0..MAX_VOLUMES)
        .map(|i| (lo + (hi - lo) * i as f64 / (MAX_VOLUMES - 1) as f64).round() as u64)
        .collect();
    g.dedup();
    g
}

/// Simulates every profile the runs name at the volumes they need, and places each run in the
/// simulated distribution at its volume.
pub fn check_runs(
    spec: &WorkloadSpec,
    observed: &Path,
    runs: &[ObservedRun],
    simulation: &SimulationOptions,
) -> Result<Checked> {
    let mut profiles: Vec<String> = runs.iter().map(|r| r.profile.clone()).collect();
    profiles.sort();
    profiles.dedup();
    let grids: Vec<(String, Vec<u64>)> = profiles
        .iter()
        .map(|p| {
            let volumes: Vec<u64> = runs
                .iter()
                .filter(|r| &r.profile == p)
                .map(|r| r.volume)
                .collect();
            (p.clone(), grid(&volumes))
        })
        .collect();
    let base = spec.workload.volume as f64;
    let models = grids
        .iter()
        .flat_map(|(p, g)| g.iter().map(move |v| (p, *v)))
        .map(|(p, v)| JobModel::new(spec, p, v as f64 / base))
        .collect::<Result<Vec<_>, _>>()?;
    let progress = Progress::new(simulation.replays * models.len() as u64);
    let simulated: Vec<Simulated> = models
        .iter()
        .map(|m| simulate_one(m, spec, simulation, &[], &progress))
        .collect();
    progress.finish();
    let quantiles: Vec<Quantiles> = simulated
        .iter()
        .map(|s| Quantiles::new(&s.histogram.recorded_s()))
        .collect();
    let index_of = |profile: &str, volume: u64| {
        models
            .iter()
            .position(|m| m.profile == profile && m.volume == volume)
    };

    let mut checked = Vec::with_capacity(runs.len());
    let mut nearest_counts = vec![0u64; models.len()];
    for r in runs {
        let g = &grids.iter().find(|(p, _)| *p == r.profile).expect("grid").1;
        let upper = g.partition_point(|&v| v < r.volume).min(g.len() - 1);
        let lower = if g[upper] == r.volume || upper == 0 {
            upper
        } else {
            upper - 1
        };
        let (a, b) = (
            index_of(&r.profile, g[lower]).expect("simulated"),
            index_of(&r.profile, g[upper]).expect("simulated"),
        );
        let t = if g[upper] == g[lower] {
            0.0
        } else {
            ((r.volume - g[lower]) as f64 / (g[upper] - g[lower]) as f64).clamp(0.0, 1.0)
        };
        let q = |u: f64| (1.0 - t) * quantiles[a].at(u) + t * quantiles[b].at(u);
        nearest_counts[if t < 0.5 { a } else { b }] += 1;
        checked.push(CheckedRun {
            line: r.line,
            profile: r.profile.clone(),
            volume: r.volume,
            duration_s: r.seconds,
            pit: pit_of(q, r.seconds),
            sim_p50_s: q(0.5),
            sim_p99_s: q(0.99),
            sim_p999_s: q(0.999),
        });
    }
    let pits: Vec<f64> = checked.iter().map(|c| c.pit).collect();
    let beyond_p99 = checked
        .iter()
        .filter(|c| c.duration_s > c.sim_p99_s)
        .count() as u64;
    let beyond_p999 = checked
        .iter()
        .filter(|c| c.duration_s > c.sim_p999_s)
        .count() as u64;
    let figures = check_figures(&pits, beyond_p99, beyond_p999);
    let (consistent, words) = verdict(&figures);
    let n = runs.len() as f64;
    let record = CheckRecord {
        workload: spec.workload.name.clone(),
        unit: spec.workload.unit.clone(),
        observed: observed.display().to_string(),
        runs: runs.len() as u64,
        replays: simulation.replays,
        seed: simulation.seed,
        bands: models
            .iter()
            .zip(&quantiles)
            .zip(&nearest_counts)
            .map(|((m, q), runs)| CheckBand {
                profile: m.profile.clone(),
                volume: m.volume,
                p50_s: q.at(0.5),
                p99_s: q.at(0.99),
                p999_s: q.at(0.999),
                runs: *runs,
            })
            .collect(),
        ks_distance: figures.ks_distance,
        ks_p_value: figures.ks_p,
        median_pit: figures.median_pit,
        beyond_p99,
        expected_beyond_p99: n * 0.01,
        p99_p_value: figures.p99_p,
        beyond_p999,
        expected_beyond_p999: n * 0.001,
        p999_p_value: figures.p999_p,
        alpha: CHECK_ALPHA,
        consistent,
        verdict: words,
    };
    Ok(Checked {
        record,
        runs: checked,
    })
}

/// What the terminal shows.
pub fn text(r: &CheckRecord) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "check of {} against {} observed runs ({}), {} replays per volume, seed {}",
        r.workload,
        format_count(r.runs),
        r.observed,
        format_count(r.replays),
        r.seed
    );
    for b in &r.bands {
        let _ = writeln!(
            o,
            "  {} at {} {}: simulated P50 {}  P99 {}  P99.9 {}  ({} runs nearest)",
            b.profile,
            format_count(b.volume),
            r.unit,
            format_duration_s(b.p50_s),
            format_duration_s(b.p99_s),
            format_duration_s(b.p999_s),
            format_count(b.runs)
        );
    }
    let _ = writeln!(
        o,
        "  where the runs fall (PIT): KS distance {:.3} (p = {:.3}); the median run at the simulated P{:.0}",
        r.ks_distance,
        r.ks_p_value,
        r.median_pit * 100.0
    );
    let _ = writeln!(
        o,
        "  beyond the simulated P99:   {} of {} ({:.1} expected, binomial p = {:.3})",
        r.beyond_p99, r.runs, r.expected_beyond_p99, r.p99_p_value
    );
    let _ = writeln!(
        o,
        "  beyond the simulated P99.9: {} of {} ({:.1} expected, binomial p = {:.3})",
        r.beyond_p999, r.runs, r.expected_beyond_p999, r.p999_p_value
    );
    let _ = writeln!(o, "  verdict: {}", r.verdict);
    if r.expected_beyond_p999 < 3.0 {
        let _ = writeln!(
            o,
            "  note: {} runs expect {:.1} beyond the simulated P99.9, too few for that test to reject much: they speak for the body and the P99 (about 3,000 runs are needed for the P99.9)",
            format_count(r.runs),
            r.expected_beyond_p999
        );
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn few_volumes_are_simulated_as_they_are_many_on_a_grid() {
        assert_eq!(grid(&[1800, 1700, 1800]), vec![1700, 1800]);
        let g = grid(&(1000..2000).collect::<Vec<_>>());
        assert_eq!(g.len(), MAX_VOLUMES);
        assert_eq!((g[0], g[MAX_VOLUMES - 1]), (1000, 1999));
    }
}
