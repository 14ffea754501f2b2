//! `lockbench completions` and `lockbench man`: the shell a user types in, generated from the same
//! clap definitions the binary parses, so they name every command and flag there is.

use std::process::ExitCode;

use anyhow::{Context as _, Result};
use clap::CommandFactory as _;

use crate::cli::{Cli, CompletionsArgs, ManArgs};
use crate::failure::Outcome;

/// Prints the completion script of `args.shell` on stdout.
pub fn completions(args: &CompletionsArgs) -> Outcome {
    let mut command = Cli::command();
    clap_complete::generate(
        args.shell,
        &mut command,
        "lockbench",
        &mut std::io::stdout(),
    );
    Ok(ExitCode::SUCCESS)
}

/// Writes `lockbench.1` and `lockbench-COMMAND.1` for every visible command into `args.out`.
pub fn man(args: &ManArgs) -> Outcome {
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let command = Cli::command();
    let mut written = 0;
    let mut page = |name: String, command: clap::Command| -> Result<()> {
        let mut bytes = Vec::new();
        // A page's title is the command as typed: `lockbench-ttl`, not `ttl`.
        clap_mangen::Man::new(command.name(name.clone()))
            .render(&mut bytes)
            .context("rendering a man page")?;
        let path = args.out.join(format!("{name}.1"));
        lockbench_core::write_whole(&path, &bytes)
            .with_context(|| format!("writing {}", path.display()))?;
        written += 1;
        Ok(())
    };
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        page(format!("lockbench-{}", sub.get_name()), sub.clone())?;
    }
    page("lockbench".to_string(), command.clone())?;
    eprintln!(
        "lockbench: man: {written} pages written to {}",
        args.out.display()
    );
    Ok(ExitCode::SUCCESS)
}
