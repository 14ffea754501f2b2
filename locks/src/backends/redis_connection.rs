//! A Redis connection that writes a command and reads its reply on the calling task.
//!
//! Why not the `redis` crate's `MultiplexedConnection`: it hands each command to a driver task
//! through a channel and the reply back through another, two task switches per round trip, and
//! it never reconnects. The switches cost `lockbench bench --backend redis` (fencing off, one
//! contender) about 1 us of a 13 us acquisition P50 with client and server on one vCPU (13.2 to
//! 12.3 us) and 2-3 us of 85 us across vCPUs, against the 15 % harness-overhead budget in
//! docs/PERFORMANCE.md; the crate has no public non-multiplexed async connection. Commands are
//! still encoded by the crate (into one buffer per connection), and it implements the crate's
//! public `ConnectionLike` trait, so `query_async` works on it unchanged; the backends send
//! through [`RedisConnection::query`], the same without the trait's boxed future. Two parts of
//! the crate are replaced, each for what a callgrind profile of `bench --backend redis` found
//! (client instructions per command 24,100 to 11,500, fencing off): replies are framed and read
//! into values here in one pass (the crate's `parse_redis_value` zeroes an 8 KiB buffer per
//! reply, a third of the total), and scripts are called through [`Lua`] (the crate's
//! `ScriptInvocation` copies every key and argument twice). [`Subscription`] is a subscriber
//! connection read the same way.
//!
//! One request at a time per connection (a mutex); callers that need parallel requests open
//! several connections, as the backends do per node and per contender. A request abandoned
//! midway (its timeout fired, its task was dropped) takes the socket with it: the reply it left
//! unread can never be read as the answer to the next request, which opens a new connection
//! instead. So does a request after an I/O error, which is how a restarted server is rejoined.
//!
//! Speaks RESP2, the protocol a connection starts in; `redis://`, `rediss://` (rustls with the
//! system's roots or `SSL_CERT_FILE`) and `redis+unix://` URLs, with user, password and database.
//!
//! Through Sentinel ([`RedisConnection::through_sentinels`]), every (re)connection first asks
//! the Sentinels in turn for the primary's address (`SENTINEL get-master-addr-by-name`), then
//! checks that the server there says it is a primary (`ROLE`), as redis-py's `Sentinel` and
//! Redisson do; a `READONLY` reply (a demoted primary) drops the socket, so the next request
//! asks again. A failover is then followed at the first request after it.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use redis::aio::ConnectionLike;
use redis::{
    Cmd, ConnectionAddr, ConnectionInfo, ErrorKind, FromRedisValue, IntoConnectionInfo, Pipeline,
    ProtocolVersion, RedisError, RedisFuture, RedisResult, ServerErrorKind, Value,
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
    target: Target,
    connect_timeout: Duration,
    io: Mutex<Io>,
}

/// Where a connection goes: one server, or the primary the Sentinels name.
enum Target {
    Server(ConnectionInfo),
    Sentinel(Sentinels),
}

/// The Sentinels of one primary, and the primary they last named.
struct Sentinels {
    /// Each Sentinel's address; its user, password and database are the primary's too.
    sentinels: Vec<ConnectionInfo>,
    /// The name the Sentinels monitor the primary by (`sentinel monitor NAME ...`).
    master: String,
    /// The primary's address as last named (the first Sentinel's address until then).
    current: std::sync::Mutex<ConnectionInfo>,
}

impl Target {
    /// Opens a stream to the server, through the Sentinels when there are some.
    async fn connect(&self, timeout: Duration) -> RedisResult<Box<dyn Stream>> {
        match self {
            Target::Server(info) => connect(info, timeout).await,
            Target::Sentinel(sentinels) => sentinels.connect(timeout).await,
        }
    }

    /// The server connected to (the primary last named, through Sentinels).
    fn info(&self) -> ConnectionInfo {
        match self {
            Target::Server(info) => info.clone(),
            Target::Sentinel(sentinels) => sentinels
                .current
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone(),
        }
    }
}

impl Sentinels {
    /// Asks each Sentinel in turn for the primary's address and connects there; the first that
    /// names one whose server says `master` wins. Every Sentinel's answer goes into the error
    /// when none does.
    async fn connect(&self, timeout: Duration) -> RedisResult<Box<dyn Stream>> {
        let mut heard = Vec::new();
        for sentinel in &self.sentinels {
            let at = describe(sentinel.addr());
            let named = match self.ask(sentinel, timeout).await {
                Ok(Some(named)) => named,
                Ok(None) => {
                    heard.push(format!("{at} monitors no primary named {:?}", self.master));
                    continue;
                }
                Err(e) => {
                    heard.push(format!("{at}: {e}"));
                    continue;
                }
            };
            let there = describe(named.addr());
            match primary(&named, timeout).await {
                Ok(stream) => {
                    *self
                        .current
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner) = named;
                    return Ok(stream);
                }
                Err(e) => heard.push(format!("{at} names {there}, which {e}")),
            }
        }
        Err(RedisError::from(io::Error::new(
            io::ErrorKind::NotConnected,
            format!(
                "no Sentinel named a reachable primary of {:?} ({})",
                self.master,
                heard.join("; ")
            ),
        )))
    }

    /// `sentinel`'s answer to `SENTINEL get-master-addr-by-name`: the primary's address (with
    /// the Sentinel's user, password, database and TLS), or `None` when it monitors no primary
    /// of that name.
    async fn ask(
        &self,
        sentinel: &ConnectionInfo,
        timeout: Duration,
    ) -> RedisResult<Option<ConnectionInfo>> {
        let mut stream = connect(sentinel, timeout).await?;
        let mut buf = Vec::new();
        let packed = redis::cmd("SENTINEL")
            .arg("get-master-addr-by-name")
            .arg(&self.master)
            .get_packed_command();
        let mut replies = within(timeout, round_trip(&mut stream, &mut buf, &packed, 0, 1)).await?;
        let reply = replies.pop().expect("one reply was read").extract_error()?;
        let Some((host, port)) = redis::from_redis_value::<Option<(String, u16)>>(reply)? else {
            return Ok(None);
        };
        let addr = match sentinel.addr() {
            ConnectionAddr::TcpTls {
                insecure,
                tls_params,
                ..
            } => ConnectionAddr::TcpTls {
                host,
                port,
                insecure: *insecure,
                tls_params: tls_params.clone(),
            },
            _ => ConnectionAddr::Tcp(host, port),
        };
        Ok(Some(sentinel.clone().set_addr(addr)))
    }
}

/// A stream to the server `info` names, checked to be a primary (`ROLE`): a Sentinel can name
/// the old primary for a moment after a failover, restarted as a replica.
async fn primary(info: &ConnectionInfo, timeout: Duration) -> RedisResult<Box<dyn Stream>> {
    let mut stream = connect(info, timeout).await?;
    let mut buf = Vec::new();
    let packed = redis::cmd("ROLE").get_packed_command();
    let mut replies = within(timeout, round_trip(&mut stream, &mut buf, &packed, 0, 1)).await?;
    let reply = replies.pop().expect("one reply was read").extract_error()?;
    let role = match &reply {
        Value::Array(parts) => parts.first().and_then(|r| match r {
            Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
            _ => None,
        }),
        _ => None,
    };
    match role.as_deref() {
        Some("master") => Ok(stream),
        other => Err(RedisError::from(io::Error::new(
            io::ErrorKind::NotConnected,
            format!(
                "says it is {} (a failover under way?)",
                other.unwrap_or("neither primary nor replica")
            ),
        ))),
    }
}

/// `host:port` of an address, for messages.
fn describe(addr: &ConnectionAddr) -> String {
    match addr {
        ConnectionAddr::Tcp(host, port) | ConnectionAddr::TcpTls { host, port, .. } => {
            format!("{host}:{port}")
        }
        other => format!("{other:?}"),
    }
}

/// `future` within `timeout`, a timed-out one an I/O error.
async fn within<T>(
    timeout: Duration,
    future: impl std::future::Future<Output = RedisResult<T>>,
) -> RedisResult<T> {
    tokio::time::timeout(timeout, future)
        .await
        .unwrap_or_else(|_| {
            Err(RedisError::from(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("no answer within {timeout:?}"),
            )))
        })
}

struct Io {
    /// `None` between a failed or abandoned request and the next one, which reconnects.
    stream: Option<Box<dyn Stream>>,
    /// Bytes read and not yet parsed.
    buf: Vec<u8>,
    /// The request being sent, packed here rather than into a new vector each time.
    out: Vec<u8>,
}

/// What one exchange sends.
enum Request<'a> {
    Command(&'a Cmd),
    Pipeline(&'a Pipeline),
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
        Self::to(Target::Server(info), connect_timeout).await
    }

    /// Connects to the primary the Sentinels at `urls` name `master` (see the module's doc):
    /// the URLs' user, password and database are the primary's too.
    pub async fn through_sentinels(
        urls: &[String],
        master: &str,
        connect_timeout: Duration,
    ) -> RedisResult<Self> {
        let sentinels = urls
            .iter()
            .map(|url| url.as_str().into_connection_info())
            .collect::<RedisResult<Vec<_>>>()?;
        let first = sentinels.first().cloned().ok_or_else(|| {
            RedisError::from((ErrorKind::InvalidClientConfig, "no Sentinel URL configured"))
        })?;
        let target = Target::Sentinel(Sentinels {
            sentinels,
            master: master.to_string(),
            current: std::sync::Mutex::new(first),
        });
        Self::to(target, connect_timeout).await
    }

    async fn to(target: Target, connect_timeout: Duration) -> RedisResult<Self> {
        let stream = target.connect(connect_timeout).await?;
        Ok(RedisConnection {
            requests: Requests::default(),
            shared: Arc::new(Shared {
                target,
                connect_timeout,
                io: Mutex::new(Io {
                    stream: Some(stream),
                    buf: Vec::with_capacity(512),
                    out: Vec::with_capacity(256),
                }),
            }),
        })
    }

    /// The server this connection reaches: the primary the Sentinels last named, through them.
    pub fn server(&self) -> ConnectionInfo {
        self.shared.target.info()
    }

    /// The same connection, its requests counted in `requests` (shared by its clones).
    pub fn counted(self, requests: Requests) -> Self {
        RedisConnection { requests, ..self }
    }

    /// Sends `cmd` and reads its reply as `T`: `cmd.query_async(&mut conn)` without the boxed
    /// future of the crate's `ConnectionLike` trait (its state copied into a new allocation per
    /// command) and without a clone of the connection. The backends' per-operation commands
    /// go through here.
    pub async fn query<T: FromRedisValue>(&self, cmd: &Cmd) -> RedisResult<T> {
        let reply = self.reply(cmd).await?;
        Ok(redis::from_redis_value(reply.extract_error()?)?)
    }

    /// Sends `cmd` and returns its reply as it came (an error reply included).
    async fn reply(&self, cmd: &Cmd) -> RedisResult<Value> {
        let mut replies = self.exchange(Request::Command(cmd), 0, 1).await?;
        Ok(replies.pop().expect("one reply was read"))
    }

    /// Sends `request` and returns replies `skip..skip + count`: one request, whatever it holds.
    async fn exchange(
        &self,
        request: Request<'_>,
        skip: usize,
        count: usize,
    ) -> RedisResult<Vec<Value>> {
        let mut io = self.shared.io.lock().await;
        self.requests.sent();
        let mut out = std::mem::take(&mut io.out);
        out.clear();
        match request {
            Request::Command(cmd) => cmd.write_packed_command(&mut out),
            Request::Pipeline(pipeline) => out.extend(pipeline.get_packed_pipeline()),
        }
        // Out of the slot for the length of the request: if this future is dropped or fails, the
        // socket goes with it, never back for the next request to read this one's reply.
        let mut stream = match io.stream.take() {
            Some(stream) => stream,
            None => {
                io.buf.clear();
                self.shared
                    .target
                    .connect(self.shared.connect_timeout)
                    .await?
            }
        };
        let replies = round_trip(&mut stream, &mut io.buf, &out, skip, count).await?;
        // A demoted primary: the next request asks the Sentinels again.
        let demoted = matches!(self.shared.target, Target::Sentinel(_))
            && replies
                .iter()
                .any(|r| matches!(r, Value::ServerError(e) if e.code() == "READONLY"));
        if !demoted {
            io.stream = Some(stream);
        }
        io.out = out;
        Ok(replies)
    }
}

/// A Lua script, called as `EVALSHA` and loaded (`SCRIPT LOAD`) when the server does not know it,
/// as `redis::Script` does: the same commands on the wire. The crate's `ScriptInvocation` copies
/// every key and argument into a vector of its own and then into a command; here the caller
/// writes them once into a command whose room is reserved ([`Lua::call`]).
#[derive(Clone, Debug)]
pub struct Lua {
    code: Arc<str>,
    hash: String,
}

impl Lua {
    /// The script of `code`.
    pub fn new(code: &str) -> Self {
        Lua {
            code: code.into(),
            hash: redis::Script::new(code).get_hash().to_string(),
        }
    }

    /// `EVALSHA` of this script with `keys` keys, room reserved for `args` keys and arguments
    /// more of about `bytes` bytes in all: the caller appends the keys, then the arguments.
    pub fn call(&self, keys: usize, args: usize, bytes: usize) -> Cmd {
        let mut cmd = Cmd::with_capacity(3 + args, 64 + bytes);
        cmd.arg("EVALSHA").arg(&self.hash).arg(keys);
        cmd
    }

    /// Sends `call` (from [`Lua::call`]); when the server does not know the script, loads it
    /// and sends `call` again.
    pub async fn invoke<T: FromRedisValue>(
        &self,
        conn: &RedisConnection,
        call: &Cmd,
    ) -> RedisResult<T> {
        match conn.query(call).await {
            Err(e) if e.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
                conn.query::<()>(redis::cmd("SCRIPT").arg("LOAD").arg(&*self.code))
                    .await?;
                conn.query(call).await
            }
            other => other,
        }
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
                && matches!(&parts[0], Value::BulkString(kind) if kind == b"message")
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
        let mut stream = self
            .shared
            .target
            .connect(self.shared.connect_timeout)
            .await?;
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
        Box::pin(self.reply(cmd))
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            self.exchange(Request::Pipeline(pipeline), offset, count)
                .await
        })
    }

    fn get_db(&self) -> i64 {
        match &self.shared.target {
            Target::Server(info) => info.redis_settings().db(),
            // The primary is reached with the Sentinels' settings.
            Target::Sentinel(sentinels) => sentinels.sentinels[0].redis_settings().db(),
        }
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
        if let Some((len, value)) = frame(buf, 0)? {
            let value = match value {
                Some(value) => value,
                None => redis::parse_redis_value(&buf[..len])?,
            };
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

/// The RESP2 reply starting at `at`, framed and read in one pass: `None` while `buf` does not
/// hold all of it, else where it ends and its value. The value is `None` for a reply that holds
/// an error, which [`read_reply`] leaves to the `redis` crate's parser; every other shape is read
/// here, because `redis::parse_redis_value` builds a parser with a zeroed 8 KiB buffer per call:
/// a third of the client's instructions per command in a callgrind profile of `bench --backend
/// redis` (docs/PERFORMANCE.md).
fn frame(buf: &[u8], at: usize) -> RedisResult<Option<(usize, Option<Value>)>> {
    let Some(line) = buf
        .get(at..)
        .and_then(|rest| rest.windows(2).position(|w| w == b"\r\n"))
        .map(|offset| at + offset)
    else {
        return Ok(None);
    };
    let next = line + 2;
    let text = &buf[at + 1..line];
    let number = || -> RedisResult<i64> {
        std::str::from_utf8(text)
            .ok()
            .and_then(|digits| digits.parse().ok())
            .ok_or_else(|| {
                RedisError::from((
                    ErrorKind::Parse,
                    "a number in a reply is not a number",
                    String::from_utf8_lossy(&buf[at..line]).into_owned(),
                ))
            })
    };
    let value = match buf[at] {
        b'+' if text == b"OK" => Some(Value::Okay),
        b'+' => String::from_utf8(text.to_vec())
            .ok()
            .map(Value::SimpleString),
        b'-' => None,
        b':' => Some(Value::Int(number()?)),
        b'$' => match number()? {
            n if n < 0 => Some(Value::Nil),
            n => {
                let end = next + n as usize + 2;
                if buf.len() < end {
                    return Ok(None);
                }
                return Ok(Some((
                    end,
                    Some(Value::BulkString(buf[next..end - 2].to_vec())),
                )));
            }
        },
        b'*' => match number()? {
            n if n < 0 => Some(Value::Nil),
            n => {
                // Room for what the buffer can hold (an element takes 3 bytes at least), not
                // for whatever count a reply claims.
                let mut items = Some(Vec::with_capacity((n as usize).min(buf.len() - next)));
                let mut end = next;
                for _ in 0..n {
                    let Some((item_end, item)) = frame(buf, end)? else {
                        return Ok(None);
                    };
                    end = item_end;
                    items = items.zip(item).map(|(mut items, item)| {
                        items.push(item);
                        items
                    });
                }
                return Ok(Some((end, items.map(Value::Array))));
            }
        },
        other => {
            return Err(RedisError::from((
                ErrorKind::Parse,
                "a reply starts with an unknown type byte",
                format!("{:?}", other as char),
            )));
        }
    };
    Ok(Some((next, value)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn whole(reply: &[u8]) -> Option<usize> {
        frame(reply, 0).unwrap().map(|(end, _)| end)
    }

    /// A whole reply's value, as `read_reply` makes it.
    fn parse(reply: &[u8]) -> RedisResult<Value> {
        match frame(reply, 0)?.expect("a whole reply") {
            (_, Some(value)) => Ok(value),
            (_, None) => redis::parse_redis_value(reply),
        }
    }

    /// Every reply shape RESP2 has.
    const SHAPES: [&[u8]; 11] = [
        b"+OK\r\n",
        b"+PONG\r\n",
        b"-NOSCRIPT No matching script\r\n",
        b":42\r\n",
        b"$-1\r\n",
        b"*-1\r\n",
        b"*0\r\n",
        b"$0\r\n\r\n",
        // A bulk string may hold CRLF itself: its length, not a search, finds its end.
        b"$4\r\na\r\nb\r\n",
        b"*3\r\n:1\r\n$3\r\nabc\r\n*2\r\n+x\r\n$-1\r\n",
        b"*2\r\n-ERR inside\r\n:-7\r\n",
    ];

    #[test]
    fn frames_every_reply_shape_and_waits_for_the_rest() {
        for reply in SHAPES {
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
        assert!(frame(b"%1\r\n", 0).is_err());
        assert!(frame(b"$x\r\nab\r\n", 0).is_err());
        assert!(frame(b"*two\r\n", 0).is_err());
    }

    /// The values read here are the ones the `redis` crate reads, for every reply shape, errors
    /// (left to the crate) included.
    #[test]
    fn reads_values_as_the_crate_does() {
        for reply in SHAPES {
            assert_eq!(
                format!("{:?}", parse(reply)),
                format!("{:?}", redis::parse_redis_value(reply)),
                "{reply:?}"
            );
        }
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
