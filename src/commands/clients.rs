//! `lockbench clients`: the shipped adapters, their libraries' pinned versions and whether each is
//! installed; `clients check`: adapters through the protocol's checks against real servers.

use std::process::ExitCode;

use anyhow::Context as _;

use crate::cli::{ClientsAction, ClientsArgs, ClientsCheckArgs};
use crate::failure::Outcome;
use crate::options::ClientsCheckSettings;

pub fn run(args: &ClientsArgs) -> Outcome {
    match &args.action {
        None => {
            list();
            Ok(ExitCode::SUCCESS)
        }
        Some(ClientsAction::Check(check)) => run_check(check),
    }
}

/// The table of shipped adapters.
fn list() {
    print!(
        "{}",
        crate::render::clients_table(
            lockbench_clients::programs::pinned,
            lockbench_clients::installed
        )
    );
}

fn run_check(args: &ClientsCheckArgs) -> Outcome {
    let settings = ClientsCheckSettings::resolve(args)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let mut failed = false;
    for (program, config) in &settings.adapters {
        let conformance =
            runtime.block_on(lockbench_clients::conformance::check(program, config))?;
        let total = conformance.checks.len();
        match conformance.checks.iter().find(|c| !c.passed) {
            None => println!(
                "{}: passes the adapter protocol ({} on {}, {total} checks)",
                program.name,
                conformance.library,
                config.kind.name()
            ),
            Some(check) => {
                eprintln!(
                    "lockbench: error: {}: fails the adapter protocol at \"{}\": {}",
                    program.name, check.name, check.detail
                );
                failed = true;
            }
        }
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
