//! The simulated executor: replays a [`ReplayModel`] many times in virtual time and records the
//! runtimes. Nothing here sleeps; a replay of a 400 s job takes microseconds.
//!
//! Determinism: replay `i` draws from its own random stream derived from the seed and `i`, and the
//! histogram only holds integers, so the result for a seed is the same whatever the thread count.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use lockbench_core::RuntimeHistogram;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::model::{CompiledEpisode, CompiledPauses, Effect, ReplayModel};

/// Replays handed to a thread at a time: large enough to amortise the shared counter, small
/// enough that both cores finish together.
const CHUNK: u64 = 64;
/// Most replays one simulation may run.
pub const MAX_REPLAYS: u64 = 100_000_000;

/// How to run a simulation.
#[derive(Clone, Debug)]
pub struct SimOptions {
    /// Number of replays.
    pub replays: u64,
    /// Seed of every random stream.
    pub seed: u64,
    /// Worker threads (at least one).
    pub threads: usize,
    /// Runtimes above which replays are counted exactly (a current TTL to price).
    pub thresholds: Vec<Duration>,
}

/// Runs `options.replays` replays of `model` and returns their runtimes. `progress` is called
/// with the number of replays just finished, from any worker thread.
pub fn simulate(
    model: &ReplayModel,
    options: &SimOptions,
    progress: &(dyn Fn(u64) + Sync),
) -> RuntimeHistogram {
    let replays = options.replays.min(MAX_REPLAYS);
    let next = AtomicU64::new(0);
    let threads = options.threads.max(1);
    let parts: Vec<RuntimeHistogram> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut histogram = RuntimeHistogram::with_thresholds(&options.thresholds);
                    let mut scratch = Scratch::default();
                    loop {
                        let first = next.fetch_add(CHUNK, Ordering::Relaxed);
                        if first >= replays {
                            break;
                        }
                        let last = (first + CHUNK).min(replays);
                        for index in first..last {
                            let mut rng = replay_rng(options.seed, index);
                            let runtime_s = replay(model, &mut rng, &mut scratch);
                            histogram.record_ns(seconds_to_ns(runtime_s));
                        }
                        progress(last - first);
                    }
                    histogram
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("simulation worker panicked"))
            .collect()
    });
    let mut total = RuntimeHistogram::with_thresholds(&options.thresholds);
    parts.iter().for_each(|p| total.merge(p));
    total
}

/// The random stream of replay `index`: independent of which thread runs it.
pub fn replay_rng(seed: u64, index: u64) -> SmallRng {
    SmallRng::seed_from_u64(splitmix64(seed ^ splitmix64(index)))
}

fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

fn seconds_to_ns(s: f64) -> u64 {
    // `as` saturates: an absurd runtime lands in the histogram's saturation count.
    (s * 1e9).round() as u64
}

/// Buffers reused across replays so that the inner loop never allocates.
#[derive(Default)]
pub(crate) struct Scratch {
    active: Vec<Window>,
    pauses: Vec<(f64, f64)>,
    lanes: Vec<f64>,
}

/// An episode that happens in this replay.
#[derive(Clone, Copy, Debug)]
struct Window {
    start: f64,
    end: f64,
    mask: u64,
    /// Latency factor; `None` blocks calls until `end`.
    factor: Option<f64>,
}

/// One job run in virtual time; returns its runtime in seconds.
pub(crate) fn replay(model: &ReplayModel, rng: &mut SmallRng, scratch: &mut Scratch) -> f64 {
    scratch.active.clear();
    for ep in &model.episodes {
        if let Some(window) = realise(ep, rng) {
            scratch.active.push(window);
        }
    }
    if model.concurrency == 1 && scratch.active.is_empty() && model.pauses.is_none() {
        return straight_sum(model, rng);
    }
    timeline(model, rng, scratch)
}

fn realise(ep: &CompiledEpisode, rng: &mut SmallRng) -> Option<Window> {
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

/// The common case, kept free of branches on time: one lane, nothing correlated happening.
#[inline(never)]
fn straight_sum(model: &ReplayModel, rng: &mut SmallRng) -> f64 {
    let mut total = 0.0;
    let units = model.units_per_item;
    for _ in 0..model.items {
        for step in &model.steps {
            total += step.base.sample(rng);
            if let Some(per_unit) = &step.per_unit {
                total += per_unit.sample(rng) * units;
            }
        }
    }
    total
}

/// The general case: lanes, episodes and pauses on the run's own timeline.
fn timeline(model: &ReplayModel, rng: &mut SmallRng, scratch: &mut Scratch) -> f64 {
    let Scratch {
        active,
        pauses,
        lanes,
    } = scratch;
    lanes.clear();
    lanes.resize(model.concurrency, 0.0);
    pauses.clear();
    let mut pause_cursor = 0;
    let units = model.units_per_item;
    for _ in 0..model.items {
        // Items start on the lane that frees first, so item start times never decrease.
        let (lane, mut t) = lanes
            .iter()
            .copied()
            .enumerate()
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .expect("at least one lane");
        // Pauses that ended before this item starts can no longer touch any later call.
        while pause_cursor < pauses.len() && pauses[pause_cursor].0 + pauses[pause_cursor].1 <= t {
            pause_cursor += 1;
        }
        for step in &model.steps {
            let mut factor = 1.0;
            if !active.is_empty() {
                // A blocked call may be released into another episode's window: repeat until
                // no block applies (bounded: each pass moves t to a later window end).
                for _ in 0..=active.len() {
                    let blocker = active.iter().find(|w| {
                        w.factor.is_none() && w.mask & step.mask != 0 && t >= w.start && t < w.end
                    });
                    match blocker {
                        Some(w) => t = w.end,
                        None => break,
                    }
                }
                for w in active.iter() {
                    if let Some(f) = w.factor
                        && w.mask & step.mask != 0
                        && t >= w.start
                        && t < w.end
                    {
                        factor *= f;
                    }
                }
            }
            let mut work = step.base.sample(rng);
            if let Some(per_unit) = &step.per_unit {
                work += per_unit.sample(rng) * units;
            }
            work *= factor;
            t = match &model.pauses {
                None => t + work,
                Some(spec) => stretch(t, work, spec, pauses, pause_cursor, rng),
            };
        }
        lanes[lane] = t;
    }
    lanes.iter().copied().fold(0.0, f64::max)
}

/// The wall time at which `work` seconds of work begun at `start` finish, when every pause that
/// begins before then freezes it. Pauses are generated lazily on the run's timeline.
fn stretch(
    start: f64,
    work: f64,
    spec: &CompiledPauses,
    pauses: &mut Vec<(f64, f64)>,
    from: usize,
    rng: &mut SmallRng,
) -> f64 {
    let mut end = start + work;
    let mut i = from;
    loop {
        if i == pauses.len() {
            let previous_end = pauses.last().map_or(0.0, |(p, d)| p + d);
            let gap = -spec.mean_interval_s * (-unit_f64(rng.next_u64())).ln_1p();
            let length = spec.duration.sample(rng);
            pauses.push((previous_end + gap, length));
        }
        let (pause_start, length) = pauses[i];
        if pause_start >= end {
            return end;
        }
        if pause_start >= start {
            end += length;
        }
        i += 1;
    }
}

/// A uniform value in [0, 1) from a random word.
fn unit_f64(word: u64) -> f64 {
    (word >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}
