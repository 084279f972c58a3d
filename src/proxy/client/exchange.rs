//! One HTTP/1.1 exchange with an agent over pingora's pooled connector (I/O): connect (or reuse a
//! pooled connection), write the request, read the response header, then read the body chunk by
//! chunk or whole. A connection whose answer was read to the end goes back to the pool. A gRPC
//! stream's answer is read through the same [`Response`] ([`super::grpc_stream`] makes its body).
//!
//! Every wait on the agent is raced against the caller's connection ([`hung_up`]) and a
//! deadline (`[limits] upstream_*`): the answer head has a total deadline across the connections
//! tried, a unary answer's body another from its head, and every read the idle timeout (a
//! stream's only bound). A call that loses the race is dropped where it stands, its connection
//! closed with it, never pooled.
//!
//! The connector is pingora's own (`pingora::connectors::http::Connector`), so these calls run on
//! the data plane's runtime with pingora's TLS stack; every call takes its peer from [`peer`].

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use pingora::http::{RequestHeader, ResponseHeader};
use pingora::prelude::HttpPeer;
use pingora::proxy::Session;
use pingora::{ErrorType, RetryType};
use tokio::time::Instant;

use super::caller::hung_up;
use super::{ClientError, Deadline};
use crate::proxy::call::Client;
use crate::proxy::limits::UpstreamDeadlines;
use crate::proxy::upstream::{peer, tls_fault};
use crate::seam::HttpSession;
use crate::state::Upstream;

/// Connections tried for one request: a pooled connection the agent closed while it sat idle
/// fails before any answer, and the request then goes out once more on another one.
const MAX_CONNECTIONS_PER_REQUEST: usize = 3;

/// Informational (1xx) answers skipped before the real response header.
const MAX_INFORMATIONAL: usize = 8;

impl Client {
    /// Sends the request `build` makes from the caller's header, with `body`, to `up` and reads
    /// the response header, within `deadlines.header` and while `caller` stays connected.
    /// `build` is called once per connection tried: the header a connection was sent is gone
    /// with it, and most calls need only one. `replayable`: the request may go out again after a
    /// pooled connection closed with it unanswered (see [`Failed`]).
    pub(super) async fn send(
        &self,
        up: &Upstream,
        build: &(dyn Fn(&RequestHeader) -> Result<Box<RequestHeader>, ClientError> + Sync),
        body: &Bytes,
        caller: &mut Session,
        deadlines: &UpstreamDeadlines,
        replayable: bool,
    ) -> Result<Response<'_>, ClientError> {
        // Boxed: the peer (about 670 bytes) goes into the response, which the answer's readers
        // take by value, and each of their futures would hold a copy.
        let peer = Box::new(peer(up));
        // One deadline for the head, whatever number of connections it takes.
        let head_by = tokio::time::sleep(deadlines.header);
        tokio::pin!(head_by);
        let mut tries = 0;
        loop {
            tries += 1;
            // The caller's header is borrowed only here, between two races.
            let req = build(caller.req_header())?;
            let attempt = self.attempt(&peer, req, body, deadlines.idle);
            // Biased: the agent's answer is looked at first, so a call that is answered is never
            // lost to a hang-up or deadline that came at the same time, and the other two
            // futures cost nothing until the answer is pending.
            let tried = tokio::select! {
                biased;
                tried = attempt => tried,
                () = hung_up(caller) => return Err(ClientError::CallerGone),
                () = &mut head_by => return Err(ClientError::Timeout(Deadline::Header)),
            };
            match tried {
                Ok((session, head)) => {
                    let mut resp = Response {
                        head,
                        body: Body::Http {
                            client: self,
                            session,
                            peer,
                            body_by: None,
                        },
                    };
                    // A stream has no total deadline, only the idle one of each read.
                    if !resp.is_sse()
                        && let Body::Http { body_by, .. } = &mut resp.body
                    {
                        *body_by = Some(Instant::now() + deadlines.body);
                    }
                    return Ok(resp);
                }
                Err((Failed::Early(_), true)) if tries < MAX_CONNECTIONS_PER_REQUEST => {
                    tracing::debug!("pooled connection to the agent was closed; trying another");
                }
                Err((Failed::Unanswered(_), true))
                    if replayable && tries < MAX_CONNECTIONS_PER_REQUEST =>
                {
                    tracing::debug!(
                        "pooled connection to the agent closed before an answer; trying another"
                    );
                }
                Err((Failed::Early(e) | Failed::Unanswered(e) | Failed::Late(e), _)) => {
                    return Err(e);
                }
            }
        }
    }

    /// One connection's try: connect (or reuse one), send, read the head. The failure says
    /// whether the connection was a pooled one (`true`), which may be tried again.
    async fn attempt(
        &self,
        peer: &HttpPeer,
        req: Box<RequestHeader>,
        body: &Bytes,
        idle: Duration,
    ) -> Result<(HttpSession, Box<ResponseHeader>), (Failed, bool)> {
        let (mut session, reused) = self
            .session(peer)
            .await
            .map_err(|e| (Failed::Late(e), false))?;
        crate::seam::set_client_timeouts(&mut session, idle, peer.options.write_timeout);
        match exchange(&mut session, req, body).await {
            Ok(head) => Ok((session, head)),
            Err(f) => Err((f, reused)),
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

/// How an exchange failed: `Early` when the request did not reach the agent whole (the write
/// failed), so another connection may be tried; `Unanswered` when it went out but the connection
/// closed before any answer, which on a pooled connection is most often the agent closing it
/// while idle, but may be an agent that acted and then reset: tried again only for a request
/// that is [`Method::replayable`](crate::proxy::route::Method::replayable); `Late` otherwise.
enum Failed {
    Early(ClientError),
    Unanswered(ClientError),
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
            let e = receive_error(e);
            return Err(if retry {
                Failed::Unanswered(e)
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

/// A failed read from the agent: the idle timeout (pingora's per-read timeout) is a deadline.
fn receive_error(e: Box<pingora::Error>) -> ClientError {
    match e.etype() {
        ErrorType::ReadTimedout => ClientError::Timeout(Deadline::Idle),
        _ => ClientError::Receive(e),
    }
}

/// An agent's response whose header has been read; the body is read from it.
pub(super) struct Response<'c> {
    head: Box<ResponseHeader>,
    body: Body<'c>,
}

/// Where a response's body comes from.
// The HTTP variant is the one almost every call has: boxing it would cost an allocation per call
// to save a few hundred bytes on the rare gRPC stream.
#[allow(clippy::large_enum_variant)]
enum Body<'c> {
    /// An HTTP/1.1 exchange's connection, pooled again once the body was read to its end.
    Http {
        client: &'c Client,
        session: HttpSession,
        peer: Box<HttpPeer>,
        /// When a unary body must be complete (`None`: a stream).
        body_by: Option<Instant>,
    },
    /// A gRPC stream's messages, as SSE events ([`super::grpc_stream`]).
    Grpc(Box<super::grpc_stream::Events>),
}

impl<'c> Response<'c> {
    /// A gRPC stream's made-up head and its events.
    pub(super) fn grpc(
        head: Box<ResponseHeader>,
        events: Box<super::grpc_stream::Events>,
    ) -> Response<'c> {
        Response {
            head,
            body: Body::Grpc(events),
        }
    }

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

    /// The next piece of the body as it arrives, `None` at its end; the body deadline and a
    /// caller that hangs up end the wait (see [`Client::send`]).
    pub async fn chunk(&mut self, caller: &mut Session) -> Result<Option<Bytes>, ClientError> {
        let (session, body_by) = match &mut self.body {
            Body::Http {
                session, body_by, ..
            } => (session, *body_by),
            Body::Grpc(events) => return events.next(caller).await,
        };
        let read = session.read_body_bytes();
        let read = match body_by {
            Some(by) => tokio::select! {
                biased;
                read = read => read,
                () = hung_up(caller) => return Err(ClientError::CallerGone),
                () = tokio::time::sleep_until(by) => return Err(ClientError::Timeout(Deadline::Body)),
            },
            None => tokio::select! {
                biased;
                read = read => read,
                () = hung_up(caller) => return Err(ClientError::CallerGone),
            },
        };
        read.map_err(receive_error)
    }

    /// Reads the whole body (refusing past `limit` bytes) and returns the connection to the pool.
    pub async fn read_all(
        mut self,
        limit: usize,
        caller: &mut Session,
    ) -> Result<Answer, ClientError> {
        let mut buf = BytesMut::new();
        while let Some(chunk) = self.chunk(caller).await? {
            if buf.len() + chunk.len() > limit {
                return Err(ClientError::TooLarge { limit });
            }
            buf.extend_from_slice(&chunk);
        }
        let Response { head, body } = self;
        body.release().await;
        Ok(Answer {
            head,
            body: buf.freeze(),
        })
    }

    /// Returns the connection to the pool if the body was read to its end (otherwise it closes).
    pub async fn release(self) {
        self.body.release().await;
    }
}

impl Body<'_> {
    async fn release(self) {
        match self {
            Body::Http {
                client,
                session,
                peer,
                ..
            } => client.release(session, &peer).await,
            // The channel keeps its HTTP/2 connection; a stream not read to its end is reset
            // when dropped.
            Body::Grpc(_) => {}
        }
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
