//! One HTTP/1.1 exchange with an agent over pingora's pooled connector (I/O): connect (or reuse a
//! pooled connection), write the request, read the response header, then read the body chunk by
//! chunk or whole. A connection whose answer was read to the end goes back to the pool.
//!
//! The connector is pingora's own (`pingora::connectors::http::Connector`), so these calls run on
//! the data plane's runtime with pingora's TLS stack; every call takes its peer from [`peer`].

use bytes::{Bytes, BytesMut};
use pingora::http::{RequestHeader, ResponseHeader};
use pingora::prelude::HttpPeer;
use pingora::protocols::http::v1::client::HttpSession;
use pingora::{ErrorType, RetryType};

use super::ClientError;
use crate::proxy::call::Client;
use crate::proxy::upstream::{peer, tls_fault};
use crate::state::Upstream;

/// Connections tried for one request: a pooled connection the agent closed while it sat idle
/// fails before any answer, and the request then goes out once more on another one.
const MAX_CONNECTIONS_PER_REQUEST: usize = 3;

/// Informational (1xx) answers skipped before the real response header.
const MAX_INFORMATIONAL: usize = 8;

impl Client {
    /// Sends the request `build` makes, with `body`, to `up` and reads the response header.
    /// `build` is called once per connection tried: the header a connection was sent is gone
    /// with it, and most calls need only one.
    pub(super) async fn send(
        &self,
        up: &Upstream,
        build: &(dyn Fn() -> Result<Box<RequestHeader>, ClientError> + Sync),
        body: &Bytes,
    ) -> Result<Response<'_>, ClientError> {
        // Boxed: the peer (about 670 bytes) goes into the response, which the answer's readers
        // take by value, and each of their futures would hold a copy.
        let peer = Box::new(peer(up));
        let mut tries = 0;
        loop {
            tries += 1;
            let (mut session, reused) = self.session(&peer).await?;
            session.read_timeout = peer.options.read_timeout;
            session.write_timeout = peer.options.write_timeout;
            match exchange(&mut session, build()?, body).await {
                Ok(head) => {
                    return Ok(Response {
                        client: self,
                        session,
                        peer,
                        head,
                    });
                }
                Err(Failed::Early(_)) if reused && tries < MAX_CONNECTIONS_PER_REQUEST => {
                    tracing::debug!("pooled connection to the agent was closed; trying another");
                }
                Err(Failed::Early(e) | Failed::Late(e)) => return Err(e),
            }
        }
    }

    /// A pooled connection to `peer` when there is one (`true`: reused), else a new one.
    ///
    /// A new connection's future (connect, TLS handshake) is several kilobytes and most calls
    /// reuse a pooled connection, so only that rare path is boxed: held inline, it would make
    /// every call's future that much bigger, and every call moves its future into a box.
    async fn session(&self, peer: &HttpPeer) -> Result<(HttpSession, bool), ClientError> {
        if let Some(session) = self.connector.reused_http_session(peer).await {
            return Ok((session, true));
        }
        Box::pin(self.connector.get_http_session(peer))
            .await
            .map_err(connect_error)
    }

    async fn release(&self, mut session: HttpSession, peer: &HttpPeer) {
        if session.is_body_done() {
            let idle = peer.options.idle_timeout;
            self.connector
                .release_http_session(session, peer, idle)
                .await;
        }
    }
}

fn connect_error(e: Box<pingora::Error>) -> ClientError {
    match tls_fault(&e) {
        Some(fault) => ClientError::Tls { fault, error: e },
        None => ClientError::Connect(e),
    }
}

/// How an exchange failed: `Early` when nothing shows that the agent saw the request (the write
/// failed, or the connection closed before any answer), so another connection may be tried.
enum Failed {
    Early(ClientError),
    Late(ClientError),
}

async fn exchange(
    session: &mut HttpSession,
    req: Box<RequestHeader>,
    body: &Bytes,
) -> Result<Box<ResponseHeader>, Failed> {
    let early = |e| Failed::Early(ClientError::Send(e));
    session.write_request_header(req).await.map_err(early)?;
    if !body.is_empty() {
        session.write_body(body).await.map_err(early)?;
    }
    session.finish_body().await.map_err(early)?;
    for _ in 0..MAX_INFORMATIONAL {
        if let Err(mut e) = session.read_response().await {
            // pingora marks what is safe to retry on a reused connection (closed before an
            // answer); that retry is decided here, so the error says "do not retry" onwards.
            let retry = matches!(e.retry, RetryType::ReusedOnly);
            e.retry = RetryType::Decided(false);
            let e = ClientError::Receive(e);
            return Err(if retry {
                Failed::Early(e)
            } else {
                Failed::Late(e)
            });
        }
        let Some(head) = session.resp_header() else {
            break;
        };
        // 101 never comes: the gateway sends no Upgrade. Other 1xx precede the real answer.
        if !head.status.is_informational() {
            return Ok(Box::new(head.clone()));
        }
    }
    Err(Failed::Late(ClientError::Receive(pingora::Error::explain(
        ErrorType::InvalidHTTPHeader,
        "no final response header from the agent",
    ))))
}

/// An agent's response whose header has been read; the body is read from it.
pub(super) struct Response<'c> {
    client: &'c Client,
    session: HttpSession,
    peer: Box<HttpPeer>,
    head: Box<ResponseHeader>,
}

impl Response<'_> {
    /// The response header.
    pub fn head(&self) -> &ResponseHeader {
        &self.head
    }

    /// The response header, to cut down to what the caller may get (`vet`).
    pub fn head_mut(&mut self) -> &mut ResponseHeader {
        &mut self.head
    }

    /// HTTP status.
    pub fn status(&self) -> u16 {
        self.head.status.as_u16()
    }

    /// Whether the agent answers with an SSE stream (2xx `text/event-stream`).
    pub fn is_sse(&self) -> bool {
        self.head.status.is_success()
            && self
                .head
                .headers
                .get(http::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|c| c.starts_with("text/event-stream"))
    }

    /// The declared `Content-Length`, when there is a valid one.
    pub fn content_length(&self) -> Option<u64> {
        self.head
            .headers
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse().ok())
    }

    /// The next piece of the body as it arrives, `None` at its end.
    pub async fn chunk(&mut self) -> Result<Option<Bytes>, ClientError> {
        self.session
            .read_body_bytes()
            .await
            .map_err(ClientError::Receive)
    }

    /// Reads the whole body (refusing past `limit` bytes) and returns the connection to the pool.
    pub async fn read_all(mut self, limit: usize) -> Result<Answer, ClientError> {
        let mut buf = BytesMut::new();
        while let Some(chunk) = self.chunk().await? {
            if buf.len() + chunk.len() > limit {
                return Err(ClientError::TooLarge { limit });
            }
            buf.extend_from_slice(&chunk);
        }
        let Response {
            client,
            session,
            peer,
            head,
        } = self;
        client.release(session, &peer).await;
        Ok(Answer {
            head,
            body: buf.freeze(),
        })
    }

    /// Returns the connection to the pool if the body was read to its end (otherwise it closes).
    pub async fn release(self) {
        self.client.release(self.session, &self.peer).await;
    }
}

/// A fully read answer.
pub(super) struct Answer {
    /// Status and headers.
    pub head: Box<ResponseHeader>,
    /// The whole body.
    pub body: Bytes,
}

impl Answer {
    /// HTTP status.
    pub fn status(&self) -> u16 {
        self.head.status.as_u16()
    }
}
