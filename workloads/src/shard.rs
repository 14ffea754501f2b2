//! Shards of a simulation: which replays one process of several runs.

/// Which of a simulation's replays this process runs: shard `index` of `count` runs the replays
/// whose index is `index` modulo `count`. Each replay is seeded by its own index, so shards
/// `0..count` run exactly the replays of the whole simulation between them, and their histograms
/// added are the whole one's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// This shard, from 0.
    pub index: u64,
    /// How many shards there are, at least 1.
    pub count: u64,
}

impl Shard {
    /// The whole simulation in one process.
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// How many of `replays` replays fall to this shard.
    pub fn replays_of(&self, replays: u64) -> u64 {
        let count = self.count.max(1);
        replays / count + u64::from(self.index < replays % count)
    }

    /// The simulation-wide index of this shard's `k`-th replay.
    pub(crate) fn global(&self, k: u64) -> u64 {
        self.index + k * self.count.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::Shard;

    #[test]
    fn shards_split_the_replays_exactly() {
        for replays in [0u64, 1, 6, 7, 100, 1001] {
            for count in [1u64, 2, 3, 7] {
                let mut seen: Vec<u64> = (0..count)
                    .flat_map(|index| {
                        let shard = Shard { index, count };
                        (0..shard.replays_of(replays)).map(move |k| shard.global(k))
                    })
                    .collect();
                seen.sort_unstable();
                assert_eq!(
                    seen,
                    (0..replays).collect::<Vec<_>>(),
                    "{replays} in {count}"
                );
            }
        }
    }
}
