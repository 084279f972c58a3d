//! A misbehaving agent on a raw TCP socket (loopback I/O), for answers no SDK would send: it
//! serves a valid 1.0 card naming its own address (`GET /card.json`; streaming on; a JSON-RPC
//! interface at `/rpc` or an HTTP+JSON one at `/rest`) and answers every other request with the
//! bytes the test's function writes for it, then closes the connection.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use a2a_egress::testkit::CardJson;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Largest request the agent reads (the card fetch and the gateway's calls are small).
const MAX_REQUEST: usize = 1024 * 1024;

/// One request the agent received.
#[derive(Debug, Clone)]
pub struct RawRequest {
    /// `POST /rpc`, `POST /rest/message:send`, ….
    pub line: String,
    /// The header lines after the request line, as sent (`name: value`, CRLF-separated).
    pub headers: String,
    /// The body.
    pub body: Vec<u8>,
}

impl RawRequest {
    /// The value of header `name` (case aside), when it was sent.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .split("\r\n")
            .filter_map(|l| l.split_once(':'))
            .find(|(n, _)| n.trim().eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim())
    }

    /// The JSON-RPC request's `id` (`null` when there is none).
    pub fn id(&self) -> Value {
        serde_json::from_slice::<Value>(&self.body)
            .ok()
            .and_then(|v| v.get("id").cloned())
            .unwrap_or(Value::Null)
    }
}

/// The running agent.
pub struct RawAgent {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Its card's URL.
    pub card_url: String,
    calls: Arc<AtomicUsize>,
}

/// What the agent answers a call with: raw HTTP bytes.
pub type Answer = dyn Fn(&RawRequest) -> Vec<u8> + Send + Sync;

impl RawAgent {
    /// Starts the agent; `rest` picks the HTTP+JSON interface instead of JSON-RPC.
    pub async fn start(
        rest: bool,
        answer: impl Fn(&RawRequest) -> Vec<u8> + Send + Sync + 'static,
    ) -> RawAgent {
        Self::start_at(rest, "1.0", answer).await
    }

    /// [`RawAgent::start`] with the interface at protocol `version` (`"0.3"`: a gateway whose
    /// `[client] versions` has 0.3 translates its calls).
    pub async fn start_at(
        rest: bool,
        version: &str,
        answer: impl Fn(&RawRequest) -> Vec<u8> + Send + Sync + 'static,
    ) -> RawAgent {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let card = card(addr, rest, version);
        let answer: Arc<Answer> = Arc::new(answer);
        let calls = Arc::new(AtomicUsize::new(0));
        let counted = calls.clone();
        tokio::spawn(async move {
            while let Ok((mut sock, _)) = listener.accept().await {
                let (card, answer, calls) = (card.clone(), answer.clone(), counted.clone());
                tokio::spawn(async move {
                    let Some(req) = read_request(&mut sock).await else {
                        return;
                    };
                    let out = if req.line.starts_with("GET /card.json") {
                        http(
                            200,
                            &[("content-type", "application/json")],
                            card.as_bytes(),
                        )
                    } else {
                        calls.fetch_add(1, Ordering::SeqCst);
                        answer(&req)
                    };
                    let _ = sock.write_all(&out).await;
                    let _ = sock.shutdown().await;
                });
            }
        });
        RawAgent {
            addr,
            card_url: format!("http://{addr}/card.json"),
            calls,
        }
    }

    /// Calls other than card fetches received so far.
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

fn card(addr: SocketAddr, rest: bool, version: &str) -> String {
    let (path, binding) = if rest {
        ("rest", "HTTP+JSON")
    } else {
        ("rpc", "JSONRPC")
    };
    let mut card = CardJson::new(&format!("http://{addr}/{path}"))
        .named("Raw", "answers whatever the test says")
        .binding(binding)
        .streaming(true)
        .build();
    card["supportedInterfaces"][0]["protocolVersion"] = Value::from(version);
    card.to_string()
}

async fn read_request(sock: &mut tokio::net::TcpStream) -> Option<RawRequest> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = sock.read(&mut chunk).await.ok()?;
        if n == 0 || buf.len() > MAX_REQUEST {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let len = head
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse::<usize>().ok())
        .unwrap_or(0)
        .min(MAX_REQUEST);
    while buf.len() < head_end + len {
        let n = sock.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Some(RawRequest {
        line: head.lines().next().unwrap_or("").to_owned(),
        headers: head.lines().skip(1).collect::<Vec<_>>().join("\r\n"),
        body: buf[head_end..head_end + len].to_vec(),
    })
}

/// A whole HTTP/1.1 answer: `status`, `headers`, a `Content-Length` for `body`, and
/// `Connection: close`.
pub fn http(status: u16, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status} X\r\n");
    for (n, v) in headers {
        out.push_str(&format!("{n}: {v}\r\n"));
    }
    out.push_str(&format!(
        "content-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    ));
    let mut out = out.into_bytes();
    out.extend_from_slice(body);
    out
}

/// An SSE answer delimited by the connection's close: `events` as they are.
pub fn sse(headers: &[(&str, &str)], events: &str) -> Vec<u8> {
    let mut out = String::from("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n");
    for (n, v) in headers {
        out.push_str(&format!("{n}: {v}\r\n"));
    }
    out.push_str("connection: close\r\n\r\n");
    out.push_str(events);
    out.into_bytes()
}
