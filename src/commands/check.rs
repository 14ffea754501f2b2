//! `lockbench check`: past job runs against the simulated distribution at each run's volume.

use lockbench_core::RunKind;
use std::process::ExitCode;

use lockbench_core::SpecRecord;
use lockbench_core::records::model::CHECK_CSV;
use lockbench_core::records::{RESULTS_JSON, to_csv, to_json};
use lockbench_workloads::observed::read_runs;

use crate::cli::CheckArgs;
use crate::failure::Outcome;
use crate::options::CheckSettings;
use crate::output::{check_model, commit, manifest, prepare_out};
use crate::render;

pub fn run(args: &CheckArgs) -> Outcome {
    let CheckSettings {
        spec,
        default_profile,
        observed,
        columns,
        simulation,
    } = CheckSettings::resolve(args)?;
    let out = prepare_out(&simulation)?;
    let runs = read_runs(&observed, &spec, &default_profile, &columns)?;
    let checked = check_model(&spec, &observed, &runs, &simulation)?;
    render::show(simulation.json, &checked.record, render::check_text)?;
    if let Some(mut out) = out {
        out.add(RESULTS_JSON, to_json(&checked.record))?;
        out.add(CHECK_CSV, to_csv(&checked.runs))?;
        let specs = vec![SpecRecord {
            path: spec.path.display().to_string(),
            text: spec.text.clone(),
        }];
        let m = manifest(
            &out,
            RunKind::Check,
            Some(simulation.seed),
            simulation.threads,
            specs,
        );
        commit(out, m)?;
    }
    Ok(ExitCode::SUCCESS)
}
