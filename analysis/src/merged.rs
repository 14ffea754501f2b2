//! What `merge` derives from the shards of a simulate or ttl run: the simulated runs with their
//! histograms added, and the ttl shards' heartbeat lease losses added.

use lockbench_core::records::Body;
use lockbench_core::shards::{MergeError, ShardSet, refuse};

use crate::LeaseCurve;
use crate::lease::add_curves;
use crate::ttl_plan::Simulated;

/// Every simulated run of the shards, histograms added, in the order a whole run writes them.
pub fn merged_simulations(set: &ShardSet) -> Result<Vec<Simulated>, MergeError> {
    Ok(set
        .merged_simulations()?
        .into_iter()
        .map(|(row, histogram)| Simulated { row, histogram })
        .collect())
}

/// The ttl shards' heartbeat lease losses, added: every shard priced the same candidate leases
/// of the same profiles.
pub fn merged_curves(set: &ShardSet) -> Result<Vec<LeaseCurve>, MergeError> {
    let curves = |s: &lockbench_core::shards::ShardDir| match &s.read.body {
        Body::Ttl { record, .. } => record
            .heartbeat
            .pricing
            .as_ref()
            .map(|p| p.curves.clone())
            .ok_or_else(|| refuse(&s.dir, "its heartbeat lease was not priced")),
        _ => Err(refuse(&s.dir, "is not a ttl directory")),
    };
    let mut total = curves(set.first())?;
    for s in &set.shards[1..] {
        if !add_curves(&mut total, &curves(s)?) {
            return Err(refuse(
                &s.dir,
                format!(
                    "its heartbeat lease curves (profiles or candidate leases) are not those of {}",
                    set.first().dir.display()
                ),
            ));
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use lockbench_core::ShardRecord;
    use lockbench_core::records::read_dir;
    use lockbench_core::shards::ShardDir;

    use super::*;

    /// The committed run's ttl-billing directory as shard `index` of 2 of run "r".
    fn shard(index: u64) -> ShardDir {
        let dir = PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/run/ttl-billing"
        ));
        ShardDir {
            read: read_dir(&dir).unwrap(),
            dir: dir.join(format!("shard-{index}")),
            shard: ShardRecord::new(index, 2, "r"),
        }
    }

    #[test]
    fn two_shards_of_a_ttl_run_add_their_runs_and_their_lease_losses() {
        let set = ShardSet::new(vec![shard(0), shard(1)]).unwrap();
        let one = &set.first().read;
        let runs = merged_simulations(&set).unwrap();
        assert_eq!(runs.len(), one.histograms.len());
        for (run, (_, h)) in runs.iter().zip(&one.histograms) {
            assert_eq!(run.histogram.count(), 2 * h.count());
        }
        let Body::Ttl { record, .. } = &one.body else {
            panic!("a ttl directory")
        };
        let theirs = &record.heartbeat.pricing.as_ref().unwrap().curves;
        let curves = merged_curves(&set).unwrap();
        assert_eq!(curves.len(), theirs.len());
        for (sum, one) in curves.iter().zip(theirs) {
            assert_eq!(sum.replays, 2 * one.replays);
            let doubled: Vec<u64> = one.lost.iter().map(|n| 2 * n).collect();
            assert_eq!(sum.lost, doubled);
        }
    }
}
