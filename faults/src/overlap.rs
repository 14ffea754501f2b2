//! A trial's figures, from the protected resource's log alone: who believed they held the lock
//! when, which writes were stale, what the fence did. Nothing here is assumed from the scenario.

use lockbench_core::records::faults::JobEnd;

use crate::resource::{Event, LoggedEvent};

/// What one trial measured.
#[derive(Clone, Debug, PartialEq)]
pub struct TrialFigures {
    /// The holder's grant by the machine's monotonic clock (ns): the trial's time zero.
    pub zero_ns: i64,
    /// Seconds from the holder's grant to its last logged event.
    pub holder_end_s: f64,
    /// How the holder's job ended (its end event's detail; killed without one).
    pub holder_outcome: JobEnd,
    /// The contender's grant, from the holder's; `None` when it had none.
    pub contender_grant_s: Option<f64>,
    /// The contender's last logged event, from the holder's grant.
    pub contender_end_s: Option<f64>,
    /// Seconds during which both believed they held the lock.
    pub overlap_s: f64,
    /// Writes made after the lock had passed to another worker.
    pub stale_writes: u64,
    /// Of those, refused by the fence; `None` when no write carried a token.
    pub stale_rejected: Option<u64>,
    /// Writes by the worker who held the lock last that the fence refused; `None` as above.
    pub legitimate_rejected: Option<u64>,
    /// When the client library first told the holder its lock was lost, from the holder's
    /// grant, and how; `None` when it never did (or no library was in use).
    pub told: Option<(f64, String)>,
}

/// One worker's critical section as the log shows it.
struct Section {
    grant: i64,
    end: i64,
}

fn section(log: &[LoggedEvent], worker: &str) -> Option<Section> {
    let mine: Vec<&LoggedEvent> = log.iter().filter(|e| e.worker == worker).collect();
    let grant = mine.iter().find(|e| e.event == Event::Grant)?.t_ns;
    // A worker killed before it logged its end believed until its last write. What its library
    // told it is not part of its section.
    let end = mine
        .iter()
        .filter(|e| e.event != Event::Told)
        .map(|e| e.t_ns)
        .max()
        .unwrap_or(grant);
    Some(Section { grant, end })
}

/// Time during which at least two workers believed they held the lock, over every worker in the
/// log (a pool's two jobs and a contender as well as a holder and a contender).
fn overlap(log: &[LoggedEvent]) -> i64 {
    let mut workers: Vec<&str> = Vec::new();
    for e in log {
        if !workers.contains(&e.worker.as_str()) {
            workers.push(&e.worker);
        }
    }
    // +1 at each grant, -1 at each end; the sweep adds up the time spent at 2 or more.
    let mut edges: Vec<(i64, i32)> = workers
        .iter()
        .filter_map(|w| section(log, w))
        .flat_map(|s| [(s.grant, 1), (s.end, -1)])
        .collect();
    edges.sort();
    let (mut holding, mut since, mut total) = (0, 0, 0);
    for (t, step) in edges {
        if holding >= 2 {
            total += t - since;
        }
        holding += step;
        since = t;
    }
    total
}

fn seconds(ns: i64) -> f64 {
    ns as f64 / 1e9
}

/// The figures of one trial whose holder is `holder` and contender `contender`; `None` when the
/// holder never logged a grant (the trial did not start).
pub fn figures(log: &[LoggedEvent], holder: &str, contender: &str) -> Option<TrialFigures> {
    let h = section(log, holder)?;
    let c = section(log, contender);
    let zero = h.grant;
    let overlap_ns = overlap(log);
    // A write is stale when another worker was granted the lock after its writer was, and before
    // it, in the order the resource applied them (its `seq`: the fence decides in that order,
    // and a write stamped before a grant can still reach the resource after it). The fence can
    // only refuse it if the new holder has presented its token by then, which its grant event
    // does at once.
    let grants: Vec<(&str, i64)> = log
        .iter()
        .filter(|e| e.event == Event::Grant)
        .map(|e| (e.worker.as_str(), e.seq))
        .collect();
    let own_grant = |worker: &str| grants.iter().find(|(w, _)| *w == worker).map(|g| g.1);
    let is_stale = |e: &LoggedEvent| {
        let Some(mine) = own_grant(&e.worker) else {
            return false;
        };
        grants
            .iter()
            .any(|(w, seq)| *w != e.worker && *seq > mine && *seq < e.seq)
    };
    let writes: Vec<&LoggedEvent> = log
        .iter()
        .filter(|e| matches!(e.event, Event::Grant | Event::Write))
        .collect();
    let (stale, legitimate): (Vec<&LoggedEvent>, Vec<&LoggedEvent>) =
        writes.iter().partition(|e| is_stale(e));
    // The fence can only check a write that carries a token: a figure exists where the writes
    // it is about carried tokens (a job locking with raw SQL, Redlock: none do).
    let tokens = |events: &[&LoggedEvent]| events.iter().any(|e| e.token.is_some());
    let fenced = tokens(&writes);
    let refused = |events: &[&LoggedEvent]| {
        events.iter().filter(|e| e.fenced_ok == Some(false)).count() as u64
    };
    let stale_rejected = (tokens(&stale) || (stale.is_empty() && fenced)).then(|| refused(&stale));
    let legitimate_rejected = fenced.then(|| refused(&legitimate));
    let outcome = log
        .iter()
        .rev()
        .find(|e| e.worker == holder && e.event == Event::End)
        .map_or(Some(JobEnd::Killed), |e| JobEnd::parse(&e.detail))?;
    Some(TrialFigures {
        zero_ns: zero,
        holder_end_s: seconds(h.end - zero),
        holder_outcome: outcome,
        contender_grant_s: c.as_ref().map(|c| seconds(c.grant - zero)),
        contender_end_s: c.as_ref().map(|c| seconds(c.end - zero)),
        overlap_s: seconds(overlap_ns),
        stale_writes: stale.len() as u64,
        stale_rejected,
        legitimate_rejected,
        told: log
            .iter()
            .filter(|e| e.worker == holder && e.event == Event::Told)
            .min_by_key(|e| e.t_ns)
            .map(|e| (seconds(e.t_ns - zero), e.detail.clone())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(
        worker: &str,
        event: Event,
        ms: i64,
        token: Option<u64>,
        ok: Option<bool>,
    ) -> LoggedEvent {
        LoggedEvent {
            seq: ms,
            worker: worker.to_string(),
            event,
            t_ns: ms * 1_000_000,
            token,
            fenced_ok: ok,
            detail: if event == Event::End {
                "lost".to_string()
            } else {
                String::new()
            },
        }
    }

    #[test]
    fn a_paused_holder_overlaps_and_its_write_after_the_takeover_is_stale() {
        let log = vec![
            ev("holder", Event::Grant, 1000, Some(7), Some(true)),
            ev("holder", Event::Write, 1050, Some(7), Some(true)),
            // paused from 1100 to 5100; the lock expires at 3100
            ev("contender", Event::Grant, 3120, Some(8), Some(true)),
            ev("contender", Event::Write, 3170, Some(8), Some(true)),
            ev("holder", Event::Write, 5100, Some(7), Some(false)),
            ev("holder", Event::End, 5102, None, None),
            ev("contender", Event::End, 6000, None, None),
        ];
        let f = figures(&log, "holder", "contender").unwrap();
        assert!((f.overlap_s - 1.982).abs() < 1e-9, "{f:?}");
        assert_eq!(f.stale_writes, 1);
        assert_eq!(f.stale_rejected, Some(1));
        assert_eq!(f.legitimate_rejected, Some(0));
        assert_eq!(f.contender_grant_s, Some(2.12));
        assert_eq!(f.holder_outcome, JobEnd::Lost);
    }

    #[test]
    fn a_contender_granted_after_the_release_does_not_overlap() {
        let log = vec![
            ev("holder", Event::Grant, 0, Some(1), Some(true)),
            ev("holder", Event::Write, 100, Some(1), Some(true)),
            ev("holder", Event::End, 200, None, None),
            ev("contender", Event::Grant, 210, Some(2), Some(true)),
            ev("contender", Event::End, 300, None, None),
        ];
        let f = figures(&log, "holder", "contender").unwrap();
        assert_eq!(f.overlap_s, 0.0);
        assert_eq!(f.stale_writes, 0);
        assert_eq!(f.stale_rejected, Some(0));
    }

    #[test]
    fn a_counter_that_went_back_refuses_the_new_holder_and_lets_the_stale_one_through() {
        // A Redis restart without persistence: the counter starts again below the old holder's.
        let log = vec![
            ev("holder", Event::Grant, 0, Some(5), Some(true)),
            ev("contender", Event::Grant, 500, Some(1), Some(false)),
            ev("holder", Event::Write, 600, Some(5), Some(true)),
            ev("contender", Event::Write, 650, Some(1), Some(false)),
            ev("holder", Event::End, 700, None, None),
            ev("contender", Event::End, 900, None, None),
        ];
        let f = figures(&log, "holder", "contender").unwrap();
        assert_eq!(f.stale_writes, 1);
        assert_eq!(f.stale_rejected, Some(0));
        assert_eq!(f.legitimate_rejected, Some(2));
        assert!((f.overlap_s - 0.2).abs() < 1e-9);
    }

    #[test]
    fn without_tokens_the_fence_figures_are_absent_not_zero() {
        let log = vec![
            ev("holder", Event::Grant, 0, None, None),
            ev("contender", Event::Grant, 500, None, None),
            ev("holder", Event::Write, 600, None, None),
        ];
        let f = figures(&log, "holder", "contender").unwrap();
        assert_eq!(f.stale_writes, 1);
        assert_eq!(f.stale_rejected, None);
        assert_eq!(f.legitimate_rejected, None);
        assert_eq!(f.holder_outcome, JobEnd::Killed);
    }

    #[test]
    fn two_jobs_on_one_pooled_session_and_a_contender_overlap_where_any_two_do() {
        let log = vec![
            ev("holder", Event::Grant, 0, None, None),
            ev("holder-2", Event::Grant, 300, None, None),
            ev("holder", Event::End, 1000, None, None),
            ev("holder-2", Event::End, 1300, None, None),
            ev("contender", Event::Grant, 1200, None, None),
            ev("contender", Event::End, 1500, None, None),
        ];
        let f = figures(&log, "holder", "contender").unwrap();
        // 300..1000 (the pool's two jobs), then 1200..1300 (the second job and the contender).
        assert!((f.overlap_s - 0.8).abs() < 1e-9, "{f:?}");
    }

    #[test]
    fn a_write_stamped_before_a_grant_but_applied_after_it_is_stale() {
        let mut late = ev("holder", Event::Write, 499, Some(5), Some(false));
        late.seq = 501;
        let log = vec![
            ev("holder", Event::Grant, 0, Some(5), Some(true)),
            ev("contender", Event::Grant, 500, Some(6), Some(true)),
            late,
        ];
        let f = figures(&log, "holder", "contender").unwrap();
        assert_eq!(f.stale_writes, 1);
        assert_eq!(f.stale_rejected, Some(1));
        assert_eq!(f.legitimate_rejected, Some(0));
    }

    #[test]
    fn no_grant_no_trial() {
        assert!(figures(&[], "holder", "contender").is_none());
    }
}
