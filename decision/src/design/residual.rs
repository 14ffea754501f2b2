//! What the chosen design still does not prevent, why the job can carry it (or what must change
//! before it can), and who owns it. Each risk has a [`RiskKind`], so that the record's actions and
//! its status follow from the risks not acceptable yet.

use lockbench_core::fault::{Persistence, Variant};
use lockbench_core::{BackendKind, format_chance, format_count, format_readable_s};
use lockbench_workloads::JobAnswers;

use crate::answers::{Exposure, Resolved, effect, names};
use crate::evidence::{Evidence, describe};
use crate::mechanism::MechanismKind;
use crate::record::{Decision, FailurePolicy, ModelKind, PolicyKind, Residual, RiskKind};

/// Every residual risk of the decision `d`.
pub(crate) fn residual(
    job: &JobAnswers,
    r: &Resolved,
    ev: &Evidence,
    kind: Option<BackendKind>,
    d: &Decision,
) -> Vec<Residual> {
    let (model, recovery, policy) = (&d.lock_model, &d.crash_recovery, &d.failure_policy);
    let team = format!("the {} job's owners", job.job);
    let mut out: Vec<Residual> = d
        .mechanisms
        .iter()
        .filter(|m| !m.in_place && m.step.is_some())
        .map(|m| {
            let step = m.step.clone().unwrap_or_default();
            Residual {
                kind: RiskKind::Unguarded,
                step: Some(step.clone()),
                risk: format!(
                    "until `{step}` has {}, a rerun after a crash, or a second run that gets in, {}",
                    m.name(),
                    effect(r.double_run)
                ),
                accepted: false,
                why: "adding it is this record's first action".into(),
                owner: team.clone(),
            }
        })
        .collect();
    if model.kind == ModelKind::HeartbeatLease
        && let Some(lease) = lease_residual(job, r, ev, d, &team)
    {
        out.push(lease);
    }
    if let Some(backend) = backend_residual(job, r, ev, kind, policy) {
        out.push(backend);
    }
    if let Some(library) = super::library::library_residual(job, r, ev, kind, model.kind) {
        out.push(library);
    }
    if recovery.within == Some(false) {
        out.push(Residual {
            kind: RiskKind::RecoveryExceeded,
            step: None,
            risk: format!(
                "a crashed holder blocks the job for up to {}, more than the {} allowed",
                recovery.chosen_s.map_or("-".to_string(), format_readable_s),
                recovery
                    .allowed_s
                    .map_or("-".to_string(), format_readable_s)
            ),
            accepted: false,
            why: "shorten the lease or the keepalive, or raise the budget with the job's owners"
                .into(),
            owner: team.clone(),
        });
    }
    out.push(policy_residual(policy, r));
    out
}

/// What a heartbeat lease leaves: a stall longer than what is left of it, priced by `ttl`. It is
/// acceptable only for what actually refuses a second worker's writes: the steps' own guards, or
/// a fence on one database; a fence over several databases covers only those that saw the newer
/// token (docs/DECISION.md, "a fence across databases").
fn lease_residual(
    job: &JobAnswers,
    r: &Resolved,
    ev: &Evidence,
    d: &Decision,
    team: &str,
) -> Option<Residual> {
    let t = ev.ttl(&job.job)?;
    let p = t.heartbeat.p_lease_lost_upper95?;
    let x = Exposure::of(job, r.double_run);
    let fence_covers = d
        .mechanisms
        .iter()
        .any(|m| matches!(m.kind, MechanismKind::FencingToken { .. }))
        && r.databases == 1;
    let (accepted, why) = if !r.double_run.harms() {
        (true, format!("a second run {}", effect(r.double_run)))
    } else if !x.outside.is_empty() {
        (
            false,
            format!(
                "{} reach{} outside the database with no guard: a second worker repeats {} whatever the lock; accepted once {} a guard of {} own",
                names(&x.outside),
                if x.outside.len() == 1 { "es" } else { "" },
                if x.outside.len() == 1 { "it" } else { "them" },
                if x.outside.len() == 1 {
                    "it has"
                } else {
                    "they have"
                },
                if x.outside.len() == 1 { "its" } else { "their" },
            ),
        )
    } else if x.inside.is_empty() {
        (
            true,
            "the steps' own guards refuse what a second worker repeats; the lease was sized to keep this below the risk `ttl` was given".to_string(),
        )
    } else if fence_covers {
        (
            true,
            "the resource's fence refuses a stale holder's writes; the lease was sized to keep this below the risk `ttl` was given".to_string(),
        )
    } else {
        (
            false,
            format!(
                "nothing refuses what a second worker writes to {} until {} guards of {} own{}; accepted once {} do",
                names(&x.inside),
                if x.inside.len() == 1 {
                    "it has"
                } else {
                    "they have"
                },
                if x.inside.len() == 1 { "its" } else { "their" },
                if r.databases > 1 && r.fenced {
                    format!(
                        " (the fence covers only a database that has seen the newer token, and the job writes to {})",
                        r.databases
                    )
                } else {
                    String::new()
                },
                if x.inside.len() == 1 { "it" } else { "they" },
            ),
        )
    };
    Some(Residual {
        kind: RiskKind::LeaseLost,
        step: None,
        risk: format!(
            "a stall longer than what is left of the lease lets a second worker in: in at most {} of runs by `ttl` (simulated), about {:.2} times a year at {} runs a year",
            format_chance(p),
            p * job.frequency.runs_per_year,
            format_count(job.frequency.runs_per_year.round() as u64)
        ),
        accepted,
        why,
        owner: team.to_string(),
    })
}

/// What the failure policy leaves, and who owns it.
fn policy_residual(policy: &FailurePolicy, r: &Resolved) -> Residual {
    let (risk, why) = match policy.kind {
        PolicyKind::SkipAndAlert => (
            "a run skipped while the lock cannot be had waits for the next window or a person"
                .to_string(),
            format!(
                "a late run can be made up; a second run that {} cannot be undone",
                effect(r.double_run)
            ),
        ),
        PolicyKind::RetryThenAlert => (
            format!(
                "a run whose lock is still held when the {} budget runs out alerts and waits for a person",
                policy
                    .retry_for_s
                    .map_or("-".to_string(), format_readable_s)
            ),
            "the budget is what the job's owners said a crash may cost; past it a person decides"
                .to_string(),
        ),
        PolicyKind::Queue => (
            "a run queued through an outage runs late".to_string(),
            format!(
                "a second run {}: lateness is the only cost",
                effect(r.double_run)
            ),
        ),
        PolicyKind::RunUnlocked => (
            "a run during a lock-server outage may overlap another".to_string(),
            "every step is idempotent and a double run is absorbed downstream".to_string(),
        ),
    };
    Residual {
        kind: RiskKind::Policy,
        step: None,
        risk,
        accepted: true,
        why,
        owner: "on-call".into(),
    }
}

/// The risk the chosen backend itself carries.
fn backend_residual(
    job: &JobAnswers,
    r: &Resolved,
    ev: &Evidence,
    kind: Option<BackendKind>,
    policy: &FailurePolicy,
) -> Option<Residual> {
    let team = format!("the {} job's owners", job.job);
    let risk = |risk: String, accepted: bool, why: String, owner: String| Residual {
        kind: RiskKind::Backend,
        step: None,
        risk,
        accepted,
        why,
        owner,
    };
    Some(match kind? {
        BackendKind::Redis => risk(
            format!(
                "a failover to a replica that lacked the key, or a restart under weaker persistence than prescribed, grants the lock twice{}",
                ev.cell(Variant::Failover { wait: false }, BackendKind::Redis)
                    .or_else(|| ev.cell(Variant::Restart(Persistence::None), BackendKind::Redis))
                    .map(|c| format!(" ({})", describe(c)))
                    .unwrap_or_default()
            ),
            !r.double_run.harms() || r.fenced,
            match (r.double_run.harms(), r.fenced) {
                (false, _) => format!("a second run {}", effect(r.double_run)),
                (true, true) => "the resource checks the fencing token and refuses the stale holder's writes".into(),
                (true, false) => "a second run does harm and nothing refuses it: the resource must check a fencing token first".into(),
            },
            "whoever runs Redis (its persistence and replication settings)".into(),
        ),
        BackendKind::PgXact => {
            let altered: Vec<&str> = job
                .steps
                .iter()
                .filter(|s| s.alters_table)
                .map(|s| s.name.as_str())
                .collect();
            let held = ev
                .ttl(&job.job)
                .map(|t| format!(" ({}, simulated)", t.p999_said()))
                .unwrap_or_default();
            risk(
                if altered.is_empty() {
                    format!(
                        "the transaction stays open for the whole job{held}: it holds back vacuum, and every row it wrote stays locked until COMMIT"
                    )
                } else {
                    format!(
                        "the transaction stays open for the whole job{held}: once {} has its ACCESS EXCLUSIVE lock, every read and write of the altered table waits until COMMIT, and vacuum is held back meanwhile",
                        crate::answers::list(altered.iter().map(|s| format!("`{s}`")).collect())
                    )
                },
                true,
                format!(
                    "it runs about {} times a year, in a window the database's operators plan for",
                    format_count(job.frequency.runs_per_year.round() as u64)
                ),
                "the database's operators".into(),
            )
        }
        BackendKind::PgSession => {
            let guarded = Exposure::of(job, r.double_run).outside.is_empty();
            risk(
                "a holder whose connection died keeps working until its next statement on that session fails".into(),
                guarded,
                if guarded {
                    "its database writes fail with the dead connection, and its other steps are idempotent or guarded".into()
                } else {
                    "its calls outside the database need a guard of their own first (above)".into()
                },
                team,
            )
        }
        k @ (BackendKind::Etcd | BackendKind::Zookeeper) => risk(
            format!(
                "without a quorum {} grants no lock: runs are {}",
                k.name(),
                match policy.kind {
                    PolicyKind::SkipAndAlert | PolicyKind::RetryThenAlert => "alerted and wait",
                    PolicyKind::Queue => "late",
                    PolicyKind::RunUnlocked => "run without it",
                }
            ),
            true,
            format!(
                "a late run can be made up; a second run that {} cannot be undone",
                effect(r.double_run)
            ),
            format!("whoever runs {}", k.name()),
        ),
        BackendKind::Redlock | BackendKind::Memory => return None,
    })
}
