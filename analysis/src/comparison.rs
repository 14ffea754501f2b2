//! What `compare` reports: every metric of two sets of results before and after ([`frames`]),
//! and each job's decision on both.

use std::path::{Path, PathBuf};

use lockbench_decision::brief;
use serde::Serialize;

use crate::frames::{self, Change};
use crate::report::{self, ReportError};

/// Two sets of results compared (`compare --json`).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Comparison {
    /// The first set of results.
    pub before: String,
    /// The second.
    pub after: String,
    /// Every metric of every row, before and after.
    pub changes: Vec<Change>,
    /// Each job both sets decide for: its decision before and after.
    pub decisions: Vec<DecisionChange>,
}

/// One job's decision on each set of results.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct DecisionChange {
    pub job: String,
    /// Backend, lock model and failure policy on the first set.
    pub before: String,
    /// The same on the second.
    pub after: String,
    /// True when they differ.
    pub changed: bool,
}

/// Compares the results under `before` with those under `after`.
pub fn compare_dirs(before: &Path, after: &Path) -> Result<Comparison, ReportError> {
    let frames_of = |dir: &Path| frames::load_frames(&[dir.to_path_buf()]);
    let changes = frames::compare(&frames_of(before)?, &frames_of(after)?);
    Ok(Comparison {
        before: before.display().to_string(),
        after: after.display().to_string(),
        changes,
        decisions: decisions(before, after)?,
    })
}

/// The decision of every job both sets hold answers for, in the first set's order.
fn decisions(before: &Path, after: &Path) -> Result<Vec<DecisionChange>, ReportError> {
    let decided = |dir: &Path| report::load(&[PathBuf::from(dir)])?.decisions();
    let (b, a) = (decided(before)?, decided(after)?);
    Ok(b.iter()
        .filter_map(|d| {
            let other = a.iter().find(|o| o.job == d.job)?;
            let (before, after) = (brief(d), brief(other));
            Some(DecisionChange {
                job: d.job.clone(),
                changed: before != after,
                before,
                after,
            })
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_compared_with_itself_changes_nothing_and_keeps_every_decision() {
        let run = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/run"));
        let c = compare_dirs(run, run).unwrap();
        assert!(!c.changes.is_empty());
        assert!(
            c.changes
                .iter()
                .all(|x| x.before == x.after && x.change_pct.unwrap_or(0.0) == 0.0)
        );
        assert!(!c.decisions.is_empty());
        assert!(
            c.decisions
                .iter()
                .all(|d| !d.changed && d.before == d.after)
        );
    }
}
