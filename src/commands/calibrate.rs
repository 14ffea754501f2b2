//! `lockbench calibrate`: a spec whose step latencies are fitted to observed per-call durations.
//! The grouping, fitting and spec text are `lockbench_workloads::calibration`'s; this writes the
//! files, each whole or not at all.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, Result};
use lockbench_core::write_whole;
use lockbench_workloads::WorkloadSpec;
use lockbench_workloads::calibration::{Calibration, calibrate};

use crate::cli::CalibrateArgs;
use crate::failure::Outcome;
use crate::options::{CalibrateSettings, Refusal};
use crate::render;

pub fn run(args: &CalibrateArgs) -> Outcome {
    let settings = CalibrateSettings::resolve(args)?;
    let calibration = calibrate(&settings.options, &settings.out)?;
    write(&settings.out, &calibration)?;
    render::show(settings.json, &calibration.record, render::calibration_text)?;
    eprintln!(
        "lockbench: calibrate: spec written to {}",
        settings.out.display()
    );
    Ok(ExitCode::SUCCESS)
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
        return Err(Refusal::new(
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
