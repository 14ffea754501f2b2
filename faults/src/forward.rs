//! A TCP forwarder the lab runs for a partitioned holder: it listens on the namespace's host end
//! and passes every connection on to a loopback server (the protected resource), which the
//! partition does not cut. Stopped, with every connection it carries, when dropped. A forwarder
//! with a [`ReplyDelay`] holds what the server says for that long before passing it on (a slow
//! link back to the client, whose requests still arrive at once).

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};

use crate::FaultError;

/// A running forwarder.
pub struct Forwarder {
    port: u16,
    task: JoinHandle<()>,
}

/// How long a delaying forwarder holds each reply, settable while it runs (0: not at all). A
/// chunk is held for the delay in force when it is read, so a delay lifted later still holds
/// what was read under it.
#[derive(Clone, Debug, Default)]
pub struct ReplyDelay(Arc<AtomicU64>);

impl ReplyDelay {
    /// Holds every reply read from now on for `delay`.
    pub fn set(&self, delay: Duration) {
        self.0.store(delay.as_millis() as u64, Ordering::SeqCst);
    }

    fn now(&self) -> Duration {
        Duration::from_millis(self.0.load(Ordering::SeqCst))
    }
}

/// Passes what `server` says on to `client`, each chunk `delay` after it was read, in order.
async fn delayed_replies(
    mut server: tokio::net::tcp::OwnedReadHalf,
    mut client: tokio::net::tcp::OwnedWriteHalf,
    delay: ReplyDelay,
) {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(tokio::time::Instant, Vec<u8>)>();
    let writer = tokio::spawn(async move {
        while let Some((due, chunk)) = rx.recv().await {
            tokio::time::sleep_until(due).await;
            if client.write_all(&chunk).await.is_err() {
                break;
            }
        }
        let _ = client.shutdown().await;
    });
    let mut buf = vec![0u8; 16 * 1024];
    while let Ok(n) = server.read(&mut buf).await {
        if n == 0
            || tx
                .send((tokio::time::Instant::now() + delay.now(), buf[..n].to_vec()))
                .is_err()
        {
            break;
        }
    }
    drop(tx);
    let _ = writer.await;
}

/// One connection through a delaying forwarder: requests at once, replies held.
async fn relay_delayed(inbound: TcpStream, target: SocketAddr, delay: ReplyDelay) {
    let Ok(outbound) = TcpStream::connect(target).await else {
        return;
    };
    let (mut client_read, client_write) = inbound.into_split();
    let (server_read, mut server_write) = outbound.into_split();
    let requests = async move {
        let _ = tokio::io::copy(&mut client_read, &mut server_write).await;
        let _ = server_write.shutdown().await;
    };
    tokio::join!(requests, delayed_replies(server_read, client_write, delay));
}

impl Forwarder {
    /// Listens on `ip` (a free port) and forwards to `target`, each reply held for `delay`'s
    /// value when it is read, if there is one.
    pub async fn start(
        ip: Ipv4Addr,
        target: SocketAddr,
        delay: Option<ReplyDelay>,
    ) -> Result<Self, FaultError> {
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
                let delay = delay.clone();
                connections.spawn(async move {
                    if let Some(delay) = delay {
                        return relay_delayed(inbound, target, delay).await;
                    }
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
