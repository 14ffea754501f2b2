//! Why a report (or a comparison) could not be made.

use std::path::PathBuf;

/// Why a report could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// An input directory or file is not what a report reads.
    #[error("{}: {message}", path.display())]
    Input {
        /// The directory or file.
        path: PathBuf,
        /// What is wrong, and what was expected.
        message: String,
    },
    /// A results directory does not read as the records of this schema version.
    #[error(transparent)]
    Record(#[from] lockbench_core::records::RecordError),
    /// A chart could not be drawn.
    #[error("{0}")]
    Chart(String),
}
