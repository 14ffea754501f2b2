//! The alerts a decided lock model needs, each with its timing checked against what it guards.
//!
//! A page guards a deadline: the TTL or lease after which the lock passes on, or the
//! crash-recovery budget after which the job has been blocked longer than its owners allow. Its
//! latest firing time after the signal crosses its threshold is threshold + `for` + one scrape
//! interval + one rule evaluation interval; with the time a person needs to act, that must come
//! before the deadline, and the threshold must stay above a normal run at today's volume. Where
//! no threshold can do both, there is no page on that deadline and the plan says why
//! ([`NoPage`]), alerting on a leading signal instead. A job whose double run does no lasting harm
//! gets tickets, never pages. The rules are typed ([`Alert`]); their PromQL is generated from the
//! [`Signal`], and `lockbench report` writes them as a rules file with `promtool` tests.

use std::time::Duration;

use lockbench_core::records::ttl::{ProfileRuntime, TtlRecommendation};
use lockbench_core::{format_count, format_readable};
use serde::{Deserialize, Serialize};

use crate::record::{Decision, ModelKind, PolicyKind};

/// What the timing check assumes of the monitoring that runs the rules.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AlertSettings {
    /// How often Prometheus scrapes the job's metrics.
    #[serde(
        with = "lockbench_core::records::seconds",
        rename = "scrape_interval_s"
    )]
    pub scrape: Duration,
    /// How often it evaluates the rules.
    #[serde(
        with = "lockbench_core::records::seconds",
        rename = "evaluation_interval_s"
    )]
    pub evaluation: Duration,
    /// How long the person paged needs to act once paged.
    #[serde(with = "lockbench_core::records::seconds", rename = "time_to_act_s")]
    pub act: Duration,
}

impl Default for AlertSettings {
    /// Prometheus's common 15 s scrape and evaluation, and five minutes to act: to acknowledge a
    /// page at night and reach the job's console.
    fn default() -> Self {
        AlertSettings {
            scrape: Duration::from_secs(15),
            evaluation: Duration::from_secs(15),
            act: Duration::from_secs(300),
        }
    }
}

impl AlertSettings {
    /// What a rule adds to its threshold before it fires, at the latest: one scrape and one
    /// evaluation besides its `for`.
    pub fn lag(&self, for_: Duration) -> Duration {
        for_ + self.scrape + self.evaluation
    }
}

/// Who an alert reaches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Severity {
    /// A person, now.
    Page,
    /// A queue someone reads in working hours.
    Ticket,
}

impl Severity {
    /// Its `severity` label.
    pub fn label(self) -> &'static str {
        match self {
            Severity::Page => "page",
            Severity::Ticket => "ticket",
        }
    }
}

/// What a rule watches: the metric the job's lock wrapper exports, and how.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Signal {
    /// `lock_hold_seconds`: time since the current holder acquired the lock.
    Hold,
    /// Time since the holder's last successful renewal, while it holds the lock.
    SinceRenewal,
    /// `lock_renewal_failures_total` rose: a renewal failed.
    RenewalFailed,
    /// `lock_gave_up_total` rose: a holder stopped at its give-up deadline.
    GaveUp,
    /// `lock_release_refused_total` rose: a release found the lock no longer the holder's, so
    /// its lease had passed on while it worked.
    LostLease,
    /// `lock_acquire_total{outcome="error"}` above 1 % of attempts: the backend failing, not a
    /// busy lock (`outcome="busy"` is expected while another worker holds it).
    AcquireErrors,
    /// `lock_wait_gave_up_total` rose: a worker gave up waiting for the lock.
    WaitGaveUp,
}

impl Signal {
    /// True for a signal that grows with time during a run (a threshold in seconds); false for
    /// an event counted when it happens.
    pub fn is_timer(self) -> bool {
        matches!(self, Signal::Hold | Signal::SinceRenewal)
    }
}

/// What an alert is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AlertKind {
    /// Page: a fixed TTL about to pass the lock on.
    NearTtl,
    /// Page: the job blocked near its crash-recovery budget by a holder that does not finish.
    NearBudget,
    /// Page: a lease about to pass on after renewals stopped.
    RenewalStale,
    /// Ticket: hold time past every simulated run of today (or past 80 % of a fixed TTL).
    SlowRun,
    /// Ticket: a renewal failed.
    RenewalFailing,
    /// Ticket: a holder gave up at its deadline.
    GaveUp,
    /// Ticket: a lease passed on under a working holder.
    LostLease,
    /// Ticket: the backend fails acquisitions.
    BackendErrors,
    /// Ticket: a worker gave up waiting.
    WaitGaveUp,
}

impl AlertKind {
    /// The rule's name after the job's: `BillingLockHeldNearBudget`.
    fn suffix(self) -> &'static str {
        match self {
            AlertKind::NearTtl => "LockHeldNearTtl",
            AlertKind::NearBudget => "LockHeldNearBudget",
            AlertKind::RenewalStale => "LockRenewalStale",
            AlertKind::SlowRun => "LockHeldLong",
            AlertKind::RenewalFailing => "LockRenewalFailing",
            AlertKind::GaveUp => "LockGaveUp",
            AlertKind::LostLease => "LockLostUnderHolder",
            AlertKind::BackendErrors => "LockBackendErrors",
            AlertKind::WaitGaveUp => "LockWaitGaveUp",
        }
    }
}

/// When the lock passes on, or the job has been blocked too long: what a page fires before.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "deadline", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Deadline {
    /// A fixed TTL: the lock passes on this long after it was acquired.
    Ttl {
        #[serde(with = "lockbench_core::records::seconds", rename = "after_s")]
        after: Duration,
    },
    /// A lease: it passes on this long after the last renewal.
    Lease {
        #[serde(with = "lockbench_core::records::seconds", rename = "after_s")]
        after: Duration,
    },
    /// The crash-recovery budget: a job held this long by a holder that does not finish is
    /// blocked longer than its owners allow.
    Budget {
        #[serde(with = "lockbench_core::records::seconds", rename = "after_s")]
        after: Duration,
    },
}

impl Deadline {
    /// How long after the signal starts (acquisition, or the last renewal).
    pub fn after(self) -> Duration {
        match self {
            Deadline::Ttl { after } | Deadline::Lease { after } | Deadline::Budget { after } => {
                after
            }
        }
    }

    /// In words: "the TTL of 54.5 s".
    pub fn describe(self) -> String {
        match self {
            Deadline::Ttl { after } => format!("the TTL of {}", format_readable(after)),
            Deadline::Lease { after } => format!(
                "the lease of {} after the last renewal",
                format_readable(after)
            ),
            Deadline::Budget { after } => {
                format!("the crash-recovery budget of {}", format_readable(after))
            }
        }
    }
}

/// One alerting rule.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Alert {
    /// The rule's name.
    pub name: String,
    /// The workload's name: the `workload` label the metrics carry.
    pub workload: String,
    /// What it is for.
    pub kind: AlertKind,
    /// Who it reaches.
    pub severity: Severity,
    /// What it watches.
    pub signal: Signal,
    /// Its threshold, for a timer signal; `None` for an event.
    #[serde(
        with = "lockbench_core::records::seconds::option",
        rename = "threshold_s"
    )]
    pub threshold: Option<Duration>,
    /// Its `for`.
    #[serde(with = "lockbench_core::records::seconds", rename = "for_s")]
    pub for_: Duration,
    /// For a page, what it fires before.
    pub deadline: Option<Deadline>,
    /// The slowest normal run at today's volume that it must stay quiet on; `None` for an event.
    #[serde(
        with = "lockbench_core::records::seconds::option",
        rename = "quiet_above_s"
    )]
    pub quiet_above: Option<Duration>,
    /// Where the threshold comes from, in words.
    pub from: String,
    /// One line for the person it reaches.
    pub summary: String,
    /// What to do, true of the decided model.
    pub runbook: String,
}

impl Alert {
    /// The latest it fires after the signal starts (acquisition, last renewal, the event), with
    /// `settings`: threshold + `for` + a scrape + an evaluation.
    pub fn fires_by(&self, settings: &AlertSettings) -> Duration {
        self.threshold.unwrap_or_default() + settings.lag(self.for_)
    }

    /// For a page: how long is left to act before its deadline when it fires at the latest
    /// (negative when it fires too late); `None` for a ticket.
    pub fn slack(&self, settings: &AlertSettings) -> Option<f64> {
        let deadline = self.deadline?;
        Some(deadline.after().as_secs_f64() - self.fires_by(settings).as_secs_f64())
    }

    /// The PromQL expression.
    pub fn expr(&self) -> String {
        let w = format!("workload=\"{}\"", self.workload);
        let t = self.threshold.map_or(0.0, |t| t.as_secs_f64());
        match self.signal {
            Signal::Hold => format!("lock_hold_seconds{{{w}}} > {t}"),
            Signal::SinceRenewal => format!(
                "time() - lock_last_renewal_timestamp_seconds{{{w}}} > {t} and on(workload) lock_hold_seconds{{{w}}} > 0"
            ),
            Signal::RenewalFailed => {
                format!("increase(lock_renewal_failures_total{{{w}}}[10m]) > 0")
            }
            Signal::GaveUp => format!("increase(lock_gave_up_total{{{w}}}[1h]) > 0"),
            Signal::LostLease => format!("increase(lock_release_refused_total{{{w}}}[1h]) > 0"),
            Signal::AcquireErrors => format!(
                "sum by (workload) (rate(lock_acquire_total{{{w},outcome=\"error\"}}[15m])) / sum by (workload) (rate(lock_acquire_total{{{w}}}[15m])) > 0.01"
            ),
            Signal::WaitGaveUp => format!("increase(lock_wait_gave_up_total{{{w}}}[1h]) > 0"),
        }
    }
}

/// A deadline no page can guard, and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoPage {
    /// The deadline.
    pub deadline: Deadline,
    /// Why no page fires before it with time to act, and what guards it instead.
    pub why: String,
}

/// A job's alerts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AlertPlan {
    /// The workload.
    pub workload: String,
    /// The rules, pages first.
    pub alerts: Vec<Alert>,
    /// The deadlines no page can guard.
    pub no_page: Vec<NoPage>,
    /// The profile whose runs count as normal (`baseline`, or the spec's first).
    pub normal_profile: Option<String>,
    /// The volume at which a normal run's P99.9 would reach the lowest page threshold: the
    /// record's review trigger for its alerts; `None` without a page or a growth to go by.
    pub pages_from_volume: Option<u64>,
    /// The unit of that volume ("customers"); empty without a TTL record.
    pub unit: String,
}

/// The slowest run a threshold must stay above: the P99.9 where enough replays support it, else
/// the slowest replay seen.
fn slowest(p: &ProfileRuntime) -> Duration {
    if p.p999_reliable() { p.p999 } else { p.max }
}

/// `billing-run` -> `BillingRun`.
fn camel_case(workload: &str) -> String {
    workload
        .split(|c: char| !c.is_ascii_alphanumeric())
        .map(|p| {
            let mut c = p.chars();
            c.next().map_or(String::new(), |f| {
                f.to_ascii_uppercase().to_string() + c.as_str()
            })
        })
        .collect()
}

/// Whole seconds, rounded down: a threshold reads as a round figure.
fn whole_down(d: Duration) -> Duration {
    Duration::from_secs(d.as_secs())
}

/// The alerts of the decision `d`, with `ttl`'s figures for the job (today's runtimes, the
/// lease), under `settings`.
pub fn plan(d: &Decision, ttl: Option<&TtlRecommendation>, settings: &AlertSettings) -> AlertPlan {
    let mut p = Planner {
        d,
        ttl,
        settings,
        name: camel_case(&d.job),
        out: AlertPlan {
            workload: d.job.clone(),
            alerts: Vec::new(),
            no_page: Vec::new(),
            normal_profile: None,
            pages_from_volume: None,
            unit: ttl.map(|t| t.unit.clone()).unwrap_or_default(),
        },
    };
    let today = ttl.map(|t| t.today.as_slice()).unwrap_or_default();
    let normal = today
        .iter()
        .find(|r| r.profile == "baseline")
        .or_else(|| today.first());
    p.out.normal_profile = normal.map(|n| n.profile.clone());
    let normal = normal.map(slowest);
    if d.backend.is_some() {
        p.model(normal, today);
    }
    p.common();
    let lowest_page = p
        .out
        .alerts
        .iter()
        .filter(|a| a.severity == Severity::Page && a.signal == Signal::Hold)
        .filter_map(|a| a.threshold)
        .min();
    p.out.pages_from_volume = lowest_page.and_then(|t| normal_reaches(ttl?, t));
    p.out.alerts.sort_by_key(|a| a.severity != Severity::Page);
    p.out
}

/// The volume at which the normal profile's P99.9 reaches `threshold`: a power law through its
/// P99.9 today and at the target (or, with the target at today's volume, the growth fitted on
/// the worst profile).
fn normal_reaches(ttl: &TtlRecommendation, threshold: Duration) -> Option<u64> {
    let normal = ttl
        .today
        .iter()
        .find(|r| r.profile == "baseline")
        .or_else(|| ttl.today.first())?;
    let (v0, p0) = (normal.volume as f64, slowest(normal).as_secs_f64());
    let at_target = ttl
        .profiles_considered
        .iter()
        .find(|c| c.profile == normal.profile)
        .map(|c| c.p999.as_secs_f64());
    let exponent = match at_target {
        Some(p1) if ttl.target_volume > normal.volume && p1 > p0 => {
            (p1 / p0).ln() / (ttl.target_volume as f64 / v0).ln()
        }
        _ => ttl.growth.map(|g| g.exponent)?,
    };
    if exponent < 0.05 || p0 <= 0.0 {
        return None;
    }
    let v = v0 * (threshold.as_secs_f64() / p0).powf(1.0 / exponent);
    (v.is_finite() && v < 1e15).then(|| v.round() as u64)
}

struct Planner<'a> {
    d: &'a Decision,
    ttl: Option<&'a TtlRecommendation>,
    settings: &'a AlertSettings,
    name: String,
    out: AlertPlan,
}

impl Planner<'_> {
    fn push(&mut self, kind: AlertKind, severity: Severity, signal: Signal) -> &mut Alert {
        self.out.alerts.push(Alert {
            name: format!("{}{}", self.name, kind.suffix()),
            workload: self.d.job.clone(),
            kind,
            severity,
            signal,
            threshold: None,
            for_: Duration::ZERO,
            deadline: None,
            quiet_above: None,
            from: String::new(),
            summary: String::new(),
            runbook: String::new(),
        });
        self.out.alerts.last_mut().expect("just pushed")
    }

    /// The latest threshold that still fires with time to act before `deadline`: the deadline
    /// less a scrape, an evaluation and the time to act; `None` when that leaves nothing.
    fn latest_threshold(&self, deadline: Duration) -> Option<Duration> {
        deadline
            .checked_sub(self.settings.lag(Duration::ZERO) + self.settings.act)
            .map(whole_down)
            .filter(|t| !t.is_zero())
    }

    /// Why no page can guard `deadline` given a normal run of `normal`, in words.
    fn no_page(&mut self, deadline: Deadline, normal: Option<Duration>, instead: &str) {
        let lag = self.settings.lag(Duration::ZERO) + self.settings.act;
        let why = format!(
            "a page fires at the latest a scrape and an evaluation after its threshold ({}) and needs {} to act: {} leaves no threshold{} before it; {instead}",
            format_readable(self.settings.scrape + self.settings.evaluation),
            format_readable(self.settings.act),
            deadline.describe(),
            normal.map_or(String::new(), |n| format!(
                " above a normal run today ({}) with {} to spare",
                format_readable(n),
                format_readable(lag)
            ))
        );
        self.out.no_page.push(NoPage { deadline, why });
    }

    /// A page on hold time before `deadline`, quiet above `normal`; the no-page note when none
    /// fits. Returns its threshold.
    fn hold_page(
        &mut self,
        kind: AlertKind,
        deadline: Deadline,
        normal: Option<Duration>,
        instead: &str,
    ) -> Option<Duration> {
        let threshold = self
            .latest_threshold(deadline.after())
            .filter(|t| normal.is_none_or(|n| *t > n));
        let Some(threshold) = threshold else {
            self.no_page(deadline, normal, instead);
            return None;
        };
        let job = self.d.job.clone();
        let (summary, runbook) = self.hold_words(kind, deadline, threshold);
        let from = format!(
            "{} less a scrape, an evaluation and {} to act{}",
            deadline.describe(),
            format_readable(self.settings.act),
            normal.map_or(String::new(), |n| format!(
                "; above a normal run today ({})",
                format_readable(n)
            ))
        );
        let a = self.push(kind, Severity::Page, Signal::Hold);
        a.threshold = Some(threshold);
        a.deadline = Some(deadline);
        a.quiet_above = normal;
        a.from = from;
        a.summary = summary.replace("{job}", &job);
        a.runbook = runbook;
        Some(threshold)
    }

    /// The summary and runbook of a hold-time page, true of the decided model.
    fn hold_words(&self, kind: AlertKind, deadline: Deadline, t: Duration) -> (String, String) {
        let backend = self.d.backend.map_or("the backend", |b| b.name());
        let left = format_readable(deadline.after().saturating_sub(t));
        match (kind, self.d.lock_model.kind) {
            (AlertKind::NearTtl, _) => (
                format!(
                    "{{job}} has held its lock for {}: its TTL passes the lock to the next worker in {left}",
                    format_readable(t)
                ),
                format!(
                    "A fixed TTL cannot be extended: at {} another worker may take the lock while this run still works. If the run is stuck, stop it now; if it is working, stop the next window's worker (or its scheduler) until this run ends, and raise the TTL (section 2) before the next run.",
                    format_readable(deadline.after())
                ),
            ),
            (_, ModelKind::Session | ModelKind::Transaction) => (
                format!(
                    "{{job}} has held its {backend} lock for {}: {left} before the job has been blocked past its crash-recovery budget",
                    format_readable(t)
                ),
                {
                    let scope = if self.d.lock_model.kind == ModelKind::Session {
                        "session"
                    } else {
                        "transaction"
                    };
                    let altered = self.d.mechanisms.iter().any(|m| {
                        matches!(
                            m.kind,
                            crate::mechanism::MechanismKind::TableLocksFirst { .. }
                        )
                    });
                    if altered {
                        format!(
                            "No second worker gets a {scope} lock while the holder's {scope} lives, so nothing runs twice. Find the holder (the pg_locks query below). If it is still waiting for the table's lock, it retries on its own; once it holds ACCESS EXCLUSIVE, every query on the table waits for it: decide with the database's operators whether to let it finish or cancel it (pg_cancel_backend(pid) rolls the whole migration back and frees the lock)."
                        )
                    } else {
                        format!(
                            "No second worker gets a {scope} lock while the holder's {scope} lives, so nothing runs twice. Find the holder (the pg_locks query below). If it works (its query is active), let it finish and tell the waiting worker's owner that its alert at the budget is expected; if it hangs, pg_terminate_backend(pid) frees the lock and rolls back its open work."
                        )
                    }
                },
            ),
            _ => (
                format!(
                    "{{job}} has held its {backend} lease for {} while still renewing it: {left} before the job has been blocked past its crash-recovery budget",
                    format_readable(t)
                ),
                format!(
                    "A holder that keeps renewing keeps the lock however long it takes. Check that the run still makes progress; if it hangs, stop its process: the lease then passes on within one lease{}.",
                    self.after_a_stale_holder()
                ),
            ),
        }
    }

    /// The ticket on hold time: past every simulated profile's slowest run today that is below
    /// `page` (or past 80 % of a fixed TTL, the seed's review threshold).
    fn slow_run_ticket(&mut self, today: &[ProfileRuntime], page: Option<Duration>) {
        let below_page: Vec<&ProfileRuntime> = today
            .iter()
            .filter(|r| page.is_none_or(|p| slowest(r) < p))
            .collect();
        let ttl_share = (self.d.lock_model.kind == ModelKind::FixedTtl)
            .then(|| {
                self.d
                    .lock_model
                    .ttl_s
                    .map(|t| Duration::from_secs_f64(t * 0.8))
            })
            .flatten()
            .filter(|t| page.is_none_or(|p| *t < p));
        let slowest_today = below_page.iter().max_by_key(|r| slowest(r));
        let (threshold, from) = match (ttl_share, slowest_today) {
            (Some(t), _) => (
                whole_down(t),
                "80 % of the TTL: a run this long is investigated and the TTL reviewed before a slower one crosses it".to_string(),
            ),
            (None, Some(r)) => (
                slowest(r).max(Duration::from_secs(1)),
                format!(
                    "the slowest of {} simulated `{}` runs at today's volume ({} {}){}",
                    format_count(r.replays),
                    r.profile,
                    format_count(r.volume),
                    self.ttl.map_or("", |t| t.unit.as_str()),
                    if r.p999_reliable() { ", its P99.9" } else { "" }
                ),
            ),
            (None, None) => return,
        };
        let threshold = Duration::from_secs(threshold.as_secs_f64().ceil() as u64);
        let job = self.d.job.clone();
        let a = self.push(AlertKind::SlowRun, Severity::Ticket, Signal::Hold);
        a.threshold = Some(threshold);
        a.from = from;
        a.summary = format!(
            "{job} has held its lock for {}: slower than the simulation says a run is today",
            format_readable(threshold)
        );
        a.runbook = "Investigate in working hours: compare the run's volume and its slow calls with the spec's profiles (`lockbench check` with the job's recent runtimes), and recalibrate the spec if the job has outgrown it.".to_string();
    }

    /// The alerts of the decided lock model.
    fn model(&mut self, normal: Option<Duration>, today: &[ProfileRuntime]) {
        let harms = self.d.double_run.harms();
        let m = &self.d.lock_model;
        let budget = self.d.crash_recovery.allowed_s.map(Duration::from_secs_f64);
        let page = match m.kind {
            ModelKind::FixedTtl => {
                let ttl = m.ttl_s.map(Duration::from_secs_f64);
                let page = match ttl.filter(|_| harms) {
                    Some(after) => self.hold_page(
                        AlertKind::NearTtl,
                        Deadline::Ttl { after },
                        normal,
                        "raise the TTL, or hold a heartbeat lease, whose give-up deadline stops the holder by itself",
                    ),
                    None => None,
                };
                self.event(AlertKind::LostLease, Signal::LostLease);
                page
            }
            ModelKind::HeartbeatLease => {
                if let (Some(lease), Some(renew)) = (m.lease_s, m.renew_every_s) {
                    self.lease_page(
                        Duration::from_secs_f64(lease),
                        Duration::from_secs_f64(renew),
                        harms,
                    );
                }
                self.event(AlertKind::RenewalFailing, Signal::RenewalFailed);
                self.event(AlertKind::GaveUp, Signal::GaveUp);
                self.event(AlertKind::LostLease, Signal::LostLease);
                self.budget_page(budget, harms, normal)
            }
            ModelKind::Session | ModelKind::Transaction => self.budget_page(budget, harms, normal),
        };
        self.slow_run_ticket(today, page);
    }

    /// A page before the crash-recovery budget on a holder that does not finish, for a job whose
    /// double run does harm.
    fn budget_page(
        &mut self,
        budget: Option<Duration>,
        harms: bool,
        normal: Option<Duration>,
    ) -> Option<Duration> {
        let after = budget.filter(|_| harms)?;
        self.hold_page(
            AlertKind::NearBudget,
            Deadline::Budget { after },
            normal,
            "the waiting worker's alert at the budget is the signal; raise `crash_recovery` with the job's owners if a normal run holds the lock that long",
        )
    }

    /// A page on renewals stopped, before a lease passes on: rarely possible (a lease is short);
    /// the no-page note says what guards it instead.
    fn lease_page(&mut self, lease: Duration, renew: Duration, harms: bool) {
        if !harms {
            return;
        }
        let deadline = Deadline::Lease { after: lease };
        match self.latest_threshold(lease).filter(|t| *t > renew * 2) {
            Some(threshold) => {
                let job = self.d.job.clone();
                let from = format!(
                    "{} less a scrape, an evaluation and {} to act; above two renewal intervals ({})",
                    deadline.describe(),
                    format_readable(self.settings.act),
                    format_readable(renew * 2)
                );
                let stale = self.after_a_stale_holder();
                let a = self.push(
                    AlertKind::RenewalStale,
                    Severity::Page,
                    Signal::SinceRenewal,
                );
                a.threshold = Some(threshold);
                a.deadline = Some(deadline);
                a.from = from;
                a.summary = format!(
                    "{job}'s holder has not renewed its lease for {}",
                    format_readable(threshold)
                );
                a.runbook = format!(
                    "The holder should stop at its give-up deadline. Check that it did: if it still works, stop its process before the lease passes on{stale}."
                );
            }
            None => {
                let instead = format!(
                    "the holder's own give-up deadline stops it before the lease passes on{}, and failed renewals (a ticket) are the leading signal",
                    self.after_a_stale_holder()
                );
                self.no_page(deadline, None, &instead)
            }
        }
    }

    /// What refuses a holder that goes on after its lease passed: ", and the fence refuses what it
    /// writes", or the steps' guards, or nothing to say.
    fn after_a_stale_holder(&self) -> &'static str {
        let has = |f: fn(&crate::mechanism::MechanismKind) -> bool| {
            self.d.mechanisms.iter().any(|m| f(&m.kind))
        };
        if has(|k| matches!(k, crate::mechanism::MechanismKind::FencingToken { .. })) {
            ", and the fence refuses what it writes after"
        } else if has(|k| matches!(k, crate::mechanism::MechanismKind::KeepGuard { .. })) {
            ", and the steps' guards refuse what it repeats"
        } else {
            ""
        }
    }

    /// A ticket on an event counter.
    fn event(&mut self, kind: AlertKind, signal: Signal) {
        let job = self.d.job.clone();
        let backend = self
            .d
            .backend
            .map_or("the backend", |b| b.name())
            .to_string();
        let policy = self.d.failure_policy.kind;
        let (summary, runbook) = match signal {
            Signal::RenewalFailed => (
                format!("{job}'s lock renewal failed"),
                format!("A leading signal: a holder that cannot renew stops at its give-up deadline. Check {backend}'s health and the holder's connection to it."),
            ),
            Signal::GaveUp => (
                format!("{job}'s holder stopped at its give-up deadline"),
                "The run stopped unfinished and its lease passes on. Check that the next worker resumed it (its completion record says so), and why renewals failed.".to_string(),
            ),
            Signal::LostLease => (
                format!("{job}'s lock passed to another worker while its holder still worked"),
                if self.d.double_run.harms() {
                    "A release found the lock no longer the holder's: two workers held it at once. Check what the second run wrote, and why the first outlived its lock.".to_string()
                } else {
                    format!("Two workers held the lock at once; a second run {}. Review why the run outlived its lock.", crate::answers::effect(self.d.double_run))
                },
            ),
            Signal::AcquireErrors => (
                format!("{backend} fails {job}'s lock acquisitions"),
                format!(
                    "More than 1 % of attempts in 15 minutes ended in an error from {backend} (not a busy lock: a busy attempt is expected while another worker holds it, and counted apart). Meanwhile {}. Check {backend}'s health.",
                    match policy {
                        PolicyKind::RunUnlocked => "runs go ahead without the lock (their double run is absorbed)",
                        PolicyKind::SkipAndAlert => "runs are skipped",
                        PolicyKind::Queue | PolicyKind::RetryThenAlert => "runs wait",
                    }
                ),
            ),
            Signal::WaitGaveUp => (
                format!("a {job} worker gave up waiting for the lock"),
                match policy {
                    PolicyKind::RetryThenAlert => "It retried for the whole crash-recovery budget: the holder still holds the lock. The page before the budget names the holder; the run waits for a person.".to_string(),
                    _ => "This window's run was skipped: run it by hand once the holder is done, or let the next window take it.".to_string(),
                },
            ),
            Signal::Hold | Signal::SinceRenewal => return,
        };
        let a = self.push(kind, Severity::Ticket, signal);
        a.from = "as it happens".to_string();
        a.summary = summary;
        a.runbook = runbook;
    }

    /// The alerts every job has: backend errors, and a worker giving up where the policy has it
    /// give up.
    fn common(&mut self) {
        self.event(AlertKind::BackendErrors, Signal::AcquireErrors);
        if let Some(a) = self.out.alerts.last_mut() {
            a.for_ = Duration::from_secs(300);
            a.from = "1 % of attempts over 15 minutes, for 5 minutes".to_string();
        }
        if matches!(
            self.d.failure_policy.kind,
            PolicyKind::SkipAndAlert | PolicyKind::RetryThenAlert
        ) {
            self.event(AlertKind::WaitGaveUp, Signal::WaitGaveUp);
        }
    }
}
