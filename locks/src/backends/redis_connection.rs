//! A Redis connection that writes a command and reads its reply on the calling task.
//!
//! Why not the `redis` crate's `MultiplexedConnection`: it hands each command to a driver task
//! through a channel and the reply back through another, two task switches per round trip, and
//! it never reconnects. The switches cost `lockbench bench --backend redis` (fencing off, one
//! contender) about 1 us of a 13 us acquisition P50 with client and server on one vCPU (13.2 to
//! 12.3 us) and 2-3 us of 85 us across vCPUs, against the 15 % harness-overhead budget in
//! docs/PERFORMANCE.md; the crate has no public non-multiplexed async connection. This type
//! owns only the socket: commands are still encoded, replies parsed and scripts loaded by the
//! crate, through its public `ConnectionLike` trait, so `Script::invoke_async` and
//! `query_async` work on it unchanged.
//!
//! One request at a time per connection (a mutex); callers that need parallel requests open
//! several connections, as the backends do per node and per contender. A request abandoned
//! midway (its timeout fired, its task was dropped) takes the socket with it: the reply it left
//! unread can never be read as the answer to the next request, which opens a new connection
//! instead. So does a request after an I/O error, which is how a restarted server is rejoined.
//!
//! Speaks RESP2, the protocol a connection starts in; `redis://`, `rediss://` (rustls with the
//! system's roots or `SSL_CERT_FILE`) and `redis+unix://` URLs, with user, password and database.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use redis::aio::ConnectionLike;
use redis::{
    Cmd, ConnectionAddr, ConnectionInfo, ErrorKind, IntoConnectionInfo, Pipeline, ProtocolVersion,
    RedisError, RedisFuture, RedisResult, Value,
};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Mutex;

use crate::Requests;

/// Any byte stream to a server: TCP, TLS over TCP, a Unix socket.
trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Stream for T {}

/// A connection to one Redis server. Clones share the connection.
#[derive(Clone)]
pub struct RedisConnection {
    shared: Arc<Shared>,
    requests: Requests,
}

struct Shared {
    info: ConnectionInfo,
    connect_timeout: Duration,
    io: Mutex<Io>,
}

struct Io {
    /// `None` between a failed or abandoned request and the next one, which reconnects.
    stream: Option<Box<dyn Stream>>,
    /// Bytes read and not yet parsed.
    buf: Vec<u8>,
}

impl RedisConnection {
    /// Connects to `url` and authenticates and selects the database it names; `connect_timeout`
    /// bounds the whole of it, now and on every reconnection.
    pub async fn open(url: &str, connect_timeout: Duration) -> RedisResult<Self> {
        let info = url.into_connection_info()?;
        if info.redis_settings().protocol() != ProtocolVersion::RESP2 {
            return Err(RedisError::from((
                ErrorKind::InvalidClientConfig,
                "only RESP2 is spoken here: remove protocol=resp3 from the URL",
            )));
        }
        let stream = connect(&info, connect_timeout).await?;
        Ok(RedisConnection {
            requests: Requests::default(),
            shared: Arc::new(Shared {
                info,
                connect_timeout,
                io: Mutex::new(Io {
                    stream: Some(stream),
                    buf: Vec::with_capacity(512),
                }),
            }),
        })
    }

    /// The same connection, its requests counted in `requests` (shared by its clones).
    pub fn counted(self, requests: Requests) -> Self {
        RedisConnection { requests, ..self }
    }

    /// Sends `packed` and returns replies `skip..skip + count`: one request, whatever it holds.
    async fn exchange(&self, packed: &[u8], skip: usize, count: usize) -> RedisResult<Vec<Value>> {
        let mut io = self.shared.io.lock().await;
        self.requests.sent();
        // Out of the slot for the length of the request: if this future is dropped or fails, the
        // socket goes with it, never back for the next request to read this one's reply.
        let mut stream = match io.stream.take() {
            Some(stream) => stream,
            None => {
                io.buf.clear();
                connect(&self.shared.info, self.shared.connect_timeout).await?
            }
        };
        let replies = round_trip(&mut stream, &mut io.buf, packed, skip, count).await?;
        io.stream = Some(stream);
        Ok(replies)
    }
}

/// A connection of its own in subscribe mode, subscribed to one channel and read on the calling
/// task, as [`RedisConnection`] reads replies: the `redis` crate's `PubSub` hands each message
/// from a driver task to the reader through a channel, and on this 2-vCPU machine that hop put
/// about 50 us between a release's reply and the waiter's wake-up (docs/PERFORMANCE.md).
pub struct Subscription {
    stream: Box<dyn Stream>,
    /// Bytes read and not yet parsed.
    buf: Vec<u8>,
}

impl Subscription {
    /// The next message published on the channel: its payload. Cancel-safe (a message half read
    /// when a timeout drops the future stays in the buffer for the next call); an error means the
    /// connection is gone and a new subscription is needed.
    pub async fn message(&mut self) -> RedisResult<Vec<u8>> {
        loop {
            let reply = read_reply(&mut self.stream, &mut self.buf).await?;
            if let Value::Array(mut parts) = reply
                && parts.len() == 3
                && parts[0] == Value::BulkString(b"message".to_vec())
                && let Some(Value::BulkString(payload)) = parts.pop()
            {
                return Ok(payload);
            }
            // Anything else (a stray subscribe confirmation) is not a message.
        }
    }
}

impl RedisConnection {
    /// A new connection to this connection's server, subscribed to `channel` (counted as one
    /// request).
    pub async fn subscribe(&self, channel: &str) -> RedisResult<Subscription> {
        let mut stream = connect(&self.shared.info, self.shared.connect_timeout).await?;
        self.requests.sent();
        let mut buf = Vec::with_capacity(512);
        let confirmed = tokio::time::timeout(
            self.shared.connect_timeout,
            round_trip(
                &mut stream,
                &mut buf,
                &redis::cmd("SUBSCRIBE").arg(channel).get_packed_command(),
                0,
                1,
            ),
        )
        .await
        .map_err(|_| {
            RedisError::from(io::Error::new(
                io::ErrorKind::TimedOut,
                "no answer to SUBSCRIBE in time",
            ))
        })??;
        for reply in confirmed {
            reply.extract_error()?;
        }
        Ok(Subscription { stream, buf })
    }
}

impl ConnectionLike for RedisConnection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            let mut replies = self.exchange(&cmd.get_packed_command(), 0, 1).await?;
            Ok(replies.pop().expect("one reply was read"))
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            self.exchange(&pipeline.get_packed_pipeline(), offset, count)
                .await
        })
    }

    fn get_db(&self) -> i64 {
        self.shared.info.redis_settings().db()
    }
}

/// Opens the socket (TLS when the URL says `rediss://`), then AUTH and SELECT as the URL asks.
async fn connect(info: &ConnectionInfo, timeout: Duration) -> RedisResult<Box<dyn Stream>> {
    let opening = async {
        let mut stream = open_stream(info.addr()).await?;
        let settings = info.redis_settings();
        let mut handshake = Vec::new();
        if let Some(password) = settings.password() {
            let mut auth = redis::cmd("AUTH");
            if let Some(user) = settings.username() {
                auth.arg(user);
            }
            handshake.push(auth.arg(password).get_packed_command());
        }
        if settings.db() != 0 {
            handshake.push(redis::cmd("SELECT").arg(settings.db()).get_packed_command());
        }
        let mut buf = Vec::new();
        for packed in handshake {
            for reply in round_trip(&mut stream, &mut buf, &packed, 0, 1).await? {
                reply.extract_error()?;
            }
        }
        Ok(stream)
    };
    tokio::time::timeout(timeout, opening)
        .await
        .unwrap_or_else(|_| {
            Err(RedisError::from(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("no connection within {timeout:?}"),
            )))
        })
}

async fn open_stream(addr: &ConnectionAddr) -> RedisResult<Box<dyn Stream>> {
    match addr {
        ConnectionAddr::Tcp(host, port) => Ok(Box::new(tcp(host, *port).await?)),
        ConnectionAddr::TcpTls {
            host,
            port,
            insecure,
            ..
        } => {
            if *insecure {
                return Err(RedisError::from((
                    ErrorKind::InvalidClientConfig,
                    "rediss:// with #insecure is refused: name the server's CA in SSL_CERT_FILE instead",
                )));
            }
            let socket = tcp(host, *port).await?;
            let name = rustls::pki_types::ServerName::try_from(host.clone())?;
            let tls = tokio_rustls::TlsConnector::from(tls_config()?)
                .connect(name, socket)
                .await?;
            Ok(Box::new(tls))
        }
        #[cfg(unix)]
        ConnectionAddr::Unix(path) => Ok(Box::new(tokio::net::UnixStream::connect(path).await?)),
        other => Err(RedisError::from((
            ErrorKind::InvalidClientConfig,
            "unsupported address",
            format!("{other:?}"),
        ))),
    }
}

async fn tcp(host: &str, port: u16) -> io::Result<TcpStream> {
    let socket = TcpStream::connect((host, port)).await?;
    // A command is one small write answered before the next: Nagle would only delay it.
    socket.set_nodelay(true)?;
    Ok(socket)
}

/// Trusts the system's roots, or the bundle `SSL_CERT_FILE` names.
fn tls_config() -> RedisResult<Arc<rustls::ClientConfig>> {
    let found = rustls_native_certs::load_native_certs();
    let mut roots = rustls::RootCertStore::empty();
    for cert in found.certs {
        roots.add(cert)?;
    }
    if roots.is_empty()
        && let Some(error) = found.errors.into_iter().next()
    {
        return Err(error.into());
    }
    Ok(Arc::new(
        rustls::ClientConfig::builder()
            .with_root_certificates(roots)
            .with_no_client_auth(),
    ))
}

/// Writes `packed` and reads `skip + count` replies, returning the last `count`.
async fn round_trip(
    stream: &mut Box<dyn Stream>,
    buf: &mut Vec<u8>,
    packed: &[u8],
    skip: usize,
    count: usize,
) -> RedisResult<Vec<Value>> {
    stream.write_all(packed).await?;
    let mut replies = Vec::with_capacity(count);
    for index in 0..skip + count {
        let reply = read_reply(stream, buf).await?;
        if index >= skip {
            replies.push(reply);
        }
    }
    Ok(replies)
}

async fn read_reply(stream: &mut Box<dyn Stream>, buf: &mut Vec<u8>) -> RedisResult<Value> {
    loop {
        if let Some(len) = reply_len(buf, 0)? {
            let value = redis::parse_redis_value(&buf[..len])?;
            buf.drain(..len);
            return Ok(value);
        }
        buf.reserve(4096);
        if stream.read_buf(buf).await? == 0 {
            return Err(RedisError::from(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the server closed the connection",
            )));
        }
    }
}

/// Where the RESP2 reply starting at `at` ends, or `None` while `buf` does not hold all of it.
/// Only frames; `redis::parse_redis_value` turns the whole reply into a value.
fn reply_len(buf: &[u8], at: usize) -> RedisResult<Option<usize>> {
    let Some(line) = buf
        .get(at..)
        .and_then(|rest| rest.windows(2).position(|w| w == b"\r\n"))
        .map(|offset| at + offset)
    else {
        return Ok(None);
    };
    let next = line + 2;
    let length = || -> RedisResult<i64> {
        std::str::from_utf8(&buf[at + 1..line])
            .ok()
            .and_then(|digits| digits.parse().ok())
            .ok_or_else(|| {
                RedisError::from((
                    ErrorKind::Parse,
                    "a length in a reply is not a number",
                    String::from_utf8_lossy(&buf[at..line]).into_owned(),
                ))
            })
    };
    match buf[at] {
        b'+' | b'-' | b':' => Ok(Some(next)),
        b'$' => match length()? {
            n if n < 0 => Ok(Some(next)),
            n => {
                let end = next + n as usize + 2;
                Ok((buf.len() >= end).then_some(end))
            }
        },
        b'*' => {
            let mut end = next;
            for _ in 0..length()?.max(0) {
                match reply_len(buf, end)? {
                    Some(element_end) => end = element_end,
                    None => return Ok(None),
                }
            }
            Ok(Some(end))
        }
        other => Err(RedisError::from((
            ErrorKind::Parse,
            "a reply starts with an unknown type byte",
            format!("{:?}", other as char),
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn whole(reply: &[u8]) -> Option<usize> {
        reply_len(reply, 0).unwrap()
    }

    #[test]
    fn frames_every_reply_shape_and_waits_for_the_rest() {
        for reply in [
            &b"+OK\r\n"[..],
            b"-NOSCRIPT No matching script\r\n",
            b":42\r\n",
            b"$-1\r\n",
            b"*-1\r\n",
            b"*0\r\n",
            b"$0\r\n\r\n",
            // A bulk string may hold CRLF itself: its length, not a search, finds its end.
            b"$4\r\na\r\nb\r\n",
            b"*3\r\n:1\r\n$3\r\nabc\r\n*2\r\n+x\r\n$-1\r\n",
        ] {
            assert_eq!(whole(reply), Some(reply.len()), "{reply:?}");
            for cut in 0..reply.len() {
                assert_eq!(whole(&reply[..cut]), None, "{reply:?} cut at {cut}");
            }
            let mut two = reply.to_vec();
            two.extend_from_slice(b":7\r\n");
            assert_eq!(whole(&two), Some(reply.len()), "{reply:?} then another");
        }
    }

    #[test]
    fn refuses_what_is_not_resp2() {
        assert!(reply_len(b"%1\r\n", 0).is_err());
        assert!(reply_len(b"$x\r\nab\r\n", 0).is_err());
        assert!(reply_len(b"*two\r\n", 0).is_err());
    }

    #[test]
    fn parses_what_it_frames() {
        let reply = b"*2\r\n:1\r\n$2\r\nhi\r\n";
        let value = redis::parse_redis_value(&reply[..whole(reply).unwrap()]).unwrap();
        assert_eq!(
            value,
            Value::Array(vec![Value::Int(1), Value::BulkString(b"hi".to_vec())])
        );
    }
}
