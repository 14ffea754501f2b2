//! Errors in a workload spec, each naming the file, the field and what was expected.

use std::path::PathBuf;

/// Something wrong with a workload spec or with a request against it.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    /// The file could not be read.
    #[error("{file}: cannot read the spec: {reason}")]
    Read {
        /// The spec file.
        file: PathBuf,
        /// Why, in words.
        reason: String,
    },
    /// The file is not a valid spec; `line` is set where TOML gives it.
    #[error("{file}{}: {field}{}{message}", line.map(|l| format!(":{l}")).unwrap_or_default(), if field.is_empty() { "" } else { ": " })]
    Invalid {
        /// The spec file.
        file: PathBuf,
        /// 1-based line of the offending value, where known.
        line: Option<usize>,
        /// Dotted path of the field, like `steps[1].latency.p99`.
        field: String,
        /// What was expected and what was found.
        message: String,
    },
    /// A profile was asked for that the spec does not define.
    #[error("{file}: no profile named \"{profile}\"; the spec defines: {}", known.join(", "))]
    UnknownProfile {
        /// The spec file.
        file: PathBuf,
        /// The requested profile.
        profile: String,
        /// The profiles the spec has.
        known: Vec<String>,
    },
    /// A scale that gives no work or too much.
    #[error("{file}: scale {scale}: {message}")]
    Scale {
        /// The spec file.
        file: PathBuf,
        /// The requested scale.
        scale: f64,
        /// What is wrong.
        message: String,
    },
}
