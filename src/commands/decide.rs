//! `lockbench decide`: each spec's answers and the results' measurements in, a decision per job
//! out (the rules are `lockbench_decision::decide`).

use std::process::ExitCode;

use anyhow::Result;
use lockbench_analysis::report;
use lockbench_decision::{Assumption, Decision, Evidence, decide_assuming};
use lockbench_workloads::WorkloadSpec;

use crate::cli::DecideArgs;
use crate::failure::Outcome;
use crate::options::Refusal;
use crate::render;

pub fn run(args: &DecideArgs) -> Outcome {
    let specs = args
        .specs
        .iter()
        .map(|p| WorkloadSpec::load(p))
        .collect::<Result<Vec<_>, _>>()?;
    let evidence = if args.results.is_empty() {
        Evidence::default()
    } else {
        report::load(&args.results)?.for_decision()
    };
    let answers: Vec<_> = specs.iter().map(|s| s.answers()).collect();
    let has_step =
        |a: &lockbench_workloads::JobAnswers, step: &str| a.steps.iter().any(|s| s.name == step);
    // A guard is assumed on each spec with that step; one no spec has is a typo.
    for assumption in &args.assume {
        if let Assumption::Guard { step } = assumption
            && !answers.iter().any(|a| has_step(a, step))
        {
            let steps: Vec<&str> = answers
                .iter()
                .flat_map(|a| a.steps.iter().map(|s| s.name.as_str()))
                .collect();
            return Err(Refusal::new(
                "--assume",
                format!(
                    "no spec given has a step \"{step}\" for guard:{step}; their steps: {}",
                    steps.join(", ")
                ),
            )
            .into());
        }
    }
    let decisions = answers
        .iter()
        .map(|a| {
            let applies: Vec<Assumption> = args
                .assume
                .iter()
                .filter(|x| match x {
                    Assumption::Guard { step } => has_step(a, step),
                    Assumption::Client { .. } => true,
                })
                .cloned()
                .collect();
            decide_assuming(a, &evidence, &applies).map_err(|e| Refusal::new("--assume", e))
        })
        .collect::<Result<Vec<Decision>, Refusal>>()?;
    render::show(args.json, &decisions, |d| render::decisions(d))?;
    Ok(ExitCode::SUCCESS)
}
