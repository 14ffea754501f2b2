//! `simulate`'s flags resolved and checked.

use std::path::PathBuf;

use super::parse::Refusal;
use super::simulation::SimulationSettings;
use crate::cli::SimulateArgs;

/// Options of `simulate`.
#[derive(Clone, Debug)]
pub struct SimulateSettings {
    pub specs: Vec<PathBuf>,
    pub scales: Vec<f64>,
    pub profiles: Vec<String>,
    pub simulation: SimulationSettings,
}

impl SimulateSettings {
    /// Checks `simulate`'s flags.
    pub fn resolve(args: &SimulateArgs) -> Result<Self, Refusal> {
        let scales = if args.scales.is_empty() {
            vec![1.0]
        } else {
            args.scales.clone()
        };
        let mut settings = SimulateSettings {
            specs: args.specs.clone(),
            scales,
            profiles: args.profiles.clone(),
            simulation: SimulationSettings::resolve(&args.simulation)?,
        };
        let recorded = settings.shard_settings();
        if let Some(shard) = &mut settings.simulation.shard {
            shard.settings = recorded;
        }
        Ok(settings)
    }
}
