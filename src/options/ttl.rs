//! `ttl`'s flags resolved and checked.

use std::path::PathBuf;
use std::time::Duration;

use lockbench_analysis::DEFAULT_SAFETY_FACTOR;
use lockbench_workloads::Frequency;

use super::parse::{Refusal, parse_number, parse_scale};
use super::simulation::SimulationSettings;
use crate::cli::TtlArgs;

/// Options of `ttl`.
#[derive(Clone, Debug)]
pub struct TtlSettings {
    pub spec: PathBuf,
    pub profile: Option<String>,
    pub target_scale: f64,
    pub safety_factor: f64,
    pub current_ttl: Option<Duration>,
    /// `--runs-per-year`; `None` to take the spec's schedule.
    pub runs_per_year: Option<Frequency>,
    pub max_lease_risk: f64,
    pub observed: Option<PathBuf>,
    pub simulation: SimulationSettings,
}

impl TtlSettings {
    /// Checks `ttl`'s flags.
    pub fn resolve(args: &TtlArgs) -> Result<Self, Refusal> {
        let safety_factor: f64 =
            parse_number("--safety-factor", &args.safety_factor, "a factor such as 3")?;
        if !(safety_factor.is_finite() && (1.0..=100.0).contains(&safety_factor)) {
            return Err(Refusal::new(
                "--safety-factor",
                format!(
                    "expected a factor from 1 to 100 (default {DEFAULT_SAFETY_FACTOR}), got {safety_factor}"
                ),
            ));
        }
        let current_ttl = match &args.current_ttl {
            Some(text) => {
                let d = lockbench_workloads::duration::parse(text)
                    .map_err(|m| Refusal::new("--current-ttl", m))?;
                if d.is_zero() {
                    return Err(Refusal::new("--current-ttl", "expected a TTL above zero"));
                }
                Some(d)
            }
            None => None,
        };
        let runs_per_year = match &args.runs_per_year {
            Some(text) => {
                let n: f64 = parse_number("--runs-per-year", text, "a number of runs such as 12")?;
                Some(Frequency::of_flag(n).map_err(|m| Refusal::new("--runs-per-year", m))?)
            }
            None => None,
        };
        let max_lease_risk: f64 = parse_number(
            "--max-lease-risk",
            &args.max_lease_risk,
            "a chance per run such as 1e-4",
        )?;
        // Below 1e-7 the replays the bound needs (about 6 / P) pass MAX_REPLAYS.
        if !(max_lease_risk.is_finite() && (1e-7..=0.5).contains(&max_lease_risk)) {
            return Err(Refusal::new(
                "--max-lease-risk",
                format!("expected a chance per run from 1e-7 to 0.5, got {max_lease_risk}"),
            ));
        }
        let simulation = SimulationSettings::resolve(&args.simulation)?;
        if args.observed.is_some() && simulation.shard.is_some() {
            return Err(Refusal::new(
                "--observed",
                "a sharded ttl cannot check the model: run `lockbench check` on its own",
            ));
        }
        let mut options = TtlSettings {
            spec: args.spec.clone(),
            profile: args.profile.clone(),
            target_scale: parse_scale("--target-scale", &args.target_scale)?,
            safety_factor,
            current_ttl,
            runs_per_year,
            max_lease_risk,
            observed: args.observed.clone(),
            simulation,
        };
        let settings = options.shard_settings();
        if let Some(shard) = &mut options.simulation.shard {
            shard.settings = settings;
        }
        Ok(options)
    }
}
