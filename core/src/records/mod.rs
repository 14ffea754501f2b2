//! The typed results records: one module per kind of results directory, each struct the one
//! definition of its `results.json` and of its CSV columns.
//!
//! Writers serialise these structs ([`to_json`], [`to_csv`]); readers deserialise them
//! ([`read_dir`]), so a field renamed in one place cannot silently become "-" in a report: a
//! directory written by another schema, or with a field missing, renamed or added, is refused in
//! one line naming the file, the field and the schema version expected. Every struct denies
//! unknown fields and every `Option` must be present (as `null`), so that "absent in this run"
//! and "could not be read" never look alike.

pub mod bench;
pub mod chance;
pub(crate) mod codec;
mod dir;
pub mod exact;
pub mod faults;
pub(crate) mod manifest;
pub mod model;
pub mod replay;
pub mod runner;
pub mod seconds;
pub mod simulate;
mod summary;
pub mod ttl;

pub use codec::{
    MANIFEST, RESULTS_JSON, RecordError, SCHEMA_VERSION, from_csv, from_json, present, round_micro,
    to_csv, to_json,
};
pub use dir::{Body, ResultsRead, read_dir};
pub use summary::{RuntimeSummary, tail_samples_needed};
