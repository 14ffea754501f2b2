//! How records become bytes and come back: JSON and CSV through serde, with every error naming
//! the file and the field, and the schema version they are read against. A leaf: the record
//! modules import it, it imports none of them.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

/// The version of the results layout this lockbench writes and reads. A field removed, renamed or
/// retyped bumps it; so does an addition, unless the field has a default that reads every older
/// record truthfully (say so on the field).
pub const SCHEMA_VERSION: u32 = 4;

/// The manifest's file name.
pub const MANIFEST: &str = "manifest.json";
/// The main record's file name.
pub const RESULTS_JSON: &str = "results.json";

/// Why a results directory could not be read.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// Written by another version of the layout.
    #[error(
        "{}: schema_version {found}, but this lockbench reads schema_version {SCHEMA_VERSION}; {hint}",
        file.display()
    )]
    Version {
        /// The manifest.
        file: PathBuf,
        /// What it says (or "missing").
        found: String,
        /// What to do about it.
        hint: &'static str,
    },
    /// A field is missing, renamed, unknown or of the wrong type.
    #[error(
        "{}: {message}{}; expected the schema_version {SCHEMA_VERSION} layout",
        file.display(),
        if field.is_empty() || field == "." { String::new() } else { format!(" (at `{field}`)") }
    )]
    Field {
        /// The file.
        file: PathBuf,
        /// Where in it, as a path (`results[3].acquire_us`).
        field: String,
        /// What is wrong.
        message: String,
    },
    /// A file could not be read at all.
    #[error("{}: {message}", file.display())]
    Unreadable {
        /// The file.
        file: PathBuf,
        /// Why.
        message: String,
    },
}

/// A record as pretty JSON bytes.
pub fn to_json<T: Serialize>(record: &T) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(record).expect("records serialise to JSON");
    bytes.push(b'\n');
    bytes
}

/// Reads a record from JSON bytes, naming the field that does not fit.
pub fn from_json<T: DeserializeOwned>(file: &Path, bytes: &[u8]) -> Result<T, RecordError> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let field = e.path().to_string();
        let inner = e.into_inner();
        // serde_json appends "at line L column C": the field path says more.
        let message = inner.to_string();
        let message = match message.find(" at line ") {
            Some(i) if inner.is_data() => message[..i].to_string(),
            _ => message,
        };
        RecordError::Field {
            file: file.to_path_buf(),
            field,
            message,
        }
    })
}

/// Rows as CSV bytes, the header from the row type's field names.
pub fn to_csv<T: Serialize>(rows: &[T]) -> Vec<u8> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    for row in rows {
        writer.serialize(row).expect("records serialise to CSV");
    }
    writer.into_inner().expect("writing to memory cannot fail")
}

/// Reads CSV rows, naming the row and column that do not fit.
pub fn from_csv<T: DeserializeOwned>(file: &Path, bytes: &[u8]) -> Result<Vec<T>, RecordError> {
    let mut reader = csv::Reader::from_reader(bytes);
    let mut rows = Vec::new();
    for (i, row) in reader.deserialize().enumerate() {
        rows.push(row.map_err(|e: csv::Error| {
            let message = match e.kind() {
                csv::ErrorKind::Deserialize { err, .. } => err.to_string(),
                _ => e.to_string(),
            };
            RecordError::Field {
                file: file.to_path_buf(),
                field: format!("row {}", i + 1),
                message,
            }
        })?);
    }
    Ok(rows)
}

/// For `#[serde(deserialize_with)]` on an `Option` field: the key must be present (its value may
/// be `null`), where serde would otherwise read a missing key as `None`.
pub fn present<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    <Option<T> as serde::Deserialize>::deserialize(d)
}

/// Rounds seconds to the microsecond: finer digits are noise from the histograms' buckets.
pub fn round_micro(seconds: f64) -> f64 {
    (seconds * 1e6).round() / 1e6
}
