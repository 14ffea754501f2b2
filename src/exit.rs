//! lockbench's exit codes, in one place: what `main` returns, what the commands that measure
//! return when part of the measurement could not be made, and what `run` reads from its steps.

use std::process::ExitCode;

/// How a lockbench process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// 0: everything asked was done.
    Ok,
    /// 1: something failed that is neither the input's fault nor a server's.
    Failed,
    /// 2: bad input the user can fix (a flag, a spec, a config, a results directory); one line
    /// names the file or flag and what was expected.
    BadInput,
    /// 3: partly measured (a backend or a fault cell could not run; the results say which) or a
    /// server that cannot be reached (one line names it and how to start it).
    Partial,
    /// 4: a shard that could not be ready by its start time.
    NotReady,
    /// 130: stopped by SIGINT, after cleaning up.
    Interrupted,
    /// 143: stopped by SIGTERM, after cleaning up.
    Terminated,
}

impl Exit {
    const ALL: [Exit; 7] = [
        Exit::Ok,
        Exit::Failed,
        Exit::BadInput,
        Exit::Partial,
        Exit::NotReady,
        Exit::Interrupted,
        Exit::Terminated,
    ];

    /// The process exit code.
    pub const fn code(self) -> u8 {
        match self {
            Exit::Ok => 0,
            Exit::Failed => 1,
            Exit::BadInput => 2,
            Exit::Partial => 3,
            Exit::NotReady => 4,
            // 128 plus the signal's number, as a shell reports a process the signal ended.
            Exit::Interrupted => 130,
            Exit::Terminated => 143,
        }
    }

    /// What a step's exit code (as `run` reads it) means; any code lockbench does not use, and
    /// a step a signal ended without its cleanup (no code), is a failure.
    pub fn of(code: Option<i32>) -> Exit {
        Self::ALL
            .into_iter()
            .find(|e| code == Some(i32::from(e.code())))
            .unwrap_or(Exit::Failed)
    }
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> ExitCode {
        ExitCode::from(exit.code())
    }
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "exit code {}", self.code())
    }
}

#[cfg(test)]
mod tests {
    use super::Exit;

    #[test]
    fn every_code_reads_back_as_itself_and_others_are_failures() {
        for e in Exit::ALL {
            assert_eq!(Exit::of(Some(i32::from(e.code()))), e);
        }
        assert_eq!(Exit::of(Some(101)), Exit::Failed);
        assert_eq!(Exit::of(None), Exit::Failed);
        assert_eq!(Exit::Partial.to_string(), "exit code 3");
    }
}
