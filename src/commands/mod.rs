//! One module per subcommand.

pub mod bench;
pub mod calibrate;
pub mod check;
pub mod compare;
pub mod decide;
pub mod faults;
pub mod merge;
pub mod observed;
pub mod replay;
pub mod report;
pub mod run;
pub mod shell;
pub mod simulate;
pub mod ttl;
pub mod validate;

pub mod shared;

/// A run stopped by Ctrl-C after cleaning up: exit code 130.
#[derive(Debug, thiserror::Error)]
#[error("interrupted; {0}")]
pub struct Interrupted(pub String);
