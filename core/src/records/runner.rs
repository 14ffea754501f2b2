//! The job's runner and the lease it holds without being asked: a job queue or scheduler whose
//! timeout decides that a slow but living worker is dead and hands its job to another (issue 53).
//! `ttl` prices that timeout as it prices the lock's TTL ([`RunnerPricing`], in `results.json`).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::chance::Chance;
use super::seconds;

/// The queue or scheduler a job runs under (the spec's `[runner] kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RunnerKind {
    /// BullMQ (Node, Redis): a job lock renewed from the worker's event loop.
    Bullmq,
    /// Celery with a Redis broker: a message redelivered after `visibility_timeout`.
    Celery,
    /// pg-boss (Node, Postgres): a job active past `expire_in` failed and retried.
    PgBoss,
    /// Quartz clustered on a JDBC store: a node whose check-in is late declared dead.
    Quartz,
    /// A cron-style scheduler on several nodes: the same slot fired by each, their clocks apart.
    Cron,
}

impl RunnerKind {
    /// Every kind, in the order the spec's documentation lists them.
    pub const ALL: [RunnerKind; 5] = [
        RunnerKind::Bullmq,
        RunnerKind::Celery,
        RunnerKind::PgBoss,
        RunnerKind::Quartz,
        RunnerKind::Cron,
    ];

    /// The word in a spec: `bullmq`, `pg-boss`.
    pub fn word(self) -> &'static str {
        match self {
            RunnerKind::Bullmq => "bullmq",
            RunnerKind::Celery => "celery",
            RunnerKind::PgBoss => "pg-boss",
            RunnerKind::Quartz => "quartz",
            RunnerKind::Cron => "cron",
        }
    }

    /// The name a reader knows it by: "BullMQ", "pg-boss".
    pub fn name(self) -> &'static str {
        match self {
            RunnerKind::Bullmq => "BullMQ",
            RunnerKind::Celery => "Celery",
            RunnerKind::PgBoss => "pg-boss",
            RunnerKind::Quartz => "Quartz",
            RunnerKind::Cron => "a cron scheduler on several nodes",
        }
    }
}

/// The runner's setting that acts as a lease, as the spec and the runner's own documentation
/// name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunnerSetting {
    /// BullMQ's `lockDuration`.
    LockDuration,
    /// Celery's broker transport option `visibility_timeout`.
    VisibilityTimeout,
    /// pg-boss's `expireInSeconds`.
    ExpireIn,
    /// Quartz's `org.quartz.jobStore.clusterCheckinInterval`.
    ClusterCheckinInterval,
    /// A `lockAtLeastFor`-style hold of the slot's lock after the run ends.
    Hold,
}

impl RunnerSetting {
    /// The field in the spec's `[runner]` table.
    pub fn field(self) -> &'static str {
        match self {
            RunnerSetting::LockDuration => "lock_duration",
            RunnerSetting::VisibilityTimeout => "visibility_timeout",
            RunnerSetting::ExpireIn => "expire_in",
            RunnerSetting::ClusterCheckinInterval => "cluster_checkin_interval",
            RunnerSetting::Hold => "hold",
        }
    }

    /// The name in the runner's own configuration.
    pub fn native(self) -> &'static str {
        match self {
            RunnerSetting::LockDuration => "lockDuration",
            RunnerSetting::VisibilityTimeout => "visibility_timeout",
            RunnerSetting::ExpireIn => "expireInSeconds",
            RunnerSetting::ClusterCheckinInterval => "clusterCheckinInterval",
            RunnerSetting::Hold => "lockAtLeastFor",
        }
    }
}

impl RunnerSetting {
    /// `value` as the runner's own configuration takes it: `lockDuration: 68000` (BullMQ and
    /// Quartz count milliseconds), `visibility_timeout = 5400` (Celery and pg-boss, seconds),
    /// `lockAtLeastFor = "40s"` (ShedLock).
    pub fn native_value(self, value: Duration) -> String {
        let ms = value.as_millis();
        let s = value.as_secs_f64().ceil() as u64;
        match self {
            RunnerSetting::LockDuration => format!("lockDuration: {ms}"),
            RunnerSetting::VisibilityTimeout => format!("visibility_timeout = {s}"),
            RunnerSetting::ExpireIn => format!("expireInSeconds: {s}"),
            RunnerSetting::ClusterCheckinInterval => {
                format!("org.quartz.jobStore.clusterCheckinInterval = {ms}")
            }
            RunnerSetting::Hold => format!("lockAtLeastFor = \"{s}s\""),
        }
    }
}

/// A duration as a spec writes it: `"68s"`, or `"7500ms"` when it is not whole seconds.
pub fn spec_duration(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}

/// How the runner's timeout starts a job a second time.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum ImplicitLease {
    /// Renewed every `every` while the worker's process runs; a stall (a pause, a blocked event
    /// loop) that outlasts what is left of it lets the runner hand the job on.
    Renewed {
        #[serde(rename = "lease_s", with = "seconds")]
        lease: Duration,
        #[serde(rename = "every_s", with = "seconds")]
        every: Duration,
    },
    /// Counted from the job's start and never renewed: a run longer than it is started again.
    Fixed {
        #[serde(rename = "lease_s", with = "seconds")]
        lease: Duration,
    },
    /// The same slot fired by another node `skew` later; the slot's lock held at least `hold`
    /// after the run started: a run that ends (and releases) before the other node fires runs
    /// twice in sequence.
    Slot {
        #[serde(rename = "skew_s", with = "seconds")]
        skew: Duration,
        #[serde(rename = "hold_s", with = "seconds")]
        hold: Duration,
    },
    /// The runner does not start a living job again, for the reason given.
    Never { why: NeverAgain },
}

/// Why a runner's settings never start a living job a second time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NeverAgain {
    /// Celery without `acks_late`: the message is acknowledged as the task starts, so a slow
    /// task is not delivered again (a worker that dies loses it instead).
    AckedOnReceipt,
    /// pg-boss with `retry_limit = 0`: an expired job is failed, not retried.
    NoRetries,
    /// Quartz without `requests_recovery`: a dead node's job waits for its next fire time.
    NoRecovery,
    /// BullMQ with `max_stalled_count = 0`: a stalled job is failed, not moved back.
    NoStalledRetries,
    /// A cron slot decided on the database's clock, or marked done by a completion record: every
    /// node sees the same slot as taken.
    SharedSlot,
}

impl NeverAgain {
    /// Why, in a sentence's words.
    pub fn said(self) -> &'static str {
        match self {
            NeverAgain::AckedOnReceipt => {
                "without acks_late the message is acknowledged as the task starts: a slow task is not delivered again (a worker that dies loses it instead)"
            }
            NeverAgain::NoRetries => {
                "with retry_limit = 0 an expired job is failed, not retried (the run is lost instead)"
            }
            NeverAgain::NoRecovery => {
                "without requests_recovery a dead node's job is not run again before its next fire time"
            }
            NeverAgain::NoStalledRetries => {
                "with max_stalled_count = 0 a stalled job is failed, not moved back to wait (the run is lost instead)"
            }
            NeverAgain::SharedSlot => {
                "every node decides the slot on the same clock or reads its completion record: a slot already run is not run again"
            }
        }
    }
}

/// What `ttl` found for the job's runner: the chance per run that its setting starts the job a
/// second time while (or after) the first runs, and the setting that keeps it within the yearly
/// budget.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunnerPricing {
    /// The runner.
    pub kind: RunnerKind,
    /// Its setting that acts as a lease.
    pub setting: RunnerSetting,
    /// That setting as the spec gives it (or the runner's default).
    #[serde(rename = "value_s", with = "seconds")]
    pub value: Duration,
    /// True when the spec left it at the runner's default.
    pub default: bool,
    /// The lease it amounts to.
    pub lease: ImplicitLease,
    /// The chance per run that the job is started twice, in the profile where it is highest.
    /// `None` when the runner never starts a living job again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chance: Option<Chance>,
    /// That profile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// The setting recommended: the shortest (from the one in use, lengthened by half at a time,
    /// or the TTL's own sizing) whose chance stays within the yearly budget's chance per run;
    /// the one in use when it already does.
    #[serde(rename = "recommended_s", with = "seconds")]
    pub recommended: Duration,
    /// Its chance per run; `None` as for `chance`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recommended_chance: Option<Chance>,
    /// True when no setting up to the longest considered keeps the chance within the budget (a
    /// slot skew as long as the schedule's period).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unreachable: bool,
}
