//! The spec's `[runner]` table: the job queue or scheduler a job runs under and the settings of
//! it that act as a lease (BullMQ's `lockDuration`, Celery's `visibility_timeout`, pg-boss's
//! `expireInSeconds`, Quartz's `clusterCheckinInterval`, the clock skew between a cron
//! scheduler's nodes). The table is read as written (so that a spec written back is the same
//! spec) and checked into a typed [`Runner`] when the spec is read: a field of another runner,
//! a zero lease, a cron runner without its skew are one-line errors naming the field.

use std::time::Duration;

use lockbench_core::records::runner::{ImplicitLease, NeverAgain, RunnerKind, RunnerSetting};
use serde::{Deserialize, Serialize};

use crate::duration;

/// BullMQ's defaults (its `WorkerOptions`): a 30 s job lock renewed every 15 s, the stalled-job
/// checker every 30 s, a job moved back to wait once before it is failed.
pub const BULLMQ_LOCK_DURATION: Duration = Duration::from_secs(30);
pub const BULLMQ_STALLED_INTERVAL: Duration = Duration::from_secs(30);
pub const BULLMQ_MAX_STALLED_COUNT: u32 = 1;
/// Celery's Redis transport default: a message not acknowledged within an hour is delivered
/// again; tasks are acknowledged as they start unless `acks_late` is set.
pub const CELERY_VISIBILITY_TIMEOUT: Duration = Duration::from_secs(3600);
/// pg-boss's defaults (version 10): a job active for 15 minutes expires; a failed (or expired)
/// job is retried twice.
pub const PG_BOSS_EXPIRE_IN: Duration = Duration::from_secs(15 * 60);
pub const PG_BOSS_RETRY_LIMIT: u32 = 2;
/// Quartz's default check-in interval (`org.quartz.jobStore.clusterCheckinInterval`).
pub const QUARTZ_CHECKIN_INTERVAL: Duration = Duration::from_millis(7500);
/// The slack Quartz adds to a node's check-in interval before another node declares it failed
/// (`JobStoreSupport.calcFailedIfAfter`).
pub const QUARTZ_FAILED_AFTER: Duration = Duration::from_millis(7500);

/// The `[runner]` table as written.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RunnerTable {
    /// `bullmq`, `celery`, `pg-boss`, `quartz` or `cron`.
    pub kind: Option<RunnerKind>,
    /// BullMQ: how long a job lock lives without a renewal.
    #[serde(default, deserialize_with = "duration::deserialize_option")]
    pub lock_duration: Option<Duration>,
    /// BullMQ: how often the stalled-job checker runs.
    #[serde(default, deserialize_with = "duration::deserialize_option")]
    pub stalled_interval: Option<Duration>,
    /// BullMQ: how often a job may be moved back from stalled before it is failed.
    #[serde(default)]
    pub max_stalled_count: Option<u32>,
    /// Celery (Redis broker): how long an unacknowledged message stays invisible.
    #[serde(default, deserialize_with = "duration::deserialize_option")]
    pub visibility_timeout: Option<Duration>,
    /// Celery: a task acknowledged when it ends instead of when it starts.
    #[serde(default)]
    pub acks_late: Option<bool>,
    /// pg-boss: how long a job may stay active before it expires.
    #[serde(default, deserialize_with = "duration::deserialize_option")]
    pub expire_in: Option<Duration>,
    /// pg-boss: how often a failed or expired job is retried.
    #[serde(default)]
    pub retry_limit: Option<u32>,
    /// Quartz: how often a node checks in with the cluster.
    #[serde(default, deserialize_with = "duration::deserialize_option")]
    pub cluster_checkin_interval: Option<Duration>,
    /// Quartz: the job is re-executed when its node is declared failed.
    #[serde(default)]
    pub requests_recovery: Option<bool>,
    /// cron: how far apart the nodes' clocks may be.
    #[serde(default, deserialize_with = "duration::deserialize_option")]
    pub clock_skew: Option<Duration>,
    /// cron: how long the slot's lock is held at least from the run's start (ShedLock's
    /// `lockAtLeastFor`); none by default.
    #[serde(default, deserialize_with = "duration::deserialize_option")]
    pub hold: Option<Duration>,
    /// cron: whose clock decides the slot, `node` (each node's own) or `database`.
    #[serde(default)]
    pub slot_clock: Option<SlotClock>,
    /// cron: each run writes a completion record for its slot and a run whose slot has one skips.
    #[serde(default)]
    pub completion_record: Option<bool>,
}

/// Whose clock decides which cron slot a run belongs to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SlotClock {
    /// Each node's own: two nodes whose clocks are apart fire the same slot at different times.
    #[default]
    Node,
    /// The database's (`now()` in the lock's row): every node names the slot alike.
    Database,
}

/// A runner, checked, with every default filled in.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Runner {
    Bullmq {
        lock_duration: Duration,
        stalled_interval: Duration,
        max_stalled_count: u32,
    },
    Celery {
        visibility_timeout: Duration,
        acks_late: bool,
    },
    PgBoss {
        expire_in: Duration,
        retry_limit: u32,
    },
    Quartz {
        checkin_interval: Duration,
        requests_recovery: bool,
    },
    Cron {
        clock_skew: Duration,
        hold: Duration,
        slot_clock: SlotClock,
        completion_record: bool,
    },
}

impl Runner {
    /// Which runner.
    pub fn kind(&self) -> RunnerKind {
        match self {
            Runner::Bullmq { .. } => RunnerKind::Bullmq,
            Runner::Celery { .. } => RunnerKind::Celery,
            Runner::PgBoss { .. } => RunnerKind::PgBoss,
            Runner::Quartz { .. } => RunnerKind::Quartz,
            Runner::Cron { .. } => RunnerKind::Cron,
        }
    }

    /// The setting that acts as a lease, and its value.
    pub fn setting(&self) -> (RunnerSetting, Duration) {
        match *self {
            Runner::Bullmq { lock_duration, .. } => (RunnerSetting::LockDuration, lock_duration),
            Runner::Celery {
                visibility_timeout, ..
            } => (RunnerSetting::VisibilityTimeout, visibility_timeout),
            Runner::PgBoss { expire_in, .. } => (RunnerSetting::ExpireIn, expire_in),
            Runner::Quartz {
                checkin_interval, ..
            } => (RunnerSetting::ClusterCheckinInterval, checkin_interval),
            Runner::Cron { hold, .. } => (RunnerSetting::Hold, hold),
        }
    }

    /// The same runner with its lease setting at `value`.
    pub fn with_setting(&self, value: Duration) -> Runner {
        let mut r = *self;
        match &mut r {
            Runner::Bullmq { lock_duration, .. } => *lock_duration = value,
            Runner::Celery {
                visibility_timeout, ..
            } => *visibility_timeout = value,
            Runner::PgBoss { expire_in, .. } => *expire_in = value,
            Runner::Quartz {
                checkin_interval, ..
            } => *checkin_interval = value,
            Runner::Cron { hold, .. } => *hold = value,
        }
        r
    }

    /// The lease the runner holds on a running job without being asked.
    pub fn lease(&self) -> ImplicitLease {
        match *self {
            Runner::Bullmq {
                max_stalled_count: 0,
                ..
            } => ImplicitLease::Never {
                why: NeverAgain::NoStalledRetries,
            },
            // The lock is renewed every half lockDuration (BullMQ's lockRenewTime).
            Runner::Bullmq { lock_duration, .. } => ImplicitLease::Renewed {
                lease: lock_duration,
                every: lock_duration / 2,
            },
            Runner::Celery {
                acks_late: false, ..
            } => ImplicitLease::Never {
                why: NeverAgain::AckedOnReceipt,
            },
            Runner::Celery {
                visibility_timeout, ..
            } => ImplicitLease::Fixed {
                lease: visibility_timeout,
            },
            Runner::PgBoss { retry_limit: 0, .. } => ImplicitLease::Never {
                why: NeverAgain::NoRetries,
            },
            Runner::PgBoss { expire_in, .. } => ImplicitLease::Fixed { lease: expire_in },
            Runner::Quartz {
                requests_recovery: false,
                ..
            } => ImplicitLease::Never {
                why: NeverAgain::NoRecovery,
            },
            Runner::Quartz {
                checkin_interval, ..
            } => ImplicitLease::Renewed {
                lease: checkin_interval + QUARTZ_FAILED_AFTER,
                every: checkin_interval,
            },
            Runner::Cron {
                slot_clock: SlotClock::Database,
                ..
            }
            | Runner::Cron {
                completion_record: true,
                ..
            } => ImplicitLease::Never {
                why: NeverAgain::SharedSlot,
            },
            Runner::Cron {
                clock_skew, hold, ..
            } => ImplicitLease::Slot {
                skew: clock_skew,
                hold,
            },
        }
    }
}

/// The fields each runner takes besides `kind`.
fn fields_of(kind: RunnerKind) -> &'static [&'static str] {
    match kind {
        RunnerKind::Bullmq => &["lock_duration", "stalled_interval", "max_stalled_count"],
        RunnerKind::Celery => &["visibility_timeout", "acks_late"],
        RunnerKind::PgBoss => &["expire_in", "retry_limit"],
        RunnerKind::Quartz => &["cluster_checkin_interval", "requests_recovery"],
        RunnerKind::Cron => &["clock_skew", "hold", "slot_clock", "completion_record"],
    }
}

impl RunnerTable {
    /// The fields given, by name.
    fn given(&self) -> Vec<&'static str> {
        let t = self;
        [
            ("lock_duration", t.lock_duration.is_some()),
            ("stalled_interval", t.stalled_interval.is_some()),
            ("max_stalled_count", t.max_stalled_count.is_some()),
            ("visibility_timeout", t.visibility_timeout.is_some()),
            ("acks_late", t.acks_late.is_some()),
            ("expire_in", t.expire_in.is_some()),
            ("retry_limit", t.retry_limit.is_some()),
            (
                "cluster_checkin_interval",
                t.cluster_checkin_interval.is_some(),
            ),
            ("requests_recovery", t.requests_recovery.is_some()),
            ("clock_skew", t.clock_skew.is_some()),
            ("hold", t.hold.is_some()),
            ("slot_clock", t.slot_clock.is_some()),
            ("completion_record", t.completion_record.is_some()),
        ]
        .into_iter()
        .filter_map(|(name, given)| given.then_some(name))
        .collect()
    }

    /// True when the setting that acts as a lease was left at the runner's default.
    pub fn setting_defaulted(&self) -> bool {
        match self.kind {
            Some(RunnerKind::Bullmq) => self.lock_duration.is_none(),
            Some(RunnerKind::Celery) => self.visibility_timeout.is_none(),
            Some(RunnerKind::PgBoss) => self.expire_in.is_none(),
            Some(RunnerKind::Quartz) => self.cluster_checkin_interval.is_none(),
            Some(RunnerKind::Cron) | None => self.hold.is_none(),
        }
    }

    /// The typed runner, or the field that is wrong (`runner.FIELD`) and what was expected.
    pub fn check(&self) -> Result<Runner, (String, String)> {
        let at = |field: &str| format!("runner.{field}");
        let words: Vec<&str> = RunnerKind::ALL.iter().map(|k| k.word()).collect();
        let Some(kind) = self.kind else {
            return Err((
                at("kind"),
                format!("expected the runner's kind: one of {}", words.join(", ")),
            ));
        };
        let takes = fields_of(kind);
        if let Some(other) = self.given().into_iter().find(|f| !takes.contains(f)) {
            let owner = RunnerKind::ALL
                .into_iter()
                .find(|k| fields_of(*k).contains(&other))
                .map_or("another runner", RunnerKind::word);
            return Err((
                at(other),
                format!(
                    "is a setting of {owner}, not of {}: {} takes {}",
                    kind.word(),
                    kind.word(),
                    takes.join(", ")
                ),
            ));
        }
        let positive = |field: &str, value: Option<Duration>, default: Duration| {
            let v = value.unwrap_or(default);
            if v.is_zero() {
                Err((
                    at(field),
                    "expected a duration above zero, like \"30s\"".to_string(),
                ))
            } else {
                Ok(v)
            }
        };
        Ok(match kind {
            RunnerKind::Bullmq => Runner::Bullmq {
                lock_duration: positive("lock_duration", self.lock_duration, BULLMQ_LOCK_DURATION)?,
                stalled_interval: positive(
                    "stalled_interval",
                    self.stalled_interval,
                    BULLMQ_STALLED_INTERVAL,
                )?,
                max_stalled_count: self.max_stalled_count.unwrap_or(BULLMQ_MAX_STALLED_COUNT),
            },
            RunnerKind::Celery => Runner::Celery {
                visibility_timeout: positive(
                    "visibility_timeout",
                    self.visibility_timeout,
                    CELERY_VISIBILITY_TIMEOUT,
                )?,
                acks_late: self.acks_late.unwrap_or(false),
            },
            RunnerKind::PgBoss => Runner::PgBoss {
                expire_in: positive("expire_in", self.expire_in, PG_BOSS_EXPIRE_IN)?,
                retry_limit: self.retry_limit.unwrap_or(PG_BOSS_RETRY_LIMIT),
            },
            RunnerKind::Quartz => Runner::Quartz {
                checkin_interval: positive(
                    "cluster_checkin_interval",
                    self.cluster_checkin_interval,
                    QUARTZ_CHECKIN_INTERVAL,
                )?,
                requests_recovery: self.requests_recovery.unwrap_or(false),
            },
            RunnerKind::Cron => Runner::Cron {
                clock_skew: self.clock_skew.ok_or_else(|| {
                    (
                        at("clock_skew"),
                        "expected how far apart the scheduler nodes' clocks may be, like \"30s\" (\"0s\" when they share one)"
                            .to_string(),
                    )
                })?,
                hold: self.hold.unwrap_or(Duration::ZERO),
                slot_clock: self.slot_clock.unwrap_or_default(),
                completion_record: self.completion_record.unwrap_or(false),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> RunnerTable {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn defaults_are_each_runners_own_and_name_the_lease_it_amounts_to() {
        let bull = table("kind = \"bullmq\"").check().unwrap();
        assert_eq!(
            bull.lease(),
            ImplicitLease::Renewed {
                lease: Duration::from_secs(30),
                every: Duration::from_secs(15)
            }
        );
        let celery = table("kind = \"celery\"").check().unwrap();
        assert_eq!(
            celery.lease(),
            ImplicitLease::Never {
                why: NeverAgain::AckedOnReceipt
            }
        );
        let late = table("kind = \"celery\"\nacks_late = true")
            .check()
            .unwrap();
        assert_eq!(
            late.lease(),
            ImplicitLease::Fixed {
                lease: Duration::from_secs(3600)
            }
        );
        let quartz = table("kind = \"quartz\"\nrequests_recovery = true")
            .check()
            .unwrap();
        assert_eq!(
            quartz.lease(),
            ImplicitLease::Renewed {
                lease: Duration::from_secs(15),
                every: Duration::from_millis(7500)
            }
        );
        let cron = table("kind = \"cron\"\nclock_skew = \"45s\"\nslot_clock = \"database\"")
            .check()
            .unwrap();
        assert_eq!(
            cron.lease(),
            ImplicitLease::Never {
                why: NeverAgain::SharedSlot
            }
        );
        assert!(table("kind = \"pg-boss\"").setting_defaulted());
    }

    #[test]
    fn a_wrong_field_is_named_with_what_was_expected() {
        let (field, why) = table("kind = \"bullmq\"\nvisibility_timeout = \"1h\"")
            .check()
            .unwrap_err();
        assert_eq!(field, "runner.visibility_timeout");
        assert!(why.contains("a setting of celery, not of bullmq"), "{why}");
        let (field, _) = table("kind = \"cron\"").check().unwrap_err();
        assert_eq!(field, "runner.clock_skew");
        let (field, why) = table("kind = \"pg-boss\"\nexpire_in = \"0s\"")
            .check()
            .unwrap_err();
        assert_eq!(
            (field.as_str(), why.contains("above zero")),
            ("runner.expire_in", true)
        );
        let (field, why) = table("lock_duration = \"30s\"").check().unwrap_err();
        assert_eq!(field, "runner.kind");
        assert!(
            why.contains("bullmq, celery, pg-boss, quartz, cron"),
            "{why}"
        );
    }
}
