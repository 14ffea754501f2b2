//! `check`'s flags resolved and checked.

use std::path::PathBuf;

use super::simulation::SimulationSettings;
use crate::cli::CheckArgs;

/// `check`'s flags, checked: the spec, the past runs and how to read them, the simulation.
#[derive(Clone, Debug)]
pub struct CheckSettings {
    pub spec: lockbench_workloads::WorkloadSpec,
    /// The profile of runs that name none: `--profile`, else the spec's first.
    pub default_profile: String,
    pub observed: PathBuf,
    pub columns: lockbench_workloads::observed::RunColumns,
    pub simulation: SimulationSettings,
}

impl CheckSettings {
    /// Checks the flags and reads the spec before anything is simulated.
    pub fn resolve(args: &CheckArgs) -> Result<Self, anyhow::Error> {
        let simulation = SimulationSettings::resolve_whole(&args.simulation, "check")?;
        let spec = lockbench_workloads::WorkloadSpec::load(&args.spec)?;
        let default_profile = spec.profile_or_first(args.profile.as_deref())?.name.clone();
        Ok(CheckSettings {
            spec,
            default_profile,
            observed: args.observed.clone(),
            columns: args.runs.columns(),
            simulation,
        })
    }
}
