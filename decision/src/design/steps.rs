//! Each step of the job: what a double run of it does, given its answers.

use lockbench_workloads::{DoubleRun, Guard, JobAnswers, StepAnswers, Target};

use crate::answers::effect;
use crate::record::StepRow;

/// One row per step.
pub(crate) fn steps(job: &JobAnswers, double_run: DoubleRun) -> Vec<StepRow> {
    job.steps
        .iter()
        .map(|s: &StepAnswers| StepRow {
            step: s.name.clone(),
            target: s.target.name().to_string(),
            idempotent: match s.idempotent {
                Some(true) => "yes",
                Some(false) => "no",
                None => "not answered",
            }
            .to_string(),
            guard: s.guard.map_or("not answered", |g| g.name()).to_string(),
            double_run: if s.idempotent == Some(true) {
                "nothing: twice has the effect of once".to_string()
            } else if let Some(g) = s.guard.filter(|g| *g != Guard::None) {
                format!("refused by its {}", g.name())
            } else {
                match (double_run, s.target) {
                    (DoubleRun::Absorbed, _) => "runs twice; absorbed downstream".to_string(),
                    (DoubleRun::WastedWork, _) => "runs twice; wasted work".to_string(),
                    (DoubleRun::Charges, Target::Api) => "charges twice".to_string(),
                    (_, Target::Db) => "writes twice: corrupts the job's data".to_string(),
                    _ => format!("runs twice: a second run {}", effect(double_run)),
                }
            },
        })
        .collect()
}
