//! `simulate`'s flags resolved and checked.

use std::path::PathBuf;

use super::parse::{Refusal, parse_scale};
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
        let mut scales = args
            .scales
            .iter()
            .map(|s| parse_scale("--scale", s))
            .collect::<Result<Vec<_>, _>>()?;
        if scales.is_empty() {
            scales.push(1.0);
        }
        let mut options = SimulateSettings {
            specs: args.specs.clone(),
            scales,
            profiles: args.profiles.clone(),
            simulation: SimulationSettings::resolve(&args.simulation)?,
        };
        let settings = options.shard_settings();
        if let Some(shard) = &mut options.simulation.shard {
            shard.settings = settings;
        }
        Ok(options)
    }
}
