//! The block engine: a replay whose cost follows events, not calls.
//!
//! Between two events (an episode's window opening or closing, a pause beginning) every call of a
//! step is drawn from the same law, so a run of k items is one draw per step of the sum of k calls
//! (see [`crate::block_law`]). A block is sized so that its sum ends before the next event with
//! [`MARGIN_SD`] standard deviations to spare; the items around an event are drawn call by call,
//! exactly as the per-call engine draws them, so an episode's factor and a pause's stretch apply to
//! the calls they touch and to no others.
//!
//! Several lanes take the next item when they free. With items of one law that is the same as each
//! lane running its own stream of items until the job's items are used up: which lane takes which
//! item does not change the law. So the lanes advance one after another to a common horizon,
//! each by blocks, and the last items go call by call to the lane that frees first, as in the
//! per-call engine. A horizon is set for about half the items left, so that the items started
//! before it never exceed the job's.

use super::parts::{
    Lane, PauseTimeline, Scratch, StepState, Window, call_work, effects_at, pause_timeline,
    realise, start_and_factor,
};
use crate::model::JobModel;
use rand::Rng;

use super::stream::Stream;

/// Fewest items one block covers: below it the block's draws (a Gamma per step) cost more than
/// the calls' own.
const MIN_BLOCK: u64 = 16;
/// Standard deviations of a block's sum kept between its expected end and the next event. A block
/// that reaches the event anyway is thrown away and its first item drawn call by call; the chance
/// of that bounds the engine's error at an event.
const MARGIN_SD: f64 = 8.0;
/// Items per lane below which the lanes stop advancing to horizons and take the last items one by
/// one.
const ROUND_ITEMS_PER_LANE: u64 = 4 * MIN_BLOCK;

/// One replay by the block engine; returns its runtime in seconds. Draws the episodes and the
/// pause stream as the per-call engine does.
pub(crate) fn replay<R: Stream>(model: &JobModel, rng: &mut R, scratch: &mut Scratch) -> f64 {
    scratch.active.clear();
    for ep in &model.episodes {
        if let Some(window) = realise(ep, rng) {
            scratch.active.push(window);
        }
    }
    let mut run = Run {
        model,
        active: &scratch.active,
        states: &mut scratch.states,
        pauses: pause_timeline(model, rng, &mut scratch.pauses),
        valid_from: f64::INFINITY,
        valid_until: f64::NEG_INFINITY,
    };
    let lanes = &mut scratch.block_lanes;
    lanes.clear();
    lanes.resize(model.concurrency, Lane::default());
    let mut left = model.items;
    if lanes.len() == 1 {
        run.advance(&mut lanes[0], f64::INFINITY, &mut left, rng);
    } else {
        let item_mean: f64 = model.steps.iter().map(|s| block_of(s).work.mean).sum();
        let count = lanes.len() as u64;
        while left >= ROUND_ITEMS_PER_LANE * count {
            let reach = lanes.iter().map(|l| l.t).fold(0.0, f64::max);
            let horizon = reach + (left / (2 * count)) as f64 * item_mean;
            for lane in lanes.iter_mut() {
                run.advance(lane, horizon, &mut left, rng);
            }
        }
    }
    // The last items, call by call, each on the lane that frees first.
    for _ in 0..left {
        let lane = lanes
            .iter_mut()
            .min_by(|a, b| a.t.total_cmp(&b.t))
            .expect("at least one lane");
        run.item(lane, rng);
    }
    lanes.iter().map(|l| l.t).fold(0.0, f64::max)
}

fn block_of(step: &crate::model::CompiledStep) -> &crate::model::StepBlock {
    step.block
        .as_ref()
        .expect("the block engine runs only blockable models")
}

/// One replay's shared timeline: its episode windows, what they do to each step at some moment
/// (valid on `[valid_from, valid_until)`), and its pauses.
struct Run<'a, R> {
    model: &'a JobModel,
    active: &'a [Window],
    states: &'a mut Vec<StepState>,
    pauses: Option<PauseTimeline<'a, R>>,
    valid_from: f64,
    valid_until: f64,
}

impl<R: Rng> Run<'_, R> {
    /// Moves `lane` to its first free moment at or past `horizon`, or until no item is left.
    fn advance(&mut self, lane: &mut Lane, horizon: f64, left: &mut u64, rng: &mut R) {
        while lane.t < horizon && *left > 0 {
            let t = lane.t;
            if t < self.valid_from || t >= self.valid_until {
                self.valid_until = effects_at(self.active, t, self.model.steps.len(), self.states);
                self.valid_from = t;
            }
            let next_pause = self
                .pauses
                .as_mut()
                .map_or(f64::INFINITY, |p| p.get(lane.pause).0);
            let event = self.valid_until.min(next_pause).min(horizon);
            let blocked = self.states.iter().any(|s| s.blocked_until > t);
            let k = if blocked {
                0
            } else {
                self.fit(event - t).min(*left)
            };
            if k >= MIN_BLOCK {
                let end = t + self.block_sum(k, rng);
                if end < event {
                    lane.t = end;
                    *left -= k;
                    continue;
                }
            }
            self.item(lane, rng);
            *left -= 1;
        }
    }

    /// Most items whose sum, under the factors in force, ends within `gap` with [`MARGIN_SD`]
    /// standard deviations to spare.
    fn fit(&self, gap: f64) -> u64 {
        let (mean, variance) = self.model.steps.iter().zip(self.states.iter()).fold(
            (0.0, 0.0),
            |(m, v), (step, state)| {
                let work = block_of(step).work;
                (
                    m + state.factor * work.mean,
                    v + state.factor * state.factor * work.variance,
                )
            },
        );
        if !gap.is_finite() || mean <= 0.0 {
            return u64::MAX;
        }
        // k·mean + MARGIN_SD·sqrt(k·variance) = gap, solved for sqrt(k).
        let spread = MARGIN_SD * variance.sqrt();
        let root = (-spread + (spread * spread + 4.0 * mean * gap).sqrt()) / (2.0 * mean);
        (root * root).floor() as u64
    }

    /// The time `k` items take under the factors in force: one sum per step and per-unit part.
    fn block_sum(&self, k: u64, rng: &mut R) -> f64 {
        let units = self.model.units_per_item;
        self.model
            .steps
            .iter()
            .zip(self.states.iter())
            .map(|(step, state)| {
                let block = block_of(step);
                let mut work = block.base.sum(k, rng);
                if let Some(per_unit) = &block.per_unit {
                    work += per_unit.sum(k, rng) * units;
                }
                work * state.factor
            })
            .sum()
    }

    /// One item on `lane`, call by call: blocks waited out, the factor in force at each call's
    /// start, the pauses that begin during it (the per-call engine's rules).
    fn item(&mut self, lane: &mut Lane, rng: &mut R) {
        let units = self.model.units_per_item;
        let mut t = lane.t;
        for step in &self.model.steps {
            let mut factor = 1.0;
            if !self.active.is_empty() {
                (t, factor) = start_and_factor(self.active, step.mask, t);
            }
            let work = call_work(step, units, rng) * factor;
            t = match self.pauses.as_mut() {
                None => t + work,
                Some(p) => {
                    let (end, next) = p.stretch(t, work, lane.pause);
                    lane.pause = next;
                    end
                }
            };
        }
        lane.t = t;
    }
}
