//! Real lock client libraries, driven through lockbench's adapter protocol (docs/CLIENTS.md).
//!
//! An adapter is a small program in the library's own language that speaks JSON Lines on its
//! stdin and stdout ([`protocol`]). [`AdapterLock`] starts one and puts it behind lockbench's
//! `LockBackend`, so that the fault lab and bench drive the library the way they drive
//! lockbench's own clients; [`programs`] finds the shipped adapters and a user's own;
//! [`conformance`] checks that an adapter keeps the protocol's promises against a real server.

pub mod adapter;
pub mod conformance;
pub mod programs;
pub mod protocol;

pub use adapter::{AdapterLock, Event};
pub use programs::{Program, installed, program, resolve};
pub use protocol::{Description, EventKind, Renewal};

use std::path::PathBuf;

use lockbench_core::{BackendKind, Client, OwnClient, OwnDescription};
use lockbench_locks::BackendConfig;

/// The machine's CLOCK_MONOTONIC in nanoseconds: the clock adapters stamp their messages with and
/// the fault lab's protected resource logs with (every process on one kernel shares it).
pub fn monotonic_ns() -> i64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    t.tv_sec * 1_000_000_000 + t.tv_nsec
}
use std::time::Duration;

/// `program` with its library named: a shipped adapter as it is, a user's own as it describes
/// itself in its reply to the hello for `config`'s servers (started, asked, and closed). Its
/// cells and rows then carry the library as a shipped adapter's do.
pub async fn describe(program: &Program, config: &BackendConfig) -> Result<Program, ClientsError> {
    if program.client.is_some() {
        return Ok(program.clone());
    }
    let adapter = AdapterLock::start(program, config).await?;
    let d = adapter.description().clone();
    let _ = lockbench_locks::LockBackend::close(&adapter).await;
    let backend: BackendKind = config.kind;
    let own = OwnClient::new(
        &program.name,
        &OwnDescription {
            library: &d.library,
            version: &d.version,
            backend,
            fencing: d.fencing,
            renews: d.renewal == Renewal::Automatic,
            tells: d.notifies_loss,
        },
    );
    Ok(Program {
        client: Some(Client::Own(own)),
        ..program.clone()
    })
}

/// Why an adapter could not be used. Each names the adapter and what to do.
#[derive(Debug, thiserror::Error)]
pub enum ClientsError {
    /// Not a shipped adapter's name, nor a path.
    #[error(
        "unknown client {0:?}: expected one of {names}, or the path of an adapter program (docs/CLIENTS.md)",
        names = lockbench_core::Client::names()
    )]
    Unknown(String),
    /// A shipped adapter whose library is not installed.
    #[error(
        "{client}: its library is not installed at the versions {} pins; install it with scripts/clients.sh up",
        pins.display()
    )]
    NotInstalled {
        /// The adapter.
        client: &'static str,
        /// The pin file.
        pins: PathBuf,
    },
    /// The program could not be started.
    #[error("{adapter}: cannot start it: {error}")]
    Start {
        /// The adapter.
        adapter: String,
        /// Why.
        error: String,
    },
    /// The adapter exited or went silent.
    #[error("{adapter}: {what}{}", if stderr.is_empty() { String::new() } else { format!(" (its stderr: {stderr})") })]
    Failed {
        /// The adapter.
        adapter: String,
        /// What happened.
        what: String,
        /// Its stderr's last line.
        stderr: String,
    },
    /// The library failed a request, in its own words.
    #[error("{adapter}: {op} failed: {said}")]
    Refused {
        /// The adapter.
        adapter: String,
        /// The request.
        op: String,
        /// The library's words.
        said: String,
    },
    /// The adapter broke the protocol.
    #[error("{adapter}: breaks the adapter protocol: {what}")]
    Protocol {
        /// The adapter.
        adapter: String,
        /// How.
        what: String,
    },
    /// Internal: the adapter's stdin closed (it exited).
    #[error("exited")]
    Exited,
    /// Internal: no reply in time.
    #[error("{0:?}")]
    Timeout(Duration),
    /// A message could not be encoded.
    #[error("encoding a request: {0}")]
    Encode(#[from] serde_json::Error),
}
