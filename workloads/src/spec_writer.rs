//! Spec writing, the inverse of the parser in `spec.rs`: a [`WorkloadSpec`] or a single latency
//! back to the TOML a user would write, every value through toml's own value serializer (quoting,
//! escapes, inline tables), each table under its header, comments where a person reads them.
//!
//! Tables are written by hand, not as one `toml::to_string` of the spec: toml's document
//! serializer turns every latency into a `[steps.latency]` sub-table, and a spec reads (and a
//! latency is copied between specs) as one `latency = { ... }` line.

use std::time::Duration;

use serde::Serialize;

use crate::answers::DecisionAnswers;
use crate::fit::lognormal_p50_p99;
use crate::latency::Latency;
use crate::runner::RunnerTable;
use crate::spec::{Episode, Override, Pauses, Profile, Step, Workload, WorkloadSpec};

/// How a latency's figures are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    /// Every duration to the nanosecond and every weight in full: the spec parses back to the
    /// same values.
    Exact,
    /// Durations to four significant digits (`110.2ms`) and weights to five decimals, as a fit is
    /// shown; a lognormal whose p50 and p99 read the same is that constant, and a distribution
    /// calibrate does not fit is its median.
    Fitted,
}

/// A spec's text, table by table. Values that cannot be serialised (none of a spec's can) are
/// reported by [`SpecWriter::finish`].
#[derive(Default)]
pub struct SpecWriter {
    text: String,
    error: Option<toml::ser::Error>,
}

impl SpecWriter {
    /// An empty document.
    pub fn new() -> Self {
        Self::default()
    }

    /// `# ` before every line of `text`.
    pub fn comment(&mut self, text: &str) -> &mut Self {
        for line in text.lines() {
            self.text.push_str(if line.is_empty() { "#" } else { "# " });
            self.text.push_str(line);
            self.text.push('\n');
        }
        self
    }

    /// An empty line, between tables.
    pub fn blank(&mut self) -> &mut Self {
        self.text.push('\n');
        self
    }

    /// `[name]`: the entries after it belong to that table.
    pub fn table(&mut self, name: &str) -> &mut Self {
        self.text.push_str(&format!("[{name}]\n"));
        self
    }

    /// `[[name]]`: a new element of an array of tables.
    pub fn array_table(&mut self, name: &str) -> &mut Self {
        self.text.push_str(&format!("[[{name}]]\n"));
        self
    }

    /// `key = value`; `key` is one of the spec's own (bare) field names.
    pub fn entry<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> &mut Self {
        match value_text(value) {
            Ok(value) => self.text.push_str(&format!("{key} = {value}\n")),
            Err(e) => {
                self.error.get_or_insert(e);
            }
        }
        self
    }

    /// `key = value` when there is a value.
    pub fn optional<T: Serialize>(&mut self, key: &str, value: Option<T>) -> &mut Self {
        if let Some(value) = value {
            self.entry(key, &value);
        }
        self
    }

    /// Everything written, or the first value that could not be.
    pub fn finish(self) -> Result<String, toml::ser::Error> {
        match self.error {
            Some(e) => Err(e),
            None => Ok(self.text),
        }
    }

    /// The `[workload]` table.
    pub fn workload(&mut self, w: &Workload) -> &mut Self {
        self.table("workload")
            .entry("name", &w.name)
            .optional(
                "description",
                Some(&w.description).filter(|d| !d.is_empty()),
            )
            .entry("volume", &w.volume)
            .entry("unit", &w.unit)
            .optional("items", w.items)
            .entry("concurrency", &w.concurrency)
            .optional("current_ttl", w.current_ttl.map(exact_duration))
            .optional("incident_profile", w.incident_profile.as_ref())
            .optional("schedule", w.schedule.as_ref())
            .optional("runs_per_year", w.runs_per_year)
            .optional("target_volume", w.target_volume)
            .optional(
                "accepted_double_runs_per_year",
                w.accepted_double_runs_per_year,
            )
    }

    /// The `[runner]` table, as written.
    pub fn runner(&mut self, r: &RunnerTable) -> &mut Self {
        self.table("runner")
            .optional("kind", r.kind)
            .optional("lock_duration", r.lock_duration.map(exact_duration))
            .optional("stalled_interval", r.stalled_interval.map(exact_duration))
            .optional("max_stalled_count", r.max_stalled_count)
            .optional(
                "visibility_timeout",
                r.visibility_timeout.map(exact_duration),
            )
            .optional("acks_late", r.acks_late)
            .optional("expire_in", r.expire_in.map(exact_duration))
            .optional("retry_limit", r.retry_limit)
            .optional(
                "cluster_checkin_interval",
                r.cluster_checkin_interval.map(exact_duration),
            )
            .optional("requests_recovery", r.requests_recovery)
            .optional("clock_skew", r.clock_skew.map(exact_duration))
            .optional("hold", r.hold.map(exact_duration))
            .optional("slot_clock", r.slot_clock)
            .optional("completion_record", r.completion_record)
    }

    /// The `[decision]` table.
    pub fn decision(&mut self, d: &DecisionAnswers) -> &mut Self {
        self.table("decision")
            .optional("double_run", d.double_run)
            .optional("already_runs", d.already_runs.as_ref())
            .optional("databases", d.databases)
            .optional("one_transaction", d.one_transaction)
            .optional("fenced", d.fenced)
            .optional("crash_recovery", d.crash_recovery.map(exact_duration))
            .optional("postgres_via", d.postgres_via)
            .optional("postgres_standby", d.postgres_standby)
            .optional("client", d.client.as_ref())
    }

    /// One `[[steps]]` entry, its latencies written at `precision`.
    pub fn step(&mut self, s: &Step, precision: Precision) -> &mut Self {
        self.array_table("steps")
            .entry("name", &s.name)
            .entry("target", &s.target)
            .entry("latency", &LatencyValue::of(&s.latency, precision))
            .optional(
                "per_unit",
                s.per_unit.as_ref().map(|l| LatencyValue::of(l, precision)),
            )
            .optional("idempotent", s.idempotent)
            .optional("guard", s.guard)
            .optional("alters_table", s.alters_table.then_some(true))
    }

    /// One `[[profiles]]` entry with its overrides, episodes and pauses.
    pub fn profile(&mut self, p: &Profile) -> &mut Self {
        self.array_table("profiles")
            .entry("name", &p.name)
            .optional(
                "description",
                Some(&p.description).filter(|d| !d.is_empty()),
            );
        for o in &p.overrides {
            self.profile_override(o);
        }
        for e in &p.episodes {
            self.episode(e);
        }
        if let Some(pauses) = &p.pauses {
            self.pauses(pauses);
        }
        self
    }

    fn profile_override(&mut self, o: &Override) {
        self.blank()
            .array_table("profiles.overrides")
            .optional("target", o.target)
            .optional("step", o.step.as_ref())
            .optional("latency", o.latency.as_ref().map(exact))
            .optional("scale", o.scale);
    }

    fn episode(&mut self, e: &Episode) {
        self.blank()
            .array_table("profiles.episodes")
            .entry("name", &e.name)
            .entry("target", &e.target)
            .optional("step", e.step.as_ref())
            .entry("chance", &e.chance)
            .entry("start", &exact(&e.start))
            .entry("duration", &exact(&e.duration))
            .optional("slowdown", e.slowdown)
            .optional("slowdown_max", e.slowdown_max)
            .optional("block", e.block.then_some(true));
    }

    fn pauses(&mut self, p: &Pauses) {
        self.blank()
            .table("profiles.pauses")
            .entry("mean_interval", &exact_duration(p.mean_interval))
            .entry("duration", &exact(&p.duration));
    }
}

/// The whole spec as TOML that [`WorkloadSpec::parse`] reads back to the same spec (its implicit
/// profile, if it had none, written out).
pub fn to_toml(spec: &WorkloadSpec) -> Result<String, toml::ser::Error> {
    let mut w = SpecWriter::new();
    w.workload(&spec.workload).blank();
    if let Some(decision) = &spec.decision {
        w.decision(decision).blank();
    }
    if let Some(runner) = &spec.runner {
        w.runner(runner).blank();
    }
    for step in &spec.steps {
        w.step(step, Precision::Exact).blank();
    }
    for profile in &spec.profiles {
        w.profile(profile).blank();
    }
    w.finish()
}

/// A latency as the inline value after `latency = `: `"110ms"` or `{ dist = "lognormal", ... }`.
pub fn latency_toml(latency: &Latency, precision: Precision) -> Result<String, toml::ser::Error> {
    value_text(&LatencyValue::of(latency, precision))
}

/// A duration as a fit is shown in a spec, to four significant digits: `110.2ms`, `4.512s`,
/// `850.3us`.
pub fn duration_text(seconds: f64) -> String {
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

/// A duration to the nanosecond, in the largest unit that holds it whole: `4ms`, `4500ms`,
/// `1250ns`. Seconds from a parsed spec came from whole nanoseconds, so rounding restores them.
fn exact_seconds(seconds: f64) -> String {
    let nanos = (seconds * 1e9).round().max(0.0) as u128;
    exact_duration(Duration::new(
        (nanos / 1_000_000_000) as u64,
        (nanos % 1_000_000_000) as u32,
    ))
}

fn exact_duration(d: Duration) -> String {
    let nanos = d.as_nanos();
    match [(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us")]
        .into_iter()
        .find(|(per, _)| nanos > 0 && nanos.is_multiple_of(*per))
    {
        Some((per, unit)) => format!("{}{unit}", nanos / per),
        None if nanos == 0 => "0s".to_string(),
        None => format!("{nanos}ns"),
    }
}

fn exact(latency: &Latency) -> LatencyValue {
    LatencyValue::of(latency, Precision::Exact)
}

fn value_text<T: Serialize + ?Sized>(value: &T) -> Result<String, toml::ser::Error> {
    let mut text = String::new();
    value.serialize(toml::ser::ValueSerializer::new(&mut text))?;
    Ok(text)
}

/// The TOML shape of a latency, as `latency.rs` reads it.
#[derive(Serialize)]
#[serde(untagged)]
enum LatencyValue {
    Fixed(String),
    Table(Dist),
}

#[derive(Serialize)]
#[serde(tag = "dist", rename_all = "lowercase")]
enum Dist {
    Uniform {
        min: String,
        max: String,
    },
    Exponential {
        mean: String,
    },
    Lognormal {
        p50: String,
        p99: String,
    },
    Pareto {
        scale: String,
        shape: f64,
        #[serde(skip_serializing_if = "Option::is_none")]
        max: Option<String>,
    },
    Empirical {
        file: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        unit: Option<&'static str>,
    },
    Mixture {
        components: Vec<Component>,
    },
}

#[derive(Serialize)]
struct Component {
    weight: f64,
    latency: LatencyValue,
}

impl LatencyValue {
    fn of(latency: &Latency, precision: Precision) -> Self {
        let text = |seconds: f64| match precision {
            Precision::Exact => exact_seconds(seconds),
            Precision::Fitted => duration_text(seconds),
        };
        let table = match latency {
            Latency::Constant(v) => return LatencyValue::Fixed(text(*v)),
            Latency::LogNormal { mu, sigma } => {
                let (p50, p99) = lognormal_p50_p99(*mu, *sigma);
                let (p50, p99) = (text(p50), text(p99));
                // A mode of identical values (a client timeout, a cached answer) has no spread a
                // spec can write: it is that value.
                if p99 == p50 {
                    return LatencyValue::Fixed(p50);
                }
                Dist::Lognormal { p50, p99 }
            }
            Latency::Mixture(parts) => Dist::Mixture {
                components: parts
                    .iter()
                    .map(|(weight, l)| Component {
                        weight: match precision {
                            Precision::Exact => *weight,
                            // What `{:.5}` prints, read back: the same value, fewer digits.
                            Precision::Fitted => format!("{weight:.5}").parse().unwrap_or(*weight),
                        },
                        latency: LatencyValue::of(l, precision),
                    })
                    .collect(),
            },
            Latency::Empirical { file, unit, .. } => Dist::Empirical {
                file: file.display().to_string(),
                unit: unit.and_then(unit_name),
            },
            other if precision == Precision::Fitted => {
                return LatencyValue::Fixed(text(other.quantile(0.5)));
            }
            Latency::Uniform { min, max } => Dist::Uniform {
                min: text(*min),
                max: text(*max),
            },
            Latency::Exponential { mean } => Dist::Exponential { mean: text(*mean) },
            Latency::Pareto { scale, shape, max } => Dist::Pareto {
                scale: text(*scale),
                shape: *shape,
                max: max.is_finite().then(|| text(*max)),
            },
        };
        LatencyValue::Table(table)
    }
}

fn unit_name(seconds: f64) -> Option<&'static str> {
    [(1e-9, "ns"), (1e-6, "us"), (1e-3, "ms"), (1.0, "s")]
        .into_iter()
        .find(|(s, _)| *s == seconds)
        .map(|(_, name)| name)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// Everything parsed from a spec but where it came from.
    fn parsed(spec: &WorkloadSpec) -> String {
        format!(
            "{:?}\n{:?}\n{:?}\n{:?}\n{:?}",
            spec.workload, spec.decision, spec.runner, spec.steps, spec.profiles
        )
    }

    #[test]
    fn every_shipped_spec_written_and_parsed_again_is_the_same_spec() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("specs");
        let mut read = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "toml") {
                continue;
            }
            let spec = WorkloadSpec::load(&path).unwrap();
            let text = to_toml(&spec).unwrap();
            // Parsed at the original's path, so any samples file resolves as it did.
            let again = WorkloadSpec::parse(&text, &path)
                .unwrap_or_else(|e| panic!("{}: {e}\n{text}", path.display()));
            assert_eq!(parsed(&again), parsed(&spec), "{}:\n{text}", path.display());
            assert_eq!(to_toml(&again).unwrap(), text, "{}", path.display());
            read += 1;
        }
        assert!(read >= 4, "the shipped specs are in {}", dir.display());
    }

    #[test]
    fn every_latency_shape_survives_exactly() {
        let latencies = [
            Latency::Constant(0.110),
            Latency::Uniform { min: 0.0, max: 4.5 },
            Latency::Exponential { mean: 1.25e-6 },
            Latency::lognormal(0.004, 0.015),
            Latency::Pareto {
                scale: 0.150,
                shape: 1.6,
                max: f64::INFINITY,
            },
            Latency::Pareto {
                scale: 0.150,
                shape: 1.6,
                max: 60.0,
            },
            Latency::Mixture(vec![
                (0.75, Latency::lognormal(0.115, 0.360)),
                (0.25, Latency::Constant(5.0)),
            ]),
        ];
        for latency in latencies {
            let text = latency_toml(&latency, Precision::Exact).unwrap();
            let back: Latency = toml::from_str::<toml::Table>(&format!("latency = {text}"))
                .unwrap()
                .remove("latency")
                .unwrap()
                .try_into()
                .unwrap();
            assert_eq!(format!("{back:?}"), format!("{latency:?}"), "{text}");
        }
    }

    #[test]
    fn a_fit_is_written_as_it_is_shown() {
        let mixture = Latency::Mixture(vec![
            (0.9804, Latency::lognormal(0.1154, 0.3594)),
            (0.0196, Latency::lognormal(5.0, 5.0000001)),
        ]);
        assert_eq!(
            latency_toml(&mixture, Precision::Fitted).unwrap(),
            "{ dist = \"mixture\", components = [{ weight = 0.9804, latency = { dist = \"lognormal\", p50 = \"115.4ms\", p99 = \"359.4ms\" } }, { weight = 0.0196, latency = \"5s\" }] }"
        );
        let uniform = Latency::Uniform {
            min: 0.004,
            max: 0.006,
        };
        assert_eq!(
            latency_toml(&uniform, Precision::Fitted).unwrap(),
            "\"5ms\""
        );
    }

    #[test]
    fn durations_read_as_a_spec_writes_them() {
        assert_eq!(duration_text(0.1102345), "110.2ms");
        assert_eq!(duration_text(4.5), "4.5s");
        assert_eq!(duration_text(0.0008503), "850.3us");
        assert_eq!(duration_text(12.0), "12s");
        for s in [0.1102345, 4.5, 0.0008503, 1234.5678, 3e-8] {
            let d = crate::duration::parse(&duration_text(s)).unwrap();
            assert!((d.as_secs_f64() / s - 1.0).abs() < 2e-3, "{s}");
        }
        assert_eq!(exact_seconds(0.004), "4ms");
        assert_eq!(exact_seconds(4.5), "4500ms");
        assert_eq!(exact_seconds(86_400.0), "86400s");
        assert_eq!(exact_seconds(1.25e-6), "1250ns");
        assert_eq!(exact_seconds(0.0), "0s");
    }
}
