//! Analysis: from recorded runtimes to figures people act on.
//!
//! Runtimes enter as [`lockbench_core::RuntimeHistogram`]s (straight from the simulator, or read
//! back from a results directory). [`RuntimeSummary`] turns one into percentiles with a confidence
//! interval and says when the sample is too small; [`recommend`] turns summaries at a few volumes
//! into a [`TtlRecommendation`]; [`export`] renders rows as CSV bytes. Everything here is pure:
//! values in, values out, no I/O.

pub mod export;
pub mod frames;
mod growth;
pub mod report;
mod summary;
mod ttl;

pub use growth::{GrowthFit, fit_growth};
pub use summary::{RuntimeSummary, tail_samples_needed};
pub use ttl::{
    ALERT_SHARE, CurrentTtlRisk, DEFAULT_SAFETY_FACTOR, Heartbeat, MIN_LEASE, ProfileP999,
    TtlInputs, TtlRecommendation, VolumePoint, exceedance, heartbeat, recommend, review_scales,
};

/// Serialises a `Duration` as seconds (f64), for JSON fields whose name ends in `_s`.
pub fn serialize_seconds<S: serde::Serializer>(
    d: &std::time::Duration,
    s: S,
) -> Result<S::Ok, S::Error> {
    s.serialize_f64(round_micro(d.as_secs_f64()))
}

/// Rounds seconds to the microsecond: finer digits are noise from the histogram's buckets.
pub fn round_micro(seconds: f64) -> f64 {
    (seconds * 1e6).round() / 1e6
}
