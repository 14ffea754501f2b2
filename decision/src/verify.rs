//! What the record says of each action: what to change, in words, and how to verify it done (a
//! command, a query or a metric that proves it), generated from the action's kind and the
//! decision it belongs to.

use lockbench_core::BackendKind;
use lockbench_workloads::Target;

use crate::action::{Action, Change};
use crate::mechanism::MechanismKind;
use crate::record::Decision;

impl Action {
    /// What to change, in words.
    pub fn what(&self) -> String {
        match &self.change {
            Change::Add { mechanism } => crate::mechanism::Mechanism {
                kind: mechanism.clone(),
                step: self.step.clone(),
                in_place: false,
                measured: None,
            }
            .imperative(),
            Change::ChooseClient {
                backend,
                candidates,
            } => format!(
                "lock with a library that locks on {backend}{}",
                match candidates.as_slice() {
                    [] => String::new(),
                    [one] => format!(" ({})", one.library()),
                    [first, ..] => format!(" (such as {})", first.library()),
                }
            ),
            Change::MeasureClient { argument, .. } => {
                format!("measure `{argument}` in the fault lab")
            }
            Change::DeadlineOrFence => "bound each write by a deadline of the job's own within the lease, or fence the resource".into(),
            Change::FenceResource => {
                "make the resource refuse a write whose fencing token is below the highest it has seen".into()
            }
            Change::ShortenRecovery => {
                "shorten the lease or the keepalive, or raise `crash_recovery` with the job's owners".into()
            }
        }
    }

    /// How to verify it done, for the decision `d`: a command, a query or a metric.
    pub fn verify(&self, d: &Decision) -> String {
        let step = self.step.as_deref().unwrap_or("the step");
        let backend = d.backend.map_or("BACKEND", BackendKind::name);
        let spec = &d.spec;
        match &self.change {
            Change::Add { mechanism } => added(mechanism, step, backend, &d.job),
            Change::ChooseClient { candidates, .. } => {
                let c = candidates.first().map_or("CLIENT", |c| c.name());
                format!(
                    "`lockbench clients check {c}`, then `lockbench faults --client {c} --backend {backend}`: no stale write the fence lets through"
                )
            }
            Change::MeasureClient { argument, backend } => format!(
                "`lockbench faults --client {argument} --backend {backend}`: its cells cited in the record"
            ),
            Change::DeadlineOrFence => format!(
                "`lockbench faults --backend {backend} --scenario pause/heartbeat-short`: the holder stops writing before the next grant"
            ),
            Change::FenceResource => {
                "a write carrying a token below the highest the resource has seen is refused (a test against the resource)".into()
            }
            Change::ShortenRecovery => format!(
                "`lockbench decide {spec} --results DIR`: crash recovery within the budget"
            ),
        }
    }
}

/// How to verify a mechanism added.
fn added(m: &MechanismKind, step: &str, backend: &str, job: &str) -> String {
    match m {
        MechanismKind::OwnGuard {
            target: Target::Api,
        } => format!("call `{step}` twice with one key in staging: the second is refused"),
        MechanismKind::OwnGuard { .. } | MechanismKind::KeepGuard { .. } => {
            format!("run `{step}` twice for one item in staging: the second does nothing")
        }
        MechanismKind::RerunGuard {
            across_databases: Some(_),
            ..
        } => format!(
            "run `{step}` twice for one operation id in each database: the second fails (unique_violation)"
        ),
        MechanismKind::RerunGuard { .. } => format!(
            "run `{step}` twice for one item: the second fails on its guard"
        ),
        MechanismKind::Heartbeat { session: true, .. } => format!(
            "`lockbench faults --backend {backend} --scenario partition/heartbeat`: no stale write"
        ),
        MechanismKind::Heartbeat { .. } => format!(
            "`lock_last_renewal_timestamp_seconds{{workload=\"{job}\"}}` advances every renewal interval while a run holds the lock"
        ),
        MechanismKind::OwnConnection => "`SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()` on a returned connection: 0".into(),
        MechanismKind::Keepalive { idle_s, .. } => {
            format!("`SHOW tcp_keepalives_idle` on the lock's connection: {idle_s}")
        }
        MechanismKind::TableLocksFirst { lock_timeout_s, .. } => format!(
            "`SHOW lock_timeout` in the job's transaction: {}s; behind an open transaction in staging, no query waits on the table",
            lock_timeout_s.round() as u64
        ),
        MechanismKind::ValidityCheck => format!(
            "`lockbench faults --backend {backend} --scenario latency/expired-at-grant-checked`: no overlap"
        ),
        MechanismKind::RedisPersistence { always, .. } => format!(
            "`redis-cli CONFIG GET appendfsync`: {}",
            if *always { "always" } else { "everysec" }
        ),
        MechanismKind::CompletionRecord => {
            "run one window twice in staging: the second exits without work".into()
        }
        MechanismKind::TokenRelease { .. } => format!(
            "`lockbench faults --backend {backend} --scenario release/after-expiry`: the next holder keeps its lock"
        ),
        MechanismKind::DieWithHolder => {
            "kill -9 the holder in staging: none of the job's processes keeps working".into()
        }
        MechanismKind::FencingToken { .. } => {
            "a write carrying a token below the highest the resource has seen is refused".into()
        }
        MechanismKind::WritesInTransaction { .. } => {
            "kill the job mid-run in staging: none of its writes remain".into()
        }
    }
}
