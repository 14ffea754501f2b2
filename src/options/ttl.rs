//! `ttl`'s flags resolved and checked.

use std::path::PathBuf;
use std::time::Duration;

use lockbench_analysis::Budget;
use lockbench_core::records::ttl::TargetFrom;
use lockbench_workloads::{Frequency, WorkloadSpec};

use super::parse::Refusal;
use super::simulation::SimulationSettings;
use crate::cli::TtlArgs;

/// Options of `ttl`.
#[derive(Clone, Debug)]
pub struct TtlSettings {
    pub spec: PathBuf,
    pub profile: Option<String>,
    /// `--target-scale`; `None` to take the spec's `target_volume`.
    pub target_scale: Option<f64>,
    pub safety_factor: f64,
    /// `--current-ttl`; `None` to take the spec's `current_ttl`.
    pub current_ttl: Option<Duration>,
    /// `--runs-per-year`; `None` to take the spec's schedule.
    pub runs_per_year: Option<Frequency>,
    pub max_lease_risk: f64,
    /// `--accepted-double-runs-per-year`; `None` to take the spec's.
    pub accepted_double_runs_per_year: Option<f64>,
    pub observed: Option<PathBuf>,
    pub simulation: SimulationSettings,
}

impl TtlSettings {
    /// The target scale and where it comes from: the flag, else the spec's `target_volume`, else
    /// today's volume, assumed.
    pub fn target(&self, spec: &WorkloadSpec) -> (f64, TargetFrom) {
        match (self.target_scale, spec.target_scale()) {
            (Some(flag), _) => (flag, TargetFrom::Flag),
            (None, Some(answered)) => (answered, TargetFrom::Spec),
            (None, None) => (1.0, TargetFrom::Assumed),
        }
    }

    /// The yearly budget and where it comes from: the flag, else the spec's, else the default.
    pub fn budget(&self, spec: &WorkloadSpec) -> Budget {
        Budget::of(self.accepted_double_runs_per_year, spec)
    }

    /// Checks `ttl`'s flags.
    pub fn resolve(args: &TtlArgs) -> Result<Self, Refusal> {
        let simulation = SimulationSettings::resolve(&args.simulation)?;
        if args.observed.is_some() && simulation.shard.is_some() {
            return Err(Refusal::new(
                "--observed",
                "a sharded ttl cannot check the model: run `lockbench check` on its own",
            ));
        }
        if args.accepted_double_runs_per_year.is_some() && simulation.shard.is_some() {
            return Err(Refusal::new(
                "--accepted-double-runs-per-year",
                "a sharded ttl is priced by `merge`, which reads the budget from the spec: set [workload] accepted_double_runs_per_year there",
            ));
        }
        let mut settings = TtlSettings {
            spec: args.spec.clone(),
            profile: args.profile.clone(),
            target_scale: args.target_scale,
            safety_factor: args.safety_factor,
            current_ttl: args.current_ttl,
            runs_per_year: args.runs_per_year.clone(),
            max_lease_risk: args.max_lease_risk,
            accepted_double_runs_per_year: args.accepted_double_runs_per_year,
            observed: args.observed.clone(),
            simulation,
        };
        let recorded = settings.shard_settings();
        if let Some(shard) = &mut settings.simulation.shard {
            shard.settings = recorded;
        }
        Ok(settings)
    }
}
