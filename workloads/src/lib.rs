//! Workloads: what a job does, how slow its calls are, and how it runs in simulated time.
//!
//! A workload spec (TOML, see `specs/`) enters through [`WorkloadSpec::load`], which validates it
//! and reports the first problem with its file, field and line. [`JobModel::new`] compiles the
//! spec for one profile and scale; [`simulate`] replays that model many times in virtual time and
//! returns the runtimes as a [`lockbench_core::RuntimeHistogram`]. Latency distributions live in
//! [`latency`], the sampling kernel in [`sampler`]. The job's answers to the decision rules (the
//! `[decision]` table and each step's `idempotent` and `guard`) are typed and checked in `answers`
//! ([`JobAnswers`]). [`observed`] reads what users measured (CSV, OTLP JSON) into durations and
//! past job runs; [`calibration`] groups them into each step's samples, fits them ([`fit`]) and
//! writes the calibrated spec through [`spec_writer`], which writes any spec back as TOML that
//! parses to the same spec. [`LiveScenario`] and [`LivePauses`] give the
//! live replay (lockbench-replay) the same episodes and pauses the simulator draws. No database,
//! lock client or async runtime is compiled here.

mod answers;
mod block_law;
pub mod calibration;
pub mod duration;
mod error;
pub mod fit;
pub mod latency;
mod model;
pub mod observed;
pub mod runner;
pub mod sampler;
pub mod schedule;
mod shard;
mod sim;
mod spec;
pub mod spec_writer;
pub mod tail_fit;
mod target;

pub use answers::{DecisionAnswers, DoubleRun, Guard, JobAnswers, PostgresVia, StepAnswers};
pub use error::SpecError;
pub use model::{CompiledStep, JobModel, MAX_ITEMS};
pub use runner::{Runner, RunnerTable, SlotClock};
pub use schedule::Frequency;
pub use shard::Shard;
pub use sim::{
    Engine, LivePauses, LiveScenario, MAX_REPLAYS, SimOptions, Stream, lease_margin,
    renewed_lease_margin, replay_rng, replay_with, simulate, simulate_leases,
};
pub use spec::{
    Episode, IMPLICIT_PROFILE, MAX_CONCURRENCY, MAX_STEPS, MAX_TARGET_SCALE, Override, Pauses,
    Profile, Step, Workload, WorkloadSpec, check_budget,
};
pub use target::Target;
