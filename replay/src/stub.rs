//! The payment-API stub: a local HTTP/1.1 server that takes charges, honours idempotency keys,
//! records every charge attempt, and answers each request after the hold the request asks for
//! (header `X-Lockbench-Hold-Ns`, counted from the request's arrival).
//!
//! Hand-written rather than on hyper: it serves one fixed request shape to one local client per
//! worker, and the hold must start at the instant the request's last byte arrived, which a
//! framework's service layer hides behind its own buffering and scheduling.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

use crate::hold::hold_until;

/// Largest request head or body the stub reads.
const MAX_REQUEST: usize = 16 * 1024;

/// One charge attempt as the stub saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ChargeRecord {
    pub period: u64,
    pub customer: u64,
    pub worker: u64,
    /// False when an idempotency key already used refused it.
    pub accepted: bool,
}

/// What the stub has seen.
#[derive(Default)]
pub(crate) struct Ledger {
    pub charges: Vec<ChargeRecord>,
    keys: HashSet<String>,
}

/// A running stub; dropping it stops it.
pub(crate) struct PaymentStub {
    pub addr: SocketAddr,
    pub ledger: Arc<Mutex<Ledger>>,
    _tasks: JoinSet<()>,
}

impl PaymentStub {
    pub(crate) async fn start() -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let ledger: Arc<Mutex<Ledger>> = Arc::default();
        let shared = ledger.clone();
        let mut tasks = JoinSet::new();
        tasks.spawn(async move {
            let mut connections = JoinSet::new();
            while let Ok((stream, _)) = listener.accept().await {
                let ledger = shared.clone();
                connections.spawn(async move {
                    let _ = serve(stream, ledger).await;
                });
                while connections.try_join_next().is_some() {}
            }
        });
        Ok(PaymentStub {
            addr,
            ledger,
            _tasks: tasks,
        })
    }
}

/// A parsed request: path, headers that matter, body.
struct Request {
    path: String,
    hold: Option<Duration>,
    idempotency_key: Option<String>,
    body: String,
}

async fn serve(mut stream: TcpStream, ledger: Arc<Mutex<Ledger>>) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    let mut buffer = Vec::with_capacity(4096);
    loop {
        let Some((request, arrival)) = read_request(&mut stream, &mut buffer).await? else {
            return Ok(());
        };
        let (status, body) = match request.path.as_str() {
            "/charges" => charge(&request, &ledger),
            "/ping" => ("200 OK", "{}".to_string()),
            _ => ("404 Not Found", "{\"error\":\"unknown path\"}".to_string()),
        };
        if let Some(hold) = request.hold {
            hold_until(arrival + hold).await;
        }
        let response = format!(
            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(response.as_bytes()).await?;
    }
}

fn charge(request: &Request, ledger: &Mutex<Ledger>) -> (&'static str, String) {
    let field = |name: &str| {
        request
            .body
            .split('&')
            .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
            .and_then(|v| v.parse::<u64>().ok())
    };
    let (Some(period), Some(customer), Some(worker)) =
        (field("period"), field("customer"), field("worker"))
    else {
        return (
            "400 Bad Request",
            "{\"error\":\"expected period, customer and worker\"}".to_string(),
        );
    };
    let mut ledger = ledger.lock().expect("ledger poisoned");
    let accepted = match &request.idempotency_key {
        Some(key) => ledger.keys.insert(key.clone()),
        None => true,
    };
    ledger.charges.push(ChargeRecord {
        period,
        customer,
        worker,
        accepted,
    });
    if accepted {
        ("201 Created", format!("{{\"charged\":{customer}}}"))
    } else {
        // What payment APIs do with a reused key: no second charge.
        (
            "409 Conflict",
            "{\"error\":\"idempotency key already used\"}".to_string(),
        )
    }
}

/// One HTTP/1.1 message: its first line, its headers (names in lower case) and its body.
struct Message {
    start_line: String,
    headers: Vec<(String, String)>,
    body: String,
}

impl Message {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Reads one message from `stream` (what `buffer` holds first); `None` at a clean end of stream.
async fn read_message(
    stream: &mut TcpStream,
    buffer: &mut Vec<u8>,
) -> std::io::Result<Option<Message>> {
    loop {
        if let Some(head_end) = find(buffer, b"\r\n\r\n") {
            let head = std::str::from_utf8(&buffer[..head_end])
                .map_err(|_| std::io::Error::other("message head is not UTF-8"))?;
            let mut lines = head.split("\r\n");
            let start_line = lines.next().unwrap_or("").to_string();
            let headers: Vec<(String, String)> = lines
                .filter_map(|l| l.split_once(':'))
                .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
                .collect();
            let length: usize = headers
                .iter()
                .find(|(n, _)| n == "content-length")
                .and_then(|(_, v)| v.parse().ok())
                .unwrap_or(0);
            if length > MAX_REQUEST {
                return Err(std::io::Error::other("message body too large"));
            }
            let total = head_end + 4 + length;
            if buffer.len() >= total {
                let body = String::from_utf8_lossy(&buffer[head_end + 4..total]).into_owned();
                buffer.drain(..total);
                return Ok(Some(Message {
                    start_line,
                    headers,
                    body,
                }));
            }
        } else if buffer.len() > MAX_REQUEST {
            return Err(std::io::Error::other("message head too large"));
        }
        if stream.read_buf(buffer).await? == 0 {
            return Ok(None);
        }
    }
}

/// Reads one request, and the instant its last byte was in.
async fn read_request(
    stream: &mut TcpStream,
    buffer: &mut Vec<u8>,
) -> std::io::Result<Option<(Request, Instant)>> {
    let Some(message) = read_message(stream, buffer).await? else {
        return Ok(None);
    };
    let arrival = Instant::now();
    let request = Request {
        path: message
            .start_line
            .split(' ')
            .nth(1)
            .unwrap_or("/")
            .to_string(),
        hold: message
            .header("x-lockbench-hold-ns")
            .and_then(|v| v.parse().ok())
            .map(Duration::from_nanos),
        idempotency_key: message.header("idempotency-key").map(str::to_string),
        body: message.body,
    };
    Ok(Some((request, arrival)))
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// One worker's keep-alive connection to the stub.
pub(crate) struct StubClient {
    stream: TcpStream,
    buffer: Vec<u8>,
}

/// The stub's answer to a charge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ChargeOutcome {
    Charged,
    /// The idempotency key was used before: no second charge.
    Duplicate,
}

impl StubClient {
    pub(crate) async fn connect(addr: SocketAddr) -> std::io::Result<Self> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        Ok(StubClient {
            stream,
            buffer: Vec::with_capacity(1024),
        })
    }

    /// POSTs `body` to `path`, asking for `hold`; returns the status code.
    pub(crate) async fn post(
        &mut self,
        path: &str,
        body: &str,
        hold: Duration,
        idempotency_key: Option<&str>,
    ) -> std::io::Result<u16> {
        let key = idempotency_key
            .map(|k| format!("idempotency-key: {k}\r\n"))
            .unwrap_or_default();
        let request = format!(
            "POST {path} HTTP/1.1\r\nhost: payments.local\r\ncontent-type: application/x-www-form-urlencoded\r\nx-lockbench-hold-ns: {}\r\n{key}content-length: {}\r\n\r\n{body}",
            hold.as_nanos(),
            body.len()
        );
        self.stream.write_all(request.as_bytes()).await?;
        let response = read_message(&mut self.stream, &mut self.buffer)
            .await?
            .ok_or_else(|| std::io::Error::other("payment stub closed the connection"))?;
        response
            .start_line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| std::io::Error::other("malformed status line"))
    }

    /// Charges `customer` for `period` as `worker`.
    pub(crate) async fn charge(
        &mut self,
        period: u64,
        customer: u64,
        amount_cents: i64,
        worker: u64,
        hold: Duration,
        idempotency_key: bool,
    ) -> std::io::Result<ChargeOutcome> {
        let body = format!(
            "period={period}&customer={customer}&amount_cents={amount_cents}&worker={worker}"
        );
        let key = idempotency_key.then(|| format!("charge-{period}-{customer}"));
        match self.post("/charges", &body, hold, key.as_deref()).await? {
            201 => Ok(ChargeOutcome::Charged),
            409 => Ok(ChargeOutcome::Duplicate),
            other => Err(std::io::Error::other(format!(
                "payment stub answered {other}"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn idempotency_keys_refuse_a_second_charge_and_every_attempt_is_recorded() {
        let stub = PaymentStub::start().await.unwrap();
        let mut a = StubClient::connect(stub.addr).await.unwrap();
        let mut b = StubClient::connect(stub.addr).await.unwrap();
        let none = Duration::ZERO;
        assert_eq!(
            a.charge(1, 7, 900, 1, none, true).await.unwrap(),
            ChargeOutcome::Charged
        );
        assert_eq!(
            b.charge(1, 7, 900, 2, none, true).await.unwrap(),
            ChargeOutcome::Duplicate
        );
        // Without a key the stub charges again, as a real payment API would.
        assert_eq!(
            b.charge(1, 8, 900, 2, none, false).await.unwrap(),
            ChargeOutcome::Charged
        );
        assert_eq!(
            b.charge(1, 8, 900, 2, none, false).await.unwrap(),
            ChargeOutcome::Charged
        );
        let ledger = stub.ledger.lock().unwrap();
        let accepted: Vec<bool> = ledger.charges.iter().map(|c| c.accepted).collect();
        assert_eq!(accepted, [true, false, true, true]);
        assert_eq!(ledger.charges[1].worker, 2);
    }

    #[tokio::test]
    async fn a_hold_delays_the_answer() {
        let stub = PaymentStub::start().await.unwrap();
        let mut client = StubClient::connect(stub.addr).await.unwrap();
        let started = Instant::now();
        client
            .post("/ping", "", Duration::from_millis(30), None)
            .await
            .unwrap();
        assert!(started.elapsed() >= Duration::from_millis(30));
    }
}
