//! `lockbench decide`: each spec's answers and the results' measurements in, a decision per job
//! out (the rules are `lockbench_decision::decide`).

use std::process::ExitCode;

use anyhow::Result;
use lockbench_analysis::report;
use lockbench_decision::{Decision, Evidence, decide};
use lockbench_workloads::WorkloadSpec;

use crate::cli::DecideArgs;
use crate::failure::Outcome;
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
    let decisions: Vec<Decision> = specs
        .iter()
        .map(|spec| decide(&spec.answers(), &evidence))
        .collect();
    render::show(args.json, &decisions, |d| render::decisions(d))?;
    Ok(ExitCode::SUCCESS)
}
