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
    let options = lockbench_analysis::report::ReportOptions {
        alerts: args.alerts.settings(),
        made_by: args.made_by.clone(),
    };
    output::write_report(&args.dirs, out, true, &options)?;
    Ok(ExitCode::SUCCESS)
}
