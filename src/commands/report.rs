//! `lockbench report`: results directories in, a locking decision record out.

use std::process::ExitCode;

use lockbench_core::ResultsDir;

use crate::cli::ReportArgs;
use crate::failure::Outcome;
use crate::output;

pub fn run(args: &ReportArgs) -> Outcome {
    let out = match &args.out {
        Some(p) => p.clone(),
        None => args.dirs[0].join("report"),
    };
    let out = ResultsDir::new(&out)?;
    output::write_report(&args.dirs, out, true)?;
    Ok(ExitCode::SUCCESS)
}
