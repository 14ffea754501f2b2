//! The shard contract: which shard of a split run this process is, from `--shard I/N` or from the
//! engine that started it (a Kubernetes Indexed Job, a Slurm job array), and the run id every
//! shard of the run carries so that `lockbench merge` can tell them apart from another run's.

use lockbench_core::ShardRecord;

use super::parse::Refusal;

/// The variables through which an engine makes a process a shard (`run`, which is not split,
/// removes them from its steps).
pub const ENGINE_VARIABLES: [&str; 5] = [
    "JOB_COMPLETION_INDEX",
    "LOCKBENCH_SHARDS",
    "LOCKBENCH_RUN_ID",
    "SLURM_ARRAY_TASK_ID",
    "SLURM_ARRAY_TASK_COUNT",
];

/// Most shards a run may be split into.
pub const MAX_SHARDS: u64 = 10_000;

/// This process's shard, `None` for a whole run. `env` reads an environment variable (the
/// process's own in production, a table in tests).
pub fn resolve(
    flag: Option<&str>,
    run_id: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<ShardRecord>, Refusal> {
    let Some((index, count, from)) = place(flag, env)? else {
        if let Some(id) = run_id {
            return Err(Refusal::new(
                "--run-id",
                format!(
                    "`{id}` names the run of a sharded run, but this run is not split: give --shard I/N too"
                ),
            ));
        }
        return Ok(None);
    };
    let run_id = match run_id
        .map(str::to_string)
        .or_else(|| env("LOCKBENCH_RUN_ID"))
    {
        Some(id) => id,
        None => {
            return Err(Refusal::new(
                "--run-id",
                format!(
                    "shard {index}/{count} ({from}) needs the run id its shards share, for `lockbench merge`: give --run-id ID or set LOCKBENCH_RUN_ID"
                ),
            ));
        }
    };
    if run_id.is_empty()
        || run_id.len() > 64
        || !run_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Err(Refusal::new(
            "--run-id",
            format!("expected 1 to 64 letters, digits, '-', '_' or '.', got `{run_id}`"),
        ));
    }
    // Its settings are filled in by the command once all its flags are resolved.
    Ok(Some(ShardRecord {
        zone: env("LOCKBENCH_ZONE").filter(|z| !z.is_empty()),
        ..ShardRecord::new(index, count, run_id)
    }))
}

/// (index, count, where they came from), or `None` when nothing says this is a shard.
fn place(
    flag: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<(u64, u64, &'static str)>, Refusal> {
    if let Some(text) = flag {
        let bad = || {
            Refusal::new(
                "--shard",
                format!(
                    "expected I/N with 0 <= I < N <= {MAX_SHARDS} (shard I of N, from 0), got `{text}`"
                ),
            )
        };
        let (i, n) = text.split_once('/').ok_or_else(bad)?;
        let (index, count): (u64, u64) = (
            i.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        if count == 0 || count > MAX_SHARDS || index >= count {
            return Err(bad());
        }
        return Ok(Some((index, count, "--shard")));
    }
    let number = |name: &str, value: String| -> Result<u64, Refusal> {
        value.trim().parse().map_err(|_| {
            Refusal::new(
                name,
                format!("expected a whole number in the environment, got `{value}`"),
            )
        })
    };
    if let Some(index) = env("JOB_COMPLETION_INDEX") {
        let index = number("JOB_COMPLETION_INDEX", index)?;
        let count = env("LOCKBENCH_SHARDS").ok_or_else(|| {
            Refusal::new(
                "LOCKBENCH_SHARDS",
                "JOB_COMPLETION_INDEX is set (a Kubernetes Indexed Job), so this is a shard: set LOCKBENCH_SHARDS to the Job's completions, or give --shard I/N",
            )
        })?;
        let count = number("LOCKBENCH_SHARDS", count)?;
        return checked(index, count, "JOB_COMPLETION_INDEX and LOCKBENCH_SHARDS");
    }
    if let (Some(id), Some(count)) = (env("SLURM_ARRAY_TASK_ID"), env("SLURM_ARRAY_TASK_COUNT")) {
        // A job array may start at any id (`--array=1-8`): the shard is the id past the first.
        let first = env("SLURM_ARRAY_TASK_MIN")
            .map(|m| number("SLURM_ARRAY_TASK_MIN", m))
            .transpose()?
            .unwrap_or(0);
        let id = number("SLURM_ARRAY_TASK_ID", id)?;
        let count = number("SLURM_ARRAY_TASK_COUNT", count)?;
        let index = id.checked_sub(first).ok_or_else(|| {
            Refusal::new(
                "SLURM_ARRAY_TASK_ID",
                format!("{id} is below SLURM_ARRAY_TASK_MIN {first}"),
            )
        })?;
        return checked(
            index,
            count,
            "SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT",
        );
    }
    Ok(None)
}

fn checked(
    index: u64,
    count: u64,
    from: &'static str,
) -> Result<Option<(u64, u64, &'static str)>, Refusal> {
    if count == 0 || count > MAX_SHARDS || index >= count {
        return Err(Refusal::new(
            from,
            format!("shard {index} of {count}: expected 0 <= index < count <= {MAX_SHARDS}"),
        ));
    }
    Ok(Some((index, count, from)))
}

/// `bench --start-at`: an RFC 3339 time (`2026-12-01T15:00:00Z`), which must lie ahead.
pub fn start_at(text: &str) -> Result<std::time::SystemTime, Refusal> {
    let at = humantime::parse_rfc3339_weak(text).map_err(|e| {
        Refusal::new(
            "--start-at",
            format!(
                "expected a time such as 2026-12-01T15:00:00Z (RFC 3339, UTC), got `{text}` ({e})"
            ),
        )
    })?;
    if at <= std::time::SystemTime::now() {
        return Err(Refusal::new(
            "--start-at",
            format!("{text} has passed: every shard must be started before it"),
        ));
    }
    Ok(at)
}

/// `bench`'s shard, from `--shard`/`--run-id`/`--start-at` and the engine's variables: a shard must
/// start with the others (`--start-at`), end by time rather than by a count of its own, and
/// measure one backend, so that every shard is on one schedule.
pub fn bench(
    args: &crate::cli::BenchArgs,
    ends_by_count: bool,
    backends: usize,
) -> Result<(Option<ShardRecord>, Option<std::time::SystemTime>), Refusal> {
    let shard = resolve(args.shard.as_deref(), args.run_id.as_deref(), &|name| {
        std::env::var(name).ok()
    })?;
    let start_at = args.start_at.as_deref().map(start_at).transpose()?;
    if start_at.is_some() && backends != 1 {
        return Err(Refusal::new(
            "--backend",
            format!(
                "--start-at puts every shard on one schedule, one backend at a time: give one --backend (this config has {backends})"
            ),
        ));
    }
    let Some(mut shard) = shard else {
        return Ok((None, start_at));
    };
    let what = format!(
        "bench shard {}/{} of run {}",
        shard.index, shard.count, shard.run_id
    );
    let Some(at) = start_at else {
        return Err(Refusal::new(
            "--start-at",
            format!(
                "{what}: shards contend as one run only if they measure together: give --start-at TIME (RFC 3339, e.g. 2026-12-01T15:00:00Z), the same for every shard"
            ),
        ));
    };
    if ends_by_count {
        return Err(Refusal::new(
            "--ops",
            format!("{what}: shards end together by time: give --duration, not --ops"),
        ));
    }
    shard.start_at_unix_ms = at
        .duration_since(std::time::UNIX_EPOCH)
        .ok()
        .map(|d| d.as_millis() as u64);
    Ok((Some(shard), Some(at)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn the_flag_wins_and_needs_a_run_id() {
        let s = resolve(Some("2/7"), Some("r1"), &env(&[]))
            .unwrap()
            .unwrap();
        assert_eq!((s.index, s.count, s.run_id.as_str()), (2, 7, "r1"));
        let e = resolve(Some("2/7"), None, &env(&[]))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("--run-id: shard 2/7 (--shard)"), "{e}");
        for bad in ["7/7", "1/0", "x/2", "3", "-1/2"] {
            let e = resolve(Some(bad), Some("r"), &env(&[]))
                .unwrap_err()
                .to_string();
            assert!(e.starts_with("--shard: expected I/N"), "{bad}: {e}");
        }
    }

    #[test]
    fn kubernetes_and_slurm_say_which_shard() {
        let k8s = env(&[
            ("JOB_COMPLETION_INDEX", "3"),
            ("LOCKBENCH_SHARDS", "4"),
            ("LOCKBENCH_RUN_ID", "nightly-1"),
            ("LOCKBENCH_ZONE", "eu-west-1b"),
        ]);
        let s = resolve(None, None, &k8s).unwrap().unwrap();
        assert_eq!(
            (s.index, s.count, s.zone.as_deref()),
            (3, 4, Some("eu-west-1b"))
        );
        let e = resolve(None, Some("r"), &env(&[("JOB_COMPLETION_INDEX", "3")]))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("LOCKBENCH_SHARDS: JOB_COMPLETION_INDEX is set"),
            "{e}"
        );
        let slurm = env(&[
            ("SLURM_ARRAY_TASK_ID", "5"),
            ("SLURM_ARRAY_TASK_MIN", "1"),
            ("SLURM_ARRAY_TASK_COUNT", "8"),
        ]);
        let s = resolve(None, Some("r"), &slurm).unwrap().unwrap();
        assert_eq!((s.index, s.count), (4, 8));
    }

    #[test]
    fn a_whole_run_takes_no_run_id() {
        assert_eq!(resolve(None, None, &env(&[])).unwrap(), None);
        let e = resolve(None, Some("r"), &env(&[])).unwrap_err().to_string();
        assert!(e.starts_with("--run-id:"), "{e}");
        let e = resolve(Some("0/2"), Some("no spaces"), &env(&[]))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("--run-id: expected"), "{e}");
    }
}
