//! A misbehaving agent as a raw TCP server on loopback port 0 (network I/O, tokio tasks on the
//! test's runtime): it serves a valid A2A 1.0 card, accepts every call, and then answers it
//! one byte at a time, forever — in the answer head, in a unary body that never reaches its
//! `Content-Length`, or as an SSE stream that sends one event and then stays silent. It counts
//! the calls it holds and sees the gateway close each of their connections, so a test can show
//! that no abandoned call is left upstream.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use a2a_egress::testkit::CardJson;
use serde_json::json;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

/// How a call is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drip {
    /// A status line, then a header dripped one byte per tick; the head never ends.
    Head,
    /// A complete head with `Content-Length: len`, then the body one byte per tick; it never ends.
    Body {
        /// The declared length (more than the test runs for, in ticks).
        len: usize,
    },
    /// An SSE head and one event, then silence (no ping, no end).
    Stream,
    /// An SSE head, then events of 16 KiB as fast as the gateway takes them, forever.
    Flood,
}

/// Which binding the card offers (the call paths differ).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binding {
    /// `JSONRPC` at `/jsonrpc`.
    JsonRpc,
    /// `HTTP+JSON` at `/rest`.
    Rest,
}

/// The time between two dripped bytes.
pub const TICK: Duration = Duration::from_millis(200);

/// A running dripping agent; it stops serving when dropped (its tasks end with the runtime).
pub struct DripAgent {
    /// `http://127.0.0.1:PORT` (the origin to approve).
    pub base_url: String,
    /// `{base_url}/.well-known/agent-card.json`.
    pub card_url: String,
    calls: Arc<AtomicUsize>,
    closed: Arc<AtomicUsize>,
}

impl DripAgent {
    /// Binds a port and serves every connection as described by `drip`.
    pub async fn start(drip: Drip, binding: Binding) -> DripAgent {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("binding");
        let base_url = format!("http://{}", listener.local_addr().expect("bound"));
        let card = Arc::new(card(&base_url, binding));
        let calls = Arc::new(AtomicUsize::new(0));
        let closed = Arc::new(AtomicUsize::new(0));
        let (c, d) = (calls.clone(), closed.clone());
        tokio::spawn(async move {
            while let Ok((s, _)) = listener.accept().await {
                tokio::spawn(serve(s, drip, card.clone(), c.clone(), d.clone()));
            }
        });
        DripAgent {
            card_url: format!("{base_url}/.well-known/agent-card.json"),
            base_url,
            calls,
            closed,
        }
    }

    /// Calls received (requests other than the card's).
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    /// Calls whose connection the gateway closed.
    pub fn closed(&self) -> usize {
        self.closed.load(Ordering::SeqCst)
    }

    /// Calls still holding a connection to this agent.
    pub fn open(&self) -> usize {
        self.calls() - self.closed()
    }

    /// The `[[integrations]]` table for this agent under `name`.
    pub fn integration(&self, name: &str) -> String {
        super::gateway::integration(name, &self.card_url, "")
    }
}

/// A card as the official SDK agent serves it, with one interface on `base`.
fn card(base: &str, binding: Binding) -> Vec<u8> {
    let (url, binding) = match binding {
        Binding::JsonRpc => (format!("{base}/jsonrpc"), "JSONRPC"),
        Binding::Rest => (format!("{base}/rest"), "HTTP+JSON"),
    };
    CardJson::new(&url)
        .named("dripping agent", "answers one byte at a time")
        .binding(binding)
        .streaming(true)
        .capability("pushNotifications", json!(false))
        .extended(false)
        .skills(
            json!([{"id": "echo", "name": "echo", "description": "echo", "tags": ["test"],
                        "inputModes": ["text/plain"]}]),
        )
        .text()
        .into_bytes()
}

/// Reads one request: its head and its `Content-Length` body; `None` when the peer closed first.
async fn read_request(s: &mut TcpStream) -> Option<(String, String)> {
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = s.read(&mut buf).await.ok().filter(|n| *n > 0)?;
        raw.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&raw).into_owned();
        let Some((head, body)) = text.split_once("\r\n\r\n") else {
            continue;
        };
        let len: usize = head
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case("content-length")
                    .then(|| v.trim().parse().ok())?
            })
            .unwrap_or(0);
        if body.len() >= len {
            return Some((head.to_owned(), body.to_owned()));
        }
    }
}

async fn serve(
    mut s: TcpStream,
    drip: Drip,
    card: Arc<Vec<u8>>,
    calls: Arc<AtomicUsize>,
    closed: Arc<AtomicUsize>,
) {
    let Some((head, body)) = read_request(&mut s).await else {
        return;
    };
    if head.starts_with("GET ") {
        let answer = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n",
            card.len()
        );
        let _ = s.write_all(answer.as_bytes()).await;
        let _ = s.write_all(&card).await;
        return;
    }
    calls.fetch_add(1, Ordering::SeqCst);
    let (mut rd, mut wr) = s.into_split();
    let mut buf = [0u8; 1024];
    let id = request_id(&body);
    // The gateway sends nothing more on this connection: a read that ends is its close.
    tokio::select! {
        _ = drip_forever(&mut wr, drip, &id) => {}
        _ = async { while matches!(rd.read(&mut buf).await, Ok(n) if n > 0) {} } => {}
    }
    closed.fetch_add(1, Ordering::SeqCst);
}

/// An SSE stream of 16 KiB events answering `id`, written until a write fails.
async fn flood(wr: &mut tokio::net::tcp::OwnedWriteHalf, id: &str) {
    let pad = "x".repeat(16 * 1024);
    let event = format!(
        "data: {{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"statusUpdate\":{{\"taskId\":\"{pad}\"}}}}}}\n\n"
    );
    let chunk = format!("{:x}\r\n{event}\r\n", event.len());
    let head =
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
    if wr.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    while wr.write_all(chunk.as_bytes()).await.is_ok() {}
}

/// The JSON-RPC id of a request body (`null` when it has none): a stream's events answer it, as
/// the gateway checks.
fn request_id(body: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
    v.get("id").cloned().unwrap_or_default().to_string()
}

/// Writes the answer as `drip` says until a write fails (the gateway closed the connection);
/// a stream's one event answers the request `id` (JSON text).
async fn drip_forever(wr: &mut tokio::net::tcp::OwnedWriteHalf, drip: Drip, id: &str) {
    let (start, byte): (String, u8) = match drip {
        Drip::Head => ("HTTP/1.1 200 OK\r\nX-Drip: ".into(), b'a'),
        Drip::Body { len } => (
            format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len}\r\n\r\n"
            ),
            b' ',
        ),
        Drip::Stream => {
            let event = format!(
                "data: {{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"statusUpdate\":{{}}}}}}\n\n"
            );
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\
                 Transfer-Encoding: chunked\r\n\r\n{:x}\r\n{event}\r\n",
                event.len()
            );
            if wr.write_all(head.as_bytes()).await.is_err() {
                return;
            }
            return std::future::pending().await;
        }
        Drip::Flood => return flood(wr, id).await,
    };
    if wr.write_all(start.as_bytes()).await.is_err() {
        return;
    }
    let mut tick = tokio::time::interval(TICK);
    tick.tick().await; // the first tick is at once
    loop {
        tick.tick().await;
        if wr.write_all(&[byte]).await.is_err() {
            return;
        }
    }
}
