//! A gRPC agent's server stream, read as the SSE body a JSON-RPC agent would send (I/O): each
//! message a `data:` event carrying the JSON-RPC answer ([`crate::translate::grpc`]), a status
//! that ends the stream with an A2A error an `event: error`. Every wait is raced against the
//! caller ([`super::caller::hung_up`]) and `upstream_idle_timeout`.

use std::time::Duration;

use bytes::Bytes;
use pingora::proxy::Session;

use super::caller::hung_up;
use super::{ClientError, Deadline};
use crate::translate::{self, Op};

/// An answer that does not translate: the caller gets InvalidAgentResponseError.
pub(super) fn untranslatable(e: translate::TranslateError) -> ClientError {
    tracing::warn!(error = %e, "the agent's gRPC answer does not translate");
    let why = match e {
        translate::TranslateError::TooLarge { mib } => {
            crate::proxy::answer::Invalid::TooLarge { mib }
        }
        _ => crate::proxy::answer::Invalid::Untranslatable,
    };
    ClientError::Invalid { why, status: 200 }
}

/// The JSON-RPC answer `json` made from an agent's message, within the answer cap (the JSON of
/// a `raw` part is a third larger than its bytes).
pub(super) fn capped(json: Vec<u8>) -> Result<Vec<u8>, ClientError> {
    if json.len() > super::MAX_ANSWER_BYTES {
        return Err(ClientError::TooLarge {
            limit: super::MAX_ANSWER_BYTES,
        });
    }
    Ok(json)
}

/// The binding the caller called on, which the agent's answers are made in.
#[derive(Debug, Clone)]
pub(super) enum Face {
    /// JSON-RPC, with the caller's request id (JSON text) every answer carries.
    JsonRpc(String),
    /// HTTP+JSON.
    Rest,
}

impl Face {
    /// The answer body of `op`'s protobuf answer (or stream message).
    pub(super) fn answer(&self, op: Op, bytes: &[u8]) -> Result<Vec<u8>, ClientError> {
        let json = match self {
            Face::JsonRpc(id) => translate::grpc::answer_to_rpc(op, id, bytes),
            Face::Rest => translate::grpc::answer_to_rest(op, bytes),
        };
        capped(json.map_err(untranslatable)?)
    }

    /// The HTTP status and body of an agent's error answering `op`.
    pub(super) fn error(&self, op: Op, status: &tonic::Status) -> (u16, Vec<u8>) {
        match self {
            Face::JsonRpc(id) => (
                200,
                translate::grpc::status_to_rpc(op, id, wire_status(status)),
            ),
            Face::Rest => translate::grpc::status_to_rest(op, wire_status(status)),
        }
    }
}

/// The status as the translator reads it.
pub(super) fn wire_status(status: &tonic::Status) -> translate::grpc::Status<'_> {
    translate::grpc::Status {
        code: status.code() as i32,
        message: status.message(),
        details: status.details(),
    }
}

/// A status tonic made itself (the connection failed, the deadline passed), not one the agent
/// sent: those have a source error, or are a deadline.
pub(super) fn not_the_agents(status: &tonic::Status) -> Option<ClientError> {
    if status.code() == tonic::Code::DeadlineExceeded {
        return Some(ClientError::Timeout(Deadline::Header));
    }
    if let Some(e) = made_by_tonic(status) {
        return Some(e);
    }
    let source = std::error::Error::source(status);
    // The `grpc-timeout` the unary call was sent with, expired on this side first.
    let mut chain = source;
    let mut expired = false;
    while let Some(e) = chain {
        expired |= e.is::<tonic::TimeoutExpired>();
        chain = e.source();
    }
    if expired {
        return Some(ClientError::Timeout(Deadline::Header));
    }
    if source.is_some() {
        return Some(ClientError::Grpc(format!(
            "the call to the agent failed: {}",
            status.message()
        )));
    }
    None
}

/// tonic 0.14's own statuses that carry no source (its texts, `codec/decode.rs`, `status.rs`,
/// `client/grpc.rs`): an answer over the decoding cap, an HTTP answer without `grpc-status` (a
/// proxy's 503, a server that is not gRPC), a stream cut without a final status, a framing
/// fault. None is the agent's word: each is the failure of the exchange, as on the HTTP path.
fn made_by_tonic(status: &tonic::Status) -> Option<ClientError> {
    let m = status.message();
    if status.code() == tonic::Code::OutOfRange
        && m.starts_with("Error, decoded message length too large")
    {
        return Some(ClientError::TooLarge {
            limit: super::MAX_ANSWER_BYTES,
        });
    }
    let synthetic = m.starts_with("grpc-status header missing, mapped from HTTP status code")
        || m.starts_with("protocol error:")
        || m == "Unexpected EOF decoding stream."
        || m == "Missing response message.";
    synthetic.then(|| ClientError::Grpc(format!("the exchange with the agent failed: {m}")))
}

/// A server-streaming rpc's messages, as the SSE body a JSON-RPC agent would send: each message a
/// `data:` event with the JSON-RPC answer, a status that ends it with an error an `event: error`.
pub(super) struct Events {
    stream: tonic::Streaming<Bytes>,
    op: Op,
    face: Face,
    idle: Duration,
    done: bool,
}

impl Events {
    /// The events of `stream`, the answers of `op` on the caller's `face`.
    pub(super) fn new(
        stream: tonic::Streaming<Bytes>,
        op: Op,
        face: Face,
        idle: Duration,
    ) -> Events {
        Events {
            stream,
            op,
            face,
            idle,
            done: false,
        }
    }

    /// The next SSE event, `None` at the end; the idle deadline and a caller that hangs up end the
    /// wait.
    pub(super) async fn next(
        &mut self,
        caller: &mut Session,
    ) -> Result<Option<Bytes>, ClientError> {
        if self.done {
            return Ok(None);
        }
        let message = tokio::select! {
            biased;
            m = self.stream.message() => m,
            () = hung_up(caller) => return Err(ClientError::CallerGone),
            () = tokio::time::sleep(self.idle) => return Err(ClientError::Timeout(Deadline::Idle)),
        };
        let (event, json) = match message {
            Ok(None) => return Ok(None),
            Ok(Some(m)) => (None, self.face.answer(self.op, &m)?),
            Err(status) => {
                self.done = true;
                if let Some(e) = not_the_agents(&status) {
                    return Err(e);
                }
                (Some("error"), self.face.error(self.op, &status).1)
            }
        };
        let mut out = Vec::with_capacity(json.len() + 24);
        if let Some(e) = event {
            out.extend_from_slice(b"event: ");
            out.extend_from_slice(e.as_bytes());
            out.push(b'\n');
        }
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(&json);
        out.extend_from_slice(b"\n\n");
        Ok(Some(Bytes::from(out)))
    }
}
