//! Workload specs: the TOML a user writes to describe a job, parsed and validated in one place.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Deserializer};

use crate::answers::{DecisionAnswers, Guard, JobAnswers, StepAnswers};
use crate::duration;
use crate::error::SpecError;
use crate::latency::Latency;
use crate::runner::{Runner, RunnerTable};
use crate::schedule::Frequency;
use crate::target::Target;

/// Most steps per item: steps are addressed by a 64-bit mask in the simulator.
pub const MAX_STEPS: usize = 64;
/// Most lanes inside one job run.
/// The largest growth `target_volume` may ask for, as a multiple of today's volume: the trigger
/// search runs up to ten times past it.
pub const MAX_TARGET_SCALE: f64 = 1000.0;
pub const MAX_CONCURRENCY: u32 = 4096;
/// The name given to the implicit profile of a spec that defines none.
pub const IMPLICIT_PROFILE: &str = "baseline";

/// A validated workload spec together with where it came from.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadSpec {
    /// What the job is and how much it processes.
    pub workload: Workload,
    /// What is done, in order, for every item.
    pub steps: Vec<Step>,
    /// Latency-injection scenarios.
    #[serde(default)]
    pub profiles: Vec<Profile>,
    /// The job's answers to the decision rules (the `[decision]` table); `None` when the spec
    /// has none.
    #[serde(default)]
    pub decision: Option<DecisionAnswers>,
    /// The queue or scheduler the job runs under (the `[runner]` table), as written; `None`
    /// when the spec names none. [`WorkloadSpec::runner`] gives it checked.
    #[serde(default)]
    pub runner: Option<RunnerTable>,
    /// The file the spec was read from.
    #[serde(skip)]
    pub path: PathBuf,
    /// The spec's text, stored in results so a run can be reproduced.
    #[serde(skip)]
    pub text: String,
}

/// The `[workload]` table.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    /// Short name, used in results.
    pub name: String,
    /// One line on what the job does.
    #[serde(default)]
    pub description: String,
    /// Units of work per run at scale 1 (customers, table rows).
    #[serde(deserialize_with = "positive")]
    pub volume: u64,
    /// What one unit of volume is called ("customers", "rows").
    #[serde(default = "default_unit")]
    pub unit: String,
    /// Items per run when fixed (migrations), each working on the whole volume; by default one
    /// item per unit of volume.
    #[serde(default, deserialize_with = "positive_option")]
    pub items: Option<u64>,
    /// Items processed in parallel inside one run.
    #[serde(default = "one")]
    pub concurrency: u32,
    /// The TTL the job's lock has today: `lockbench run` prices it (the chance per run that the
    /// job outlives it) and replays the incident live with it.
    #[serde(default, deserialize_with = "duration::deserialize_option")]
    pub current_ttl: Option<Duration>,
    /// The profile that reproduces the job's incident: what `lockbench run` replays live against
    /// the real servers (with `current_ttl`, then with each defence).
    #[serde(default)]
    pub incident_profile: Option<String>,
    /// How often the job runs: a period ("1m", "24h") or a five-field cron expression
    /// ("0 3 * * *", "@daily"). Every yearly figure (double executions a year, the price of
    /// today's TTL) counts runs with it; without it or `runs_per_year`, monthly is assumed.
    #[serde(default)]
    pub schedule: Option<String>,
    /// Runs a year, for a job no schedule describes (run by hand, on demand).
    #[serde(default)]
    pub runs_per_year: Option<f64>,
    /// The volume the lock must hold at before the record is reviewed again (expected growth):
    /// `ttl` sizes the TTL there. Without it the TTL is sized at today's `volume`, and the record
    /// says it assumed so.
    #[serde(default, deserialize_with = "positive_option")]
    pub target_volume: Option<u64>,
    /// Double executions a year the job's owners accept (0.01: one in a century): `ttl` sizes a
    /// TTL whose chance of being outlived stays within it at the job's schedule, beside the
    /// P99.9 x factor one. Without it, 0.01 is assumed and the record says so.
    #[serde(default)]
    pub accepted_double_runs_per_year: Option<f64>,
}

/// One `[[steps]]` entry.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// Step name, unique in the spec.
    pub name: String,
    /// What the step calls.
    pub target: Target,
    /// Latency of one call.
    pub latency: Latency,
    /// Extra latency per unit of volume the item carries (drawn once per call, multiplied by the
    /// item's units): how a backfill grows with table rows.
    #[serde(default)]
    pub per_unit: Option<Latency>,
    /// Running the step twice has the effect of running it once; `None` when not answered.
    #[serde(default)]
    pub idempotent: Option<bool>,
    /// The step's own protection against running twice; `None` when not answered.
    #[serde(default)]
    pub guard: Option<Guard>,
    /// The step alters a table (an ALTER TABLE, which takes ACCESS EXCLUSIVE until COMMIT).
    #[serde(default)]
    pub alters_table: bool,
}

/// One `[[profiles]]` entry: a named latency-injection scenario.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// Profile name, unique in the spec.
    pub name: String,
    /// What real situation it stands for.
    #[serde(default)]
    pub description: String,
    /// Changes to step latencies for the whole run.
    #[serde(default)]
    pub overrides: Vec<Override>,
    /// Correlated slow periods.
    #[serde(default)]
    pub episodes: Vec<Episode>,
    /// Stop-the-world pauses.
    #[serde(default)]
    pub pauses: Option<Pauses>,
}

/// Replaces and/or scales the latency of the steps it selects.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Override {
    /// Selects steps by target.
    #[serde(default)]
    pub target: Option<Target>,
    /// Selects one step by name.
    #[serde(default)]
    pub step: Option<String>,
    /// Replacement latency.
    #[serde(default)]
    pub latency: Option<Latency>,
    /// Multiplier applied after any replacement.
    #[serde(default)]
    pub scale: Option<f64>,
}

/// A correlated slow period: every call of the selected steps that starts inside the window is
/// slowed (or blocked until the window ends).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Episode {
    /// What it stands for ("index rebuild").
    pub name: String,
    /// Calls of this target are affected.
    pub target: Target,
    /// Only this step, if given.
    #[serde(default)]
    pub step: Option<String>,
    /// Probability that the episode happens in a given run.
    #[serde(default = "certain")]
    pub chance: f64,
    /// When it starts, from lock acquisition (a duration or a distribution).
    pub start: Latency,
    /// How long it lasts (a duration or a distribution).
    pub duration: Latency,
    /// Latency multiplier inside the window (drawn uniformly up to `slowdown_max` if given).
    #[serde(default)]
    pub slowdown: Option<f64>,
    /// Upper end of the slowdown range.
    #[serde(default)]
    pub slowdown_max: Option<f64>,
    /// Calls that start inside the window wait for it to end (a lock held by another
    /// transaction) instead of being slowed.
    #[serde(default)]
    pub block: bool,
}

/// Stop-the-world pauses (garbage collection, VM steal): the whole run stands still.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pauses {
    /// Mean time between pauses (exponential inter-arrival).
    #[serde(deserialize_with = "duration::deserialize")]
    pub mean_interval: Duration,
    /// Length of one pause.
    pub duration: Latency,
}

fn default_unit() -> String {
    "items".to_string()
}

fn one() -> u32 {
    1
}

fn certain() -> f64 {
    1.0
}

fn positive<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    let v = i64::deserialize(d)?;
    u64::try_from(v).ok().filter(|v| *v >= 1).ok_or_else(|| {
        serde::de::Error::custom(format!("expected a whole number of at least 1, got {v}"))
    })
}

fn positive_option<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    positive(d).map(Some)
}

/// The longest name that becomes part of a file name.
const MAX_NAME: usize = 100;

/// Refuses a name that cannot be part of a file name: a path separator, `.` or `..`, a control
/// character, or more than [`MAX_NAME`] characters.
fn file_name_part(name: &str) -> Result<(), String> {
    let why = if name.contains('/') || name.contains('\\') {
        "a path separator"
    } else if name == "." {
        "nothing but `.`"
    } else if name.contains("..") {
        "`..`"
    } else if name.chars().any(char::is_control) {
        "a control character"
    } else if name.chars().count() > MAX_NAME {
        "more than 100 characters"
    } else {
        return Ok(());
    };
    Err(format!(
        "expected a name that can be part of a file name (it names result directories and files), got {name:?}, which has {why}"
    ))
}

impl WorkloadSpec {
    /// Reads and validates a spec file, loading any empirical latency files it names.
    pub fn load(path: &Path) -> Result<Self, SpecError> {
        let text =
            lockbench_core::input::read_input_text(path, lockbench_core::input::InputKind::Spec)
                .map_err(|e| SpecError::Read {
                    file: path.to_path_buf(),
                    reason: e.to_string(),
                })?;
        Self::parse(&text, path)
    }

    /// Parses and validates spec text; `path` names it in errors and anchors relative files.
    pub fn parse(text: &str, path: &Path) -> Result<Self, SpecError> {
        if text.trim().is_empty() {
            return Err(SpecError::Invalid {
                file: path.to_path_buf(),
                line: None,
                field: String::new(),
                message: "the file is empty; expected a [workload] table and [[steps]]".into(),
            });
        }
        let invalid = |line, field: String, message: String| SpecError::Invalid {
            file: path.to_path_buf(),
            line,
            field,
            message,
        };
        let deserializer = toml::Deserializer::parse(text).map_err(|e| {
            invalid(
                line_of(text, e.span()),
                String::new(),
                one_line(e.message()),
            )
        })?;
        let mut spec: WorkloadSpec =
            serde_path_to_error::deserialize(deserializer).map_err(|e| {
                let field = e.path().to_string();
                let inner = e.into_inner();
                invalid(
                    line_of(text, inner.span()),
                    if field == "." { String::new() } else { field },
                    one_line(inner.message()),
                )
            })?;
        spec.path = path.to_path_buf();
        spec.text = text.to_string();
        spec.validate()
            .map_err(|(field, message)| invalid(None, field, message))?;
        let base = path.parent().unwrap_or(Path::new("."));
        spec.load_files(base)
            .map_err(|(field, message)| invalid(None, field, message))?;
        if spec.profiles.is_empty() {
            spec.profiles.push(Profile {
                name: IMPLICIT_PROFILE.to_string(),
                description: "the spec's latencies as written".to_string(),
                overrides: Vec::new(),
                episodes: Vec::new(),
                pauses: None,
            });
        }
        Ok(spec)
    }

    /// The profile called `name`.
    pub fn profile(&self, name: &str) -> Result<&Profile, SpecError> {
        self.profiles
            .iter()
            .find(|p| p.name == name)
            .ok_or_else(|| SpecError::UnknownProfile {
                file: self.path.clone(),
                profile: name.to_string(),
                known: self.profiles.iter().map(|p| p.name.clone()).collect(),
            })
    }

    /// The profile called `name`, or the spec's first when none is named (the profile of past
    /// runs that name none).
    pub fn profile_or_first(&self, name: Option<&str>) -> Result<&Profile, SpecError> {
        match name {
            Some(name) => self.profile(name),
            None => Ok(&self.profiles[0]),
        }
    }

    /// The job's runner, checked (when the spec was read), with its defaults filled in; `None`
    /// when the spec names none.
    pub fn runner(&self) -> Option<Runner> {
        self.runner.as_ref().and_then(|t| t.check().ok())
    }

    /// Index of the step called `name`.
    pub fn step_index(&self, name: &str) -> Option<usize> {
        self.steps.iter().position(|s| s.name == name)
    }

    /// The job's answers to the decision rules.
    pub fn answers(&self) -> JobAnswers {
        JobAnswers {
            job: self.workload.name.clone(),
            spec: self.path.clone(),
            decision: self.decision.clone(),
            steps: self
                .steps
                .iter()
                .map(|s| StepAnswers {
                    name: s.name.clone(),
                    target: s.target,
                    idempotent: s.idempotent,
                    guard: s.guard,
                    alters_table: s.alters_table,
                })
                .collect(),
            frequency: self.frequency(),
            target_volume: self.workload.target_volume,
        }
    }

    /// How often the job runs, from its `schedule` or `runs_per_year`; monthly, marked as
    /// assumed, when the spec says neither.
    pub fn frequency(&self) -> Frequency {
        let w = &self.workload;
        // Checked when the spec was read.
        Frequency::of_workload(w.schedule.as_deref(), w.runs_per_year)
            .unwrap_or_else(|_| Frequency::assumed())
    }

    /// The scale `target_volume` is of today's volume; `None` when the spec does not say.
    pub fn target_scale(&self) -> Option<f64> {
        let w = &self.workload;
        w.target_volume
            .map(|target| target as f64 / w.volume as f64)
    }

    /// Volume of one run at `scale` (at least one unit).
    pub fn volume_at(&self, scale: f64) -> u64 {
        ((self.workload.volume as f64 * scale).round() as u64).max(1)
    }

    fn validate(&self) -> Result<(), (String, String)> {
        let w = &self.workload;
        if w.name.trim().is_empty() {
            return Err(("workload.name".into(), "expected a non-empty name".into()));
        }
        // Names become parts of file names (`ttl-NAME`, `replay-NAME-MODE`, chart files).
        file_name_part(&w.name).map_err(|why| ("workload.name".to_string(), why))?;
        for (i, step) in self.steps.iter().enumerate() {
            file_name_part(&step.name).map_err(|why| (format!("steps[{i}].name"), why))?;
        }
        for (p, profile) in self.profiles.iter().enumerate() {
            file_name_part(&profile.name).map_err(|why| (format!("profiles[{p}].name"), why))?;
        }
        if !(1..=MAX_CONCURRENCY).contains(&w.concurrency) {
            return Err((
                "workload.concurrency".into(),
                format!("expected 1 to {MAX_CONCURRENCY}, got {}", w.concurrency),
            ));
        }
        if self.steps.is_empty() {
            return Err((
                "steps".into(),
                "expected at least one [[steps]] entry".into(),
            ));
        }
        Frequency::of_workload(w.schedule.as_deref(), w.runs_per_year)?;
        if let Some(target) = w.target_volume.filter(|t| *t < w.volume) {
            return Err((
                "workload.target_volume".into(),
                format!(
                    "expected at least today's volume ({}), got {target}: the TTL is sized for the volume the job grows to",
                    w.volume
                ),
            ));
        }
        if let Some(scale) = self.target_scale().filter(|s| *s > MAX_TARGET_SCALE) {
            return Err((
                "workload.target_volume".into(),
                format!(
                    "expected at most {} times today's volume ({}), got {scale:.0} times",
                    MAX_TARGET_SCALE, w.volume
                ),
            ));
        }
        if let Some(budget) = w.accepted_double_runs_per_year {
            check_budget(budget)
                .map_err(|why| ("workload.accepted_double_runs_per_year".to_string(), why))?;
        }
        if let Some(runner) = &self.runner {
            runner.check()?;
        }
        if let Some(name) = &w.incident_profile {
            let known: Vec<&str> = self.profiles.iter().map(|p| p.name.as_str()).collect();
            if !known.contains(&name.as_str()) {
                return Err((
                    "workload.incident_profile".into(),
                    format!(
                        "expected the name of one of the spec's [[profiles]] ({}), got \"{name}\"",
                        if known.is_empty() {
                            "it defines none".to_string()
                        } else {
                            known.join(", ")
                        }
                    ),
                ));
            }
        }
        if self.steps.len() > MAX_STEPS {
            return Err((
                "steps".into(),
                format!("expected at most {MAX_STEPS} steps"),
            ));
        }
        for (i, step) in self.steps.iter().enumerate() {
            if self.steps[..i].iter().any(|s| s.name == step.name) {
                return Err((
                    format!("steps[{i}].name"),
                    format!("step name \"{}\" is used twice", step.name),
                ));
            }
        }
        for (p, profile) in self.profiles.iter().enumerate() {
            let at = |field: &str| format!("profiles[{p}].{field}");
            if self.profiles[..p].iter().any(|q| q.name == profile.name) {
                return Err((
                    at("name"),
                    format!("profile name \"{}\" is used twice", profile.name),
                ));
            }
            for (o, ov) in profile.overrides.iter().enumerate() {
                let at = |field: &str| format!("profiles[{p}].overrides[{o}].{field}");
                if ov.target.is_none() && ov.step.is_none() {
                    return Err((
                        at("target"),
                        "expected a target or a step to apply to".into(),
                    ));
                }
                self.check_step_name(ov.step.as_deref(), at("step"))?;
                if ov.latency.is_none() && ov.scale.is_none() {
                    return Err((
                        at("scale"),
                        "expected a latency or a scale (or both)".into(),
                    ));
                }
                if let Some(scale) = ov.scale
                    && !(scale.is_finite() && scale > 0.0)
                {
                    return Err((
                        at("scale"),
                        format!("expected a factor above zero, got {scale}"),
                    ));
                }
            }
            for (e, ep) in profile.episodes.iter().enumerate() {
                let at = |field: &str| format!("profiles[{p}].episodes[{e}].{field}");
                self.check_step_name(ep.step.as_deref(), at("step"))?;
                if !(0.0..=1.0).contains(&ep.chance) {
                    return Err((
                        at("chance"),
                        format!("expected a probability from 0 to 1, got {}", ep.chance),
                    ));
                }
                match (ep.block, ep.slowdown) {
                    (true, Some(_)) => {
                        return Err((
                            at("block"),
                            "expected either block = true or a slowdown, not both".into(),
                        ));
                    }
                    (false, None) => {
                        return Err((
                            at("slowdown"),
                            "expected a slowdown factor (or block = true)".into(),
                        ));
                    }
                    (false, Some(s)) if !(s.is_finite() && s > 0.0) => {
                        return Err((
                            at("slowdown"),
                            format!("expected a factor above zero, got {s}"),
                        ));
                    }
                    _ => {}
                }
                if let Some(max) = ep.slowdown_max {
                    let min = ep.slowdown.unwrap_or(f64::INFINITY);
                    if !(max.is_finite() && max >= min) {
                        return Err((
                            at("slowdown_max"),
                            format!("expected a factor of at least slowdown ({min}), got {max}"),
                        ));
                    }
                }
            }
            if let Some(pauses) = &profile.pauses
                && pauses.mean_interval.is_zero()
            {
                return Err((
                    at("pauses.mean_interval"),
                    "expected a mean interval above zero".into(),
                ));
            }
        }
        self.answers().check()
    }

    fn check_step_name(&self, step: Option<&str>, field: String) -> Result<(), (String, String)> {
        match step {
            Some(name) if self.step_index(name).is_none() => Err((
                field,
                format!(
                    "no step named \"{name}\"; the spec has: {}",
                    self.steps
                        .iter()
                        .map(|s| s.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )),
            _ => Ok(()),
        }
    }

    fn load_files(&mut self, base: &Path) -> Result<(), (String, String)> {
        for (i, step) in self.steps.iter_mut().enumerate() {
            step.latency
                .load_files(base)
                .map_err(|m| (format!("steps[{i}].latency"), m))?;
            if let Some(per_unit) = &mut step.per_unit {
                per_unit
                    .load_files(base)
                    .map_err(|m| (format!("steps[{i}].per_unit"), m))?;
            }
        }
        for (p, profile) in self.profiles.iter_mut().enumerate() {
            for (o, ov) in profile.overrides.iter_mut().enumerate() {
                if let Some(l) = &mut ov.latency {
                    l.load_files(base)
                        .map_err(|m| (format!("profiles[{p}].overrides[{o}].latency"), m))?;
                }
            }
            for (e, ep) in profile.episodes.iter_mut().enumerate() {
                let at = |f: &str| format!("profiles[{p}].episodes[{e}].{f}");
                ep.start.load_files(base).map_err(|m| (at("start"), m))?;
                ep.duration
                    .load_files(base)
                    .map_err(|m| (at("duration"), m))?;
            }
            if let Some(pauses) = &mut profile.pauses {
                pauses
                    .duration
                    .load_files(base)
                    .map_err(|m| (format!("profiles[{p}].pauses.duration"), m))?;
            }
        }
        Ok(())
    }
}

impl Profile {
    /// The 99.9th percentile of this profile's stop-the-world pauses: the longest stall a lease
    /// renewal must survive. `None` when the profile injects no pauses.
    pub fn pause_p999(&self) -> Option<Duration> {
        self.pauses
            .as_ref()
            .map(|p| Duration::from_secs_f64(p.duration.quantile(0.999).min(1e9)))
    }
}

fn line_of(text: &str, span: Option<std::ops::Range<usize>>) -> Option<usize> {
    span.map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1)
}

fn one_line(message: &str) -> String {
    message.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A yearly budget of double executions: a positive, finite count, below a million a year (a
/// budget that large accepts a double execution on almost every run of any schedule).
pub fn check_budget(per_year: f64) -> Result<(), String> {
    if per_year.is_finite() && per_year > 0.0 && per_year < 1e6 {
        Ok(())
    } else {
        Err(format!(
            "expected a positive number of double executions a year (0.01 is one in a century), got {per_year}"
        ))
    }
}
