//! A TCP forwarder the lab runs for a partitioned holder: it listens on the namespace's host end
//! and passes every connection on to a loopback server (the protected resource), which the
//! partition does not cut. Stopped, with every connection it carries, when dropped.

use std::net::{Ipv4Addr, SocketAddr};

use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};

use crate::FaultError;

/// A running forwarder.
pub struct Forwarder {
    port: u16,
    task: JoinHandle<()>,
}

impl Forwarder {
    /// Listens on `ip` (a free port) and forwards to `target`.
    pub async fn start(ip: Ipv4Addr, target: SocketAddr) -> Result<Self, FaultError> {
        let listener = TcpListener::bind((ip, 0))
            .await
            .map_err(|e| FaultError::Server(format!("forwarder on {ip}: {e}")))?;
        let port = listener
            .local_addr()
            .map_err(|e| FaultError::Server(e.to_string()))?
            .port();
        let task = tokio::spawn(async move {
            // Aborting this task drops the set, which aborts every connection's task.
            let mut connections = JoinSet::new();
            while let Ok((mut inbound, _)) = listener.accept().await {
                connections.spawn(async move {
                    if let Ok(mut outbound) = TcpStream::connect(target).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
            }
        });
        Ok(Forwarder { port, task })
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.task.abort();
    }
}
