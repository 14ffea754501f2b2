//! `lockbench fault-worker`: one worker process of a fault-lab trial, started by `lockbench
//! faults`.

use std::io::Read as _;
use std::process::ExitCode;

use anyhow::Context;
use lockbench_faults::AnyPlan;

use crate::failure::Outcome;

/// `lockbench fault-worker`: the plan is one line of JSON on stdin (passwords never on a command
/// line); a contender then waits for the lab's `go` line on the same stdin.
pub fn run() -> Outcome {
    // Byte by byte, so that nothing after the plan's line is taken from stdin here.
    let mut input = Vec::new();
    let mut byte = [0u8; 1];
    let mut stdin = std::io::stdin();
    while stdin
        .read(&mut byte)
        .context("reading the worker's plan on stdin")?
        == 1
        && byte[0] != b'\n'
    {
        input.push(byte[0]);
    }
    let plan: AnyPlan = serde_json::from_slice(&input).context(
        "fault-worker is started by `lockbench faults`, which sends its plan as JSON on stdin",
    )?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(lockbench_faults::run(plan))?;
    Ok(ExitCode::SUCCESS)
}
