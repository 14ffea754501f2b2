//! One backend measured at every contention level: a client per contender connected, each level
//! [`measure`]d (at its slot of a common [`Schedule`] when shards on several hosts start
//! together), then everything the levels made removed and the clients closed.

use lockbench_core::BackendId;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use lockbench_core::ShardRecord;
use lockbench_core::records::bench::BackendFacts;
use lockbench_locks::{BackendConfig, Capabilities, LockBackend, LockError};

use crate::measure::measure;
use crate::options::{BenchOptions, Stripe};
use crate::result::BenchResult;

/// A shard that cannot be ready for its slot of the common start (`lockbench` exits 4).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct NotReady(pub String);

/// Why a backend's levels were not all measured.
#[derive(Debug, thiserror::Error)]
pub enum LevelsError {
    /// The backend could not be reached or refused an operation outside the measured cycles.
    #[error(transparent)]
    Lock(#[from] LockError),
    /// This shard would start a level late.
    #[error(transparent)]
    NotReady(#[from] NotReady),
}

/// What [`measure_levels`] runs.
#[derive(Clone, Debug)]
pub struct Levels {
    /// The options of every level (its stripe is set per level).
    pub options: BenchOptions,
    /// The run's contenders at each level, in order.
    pub contenders: Vec<usize>,
    /// This process's part of a split run, if it is one.
    pub shard: Option<ShardRecord>,
    /// The common start of the first level's measured part (`--start-at`).
    pub start_at: Option<SystemTime>,
}

/// What a running level reports: [`LevelProgress::level`] when a level begins (the callback it
/// returns counts that level's operations), [`LevelProgress::done`] when it ends.
pub trait LevelProgress {
    fn level(&self, backend: &str, contenders: usize) -> Arc<dyn Fn(u64) + Send + Sync>;
    fn done(&self);
}

/// A backend's levels, measured.
pub struct Measured {
    /// One result per level, in order.
    pub results: Vec<BenchResult>,
    pub capabilities: Capabilities,
    /// The server's version, where it told it, and the client library measured through.
    pub server_version: Option<String>,
    pub client: Option<&'static str>,
    /// Postgres: whether a transaction-mode pooler was found on the URL.
    pub transaction_pooler: Option<bool>,
    /// A shard's clock against the server's: (offset, round trip) in milliseconds.
    pub clock: Option<(f64, f64)>,
    /// A cleanup that failed after the levels were measured (their figures stand).
    pub cleanup_error: Option<LockError>,
}

/// Between one level's measured part and the next one's warm-up: the last cycle that began
/// before the end may still wait out `--wait`, hold for `--hold`, then renew and release (a
/// second is left for those).
fn level_gap(b: &BenchOptions) -> Duration {
    b.wait + b.hold + Duration::from_secs(1)
}

/// When each level's measured part is due: the common start, then one warm-up, duration and gap
/// later per level. Every shard computes the same schedule from the same flags.
#[derive(Clone, Copy, Debug)]
pub struct Schedule<'a> {
    pub at: SystemTime,
    pub options: &'a BenchOptions,
}

impl Schedule<'_> {
    /// When level `level`'s measured part is due.
    pub fn due(&self, level: usize) -> SystemTime {
        let b = self.options;
        self.at + (b.warmup + b.duration + level_gap(b)) * level as u32
    }

    /// [`Schedule::due`] as an instant of this process, given the time `now`. Refused when this
    /// process can no longer warm up fully before it.
    pub fn start(
        &self,
        level: usize,
        contenders: usize,
        who: &str,
        now: SystemTime,
    ) -> Result<Duration, NotReady> {
        let start = self.due(level);
        let warmup = self.options.warmup;
        let ready = now + warmup;
        if ready > start {
            let late = ready.duration_since(start).unwrap_or_default();
            return Err(NotReady(format!(
                "{who}: not ready for contention level {contenders} at {}: {} late with --warmup {} still to run; start the shards earlier or give a later --start-at",
                humantime::format_rfc3339_millis(start),
                humantime::format_duration(Duration::from_millis(late.as_millis() as u64)),
                humantime::format_duration(warmup),
            )));
        }
        Ok(start.duration_since(now).unwrap_or_default())
    }
}

/// What a backend declared about itself, as the bench record keeps it, with the server version
/// and client library of [`Measured`].
pub fn facts(backend: BackendId, m: &Measured) -> BackendFacts {
    let c = m.capabilities;
    BackendFacts {
        server_version: m.server_version.clone(),
        client: m.client.map(str::to_string),
        transaction_pooler: m.transaction_pooler,
        backend,
        fencing: c.fencing.describe().to_string(),
        native_ttl: c.native_ttl,
        wait_queue: c.wait_queue,
        native_wait: c.native_wait,
        scope: c.scope.describe().to_string(),
        cannot_prevent: c.scope.cannot_prevent().to_string(),
    }
}

/// The most clients this process connects for `levels`: a shard connects its own share of each
/// level's contenders.
pub fn clients_needed(levels: &Levels) -> usize {
    let (index, count) = levels.shard.as_ref().map_or((0, 1), |s| (s.index, s.count));
    levels
        .contenders
        .iter()
        .map(|&c| Stripe::local(index, count, c))
        .max()
        .unwrap_or(1)
        .max(1)
}

/// Measures `config`'s backend at every level of `levels`, through lockbench's own client.
pub async fn measure_levels(
    config: &BackendConfig,
    levels: &Levels,
    progress: &dyn LevelProgress,
) -> Result<Measured, LevelsError> {
    let clients = connect(config, clients_needed(levels)).await?;
    measure_connected(config, clients, levels, progress).await
}

/// Measures `config`'s backend at every level of `levels` through `clients`, one per contender
/// (at least [`clients_needed`]): lockbench's own, or a client library's adapters.
pub async fn measure_connected(
    config: &BackendConfig,
    clients: Vec<Arc<dyn LockBackend>>,
    levels: &Levels,
    progress: &dyn LevelProgress,
) -> Result<Measured, LevelsError> {
    let name = config.id();
    let (index, count) = levels.shard.as_ref().map_or((0, 1), |s| (s.index, s.count));
    let local = |c: usize| Stripe::local(index, count, c);
    let capabilities = clients[0].capabilities();
    // Which server and client were measured: a version the server will not tell is left out.
    let server_version = match clients[0].server_version().await {
        Some(Ok(v)) => Some(v),
        _ => None,
    };
    let client = clients[0].client_library();
    let transaction_pooler = clients[0].transaction_pooler();
    // Shards on several hosts keep --start-at by their own clocks: how far each is from the
    // server's says how far apart they really start.
    let clock = if levels.shard.is_some() {
        clock_offset(clients[0].as_ref()).await
    } else {
        None
    };
    let who = levels.shard.as_ref().map_or("bench".to_string(), |s| {
        format!("bench shard {}/{} of run {}", s.index, s.count, s.run_id)
    });
    let schedule = levels.start_at.map(|at| Schedule {
        at,
        options: &levels.options,
    });
    let _armed = crate::ArmedTimer::spawn(config.operation_timeout);
    let mut results = Vec::new();
    let mut keys = Vec::new();
    for (level, &contenders) in levels.contenders.iter().enumerate() {
        let mut options = levels.options.clone();
        options.stripe = Stripe {
            index,
            count,
            contenders,
        };
        if let Some(schedule) = schedule {
            match schedule.start(level, contenders, &who, SystemTime::now()) {
                Ok(wait) => options.start = Some(Instant::now() + wait),
                Err(e) => {
                    // The other shards may still be measuring on the shared keys: only a shard
                    // alone removes what the levels before left.
                    if levels.shard.is_none() {
                        let _ = cleanup(&clients, &keys).await;
                    }
                    return Err(e.into());
                }
            }
        }
        let counter = progress.level(name.name(), contenders);
        let (result, used) = measure(
            name,
            clients[..local(contenders)].to_vec(),
            &options,
            counter,
        )
        .await;
        progress.done();
        results.push(result);
        keys.extend(used);
    }
    keys.sort();
    keys.dedup();
    if let Some(schedule) = schedule {
        // The other shards' last cycles may still use the keys and counters: wait out the gap
        // after the last level, which every shard's schedule has, before removing them.
        // The next level's warm-up would begin then.
        let done = schedule.due(levels.contenders.len()) - levels.options.warmup;
        if let Ok(left) = done.duration_since(SystemTime::now()) {
            tokio::time::sleep(left).await;
        }
    }
    let cleanup_error = cleanup(&clients, &keys).await.err();
    Ok(Measured {
        results,
        capabilities,
        server_version,
        client,
        transaction_pooler,
        clock,
        cleanup_error,
    })
}

/// A client per contender: contenders are separate workers, each with its own connection or
/// session, as in production.
async fn connect(config: &BackendConfig, n: usize) -> Result<Vec<Arc<dyn LockBackend>>, LockError> {
    let mut clients: Vec<Arc<dyn LockBackend>> = Vec::with_capacity(n);
    for i in 0..n {
        match lockbench_locks::connect(config).await {
            Ok(client) => clients.push(Arc::from(client)),
            // The server answered the first clients: it is up, and refuses more of them.
            Err(LockError::Unreachable {
                backend,
                url,
                reason,
            }) if i > 0 => {
                return Err(LockError::Unreachable {
                    backend,
                    url,
                    reason: format!(
                        "{reason} (client {} of {n}; the first {i} connected: the server may cap connections per client address, as ZooKeeper's maxClientCnxns does at 60 by default)",
                        i + 1
                    ),
                });
            }
            Err(e) => return Err(e),
        }
    }
    Ok(clients)
}

/// This host's clock minus the server's, and the round trip it was read over, in milliseconds:
/// the quickest of five readings, the server's time taken as of the middle of its round trip.
pub async fn clock_offset(client: &dyn LockBackend) -> Option<(f64, f64)> {
    let mut best: Option<(f64, f64)> = None;
    for _ in 0..5 {
        let sent = SystemTime::now();
        let started = Instant::now();
        let server_us = client.server_clock_us().await?.ok()?;
        let rtt = started.elapsed();
        let middle_us = (sent + rtt / 2)
            .duration_since(std::time::UNIX_EPOCH)
            .ok()?
            .as_micros() as f64;
        let reading = (
            (middle_us - server_us as f64) / 1e3,
            rtt.as_secs_f64() * 1e3,
        );
        if best.is_none_or(|b| reading.1 < b.1) {
            best = Some(reading);
        }
    }
    best.map(|(offset, rtt)| {
        (
            (offset * 1000.0).round() / 1000.0,
            (rtt * 1000.0).round() / 1000.0,
        )
    })
}

/// Leaves nothing behind: keys, counters, sequences, folders, then the connections and sessions.
async fn cleanup(clients: &[Arc<dyn LockBackend>], keys: &[String]) -> Result<(), LockError> {
    let first = &clients[0];
    for key in keys {
        first.cleanup(key).await?;
    }
    first.cleanup_namespace().await?;
    for client in clients {
        client.close().await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> BenchOptions {
        BenchOptions {
            warmup: Duration::from_secs(2),
            duration: Duration::from_secs(10),
            wait: Duration::from_secs(3),
            hold: Duration::from_millis(500),
            ..BenchOptions::default()
        }
    }

    #[test]
    fn each_level_is_due_a_warm_up_a_duration_and_a_gap_after_the_last() {
        let b = options();
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        let s = Schedule { at, options: &b };
        assert_eq!(s.due(0), at);
        // 2 s warm-up + 10 s measured + (3 s wait + 0.5 s hold + 1 s) gap.
        assert_eq!(s.due(2), at + Duration::from_millis(2 * 16_500));
    }

    #[test]
    fn a_level_that_cannot_be_warmed_up_in_time_is_refused_with_how_late() {
        let b = options();
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        let s = Schedule { at, options: &b };
        let early = at - Duration::from_secs(5);
        assert_eq!(
            s.start(0, 4, "bench", early).unwrap(),
            Duration::from_secs(5)
        );
        let late = at - Duration::from_millis(500);
        let e = s.start(0, 4, "bench shard 1/2 of run r", late).unwrap_err();
        assert!(
            e.0.starts_with("bench shard 1/2 of run r: not ready for contention level 4 at "),
            "{e}"
        );
        assert!(
            e.0.contains(": 1s 500ms late with --warmup 2s still to run"),
            "{e}"
        );
    }
}
