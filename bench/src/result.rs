//! What a run measured: one HdrHistogram per metric, and the record row that summarises them in
//! microseconds (`lockbench_core::records::bench`).

use lockbench_core::BackendId;
use std::time::Duration;

use lockbench_core::RuntimeHistogram;
use lockbench_core::records::bench::{BenchRow, KeySpread, LatencySummary, LoopKind, WaitKind};

use crate::Cycle;

/// Accumulated measurements of a run (or of one contender, merged later).
#[derive(Clone, Debug)]
pub struct Metrics {
    /// Acquire latency of successful acquisitions, waiting included.
    pub acquire: RuntimeHistogram,
    /// Renew latency.
    pub renew: RuntimeHistogram,
    /// Release latency.
    pub release: RuntimeHistogram,
    /// From a release to the grant of a contender that was waiting for it (see
    /// [`crate::handoff`]).
    pub handoff: RuntimeHistogram,
    /// Try-acquire attempts.
    pub attempts: u64,
    /// Attempts that found the lock held.
    pub failed_attempts: u64,
    /// Acquisitions that ran out of wait.
    pub gave_up: u64,
    /// Operations that failed (timeouts, server errors, in-flight limit).
    pub errors: u64,
    /// The first error message.
    pub first_error: Option<String>,
    /// Requests the clients sent to the server while measuring; `None` when the backend does
    /// not count them (it has no server).
    pub requests: Option<u64>,
    /// Measured grants of each contender, closed loop only (an open loop's clients serve
    /// arrivals in turn, so their shares say nothing about fairness).
    pub contender_grants: Vec<u64>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            acquire: RuntimeHistogram::for_latency(),
            renew: RuntimeHistogram::for_latency(),
            release: RuntimeHistogram::for_latency(),
            handoff: RuntimeHistogram::for_latency(),
            attempts: 0,
            failed_attempts: 0,
            gave_up: 0,
            errors: 0,
            first_error: None,
            requests: None,
            contender_grants: Vec::new(),
        }
    }
}

impl Metrics {
    /// Adds one measured cycle.
    pub fn add(&mut self, c: &Cycle) {
        self.attempts += c.attempts;
        self.failed_attempts += c.failed_attempts;
        self.gave_up += u64::from(c.gave_up);
        if let Some(d) = c.acquire {
            self.acquire.record(d);
        }
        for &d in &c.handoffs {
            self.handoff.record(d);
        }
        if let Some(d) = c.renew {
            self.renew.record(d);
        }
        if let Some(d) = c.release {
            self.release.record(d);
        }
        if let Some(e) = &c.error {
            self.errors += 1;
            self.first_error.get_or_insert_with(|| e.clone());
        }
    }

    /// Adds another contender's measurements.
    pub fn merge(&mut self, other: &Metrics) {
        self.acquire.merge(&other.acquire);
        self.renew.merge(&other.renew);
        self.release.merge(&other.release);
        self.handoff.merge(&other.handoff);
        self.attempts += other.attempts;
        self.failed_attempts += other.failed_attempts;
        self.gave_up += other.gave_up;
        self.errors += other.errors;
        self.requests = match (self.requests, other.requests) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        if self.first_error.is_none() {
            self.first_error.clone_from(&other.first_error);
        }
    }

    /// Records an error that happened outside a cycle.
    pub fn error(&mut self, message: String) {
        self.errors += 1;
        self.first_error.get_or_insert(message);
    }
}

/// Jain's fairness index of the contenders' grant counts, (sum x)^2 / (n sum x^2): 1 when every
/// contender got the same share, 1/n when one got everything. `None` with fewer than two
/// contenders or no grant at all.
pub fn jain_index(grants: &[u64]) -> Option<f64> {
    let n = grants.len() as f64;
    let sum: f64 = grants.iter().map(|&g| g as f64).sum();
    let squares: f64 = grants.iter().map(|&g| (g as f64).powi(2)).sum();
    (grants.len() >= 2 && squares > 0.0).then(|| (sum * sum / (n * squares) * 1e4).round() / 1e4)
}

/// What a row says it measured, apart from the figures.
struct Shape {
    backend: BackendId,
    mode: LoopKind,
    keys: KeySpread,
    contenders: usize,
    rate_per_s: Option<f64>,
    wait_mode: WaitKind,
}

/// The outcome of one backend at one contention level: the record's row and the histograms
/// behind it.
#[derive(Clone, Debug)]
pub struct BenchResult {
    /// What `results.json` and `bench.csv` hold.
    pub row: BenchRow,
    /// The histograms behind the row's summaries.
    pub metrics: Metrics,
}

impl BenchResult {
    /// Builds the result of a run.
    pub fn new(
        backend: BackendId,
        options: &crate::BenchOptions,
        contenders: usize,
        metrics: Metrics,
        measured: Duration,
    ) -> Self {
        let (mode, rate_per_s) = match options.mode {
            crate::LoadMode::Closed => (LoopKind::Closed, None),
            crate::LoadMode::Open { rate_per_s } => (LoopKind::Open, Some(rate_per_s)),
        };
        let like = Shape {
            backend,
            mode,
            keys: match options.keys {
                crate::KeyMode::One => KeySpread::One,
                crate::KeyMode::Many => KeySpread::Many,
            },
            contenders,
            rate_per_s,
            wait_mode: match options.wait_mode {
                crate::WaitMode::Native => WaitKind::Native,
                crate::WaitMode::Poll => WaitKind::Poll,
            },
        };
        Self::shaped(like, metrics, measured)
    }

    /// The result of shards' measurements added up (`lockbench merge`): shaped as `like`, one of
    /// the shards' rows, from the summed `metrics` over the longest measured part.
    pub fn merged(like: &BenchRow, metrics: Metrics, measured: Duration) -> Self {
        let shape = Shape {
            backend: like.backend,
            mode: like.mode,
            keys: like.keys,
            contenders: like.contenders,
            rate_per_s: like.rate_per_s,
            wait_mode: like.wait_mode,
        };
        Self::shaped(shape, metrics, measured)
    }

    fn shaped(shape: Shape, metrics: Metrics, measured: Duration) -> Self {
        let ops = metrics.acquire.count();
        let row = BenchRow {
            backend: shape.backend,
            client: None,
            mode: shape.mode,
            keys: shape.keys,
            contenders: shape.contenders,
            rate_per_s: shape.rate_per_s,
            ops,
            errors: metrics.errors,
            gave_up: metrics.gave_up,
            try_fail_rate: if metrics.attempts == 0 {
                0.0
            } else {
                metrics.failed_attempts as f64 / metrics.attempts as f64
            },
            attempts: metrics.attempts,
            failed_attempts: metrics.failed_attempts,
            requests: metrics.requests,
            contender_grants: metrics.contender_grants.clone(),
            acquire_us: LatencySummary::of(&metrics.acquire),
            release_us: LatencySummary::of(&metrics.release),
            renew_us: LatencySummary::of(&metrics.renew),
            handoff_us: LatencySummary::of(&metrics.handoff),
            throughput_per_s: ops as f64 / measured.as_secs_f64().max(1e-9),
            measured_s: measured.as_secs_f64(),
            first_error: metrics.first_error.clone(),
            wait_mode: shape.wait_mode,
            fairness_jain: jain_index(&metrics.contender_grants),
            requests_per_grant: metrics
                .requests
                .filter(|_| ops > 0)
                .map(|n| (n as f64 / ops as f64 * 100.0).round() / 100.0),
        };
        BenchResult { row, metrics }
    }

    /// Every histogram with its tag in `latency.hlog` (`backend/mode/keys/c=N/metric`).
    pub fn tagged_histograms(&self) -> [(String, &RuntimeHistogram); 4] {
        let tag = self.row.tag();
        let m = &self.metrics;
        [
            (format!("{tag}/acquire"), &m.acquire),
            (format!("{tag}/renew"), &m.renew),
            (format!("{tag}/release"), &m.release),
            (format!("{tag}/handoff"), &m.handoff),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_index_runs_from_one_over_n_to_one() {
        assert_eq!(jain_index(&[10, 10, 10, 10]), Some(1.0));
        assert_eq!(jain_index(&[40, 0, 0, 0]), Some(0.25));
        assert_eq!(jain_index(&[30, 10]), Some(0.8));
        assert_eq!(jain_index(&[7]), None, "one contender: nothing to share");
        assert_eq!(jain_index(&[0, 0]), None, "no grant at all");
    }
}
