//! Analysis: from recorded runtimes to figures people act on.
//!
//! Runtimes enter as [`lockbench_core::RuntimeHistogram`]s and the typed records of
//! [`lockbench_core::records`] (straight from the simulator, or read back from a results
//! directory). [`recommend`] turns runtimes at a few volumes into a [`TtlRecommendation`];
//! [`report`] turns results directories into a locking decision record; [`frames`] compares two
//! sets of them. Apart from [`report::load`] and [`frames::load_frames`], which read directories
//! through the records, everything here is pure: values in, values out.

pub mod check;
pub mod comparison;
pub mod frames;
mod growth;
mod lease;
mod main_job;
mod merged;
pub mod rare;
pub mod report;
pub mod runner;
mod tail_pricing;
mod trigger;
mod ttl;
mod ttl_plan;

pub use growth::fit_growth;
pub use lease::{
    DEFAULT_MAX_LEASE_RISK, LeaseInputs, MAX_LEASE, add_curves, lease_replays, price_heartbeat,
    shortest_safe_lease,
};
pub use lockbench_core::records::ttl::{
    CurrentTtlRisk, GrowthFit, HeartbeatRecommendation, LeaseCurve, LeasePricing, ProfileP999,
    TriggerSearch, TriggerSimulation, TtlRecommendation, VolumePoint,
};
pub use main_job::{
    BenchStep, FaultsStep, LibraryStep, MainJobPlan, Replay, ReplayMode, ReplayStep, SimulateStep,
    TtlStep,
};
pub use merged::{merged_curves, merged_simulations};
pub use tail_pricing::{Budget, TTL_RARE, TailInputs, budget_from_said, price_tail, ttl_rule_said};
pub use trigger::{
    CEILING, NARROWING_REPLAYS, RESOLUTION, Trigger, TriggerPlan, describe_trigger, search_trigger,
};
pub use ttl::{
    ALERT_SHARE, DEFAULT_SAFETY_FACTOR, MIN_LEASE, TtlInputs, exceedance, heartbeat,
    heartbeat_derivation, heartbeat_with_lease, recommend, review_scales,
};
pub use ttl_plan::{
    Derived, MissingSimulation, Simulated, TtlOptions, TtlPlan, TtlSimulations, derive,
};
