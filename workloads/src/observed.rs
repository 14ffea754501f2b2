//! Observed durations read from what users have: CSV exports and OpenTelemetry trace exports
//! (OTLP JSON, one document or one per line). Every bad value is an [`ObservedError`] naming the
//! file, the line (or the span's place in the JSON) and the field. [`read_runs`] reads past job
//! runs (a duration and a volume per row) for a spec, refusing a volume the spec cannot simulate at
//! its line.

use std::path::Path;

use serde_json::Value;

use crate::{JobModel, WorkloadSpec};

/// A value that cannot be read, in one line: `FILE:LINE: field F: expected ..., got ...`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{place}: {message}")]
pub struct ObservedError {
    /// `FILE`, `FILE:LINE` or `FILE: resourceSpans[0].scopeSpans[0].spans[3]`.
    pub place: String,
    /// What was expected and what was found.
    pub message: String,
}

fn refuse(place: &str, message: impl Into<String>) -> ObservedError {
    ObservedError {
        place: place.to_string(),
        message: message.into(),
    }
}

/// How to read a CSV of durations.
#[derive(Clone, Debug)]
pub struct CsvColumns {
    /// Column of the step's name (calibrate's `--step-column`).
    pub name: Option<String>,
    /// Column of durations with units (`110ms`).
    pub duration: String,
    /// Column of durations in milliseconds (bare numbers), instead of `duration`.
    pub ms: Option<String>,
}

/// One observed duration.
#[derive(Clone, Debug, PartialEq)]
pub struct Observed {
    /// Step (span name) or whatever the name column holds; empty without one.
    pub name: String,
    /// Seconds.
    pub seconds: f64,
    /// Where it was read: `FILE:LINE` or `FILE: resourceSpans[0]...spans[3]`.
    pub place: String,
    /// Its line in the file: the CSV row's, or the JSON Lines document's (0 for a span of a
    /// single JSON document).
    pub line: u64,
    /// For a span, whether it is a database call (it carries `db.system`).
    pub database: bool,
    /// The row's other cells by column name (CSV only).
    pub cells: Vec<(String, String)>,
}

/// A file of observations, read but not yet parsed.
pub struct Input {
    /// The path as given.
    pub file: String,
    /// OTLP JSON (its first character is `{`) rather than CSV.
    pub trace: bool,
    text: String,
}

impl Input {
    /// Reads `path`; an empty file is refused, saying what the command reads (`expected`).
    pub fn load(path: &Path, expected: &str) -> Result<Self, ObservedError> {
        let file = path.display().to_string();
        let text = lockbench_core::input::read_input_text(
            path,
            lockbench_core::input::InputKind::Observed,
        )
        .map_err(|e| refuse(&file, e.to_string()))?;
        if text.trim().is_empty() {
            return Err(refuse(&file, format!("empty: expected {expected}")));
        }
        Ok(Input {
            trace: text.trim_start().starts_with('{'),
            file,
            text,
        })
    }

    /// Its durations, at least one.
    pub fn observations(&self, columns: &CsvColumns) -> Result<Vec<Observed>, ObservedError> {
        let observed = if self.trace {
            read_otlp(&self.file, &self.text)?
        } else {
            read_csv(&self.file, &self.text, columns)?
        };
        if observed.is_empty() {
            return Err(refuse(&self.file, "holds no durations"));
        }
        Ok(observed)
    }
}

/// The file's line of a CSV record at `position`. The csv crate's position is where it began
/// reading, before the comment and blank lines it skipped, so those are stepped over here.
fn line_at(text: &str, position: &csv::Position) -> u64 {
    let mut start = (position.byte() as usize).min(text.len());
    let mut line = 1 + text.as_bytes()[..start]
        .iter()
        .filter(|&&b| b == b'\n')
        .count() as u64;
    while let Some(rest) = text.get(start..) {
        let this = rest.split('\n').next().unwrap_or("");
        let skipped = this.starts_with('#') || this.trim_end_matches('\r').is_empty();
        if !skipped || this.len() == rest.len() {
            break;
        }
        start += this.len() + 1;
        line += 1;
    }
    line
}

fn read_csv(file: &str, text: &str, columns: &CsvColumns) -> Result<Vec<Observed>, ObservedError> {
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .comment(Some(b'#'))
        .from_reader(text.as_bytes());
    let header: Vec<String> = reader
        .headers()
        .map_err(|e| refuse(&format!("{file}:1"), format!("unreadable header: {e}")))?
        .iter()
        .map(str::to_string)
        .collect();
    let find = |name: &str, flag: &str| {
        header.iter().position(|h| h == name).ok_or_else(|| {
            refuse(
                &format!("{file}:1"),
                format!(
                    "no column \"{name}\" (columns: {}); name it with {flag}",
                    header.join(", ")
                ),
            )
        })
    };
    let name_col = match &columns.name {
        Some(n) => Some(find(n, "--step-column")?),
        None => None,
    };
    let (value_col, in_ms) = match &columns.ms {
        Some(ms) => (find(ms, "--ms-column")?, true),
        None => (
            find(&columns.duration, "--duration-column or --ms-column")?,
            false,
        ),
    };
    let mut out = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| {
            let line = e.position().map_or(0, |p| line_at(text, p));
            refuse(&format!("{file}:{line}"), format!("unreadable row: {e}"))
        })?;
        let line = record.position().map_or(0, |p| line_at(text, p));
        let place = format!("{file}:{line}");
        let cell = |i: usize| record.get(i).unwrap_or("");
        let raw = cell(value_col);
        let field = &header[value_col];
        let seconds = if in_ms {
            raw.parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v >= 0.0)
                .map(|v| v / 1e3)
                .ok_or_else(|| {
                    refuse(
                        &place,
                        format!(
                            "field {field}: expected a non-negative number of milliseconds, got \"{raw}\""
                        ),
                    )
                })?
        } else {
            crate::duration::parse(raw)
                .map_err(|m| refuse(&place, format!("field {field}: {m}")))?
                .as_secs_f64()
        };
        let name = name_col.map(|i| cell(i).to_string()).unwrap_or_default();
        if name_col.is_some() && name.is_empty() {
            return Err(refuse(
                &place,
                format!(
                    "field {}: empty, expected a name",
                    header[name_col.unwrap_or(0)]
                ),
            ));
        }
        out.push(Observed {
            name,
            seconds,
            place,
            line,
            database: false,
            cells: header
                .iter()
                .enumerate()
                .map(|(i, h)| (h.clone(), cell(i).to_string()))
                .collect(),
        });
    }
    Ok(out)
}

/// OTLP JSON: one `ExportTraceServiceRequest` (what `otel-cli` and the collector's debug export
/// write) or one per line (the collector's file exporter).
fn read_otlp(file: &str, text: &str) -> Result<Vec<Observed>, ObservedError> {
    let documents: Vec<(String, u64, Value)> = match serde_json::from_str::<Value>(text) {
        Ok(v) => vec![(file.to_string(), 0, v)],
        Err(_) => text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| {
                let place = format!("{file}:{}", i + 1);
                serde_json::from_str(l)
                    .map(|v| (place.clone(), i as u64 + 1, v))
                    .map_err(|e| refuse(&place, format!("not OTLP JSON: {e}")))
            })
            .collect::<Result<_, _>>()?,
    };
    let mut out = Vec::new();
    for (place, line, doc) in &documents {
        let resources = doc
            .get("resourceSpans")
            .and_then(Value::as_array)
            .ok_or_else(|| {
                refuse(
                    place,
                    "field resourceSpans: missing; expected an OTLP JSON trace export",
                )
            })?;
        for (r, resource) in resources.iter().enumerate() {
            let scopes = resource
                .get("scopeSpans")
                .or_else(|| resource.get("instrumentationLibrarySpans"))
                .and_then(Value::as_array)
                .map_or(&[][..], Vec::as_slice);
            for (s, scope) in scopes.iter().enumerate() {
                let spans = scope
                    .get("spans")
                    .and_then(Value::as_array)
                    .map_or(&[][..], Vec::as_slice);
                for (k, span) in spans.iter().enumerate() {
                    let at = format!("{place}: resourceSpans[{r}].scopeSpans[{s}].spans[{k}]");
                    out.push(span_duration(&at, *line, span)?);
                }
            }
        }
    }
    Ok(out)
}

fn span_duration(at: &str, line: u64, span: &Value) -> Result<Observed, ObservedError> {
    let name = span
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| refuse(at, "field name: missing or empty"))?;
    let nanos = |field: &str| -> Result<u64, ObservedError> {
        let v = span.get(field);
        v.and_then(|v| match v {
            Value::String(s) => s.parse().ok(),
            Value::Number(n) => n.as_u64(),
            _ => None,
        })
        .ok_or_else(|| {
            refuse(
                at,
                format!(
                    "field {field}: expected nanoseconds since the epoch, got {}",
                    v.map_or("nothing".to_string(), Value::to_string)
                ),
            )
        })
    };
    let start = nanos("startTimeUnixNano")?;
    let end = nanos("endTimeUnixNano")?;
    if end < start {
        return Err(refuse(
            at,
            format!(
                "field endTimeUnixNano: span \"{name}\" ends {} ns before it starts: a negative duration",
                start - end
            ),
        ));
    }
    let database = span
        .get("attributes")
        .and_then(Value::as_array)
        .is_some_and(|a| {
            a.iter()
                .any(|kv| kv.get("key").and_then(Value::as_str) == Some("db.system"))
        });
    Ok(Observed {
        name: name.to_string(),
        seconds: (end - start) as f64 / 1e9,
        place: at.to_string(),
        line,
        database,
        cells: Vec::new(),
    })
}

/// How a CSV of past job runs names its columns.
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

/// Reads past job runs for `spec`: a duration, a volume and optionally a profile per row (runs
/// that name none are `default_profile`). Each (profile, volume) is compiled once here, so a
/// volume the model cannot take is refused at its line before anything is simulated.
pub fn read_runs(
    path: &Path,
    spec: &WorkloadSpec,
    default_profile: &str,
    columns: &RunColumns,
) -> Result<Vec<ObservedRun>, ObservedError> {
    let input = Input::load(
        path,
        "a CSV of past job runs with a header row (a duration and a volume column)",
    )?;
    let file = &input.file;
    if input.trace {
        return Err(refuse(
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
        return Err(refuse(
            &format!("{file}:1"),
            format!(
                "no column \"{}\" (columns: {}); name it with --volume-column",
                columns.volume,
                header.join(", ")
            ),
        ));
    }
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
                refuse(
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
                        return Err(refuse(
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
                    refuse(
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
            Ok(ObservedRun {
                line: r.line,
                profile,
                volume,
                seconds: r.seconds,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn columns() -> CsvColumns {
        CsvColumns {
            name: Some("step".into()),
            duration: "duration".into(),
            ms: None,
        }
    }

    #[test]
    fn csv_with_units_and_in_milliseconds() {
        let rows = read_csv("f.csv", "step,duration\na,110ms\nb,1.5s\n", &columns()).unwrap();
        assert_eq!(rows[0].name, "a");
        assert!((rows[1].seconds - 1.5).abs() < 1e-12);
        assert_eq!(rows[1].place, "f.csv:3");
        let ms = CsvColumns {
            ms: Some("latency_ms".into()),
            ..columns()
        };
        let rows = read_csv("f.csv", "step,latency_ms\na,12.5\n", &ms).unwrap();
        assert!((rows[0].seconds - 0.0125).abs() < 1e-12);
    }

    #[test]
    fn bad_cells_name_file_line_and_field() {
        let err = read_csv("f.csv", "step,duration\na,110ms\na,soon\n", &columns()).unwrap_err();
        assert!(
            err.to_string().starts_with("f.csv:3: field duration:"),
            "{err}"
        );
        let err = read_csv("f.csv", "step,duration\na,-3ms\n", &columns()).unwrap_err();
        assert!(err.to_string().contains("non-negative"), "{err}");
        let ms = CsvColumns {
            ms: Some("ms".into()),
            ..columns()
        };
        let err = read_csv("f.csv", "step,ms\na,-3\n", &ms).unwrap_err();
        assert!(err.to_string().starts_with("f.csv:2: field ms:"), "{err}");
        let err = read_csv("f.csv", "name,duration\na,3ms\n", &columns()).unwrap_err();
        assert!(err.to_string().contains("no column \"step\""), "{err}");
    }

    #[test]
    fn otlp_spans_become_durations() {
        let doc = r#"{"resourceSpans":[{"scopeSpans":[{"spans":[
            {"name":"charge_payment","startTimeUnixNano":"1000000000","endTimeUnixNano":"1110000000"},
            {"name":"read_subscription","startTimeUnixNano":5,"endTimeUnixNano":4000005,
             "attributes":[{"key":"db.system","value":{"stringValue":"postgresql"}}]}]}]}]}"#;
        let spans = read_otlp("t.json", doc).unwrap();
        assert_eq!(spans[0].name, "charge_payment");
        assert!((spans[0].seconds - 0.11).abs() < 1e-12);
        assert!(spans[1].database && !spans[0].database);
        let backwards = r#"{"resourceSpans":[{"scopeSpans":[{"spans":[
            {"name":"x","startTimeUnixNano":"10","endTimeUnixNano":"5"}]}]}]}"#;
        let err = read_otlp("t.json", backwards).unwrap_err().to_string();
        assert!(err.contains("spans[0]: field endTimeUnixNano"), "{err}");
    }

    fn billing() -> WorkloadSpec {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("specs/billing.toml");
        WorkloadSpec::load(&path).unwrap()
    }

    fn run_columns() -> RunColumns {
        RunColumns {
            duration: "duration".into(),
            ms: None,
            volume: "volume".into(),
            profile: "profile".into(),
        }
    }

    fn runs_of(text: &str) -> Result<Vec<ObservedRun>, ObservedError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runs.csv");
        std::fs::write(&path, text).unwrap();
        let spec = billing();
        let default = spec.profiles[0].name.clone();
        read_runs(&path, &spec, &default, &run_columns()).map_err(|e| ObservedError {
            place: e.place.replace(&path.display().to_string(), "runs.csv"),
            message: e.message,
        })
    }

    #[test]
    fn past_runs_carry_their_line_volume_and_profile() {
        let spec = billing();
        let other = &spec.profiles.last().unwrap().name;
        let runs = runs_of(&format!(
            "duration,volume,profile\n3s,50,\n# a comment\n\n1.5s,70,{other}\n"
        ))
        .unwrap();
        assert_eq!(runs.len(), 2);
        assert_eq!((runs[0].line, runs[0].volume), (2, 50));
        assert_eq!(runs[0].profile, spec.profiles[0].name);
        // Line 5 of the file: the comment and the blank line count (the csv crate's count does not).
        assert_eq!((runs[1].line, &runs[1].profile), (5, other));
        assert!((runs[1].seconds - 1.5).abs() < 1e-12);
    }

    #[test]
    fn a_bad_past_run_is_refused_at_its_line() {
        let err = runs_of("duration,volume\n3s,50\n4s,many\n").unwrap_err();
        assert_eq!(err.place, "runs.csv:3");
        assert!(
            err.message
                .starts_with("field volume: expected a whole number"),
            "{err}"
        );
        let err = runs_of("duration,volume,profile\n3s,50,nope\n").unwrap_err();
        assert!(err.message.contains("no profile \"nope\""), "{err}");
        let err = runs_of("duration,size\n3s,50\n").unwrap_err();
        assert_eq!(err.place, "runs.csv:1");
        assert!(err.message.contains("--volume-column"), "{err}");
        let err = runs_of("{\"resourceSpans\": []}").unwrap_err();
        assert!(err.message.starts_with("a JSON file"), "{err}");
    }
}
