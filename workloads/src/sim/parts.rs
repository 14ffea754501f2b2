//! What both engines share: a replay's scratch buffers, its episode windows and what they do to
//! each step at a moment, its pause timeline, and how one call's work is drawn. The per-call engine
//! (the parent module) and the block engine ([`super::blocks`]) both build on these, so that the
//! calls they draw one by one are drawn the same way.

use rand::Rng;

use super::stream::Stream;

use crate::model::{CompiledEpisode, CompiledPauses, CompiledStep, Effect, JobModel};

/// Buffers reused across replays so that the inner loop never allocates.
#[derive(Default)]
pub(crate) struct Scratch {
    pub(super) active: Vec<Window>,
    pub(super) pauses: Vec<(f64, f64)>,
    pub(super) lanes: Vec<f64>,
    pub(super) states: Vec<StepState>,
    pub(super) block_lanes: Vec<Lane>,
}

/// What the episodes active at some moment do to one step.
#[derive(Clone, Copy, Debug)]
pub(super) struct StepState {
    pub(super) factor: f64,
    pub(super) blocked_until: f64,
}

impl StepState {
    pub(super) const FREE: StepState = StepState {
        factor: 1.0,
        blocked_until: f64::NEG_INFINITY,
    };
}

/// The stop-the-world pauses of one replay, generated lazily from their own random stream so that
/// the pause timeline does not depend on how many latency draws came before.
pub(super) struct PauseTimeline<'a, R> {
    pub(super) spec: &'a CompiledPauses,
    pub(super) rng: R,
    pub(super) pauses: &'a mut Vec<(f64, f64)>,
}

impl<R: Rng> PauseTimeline<'_, R> {
    /// The `i`-th pause as (start, length), generating it if needed.
    pub(super) fn get(&mut self, i: usize) -> (f64, f64) {
        while self.pauses.len() <= i {
            let previous_end = self.pauses.last().map_or(0.0, |(p, d)| p + d);
            let next = next_pause(self.spec, &mut self.rng, previous_end);
            self.pauses.push(next);
        }
        self.pauses[i]
    }

    /// The wall time at which `work` seconds begun at `start` finish when every pause that begins
    /// before then freezes the run, and the index of the first pause that begins after it.
    pub(super) fn stretch(&mut self, start: f64, work: f64, from: usize) -> (f64, usize) {
        let mut end = start + work;
        let mut i = from;
        loop {
            let (pause_start, length) = self.get(i);
            if pause_start >= end {
                return (end, i);
            }
            if pause_start >= start {
                end += length;
            }
            i += 1;
        }
    }
}

/// The pause after one that ended at `previous_end`: (start, length), exponential gaps.
pub(super) fn next_pause<R: Rng + ?Sized>(
    spec: &CompiledPauses,
    rng: &mut R,
    previous_end: f64,
) -> (f64, f64) {
    let gap = -spec.mean_interval_s * (-unit_f64(rng.next_u64())).ln_1p();
    let length = spec.duration.sample(rng);
    (previous_end + gap, length)
}

/// An episode that happens in this replay.
#[derive(Clone, Copy, Debug)]
pub(super) struct Window {
    pub(super) start: f64,
    pub(super) end: f64,
    pub(super) mask: u64,
    /// Latency factor; `None` blocks calls until `end`.
    pub(super) factor: Option<f64>,
}

pub(super) fn pause_timeline<'a, R: Stream>(
    model: &'a JobModel,
    rng: &mut R,
    buffer: &'a mut Vec<(f64, f64)>,
) -> Option<PauseTimeline<'a, R>> {
    model.pauses.as_ref().map(|spec| {
        buffer.clear();
        PauseTimeline {
            spec,
            rng: rng.split(),
            pauses: buffer,
        }
    })
}

pub(super) fn realise<R: Rng + ?Sized>(ep: &CompiledEpisode, rng: &mut R) -> Option<Window> {
    let roll = unit_f64(rng.next_u64());
    if roll >= ep.chance || ep.mask == 0 {
        return None;
    }
    let start = ep.start.sample(rng);
    let end = start + ep.duration.sample(rng);
    let factor = match ep.effect {
        Effect::Block => None,
        Effect::Slowdown { min, max } => Some(min + (max - min) * unit_f64(rng.next_u64())),
    };
    Some(Window {
        start,
        end,
        mask: ep.mask,
        factor,
    })
}

/// Fills `states` with what the windows active at `t` do to each step; returns the next time at
/// which that changes.
pub(super) fn effects_at(
    active: &[Window],
    t: f64,
    steps: usize,
    states: &mut Vec<StepState>,
) -> f64 {
    states.clear();
    states.resize(steps, StepState::FREE);
    let mut next = f64::INFINITY;
    for w in active {
        if t < w.start {
            next = next.min(w.start);
            continue;
        }
        if t >= w.end {
            continue;
        }
        next = next.min(w.end);
        for (i, state) in states.iter_mut().enumerate() {
            if w.mask & (1 << i) == 0 {
                continue;
            }
            match w.factor {
                Some(f) => state.factor *= f,
                None => state.blocked_until = state.blocked_until.max(w.end),
            }
        }
    }
    next
}

/// One call's work before any episode: its latency plus, for a step with a per-unit part, that
/// part times the item's units. Every engine draws it here, in the same order and association,
/// so that they agree to the last bit.
#[inline(always)]
pub(super) fn call_work<R: Rng + ?Sized>(step: &CompiledStep, units: f64, rng: &mut R) -> f64 {
    let mut work = step.base.sample(rng);
    if let Some(per_unit) = &step.per_unit {
        work += per_unit.sample(rng) * units;
    }
    work
}

/// When a call of the step with `mask`, arriving at `t`, starts (block windows waited out, one
/// after another) and the slowdown factor of the windows active then.
#[inline]
pub(super) fn start_and_factor(active: &[Window], mask: u64, mut t: f64) -> (f64, f64) {
    // A blocked call may be released into another block: repeat until none applies (bounded:
    // each pass moves t to a later window end).
    for _ in 0..=active.len() {
        let blocker = active
            .iter()
            .find(|w| w.factor.is_none() && w.mask & mask != 0 && t >= w.start && t < w.end);
        match blocker {
            Some(w) => t = w.end,
            None => break,
        }
    }
    let mut factor = 1.0;
    for w in active {
        if let Some(f) = w.factor
            && w.mask & mask != 0
            && t >= w.start
            && t < w.end
        {
            factor *= f;
        }
    }
    (t, factor)
}

/// A uniform value in [0, 1) from a random word.
pub(super) fn unit_f64(word: u64) -> f64 {
    (word >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// One lane of the block engine: its clock and the first pause that begins at or after it.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Lane {
    pub(super) t: f64,
    pub(super) pause: usize,
}
