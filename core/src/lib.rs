//! The shared vocabulary of lockbench, cheap enough for every crate to depend on.
//!
//! It owns what more than one crate needs and what must mean the same everywhere: the
//! [`RuntimeHistogram`] in which every runtime or latency is recorded (HdrHistogram plus exact
//! count, sum, minimum, maximum and threshold counts), the backends' names and what each lock is tied to ([`backend`]), the way durations are printed, the typed
//! [`records`] of every kind of results directory with the [`Manifest`] and its schema version
//! (the one definition of each `results.json` and CSV, for writers and readers alike), and the
//! [`ResultsDir`] writer that makes a results directory appear complete or not at all. Data enters
//! as nanosecond values and records to stage; it leaves as percentiles, bytes and files on disk,
//! and comes back through [`records::read_dir`]. [`shards`] reads a split run's shards back for
//! `merge`; [`stats`] holds the sample statistics (quantile, median, KS distance) in one
//! convention each.

pub mod backend;
pub mod client;
pub mod fault;
mod format;
mod histogram;
pub mod input;
pub mod records;
mod results;
pub mod shards;
pub mod stats;

pub use backend::{BackendId, BackendKind, FencingSource, LockScope, REDIS_FAIR, Service};
pub use client::{Client, ClientChoice, ClientUsed, OwnClient, OwnDescription, own_name};
pub use fault::{CellId, Scenario, Variant};
pub use format::{
    format_chance, format_column, format_count, format_date, format_duration, format_duration_s,
    format_hms, format_long, format_per_year, format_percent, format_readable, format_readable_s,
    format_readable_us, format_seconds, format_tail_us, format_years_between,
};
pub use histogram::{
    ExactFigures, HistogramError, RuntimeHistogram, ThresholdCount, interval_log, read_interval_log,
};
pub use records::manifest::{
    BuildProfile, Machine, Manifest, RunKind, ServerRecord, ShardOrigin, ShardRecord, SpecRecord,
    unix_now_s,
};
pub use results::{
    ResultsDir, ResultsError, publish_copy, remove_stale_staging, replace_with, staging_for,
    write_whole,
};

/// The version of lockbench that produced a result, stored in every manifest.
pub const TOOL_VERSION: &str = env!("CARGO_PKG_VERSION");
