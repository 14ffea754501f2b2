//! `lockbench calibrate`: a spec whose step latencies are fitted to observed per-call durations.
//! The grouping, fitting and spec text are `lockbench_workloads::calibration`'s; this writes the
//! files, each whole or not at all.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, Result};
use lockbench_core::write_whole;
use lockbench_workloads::WorkloadSpec;
use lockbench_workloads::calibration::{Calibration, CalibrationOptions, calibrate};
use lockbench_workloads::observed::CsvColumns;

use crate::cli::CalibrateArgs;
use crate::options::{UsageError, usage};
use crate::render;

pub fn run(args: &CalibrateArgs) -> Result<ExitCode> {
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
    let calibration = calibrate(&options, &args.out)?;
    write(&args.out, &calibration)?;
    render::show(args.json, &calibration.record, render::calibration_text)?;
    eprintln!(
        "lockbench: calibrate: spec written to {}",
        args.out.display()
    );
    Ok(ExitCode::SUCCESS)
}

fn renames(pairs: &[String]) -> Result<Vec<(String, String)>, UsageError> {
    pairs
        .iter()
        .map(|p| match p.split_once('=') {
            Some((from, to)) if !from.is_empty() && !to.is_empty() => {
                Ok((from.to_string(), to.to_string()))
            }
            _ => Err(usage(
                "--rename",
                format!("expected FROM=TO (a span or row name and a step), got \"{p}\""),
            )),
        })
        .collect()
}

fn check_out(out: &Path) -> Result<(), UsageError> {
    let flag = format!("--out {}", out.display());
    if out.exists() {
        return Err(usage(&flag, "exists; remove it or choose another file"));
    }
    let dir = out.parent().filter(|d| !d.as_os_str().is_empty());
    if dir.is_some_and(|d| !d.is_dir()) {
        return Err(usage(&flag, "its folder does not exist"));
    }
    if out.file_stem().is_none() {
        return Err(usage(&flag, "expected a file name such as calibrated.toml"));
    }
    Ok(())
}

/// Writes the samples files beside `out`, then the spec, each whole or not at all. What we write
/// must load as `validate` loads it: a fit that does not is our bug, and then nothing is left
/// behind.
fn write(out: &Path, calibration: &Calibration) -> Result<()> {
    let folder = out
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .map_or(PathBuf::from("."), Path::to_path_buf);
    let files: Vec<(PathBuf, &str)> = calibration
        .samples_files
        .iter()
        .map(|(name, text)| (folder.join(name), text.as_str()))
        .collect();
    if let Some((taken, _)) = files.iter().find(|(path, _)| path.exists()) {
        return Err(usage(
            &format!("--out {}", out.display()),
            format!(
                "the samples file {} beside it exists; remove it or choose another --out",
                taken.display()
            ),
        )
        .into());
    }
    let mut written: Vec<&Path> = Vec::new();
    for (path, text) in &files {
        if let Err(e) =
            write_whole(path, text).with_context(|| format!("writing {}", path.display()))
        {
            remove_all(&written);
            return Err(e);
        }
        written.push(path);
    }
    // The spec must read back (its samples files beside it) before it is written.
    let loaded = WorkloadSpec::parse(&calibration.spec, out)
        .map_err(anyhow::Error::from)
        .and_then(|_| {
            write_whole(out, &calibration.spec)
                .with_context(|| format!("writing {}", out.display()))
        });
    if let Err(e) = loaded {
        remove_all(&written);
        anyhow::bail!("calibrate could not write a spec that reads back: {e:#}");
    }
    Ok(())
}

fn remove_all(paths: &[&Path]) {
    for path in paths {
        let _ = std::fs::remove_file(path);
    }
}
