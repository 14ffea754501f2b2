//! One module per subcommand.

pub mod bench;
pub mod calibrate;
pub mod check;
pub mod clients;
pub mod compare;
pub mod decide;
pub mod fault_worker;
pub mod faults;
pub mod merge;
pub mod replay;
pub mod report;
pub mod run;
pub mod shell;
pub mod simulate;
pub mod ttl;
pub mod validate;
