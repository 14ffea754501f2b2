//! The short forms the one-page record uses: a residual risk in a few words, from its kind and
//! the decision it belongs to. The full sentences are the rules' (`design::residual`).

use lockbench_core::{BackendKind, format_readable_s};

use crate::record::{Decision, PolicyKind, Residual, RiskKind};

impl Decision {
    /// The actions it assumes done, as `decide` takes them: "--assume guard:a --assume guard:b".
    pub fn assumed_flags(&self) -> String {
        self.assumed
            .iter()
            .map(|a| format!("--assume {}", a.argument()))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

impl Residual {
    /// The risk in a few words: "a rerun repeats `debit_source`".
    pub fn short(&self, d: &Decision) -> String {
        let step = self.step.as_deref().unwrap_or("a step");
        match self.kind {
            RiskKind::Unguarded => format!("a rerun repeats `{step}`"),
            RiskKind::LeaseLost => "a stall longer than the lease lets a second worker in".into(),
            RiskKind::Backend => match d.backend {
                Some(BackendKind::Redis) => {
                    "a failover or restart that loses the key grants it twice".into()
                }
                Some(BackendKind::PgXact) => "the transaction holds its locks until COMMIT".into(),
                Some(BackendKind::PgSession) => {
                    "a holder whose connection died works until its next statement".into()
                }
                Some(b @ (BackendKind::Etcd | BackendKind::Zookeeper)) => {
                    format!("no lock while {b} has no quorum")
                }
                Some(BackendKind::Redlock | BackendKind::Memory) | None => self.risk.clone(),
            },
            RiskKind::LibraryLate => "the lock library tells of a lost lock late".into(),
            RiskKind::LibraryNotMeasured => "the lock library is not measured".into(),
            RiskKind::ClientMismatch => {
                "the lock library does not lock on the chosen backend".into()
            }
            RiskKind::RecoveryExceeded => format!(
                "a crash blocks the job up to {}",
                d.crash_recovery
                    .chosen_s
                    .map_or("-".to_string(), format_readable_s)
            ),
            RiskKind::Policy => match d.failure_policy.kind {
                PolicyKind::SkipAndAlert => "a skipped run waits for a person".into(),
                PolicyKind::RetryThenAlert => {
                    "a run blocked past the budget waits for a person".into()
                }
                PolicyKind::Queue => "a queued run runs late".into(),
                PolicyKind::RunUnlocked => "runs during an outage go unlocked".into(),
            },
        }
    }
}
