//! Observed durations read from what users have: CSV exports and OpenTelemetry trace exports
//! (OTLP JSON). Every bad value is refused in one line naming the file, the line (or the span's
//! place in the JSON) and the field.

use std::path::Path;

use serde_json::Value;

use crate::options::{UsageError, usage};

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
    pub fn load(path: &Path, expected: &str) -> Result<Self, UsageError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| usage(&file, format!("cannot read it: {e}")))?;
        if text.trim().is_empty() {
            return Err(usage(&file, format!("empty: expected {expected}")));
        }
        Ok(Input {
            trace: text.trim_start().starts_with('{'),
            file,
            text,
        })
    }

    /// Its durations, at least one.
    pub fn observations(&self, columns: &CsvColumns) -> Result<Vec<Observed>, UsageError> {
        let observed = if self.trace {
            read_otlp(&self.file, &self.text)?
        } else {
            read_csv(&self.file, &self.text, columns)?
        };
        if observed.is_empty() {
            return Err(usage(&self.file, "holds no durations"));
        }
        Ok(observed)
    }
}

fn read_csv(file: &str, text: &str, columns: &CsvColumns) -> Result<Vec<Observed>, UsageError> {
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .comment(Some(b'#'))
        .from_reader(text.as_bytes());
    let header: Vec<String> = reader
        .headers()
        .map_err(|e| usage(&format!("{file}:1"), format!("unreadable header: {e}")))?
        .iter()
        .map(str::to_string)
        .collect();
    let find = |name: &str, flag: &str| {
        header.iter().position(|h| h == name).ok_or_else(|| {
            usage(
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
            let line = e.position().map_or(0, |p| p.line());
            usage(&format!("{file}:{line}"), format!("unreadable row: {e}"))
        })?;
        let line = record.position().map_or(0, |p| p.line());
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
                    usage(
                        &place,
                        format!(
                            "field {field}: expected a non-negative number of milliseconds, got \"{raw}\""
                        ),
                    )
                })?
        } else {
            lockbench_workloads::duration::parse(raw)
                .map_err(|m| usage(&place, format!("field {field}: {m}")))?
                .as_secs_f64()
        };
        let name = name_col.map(|i| cell(i).to_string()).unwrap_or_default();
        if name_col.is_some() && name.is_empty() {
            return Err(usage(
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
fn read_otlp(file: &str, text: &str) -> Result<Vec<Observed>, UsageError> {
    let documents: Vec<(String, Value)> = match serde_json::from_str::<Value>(text) {
        Ok(v) => vec![(file.to_string(), v)],
        Err(_) => text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| {
                let place = format!("{file}:{}", i + 1);
                serde_json::from_str(l)
                    .map(|v| (place.clone(), v))
                    .map_err(|e| usage(&place, format!("not OTLP JSON: {e}")))
            })
            .collect::<Result<_, _>>()?,
    };
    let mut out = Vec::new();
    for (place, doc) in &documents {
        let resources = doc
            .get("resourceSpans")
            .and_then(Value::as_array)
            .ok_or_else(|| {
                usage(
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
                    out.push(span_duration(&at, span)?);
                }
            }
        }
    }
    Ok(out)
}

fn span_duration(at: &str, span: &Value) -> Result<Observed, UsageError> {
    let name = span
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| usage(at, "field name: missing or empty"))?;
    let nanos = |field: &str| -> Result<u64, UsageError> {
        let v = span.get(field);
        v.and_then(|v| match v {
            Value::String(s) => s.parse().ok(),
            Value::Number(n) => n.as_u64(),
            _ => None,
        })
        .ok_or_else(|| {
            usage(
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
        return Err(usage(
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
        database,
        cells: Vec::new(),
    })
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
}
