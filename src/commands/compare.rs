//! `lockbench compare`: the change between two sets of results, metric by metric, and each
//! job's decision on both.

use std::process::ExitCode;

use lockbench_analysis::comparison::compare_dirs;

use crate::cli::CompareArgs;
use crate::failure::Outcome;
use crate::render;

pub fn run(args: &CompareArgs) -> Outcome {
    let comparison = compare_dirs(&args.before, &args.after)?;
    render::show(args.json, &comparison, render::comparison_text)?;
    Ok(ExitCode::SUCCESS)
}
