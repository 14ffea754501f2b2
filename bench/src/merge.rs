//! Bench shards added up into the whole run's record: each row's histograms and counters summed
//! over the shards, and how far apart the shards really started.

use std::time::Duration;

use lockbench_core::records::Body;
use lockbench_core::records::bench::BenchRecord;
use lockbench_core::shards::{MergeError, ShardSet, refuse};

use crate::result::{BenchResult, Metrics};

/// Start skew a merge warns about: more than this share of a level's measured part.
pub const SKEW_TOLERANCE: f64 = 0.01;

/// The shards of a bench run added up row by row (`record` is the first shard's): each row's
/// histograms and counters summed, the contenders' grants side by side, over the longest
/// measured part; the failures of every shard, once each.
pub fn merge_bench(
    set: &ShardSet,
    record: &BenchRecord,
) -> Result<(BenchRecord, Vec<BenchResult>), MergeError> {
    let mut results = Vec::new();
    for like in &record.results {
        let tag = like.tag();
        let mut metrics = Metrics::default();
        let mut measured = 0.0f64;
        for s in &set.shards {
            let Body::Bench { record: theirs, .. } = &s.read.body else {
                return Err(refuse(&s.dir, "not a bench directory"));
            };
            let row = theirs
                .results
                .iter()
                .find(|r| r.tag() == tag)
                .ok_or_else(|| refuse(&s.dir, format!("has no row {tag}")))?;
            let histogram = |metric: &str| {
                let want = format!("{tag}/{metric}");
                s.read
                    .histograms
                    .iter()
                    .find(|(t, _)| *t == want)
                    .map(|(_, h)| h.clone())
                    .ok_or_else(|| refuse(&s.dir, format!("latency.hlog has no `{want}`")))
            };
            let part = Metrics {
                acquire: histogram("acquire")?,
                renew: histogram("renew")?,
                release: histogram("release")?,
                handoff: histogram("handoff")?,
                attempts: row.attempts,
                failed_attempts: row.failed_attempts,
                gave_up: row.gave_up,
                errors: row.errors,
                first_error: row.first_error.clone(),
                requests: row.requests,
                contender_grants: Vec::new(),
            };
            metrics.merge(&part);
            metrics.contender_grants.extend(&row.contender_grants);
            measured = measured.max(row.measured_s);
        }
        results.push(BenchResult::merged(
            like,
            metrics,
            Duration::from_secs_f64(measured),
        ));
    }
    let mut failed = Vec::new();
    for s in &set.shards {
        if let Body::Bench { record, .. } = &s.read.body {
            for f in &record.failed {
                if !failed.contains(f) {
                    failed.push(f.clone());
                }
            }
        }
    }
    let merged = BenchRecord {
        results: results.iter().map(|r| r.row.clone()).collect(),
        failed,
        backends: record.backends.clone(),
    };
    Ok((merged, results))
}

/// How far apart bench shards really started, by the lock server's clock, when that is more than
/// [`SKEW_TOLERANCE`] of the shortest measured part (or cannot be known).
pub fn start_skew(set: &ShardSet, record: &BenchRecord) -> Option<String> {
    let offsets: Vec<Option<(f64, f64)>> = set
        .shards
        .iter()
        .map(|s| s.shard.clock_offset_ms.zip(s.shard.clock_rtt_ms))
        .collect();
    let measured_ms = record
        .results
        .iter()
        .map(|r| r.measured_s * 1e3)
        .fold(f64::INFINITY, f64::min);
    skew_warning(&offsets, measured_ms)
}

/// [`start_skew`] from each shard's (clock offset, round trip) in milliseconds, if it read the
/// server's clock, and the shortest measured part.
fn skew_warning(offsets: &[Option<(f64, f64)>], measured_ms: f64) -> Option<String> {
    let known: Vec<(f64, f64)> = offsets.iter().flatten().copied().collect();
    if known.len() < offsets.len() {
        return Some(format!(
            "{} of {} shards could not read the lock server's clock, so how far apart they started is not known",
            offsets.len() - known.len(),
            offsets.len()
        ));
    }
    let lo = known.iter().map(|o| o.0).fold(f64::INFINITY, f64::min);
    let hi = known.iter().map(|o| o.0).fold(f64::NEG_INFINITY, f64::max);
    let within = known.iter().map(|o| o.1 / 2.0).fold(0.0, f64::max);
    let skew = hi - lo;
    (skew > SKEW_TOLERANCE * measured_ms).then(|| {
        format!(
            "the shards started up to {skew:.1} ms apart by the lock server's clock (their clocks differ from it by {lo:.1} to {hi:.1} ms, each to within {within:.1} ms), more than {:.0} % of the {:.1} s measured per level: they contended for less of it than the figures assume; synchronise the hosts' clocks (chrony, NTP) or measure for longer",
            SKEW_TOLERANCE * 100.0,
            measured_ms / 1e3
        )
    })
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use lockbench_core::ShardRecord;
    use lockbench_core::records::read_dir;
    use lockbench_core::shards::ShardDir;

    use super::*;

    /// The committed run's bench directory as shard `index` of 2 of run "r".
    fn shard(index: u64) -> ShardDir {
        let dir = PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../analysis/tests/fixtures/run/bench"
        ));
        ShardDir {
            read: read_dir(&dir).unwrap(),
            dir: dir.join(format!("shard-{index}")),
            shard: ShardRecord::new(index, 2, "r"),
        }
    }

    #[test]
    fn two_bench_shards_add_their_rows_and_keep_each_failure_once() {
        let set = ShardSet::new(vec![shard(0), shard(1)]).unwrap();
        let Body::Bench { record, .. } = &set.first().read.body else {
            panic!("a bench directory")
        };
        let (merged, results) = merge_bench(&set, record).unwrap();
        assert_eq!(merged.results.len(), record.results.len());
        assert_eq!(merged.failed, record.failed, "each failure once");
        for ((row, result), one) in merged.results.iter().zip(&results).zip(&record.results) {
            assert_eq!(row.tag(), one.tag());
            assert_eq!(result.metrics.acquire.count(), 2 * one.acquire_us.count);
            assert_eq!(row.errors, 2 * one.errors);
            assert_eq!(row.contender_grants.len(), 2 * one.contender_grants.len());
            assert!((row.measured_s - one.measured_s).abs() < 1e-6);
        }
    }

    #[test]
    fn a_skew_above_one_percent_of_the_measured_part_is_named_with_its_bounds() {
        // 10 s measured: up to 100 ms apart is within tolerance.
        assert_eq!(
            skew_warning(&[Some((3.0, 0.4)), Some((-90.0, 0.2))], 10_000.0),
            None
        );
        let w = skew_warning(&[Some((30.0, 0.4)), Some((-90.0, 0.2))], 10_000.0).unwrap();
        assert!(
            w.starts_with("the shards started up to 120.0 ms apart by the lock server's clock (their clocks differ from it by -90.0 to 30.0 ms, each to within 0.2 ms), more than 1 % of the 10.0 s"),
            "{w}"
        );
        let w = skew_warning(&[Some((0.0, 0.1)), None, None], 10_000.0).unwrap();
        assert!(w.starts_with("2 of 3 shards could not read"), "{w}");
    }
}
