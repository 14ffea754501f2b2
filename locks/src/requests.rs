//! Server requests a client has sent, counted where each one is sent: what `lockbench bench`
//! divides by the grants to give a contention level's herd cost.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// A count of requests shared by the clones of one client's connections.
///
/// One request is one message that asks the server for something: a command or a pipeline
/// (Redis), a query string, however many statements it holds (Postgres), a unary call or a
/// message on a stream, such as a lease keep-alive or a watch's creation (etcd), an operation
/// (ZooKeeper). What the server pushes unasked (a pub/sub message, a watch event) is not one:
/// the requests the woken client then sends are.
#[derive(Clone, Debug, Default)]
pub struct Requests(Arc<AtomicU64>);

impl Requests {
    /// One request sent.
    pub(crate) fn sent(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    /// Requests sent so far.
    pub fn count(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}
