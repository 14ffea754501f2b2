//! The signals that stop a long command (SIGINT, SIGTERM), listened for while it runs, and the
//! error a command stopped by one returns after its cleanup.

/// A run stopped by a signal after cleaning up: exit code 130 for SIGINT, 143 for SIGTERM.
#[derive(Debug, thiserror::Error)]
#[error("interrupted by {}; {what}", by.name())]
pub struct Interrupted {
    pub by: Stop,
    /// What was stopped and cleaned up.
    pub what: String,
}

/// The signals that stop a long command: SIGINT (Ctrl-C, or `kill -INT`) and SIGTERM (what a
/// supervisor or a container runtime sends).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    Interrupt,
    Terminate,
}

impl Stop {
    pub fn name(self) -> &'static str {
        match self {
            Stop::Interrupt => "SIGINT",
            Stop::Terminate => "SIGTERM",
        }
    }

    /// How a process this signal stopped (after its cleanup) exits.
    pub fn exit(self) -> crate::exit::Exit {
        match self {
            Stop::Interrupt => crate::exit::Exit::Interrupted,
            Stop::Terminate => crate::exit::Exit::Terminated,
        }
    }

    pub fn signal(self) -> rustix::process::Signal {
        match self {
            Stop::Interrupt => rustix::process::Signal::INT,
            Stop::Terminate => rustix::process::Signal::TERM,
        }
    }
}

/// Listens for SIGINT and SIGTERM from the moment it is made (the default action, dying on the
/// spot, is off from then on for the whole process).
pub struct StopSignals {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
}

impl StopSignals {
    pub fn listen() -> anyhow::Result<Self> {
        use anyhow::Context;
        use tokio::signal::unix::{SignalKind, signal};
        Ok(StopSignals {
            interrupt: signal(SignalKind::interrupt()).context("listening for SIGINT")?,
            terminate: signal(SignalKind::terminate()).context("listening for SIGTERM")?,
        })
    }

    /// The next stop signal.
    pub async fn recv(&mut self) -> Stop {
        tokio::select! {
            _ = self.interrupt.recv() => Stop::Interrupt,
            _ = self.terminate.recv() => Stop::Terminate,
        }
    }
}
