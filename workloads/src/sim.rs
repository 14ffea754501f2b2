//! The simulated executor: replays a [`JobModel`] many times in virtual time and records the
//! runtimes. Nothing here sleeps; a replay of a 400 s job takes microseconds.
//!
//! Determinism: replay `i` draws from its own random stream derived from the seed and `i`, and the
//! histogram only holds integers, so the result for a seed is the same whatever the thread count.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use lockbench_core::RuntimeHistogram;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::Shard;
use crate::model::{CompiledPauses, JobModel};
use parts::{
    PauseTimeline, Scratch, StepState, Window, call_work, effects_at, next_pause, pause_timeline,
    realise, start_and_factor,
};

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
    /// The replays this process runs ([`Shard::WHOLE`]: all of them).
    pub shard: Shard,
    /// Which engine replays the model.
    pub engine: Engine,
}

/// How a replay draws its calls.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Engine {
    /// Calls between events drawn as one sum per step (see `block_law`); the calls around an
    /// event one by one. A model whose latencies have no surrogate runs on [`Engine::Exact`].
    #[default]
    Blocks,
    /// Every call drawn: the reference.
    Exact,
}

impl Engine {
    /// Every engine, in the order `--engine` lists them.
    pub const ALL: [Engine; 2] = [Engine::Blocks, Engine::Exact];

    /// The name `--engine` takes and the records carry.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Blocks => "blocks",
            Engine::Exact => "exact",
        }
    }

    /// The engine that replays `model` when this one is asked for.
    pub fn for_model(self, model: &JobModel) -> Engine {
        match self {
            Engine::Blocks if model.blockable() => Engine::Blocks,
            _ => Engine::Exact,
        }
    }

    /// What drew `models`' replays when this engine was asked for, as the records carry it: its
    /// name, and the models it left to the per-call engine.
    pub fn ran<'a>(self, models: impl Iterator<Item = &'a JobModel>) -> String {
        let exact: Vec<String> = models
            .filter(|m| self.for_model(m) != self)
            .map(|m| format!("{}/{} x{}", m.workload, m.profile, m.scale))
            .collect();
        if exact.is_empty() {
            self.name().into()
        } else {
            format!(
                "{}; {} for {} (a latency without a finite third moment)",
                self.name(),
                Engine::Exact.name(),
                exact.join(", ")
            )
        }
    }
}

/// Runs `options.replays` replays of `model` (those of `options.shard`) and returns their
/// runtimes. `progress` is called with the number of replays just finished, from any worker
/// thread.
pub fn simulate(
    model: &JobModel,
    options: &SimOptions,
    progress: &(dyn Fn(u64) + Sync),
) -> RuntimeHistogram {
    simulate_leases(model, options, &[], progress).0
}

/// [`simulate`], and for each heartbeat lease in `leases` the replays in which a stop-the-world
/// pause outlasted the time left on it: the holder acquires at the start of the run and renews
/// every lease/3, a pause stops its renewals (slow calls do not), and a pause of length d that
/// begins `phase` after the last renewal loses the lease when d > lease - phase (see
/// `count_lost`). The pauses are the replay's own, so the runtimes are those [`simulate`] gives.
pub fn simulate_leases(
    model: &JobModel,
    options: &SimOptions,
    leases: &[Duration],
    progress: &(dyn Fn(u64) + Sync),
) -> (RuntimeHistogram, Vec<u64>) {
    let replays = options.shard.replays_of(options.replays.min(MAX_REPLAYS));
    let next = AtomicU64::new(0);
    let threads = options.threads.max(1);
    let leases_s: Vec<f64> = leases.iter().map(Duration::as_secs_f64).collect();
    // Without pauses no lease is lost: nothing to count.
    let counting = !leases_s.is_empty() && model.pauses.is_some();
    let engine = options.engine.for_model(model);
    let parts: Vec<(RuntimeHistogram, Vec<u64>)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut histogram = RuntimeHistogram::with_thresholds(&options.thresholds);
                    let mut lost = vec![0u64; leases_s.len()];
                    let mut scratch = Scratch::default();
                    loop {
                        let first = next.fetch_add(CHUNK, Ordering::Relaxed);
                        if first >= replays {
                            break;
                        }
                        let last = (first + CHUNK).min(replays);
                        for k in first..last {
                            let mut rng = replay_rng(options.seed, options.shard.global(k));
                            let runtime_s = match engine {
                                Engine::Blocks => blocks::replay(model, &mut rng, &mut scratch),
                                Engine::Exact => replay(model, &mut rng, &mut scratch),
                            };
                            histogram.record_ns(seconds_to_ns(runtime_s));
                            if counting {
                                count_lost(&scratch.pauses, runtime_s, &leases_s, &mut lost);
                            }
                        }
                        progress(last - first);
                    }
                    (histogram, lost)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("simulation worker panicked"))
            .collect()
    });
    let mut total = RuntimeHistogram::with_thresholds(&options.thresholds);
    let mut lost = vec![0u64; leases.len()];
    for (h, l) in &parts {
        total.merge(h);
        lost.iter_mut().zip(l).for_each(|(a, b)| *a += b);
    }
    (total, lost)
}

/// Adds one to `lost[i]` when a pause of the run (those that began before it ended) outlasted
/// what was left of lease `leases_s[i]` when it began. The renewals follow a heartbeat that
/// sleeps lease/3 and then renews: every lease/3 from the last renewal, and at once on waking
/// from a pause during which one fell due (its sleep ran out while the process was stopped), so
/// a pause moves the phase of the renewals after it.
fn count_lost(pauses: &[(f64, f64)], runtime_s: f64, leases_s: &[f64], lost: &mut [u64]) {
    for (lease, count) in leases_s.iter().zip(lost.iter_mut()) {
        *count += u64::from(lease_margin(pauses, runtime_s, *lease) > 0.0);
    }
}

/// By how much the worst pause of a run outlasted what was left of a heartbeat lease of `lease_s`
/// seconds when it began (the renewals as [`simulate_leases`] has them): positive when the lease
/// was lost, and the larger the closer the run came to losing it otherwise. A continuous score,
/// so that a rare-event estimator can climb towards a loss.
pub fn lease_margin(pauses: &[(f64, f64)], runtime_s: f64, lease_s: f64) -> f64 {
    renewed_lease_margin(pauses, runtime_s, lease_s, lease_s / 3.0)
}

/// [`lease_margin`] of a lease renewed every `every_s` seconds instead of every third of it: a
/// runner's own lease (BullMQ renews its job lock every half `lockDuration`, Quartz checks in
/// every `clusterCheckinInterval` against a lease 7.5 s longer).
pub fn renewed_lease_margin(
    pauses: &[(f64, f64)],
    runtime_s: f64,
    lease_s: f64,
    every_s: f64,
) -> f64 {
    let every = every_s;
    let mut renewed = 0.0f64;
    let mut margin = f64::NEG_INFINITY;
    for &(start, length) in pauses.iter().take_while(|(start, _)| *start < runtime_s) {
        // The renewals due before the pause, on the grid from the last one.
        renewed += ((start - renewed) / every).floor().max(0.0) * every;
        margin = margin.max(length - (lease_s - (start - renewed)));
        if start + length >= renewed + every {
            renewed = start + length;
        }
    }
    margin
}

/// One replay of `model` by `engine` (the per-call engine where the model needs it), drawing from
/// `rng`: its runtime in seconds, and the pauses it drew (start, length), in order, left in
/// `pauses`. What [`simulate`] does for each of its replays, for a caller that brings its own
/// stream.
pub fn replay_with<R: Stream>(
    model: &JobModel,
    engine: Engine,
    rng: &mut R,
    pauses: &mut Vec<(f64, f64)>,
) -> f64 {
    let mut scratch = Scratch::default();
    let runtime = match engine.for_model(model) {
        Engine::Blocks => blocks::replay(model, rng, &mut scratch),
        Engine::Exact => replay(model, rng, &mut scratch),
    };
    pauses.clear();
    pauses.extend_from_slice(&scratch.pauses);
    runtime
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

/// The environment of one live job run: the episodes that happen in it, drawn exactly as the
/// simulator draws replay `index`'s, and how long each call must take under them. Every worker of
/// the run shares it (a slow database is slow for everybody); per-call noise comes from each
/// worker's own stream.
#[derive(Clone, Debug)]
pub struct LiveScenario {
    windows: Vec<Window>,
}

impl LiveScenario {
    /// Draws the episodes of one run from `rng` (the stream of replay `index`).
    pub fn draw(model: &JobModel, rng: &mut SmallRng) -> Self {
        LiveScenario {
            windows: model
                .episodes
                .iter()
                .filter_map(|ep| realise(ep, rng))
                .collect(),
        }
    }

    /// Seconds from `t` (seconds since the run began) until a call of step `step` begun then
    /// completes: blocks waited out first, then the call's work under the slowdowns active at its
    /// start, as the simulator's engines do.
    pub fn call_seconds(&self, model: &JobModel, step: usize, t: f64, rng: &mut SmallRng) -> f64 {
        let compiled = &model.steps[step];
        let (start, factor) = start_and_factor(&self.windows, compiled.mask, t);
        (start - t) + call_work(compiled, model.units_per_item, rng) * factor
    }
}

/// One live worker's stop-the-world pauses, generated as the simulator generates them.
pub struct LivePauses {
    spec: Option<CompiledPauses>,
    rng: SmallRng,
    next: (f64, f64),
}

impl LivePauses {
    /// The pauses of one worker in one run, from its own stream.
    pub fn new(model: &JobModel, mut rng: SmallRng) -> Self {
        let spec = model.pauses.clone();
        let next = spec
            .as_ref()
            .map_or((f64::INFINITY, 0.0), |s| next_pause(s, &mut rng, 0.0));
        LivePauses { spec, rng, next }
    }

    /// Total length of the pauses due by `t` (seconds since the run began) and not yet taken.
    pub fn due(&mut self, t: f64) -> f64 {
        let mut total = 0.0;
        // Bounded: each pass consumes one pause that starts no later than t.
        while self.next.0 <= t {
            let Some(spec) = &self.spec else { break };
            total += self.next.1;
            let end = self.next.0 + self.next.1;
            self.next = next_pause(spec, &mut self.rng, end);
        }
        total
    }
}

/// One job run in virtual time; returns its runtime in seconds.
pub(crate) fn replay<R: Stream>(model: &JobModel, rng: &mut R, scratch: &mut Scratch) -> f64 {
    scratch.active.clear();
    for ep in &model.episodes {
        if let Some(window) = realise(ep, rng) {
            scratch.active.push(window);
        }
    }
    let pauses = pause_timeline(model, rng, &mut scratch.pauses);
    match (model.concurrency, scratch.active.is_empty(), pauses) {
        (1, true, None) => straight_sum(model, rng),
        (1, _, pauses) => single_lane(model, rng, &scratch.active, &mut scratch.states, pauses),
        (_, _, pauses) => lanes(model, rng, &scratch.active, &mut scratch.lanes, pauses),
    }
}

/// The common case, kept free of branches on time: one lane, nothing correlated happening.
#[inline(never)]
fn straight_sum<R: Rng>(model: &JobModel, rng: &mut R) -> f64 {
    let mut total = 0.0;
    let units = model.units_per_item;
    for _ in 0..model.items {
        for step in &model.steps {
            total += call_work(step, units, rng);
        }
    }
    total
}

/// One lane with episodes or pauses. What episodes do to each step only changes at window
/// boundaries, so it is recomputed when a call starts past the next boundary, not per call; and
/// pauses only cost anything for the calls they overlap. Gives exactly what [`lanes`] gives for
/// one lane, at nearly the speed of [`straight_sum`].
fn single_lane<R: Rng>(
    model: &JobModel,
    rng: &mut R,
    active: &[Window],
    states: &mut Vec<StepState>,
    mut pauses: Option<PauseTimeline<R>>,
) -> f64 {
    let units = model.units_per_item;
    let steps = model.steps.len();
    let mut t = 0.0;
    let mut next_boundary = effects_at(active, 0.0, steps, states);
    let mut pause_index = 0;
    let mut next_pause = pauses.as_mut().map_or(f64::INFINITY, |p| p.get(0).0);
    for _ in 0..model.items {
        for (i, step) in model.steps.iter().enumerate() {
            if t >= next_boundary {
                next_boundary = effects_at(active, t, steps, states);
            }
            if states[i].blocked_until > t {
                (t, next_boundary) = wait_for_blocks(active, t, i, states);
            }
            let work = call_work(step, units, rng) * states[i].factor;
            let end = t + work;
            // `next_pause` is infinite without pauses, so this test alone keeps the common path
            // free of the pause machinery.
            t = if end > next_pause {
                let p = pauses.as_mut().expect("a finite next pause implies pauses");
                let (end, index) = p.stretch(t, work, pause_index);
                pause_index = index;
                next_pause = p.get(index).0;
                end
            } else {
                end
            };
        }
    }
    t
}

/// Moves `t` past every block window that holds step `step`, refreshing `states`; returns the new
/// time and the next boundary.
#[cold]
fn wait_for_blocks(
    active: &[Window],
    mut t: f64,
    step: usize,
    states: &mut Vec<StepState>,
) -> (f64, f64) {
    let steps = states.len();
    let mut next_boundary = effects_at(active, t, steps, states);
    // Bounded: each pass moves t to the end of a block window.
    for _ in 0..=active.len() {
        if states[step].blocked_until <= t {
            break;
        }
        t = states[step].blocked_until;
        next_boundary = effects_at(active, t, steps, states);
    }
    (t, next_boundary)
}

/// The general case: several lanes, episodes and pauses on the run's own timeline.
fn lanes<R: Rng>(
    model: &JobModel,
    rng: &mut R,
    active: &[Window],
    lanes: &mut Vec<f64>,
    mut pauses: Option<PauseTimeline<R>>,
) -> f64 {
    lanes.clear();
    lanes.resize(model.concurrency, 0.0);
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
        if let Some(p) = pauses.as_mut() {
            // Pauses that ended before this item starts can no longer touch any later call.
            loop {
                let (start, length) = p.get(pause_cursor);
                if start + length > t {
                    break;
                }
                pause_cursor += 1;
            }
        }
        for step in &model.steps {
            let mut factor = 1.0;
            if !active.is_empty() {
                (t, factor) = start_and_factor(active, step.mask, t);
            }
            let work = call_work(step, units, rng) * factor;
            t = match pauses.as_mut() {
                None => t + work,
                Some(p) => p.stretch(t, work, pause_cursor).0,
            };
        }
        lanes[lane] = t;
    }
    lanes.iter().copied().fold(0.0, f64::max)
}

mod blocks;
mod parts;
mod stream;

pub use stream::Stream;

#[cfg(test)]
#[path = "sim_tests.rs"]
mod tests;
