//! `lockbench validate`: check specs without running them.

use std::process::ExitCode;

use lockbench_core::format_count;
use lockbench_workloads::WorkloadSpec;

use crate::cli::ValidateArgs;
use crate::exit::Exit;
use crate::failure::Outcome;

pub fn run(args: &ValidateArgs) -> Outcome {
    let mut failed = false;
    for path in &args.specs {
        match WorkloadSpec::load(path) {
            Ok(spec) => {
                let profiles: Vec<&str> = spec.profiles.iter().map(|p| p.name.as_str()).collect();
                println!(
                    "{}: ok: workload \"{}\", {} {}, {} steps, profiles: {}",
                    path.display(),
                    spec.workload.name,
                    format_count(spec.workload.volume),
                    spec.workload.unit,
                    spec.steps.len(),
                    profiles.join(", ")
                );
            }
            Err(e) => {
                eprintln!("lockbench: error: {e}");
                failed = true;
            }
        }
    }
    // Every spec is checked and reported before the exit code says whether any failed.
    Ok(if failed {
        Exit::BadInput.into()
    } else {
        ExitCode::SUCCESS
    })
}
