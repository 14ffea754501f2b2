//! The lockbench binary: parses flags, resolves them into options, calls the library crates and
//! prints. No domain logic lives here.

mod cli;
mod commands;
mod exit;
mod failure;
mod options;
mod output;
mod progress;
mod render;
mod signals;
mod values;

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};
use crate::exit::Exit;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // Help and version go out as clap writes them; a flag clap itself refuses (unknown,
        // missing its value, in conflict) is one line, exit 2, as every other bad input.
        Err(e)
            if !e.use_stderr()
                || e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand =>
        {
            e.exit()
        }
        Err(e) => {
            eprintln!("lockbench: error: {}; see --help", clap_line(&e));
            return Exit::BadInput.into();
        }
    };
    let result = match cli.command {
        Command::Simulate(args) => commands::simulate::run(&args),
        Command::Ttl(args) => commands::ttl::run(&args),
        Command::Validate(args) => commands::validate::run(&args),
        Command::Decide(args) => commands::decide::run(&args),
        Command::Calibrate(args) => commands::calibrate::run(&args),
        Command::Check(args) => commands::check::run(&args),
        Command::Bench(args) => commands::bench::run(&args),
        Command::Replay(args) => commands::replay::run(&args),
        Command::Report(args) => commands::report::run(&args),
        Command::Compare(args) => commands::compare::run(&args),
        Command::Run(args) => commands::run::run(&args),
        Command::Faults(args) => commands::faults::run(&args),
        Command::Clients(args) => commands::clients::run(&args),
        Command::Merge(args) => commands::merge::run(&args),
        Command::Completions(args) => commands::shell::completions(&args),
        Command::Man(args) => commands::shell::man(&args),
        Command::FaultWorker(_) => commands::fault_worker::run(),
    };
    match result {
        Ok(code) => code,
        Err(failure) => {
            // `{:#}` joins the context chain on one line: "billing.toml:12: steps[1]...: ...".
            eprintln!("lockbench: error: {:#}", failure.error);
            failure.exit.into()
        }
    }
}

/// clap's refusal on one line: its first line, then what it adds below it (the possible values, a
/// similar flag), without the usage block.
fn clap_line(error: &clap::Error) -> String {
    let text = error.render().to_string();
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or("bad arguments");
    let mut line = first.strip_prefix("error: ").unwrap_or(first).to_string();
    for extra in lines.take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more")) {
        let extra = extra.trim_start_matches('[').trim_end_matches(']');
        line.push_str("; ");
        line.push_str(extra.strip_prefix("tip: ").unwrap_or(extra));
    }
    line
}
