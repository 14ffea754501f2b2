//! How an error ends a command, decided where the error type is named: every error type a
//! command meets is listed once below with what it means (bad input, a server out of reach, a
//! stop by a signal, a shard not ready; anything else is a failure). A command returns
//! [`Outcome`], and its `?` turns an error into a [`Failure`] through [`Classify`], which only
//! the listed types have: a new library error type does not compile into a command until it is
//! given its meaning here. Errors that reach a command inside an `anyhow::Error` (through a
//! helper's context) are classified by the same list, cause by cause.

use std::error::Error as StdError;
use std::process::ExitCode;

use lockbench_analysis::report::ReportError;
use lockbench_core::ResultsError;
use lockbench_locks::LockError;

use crate::exit::Exit;

/// A command's error and the exit code it means.
#[derive(Debug)]
pub struct Failure {
    pub error: anyhow::Error,
    pub exit: Exit,
}

/// What a command returns.
pub type Outcome = Result<ExitCode, Failure>;

/// What an error means for the exit code, when it means more than a failure.
pub trait Classify {
    fn exit(&self) -> Option<Exit>;
}

impl<E> From<E> for Failure
where
    E: Classify + StdError + Send + Sync + 'static,
{
    fn from(e: E) -> Self {
        Failure::from(anyhow::Error::new(e))
    }
}

impl From<anyhow::Error> for Failure {
    fn from(error: anyhow::Error) -> Self {
        let exit = exit_of(&error);
        Failure { error, exit }
    }
}

/// The most telling meaning along the error's chain: a stop by a signal, then a shard not ready,
/// then a server out of reach, then bad input; a failure when no cause says more.
pub fn exit_of(error: &anyhow::Error) -> Exit {
    let rank = |e: Exit| match e {
        Exit::Interrupted | Exit::Terminated => 5,
        Exit::NotReady => 4,
        Exit::Partial => 3,
        Exit::BadInput => 2,
        Exit::Ok | Exit::Failed => 1,
    };
    error
        .chain()
        .filter_map(exit_of_cause)
        .max_by_key(|e| rank(*e))
        .unwrap_or(Exit::Failed)
}

fn unreachable_lock(e: &LockError) -> Option<Exit> {
    match e {
        LockError::Unreachable { .. } => Some(Exit::Partial),
        // A URL the backend cannot be trusted on is bad input.
        LockError::Refused { .. } => Some(Exit::BadInput),
        _ => None,
    }
}

/// Lists each error type with its meaning: its [`Classify`] impl, and its place in
/// [`exit_of_cause`], from one line.
macro_rules! classified {
    ($($ty:ty => $meaning:expr),* $(,)?) => {
        $(
            impl Classify for $ty {
                fn exit(&self) -> Option<Exit> {
                    let meaning: fn(&$ty) -> Option<Exit> = $meaning;
                    meaning(self)
                }
            }
        )*

        /// What one cause of a chain means, if it is of a listed type.
        fn exit_of_cause(cause: &(dyn StdError + 'static)) -> Option<Exit> {
            $(
                if let Some(e) = cause.downcast_ref::<$ty>() {
                    return Classify::exit(e);
                }
            )*
            None
        }
    };
}

classified! {
    // Bad input: one line names the flag or file and what was expected.
    crate::options::Refusal => |_| Some(Exit::BadInput),
    lockbench_workloads::SpecError => |_| Some(Exit::BadInput),
    lockbench_workloads::observed::ObservedError => |_| Some(Exit::BadInput),
    lockbench_workloads::calibration::CalibrationError => |e| e.is_input().then_some(Exit::BadInput),
    lockbench_core::records::RecordError => |_| Some(Exit::BadInput),
    lockbench_core::shards::MergeError => |_| Some(Exit::BadInput),
    ReportError => |e| {
        matches!(e, ReportError::Input { .. } | ReportError::Record(_)).then_some(Exit::BadInput)
    },
    ResultsError => |e| {
        matches!(
            e,
            ResultsError::NotEmpty(_) | ResultsError::NotADirectory(_) | ResultsError::Unwritable { .. }
        )
        .then_some(Exit::BadInput)
    },
    // A server out of reach: one line names it and how to start it (or a URL refused).
    LockError => unreachable_lock,
    lockbench_faults::FaultError => |e| match e {
        lockbench_faults::FaultError::Unreachable(_) => Some(Exit::Partial),
        lockbench_faults::FaultError::Lock(lock) => unreachable_lock(lock),
        _ => None,
    },
    lockbench_replay::LiveError => |e| match e {
        lockbench_replay::LiveError::Lock(lock) => unreachable_lock(lock),
        _ => None,
    },
    // A stop by a signal, after the cleanup; a shard that could not be ready for its start.
    crate::signals::Interrupted => |e| Some(e.by.exit()),
    lockbench_bench::NotReady => |_| Some(Exit::NotReady),
    // An unknown adapter is bad input; a library not installed is like a server not started.
    lockbench_clients::ClientsError => |e| match e {
        lockbench_clients::ClientsError::Unknown(_) => Some(Exit::BadInput),
        lockbench_clients::ClientsError::NotInstalled { .. } => Some(Exit::Partial),
        _ => None,
    },
    // Failures, nothing more.
    std::io::Error => |_| None,
    lockbench_analysis::MissingSimulation => |_| None,
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context as _;

    #[test]
    fn a_cause_deep_in_the_chain_decides_and_the_strongest_wins() {
        let spec = lockbench_workloads::WorkloadSpec::parse("nope", std::path::Path::new("x.toml"))
            .unwrap_err();
        let failure = Failure::from(anyhow::Error::new(spec).context("reading the spec"));
        assert_eq!(failure.exit, Exit::BadInput);
        let io = std::io::Error::other("disk full");
        assert_eq!(Failure::from(io).exit, Exit::Failed);
        let unreachable = LockError::Unreachable {
            backend: lockbench_locks::BackendKind::Redis,
            url: "redis://127.0.0.1:1".into(),
            reason: "refused".into(),
        };
        assert_eq!(Failure::from(unreachable).exit, Exit::Partial);
        let refusal = crate::options::Refusal::new("--replays", "expected a number");
        let plain: anyhow::Result<()> = Err(anyhow::Error::new(refusal));
        assert_eq!(
            Failure::from(plain.context("resolving").unwrap_err()).exit,
            Exit::BadInput
        );
    }
}
