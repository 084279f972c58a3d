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
    /// The JSON-RPC id the answers carry, `None` on HTTP+JSON.
    fn id(&self) -> Option<&str> {
        match self {
            Face::JsonRpc(id) => Some(id),
            Face::Rest => None,
        }
    }

    /// The answer body of `op`'s protobuf answer; `v03`: of the 0.3 service's.
    pub(super) fn answer(&self, op: Op, v03: bool, bytes: &[u8]) -> Result<Vec<u8>, ClientError> {
        let json = match (v03, self) {
            (true, face) => translate::grpc03::answer_to10(op, face.id(), bytes),
            (false, Face::JsonRpc(id)) => translate::grpc::answer_to_rpc(op, id, bytes),
            (false, Face::Rest) => translate::grpc::answer_to_rest(op, bytes),
        };
        capped(json.map_err(untranslatable)?)
    }

    /// A stream message of `op` as the event data, and whether it is the last (0.3's `final`).
    fn event(&self, op: Op, v03: bool, bytes: &[u8]) -> Result<(Vec<u8>, bool), ClientError> {
        if !v03 {
            return Ok((self.answer(op, false, bytes)?, false));
        }
        let t = translate::grpc03::event_to10(op, self.id(), bytes).map_err(untranslatable)?;
        Ok((capped(t.json)?, t.last))
    }

    /// The HTTP status and body of an agent's error answering `op`.
    pub(super) fn error(&self, op: Op, v03: bool, status: &tonic::Status) -> (u16, Vec<u8>) {
        if v03 {
            let code = status.code() as i32;
            return translate::grpc03::status_to10(op, self.id(), code, status.message());
        }
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
    if let Some(fault) = tls_fault_in(source) {
        let error = pingora::Error::explain(
            pingora::ErrorType::TLSHandshakeFailure,
            format!("the gRPC call to the agent failed: {}", status.message()),
        );
        return Some(ClientError::Tls { fault, error });
    }
    if source.is_some() {
        return Some(ClientError::Grpc(format!(
            "the call to the agent failed: {}",
            status.message()
        )));
    }
    None
}

/// The TLS fault of a failed handshake in an error's source chain: the gRPC connector's rustls
/// error, as tokio-rustls hands it up (inside an `io::Error`).
fn tls_fault_in(
    mut chain: Option<&(dyn std::error::Error + 'static)>,
) -> Option<crate::proxy::upstream::TlsFault> {
    while let Some(e) = chain {
        let io = e
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref());
        let rustls = (io.and_then(|i| i.downcast_ref::<rustls::Error>()))
            .or_else(|| e.downcast_ref::<rustls::Error>());
        if let Some(r) = rustls {
            return Some(crate::proxy::upstream::rustls_fault(r));
        }
        chain = e.source();
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
    /// The agent speaks A2A 0.3.
    v03: bool,
    face: Face,
    idle: Duration,
    done: bool,
}

impl Events {
    /// The events of `stream`, the answers of `op` (of the 0.3 service with `v03`) on the
    /// caller's `face`.
    pub(super) fn new(
        stream: tonic::Streaming<Bytes>,
        (op, v03): (Op, bool),
        face: Face,
        idle: Duration,
    ) -> Events {
        Events {
            stream,
            op,
            v03,
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
            Ok(Some(m)) => {
                let (json, last) = self.face.event(self.op, self.v03, &m)?;
                // 0.3's `final: true`: nothing follows, whether or not the agent closes.
                self.done = last;
                (None, json)
            }
            Err(status) => {
                self.done = true;
                if let Some(e) = not_the_agents(&status) {
                    return Err(e);
                }
                (Some("error"), self.face.error(self.op, self.v03, &status).1)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proxy::upstream::TlsFault;

    /// A handshake refused by the certificate check is the TLS fault it names, whether tonic's
    /// status holds the rustls error directly or inside the `io::Error` tokio-rustls makes.
    #[test]
    fn a_refused_certificate_is_a_tls_fault_not_an_unavailable_agent() {
        let unknown = rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
        let io = std::io::Error::new(std::io::ErrorKind::InvalidData, unknown);
        let status = tonic::Status::from_error(Box::new(io));
        match not_the_agents(&status) {
            Some(ClientError::Tls { fault, .. }) => assert_eq!(fault, TlsFault::UnknownIssuer),
            other => panic!("{other:?}"),
        }
        let expired = rustls::Error::InvalidCertificate(rustls::CertificateError::Expired);
        let status = tonic::Status::from_error(Box::new(expired));
        match not_the_agents(&status) {
            Some(ClientError::Tls { fault, .. }) => assert_eq!(fault, TlsFault::Expired),
            other => panic!("{other:?}"),
        }
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        let status = tonic::Status::from_error(Box::new(refused));
        assert!(matches!(
            not_the_agents(&status),
            Some(ClientError::Grpc(_))
        ));
    }
}
