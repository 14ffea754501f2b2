//! Turning flags into checked options: defaults and every cross-field rule live here, and each
//! error names the flag and what it expects.

mod bench;
mod calibrate;
mod check;
mod clients;
mod faults;
mod main_job;
mod parse;
mod replay;
pub mod shard;
mod shard_settings;
mod simulate;
mod simulation;
mod ttl;
pub use bench::BenchSettings;
pub use calibrate::CalibrateSettings;
pub use check::CheckSettings;
pub use clients::ClientsCheckSettings;
pub use faults::FaultsSettings;
pub use main_job::MainJobSettings;
pub use parse::Refusal;
pub use replay::ReplaySettings;
pub use simulate::SimulateSettings;
pub use simulation::SimulationSettings;
pub use ttl::TtlSettings;
