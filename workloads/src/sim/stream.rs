//! The simulator's source of randomness, a leaf the engines' parts import.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// A replay's source of randomness: a stream of random bits that can split off an independent
/// stream of its own (the pause timeline draws from one, so that its pauses do not depend on how
/// many latency draws came before). [`SmallRng`] is the simulator's; a rare-event estimator drives
/// the same engines with a stream it can steer ([`super::replay_with`]).
pub trait Stream: Rng + Sized {
    /// An independent stream, derived from this one.
    fn split(&mut self) -> Self;
}

impl Stream for SmallRng {
    fn split(&mut self) -> Self {
        SmallRng::seed_from_u64(self.next_u64())
    }
}
