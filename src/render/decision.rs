//! Decisions as `decide` prints them: the choice first, then why, then what else was weighed.

use std::fmt::Write as _;

use lockbench_decision::{Decision, Status, VerdictKind};

/// Every decision, one block each.
pub fn decisions(decisions: &[Decision]) -> String {
    let mut out = String::new();
    for (i, d) in decisions.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        decision(&mut out, d);
    }
    out
}

fn decision(out: &mut String, d: &Decision) {
    let _ = writeln!(out, "{}: {}", d.job, d.basis);
    let backend = d.backend.map_or("none fits", |b| b.name());
    let _ = writeln!(out, "  status       {}", d.status.name());
    if !d.assumed.is_empty() {
        let _ = writeln!(
            out,
            "  assumed done {}",
            d.assumed
                .iter()
                .map(|a| a.argument())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if d.status == Status::Undecided {
        let _ = writeln!(
            out,
            "               `double_run` is not answered; below is what the rules give if a second run corrupts the job's data"
        );
    }
    let _ = writeln!(out, "  backend      {backend}");
    let _ = writeln!(
        out,
        "  lock model   {}: {}",
        d.lock_model.kind.name(),
        d.lock_model.reason
    );
    let _ = writeln!(
        out,
        "  failure      {}. {}",
        d.failure_policy.kind.name(),
        d.failure_policy.reason
    );
    for m in &d.failure_policy.measured {
        let _ = writeln!(out, "               measured: {m}");
    }
    let _ = writeln!(out, "  the lock     {}. {}", d.role.name(), d.role.reason);
    let _ = writeln!(out, "  mechanisms");
    for m in &d.mechanisms {
        let _ = writeln!(
            out,
            "    - {}{} ({}): {}",
            m.name(),
            m.step
                .as_ref()
                .map(|s| format!(" on `{s}`"))
                .unwrap_or_default(),
            if m.in_place { "in place" } else { "to add" },
            m.reason()
        );
        if let Some(measured) = &m.measured {
            let _ = writeln!(out, "      measured: {measured}");
        }
    }
    let _ = writeln!(out, "  crash        {}", d.crash_recovery.note);
    let _ = writeln!(out, "  backends");
    let width = d
        .alternatives
        .iter()
        .map(|v| v.backend.name().len())
        .max()
        .unwrap_or(8);
    for v in &d.alternatives {
        let p99 = v
            .acquire_figure()
            .map(|f| format!(" [acquire {f}]"))
            .unwrap_or_default();
        let mark = match v.verdict {
            VerdictKind::Chosen => "chosen",
            VerdictKind::Acceptable => "ok",
            VerdictKind::Rejected => "no",
        };
        let _ = writeln!(
            out,
            "    {:<width$}  {mark:<6}  {}{p99}",
            v.backend.name(),
            v.fact
        );
    }
    let _ = writeln!(out, "  residual risk");
    for r in &d.residual {
        let _ = writeln!(
            out,
            "    - {}; {} {} (owner: {})",
            r.risk,
            if r.accepted {
                "acceptable because"
            } else {
                "not acceptable yet:"
            },
            r.why,
            r.owner
        );
    }
    if !d.actions.is_empty() {
        let _ = writeln!(out, "  actions");
        for (i, a) in d.actions.iter().enumerate() {
            let _ = writeln!(
                out,
                "    {}. {}{} (owner: {}); verify: {}{}",
                i + 1,
                if a.blocking { "[blocks] " } else { "" },
                a.what(),
                a.owner,
                a.verify(d),
                a.assume
                    .as_ref()
                    .map(|x| format!("; decide as if done: --assume {}", x.argument()))
                    .unwrap_or_default()
            );
        }
    }
    if let Some(after) = &d.after {
        let _ = writeln!(
            out,
            "  after        with {}: {}; {}",
            after.assumed_flags(),
            lockbench_decision::brief(after),
            after.status.name()
        );
    }
    for o in &d.overruled {
        let _ = writeln!(out, "  measurement  {o}");
    }
    if !d.missing.is_empty() {
        let _ = writeln!(out, "  not answered");
        for m in &d.missing {
            let _ = writeln!(
                out,
                "    - {}: assumed {}; {}",
                m.field, m.assumed, m.would_change
            );
        }
    }
}
