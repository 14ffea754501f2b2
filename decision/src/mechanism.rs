//! What the design needs besides the lock, as a typed kind, and the words the record says of each
//! kind. The rules (`design::mechanisms`) pick the kinds from the answers and the model; every
//! sentence about a mechanism is generated here from its kind, so a job is never told of a token,
//! a renewal or a pooler its model does not have.

use lockbench_core::{BackendKind, Client, format_readable_s};
use lockbench_workloads::{Guard, Target};
use serde::{Deserialize, Serialize};

/// A mechanism the design needs besides the lock.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mechanism {
    /// What it is.
    pub kind: MechanismKind,
    /// The step it applies to, if one.
    pub step: Option<String>,
    /// True when the answers say it is there already; false when it must be added.
    pub in_place: bool,
    /// The measurement that shows what it prevents; `None` when the evidence holds none.
    pub measured: Option<String>,
}

/// Which mechanism, with what its sentences need to be true of the job.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum MechanismKind {
    /// A step's own guard, which keeps it single whatever the lock.
    KeepGuard {
        /// The guard.
        guard: Guard,
        /// What the step calls.
        target: Target,
    },
    /// A guard of its own on a step outside the database: no lock keeps it single.
    OwnGuard {
        /// What the step calls (an API call needs an idempotency key).
        target: Target,
    },
    /// The resource checks the fencing token on the writes named (every write when empty).
    FencingToken {
        /// The backend whose token it is.
        backend: BackendKind,
        /// The steps whose writes carry it; empty: every write.
        steps: Vec<String>,
    },
    /// The job's writes commit or roll back with the lock's transaction.
    WritesInTransaction {
        /// The unguarded steps it covers.
        steps: Vec<String>,
    },
    /// A guard against a rerun after a crash, on a database step no transaction covers.
    RerunGuard {
        /// The databases a fence would have to cover, when more than one and a fence is relied
        /// on: the guard must then be per operation in each.
        across_databases: Option<u32>,
        /// The library the job locks with, when it hands out no token for the fence to check.
        tokenless_client: Option<Client>,
        /// True when a fence refuses a stale holder's writes on this step.
        fenced: bool,
    },
    /// Renewal on a heartbeat, and the deadline at which a holder that cannot renew stops.
    Heartbeat {
        /// True for a ZooKeeper session: the client renews it by pinging, on its own.
        session: bool,
        /// Renew this often, seconds; `None` when `ttl` did not measure it.
        renew_every_s: Option<f64>,
        /// Stop work when no renewal succeeded for this long, seconds; `None` as above.
        give_up_after_s: Option<f64>,
    },
    /// A session lock on a connection of the job's own, unlocked before it goes back to a pool.
    OwnConnection,
    /// TCP keepalive on the job's own Postgres connection, never server-wide.
    Keepalive {
        /// `tcp_keepalives_idle`, seconds.
        idle_s: u64,
        /// `tcp_keepalives_interval`, seconds.
        interval_s: u64,
        /// `tcp_keepalives_count`.
        count: u32,
        /// The crash-recovery budget it fits inside, seconds; `None` when not answered.
        budget_s: Option<f64>,
    },
    /// Take the altered tables' locks first, each wait bounded by `lock_timeout`, and retry the
    /// transaction (nothing done yet) until granted: the wait the runtime model counts, without
    /// every query on the table queueing behind it.
    TableLocksFirst {
        /// `lock_timeout`, seconds.
        lock_timeout_s: f64,
        /// The steps that alter a table.
        steps: Vec<String>,
        /// How long to keep retrying before the run gives up and alerts, seconds (the
        /// crash-recovery budget); `None` when not answered.
        retry_for_s: Option<f64>,
        /// The job's P99.9 runtime as `ttl` simulated it, waits included, seconds: how long the
        /// table stays locked once granted.
        held_p999_s: Option<f64>,
    },
    /// Check the validity left after acquiring, before the critical section (Redis, Redlock).
    ValidityCheck,
    /// Redis persistence that keeps an acknowledged lock through a restart.
    RedisPersistence {
        /// `appendfsync always` (no acknowledged lock lost) rather than `everysec`.
        always: bool,
        /// The resource checks a fencing token (whose counter a lost key takes back).
        fenced: bool,
    },
    /// A completion record per run window, checked once the lock is granted.
    CompletionRecord,
    /// Release (and renew, where the lock is renewed by the client) only by the holder's token.
    TokenRelease {
        /// The backend: how its release checks the token.
        backend: BackendKind,
        /// True when the holder also renews by token (a heartbeat on a key or a lease).
        renew: bool,
    },
    /// Every process of the job dies with the lock holder.
    DieWithHolder,
}

impl MechanismKind {
    /// True when the mechanism carries or checks a fencing token or a lock token.
    pub fn uses_token(&self) -> bool {
        matches!(
            self,
            MechanismKind::FencingToken { .. } | MechanismKind::TokenRelease { .. }
        )
    }

    /// True when the mechanism renews the lock.
    pub fn renews(&self) -> bool {
        matches!(
            self,
            MechanismKind::Heartbeat { .. } | MechanismKind::TokenRelease { renew: true, .. }
        )
    }
}

impl Mechanism {
    /// What it is, in a few words.
    pub fn name(&self) -> String {
        match &self.kind {
            MechanismKind::KeepGuard { guard, .. } => format!("keep the {}", guard.name()),
            MechanismKind::OwnGuard {
                target: Target::Api,
            } => "an idempotency key".into(),
            MechanismKind::OwnGuard { .. } => "a guard of its own".into(),
            MechanismKind::FencingToken { .. } => "the fencing token checked by the resource".into(),
            MechanismKind::WritesInTransaction { .. } => {
                "every write in the locking transaction".into()
            }
            MechanismKind::RerunGuard {
                across_databases: Some(_),
                ..
            } => "a guard per operation in each database (a unique constraint on the operation's id), or a resumable checkpoint".into(),
            MechanismKind::RerunGuard { .. } => "a guard of its own (a unique constraint, a conditional update or a version check), or a resumable checkpoint".into(),
            MechanismKind::Heartbeat {
                session: true,
                give_up_after_s,
                ..
            } => format!(
                "stop work when the client reports its session suspended, at the latest at the give-up deadline ({})",
                give_up_after_s.map_or("two thirds of the session timeout".to_string(), format_readable_s)
            ),
            MechanismKind::Heartbeat {
                renew_every_s,
                give_up_after_s,
                ..
            } => format!(
                "renew every {}; stop work at the give-up deadline ({})",
                renew_every_s.map_or("third of the lease".to_string(), format_readable_s),
                give_up_after_s.map_or("two thirds of the lease".to_string(), format_readable_s)
            ),
            MechanismKind::OwnConnection => "a connection of its own for the whole job; pg_advisory_unlock_all() (or DISCARD ALL) before it goes back to a pool".into(),
            MechanismKind::Keepalive {
                idle_s,
                interval_s,
                count,
                ..
            } => format!(
                "TCP keepalive on the job's own connection, not server-wide: options='-c tcp_keepalives_idle={idle_s} -c tcp_keepalives_interval={interval_s} -c tcp_keepalives_count={count} -c client_connection_check_interval=10s'"
            ),
            MechanismKind::TableLocksFirst { lock_timeout_s, .. } => format!(
                "take the table's lock first with SET LOCAL lock_timeout = '{}', and retry the transaction with backoff until it is granted",
                whole_seconds(*lock_timeout_s)
            ),
            MechanismKind::ValidityCheck => {
                "check the validity left before the critical section".into()
            }
            MechanismKind::RedisPersistence { always: true, .. } => {
                "Redis persistence: appendonly yes, appendfsync always".into()
            }
            MechanismKind::RedisPersistence { always: false, .. } => {
                "Redis persistence: appendonly yes, appendfsync everysec".into()
            }
            MechanismKind::CompletionRecord => {
                "a completion record per run window, checked once the lock is granted".into()
            }
            MechanismKind::TokenRelease {
                backend: BackendKind::Zookeeper,
                ..
            } => "release only the holder's own lock node".into(),
            MechanismKind::TokenRelease { renew: true, .. } => {
                "release and renew the lock only by its token".into()
            }
            MechanismKind::TokenRelease { renew: false, .. } => {
                "release the lock only by its token".into()
            }
            MechanismKind::DieWithHolder => "the job's processes die with the lock holder".into(),
        }
    }

    /// What to do to put it in place, as an action says it.
    pub fn imperative(&self) -> String {
        let step = self.step.as_deref().unwrap_or("the step");
        match &self.kind {
            MechanismKind::OwnGuard { .. } => format!("give `{step}` {}", self.name()),
            MechanismKind::RerunGuard {
                across_databases: Some(_),
                ..
            } => format!("give `{step}` a guard per operation in each database, or a resumable checkpoint"),
            MechanismKind::RerunGuard { .. } => {
                format!("give `{step}` a guard of its own, or a resumable checkpoint")
            }
            MechanismKind::KeepGuard { .. }
            | MechanismKind::TableLocksFirst { .. }
            | MechanismKind::ValidityCheck => self.name(),
            MechanismKind::FencingToken { .. } => {
                "check the fencing token at the resource".into()
            }
            MechanismKind::WritesInTransaction { .. } => {
                "make every write part of the locking transaction".into()
            }
            MechanismKind::Heartbeat {
                session: false,
                renew_every_s,
                give_up_after_s,
            } => format!(
                "renew the lease every {} and stop work at the give-up deadline ({})",
                renew_every_s.map_or("third of the lease".to_string(), format_readable_s),
                give_up_after_s.map_or("two thirds of the lease".to_string(), format_readable_s)
            ),
            MechanismKind::Heartbeat { .. } => self.name(),
            MechanismKind::OwnConnection => "hold the lock on a connection of its own; pg_advisory_unlock_all() before it returns to a pool".into(),
            MechanismKind::Keepalive {
                idle_s,
                interval_s,
                count,
                ..
            } => format!(
                "set TCP keepalive on the lock's connection, not server-wide (idle {idle_s} s, {count} probes {interval_s} s apart)"
            ),
            MechanismKind::RedisPersistence { .. } => format!("set {}", self.name()),
            MechanismKind::CompletionRecord => "keep a completion record per run window, and check it once the lock is granted".into(),
            MechanismKind::TokenRelease { .. } => self.name(),
            MechanismKind::DieWithHolder => "make the job's processes die with the lock holder".into(),
        }
    }

    /// Why it is needed, for this job.
    pub fn reason(&self) -> String {
        let step = self.step.as_deref().unwrap_or("the step");
        match &self.kind {
            MechanismKind::KeepGuard { target, .. } => format!(
                "it, not the lock, keeps `{step}` single: a second run's {} is refused",
                if *target == Target::Api { "call" } else { "write" }
            ),
            MechanismKind::OwnGuard { .. } => format!(
                "no lock keeps `{step}` single: a holder that lost its lock still makes the call, and nothing outside the database checks a fencing token"
            ),
            MechanismKind::FencingToken { backend, steps } => format!(
                "{} carries the {} ({backend}); the resource refuses one below the highest it has seen, so a holder that lost its lock cannot write",
                if steps.is_empty() {
                    "every write".to_string()
                } else {
                    format!("every write of {}", code_list(steps))
                },
                backend.fencing().describe(),
            ),
            MechanismKind::WritesInTransaction { steps } => format!(
                "{} commit or roll back with the lock: a lost lock cannot leave a stale write, and a crash rolls them back, so a rerun starts clean",
                code_list(steps)
            ),
            MechanismKind::RerunGuard {
                across_databases,
                tokenless_client,
                fenced,
            } => {
                let mut why = format!(
                    "a holder that crashes after `{step}` leaves it done, and the next holder, correctly alone, runs it again: no lock prevents a rerun"
                );
                if let Some(n) = across_databases {
                    why.push_str(&format!(" And the fence protects only a database that has already seen the newer token: with {n} databases a stale holder's write lands on those the new holder has not written to yet"));
                } else if let Some(client) = tokenless_client {
                    why.push_str(&format!(" And {} gives no fencing token, so the resource's fence has nothing to check: nothing else stops a holder that lost its lock from writing it while the next holder does", client.library()));
                } else if !fenced {
                    why.push_str(" And nothing else stops a holder that lost its lock from writing it while the next holder does");
                }
                why
            }
            MechanismKind::Heartbeat { session: true, .. } => "a live job's pings keep its session, and with it the lock; a holder cut off from the ensemble loses its session at the timeout, so it must stop before then".into(),
            MechanismKind::Heartbeat { .. } => "a live job that outlasts its lease keeps it, and a holder that cannot renew stops before its lease can pass to another worker".into(),
            MechanismKind::OwnConnection => "the lock belongs to the session and is re-entrant: a pool that lends the session while the job runs lends the lock".into(),
            MechanismKind::Keepalive {
                idle_s,
                interval_s,
                count,
                budget_s,
            } => format!(
                "a holder whose host vanished keeps its session, and the lock, until the server's TCP gives up: about 2 h 11 min with Linux's defaults (7,200 s idle, then 9 probes 75 s apart); these end it within {}{}, and the check interval ends a query still running for a client that is gone",
                format_readable_s((idle_s + interval_s * u64::from(*count)) as f64),
                budget_s
                    .map(|b| format!(", inside the {} allowed", format_readable_s(b)))
                    .unwrap_or_default()
            ),
            MechanismKind::TableLocksFirst {
                lock_timeout_s,
                steps,
                retry_for_s,
                held_p999_s,
            } => format!(
                "{} alter{} a table: the ALTER needs ACCESS EXCLUSIVE and waits behind any transaction open on the table, and every later query on the table queues behind that wait. Taking the lock first, each attempt bounded by {}, fails fast and rolls back with nothing done; retried with backoff{}, the run still waits as long as the spec's runtime model counts, without blocking the table meanwhile. Once granted, ACCESS EXCLUSIVE is held until COMMIT: every read and write of the table waits for the rest of the run{}",
                code_list(steps),
                if steps.len() == 1 { "s" } else { "" },
                format_readable_s(*lock_timeout_s),
                retry_for_s
                    .map(|r| format!(" for up to the {} the job allows, then alert", format_readable_s(r)))
                    .unwrap_or_default(),
                held_p999_s
                    .map(|p| format!(" (P99.9 {}, simulated)", format_readable_s(p)))
                    .unwrap_or_default()
            ),
            MechanismKind::ValidityCheck => {
                "a slow acquisition can return with its key about to expire, or expired".into()
            }
            MechanismKind::RedisPersistence { always, fenced } => format!(
                "without persistence, or with RDB snapshots only, a restart forgets the key and grants the lock again{}; {}",
                if *fenced {
                    ", and the fencing counter restarts from zero, so the resource refuses the new holder's legitimate writes until the counter passes the highest token it saw"
                } else {
                    ""
                },
                if *always {
                    "appendfsync always writes every acquisition to disk before the reply: no acknowledged lock is lost (data-loss window: none), at one fsync per acquisition"
                } else {
                    "appendfsync everysec keeps a lock through a process crash and loses at most the last second of acquisitions on an OS crash or power loss (data-loss window: 1 s), which a job whose double run is absorbed can carry"
                }
            ),
            MechanismKind::CompletionRecord => "a retry granted after the holder finished would run the job again: it must find the window done and stop".into(),
            MechanismKind::TokenRelease { backend, renew } => format!(
                "a holder whose lock passed on must not free{} the next holder's: {}",
                if *renew { " or extend" } else { "" },
                release_by_token(*backend)
            ),
            MechanismKind::DieWithHolder => {
                "a crash frees the lock; work that outlives the process holding it runs unlocked"
                    .into()
            }
        }
    }
}

/// How `backend` releases only the holder's own lock.
fn release_by_token(backend: BackendKind) -> &'static str {
    match backend {
        BackendKind::Redis | BackendKind::Redlock => {
            "compare the key's value with the holder's token and delete in one script"
        }
        BackendKind::Etcd => "revoke the holder's own lease",
        BackendKind::Zookeeper => "delete the holder's own sequential node",
        BackendKind::PgSession | BackendKind::PgXact | BackendKind::Memory => {
            "unlock from the holder's own session"
        }
    }
}

/// A duration as Postgres takes it in a setting: whole seconds.
fn whole_seconds(s: f64) -> String {
    format!("{}s", s.round() as u64)
}

/// "`a`", "`a` and `b`", "`a`, `b` and `c`".
pub(crate) fn code_list(steps: &[String]) -> String {
    crate::prose::list(steps.iter().map(|s| format!("`{s}`")).collect())
}
