//! Settings of `calibrate`.

use std::path::{Path, PathBuf};

use lockbench_workloads::WorkloadSpec;
use lockbench_workloads::calibration::CalibrationOptions;
use lockbench_workloads::observed::CsvColumns;

use super::parse::Refusal;
use crate::cli::CalibrateArgs;

/// `calibrate`'s flags, checked: what to fit and the spec file to write.
#[derive(Clone, Debug)]
pub struct CalibrateSettings {
    pub options: CalibrationOptions,
    /// The spec to write; its samples files go beside it.
    pub out: PathBuf,
    pub json: bool,
}

impl CalibrateSettings {
    /// Checks the flags (and reads `--spec`) before anything is fitted.
    pub fn resolve(args: &CalibrateArgs) -> Result<Self, anyhow::Error> {
        let base = args.spec.as_deref().map(WorkloadSpec::load).transpose()?;
        let options = CalibrationOptions {
            inputs: args.inputs.clone(),
            columns: CsvColumns {
                name: Some(args.step_column.clone()),
                duration: args.duration_column.clone(),
                ms: args.ms_column.clone(),
            },
            renames: renames(&args.renames)?,
            steps: args.steps.clone(),
            base,
        };
        check_out(&args.out)?;
        Ok(CalibrateSettings {
            options,
            out: args.out.clone(),
            json: args.json,
        })
    }
}

fn renames(pairs: &[String]) -> Result<Vec<(String, String)>, Refusal> {
    pairs
        .iter()
        .map(|p| match p.split_once('=') {
            Some((from, to)) if !from.is_empty() && !to.is_empty() => {
                Ok((from.to_string(), to.to_string()))
            }
            _ => Err(Refusal::new(
                "--rename",
                format!("expected FROM=TO (a span or row name and a step), got \"{p}\""),
            )),
        })
        .collect()
}

fn check_out(out: &Path) -> Result<(), Refusal> {
    let flag = format!("--out {}", out.display());
    if out.exists() {
        return Err(Refusal::new(
            &flag,
            "exists; remove it or choose another file",
        ));
    }
    let dir = out.parent().filter(|d| !d.as_os_str().is_empty());
    if dir.is_some_and(|d| !d.is_dir()) {
        return Err(Refusal::new(&flag, "its folder does not exist"));
    }
    if out.file_stem().is_none() {
        return Err(Refusal::new(
            &flag,
            "expected a file name such as calibrated.toml",
        ));
    }
    Ok(())
}
