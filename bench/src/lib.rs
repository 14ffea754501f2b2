//! The acquisition benchmark: how long each backend takes to grant, renew and release a lock,
//! alone and under contention, measured so that the tail is not a lie.
//!
//! [`measure`] takes one connected client per contender and [`BenchOptions`], drives a closed loop
//! (each contender acquires, holds, renews, releases, again) or an open loop (arrivals at a fixed
//! rate, latency measured from each arrival's intended start, which corrects coordinated
//! omission), and returns a [`BenchResult`] holding an HdrHistogram per metric. Warm-up is
//! excluded; every measurement is bounded by an operation count and a duration. [`measure_levels`]
//! runs one backend at every contention level of a run (a shard's share of the clients, each
//! level at its slot of a common [`Schedule`] when shards start together) and leaves nothing
//! behind.

mod armed_timer;
mod cycle;
pub mod handoff;
mod levels;
mod measure;
mod merge;
mod options;
mod result;

pub use armed_timer::ArmedTimer;
pub use cycle::{Cycle, cycle};
pub use handoff::HandoffClock;
pub use levels::{
    LevelProgress, Levels, LevelsError, Measured, NotReady, Schedule, clients_needed, clock_offset,
    facts, measure_connected, measure_levels,
};
pub use measure::measure;
pub use merge::{SKEW_TOLERANCE, merge_bench, start_skew};
pub use options::{BenchOptions, KeyMode, LoadMode, PollPolicy, Stripe, WaitMode};
pub use result::{BenchResult, Metrics};
