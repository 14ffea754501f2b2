//! `lockbench calibrate`: a spec whose step latencies are fitted to observed per-call durations.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, Result};
use lockbench_core::records::model::{CalibrationRecord, StepFit};
use lockbench_core::records::{tail_samples_needed, to_json};
use lockbench_core::{format_count, format_duration_s};
use lockbench_workloads::fit::{Family, Fit, fit, ks_tolerance, lognormal_p50_p99};
use lockbench_workloads::latency::Latency;
use lockbench_workloads::{MAX_STEPS, Target, WorkloadSpec};

use crate::cli::CalibrateArgs;
use crate::options::{UsageError, usage};
use lockbench_workloads::observed::{CsvColumns, Input, Observed};

pub fn run(args: &CalibrateArgs) -> Result<ExitCode> {
    let base = match &args.spec {
        Some(path) => Some(WorkloadSpec::load(path)?),
        None => None,
    };
    let renames = renames(&args.renames)?;
    check_out(&args.out)?;
    let columns = CsvColumns {
        name: Some(args.step_column.clone()),
        duration: args.duration_column.clone(),
        ms: args.ms_column.clone(),
    };
    // Step name -> (database call seen, durations), in the order first observed.
    let mut order: Vec<String> = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    let mut by_step: BTreeMap<String, (bool, Vec<f64>)> = BTreeMap::new();
    for path in &args.inputs {
        let input = Input::load(
            path,
            "a CSV with a header row (a step and a duration column), or an OTLP JSON trace export",
        )?;
        for o in input.observations(&columns)? {
            if !seen.contains(&o.name) && seen.len() < 20 {
                seen.push(o.name.clone());
            }
            let Some(step) = step_of(&o, &renames, base.as_ref(), &args.steps, input.trace)? else {
                continue;
            };
            let entry = by_step.entry(step.clone()).or_insert_with(|| {
                order.push(step);
                (false, Vec::new())
            });
            entry.0 |= o.database;
            entry.1.push(o.seconds);
        }
    }
    let inputs: Vec<String> = args
        .inputs
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    for wanted in &args.steps {
        if !by_step.contains_key(wanted) {
            return Err(usage(
                "--step",
                format!(
                    "no durations of step \"{wanted}\" in {} (names there: {})",
                    inputs.join(", "),
                    seen.join(", ")
                ),
            )
            .into());
        }
    }
    if order.is_empty() {
        return Err(usage(
            &inputs.join(", "),
            match &base {
                Some(_) => {
                    "no span is named after a step of --spec; map names with --rename SPAN=STEP"
                }
                None => "holds no durations",
            },
        )
        .into());
    }

    if order.len() > MAX_STEPS {
        return Err(usage(
            &inputs.join(", "),
            format!(
                "{} distinct step names, and a spec holds at most {MAX_STEPS} steps: choose them with --step or --spec",
                order.len()
            ),
        )
        .into());
    }
    let mut fits = Vec::new();
    for step in &order {
        let (database, samples) = &by_step[step];
        let target = match base
            .as_ref()
            .and_then(|b| b.steps.iter().find(|s| &s.name == step))
        {
            Some(s) => s.target,
            None if *database => Target::Db,
            None => Target::Api,
        };
        fits.push((step.clone(), target, fit(samples)));
    }
    let record = write_spec(args, base.as_ref(), &inputs, &fits)?;
    if args.json {
        std::io::stdout().write_all(&to_json(&record))?;
    } else {
        print!("{}", table(&record));
    }
    eprintln!(
        "lockbench: calibrate: spec written to {}",
        args.out.display()
    );
    Ok(ExitCode::SUCCESS)
}

fn renames(pairs: &[String]) -> Result<Vec<(String, String)>, UsageError> {
    pairs
        .iter()
        .map(|p| match p.split_once('=') {
            Some((from, to)) if !from.is_empty() && !to.is_empty() => {
                Ok((from.to_string(), to.to_string()))
            }
            _ => Err(usage(
                "--rename",
                format!("expected FROM=TO (a span or row name and a step), got \"{p}\""),
            )),
        })
        .collect()
}

fn check_out(out: &Path) -> Result<(), UsageError> {
    let flag = format!("--out {}", out.display());
    if out.exists() {
        return Err(usage(&flag, "exists; remove it or choose another file"));
    }
    let dir = out.parent().filter(|d| !d.as_os_str().is_empty());
    if dir.is_some_and(|d| !d.is_dir()) {
        return Err(usage(&flag, "its folder does not exist"));
    }
    if out.file_stem().is_none() {
        return Err(usage(&flag, "expected a file name such as calibrated.toml"));
    }
    Ok(())
}

/// The step an observation belongs to, or `None` for a span to ignore. A CSV row naming no step
/// of `--spec` is an error; a trace holds other spans too (HTTP handlers, the job itself), so an
/// unknown span is skipped there, and so is any name outside `--step`.
fn step_of(
    o: &Observed,
    renames: &[(String, String)],
    base: Option<&WorkloadSpec>,
    only: &[String],
    is_trace: bool,
) -> Result<Option<String>, UsageError> {
    let name = renames
        .iter()
        .find(|(from, _)| *from == o.name)
        .map_or(o.name.clone(), |(_, to)| to.clone());
    if let Some(spec) = base
        && spec.step_index(&name).is_none()
    {
        if is_trace {
            return Ok(None);
        }
        let steps: Vec<&str> = spec.steps.iter().map(|s| s.name.as_str()).collect();
        return Err(usage(
            &o.place,
            format!(
                "field step: no step \"{name}\" in --spec (its steps: {}); map it with --rename {name}=STEP",
                steps.join(", ")
            ),
        ));
    }
    Ok((only.is_empty() || only.contains(&name)).then_some(name))
}

/// Writes the samples files of empirical steps, then the spec, each whole or not at all.
fn write_spec(
    args: &CalibrateArgs,
    base: Option<&WorkloadSpec>,
    inputs: &[String],
    fits: &[(String, Target, Fit)],
) -> Result<CalibrationRecord> {
    let folder = args
        .out
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .map_or(PathBuf::from("."), Path::to_path_buf);
    let stem = args
        .out
        .file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_default();
    // One samples file per empirical step, named after it; names that clash once made safe for a
    // file name get a number. None may exist yet.
    let mut files: Vec<Option<String>> = Vec::new();
    for (step, _, f) in fits {
        let file = (f.family == Family::Empirical).then(|| {
            let base = format!("{stem}.{}", file_safe(step));
            let mut name = format!("{base}.us");
            let mut n = 2;
            while files.iter().flatten().any(|f| *f == name) {
                name = format!("{base}-{n}.us");
                n += 1;
            }
            name
        });
        files.push(file);
    }
    if let Some(taken) = files.iter().flatten().find(|f| folder.join(f).exists()) {
        return Err(usage(
            &format!("--out {}", args.out.display()),
            format!(
                "the samples file {} beside it exists; remove it or choose another --out",
                folder.join(taken).display()
            ),
        )
        .into());
    }
    let mut steps = Vec::new();
    let mut written: Vec<PathBuf> = Vec::new();
    let mut text = String::new();
    let _ = writeln!(
        text,
        "# Written by lockbench calibrate from {}.\n# Each step's latency is fitted to its observed durations (the fit is in the comment above it).\n# Copy a step's `latency = ...` line into your spec, or validate and simulate this file as it is.\n",
        inputs.join(", ")
    );
    let (name, volume, unit) = match base {
        Some(b) => (
            b.workload.name.clone(),
            b.workload.volume,
            b.workload.unit.clone(),
        ),
        None => ("calibrated".to_string(), 1, "items".to_string()),
    };
    let _ = writeln!(
        text,
        "[workload]\nname = {}\nvolume = {volume}\nunit = {}\n",
        toml_string(&name),
        toml_string(&unit)
    );
    for ((step, target, f), samples_file) in fits.iter().zip(files) {
        let latency_toml = latency_toml(&f.latency, samples_file.as_deref());
        if let (Some(file), Latency::Empirical { samples, .. }) = (&samples_file, &f.latency) {
            let path = folder.join(file);
            let body: String = samples
                .iter()
                .map(|s| format!("{:.3}\n", s * 1e6))
                .collect();
            if let Err(e) = write_whole(&path, &body) {
                remove_all(&written);
                return Err(e);
            }
            written.push(path);
        }
        let warnings = warnings(f);
        let fit = StepFit {
            step: step.clone(),
            target: target.name().to_string(),
            dist: f.family.name().to_string(),
            samples: f.samples as u64,
            observed_s: f.observed,
            fitted_s: f.fitted,
            ks_distance: f.ks,
            ks_tolerance: ks_tolerance(f.samples),
            lognormal_ks_distance: f.lognormal_ks,
            reason: f.reason.clone(),
            latency_toml: latency_toml.clone(),
            samples_file,
            warnings,
        };
        let _ = writeln!(
            text,
            "# {step}: {} samples, {}: {}",
            format_count(fit.samples),
            fit.dist,
            fit.reason
        );
        let _ = writeln!(
            text,
            "#   observed P50 {} P90 {} P99 {} P99.9 {}\n#   fitted   P50 {} P90 {} P99 {} P99.9 {}\n#   KS distance {:.4}",
            format_duration_s(f.observed[0]),
            format_duration_s(f.observed[1]),
            format_duration_s(f.observed[2]),
            format_duration_s(f.observed[3]),
            format_duration_s(f.fitted[0]),
            format_duration_s(f.fitted[1]),
            format_duration_s(f.fitted[2]),
            format_duration_s(f.fitted[3]),
            f.ks
        );
        for w in &fit.warnings {
            let _ = writeln!(text, "#   warning: {w}");
        }
        let _ = writeln!(
            text,
            "[[steps]]\nname = {}\ntarget = \"{}\"\nlatency = {latency_toml}\n",
            toml_string(step),
            fit.target
        );
        steps.push(fit);
    }
    // The steps of --spec that nothing observed stay in the spec as they were, after the fitted
    // ones: a calibration never drops a step silently.
    let kept = match base {
        Some(b) if args.steps.is_empty() => {
            let fitted: Vec<&str> = fits.iter().map(|(s, _, _)| s.as_str()).collect();
            let text = unobserved_steps(b, &fitted)?;
            let names: Vec<String> = b
                .steps
                .iter()
                .filter(|s| !fitted.contains(&s.name.as_str()))
                .map(|s| s.name.clone())
                .collect();
            (names, text)
        }
        _ => (Vec::new(), String::new()),
    };
    if !kept.0.is_empty() {
        let _ = writeln!(
            text,
            "# Not observed, kept as in {}: {}\n{}",
            base.map_or(String::new(), |b| b.path.display().to_string()),
            kept.0.join(", "),
            kept.1
        );
    }
    // What we write must load as `validate` loads it: a fit that does not is our bug, and then
    // nothing is left behind.
    let tmp = args
        .out
        .with_extension(format!("partial-{}.toml", std::process::id()));
    let loaded = std::fs::write(&tmp, &text)
        .with_context(|| format!("writing {}", tmp.display()))
        .and_then(|_| WorkloadSpec::load(&tmp).map_err(anyhow::Error::from))
        .and_then(|_| {
            std::fs::rename(&tmp, &args.out)
                .with_context(|| format!("writing {}", args.out.display()))
        });
    if let Err(e) = loaded {
        let _ = std::fs::remove_file(&tmp);
        remove_all(&written);
        anyhow::bail!("calibrate could not write a spec that reads back: {e:#}");
    }
    Ok(CalibrationRecord {
        inputs: inputs.to_vec(),
        out: args.out.display().to_string(),
        steps,
        kept_steps: kept.0,
    })
}

/// The tails a fit claims beyond what its samples show.
fn warnings(f: &Fit) -> Vec<String> {
    let mut out = Vec::new();
    let n = f.samples as u64;
    for (q, label, i) in [(0.99, "P99", 2), (0.999, "P99.9", 3)] {
        let needed = tail_samples_needed(q);
        if n < needed {
            out.push(format!(
                "{} samples are fewer than the {} a {label} needs (10 beyond it): the fitted {label} of {} is the {}'s extrapolation, not an observation",
                format_count(n),
                format_count(needed),
                format_duration_s(f.fitted[i]),
                f.family.name()
            ));
            break;
        }
    }
    if let Latency::Empirical { samples, .. } = &f.latency {
        out.push(format!(
            "an empirical latency never exceeds its largest sample ({}): a simulation cannot draw a slower call than was observed",
            format_duration_s(samples.last().copied().unwrap_or(0.0))
        ));
    }
    out
}

fn latency_toml(latency: &Latency, samples_file: Option<&str>) -> String {
    match latency {
        Latency::Constant(v) => format!("\"{}\"", duration_text(*v)),
        Latency::LogNormal { mu, sigma } => {
            let (p50, p99) = lognormal_p50_p99(*mu, *sigma);
            let (p50, p99) = (duration_text(p50), duration_text(p99));
            // A mode of identical values (a client timeout, a cached answer) has no spread a
            // spec can write: it is that value.
            if p99 == p50 {
                return format!("\"{p50}\"");
            }
            format!("{{ dist = \"lognormal\", p50 = \"{p50}\", p99 = \"{p99}\" }}")
        }
        Latency::Mixture(parts) => {
            let components: Vec<String> = parts
                .iter()
                .map(|(w, l)| {
                    format!(
                        "{{ weight = {w:.5}, latency = {} }}",
                        latency_toml(l, samples_file)
                    )
                })
                .collect();
            format!(
                "{{ dist = \"mixture\", components = [{}] }}",
                components.join(", ")
            )
        }
        Latency::Empirical { .. } => format!(
            "{{ dist = \"empirical\", file = {}, unit = \"us\" }}",
            toml_string(samples_file.unwrap_or_default())
        ),
        other => format!("\"{}\"", duration_text(other.quantile(0.5))),
    }
}

/// A duration as a spec writes it, to four significant digits: `110.2ms`, `4.512s`, `850.3us`.
fn duration_text(seconds: f64) -> String {
    let (value, unit) = if seconds >= 1.0 {
        (seconds, "s")
    } else if seconds >= 1e-3 {
        (seconds * 1e3, "ms")
    } else if seconds >= 1e-6 {
        (seconds * 1e6, "us")
    } else {
        return format!("{:.0}ns", (seconds * 1e9).max(0.0));
    };
    let decimals = 3usize.saturating_sub(value.abs().log10().floor().max(0.0) as usize);
    let text = format!("{value:.decimals$}");
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    };
    format!("{text}{unit}")
}

fn toml_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_string())
}

fn file_safe(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn write_whole(path: &Path, text: &str) -> Result<()> {
    let tmp = path.with_extension(format!("partial-{}", std::process::id()));
    std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))
}

fn remove_all(paths: &[PathBuf]) {
    for p in paths {
        let _ = std::fs::remove_file(p);
    }
}

/// The fit table the terminal shows.
fn table(r: &CalibrationRecord) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{:<22} {:>9} {:<10} {:>22} {:>22} {:>22} {:>22} {:>7}",
        "step",
        "samples",
        "dist",
        "P50 obs / fit",
        "P90 obs / fit",
        "P99 obs / fit",
        "P99.9 obs / fit",
        "KS"
    );
    for s in &r.steps {
        let pair = |i: usize| {
            format!(
                "{} / {}",
                format_duration_s(s.observed_s[i]),
                format_duration_s(s.fitted_s[i])
            )
        };
        let _ = writeln!(
            o,
            "{:<22} {:>9} {:<10} {:>22} {:>22} {:>22} {:>22} {:>7.4}",
            s.step,
            format_count(s.samples),
            s.dist,
            pair(0),
            pair(1),
            pair(2),
            pair(3),
            s.ks_distance
        );
    }
    for s in &r.steps {
        let _ = writeln!(o, "  {}: {}", s.step, s.reason);
        let _ = writeln!(o, "    latency = {}", s.latency_toml);
        for w in &s.warnings {
            let _ = writeln!(o, "    warning: {w}");
        }
    }
    o
}

/// The `[[steps]]` entries of `base` not in `fitted`, as TOML, each exactly as the base spec has
/// it (re-serialised from its parsed table, so every value is the base's). A step whose latency
/// reads a samples file beside the base spec is refused: the path would not hold beside the new
/// one.
fn unobserved_steps(base: &WorkloadSpec, fitted: &[&str]) -> Result<String> {
    #[derive(serde::Serialize)]
    struct Steps {
        steps: Vec<toml::Table>,
    }
    let table: toml::Table = toml::from_str(&base.text)
        .with_context(|| format!("reading {} again", base.path.display()))?;
    let steps: Vec<toml::Table> = table
        .get("steps")
        .and_then(toml::Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_table().cloned())
        .filter(|t| {
            t.get("name")
                .and_then(toml::Value::as_str)
                .is_some_and(|n| !fitted.contains(&n))
        })
        .collect();
    for step in &steps {
        if toml::to_string(step).unwrap_or_default().contains("file =") {
            let name = step.get("name").and_then(toml::Value::as_str).unwrap_or("");
            return Err(usage(
                &base.path.display().to_string(),
                format!(
                    "step \"{name}\" is not observed and its latency reads a samples file beside this spec; observe it too, or name the steps to fit with --step"
                ),
            )
            .into());
        }
    }
    if steps.is_empty() {
        return Ok(String::new());
    }
    toml::to_string(&Steps { steps }).context("writing the unobserved steps")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_a_spec_writes_them() {
        assert_eq!(duration_text(0.1102345), "110.2ms");
        assert_eq!(duration_text(4.5), "4.5s");
        assert_eq!(duration_text(0.0008503), "850.3us");
        assert_eq!(duration_text(12.0), "12s");
        for s in [0.1102345, 4.5, 0.0008503, 1234.5678, 3e-8] {
            let d = lockbench_workloads::duration::parse(&duration_text(s)).unwrap();
            assert!((d.as_secs_f64() / s - 1.0).abs() < 2e-3, "{s}");
        }
    }
}
