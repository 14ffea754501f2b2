//! What `merge` derives from the shards of a simulate or ttl run: the simulated runs with their
//! histograms added, and the ttl shards' heartbeat lease losses added.

use lockbench_core::records::Body;
use lockbench_core::shards::{MergeError, ShardSet, refuse};

use crate::LeaseCurve;
use crate::lease::add_curves;
use crate::ttl_plan::Simulated;

/// Every simulated run of the shards, histograms added, in the order a whole run writes them.
pub fn merged_runs(set: &ShardSet) -> Result<Vec<Simulated>, MergeError> {
    Ok(set
        .merged_runs()?
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
