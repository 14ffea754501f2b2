//! A latency-injecting TCP proxy in front of Postgres.
//!
//! The job's SQL goes through the simple-query protocol with a comment `/*lb:hold=NANOS*/` that
//! says how long, from its arrival here, the query must take. The proxy forwards every byte at
//! once in both directions, except the server's answer to a tagged query: it is buffered until the
//! `ReadyForQuery` that ends it, then held until the query's deadline, then written in one go. A
//! query the server answers after its deadline is not held at all, so what the job sees is
//! `max(requested, real)`; the worker measures what it saw and corrects the next request for the
//! real cost (see `job.rs`).
//!
//! Hand-written rather than a crate: it has to read message boundaries (about sixty lines of the
//! wire protocol), and no proxy crate exposes the per-query hook the injection needs.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

use crate::hold::hold_until;

/// The tag a query carries to ask for a hold.
pub(crate) const HOLD_TAG: &str = "/*lb:hold=";
/// Postgres' code in the SSLRequest packet.
const SSL_REQUEST: u32 = 80_877_103;

/// A running proxy; dropping it stops accepting and closes every proxied connection.
pub(crate) struct PgProxy {
    pub addr: SocketAddr,
    _tasks: JoinSet<()>,
}

impl PgProxy {
    /// Listens on an ephemeral loopback port and forwards to `upstream`.
    pub(crate) async fn start(upstream: SocketAddr) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let mut tasks = JoinSet::new();
        tasks.spawn(async move {
            let mut connections = JoinSet::new();
            while let Ok((client, _)) = listener.accept().await {
                connections.spawn(async move {
                    if let Ok(server) = TcpStream::connect(upstream).await {
                        let _ = proxy_connection(client, server).await;
                    }
                });
                // Reap finished connections so a long replay does not accumulate handles.
                while connections.try_join_next().is_some() {}
            }
        });
        Ok(PgProxy {
            addr,
            _tasks: tasks,
        })
    }
}

/// Deadlines of the queries in flight on one connection, oldest first; `None` for a sync point
/// that asked for no hold.
type Pending = Arc<Mutex<VecDeque<Option<Instant>>>>;

async fn proxy_connection(client: TcpStream, server: TcpStream) -> std::io::Result<()> {
    client.set_nodelay(true)?;
    server.set_nodelay(true)?;
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, server_write) = server.into_split();
    let pending: Pending = Arc::default();
    let upstream_pending = pending.clone();
    let upstream = async move {
        let mut server_write = server_write;
        let mut buffer = Vec::with_capacity(8192);
        let mut started = false;
        loop {
            let read = client_read.read_buf(&mut buffer).await?;
            if read == 0 {
                return Ok::<_, std::io::Error>(());
            }
            let arrival = Instant::now();
            let mut used = 0;
            while let Some(len) = message_len(&buffer[used..], !started) {
                let message = &buffer[used..used + len];
                if !started {
                    let code = u32::from_be_bytes(message[4..8].try_into().expect("8 bytes"));
                    if code == SSL_REQUEST {
                        // The job always connects with sslmode=disable: the proxy reads the
                        // protocol, so it cannot carry TLS.
                        return Err(std::io::Error::other("TLS requested through the proxy"));
                    }
                    started = true;
                } else {
                    match message[0] {
                        b'Q' => {
                            let hold = parse_hold(&message[5..]);
                            upstream_pending
                                .lock()
                                .expect("pending queue poisoned")
                                .push_back(hold.map(|h| arrival + h));
                        }
                        b'S' => upstream_pending
                            .lock()
                            .expect("pending queue poisoned")
                            .push_back(None),
                        _ => {}
                    }
                }
                server_write.write_all(message).await?;
                used += len;
            }
            buffer.drain(..used);
        }
    };
    let downstream = async move {
        let mut buffer = Vec::with_capacity(8192);
        let mut out: Vec<u8> = Vec::with_capacity(8192);
        loop {
            let read = server_read.read_buf(&mut buffer).await?;
            if read == 0 {
                client_write.write_all(&out).await?;
                return Ok::<_, std::io::Error>(());
            }
            let mut used = 0;
            while let Some(len) = message_len(&buffer[used..], false) {
                let message = &buffer[used..used + len];
                out.extend_from_slice(message);
                used += len;
                if message[0] == b'Z' {
                    let deadline = pending
                        .lock()
                        .expect("pending queue poisoned")
                        .pop_front()
                        .flatten();
                    if let Some(deadline) = deadline {
                        hold_until(deadline).await;
                    }
                    client_write.write_all(&out).await?;
                    out.clear();
                }
            }
            buffer.drain(..used);
            // Nothing in flight (authentication, notices): forward at once.
            if !out.is_empty() && pending.lock().expect("pending queue poisoned").is_empty() {
                client_write.write_all(&out).await?;
                out.clear();
            }
        }
    };
    tokio::select! {
        r = upstream => r,
        r = downstream => r,
    }
}

/// Length of the first complete message in `bytes`, if it is all there. The startup packet has
/// no type byte.
fn message_len(bytes: &[u8], startup: bool) -> Option<usize> {
    let header = if startup { 0 } else { 1 };
    if bytes.len() < header + 4 {
        return None;
    }
    let len = u32::from_be_bytes(bytes[header..header + 4].try_into().expect("4 bytes")) as usize;
    let total = header + len;
    (len >= 4 && bytes.len() >= total).then_some(total)
}

/// The hold a query's text asks for.
fn parse_hold(sql: &[u8]) -> Option<Duration> {
    let text = std::str::from_utf8(sql).ok()?;
    let start = text.find(HOLD_TAG)? + HOLD_TAG.len();
    let end = text[start..].find("*/")? + start;
    text[start..end].parse().ok().map(Duration::from_nanos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_boundaries() {
        assert_eq!(message_len(&[b'Q', 0, 0, 0, 5, 0], false), Some(6));
        assert_eq!(message_len(&[b'Q', 0, 0, 0, 9, 0], false), None);
        assert_eq!(message_len(&[0, 0, 0, 8, 4, 210, 22, 47], true), Some(8));
        assert_eq!(message_len(&[b'Q', 0, 0], false), None);
    }

    #[test]
    fn hold_tags() {
        assert_eq!(
            parse_hold(b"/*lb:hold=1500*/ SELECT 1\0"),
            Some(Duration::from_nanos(1500))
        );
        assert_eq!(parse_hold(b"SELECT 1\0"), None);
        assert_eq!(parse_hold(b"/*lb:hold=x*/ SELECT 1\0"), None);
    }
}
