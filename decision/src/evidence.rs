//! What was measured, as the rules ask for it: fault-lab cells by scenario and backend, each
//! backend's uncontended acquire latency, the job's TTL recommendation and its live replays. Built
//! from the typed records of `lockbench_core::records`, whichever way they were read.

use lockbench_core::fault::Variant;
use lockbench_core::records::bench::BenchRecord;
use lockbench_core::records::faults::{FaultCell, FaultsRecord};
use lockbench_core::records::replay::ReplayRecord;
use lockbench_core::records::ttl::TtlRecommendation;
use lockbench_core::{BackendId, BackendKind};
use lockbench_core::{format_count, format_readable_s};

/// Everything measured that a decision may cite.
#[derive(Clone, Debug, Default)]
pub struct Evidence {
    /// Every fault-lab cell of every `faults` run given, measured through lockbench's own
    /// client.
    pub cells: Vec<FaultCell>,
    /// The cells measured through a client library (`faults --client`): the library's evidence,
    /// read for a job that ships that library.
    pub library_cells: Vec<FaultCell>,
    /// The fault runs, for the basis line: (seed, trials per cell, TTL asked, seconds).
    pub fault_runs: Vec<(u64, u32, f64)>,
    /// Uncontended acquire latency per backend, from `bench`.
    pub acquire: Vec<AcquireCost>,
    /// TTL recommendations, one per workload.
    pub ttls: Vec<TtlRecommendation>,
    /// Live replays.
    pub replays: Vec<ReplayRecord>,
    /// What bench found between it and Postgres, on the first Postgres backend it measured:
    /// true for a transaction-mode pooler.
    pub transaction_pooler: Option<(BackendId, bool)>,
}

/// One backend's uncontended acquisition, as `bench` measured it.
#[derive(Clone, Debug, PartialEq)]
pub struct AcquireCost {
    /// The backend.
    pub backend: BackendId,
    /// P99, microseconds.
    pub p99_us: f64,
    /// Acquisitions timed.
    pub samples: u64,
    /// The slowest, microseconds.
    pub max_us: f64,
}

impl AcquireCost {
    /// True when its samples support a P99 (at least 100).
    pub fn p99_supported(&self) -> bool {
        lockbench_core::stats::percentile_supported(0.99, self.samples)
    }

    /// The figure a comparison may cite: "P99 421 us", or "max of 60: 1.2 ms" when too few
    /// acquisitions were timed for a P99.
    pub fn figure(&self) -> String {
        p99_figure(self.p99_us, self.samples, self.max_us)
    }
}

impl Evidence {
    /// The evidence of these records.
    pub fn new(
        faults: &[&FaultsRecord],
        benches: &[&BenchRecord],
        ttls: &[&TtlRecommendation],
        replays: &[&ReplayRecord],
    ) -> Self {
        let mut acquire: Vec<AcquireCost> = Vec::new();
        for row in benches
            .iter()
            .flat_map(|b| &b.results)
            // A client library's row is that library's cost, not the backend's.
            .filter(|r| r.contenders == 1 && r.ops > 0 && r.client.is_none())
        {
            // The first uncontended row of a backend is its figure (a later bench run's rows for
            // the same backend follow it).
            if !acquire.iter().any(|a| a.backend == row.backend) {
                acquire.push(AcquireCost {
                    backend: row.backend,
                    p99_us: row.acquire_us.p99,
                    samples: row.acquire_us.count,
                    max_us: row.acquire_us.max,
                });
            }
        }
        let transaction_pooler = benches
            .iter()
            .flat_map(|b| &b.backends)
            .find_map(|f| f.transaction_pooler.map(|found| (f.backend, found)));
        Evidence {
            transaction_pooler,
            // Cells measured through a client library are that library's evidence, not the
            // backend's: the rules read lockbench's own client's cells.
            cells: faults
                .iter()
                .flat_map(|f| f.cells.iter().filter(|c| c.client.is_none()).cloned())
                .collect(),
            library_cells: faults
                .iter()
                .flat_map(|f| f.cells.iter().filter(|c| c.client.is_some()).cloned())
                .collect(),
            // The runs those cells came from: a run through a library alone adds none.
            fault_runs: faults
                .iter()
                .filter(|f| f.cells.iter().any(|c| c.client.is_none()))
                .map(|f| (f.seed, f.trials_per_cell, f.ttl_s))
                .collect(),
            acquire,
            ttls: ttls.iter().map(|t| (*t).clone()).collect(),
            replays: replays.iter().map(|r| (*r).clone()).collect(),
        }
    }

    /// True when nothing was measured.
    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
            && self.acquire.is_empty()
            && self.ttls.is_empty()
            && self.replays.is_empty()
    }

    /// The cell of `variant` on `backend`.
    pub fn cell(&self, variant: Variant, backend: BackendKind) -> Option<&FaultCell> {
        self.cells.iter().find(|c| c.is(variant, backend))
    }

    /// The cells measured through `client`, in the order the lab ran them.
    pub fn library_cells(&self, client: lockbench_core::Client) -> Vec<&FaultCell> {
        match client {
            lockbench_core::Client::Own(own) => self.library_cells_named(&own.name),
            shipped => self
                .library_cells
                .iter()
                .filter(|c| c.client.as_ref().is_some_and(|u| u.name == shipped))
                .collect(),
        }
    }

    /// The cells measured through the user's own adapter named `name` (by its file: an own
    /// adapter has no other identity).
    pub fn library_cells_named(&self, name: &str) -> Vec<&FaultCell> {
        self.library_cells
            .iter()
            .filter(|c| {
                c.client.as_ref().is_some_and(
                    |u| matches!(u.name, lockbench_core::Client::Own(own) if own.name == name),
                )
            })
            .collect()
    }

    /// The longest a vanished holder blocked the next grant in the lab with the design's settings
    /// (for Postgres, the per-connection keepalive); `None` when not measured or never granted.
    pub fn vanished_recovery_s(&self, kind: BackendKind) -> Option<f64> {
        let keepalive = matches!(kind, BackendKind::PgSession | BackendKind::PgXact);
        self.cell(Variant::CrashHostVanished { keepalive }, kind)
            .filter(|c| c.contender_timed_out == 0)
            .and_then(|c| c.recovery_max_s)
    }

    /// Every cell measured on `backend`.
    pub fn cells_on(&self, backend: BackendKind) -> impl Iterator<Item = &FaultCell> {
        self.cells.iter().filter(move |c| c.backend == backend)
    }

    /// The uncontended acquire P99 of `backend`, microseconds; the maximum where too few
    /// acquisitions were timed for a P99 (a bound above it, never below).
    pub fn acquire_p99_us(&self, backend: BackendKind) -> Option<f64> {
        self.acquire_cost(backend).map(|a| {
            if a.p99_supported() {
                a.p99_us
            } else {
                a.max_us
            }
        })
    }

    /// The uncontended acquisition of `backend`, as `bench` measured it.
    pub fn acquire_cost(&self, backend: BackendKind) -> Option<&AcquireCost> {
        self.acquire.iter().find(|a| a.backend == backend)
    }

    /// The TTL recommendation of `job`.
    pub fn ttl(&self, job: &str) -> Option<&TtlRecommendation> {
        self.ttls.iter().find(|t| t.workload == job)
    }

    /// The live replays of `job`.
    pub fn replays_of<'a>(&'a self, job: &'a str) -> impl Iterator<Item = &'a ReplayRecord> {
        self.replays.iter().filter(move |r| r.workload == job)
    }

    /// The TTL or lease the lab granted on each backend, as the record cites it: "lab TTL 1.00 s,
    /// etcd 2.00 s, zookeeper 4.00 s" (the most common first, then each backend that differs).
    pub fn lab_ttls(&self) -> String {
        // Per backend, the longest it granted: the lab's TTL (Redlock grants its validity, the
        // TTL less the acquisition's time and the drift, a little less each cell).
        let mut by: Vec<(BackendKind, f64)> = Vec::new();
        for c in &self.cells {
            match by.iter_mut().find(|(b, _)| *b == c.backend.kind) {
                Some(entry) => entry.1 = entry.1.max(c.granted_ttl_s),
                None => by.push((c.backend.kind, c.granted_ttl_s)),
            }
        }
        let mut counts: Vec<(f64, usize)> = Vec::new();
        for (_, t) in &by {
            match counts.iter_mut().find(|(x, _)| x == t) {
                Some(entry) => entry.1 += 1,
                None => counts.push((*t, 1)),
            }
        }
        let Some(&(common, _)) = counts.iter().max_by_key(|(_, n)| *n) else {
            return "no lab TTL".to_string();
        };
        let mut out = format!("lab TTL {}", format_readable_s(common));
        for (b, t) in by.iter().filter(|(_, t)| *t != common) {
            out.push_str(&format!(", {b} {}", format_readable_s(*t)));
        }
        out
    }

    /// What a decision for `job` rests on, in one line.
    pub fn basis(&self, job: &str) -> String {
        if self.is_empty() {
            return "from how each backend locks (docs/BACKENDS.md): no results given, so nothing here is measured".to_string();
        }
        let mut parts = Vec::new();
        if !self.cells.is_empty() {
            let runs: Vec<String> = self
                .fault_runs
                .iter()
                .map(|(seed, trials, _)| {
                    format!(
                        "seed {seed}, {trials} trial{} per cell",
                        if *trials == 1 { "" } else { "s" }
                    )
                })
                .collect();
            parts.push(format!(
                "{} fault-lab cells ({}; {})",
                format_count(self.cells.len() as u64),
                runs.join("; "),
                self.lab_ttls()
            ));
        }
        if !self.acquire.is_empty() {
            parts.push(format!(
                "the acquire latency of {} backends",
                self.acquire.len()
            ));
        }
        match self.ttl(job) {
            Some(t) => parts.push(format!(
                "{}'s runtime at {} {} ({} replays)",
                job,
                format_count(t.target_volume),
                t.unit,
                format_count(t.replays)
            )),
            None => parts.push(format!("no `ttl` of {job}")),
        }
        let replays = self.replays_of(job).count();
        if replays > 0 {
            parts.push(format!("{replays} live replays"));
        }
        format!("measured: {}", parts.join(", "))
    }
}

/// "P99 421 us" where `samples` support a P99, else "max of 60: 1.20 ms".
pub(crate) fn p99_figure(p99_us: f64, samples: u64, max_us: f64) -> String {
    format!(
        "{}{}",
        if lockbench_core::stats::percentile_supported(0.99, samples) {
            "P99 "
        } else {
            ""
        },
        lockbench_core::format_tail_us(0.99, p99_us, samples, max_us)
    )
}

/// A cell in one clause: "restart/no-persistence (lab TTL 1.00 s): overlap in 1/1 trials (up to 0.57 s), 17
/// stale writes, fence refused 0 of 17: the counter restarted with the server".
pub fn describe(cell: &FaultCell) -> String {
    // The lab's TTL differs by backend (a consensus store's minimum lease is longer): every lab
    // figure names the one it was measured at.
    let label = format!(
        "{} (lab TTL {})",
        cell.label(),
        format_readable_s(cell.granted_ttl_s)
    );
    if cell.trials_with_overlap == 0 {
        return format!(
            "{label}: no overlap in {} trial{}",
            cell.trials,
            if cell.trials == 1 { "" } else { "s" }
        );
    }
    let mut text = format!(
        "{label}: overlap in {}/{} trials",
        cell.trials_with_overlap, cell.trials
    );
    if let Some(max) = cell.overlap_max_s {
        text += &format!(" (up to {})", format_readable_s(max));
    }
    if cell.stale_writes > 0 {
        text += &format!(
            ", {} stale write{}",
            format_count(cell.stale_writes),
            if cell.stale_writes == 1 { "" } else { "s" }
        );
        text += &match cell.stale_rejected_by_fence {
            None => ", no token to check".to_string(),
            Some(r) => format!(
                ", fence refused {} of {}",
                format_count(r),
                cell.stale_writes
            ),
        };
        if cell.legitimate_rejected_by_fence.is_some_and(|n| n > 0) {
            text += ": the counter went back with the server";
        }
    }
    text
}

/// True when the fence refused every stale write of the cell (and there was a token to check).
pub fn fence_held(cell: &FaultCell) -> bool {
    cell.stale_rejected_by_fence == Some(cell.stale_writes)
        && cell.legitimate_rejected_by_fence.unwrap_or(0) == 0
}
