//! Rare events: the chance per run that a job outlives a TTL (or loses a heartbeat lease to a
//! stall) down to 1e-9 and below, where plain replays see nothing.
//!
//! The method is **subset simulation** (Au & Beck 2001; the adaptive form of multilevel splitting,
//! Cérou & Guyader 2007) run on the simulator as it is: every random number a replay draws is a
//! standard normal of a latent vector pushed through the normal distribution function, so a
//! replay is a deterministic function of that vector, whatever the engine, the episodes, the
//! pauses or the mixtures inside it. The estimator climbs by levels: of `samples` replays it keeps
//! the top fraction `p0`, and grows each kept one into a Markov chain that stays above the level,
//! each move a preconditioned Crank–Nicolson step (Cotter et al. 2013), `z' = ρ z + √(1-ρ²) ξ`,
//! which leaves the normal law unchanged whatever the vector's length, so it needs no model of
//! the tail (it is not exponential twisting, which fails for the heavy-tailed Pareto pauses:
//! Asmussen & Kroese 2006). The chance is the product of the levels' fractions.
//!
//! The interval comes from `repetitions` independent estimates (a Student t interval on their
//! mean), not from a formula for the chains' correlation, which is known to run short: it covers
//! the truth at its rate (a test checks it on models whose tail is known). Each repetition has
//! its own seed and runs on one thread, so seeds reproduce an estimate and the thread count does
//! not change it. Every estimate says how many model runs it cost.

use std::cell::{Cell, RefCell};
use std::convert::Infallible;
use std::time::{Duration, Instant};

pub use lockbench_core::records::ttl::{Chance, ChanceMethod as Method, TailQuantile};
use lockbench_workloads::{
    Engine, JobModel, Stream, lease_margin, renewed_lease_margin, replay_with,
};
use rand::SeedableRng;
use rand::rngs::SmallRng;
use rand_distr::{Distribution, StandardNormal};
use statrs::distribution::{ContinuousCDF, StudentsT};

/// Replays per level of one repetition, by default.
pub const DEFAULT_SAMPLES: u64 = 2_000;
/// Independent repetitions behind an estimate, by default: their spread is its interval.
pub const DEFAULT_REPETITIONS: u32 = 10;
/// The fraction of a level's replays kept as seeds of the next (0.1 is Au & Beck's choice).
pub const P0: f64 = 0.1;
/// Most levels one repetition climbs: 0.1^40 is far below any chance worth pricing.
pub const MAX_LEVELS: u32 = 40;
/// The chance below which a climb stops: a per-run chance under 1e-15 is a double execution in a
/// thousand years even for a job that runs every second.
pub const FLOOR: f64 = 1e-15;

/// How an estimate is made.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RareOptions {
    /// Replays per level of one repetition.
    pub samples: u64,
    /// Independent repetitions.
    pub repetitions: u32,
    /// Seed of every stream.
    pub seed: u64,
    /// Threads the repetitions are shared over (the estimate does not depend on it).
    pub threads: usize,
}

impl Default for RareOptions {
    fn default() -> Self {
        RareOptions {
            samples: DEFAULT_SAMPLES,
            repetitions: DEFAULT_REPETITIONS,
            seed: 1,
            threads: 1,
        }
    }
}

/// One replay's latent: a vector of standard normals per stream (0 the replay's own, then the
/// streams it split off, in the order it split them), extended on demand, and a salt per stream.
///
/// A draw's 64 bits are the normal's uniform in their top 56 and a byte of the salt's hash with
/// the draw's position in their lowest 8. Samplers that pick by low bits (the ziggurat normal
/// behind the block engine's sums picks its layer by the lowest byte) would otherwise jump at
/// every move however small, and no chain above a level would ever move. The salt is drawn with
/// the replay and kept by every move: a move of the normals alone, given the salt, still leaves
/// the law above a level unchanged (a Gibbs step), and the salts vary from seed to seed.
#[derive(Clone, Debug, Default)]
struct Latent {
    streams: Vec<Vec<f32>>,
    salts: Vec<u64>,
}

impl Latent {
    /// A pCN move of every stored coordinate; coordinates not stored yet are drawn fresh when the
    /// replay reaches them, which is the same move for them.
    fn moved(&self, rho: f64, rng: &mut SmallRng) -> Latent {
        let spread = (1.0 - rho * rho).sqrt();
        Latent {
            streams: self
                .streams
                .iter()
                .map(|v| {
                    v.iter()
                        .map(|z| {
                            let xi: f64 = StandardNormal.sample(rng);
                            (rho * f64::from(*z) + spread * xi) as f32
                        })
                        .collect()
                })
                .collect(),
            salts: self.salts.clone(),
        }
    }
}

/// The low byte of the draw at `position` of a stream salted `salt` (splitmix64's finaliser).
fn low_byte(salt: u64, position: usize) -> u64 {
    let mut x = salt ^ (position as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (x ^ (x >> 31)) & 0xFF
}

/// What a replay draws from: its latent's normals, as uniform bits.
struct Draws<'a> {
    latent: &'a RefCell<Latent>,
    fresh: &'a RefCell<SmallRng>,
    streams: &'a Cell<usize>,
    stream: usize,
    position: usize,
}

/// erfc(x) to a fractional error below 1.2e-7 everywhere (Numerical Recipes' Chebyshev fit, W. H.
/// Press et al. 1992, 6.2): ten times faster than the series, and the estimator only needs the
/// map from normal to uniform to be monotone and its law right to that precision.
fn erfc_fast(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87
                                        + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    if x >= 0.0 { r } else { 2.0 - r }
}

/// The uniform a standard normal maps to, as 64 bits: Φ(z) scaled, kept off both ends.
fn bits_of(z: f64) -> u64 {
    let u = 0.5 * erfc_fast(-z / std::f64::consts::SQRT_2);
    let scaled = u * 18_446_744_073_709_551_616.0;
    (scaled as u64).clamp(1, u64::MAX - 1)
}

impl rand::TryRng for Draws<'_> {
    type Error = Infallible;

    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        self.try_next_u64().map(|x| (x >> 32) as u32)
    }

    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        let (z, salt) = {
            let mut latent = self.latent.borrow_mut();
            while latent.salts.len() <= self.stream {
                let salt = rand::Rng::next_u64(&mut *self.fresh.borrow_mut());
                latent.salts.push(salt);
            }
            if latent.streams.len() <= self.stream {
                latent.streams.resize(self.stream + 1, Vec::new());
            }
            let salt = latent.salts[self.stream];
            let stream = &mut latent.streams[self.stream];
            if stream.len() <= self.position {
                let z: f64 = StandardNormal.sample(&mut *self.fresh.borrow_mut());
                stream.push(z as f32);
            }
            (f64::from(stream[self.position]), salt)
        };
        let bits = (bits_of(z) & !0xFF) | low_byte(salt, self.position);
        self.position += 1;
        Ok(bits)
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
        for chunk in dst.chunks_mut(8) {
            let bytes = self.try_next_u64()?.to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
        Ok(())
    }
}

impl Stream for Draws<'_> {
    fn split(&mut self) -> Self {
        let stream = self.streams.get();
        self.streams.set(stream + 1);
        Draws {
            latent: self.latent,
            fresh: self.fresh,
            streams: self.streams,
            stream,
            position: 0,
        }
    }
}

/// What is scored: a replay's runtime, or how close a stall came to losing a lease.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Score {
    /// Runtime, seconds.
    Runtime,
    /// [`lease_margin`] of a lease of this many seconds: positive when it was lost.
    LeaseMargin(f64),
    /// [`renewed_lease_margin`] of a lease of `lease` seconds renewed every `every`: a runner's.
    RenewedLeaseMargin { lease: f64, every: f64 },
}

/// Something a replay's latent can be scored by: a job model, or (for tests) any function of a
/// stream.
pub trait Scored: Sync {
    /// The score of one replay drawing from `rng`.
    fn score<R: Stream>(&self, rng: &mut R) -> f64;
}

/// A job model replayed by an engine, scored.
pub struct ModelScore<'a> {
    /// The model.
    pub model: &'a JobModel,
    /// The engine that replays it.
    pub engine: Engine,
    /// What is scored.
    pub score: Score,
}

impl Scored for ModelScore<'_> {
    fn score<R: Stream>(&self, rng: &mut R) -> f64 {
        let mut pauses = Vec::new();
        let runtime = replay_with(self.model, self.engine, rng, &mut pauses);
        match self.score {
            Score::Runtime => runtime,
            Score::LeaseMargin(lease) => lease_margin(&pauses, runtime, lease),
            Score::RenewedLeaseMargin { lease, every } => {
                renewed_lease_margin(&pauses, runtime, lease, every)
            }
        }
    }
}

/// Scores `latent` (extending it where the replay draws past it).
fn evaluate<S: Scored>(s: &S, latent: Latent, fresh: &mut SmallRng) -> (Latent, f64) {
    let cell = RefCell::new(latent);
    let fresh_cell = RefCell::new(fresh.clone());
    let streams = Cell::new(1);
    let score = {
        let mut draws = Draws {
            latent: &cell,
            fresh: &fresh_cell,
            streams: &streams,
            stream: 0,
            position: 0,
        };
        s.score(&mut draws)
    };
    *fresh = fresh_cell.into_inner();
    (cell.into_inner(), score)
}

/// One level of a climb: its replays, all above its threshold, and the chance of being there.
#[derive(Clone, Debug)]
struct Level {
    /// The threshold its replays lie above (minus infinity for the first, plain replays).
    threshold: f64,
    /// The chance per run of being above it (the product of the fractions so far).
    reached: f64,
    /// Its replays' scores, descending (each standing for `reached / len`).
    sorted: Vec<f64>,
}

/// One repetition's climb: the levels it passed and the replays of its last one.
struct Climb {
    /// The thresholds it climbed by, in order.
    thresholds: Vec<f64>,
    /// The chance of being above the last level passed (the product of the levels' fractions).
    reached: f64,
    /// The scores of the last level's replays (each standing for `reached / len`).
    last: Vec<f64>,
    /// Every level, the first (plain replays) first.
    levels: Vec<Level>,
    /// Model runs.
    runs: u64,
}

/// Climbs until `stop(reached, sorted scores)` says so, or no replay rises above a level (the
/// model cannot go further), or [`MAX_LEVELS`].
fn climb<S: Scored>(
    s: &S,
    samples: u64,
    seed: u64,
    fixed: &[f64],
    stop: impl Fn(f64, &[f64]) -> bool,
) -> Climb {
    let n = samples.max(10) as usize;
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut fresh = SmallRng::seed_from_u64(seed ^ 0x9E37_79B9_7F4A_7C15);
    let mut level: Vec<(Latent, f64)> = (0..n)
        .map(|_| evaluate(s, Latent::default(), &mut fresh))
        .collect();
    let mut runs = n as u64;
    let mut reached = 1.0;
    let mut rho: f64 = 0.8;
    let mut thresholds: Vec<f64> = Vec::new();
    let mut levels: Vec<Level> = Vec::new();
    for k in 0..MAX_LEVELS as usize {
        let mut scores: Vec<f64> = level.iter().map(|(_, x)| *x).collect();
        scores.sort_by(|a, b| b.total_cmp(a));
        levels.push(Level {
            threshold: thresholds.last().copied().unwrap_or(f64::NEG_INFINITY),
            reached,
            sorted: scores.clone(),
        });
        // Given levels (from a pilot climb) end where they end; otherwise the climb stops when
        // asked to, or below the floor.
        let threshold = if fixed.is_empty() {
            if stop(reached, &scores) || reached < FLOOR {
                break;
            }
            let keep = ((n as f64 * P0).ceil() as usize).clamp(1, n);
            scores[keep - 1]
        } else {
            match fixed.get(k) {
                Some(t) => *t,
                None => break,
            }
        };
        thresholds.push(threshold);
        let seeds: Vec<(Latent, f64)> = level.into_iter().filter(|(_, x)| *x > threshold).collect();
        if seeds.is_empty() {
            // No replay rises above the level: the model goes no further (or, at a given
            // level, this repetition saw none there).
            return Climb {
                thresholds,
                reached: if fixed.is_empty() { reached } else { 0.0 },
                last: scores,
                levels,
                runs,
            };
        }
        reached *= seeds.len() as f64 / n as f64;
        // Each seed grows a chain; together they make `n` replays above the threshold.
        let mut next: Vec<(Latent, f64)> = Vec::with_capacity(n);
        let (mut accepted, mut proposed) = (0u64, 0u64);
        let per = n.div_ceil(seeds.len());
        'seeds: for (latent, score) in seeds {
            let (mut current, mut current_score) = (latent, score);
            for step in 0..per {
                if next.len() == n {
                    break 'seeds;
                }
                if step > 0 {
                    let proposal = current.moved(rho, &mut rng);
                    let (latent, x) = evaluate(s, proposal, &mut fresh);
                    runs += 1;
                    proposed += 1;
                    if x > threshold {
                        accepted += 1;
                        current = latent;
                        current_score = x;
                    }
                }
                next.push((current.clone(), current_score));
            }
            // Aim at about a third of the moves accepted, chain by chain: smaller steps when
            // fewer are. A replay of thousands of calls needs steps far smaller than one of ten
            // (its runtime moves with every coordinate), and a level's chains that all stay
            // where they began would end the climb as if the model went no further.
            if proposed >= 10 {
                let rate = accepted as f64 / proposed as f64;
                rho = if rate < 0.2 {
                    (1.0 - (1.0 - rho) * 0.6).min(0.999_99)
                } else if rate > 0.5 {
                    (1.0 - (1.0 - rho) * 1.5).max(0.3)
                } else {
                    rho
                };
                (accepted, proposed) = (0, 0);
            }
        }
        level = next;
    }
    let mut last: Vec<f64> = level.iter().map(|(_, x)| *x).collect();
    last.sort_by(|a, b| b.total_cmp(a));
    // The loop ran out of levels after moving to a new one, not yet recorded.
    if levels.len() == thresholds.len() {
        levels.push(Level {
            threshold: thresholds.last().copied().unwrap_or(f64::NEG_INFINITY),
            reached,
            sorted: last.clone(),
        });
    }
    Climb {
        thresholds,
        reached,
        last,
        levels,
        runs,
    }
}

/// The fraction of `sorted` (descending) above `t`.
fn above(sorted: &[f64], t: f64) -> f64 {
    sorted.iter().take_while(|x| **x > t).count() as f64 / sorted.len().max(1) as f64
}

/// Runs `repetitions` independent climbs, each on its own seed, over `threads` threads; their
/// results in repetition order.
fn repeated<S: Scored, T: Send>(
    s: &S,
    options: &RareOptions,
    one: impl Fn(&S, u64) -> T + Sync,
) -> Vec<T> {
    let reps = options.repetitions.max(2) as u64;
    let threads = options.threads.clamp(1, reps as usize);
    let mut out: Vec<Option<T>> = (0..reps).map(|_| None).collect();
    std::thread::scope(|scope| {
        let chunks: Vec<_> = (0..threads)
            .map(|t| {
                let one = &one;
                scope.spawn(move || {
                    (t as u64..reps)
                        .step_by(threads)
                        .map(|r| (r, one(s, repetition_seed(options.seed, r))))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for chunk in chunks {
            for (r, value) in chunk.join().expect("a rare-event repetition panicked") {
                out[r as usize] = Some(value);
            }
        }
    });
    out.into_iter()
        .map(|v| v.expect("every repetition ran"))
        .collect()
}

/// The seed of repetition `r`: splitmix64 of the two, so that repetitions are independent.
fn repetition_seed(seed: u64, r: u64) -> u64 {
    let mut x = seed ^ r.wrapping_mul(0xD1B5_4A32_D192_ED03);
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// Mean and 95 % Student t half-width of `values`.
fn mean_and_half_width(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    (mean, t975(n - 1.0) * (var / n).sqrt())
}

/// The 97.5 % quantile of Student's t with `df` degrees of freedom.
fn t975(df: f64) -> f64 {
    StudentsT::new(0.0, 1.0, df.max(1.0))
        .map(|d| d.inverse_cdf(0.975))
        .unwrap_or(12.7)
}

/// The mean of positive, right-skewed estimates (each a product of level fractions, near
/// lognormal) and its 95 % interval by Cox's method for a lognormal mean (Land 1972; Zhou & Gao
/// 1997): on the logarithms, mean + var/2 ± t·√(var/n + var²/(2(n-1))). It covers where the
/// plain t interval on the estimates runs short on their skew. `None` when an estimate is zero.
fn cox_interval(values: &[f64]) -> Option<(f64, f64, f64)> {
    if values.iter().any(|v| *v <= 0.0) {
        return None;
    }
    let n = values.len() as f64;
    let logs: Vec<f64> = values.iter().map(|v| v.ln()).collect();
    let mean = logs.iter().sum::<f64>() / n;
    let var = logs.iter().map(|y| (y - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    let centre = mean + var / 2.0;
    let half = t975(n - 1.0) * (var / n + var * var / (2.0 * (n - 1.0).max(1.0))).sqrt();
    let plain = values.iter().sum::<f64>() / n;
    Some((plain, (centre - half).exp(), (centre + half).exp()))
}

/// The chance per run that `s` scores above `threshold`.
pub fn exceedance<S: Scored>(s: &S, threshold: f64, options: &RareOptions) -> Chance {
    let started = Instant::now();
    // Stop once enough of the level lies above the threshold to count it directly.
    let enough = |_: f64, sorted: &[f64]| above(sorted, threshold) >= P0;
    // A pilot climb picks the levels; every repetition then climbs by the same fixed levels, for
    // which the estimate is unbiased (adaptive levels, picked from the same replays they are
    // counted on, bias it low by a few percent at 1e-9: an interval off centre).
    let pilot = climb(s, (options.samples / 2).max(10), options.seed, &[], enough);
    let each = repeated(s, options, |s, seed| {
        let climb = climb(s, options.samples, seed, &pilot.thresholds, enough);
        (
            climb.reached * above(&climb.last, threshold),
            climb.reached,
            climb.runs,
        )
    });
    let ps: Vec<f64> = each.iter().map(|(p, _, _)| *p).collect();
    let runs = pilot.runs + each.iter().map(|(_, _, r)| *r).sum::<u64>();
    let deepest = each
        .iter()
        .map(|(_, r, _)| *r)
        .fold(pilot.reached, f64::max);
    let (p, lower, upper) = summarize(&ps, deepest, options);
    Chance {
        p,
        lower,
        upper,
        method: Method::SubsetSimulation,
        runs,
        seconds: started.elapsed().as_secs_f64(),
    }
}

/// The estimate and 95 % interval from the repetitions' estimates `ps`. With some repetition
/// seeing none above, the plain interval kept at or above zero; with none at all, the bound is
/// what the deepest level reached could still hide: fewer than 3 of its replays above (the rule
/// of three) at the chance `deepest` of that level.
fn summarize(ps: &[f64], deepest: f64, options: &RareOptions) -> (f64, f64, f64) {
    cox_interval(ps).unwrap_or_else(|| {
        let (p, half) = mean_and_half_width(ps);
        if p == 0.0 {
            let n = (options.samples.max(10) * u64::from(options.repetitions.max(2))) as f64;
            (0.0, 0.0, deepest * 3.0 / n)
        } else {
            (p, (p - half).max(0.0), p + half)
        }
    })
}

/// A score's tail, climbed once by each repetition deep enough for every question asked of it:
/// the chance of exceeding several thresholds and the score exceeded at a given chance, from
/// the same model runs. Its levels are adaptive (each the top [`P0`] of the one before), which
/// biases a chance low by a few percent at 1e-9 (Cérou et al. 2012), well inside its interval;
/// [`exceedance`] climbs fixed levels where one threshold must be priced without that bias.
pub struct Tail {
    climbs: Vec<Vec<Level>>,
    options: RareOptions,
    /// Model runs it cost.
    pub runs: u64,
    /// Seconds it took.
    pub seconds: f64,
}

/// Climbs the tail of `s` down to the chance `p_min` per run, and on past the score `past`
/// (counted directly, at least [`P0`] of a level above it) or three decades further, whichever
/// comes first (a chance below that is said as a bound), or to [`FLOOR`].
pub fn tail<S: Scored>(s: &S, past: f64, p_min: f64, options: &RareOptions) -> Tail {
    let started = Instant::now();
    let deep_enough = |reached: f64, sorted: &[f64]| {
        reached * P0 <= p_min && (above(sorted, past) >= P0 || reached <= p_min * 1e-3)
    };
    let climbs = repeated(s, options, |s, seed| {
        let c = climb(s, options.samples, seed, &[], deep_enough);
        (c.levels, c.runs)
    });
    Tail {
        runs: climbs.iter().map(|(_, r)| *r).sum(),
        climbs: climbs.into_iter().map(|(levels, _)| levels).collect(),
        options: *options,
        seconds: started.elapsed().as_secs_f64(),
    }
}

impl Tail {
    /// The chance per run of scoring above `t`: in each repetition, the deepest level below `t`
    /// times the fraction of its replays above it.
    pub fn exceedance(&self, t: f64) -> Chance {
        let ps: Vec<f64> = self
            .climbs
            .iter()
            .map(|levels| {
                levels
                    .iter()
                    .rev()
                    .find(|l| l.threshold < t)
                    .map_or(0.0, |l| l.reached * above(&l.sorted, t))
            })
            .collect();
        let deepest = self
            .climbs
            .iter()
            .filter_map(|levels| levels.last().map(|l| l.reached))
            .fold(0.0, f64::max);
        let (p, lower, upper) = summarize(&ps, deepest, &self.options);
        Chance {
            p,
            lower,
            upper,
            method: Method::SubsetSimulation,
            runs: self.runs,
            seconds: self.seconds,
        }
    }

    /// The score exceeded with chance `p` per run: in each repetition, from the deepest level
    /// still at least that likely.
    pub fn quantile(&self, p: f64) -> TailQuantile {
        let xs: Vec<f64> = self
            .climbs
            .iter()
            .filter_map(|levels| {
                let l = levels.iter().rev().find(|l| l.reached >= p)?;
                let rank = ((p / l.reached) * l.sorted.len() as f64).round() as usize;
                Some(l.sorted[rank.clamp(1, l.sorted.len()) - 1])
            })
            .collect();
        let (mean, half) = mean_and_half_width(&xs);
        TailQuantile {
            p,
            seconds: mean,
            lower_s: mean - half,
            upper_s: mean + half,
            method: Method::SubsetSimulation,
            runs: self.runs,
        }
    }
}

/// The score exceeded with chance `p` per run (a runtime for [`Score::Runtime`]).
pub fn quantile<S: Scored>(s: &S, p: f64, options: &RareOptions) -> TailQuantile {
    tail(s, f64::NEG_INFINITY, p, options).quantile(p)
}

/// [`exceedance`] of a runtime over `ttl` for `model`.
pub fn outlived(model: &JobModel, engine: Engine, ttl: Duration, options: &RareOptions) -> Chance {
    let s = ModelScore {
        model,
        engine,
        score: Score::Runtime,
    };
    exceedance(&s, ttl.as_secs_f64(), options)
}

/// The chance per run that a stall loses a heartbeat lease of `lease` for `model`.
pub fn lease_lost(
    model: &JobModel,
    engine: Engine,
    lease: Duration,
    options: &RareOptions,
) -> Chance {
    let s = ModelScore {
        model,
        engine,
        score: Score::LeaseMargin(lease.as_secs_f64()),
    };
    exceedance(&s, 0.0, options)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sum of `k` exponential calls of mean 1: a Gamma(k, 1) runtime.
    struct SumOfExponentials(u32);

    impl Scored for SumOfExponentials {
        fn score<R: Stream>(&self, rng: &mut R) -> f64 {
            (0..self.0)
                .map(|_| {
                    let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
                    -(1.0 - u).ln()
                })
                .sum()
        }
    }

    #[test]
    fn the_bits_of_a_normal_are_its_uniform() {
        for x in [-6.0, -2.0, -0.5, 0.0, 0.3, 1.0, 3.0, 8.0] {
            let exact = statrs::function::erf::erfc(x);
            assert!((erfc_fast(x) / exact - 1.0).abs() < 2e-7, "{x}");
        }
        let half = (bits_of(0.0) as f64 / 2f64.powi(63) - 1.0).abs();
        assert!(half < 2e-7, "{half}");
        assert!(bits_of(8.0) > u64::MAX - (1 << 20));
        assert!(bits_of(-8.0) < (1 << 20));
        assert!(bits_of(1.0) < bits_of(1.001));
    }

    #[test]
    fn an_exponential_tail_is_found_at_one_in_a_billion() {
        // P(Exp(1) > t) = e^-t.
        let t = 1e-9f64.ln().abs();
        let options = RareOptions {
            samples: 2_000,
            repetitions: 10,
            seed: 5,
            threads: 2,
        };
        let c = exceedance(&SumOfExponentials(1), t, &options);
        assert!((c.p / 1e-9 - 1.0).abs() < 0.2, "{c:?} against 1e-9");
        assert!(c.lower <= 1e-9 && 1e-9 <= c.upper, "{c:?}");
        // Reproducible, and independent of the threads.
        let again = exceedance(
            &SumOfExponentials(1),
            t,
            &RareOptions {
                threads: 1,
                ..options
            },
        );
        assert_eq!(c.p, again.p);
        assert_eq!(c.runs, again.runs);
    }
}
