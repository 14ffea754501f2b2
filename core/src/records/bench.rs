//! The record of `bench`: `results.json`, `bench.csv` and `latency.hlog`.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::backend::BackendId;

use super::codec::present;
use crate::histogram::RuntimeHistogram;

/// The rows' CSV file.
pub const CSV: &str = "bench.csv";
/// The latency histograms, tagged `backend/mode/keys/c=N/metric`.
pub const HISTOGRAMS: &str = "latency.hlog";

/// `results.json` of `bench`: what `--json` prints.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BenchRecord {
    /// One row per backend, load mode, key mode and contention level measured.
    pub results: Vec<BenchRow>,
    /// Backends that could not be measured, and why.
    pub failed: Vec<BenchFailure>,
    /// What each backend measured declares about itself.
    pub backends: Vec<BackendFacts>,
}

/// A backend that could not be measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BenchFailure {
    /// Backend name.
    pub backend: BackendId,
    /// Why, in one line.
    pub error: String,
}

/// What a backend declares about itself (from `lockbench_locks::Capabilities`), so that a report
/// says what the run measured rather than what a second table assumes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackendFacts {
    /// Backend name.
    pub backend: BackendId,
    /// Where its fencing tokens come from ("none" when it gives none).
    pub fencing: String,
    /// The server frees the lock by itself after the TTL.
    pub native_ttl: bool,
    /// The server keeps a queue of waiters by design.
    pub wait_queue: bool,
    /// lockbench's acquire waits in that queue (else it polls).
    pub native_wait: bool,
    /// What the lock is tied to (key, session, lease ...).
    pub scope: String,
    /// The failures it cannot prevent, from how it locks (docs/BACKENDS.md).
    pub cannot_prevent: String,
    /// The server's version as it reported it (Redlock: each node's distinct version). Added
    /// without a schema bump: absent in records written before it, and for a backend without a
    /// server or whose server did not answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_version: Option<String>,
    /// The client library and version lockbench measured it through ("redis-rs 1.8.1"); absent
    /// as `server_version` is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// pg-session, pg-xact: whether a transaction-mode pooler was found between lockbench and
    /// the server (looked for at connect: a setting of one client connection read on another).
    /// Added without a schema bump, absent for other backends and in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transaction_pooler: Option<bool>,
}

/// Closed loop (each contender acquires again as soon as it released) or open loop (arrivals at a
/// fixed rate, latency from the intended start).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoopKind {
    /// Closed loop.
    Closed,
    /// Open loop.
    Open,
}

impl fmt::Display for LoopKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LoopKind::Closed => "closed",
            LoopKind::Open => "open",
        })
    }
}

/// How contenders waited for a held lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WaitKind {
    /// In the backend's own queue (a blocking advisory lock ...).
    Native,
    /// Retrying with backoff.
    Poll,
}

impl fmt::Display for WaitKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            WaitKind::Native => "native",
            WaitKind::Poll => "poll",
        })
    }
}

/// Every contender on one key, or each on its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KeySpread {
    /// One shared key: contention.
    One,
    /// A key per contender: no contention, the server's parallelism.
    Many,
}

impl fmt::Display for KeySpread {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            KeySpread::One => "one",
            KeySpread::Many => "many",
        })
    }
}

/// The outcome of one backend at one contention level.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BenchRow {
    /// Backend name.
    pub backend: BackendId,
    /// The client library measured through (its adapter and version); absent for lockbench's
    /// own client, and in records written before clients were measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<crate::ClientUsed>,
    /// Closed or open loop.
    pub mode: LoopKind,
    /// One key or many.
    pub keys: KeySpread,
    /// Contenders (closed loop) or clients (open loop).
    pub contenders: usize,
    /// How contenders waited for a held lock.
    pub wait_mode: WaitKind,
    /// Open loop: offered arrivals per second; `None` in a closed loop.
    #[serde(deserialize_with = "present")]
    pub rate_per_s: Option<f64>,
    /// Successful, measured acquisitions.
    pub ops: u64,
    /// Failed operations.
    pub errors: u64,
    /// Acquisitions that ran out of wait.
    pub gave_up: u64,
    /// Share of try-acquire attempts that found the lock held.
    pub try_fail_rate: f64,
    /// Try-acquire attempts (a queued acquisition is one).
    pub attempts: u64,
    /// Attempts that found the lock held.
    pub failed_attempts: u64,
    /// Requests the clients sent to the server while measuring; `None` without a server.
    #[serde(deserialize_with = "present")]
    pub requests: Option<u64>,
    /// Measured grants of each contender (closed loop; empty in an open loop), the fairness
    /// index's input.
    pub contender_grants: Vec<u64>,
    /// Jain's index of the contenders' grant counts (1: equal shares, 1/n: one took all);
    /// `None` with one contender or in an open loop, where it means nothing.
    #[serde(deserialize_with = "present")]
    pub fairness_jain: Option<f64>,
    /// Acquire latency (waiting included; from the intended start in an open loop).
    pub acquire_us: LatencySummary,
    /// Release latency.
    pub release_us: LatencySummary,
    /// Renew latency.
    pub renew_us: LatencySummary,
    /// Under contention, from a release to the grant of a contender that was waiting for it.
    pub handoff_us: LatencySummary,
    /// Herd cost: requests the contenders sent to the server per measured grant, the waiting's
    /// included; `None` for a backend that has no server to ask, or when nothing was granted.
    #[serde(deserialize_with = "present")]
    pub requests_per_grant: Option<f64>,
    /// Measured acquisitions per second.
    pub throughput_per_s: f64,
    /// Length of the measured part.
    pub measured_s: f64,
    /// The first error; `None` when there was none.
    #[serde(deserialize_with = "present")]
    pub first_error: Option<String>,
}

impl BenchRow {
    /// The histogram tag prefix of this row in `latency.hlog` (`/metric` follows).
    pub fn tag(&self) -> String {
        match &self.client {
            Some(used) => format!(
                "{}+{}/{}/{}/c={}",
                self.backend, used.name, self.mode, self.keys, self.contenders
            ),
            None => format!(
                "{}/{}/{}/c={}",
                self.backend, self.mode, self.keys, self.contenders
            ),
        }
    }

    /// Its backend as tables show it, with the library it was measured through
    /// (`redis via redis-py 8.1.0`).
    pub fn backend_through(&self) -> String {
        match &self.client {
            Some(used) => format!("{} via {} {}", self.backend, used.name, used.version),
            None => self.backend.to_string(),
        }
    }
}

/// Percentiles of one latency metric, in microseconds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LatencySummary {
    /// Samples.
    pub count: u64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Largest.
    pub max: f64,
    /// Mean.
    pub mean: f64,
}

impl LatencySummary {
    /// Summarises a latency histogram.
    pub fn of(h: &RuntimeHistogram) -> Self {
        let us = |d: Duration| (d.as_nanos() as f64 / 1e3 * 100.0).round() / 100.0;
        LatencySummary {
            count: h.count(),
            p50: us(h.quantile(0.5)),
            p90: us(h.quantile(0.9)),
            p99: us(h.quantile(0.99)),
            p999: us(h.quantile(0.999)),
            max: us(h.max()),
            mean: us(h.mean()),
        }
    }
}

/// One line of `bench.csv`: a [`BenchRow`] flattened.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BenchCsvRow {
    /// Backend name.
    pub backend: BackendId,
    /// Closed or open loop.
    pub mode: LoopKind,
    /// One key or many.
    pub keys: KeySpread,
    /// Contenders or clients.
    pub contenders: usize,
    /// How contenders waited.
    pub wait_mode: WaitKind,
    /// Offered rate (open loop); empty in a closed loop.
    #[serde(deserialize_with = "present")]
    pub rate_per_s: Option<f64>,
    /// Measured acquisitions.
    pub ops: u64,
    /// Failed operations.
    pub errors: u64,
    /// Acquisitions that ran out of wait.
    pub gave_up: u64,
    /// Share of attempts that found the lock held.
    pub try_fail_rate: f64,
    /// Jain's fairness index; empty with one contender or in an open loop.
    #[serde(deserialize_with = "present")]
    pub fairness_jain: Option<f64>,
    /// Acquisitions per second.
    pub throughput_per_s: f64,
    /// Requests to the server per grant; empty for a backend without a server.
    #[serde(deserialize_with = "present")]
    pub requests_per_grant: Option<f64>,
    /// Acquire P50.
    pub acquire_p50_us: f64,
    /// Acquire P90.
    pub acquire_p90_us: f64,
    /// Acquire P99.
    pub acquire_p99_us: f64,
    /// Acquire P99.9.
    pub acquire_p999_us: f64,
    /// Acquire maximum.
    pub acquire_max_us: f64,
    /// Acquire mean.
    pub acquire_mean_us: f64,
    /// Renew P50.
    pub renew_p50_us: f64,
    /// Renew P99.
    pub renew_p99_us: f64,
    /// Release P50.
    pub release_p50_us: f64,
    /// Release P99.
    pub release_p99_us: f64,
    /// Handoff P50.
    pub handoff_p50_us: f64,
    /// Handoff P99.
    pub handoff_p99_us: f64,
    /// The client library measured through (`redis-py 8.1.0`); empty for lockbench's own, and
    /// absent from files written before clients were measured.
    #[serde(default, deserialize_with = "present")]
    pub client: Option<String>,
}

impl From<&BenchRow> for BenchCsvRow {
    fn from(r: &BenchRow) -> Self {
        BenchCsvRow {
            backend: r.backend,
            mode: r.mode,
            keys: r.keys,
            contenders: r.contenders,
            wait_mode: r.wait_mode,
            rate_per_s: r.rate_per_s,
            ops: r.ops,
            errors: r.errors,
            gave_up: r.gave_up,
            try_fail_rate: (r.try_fail_rate * 1e6).round() / 1e6,
            fairness_jain: r.fairness_jain,
            throughput_per_s: (r.throughput_per_s * 10.0).round() / 10.0,
            requests_per_grant: r.requests_per_grant,
            acquire_p50_us: r.acquire_us.p50,
            acquire_p90_us: r.acquire_us.p90,
            acquire_p99_us: r.acquire_us.p99,
            acquire_p999_us: r.acquire_us.p999,
            acquire_max_us: r.acquire_us.max,
            acquire_mean_us: r.acquire_us.mean,
            renew_p50_us: r.renew_us.p50,
            renew_p99_us: r.renew_us.p99,
            release_p50_us: r.release_us.p50,
            release_p99_us: r.release_us.p99,
            handoff_p50_us: r.handoff_us.p50,
            handoff_p99_us: r.handoff_us.p99,
            client: r
                .client
                .as_ref()
                .map(|used| format!("{} {}", used.name, used.version)),
        }
    }
}

/// `bench.csv` of `rows`.
pub fn bench_csv(rows: &[BenchRow]) -> Vec<u8> {
    let rows: Vec<BenchCsvRow> = rows.iter().map(BenchCsvRow::from).collect();
    super::codec::to_csv(&rows)
}
