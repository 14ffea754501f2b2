//! `lockbench clients check`: what any adapter must do, tried against a real server. Two
//! instances of the adapter contend for one key; every reply is checked for its answer and for
//! its timestamp, which must be on this machine's CLOCK_MONOTONIC (taken between the request's
//! sending and its reply's arrival).

use std::time::Duration;

use lockbench_locks::{BackendConfig, LockBackend};

use crate::ClientsError;
use crate::adapter::AdapterLock;
use crate::programs::Program;
use crate::protocol::{Line, Renewal, Request};

/// One promise of the protocol, kept or not.
#[derive(Clone, Debug, PartialEq)]
pub struct Check {
    /// What was checked, in a few words.
    pub name: &'static str,
    /// Kept.
    pub passed: bool,
    /// What was seen.
    pub detail: String,
}

/// What the adapter is and the checks it went through.
#[derive(Clone, Debug)]
pub struct Conformance {
    /// The adapter's `library version`.
    pub library: String,
    /// Each check, in order; the first failure ends the list.
    pub checks: Vec<Check>,
}

impl Conformance {
    /// True when every check passed.
    pub fn passed(&self) -> bool {
        self.checks.iter().all(|c| c.passed)
    }
}

pub use crate::monotonic_ns;

/// The TTL the checks lock with: long enough for an interpreter's slowest call, short enough to
/// wait out.
const TTL: Duration = Duration::from_millis(1500);

/// Runs the checks of `program` against `config`'s server. A failure to start is an error; a
/// broken promise is a failed check.
pub async fn check(program: &Program, config: &BackendConfig) -> Result<Conformance, ClientsError> {
    let first = AdapterLock::start(program, config).await?;
    let library = first.client_library().unwrap_or_default().to_string();
    let mut checks = vec![Check {
        name: "hello",
        passed: true,
        detail: format!(
            "{library}: locks on {}, renewal {:?}, fencing {}, notifies loss {}",
            first.description().backend,
            first.description().renewal,
            first.description().fencing,
            first.description().notifies_loss
        ),
    }];
    // A shipped adapter must describe its library as lockbench's decision rules know it.
    if let Some(client) = program.client {
        let d = first.description();
        let known = lockbench_core::BackendKind::parse(&d.backend) == Some(client.backend())
            && d.fencing == client.gives_fencing_token()
            && lockbench_core::Client::parse(&d.library) == Some(client)
            && (d.renewal == Renewal::Automatic) == client.renews_itself()
            && d.notifies_loss == client.tells_of_loss();
        checks.push(Check {
            name: "described as lockbench knows it",
            passed: known,
            detail: format!(
                "{} on {}, fencing token {}, renewal {:?}, notifies loss {} (lockbench::Client \
                 says {} on {}, fencing token {}, renews itself {}, tells of loss {})",
                d.library,
                d.backend,
                d.fencing,
                d.renewal,
                d.notifies_loss,
                client.name(),
                client.backend(),
                client.gives_fencing_token(),
                client.renews_itself(),
                client.tells_of_loss()
            ),
        });
        if !known {
            let _ = first.close().await;
            return Ok(Conformance { library, checks });
        }
    }
    let second = AdapterLock::start(program, config).await?;
    let key = format!("conformance-{}-{}", std::process::id(), monotonic_ns());
    let mut run = Run {
        checks: &mut checks,
        id: 1_000_000,
    };
    let _ = run.steps(&first, &second, &key).await;
    let _ = first.close().await;
    let _ = second.close().await;
    remove_leftovers(config, &key).await;
    Ok(Conformance { library, checks })
}

/// Removes what an adapter's library leaves on the server for `key` once released, through
/// lockbench's own client: the folders a ZooKeeper recipe (kazoo's, Curator's) leaves in the
/// layout of lockbench's own locks, and the namespace's folder when nothing else is in it.
pub async fn remove_leftovers(config: &BackendConfig, key: &str) {
    if let Ok(own) = lockbench_locks::connect(config).await {
        let _ = own.cleanup(key).await;
        let _ = own.cleanup_namespace().await;
        let _ = own.close().await;
    }
}

struct Run<'a> {
    checks: &'a mut Vec<Check>,
    id: u64,
}

/// A failed check ends the run.
struct Stop;

impl Run<'_> {
    fn record(&mut self, name: &'static str, passed: bool, detail: String) -> Result<(), Stop> {
        self.checks.push(Check {
            name,
            passed,
            detail,
        });
        if passed { Ok(()) } else { Err(Stop) }
    }

    /// Sends `request` and checks that the reply is a success stamped between its sending and
    /// its arrival.
    async fn ask(
        &mut self,
        name: &'static str,
        adapter: &AdapterLock,
        request: impl FnOnce(u64) -> Request,
    ) -> Result<Line, Stop> {
        self.id += 1;
        let before = monotonic_ns();
        let reply = adapter
            .request(request(self.id), Duration::from_secs(30))
            .await;
        let after = monotonic_ns();
        let reply = match reply {
            Ok(reply) => reply,
            Err(e) => return Err(self.record(name, false, e.to_string()).unwrap_err()),
        };
        if reply.ok != Some(true) {
            let said = reply.error.unwrap_or_default();
            return Err(self
                .record(name, false, format!("the library failed: {said}"))
                .unwrap_err());
        }
        match reply.t {
            Some(t) if (before..=after).contains(&t) => Ok(reply),
            Some(t) => Err(self
                .record(
                    name,
                    false,
                    format!(
                        "its t ({t}) is not between the request's sending ({before}) and the reply's \
                         arrival ({after}): stamp messages with CLOCK_MONOTONIC in nanoseconds"
                    ),
                )
                .unwrap_err()),
            None => Err(self
                .record(name, false, "the reply carries no t".to_string())
                .unwrap_err()),
        }
    }

    async fn expect(
        &mut self,
        name: &'static str,
        adapter: &AdapterLock,
        request: impl FnOnce(u64) -> Request,
        field: fn(&Line) -> Option<bool>,
        want: bool,
    ) -> Result<Line, Stop> {
        let reply = self.ask(name, adapter, request).await?;
        match field(&reply) {
            Some(got) if got == want => self.record(name, true, format!("answered {got}"))?,
            Some(got) => self.record(name, false, format!("answered {got}, expected {want}"))?,
            None => self.record(name, false, "the reply has no answer".to_string())?,
        }
        Ok(reply)
    }

    /// A library that says it fences hands out a token with each grant, and the next holder's
    /// is larger: the resource refuses the smaller one.
    fn fencing(&mut self, adapter: &AdapterLock, first: &Line, next: &Line) -> Result<(), Stop> {
        if !adapter.description().fencing {
            return Ok(());
        }
        let name = "the next holder's fencing token is larger";
        match (first.fencing_token, next.fencing_token) {
            (Some(a), Some(b)) if b > a => self.record(name, true, format!("{a}, then {b}")),
            (Some(a), Some(b)) => self.record(
                name,
                false,
                format!("{a}, then {b}: a resource checking tokens would refuse the new holder"),
            ),
            _ => self.record(
                name,
                false,
                "described with fencing: true, but a grant carries no fencing_token".to_string(),
            ),
        }
    }

    async fn steps(
        &mut self,
        first: &AdapterLock,
        second: &AdapterLock,
        key: &str,
    ) -> Result<(), Stop> {
        let ttl_ms = TTL.as_millis() as u64;
        let k = || key.to_string();
        let held = |l: &Line| l.held;
        let released = |l: &Line| l.released;
        let acquire = |wait_ms| {
            move |id| Request::Acquire {
                id,
                key: k(),
                ttl_ms,
                wait_ms,
            }
        };
        let granted = self
            .expect("acquire a free key", first, acquire(0), held, true)
            .await?;
        self.expect(
            "a second client is refused",
            second,
            acquire(0),
            held,
            false,
        )
        .await?;
        self.expect(
            "held after acquire",
            first,
            |id| Request::Held { id, key: k() },
            held,
            true,
        )
        .await?;
        if first.description().renewal == Renewal::Manual {
            self.expect(
                "renew a held lock",
                first,
                |id| Request::Renew {
                    id,
                    key: k(),
                    ttl_ms,
                },
                held,
                true,
            )
            .await?;
        }
        self.expect(
            "release",
            first,
            |id| Request::Release { id, key: k() },
            released,
            true,
        )
        .await?;
        self.expect(
            "not held after release",
            first,
            |id| Request::Held { id, key: k() },
            held,
            false,
        )
        .await?;
        let next = self
            .expect(
                "the second client acquires, waiting",
                second,
                acquire(ttl_ms),
                held,
                true,
            )
            .await?;
        self.fencing(second, &granted, &next)?;
        self.expect(
            "release",
            second,
            |id| Request::Release { id, key: k() },
            released,
            true,
        )
        .await?;
        Ok(())
    }
}
