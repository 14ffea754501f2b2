//! `lockbench report`: results directories in, a locking decision record out.

use std::process::ExitCode;

use anyhow::Result;
use lockbench_analysis::report;
use lockbench_core::ResultsDir;

use crate::cli::ReportArgs;
use crate::commands::shared;
use crate::failure::Outcome;

pub fn run(args: &ReportArgs) -> Outcome {
    let out = match &args.out {
        Some(p) => p.clone(),
        None => args.dirs[0].join("report"),
    };
    let out = ResultsDir::new(&out)?;
    write(&args.dirs, out, true)?;
    Ok(ExitCode::SUCCESS)
}

/// Loads `dirs`, builds the report and writes it to `out` (complete or not at all), saying where
/// when `announce` is true.
pub fn write(dirs: &[std::path::PathBuf], out: ResultsDir, announce: bool) -> Result<()> {
    let evidence = report::load(dirs)?;
    if evidence.is_empty() {
        return Err(report::ReportError::Input {
            path: dirs[0].clone(),
            message: "holds no results of simulate, ttl, bench or replay".to_string(),
        }
        .into());
    }
    let built = report::build(&evidence)?;
    let mut out = out;
    out.add("report.md", built.markdown.into_bytes())?;
    out.add("report.html", built.html.into_bytes())?;
    for (name, chart) in &built.charts {
        out.add(&format!("charts/{name}.png"), chart.png.clone())?;
        out.add(
            &format!("charts/{name}.svg"),
            chart.svg.clone().into_bytes(),
        )?;
    }
    let manifest = shared::manifest(&out, "report", None, 1, Vec::new());
    shared::commit_as(out, manifest, announce)
}
