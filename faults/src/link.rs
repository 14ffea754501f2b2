//! The replication link of a failover: a replica replicates through this forwarder, which the
//! lab can hold (what the primary sends waits here, unseen by the replica, as replication lag
//! does) and sever (what was held is lost with the primary). Pausing the replica would not do:
//! the kernel would still take the primary's bytes into the replica's socket, and a resumed
//! replica would read them.

use std::net::{Ipv4Addr, SocketAddr};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

use crate::FaultError;

/// Most bytes a held link keeps before it gives up the connection (a trial's replication stream
/// is a few kilobytes).
const MAX_HELD: usize = 64 << 20;

/// What the link does with the primary's bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Passes them on.
    Pass,
    /// Keeps them.
    Hold,
    /// Drops what it kept and closes the connection.
    Sever,
}

/// A running replication link.
pub(crate) struct ReplicationLink {
    port: u16,
    state: watch::Sender<State>,
    task: JoinHandle<()>,
}

impl ReplicationLink {
    /// Listens on a free loopback port and forwards to the primary at `primary`.
    pub(crate) async fn start(primary: SocketAddr) -> Result<Self, FaultError> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .map_err(|e| FaultError::Server(format!("replication link: {e}")))?;
        let port = listener
            .local_addr()
            .map_err(|e| FaultError::Server(e.to_string()))?
            .port();
        let (state, watcher) = watch::channel(State::Pass);
        let task = tokio::spawn(async move {
            // Aborting this task drops the set, which aborts every connection's task.
            let mut connections = JoinSet::new();
            while let Ok((replica, _)) = listener.accept().await {
                let watcher = watcher.clone();
                connections.spawn(async move {
                    if let Ok(primary) = TcpStream::connect(primary).await {
                        carry(replica, primary, watcher).await;
                    }
                });
            }
        });
        Ok(ReplicationLink { port, state, task })
    }

    /// Its address, for `REPLICAOF`.
    pub(crate) fn addr(&self) -> (Ipv4Addr, u16) {
        (Ipv4Addr::LOCALHOST, self.port)
    }

    /// Keeps what the primary sends from now on.
    pub(crate) fn hold(&self) {
        self.state.send_replace(State::Hold);
    }

    /// Passes on what it kept and what comes next (new connections too).
    pub(crate) fn pass(&self) {
        self.state.send_replace(State::Pass);
    }

    /// Drops what it kept and closes the connections it carries.
    pub(crate) fn sever(&self) {
        self.state.send_replace(State::Sever);
    }
}

impl Drop for ReplicationLink {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// One replication connection: the replica's requests go through as they come; the primary's
/// stream as the state says.
async fn carry(replica: TcpStream, primary: TcpStream, mut state: watch::Receiver<State>) {
    let (mut from_replica, mut to_replica) = replica.into_split();
    let (mut from_primary, mut to_primary) = primary.into_split();
    let upstream = tokio::spawn(async move {
        let _ = tokio::io::copy(&mut from_replica, &mut to_primary).await;
    });
    let mut pending: Vec<u8> = Vec::new();
    let mut buf = vec![0u8; 16 << 10];
    loop {
        tokio::select! {
            read = from_primary.read(&mut buf) => match read {
                Ok(0) | Err(_) => break,
                Ok(n) => pending.extend_from_slice(&buf[..n]),
            },
            changed = state.changed() => if changed.is_err() { break },
        }
        let now = *state.borrow_and_update();
        match now {
            State::Pass if !pending.is_empty() => {
                if to_replica.write_all(&pending).await.is_err() {
                    break;
                }
                pending.clear();
            }
            State::Hold if pending.len() > MAX_HELD => break,
            State::Sever => break,
            _ => {}
        }
    }
    upstream.abort();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An echo server: what the replica side sends comes back through the primary side.
    async fn echo() -> SocketAddr {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let (mut r, mut w) = s.split();
                    let _ = tokio::io::copy(&mut r, &mut w).await;
                });
            }
        });
        addr
    }

    async fn read_some(s: &mut TcpStream, ms: u64) -> Vec<u8> {
        let mut buf = vec![0u8; 64];
        match tokio::time::timeout(std::time::Duration::from_millis(ms), s.read(&mut buf)).await {
            Ok(Ok(n)) => buf[..n].to_vec(),
            _ => Vec::new(),
        }
    }

    #[tokio::test]
    async fn a_held_link_keeps_what_the_primary_sends_and_a_severed_one_loses_it() {
        let link = ReplicationLink::start(echo().await).await.unwrap();
        let mut s = TcpStream::connect(link.addr()).await.unwrap();
        s.write_all(b"one").await.unwrap();
        assert_eq!(read_some(&mut s, 2000).await, b"one");
        link.hold();
        s.write_all(b"two").await.unwrap();
        assert_eq!(read_some(&mut s, 300).await, b"");
        link.pass();
        assert_eq!(read_some(&mut s, 2000).await, b"two");
        link.hold();
        s.write_all(b"three").await.unwrap();
        assert_eq!(read_some(&mut s, 300).await, b"");
        link.sever();
        assert_eq!(read_some(&mut s, 2000).await, b"");
    }
}
