//! What the job's lock library adds on the chosen backend: when it tells its holder of a lost
//! lock, whether it is measured at all, and whether it locks on the chosen backend.

use lockbench_core::{BackendKind, ClientChoice, format_readable_s};

use crate::answers::Resolved;
use crate::evidence::{Evidence, describe};
use crate::record::{ModelKind, Residual, RiskKind};
use lockbench_workloads::JobAnswers;

/// names no library for the chosen backend.
pub(crate) fn library_residual(
    job: &JobAnswers,
    r: &Resolved,
    ev: &Evidence,
    kind: Option<BackendKind>,
    model: ModelKind,
) -> Option<Residual> {
    let team = format!("the {} job's owners", job.job);
    let chosen = kind?;
    let Some(client) = r.client else {
        return unmeasured_own(r.choice.as_ref()?, chosen, team);
    };
    if client.backend() != chosen {
        return Some(passed_over(client, chosen, r.fenced, team, ev));
    }
    let cells = ev.library_cells(client);
    let Some(version) = cells.first().and_then(|c| c.client.as_ref()) else {
        return Some(Residual {
            kind: RiskKind::LibraryNotMeasured,
            step: None,
            risk: format!(
                "how {} behaves under faults is not measured in these results",
                client.library()
            ),
            accepted: false,
            why: format!(
                "measure it before relying on it: `lockbench faults --client {client}` (docs/CLIENTS.md)"
            ),
            owner: team,
        });
    };
    let library = format!("{} {}", client.library(), version.version);
    // The latest telling after another holder was granted, and the overlaps never told.
    let late = cells
        .iter()
        .filter_map(|c| {
            let t = c.lost_told.as_ref()?;
            Some((c, t.after_next_grant_max_s.filter(|s| *s > 0.0)?))
        })
        .max_by(|a, b| a.1.total_cmp(&b.1));
    let never: Vec<String> = cells
        .iter()
        .filter(|c| {
            c.lost_told
                .as_ref()
                .is_some_and(|t| t.never_told_overlaps > 0)
        })
        .map(|c| format!("`{}`", c.label()))
        .collect();
    if late.is_none() && never.is_empty() {
        return None;
    }
    let mut risk = format!("{library} tells its holder of a lost lock late or never (lab)");
    if let Some((c, s)) = late {
        risk.push_str(&format!(
            ": up to {} after the next holder was granted in `{}` ({} trials)",
            format_readable_s(s),
            c.label(),
            c.trials
        ));
    }
    if !never.is_empty() {
        risk.push_str(&format!(
            "{} never told in {}",
            if late.is_some() { "; " } else { ": " },
            never.join(", ")
        ));
    }
    let stops_itself = matches!(model, ModelKind::HeartbeatLease);
    Some(Residual {
        kind: RiskKind::LibraryLate,
        step: None,
        risk,
        accepted: stops_itself,
        why: if stops_itself {
            "the job stops writing at the heartbeat's give-up deadline, not at the library's notification: keep it so".into()
        } else {
            "by the library's word another holder may already have written: fence the resource, or bound each write by a deadline of the job's own within the lease, not by the notification".into()
        },
        owner: team,
    })
}

/// A team's own adapter with no cells in the evidence: nothing is known of it, so no verdict
/// leans on it, and the record says what that assumes and how to measure it.
fn unmeasured_own(choice: &ClientChoice, chosen: BackendKind, team: String) -> Option<Residual> {
    let path = choice.argument();
    Some(Residual {
        kind: RiskKind::LibraryNotMeasured,
        step: None,
        risk: format!(
            "the job locks with the team's own adapter `{path}`, not measured in these results: this record judges {chosen} as if it handed out {chosen}'s fencing token and renewed as lockbench's client does"
        ),
        accepted: false,
        why: format!(
            "measure it before relying on this record: `lockbench faults --client {path} --backend {chosen}` and `lockbench clients check --backend {chosen} {path}` (docs/CLIENTS.md)"
        ),
        owner: team,
    })
}

/// The shipped adapters on `chosen` that hand out its fencing token with the lock.
pub(crate) fn tokened_on(chosen: BackendKind) -> Vec<lockbench_core::Client> {
    lockbench_core::Client::ALL
        .into_iter()
        .filter(|c| c.backend() == chosen && c.gives_fencing_token())
        .collect()
}

/// A candidate library as the record names it, with what the lab measured through it when it
/// did (its first cell, a paused holder in `lockbench run`).
fn candidate(c: lockbench_core::Client, ev: &Evidence) -> String {
    match ev.library_cells(c).first() {
        Some(cell) => format!(
            "{} (`{c}`; measured through it here, {})",
            c.library(),
            describe(cell)
        ),
        None => format!("{} (`{c}`)", c.library()),
    }
}

/// The job's lock library does not lock on the chosen backend: the move needs a new client,
/// and with a fence, one that hands out the chosen backend's token. A candidate the lab measured
/// is cited with what it did.
fn passed_over(
    client: lockbench_core::Client,
    chosen: BackendKind,
    fenced: bool,
    team: String,
    ev: &Evidence,
) -> Residual {
    let on_chosen = lockbench_core::Client::ALL
        .into_iter()
        .filter(|c| c.backend() == chosen);
    let tokened: Vec<String> = tokened_on(chosen)
        .into_iter()
        .map(|c| candidate(c, ev))
        .collect();
    let measured = tokened_on(chosen)
        .into_iter()
        .any(|c| !ev.library_cells(c).is_empty());
    let shipped: Vec<String> = on_chosen.map(|c| format!("`{c}`")).collect();
    Residual {
        kind: RiskKind::ClientMismatch,
        step: None,
        risk: format!(
            "the job locks with {}, which does not lock on {chosen}: the move needs a new lock client, not yet chosen{}",
            client.library(),
            if fenced && measured {
                ""
            } else {
                " or measured"
            }
        ),
        accepted: false,
        why: if fenced {
            format!(
                "choose one that hands out {chosen}'s fencing token with the lock ({}), then measure {} through the fault lab (`lockbench faults --client`)",
                if tokened.is_empty() {
                    "none of lockbench's shipped adapters does".to_string()
                } else {
                    format!("of lockbench's shipped adapters, {}", tokened.join(", "))
                },
                if measured {
                    "the one adopted, as the job calls it,"
                } else {
                    "it"
                }
            )
        } else {
            format!(
                "choose it, then measure it through the fault lab (`lockbench faults --client`{})",
                if shipped.is_empty() {
                    String::new()
                } else {
                    format!("; shipped for {chosen}: {}", shipped.join(", "))
                }
            )
        },
        owner: team,
    }
}
