//! The stall cells (with `--scenario runner`): the model's chance that a runner starts a living
//! job again, beside the rate the real runner does it at.
//!
//! Each runner, at its setting shorter than the lab's job (BullMQ's `lockDuration` 1.5 s, Celery's
//! `visibility_timeout` and pg-boss's `expireInSeconds` 2 s), runs [`TRIALS`] trials; in each, the
//! first execution of the one job stalls for a time drawn from a Pareto pause law
//! ([`LAW`], `lockbench_workloads::Latency`, the law a spec's pauses are written in), and the
//! trial counts how often the runner started the job. A later execution runs [`AGAIN`]. BullMQ's
//! stall holds the worker's event loop, so its lock renewals stop as in a garbage-collection
//! pause; Celery's and pg-boss's timeouts count the time since the job was handed out, which a
//! paused task and a slow one spend alike.
//!
//! The model runs the job twice when the stall outlives the setting: the chance `ttl` prices,
//! P(stall > setting) (BullMQ's lock is fresh when the job starts, so its renewal's phase does
//! not enter). The lab's runner looks every [`CHECK`] (its stalled-job check, sweep or
//! maintenance), so a stall a little longer than the setting may end before anyone looks: the
//! chance lies between P(stall > setting) and P(stall > setting + check), as the phase of the
//! runner's look against the job's start falls (a poll grid that both follow can pin it: with
//! fresh workers each trial, pg-boss's retries all started 2.0-2.1 s after a 2 s expiry). The
//! cell holds the trials run twice to the range the two allow 95 % of the time (binomial), and
//! `ttl`'s figure is the upper end: it prices the runner as looking at once.
//!
//! The two workers run the cell's trials one after another, as a runner's workers do.

use std::time::Duration;

use lockbench_core::records::faults::{RunnerStallCell, RunnerTrialRow, TaskLock};
use lockbench_core::records::runner::RunnerKind;
use lockbench_workloads::latency::Latency;
use rand::{RngExt, SeedableRng};

use crate::FaultError;
use crate::resource::Resource;
use crate::runners::{
    Broker, Job, RunnerPlan, RunnerProgram, RunnerStage, lease_setting, runner_env, send_and_count,
};

/// Trials per stall cell: enough for a rate near a third to tell a model that is off by half.
pub const TRIALS: u32 = 20;

/// The pause law's least stall, in seconds.
pub const LAW_SCALE: f64 = 1.0;
/// Its tail index.
pub const LAW_SHAPE: f64 = 1.5;
/// Its cap, in seconds (a trial stays short).
pub const LAW_MAX: f64 = 5.0;

/// The pause law the first execution's stall is drawn from: Pareto.
pub const LAW: Latency = Latency::Pareto {
    scale: LAW_SCALE,
    shape: LAW_SHAPE,
    max: LAW_MAX,
};

/// How often the lab's runners look for a job past its setting.
pub const CHECK: Duration = Duration::from_secs(1);

/// How long an execution after the first runs.
pub const AGAIN: Duration = Duration::from_millis(200);

/// One stall cell: a runner at its short setting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StallPlan {
    /// The runner.
    pub runner: RunnerKind,
}

impl StallPlan {
    /// The setting the cell runs with: the runner cells' short one.
    pub fn setting(self) -> Duration {
        RunnerPlan {
            runner: self.runner,
            recommended: false,
            lock: TaskLock::None,
        }
        .setting()
        .1
    }

    /// `runner/bullmq lockDuration 1.5s stalls`.
    pub fn label(self) -> String {
        format!(
            "runner/{} {} {}s stalls",
            self.runner.word(),
            lease_setting(self.runner).field(),
            self.setting().as_secs_f64()
        )
    }

    /// The chance per run that a stall drawn from [`LAW`] outlives the setting, and that it
    /// outlives the setting and a whole [`CHECK`].
    pub fn chances(self) -> (f64, f64) {
        let setting = self.setting().as_secs_f64();
        let outlives = |t: f64| 1.0 - LAW.cdf(t);
        (outlives(setting), outlives(setting + CHECK.as_secs_f64()))
    }

    /// The stalls of `trials` trials, drawn from [`LAW`] by `seed` (the runner's own stream).
    pub fn stalls(self, trials: u32, seed: u64) -> Vec<f64> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(
            seed ^ (self.runner as u64 + 1).wrapping_mul(0x9E37_79B9),
        );
        (0..trials)
            .map(|_| (LAW.quantile(rng.random::<f64>()) * 1000.0).round() / 1000.0)
            .collect()
    }

    fn injected(self) -> String {
        let (setting, value) = (lease_setting(self.runner), self.setting());
        let set = setting.native_value(value);
        let stall = match self.runner {
            RunnerKind::Bullmq => "holds the worker's event loop (no lock renewal runs)",
            _ => "sleeps (the runner's timeout counts from the hand-out, stalled or not)",
        };
        let (scale, shape, max) = (LAW_SCALE, LAW_SHAPE, LAW_MAX);
        format!(
            "two workers of the runner cells, {set}; one job a trial, whose first execution {stall} for a time drawn from a Pareto law (at least {scale} s, tail index {shape}, capped at {max} s), a later one running {} s",
            AGAIN.as_secs_f64()
        )
    }
}

/// The 95 % range of a binomial count of `n` trials at chance `p`: the lowest and highest
/// counts with at most 2.5 % below and above.
pub fn binomial_range(n: u32, p: f64) -> (u32, u32) {
    let pmf = |k: u32| -> f64 {
        let ln_choose = (1..=k)
            .map(|i| (f64::from(n - k + i) / f64::from(i)).ln())
            .sum::<f64>();
        (ln_choose + f64::from(k) * p.ln() + f64::from(n - k) * (1.0 - p).ln()).exp()
    };
    if p <= 0.0 {
        return (0, 0);
    }
    if p >= 1.0 {
        return (n, n);
    }
    let mut below = 0.0;
    let mut low = 0;
    while low < n && below + pmf(low) <= 0.025 {
        below += pmf(low);
        low += 1;
    }
    let mut above = 0.0;
    let mut high = n;
    while high > 0 && above + pmf(high) <= 0.025 {
        above += pmf(high);
        high -= 1;
    }
    (low, high)
}

/// Runs the stall cell of `runner`, the stalls drawn by `seed`; `progress` is told after each
/// trial.
pub async fn run_cell(
    plan: StallPlan,
    seed: u64,
    stage: &RunnerStage<'_>,
    resource: &mut Resource,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<(RunnerStallCell, Vec<RunnerTrialRow>), FaultError> {
    let program = RunnerProgram::find(plan.runner)?;
    let dir = crate::server::OwnedDir(crate::server::private_dir("stall")?);
    let broker = Broker::start(plan.runner, stage, crate::runners::BOSS_LANES[1]).await?;
    let mut env = runner_env(plan.runner, plan.setting(), &broker, stage);
    env.push(("LB_TASK_LOCK".to_string(), String::new()));
    env.push((
        "LB_AGAIN_SECONDS".to_string(),
        format!("{}", AGAIN.as_secs_f64()),
    ));
    let stalls = plan.stalls(TRIALS, seed);
    let label = plan.label();
    broker.empty().await?;
    let workers = crate::runners::start_pair(&program, &env, &dir.0).await;
    let mut rows = Vec::new();
    let mut failure = None;
    match workers {
        Err(e) => failure = Some(e),
        Ok(workers) => {
            for (trial, stall) in stalls.iter().enumerate() {
                let name = format!("{label}#{trial}");
                let job = Job {
                    trial: &name,
                    seconds: *stall,
                    bound: Duration::from_secs_f64(stall + plan.setting().as_secs_f64())
                        + Duration::from_secs(15),
                };
                match send_and_count(&job, &program, &env, &dir.0, None, resource).await {
                    Ok(figures) => rows.push(RunnerTrialRow {
                        runner: plan.runner,
                        setting: lease_setting(plan.runner),
                        setting_s: plan.setting().as_secs_f64(),
                        recommended: false,
                        task_lock: TaskLock::None,
                        trial: trial as u32,
                        executions: figures.executions,
                        overlap_s: figures.overlap_s,
                        stale_writes: figures.stale_writes,
                        second_start_s: figures.second_start_s,
                        skipped: figures.skipped,
                        stall_s: Some(*stall),
                    }),
                    Err(e) => {
                        failure = Some(e);
                        break;
                    }
                }
                progress(&label);
            }
            for w in workers {
                w.stop(Duration::from_secs(5)).await;
            }
        }
    }
    broker.close(resource).await?;
    if let Some(e) = failure {
        return Err(e);
    }
    let (model_p, model_late_p) = plan.chances();
    let n = rows.len() as u32;
    let cell = RunnerStallCell {
        runner: plan.runner,
        library: program.library.clone(),
        setting: lease_setting(plan.runner),
        setting_s: plan.setting().as_secs_f64(),
        check_s: CHECK.as_secs_f64(),
        law_scale_s: LAW_SCALE,
        law_shape: LAW_SHAPE,
        law_max_s: LAW_MAX,
        injected: plan.injected(),
        trials: rows.len() as u32,
        stalls_s: rows.iter().filter_map(|r| r.stall_s).collect(),
        executions: rows.iter().map(|r| r.executions).collect(),
        model_p,
        model_late_p,
        expected_twice: (
            binomial_range(n, model_late_p).0,
            binomial_range(n, model_p).1,
        ),
    };
    Ok((cell, rows))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_binomial_range_holds_at_least_95_percent() {
        for (n, p) in [(20, 0.26), (20, 0.37), (100, 0.5), (20, 0.01)] {
            let (low, high) = binomial_range(n, p);
            // The exact mass inside, by summing the pmf the long way.
            let mut inside = 0.0;
            for k in low..=high {
                let mut c = 1.0;
                for i in 0..k {
                    c *= f64::from(n - i) / f64::from(i + 1);
                }
                inside += c * p.powi(k as i32) * (1.0 - p).powi((n - k) as i32);
            }
            assert!(inside >= 0.95, "{n} {p}: {low}..={high} holds {inside}");
            assert!(
                low <= high
                    && f64::from(low) <= f64::from(n) * p
                    && f64::from(high) >= f64::from(n) * p
            );
        }
        assert_eq!(binomial_range(20, 0.0), (0, 0));
    }

    #[test]
    fn the_check_lowers_the_chance_and_the_stalls_follow_the_law() {
        for runner in crate::runners::RUNNERS {
            let plan = StallPlan { runner };
            let (model, late) = plan.chances();
            assert!(late < model && late > 0.1, "{runner:?}: {model} {late}");
            // Pareto: P(stall > x) = x^-1.5 for a 1 s scale.
            let s = plan.setting().as_secs_f64();
            assert!((model - s.powf(-1.5)).abs() < 1e-12);
            assert!((late - (s + 1.0).powf(-1.5)).abs() < 1e-12);
            let stalls = plan.stalls(4000, 7);
            let over = stalls.iter().filter(|x| **x > s).count() as f64 / 4000.0;
            assert!(
                (over - model).abs() < 0.03,
                "{runner:?}: {over} against {model}"
            );
            assert!(stalls.iter().all(|x| (1.0..=5.0).contains(x)));
            assert_eq!(stalls, plan.stalls(4000, 7));
        }
    }
}
