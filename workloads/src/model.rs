//! A spec compiled for one profile and one scale: everything the simulator's inner loop needs,
//! with every override already applied and every distribution turned into a [`Sampler`].

use crate::block_law::{BlockLaw, CallMoments};
use crate::error::SpecError;
use crate::latency::Latency;
use crate::sampler::Sampler;
use crate::spec::{Profile, WorkloadSpec};
use crate::target::Target;

/// Largest number of items one job run may have, to bound a simulation's work.
pub const MAX_ITEMS: u64 = 1_000_000_000;

/// One step, ready to sample.
#[derive(Clone, Debug)]
pub struct CompiledStep {
    /// The step's name in the spec.
    pub name: String,
    /// What its calls go to.
    pub target: Target,
    pub(crate) base: Sampler,
    pub(crate) per_unit: Option<Sampler>,
    pub(crate) mask: u64,
    /// How the block engine draws a sum of this step's calls; `None` when it cannot (a
    /// distribution without a finite third moment), which leaves the model to the per-call engine.
    pub(crate) block: Option<StepBlock>,
}

/// A step's calls as sums: its latency's and per-unit latency's laws, and the mean and variance of
/// one call's work (latency plus per-unit latency times the item's units).
#[derive(Clone, Debug)]
pub(crate) struct StepBlock {
    pub base: BlockLaw,
    pub per_unit: Option<BlockLaw>,
    pub work: CallMoments,
}

impl StepBlock {
    fn new(base: &Latency, per_unit: Option<&Latency>, factor: f64, units: f64) -> Option<Self> {
        let base = BlockLaw::new(base, factor)?;
        let per_unit = match per_unit {
            Some(l) => Some(BlockLaw::new(l, factor)?),
            None => None,
        };
        let b = base.moments();
        let u = per_unit.as_ref().map(BlockLaw::moments).unwrap_or_default();
        Some(StepBlock {
            work: CallMoments {
                mean: b.mean + units * u.mean,
                variance: b.variance + units * units * u.variance,
            },
            base,
            per_unit,
        })
    }
}

impl CompiledStep {
    /// True when a call's latency grows with the volume (a per-unit latency).
    pub fn scales_with_volume(&self) -> bool {
        self.per_unit.is_some()
    }
}

/// What an episode does to the calls inside its window.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Effect {
    /// Latency multiplied by a factor drawn uniformly from [min, max].
    Slowdown { min: f64, max: f64 },
    /// Calls wait for the window to end.
    Block,
}

#[derive(Clone, Debug)]
pub(crate) struct CompiledEpisode {
    pub chance: f64,
    pub start: Sampler,
    pub duration: Sampler,
    pub effect: Effect,
    pub mask: u64,
}

#[derive(Clone, Debug)]
pub(crate) struct CompiledPauses {
    pub mean_interval_s: f64,
    pub duration: Sampler,
}

/// A workload at one profile and scale, compiled for the simulator.
#[derive(Clone, Debug)]
pub struct JobModel {
    /// Workload name.
    pub workload: String,
    /// Profile name.
    pub profile: String,
    /// Volume multiplier.
    pub scale: f64,
    /// Units of volume per run at this scale.
    pub volume: u64,
    pub(crate) items: u64,
    pub(crate) units_per_item: f64,
    /// True when the spec fixes the item count (migrations, each on the whole volume).
    pub(crate) fixed_items: bool,
    pub(crate) concurrency: usize,
    pub(crate) steps: Vec<CompiledStep>,
    pub(crate) episodes: Vec<CompiledEpisode>,
    pub(crate) pauses: Option<CompiledPauses>,
}

impl JobModel {
    /// Items per job run (customers, or migrations).
    pub fn items(&self) -> u64 {
        self.items
    }

    /// True when the spec fixes the item count (migrations, each on the whole volume).
    pub fn fixed_items(&self) -> bool {
        self.fixed_items
    }

    /// Lanes a job run works in at once.
    pub fn concurrency(&self) -> usize {
        self.concurrency
    }

    /// True when the profile injects stop-the-world pauses.
    pub fn has_pauses(&self) -> bool {
        self.pauses.is_some()
    }

    /// The steps each item goes through, in order.
    pub fn steps(&self) -> &[CompiledStep] {
        &self.steps
    }

    /// Compiles `spec` under the profile called `profile` at `scale`.
    pub fn new(spec: &WorkloadSpec, profile: &str, scale: f64) -> Result<Self, SpecError> {
        let profile = spec.profile(profile)?;
        let scale_error = |message: String| SpecError::Scale {
            file: spec.path.clone(),
            scale,
            message,
        };
        if !(scale.is_finite() && scale > 0.0) {
            return Err(scale_error("expected a multiplier above zero".into()));
        }
        let volume = spec.volume_at(scale);
        let items = spec.workload.items.unwrap_or(volume);
        // A fixed item count (migrations) means each item works on the whole volume (every row);
        // otherwise each item is one unit (one customer).
        let units_per_item = if spec.workload.items.is_some() {
            volume as f64
        } else {
            1.0
        };
        if items > MAX_ITEMS {
            return Err(scale_error(format!(
                "{items} items per run exceeds the limit of {MAX_ITEMS}"
            )));
        }
        let steps = spec
            .steps
            .iter()
            .enumerate()
            .map(|(i, step)| {
                let (latency, factor) = effective_latency(spec, profile, i);
                CompiledStep {
                    name: step.name.clone(),
                    target: step.target,
                    base: Sampler::new(latency, factor),
                    per_unit: step.per_unit.as_ref().map(|l| Sampler::new(l, factor)),
                    mask: 1 << i,
                    block: StepBlock::new(latency, step.per_unit.as_ref(), factor, units_per_item),
                }
            })
            .collect();
        let episodes = profile
            .episodes
            .iter()
            .map(|ep| {
                let mask = spec
                    .steps
                    .iter()
                    .enumerate()
                    .filter(|(_, s)| {
                        s.target == ep.target && ep.step.as_ref().is_none_or(|n| *n == s.name)
                    })
                    .fold(0u64, |m, (i, _)| m | 1 << i);
                let effect = match (ep.block, ep.slowdown) {
                    (true, _) => Effect::Block,
                    (false, slowdown) => {
                        let min = slowdown.unwrap_or(1.0);
                        Effect::Slowdown {
                            min,
                            max: ep.slowdown_max.unwrap_or(min),
                        }
                    }
                };
                CompiledEpisode {
                    chance: ep.chance,
                    start: Sampler::new(&ep.start, 1.0),
                    duration: Sampler::new(&ep.duration, 1.0),
                    effect,
                    mask,
                }
            })
            .collect();
        let pauses = profile.pauses.as_ref().map(|p| CompiledPauses {
            mean_interval_s: p.mean_interval.as_secs_f64(),
            duration: Sampler::new(&p.duration, 1.0),
        });
        Ok(JobModel {
            workload: spec.workload.name.clone(),
            profile: profile.name.clone(),
            scale,
            volume,
            items,
            units_per_item,
            fixed_items: spec.workload.items.is_some(),
            concurrency: spec.workload.concurrency as usize,
            steps,
            episodes,
            pauses,
        })
    }

    /// True when every step's calls can be drawn as sums (see [`crate::block_law`]), so that the
    /// block engine can run this model.
    pub fn blockable(&self) -> bool {
        self.steps.iter().all(|s| s.block.is_some())
    }

    /// Latency samples one replay draws when no episode or pause interferes: the unit in which
    /// simulator throughput is counted.
    pub fn samples_per_replay(&self) -> u64 {
        let per_item: u64 = self
            .steps
            .iter()
            .map(|s| {
                u64::from(!s.base.is_constant())
                    + s.per_unit
                        .as_ref()
                        .map_or(0, |p| u64::from(!p.is_constant()))
            })
            .sum();
        per_item * self.items
    }
}

/// The latency of step `index` under `profile`: the last override that replaces it (or the
/// spec's own), and the product of every scale that applies.
fn effective_latency<'a>(
    spec: &'a WorkloadSpec,
    profile: &'a Profile,
    index: usize,
) -> (&'a Latency, f64) {
    let step = &spec.steps[index];
    profile
        .overrides
        .iter()
        .filter(|o| {
            o.target.is_none_or(|t| t == step.target)
                && o.step.as_ref().is_none_or(|n| *n == step.name)
        })
        .fold((&step.latency, 1.0), |(latency, factor), o| {
            (
                o.latency.as_ref().unwrap_or(latency),
                factor * o.scale.unwrap_or(1.0),
            )
        })
}
