//! Calibration: observed per-call durations (read by [`crate::observed`]) grouped into each step's
//! samples ([`step_samples`]), each step fitted ([`crate::fit`]), and the fitted steps written as a
//! spec ([`crate::spec_writer`]) with each fit in a comment above its step ([`calibrate`]). The
//! files are the caller's to write: a [`Calibration`] holds the spec's text and each samples
//! file's. Every refusal is a [`CalibrationError`] naming the flag or the file.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use lockbench_core::records::model::{CalibrationRecord, StepFit};
use lockbench_core::records::tail_samples_needed;
use lockbench_core::{format_count, format_duration_s};

use crate::fit::{Fit, fit, ks_tolerance};
use crate::latency::Latency;
use crate::observed::{CsvColumns, Input, Observed, ObservedError};
use crate::spec::{MAX_STEPS, Step, WorkloadSpec};
use crate::spec_writer::{Precision, SpecWriter, latency_toml};
use crate::target::Target;

/// What an input file of `calibrate` must be, said when it is empty.
const EXPECTED: &str =
    "a CSV with a header row (a step and a duration column), or an OTLP JSON trace export";
/// Most distinct names quoted when a `--step` is not among them.
const NAMES_SHOWN: usize = 20;

/// What [`calibrate`] reads and how.
#[derive(Clone, Debug)]
pub struct CalibrationOptions {
    /// The files of observations (CSV or OTLP JSON), as given.
    pub inputs: Vec<PathBuf>,
    /// How their CSV columns are named.
    pub columns: CsvColumns,
    /// Span or row name FROM read as step TO (`--rename FROM=TO`).
    pub renames: Vec<(String, String)>,
    /// Only these steps (`--step`), each of which must be observed; empty for every step.
    pub steps: Vec<String>,
    /// The spec being calibrated (`--spec`): its workload and targets are kept, its steps are
    /// the only names a CSV row may give, and its unobserved steps are written as they were.
    pub base: Option<WorkloadSpec>,
}

/// The observed durations of one step.
#[derive(Clone, Debug, PartialEq)]
pub struct StepSamples {
    /// The step's name (after `--rename`).
    pub step: String,
    /// What it calls: the base spec's target for its step, else `db` when a span of it carried
    /// `db.system`, else `api`.
    pub target: Target,
    /// Its durations in seconds, in the order read.
    pub seconds: Vec<f64>,
}

/// A calibrated spec, ready to be written.
#[derive(Clone, Debug)]
pub struct Calibration {
    /// How each step was fitted, and which steps of the base spec were kept.
    pub record: CalibrationRecord,
    /// The spec's text.
    pub spec: String,
    /// Each empirical step's samples file: its name beside the spec and its text (microseconds,
    /// one a line).
    pub samples_files: Vec<(String, String)>,
}

/// Why no spec can be calibrated from these observations.
#[derive(Debug, thiserror::Error)]
pub enum CalibrationError {
    /// An input holds a value that cannot be read.
    #[error(transparent)]
    Observed(#[from] ObservedError),
    /// A CSV row names no step of `--spec`.
    #[error(
        "{place}: field step: no step \"{name}\" in --spec (its steps: {}); map it with --rename {name}=STEP",
        steps.join(", ")
    )]
    UnknownStep {
        /// Where the row is: `FILE:LINE`.
        place: String,
        /// The name it gives, after `--rename`.
        name: String,
        /// The steps of `--spec`.
        steps: Vec<String>,
    },
    /// A `--step` that nothing observed.
    #[error("--step: no durations of step \"{step}\" in {} (names there: {})", inputs.join(", "), seen.join(", "))]
    NotObserved {
        /// The step asked for.
        step: String,
        /// The files read.
        inputs: Vec<String>,
        /// The first names they hold.
        seen: Vec<String>,
    },
    /// No observation belongs to a step.
    #[error("{}: {}", inputs.join(", "), if *with_spec {
        "no span is named after a step of --spec; map names with --rename SPAN=STEP"
    } else {
        "holds no durations"
    })]
    Empty {
        /// The files read.
        inputs: Vec<String>,
        /// Whether a `--spec` chose the steps.
        with_spec: bool,
    },
    /// More step names than a spec can hold.
    #[error("{}: {count} distinct step names, and a spec holds at most {MAX_STEPS} steps: choose them with --step or --spec", inputs.join(", "))]
    TooManySteps {
        /// The files read.
        inputs: Vec<String>,
        /// Distinct step names observed.
        count: usize,
    },
    /// An unobserved step of `--spec` reads a samples file, whose path would not hold beside the
    /// new spec.
    #[error(
        "{}: step \"{step}\" is not observed and its latency reads a samples file beside this spec; observe it too, or name the steps to fit with --step",
        spec.display()
    )]
    KeptStepReadsFile {
        /// The base spec.
        spec: PathBuf,
        /// The step.
        step: String,
    },
    /// A fitted value toml cannot write: a bug, not an input error.
    #[error("calibrate could not write a spec: {0}")]
    Write(#[from] toml::ser::Error),
}

impl CalibrationError {
    /// True for everything but [`CalibrationError::Write`]: the user can fix it.
    pub fn is_input(&self) -> bool {
        !matches!(self, CalibrationError::Write(_))
    }
}

/// Every input's durations grouped by step, in the order each step was first observed.
pub fn step_samples(options: &CalibrationOptions) -> Result<Vec<StepSamples>, CalibrationError> {
    let mut steps: Vec<StepSamples> = Vec::new();
    let mut database: Vec<bool> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut seen: Vec<String> = Vec::new();
    for path in &options.inputs {
        let input = Input::load(path, EXPECTED)?;
        for o in input.observations(&options.columns)? {
            if !seen.contains(&o.name) && seen.len() < NAMES_SHOWN {
                seen.push(o.name.clone());
            }
            let Some(step) = step_of(&o, options, input.trace)? else {
                continue;
            };
            let i = *index.entry(step.clone()).or_insert_with(|| {
                steps.push(StepSamples {
                    step,
                    target: Target::Api,
                    seconds: Vec::new(),
                });
                database.push(false);
                steps.len() - 1
            });
            database[i] |= o.database;
            steps[i].seconds.push(o.seconds);
        }
    }
    let inputs = input_names(options);
    if let Some(step) = options.steps.iter().find(|s| !index.contains_key(*s)) {
        return Err(CalibrationError::NotObserved {
            step: step.clone(),
            inputs,
            seen,
        });
    }
    if steps.is_empty() {
        return Err(CalibrationError::Empty {
            inputs,
            with_spec: options.base.is_some(),
        });
    }
    if steps.len() > MAX_STEPS {
        return Err(CalibrationError::TooManySteps {
            inputs,
            count: steps.len(),
        });
    }
    for (s, database) in steps.iter_mut().zip(database) {
        s.target = match options
            .base
            .as_ref()
            .and_then(|b| b.steps.iter().find(|b| b.name == s.step))
        {
            Some(b) => b.target,
            None if database => Target::Db,
            None => Target::Api,
        };
    }
    Ok(steps)
}

/// Fits every observed step and writes the spec `out` is to hold, naming each empirical step's
/// samples file after `out`'s stem.
pub fn calibrate(
    options: &CalibrationOptions,
    out: &Path,
) -> Result<Calibration, CalibrationError> {
    let samples = step_samples(options)?;
    // The steps of --spec that nothing observed stay in the spec as they were, after the fitted
    // ones: a calibration never drops a step silently.
    let kept: Vec<&Step> = match &options.base {
        Some(base) if options.steps.is_empty() => base
            .steps
            .iter()
            .filter(|s| !samples.iter().any(|o| o.step == s.name))
            .collect(),
        _ => Vec::new(),
    };
    if let (Some(base), Some(step)) = (
        &options.base,
        kept.iter()
            .find(|s| reads_file(&s.latency) || s.per_unit.as_ref().is_some_and(reads_file)),
    ) {
        return Err(CalibrationError::KeptStepReadsFile {
            spec: base.path.clone(),
            step: step.name.clone(),
        });
    }
    let inputs = input_names(options);
    let stem = out
        .file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_default();

    let mut w = SpecWriter::new();
    w.comment(&format!(
        "Written by lockbench calibrate from {}.\nEach step's latency is fitted to its observed durations (the fit is in the comment above it).\nCopy a step's `latency = ...` line into your spec, or validate and simulate this file as it is.",
        inputs.join(", ")
    ))
    .blank();
    let (name, volume, unit) = match &options.base {
        Some(b) => (
            b.workload.name.as_str(),
            b.workload.volume,
            b.workload.unit.as_str(),
        ),
        None => ("calibrated", 1, "items"),
    };
    w.table("workload")
        .entry("name", name)
        .entry("volume", &volume)
        .entry("unit", unit)
        .blank();

    let mut steps = Vec::new();
    let mut samples_files: Vec<(String, String)> = Vec::new();
    for s in &samples {
        let mut f = fit(&s.seconds);
        let samples_file = match &mut f.latency {
            Latency::Empirical { file, samples, .. } => {
                let name = samples_file_name(&stem, &s.step, &samples_files);
                *file = PathBuf::from(&name);
                let text = samples
                    .iter()
                    .map(|s| format!("{:.3}\n", s * 1e6))
                    .collect();
                samples_files.push((name.clone(), text));
                Some(name)
            }
            _ => None,
        };
        let record = StepFit {
            step: s.step.clone(),
            target: s.target.name().to_string(),
            dist: f.family.name().to_string(),
            samples: f.samples as u64,
            observed_s: f.observed,
            fitted_s: f.fitted,
            ks_distance: f.ks,
            ks_tolerance: ks_tolerance(f.samples),
            lognormal_ks_distance: f.lognormal_ks,
            reason: f.reason.clone(),
            latency_toml: latency_toml(&f.latency, Precision::Fitted)?,
            samples_file,
            warnings: warnings(&f),
            tail_fit: crate::tail_fit::fit_tail(&s.seconds, 0),
        };
        w.comment(&fit_comment(&record));
        w.step(
            &Step {
                name: s.step.clone(),
                target: s.target,
                latency: f.latency,
                per_unit: None,
                idempotent: None,
                guard: None,
                alters_table: false,
            },
            Precision::Fitted,
        )
        .blank();
        steps.push(record);
    }
    if let (Some(base), false) = (&options.base, kept.is_empty()) {
        let names: Vec<&str> = kept.iter().map(|s| s.name.as_str()).collect();
        w.comment(&format!(
            "Not observed, kept as in {}: {}",
            base.path.display(),
            names.join(", ")
        ));
        for step in &kept {
            w.step(step, Precision::Exact).blank();
        }
    }
    Ok(Calibration {
        record: CalibrationRecord {
            inputs,
            out: out.display().to_string(),
            steps,
            kept_steps: kept.iter().map(|s| s.name.clone()).collect(),
        },
        spec: w.finish()?,
        samples_files,
    })
}

/// The step an observation belongs to, or `None` for a span to ignore. A CSV row naming no step
/// of `--spec` is an error; a trace holds other spans too (HTTP handlers, the job itself), so an
/// unknown span is skipped there, and so is any name outside `--step`.
fn step_of(
    o: &Observed,
    options: &CalibrationOptions,
    is_trace: bool,
) -> Result<Option<String>, CalibrationError> {
    let name = options
        .renames
        .iter()
        .find(|(from, _)| *from == o.name)
        .map_or(o.name.clone(), |(_, to)| to.clone());
    if let Some(spec) = &options.base
        && spec.step_index(&name).is_none()
    {
        if is_trace {
            return Ok(None);
        }
        return Err(CalibrationError::UnknownStep {
            place: o.place.clone(),
            name,
            steps: spec.steps.iter().map(|s| s.name.clone()).collect(),
        });
    }
    Ok((options.steps.is_empty() || options.steps.contains(&name)).then_some(name))
}

fn input_names(options: &CalibrationOptions) -> Vec<String> {
    options
        .inputs
        .iter()
        .map(|p| p.display().to_string())
        .collect()
}

fn reads_file(latency: &Latency) -> bool {
    match latency {
        Latency::Empirical { .. } => true,
        Latency::Mixture(parts) => parts.iter().any(|(_, l)| reads_file(l)),
        _ => false,
    }
}

/// `STEM.STEP.us`, the step made safe for a file name; a name that clashes with one already
/// given gets a number.
fn samples_file_name(stem: &str, step: &str, taken: &[(String, String)]) -> String {
    let safe: String = step
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let base = format!("{stem}.{safe}");
    let mut name = format!("{base}.us");
    let mut n = 2;
    while taken.iter().any(|(t, _)| *t == name) {
        name = format!("{base}-{n}.us");
        n += 1;
    }
    name
}

/// The comment above a fitted step: samples, family, why, the quantiles and the warnings.
fn fit_comment(r: &StepFit) -> String {
    let d = |s: &[f64; 4]| s.map(format_duration_s);
    let (o, f) = (d(&r.observed_s), d(&r.fitted_s));
    let mut text = format!(
        "{}: {} samples, {}: {}\n  observed P50 {} P90 {} P99 {} P99.9 {}\n  fitted   P50 {} P90 {} P99 {} P99.9 {}\n  KS distance {:.4}\n",
        r.step,
        format_count(r.samples),
        r.dist,
        r.reason,
        o[0],
        o[1],
        o[2],
        o[3],
        f[0],
        f[1],
        f[2],
        f[3],
        r.ks_distance
    );
    for w in &r.warnings {
        text.push_str(&format!("  warning: {w}\n"));
    }
    text
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

#[cfg(test)]
mod tests {
    use super::*;

    fn csv(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    fn options(inputs: Vec<PathBuf>) -> CalibrationOptions {
        CalibrationOptions {
            inputs,
            columns: CsvColumns {
                name: Some("step".into()),
                duration: "duration".into(),
                ms: None,
            },
            renames: Vec::new(),
            steps: Vec::new(),
            base: None,
        }
    }

    fn billing() -> WorkloadSpec {
        WorkloadSpec::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("specs/billing.toml"))
            .unwrap()
    }

    /// `n` durations of a lognormal with this median and P99, at evenly spaced quantiles.
    fn lognormal_rows(step: &str, p50: f64, p99: f64, n: usize) -> String {
        let l = Latency::lognormal(p50, p99);
        (0..n)
            .map(|i| {
                let u = (i as f64 + 0.5) / n as f64;
                format!("{step},{:.6}ms\n", l.quantile(u) * 1e3)
            })
            .collect()
    }

    #[test]
    fn samples_keep_the_order_first_observed_across_files_and_follow_renames() {
        let dir = tempfile::tempdir().unwrap();
        let a = csv(
            dir.path(),
            "a.csv",
            "step,duration\nb,1ms\nSELECT x,2ms\nb,3ms\n",
        );
        let b = csv(dir.path(), "b.csv", "step,duration\nc,4ms\nread,5ms\n");
        let mut o = options(vec![a, b]);
        o.renames = vec![("SELECT x".into(), "read".into())];
        let steps = step_samples(&o).unwrap();
        let names: Vec<&str> = steps.iter().map(|s| s.step.as_str()).collect();
        assert_eq!(names, ["b", "read", "c"]);
        assert_eq!(steps[1].seconds, [0.002, 0.005]);
        assert!(steps.iter().all(|s| s.target == Target::Api));

        o.steps = vec!["c".into()];
        let only = step_samples(&o).unwrap();
        assert_eq!(only.len(), 1);
        assert_eq!(only[0].step, "c");
    }

    #[test]
    fn a_target_comes_from_the_spec_else_from_a_database_span() {
        let dir = tempfile::tempdir().unwrap();
        let spans = r#"{"resourceSpans":[{"scopeSpans":[{"spans":[
            {"name":"SELECT 1","startTimeUnixNano":"0","endTimeUnixNano":"1000000","attributes":[{"key":"db.system","value":{"stringValue":"postgresql"}}]},
            {"name":"POST /x","startTimeUnixNano":"0","endTimeUnixNano":"3000000"}]}]}]}"#;
        let trace = csv(dir.path(), "t.json", spans);
        let steps = step_samples(&options(vec![trace.clone()])).unwrap();
        assert_eq!(steps[0].target, Target::Db);
        assert_eq!(steps[1].target, Target::Api);

        // With a spec, spans named after none of its steps are skipped, and a step keeps the
        // spec's target whatever the span says.
        let mut o = options(vec![trace]);
        o.base = Some(billing());
        o.renames = vec![("POST /x".into(), "update_status".into())];
        let steps = step_samples(&o).unwrap();
        assert_eq!(steps.len(), 1);
        assert_eq!(
            (steps[0].step.as_str(), steps[0].target),
            ("update_status", Target::Db)
        );
    }

    #[test]
    fn refusals_name_the_flag_or_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let calls = csv(dir.path(), "calls.csv", "step,duration\na,3ms\n");
        let name = calls.display().to_string();

        let mut o = options(vec![calls.clone()]);
        o.steps = vec!["b".into()];
        let e = step_samples(&o).unwrap_err().to_string();
        assert_eq!(
            e,
            format!("--step: no durations of step \"b\" in {name} (names there: a)")
        );

        let mut o = options(vec![calls.clone()]);
        o.base = Some(billing());
        let e = step_samples(&o).unwrap_err();
        assert!(e.is_input());
        assert!(
            e.to_string().starts_with(&format!(
                "{name}:2: field step: no step \"a\" in --spec (its steps: read_subscription, charge_payment, update_status)"
            )),
            "{e}"
        );

        let header = csv(dir.path(), "header.csv", "step,duration\n");
        let e = step_samples(&options(vec![header.clone()])).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("{}: holds no durations", header.display())
        );

        let many: String = (0..=MAX_STEPS).map(|i| format!("s{i},1ms\n")).collect();
        let many = csv(dir.path(), "many.csv", &format!("step,duration\n{many}"));
        let e = step_samples(&options(vec![many])).unwrap_err().to_string();
        assert!(e.contains("65 distinct step names"), "{e}");

        let bad = csv(dir.path(), "bad.csv", "step,duration\na,-1ms\n");
        let e = step_samples(&options(vec![bad])).unwrap_err();
        assert!(matches!(e, CalibrationError::Observed(_)), "{e}");
    }

    #[test]
    fn a_calibrated_spec_parses_back_to_the_fitted_values() {
        let dir = tempfile::tempdir().unwrap();
        let mut rows = String::from("step,duration\n");
        rows += &lognormal_rows("read_subscription", 0.004, 0.015, 5_000);
        // Uniform between 5 and 10 ms: no lognormal fits, the samples are kept.
        for i in 0..5_000 {
            rows += &format!(
                "update_status,{:.6}ms\n",
                5.0 + 5.0 * (i as f64 + 0.5) / 5e3
            );
        }
        let calls = csv(dir.path(), "calls.csv", &rows);
        let out = dir.path().join("calibrated.toml");
        let c = calibrate(&options(vec![calls]), &out).unwrap();
        assert_eq!(c.samples_files.len(), 1);
        let (file, text) = &c.samples_files[0];
        assert_eq!(file, "calibrated.update_status.us");
        assert_eq!(text.lines().count(), 5_000);
        std::fs::write(dir.path().join(file), text).unwrap();

        let spec = WorkloadSpec::parse(&c.spec, &out).unwrap();
        assert_eq!(spec.workload.name, "calibrated");
        for (step, fitted) in spec.steps.iter().zip(&c.record.steps) {
            assert_eq!(step.name, fitted.step);
            assert_eq!(step.target.name(), fitted.target);
            // The written line is the recorded one, and reads back to the fitted quantiles to
            // the four digits it is written with.
            assert!(
                c.spec
                    .contains(&format!("latency = {}\n", fitted.latency_toml)),
                "{}",
                c.spec
            );
            for (q, want) in crate::fit::SHOWN_QUANTILES.iter().zip(fitted.fitted_s) {
                let got = step.latency.quantile(*q);
                assert!(
                    (got / want - 1.0).abs() < 2e-3,
                    "{} P{q}: {got} vs {want}",
                    step.name
                );
            }
        }
        assert_eq!(c.record.steps[0].dist, "lognormal");
        assert_eq!(c.record.steps[1].dist, "empirical");
        assert!(c.spec.contains("#   KS distance"), "{}", c.spec);
    }

    #[test]
    fn unobserved_steps_of_the_spec_are_kept_exactly_unless_they_read_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut rows = String::from("step,duration\n");
        rows += &lognormal_rows("charge_payment", 0.115, 0.360, 2_000);
        let calls = csv(dir.path(), "calls.csv", &rows);
        let out = dir.path().join("kept.toml");
        let mut o = options(vec![calls]);
        let base = billing();
        o.base = Some(base.clone());
        let c = calibrate(&o, &out).unwrap();
        assert_eq!(c.record.kept_steps, ["read_subscription", "update_status"]);
        let spec = WorkloadSpec::parse(&c.spec, &out).unwrap();
        assert_eq!(
            (spec.workload.name.as_str(), spec.workload.volume),
            ("billing", 1800)
        );
        for kept in &c.record.kept_steps {
            let a = &spec.steps[spec.step_index(kept).unwrap()];
            let b = &base.steps[base.step_index(kept).unwrap()];
            assert_eq!(format!("{a:?}"), format!("{b:?}"));
        }

        let mut with_file = base;
        with_file.steps[0].latency = Latency::Empirical {
            file: "samples.us".into(),
            unit: Some(1e-6),
            samples: std::sync::Arc::from(vec![0.001]),
        };
        o.base = Some(with_file);
        let e = calibrate(&o, &out).unwrap_err().to_string();
        assert!(
            e.contains("step \"read_subscription\" is not observed"),
            "{e}"
        );
        // Naming the steps to fit keeps none, so nothing reads the file.
        o.steps = vec!["charge_payment".into()];
        assert!(calibrate(&o, &out).unwrap().record.kept_steps.is_empty());
    }
}
