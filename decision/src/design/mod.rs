//! The chosen backend made into a design, one part a file: how the lock lasts (`model`), what a
//! worker does when it cannot get it (`policy`), what the design needs besides the lock
//! (`mechanisms`), how long a crash blocks the job (`recovery`), what is left (`residual`, with the
//! job's lock library in `library`) and each step's double run (`steps`).

mod library;
mod mechanisms;
mod model;
mod policy;
mod recovery;
mod residual;
mod steps;

pub use recovery::describe_vanished;

pub(crate) use library::tokened_on;
pub(crate) use mechanisms::mechanisms;
pub(crate) use model::lock_model;
pub(crate) use policy::{outage_measured, policy, within_budget};
pub(crate) use recovery::crash_recovery;
pub(crate) use residual::residual;
pub(crate) use steps::steps;
