//! Calls to a gRPC agent (I/O): the planned rpc of `lf.a2a.v1.A2AService` over tonic's HTTP/2
//! client, answered as the JSON-RPC agent the caller thinks it talks to ([`crate::translate::grpc`]),
//! so the rest of the client (vet, feedback, downgrade, retry, artifact schema) treats the answer as
//! any other: a unary answer or an error becomes a whole JSON-RPC answer, a stream an SSE body of
//! JSON-RPC events.
//!
//! The same bounds as every other call ([`super::exchange`]): the caller hanging up ends the call at
//! once (the rpc's future is dropped, which resets its HTTP/2 stream), the answer head has
//! `upstream_header_timeout` and a unary answer `upstream_body_timeout` after it (also sent as
//! `grpc-timeout`), and every stream message `upstream_idle_timeout`; an answer is at most
//! [`MAX_ANSWER_BYTES`]. The connection goes to the address the control plane checked (no second
//! DNS lookup), with the upstream's roots and full certificate and host name verification.

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue};
use pingora::http::ResponseHeader;
use pingora::proxy::Session;
use tonic::transport::Channel;

use super::caller::hung_up;
use super::exchange::{Answer, Response};
pub(super) use super::grpc_stream::Face;
use super::grpc_stream::{Events, not_the_agents};
use super::{ClientError, Deadline, MAX_ANSWER_BYTES};
use crate::proxy::limits::UpstreamDeadlines;
use crate::state::{Upstream, grpc};
use crate::translate;

/// Headers that are HTTP's or gRPC's own, never metadata of a call.
fn is_transport_header(name: &HeaderName) -> bool {
    use http::header;
    crate::proxy::headers::is_framing(name.as_str())
        || matches!(
            *name,
            header::HOST | header::CONTENT_TYPE | header::ACCEPT_ENCODING | header::USER_AGENT
        )
        || name.as_str().starts_with("grpc-")
}

/// The call's metadata: the shaped headers (`A2A-Version`, `A2A-Extensions`, the credential,
/// `X-Request-Id`, the trace context, `forward_headers`) without HTTP's own.
pub(super) fn metadata(shaped: Vec<(HeaderName, HeaderValue)>) -> tonic::metadata::MetadataMap {
    let mut headers = HeaderMap::with_capacity(shaped.len());
    for (n, v) in shaped {
        if !is_transport_header(&n) {
            headers.append(n, v);
        }
    }
    tonic::metadata::MetadataMap::from_headers(headers)
}

/// This thread's channel to `up`: made on the thread's first call, connected on it.
fn channel(up: &Upstream) -> Result<Channel, ClientError> {
    up.grpc.get_or_make(|| {
        let target = grpc::Target {
            addr: up.addr,
            authority: &up.authority,
            tls: up.tls.then_some((&*up.trust, up.sni.as_str())),
        };
        grpc::channel(&target).map_err(|e| ClientError::Grpc(e.to_string()))
    })
}

/// One planned rpc: where, what, and the JSON-RPC id its answers carry.
pub(super) struct Rpc<'a> {
    /// The rpc's path (the plan's).
    pub path: &'a str,
    /// The protobuf request.
    pub body: Bytes,
    /// The call's metadata ([`metadata`]).
    pub metadata: tonic::metadata::MetadataMap,
    /// The binding the caller called on (and its JSON-RPC id).
    pub face: Face,
    /// The agent speaks A2A 0.3 (`a2a.v1`): its answers are made 1.0 ([`translate::grpc03`]).
    pub v03: bool,
}

/// Sends `rpc` to `up` and reads as much of the answer as deciding the caller's answer needs: a
/// unary rpc whole, a streaming one to its head (its messages are read by the caller's pipe).
pub(super) async fn send<'c>(
    up: &Upstream,
    rpc: Rpc<'_>,
    caller: &mut Session,
    deadlines: &UpstreamDeadlines,
) -> Result<super::Sent<'c>, ClientError> {
    let sent = call(up, rpc, caller, deadlines).await;
    if let Err(ClientError::Timeout(_)) = sent {
        // The connection may be the reason (dead, or its streams all taken): the thread's next
        // call connects again; calls still on this one keep it until they end.
        up.grpc.forget();
    }
    sent
}

async fn call<'c>(
    up: &Upstream,
    rpc: Rpc<'_>,
    caller: &mut Session,
    deadlines: &UpstreamDeadlines,
) -> Result<super::Sent<'c>, ClientError> {
    let op = match rpc.v03 {
        true => translate::grpc03::op_of_path(rpc.path),
        false => translate::grpc::op_of_path(rpc.path),
    }
    .ok_or_else(|| ClientError::Grpc(format!("no rpc {:?}", rpc.path)))?;
    let mut grpc = tonic::client::Grpc::new(channel(up)?)
        .max_decoding_message_size(MAX_ANSWER_BYTES)
        .max_encoding_message_size(MAX_ANSWER_BYTES);
    let mut request = tonic::Request::new(rpc.body);
    *request.metadata_mut() = rpc.metadata;
    let path = http::uri::PathAndQuery::try_from(rpc.path)
        .map_err(|e| ClientError::Grpc(format!("rpc path: {e}")))?;
    if translate::grpc::streams(op) {
        let call = async {
            grpc.ready().await.map_err(transport)?;
            Ok::<_, ClientError>(grpc.server_streaming(request, path, grpc::Raw).await)
        };
        let answered = tokio::select! {
            biased;
            a = call => a?,
            () = hung_up(caller) => return Err(ClientError::CallerGone),
            () = tokio::time::sleep(deadlines.header) => return Err(ClientError::Timeout(Deadline::Header)),
        };
        return match answered {
            Ok(r) => {
                let head = head(200, r.metadata(), "text/event-stream")?;
                let events = Events::new(r.into_inner(), (op, rpc.v03), rpc.face, deadlines.idle);
                Ok(super::Sent::Stream(Response::grpc(head, Box::new(events))))
            }
            Err(status) => failed(&status, (op, rpc.v03), &rpc.face).map(super::Sent::Whole),
        };
    }
    // One deadline for the whole unary answer, as its head and body have together elsewhere;
    // the agent is told it too.
    let whole = deadlines.header + deadlines.body;
    request.set_timeout(whole);
    let call = async {
        grpc.ready().await.map_err(transport)?;
        Ok::<_, ClientError>(grpc.unary(request, path, grpc::Raw).await)
    };
    let answered = tokio::select! {
        biased;
        a = call => a?,
        () = hung_up(caller) => return Err(ClientError::CallerGone),
        () = tokio::time::sleep(whole) => return Err(ClientError::Timeout(Deadline::Header)),
    };
    let answer = match answered {
        Ok(r) => {
            let head = head(200, r.metadata(), "application/json")?;
            let body = rpc.face.answer(op, rpc.v03, r.get_ref())?;
            Answer {
                head,
                body: Bytes::from(body),
            }
        }
        Err(status) => failed(&status, (op, rpc.v03), &rpc.face)?,
    };
    Ok(super::Sent::Whole(answer))
}

/// A failure to reach the agent at all (connect, TLS, HTTP/2).
fn transport(e: tonic::transport::Error) -> ClientError {
    ClientError::Grpc(format!("connecting to the agent failed: {e}"))
}

/// The answer to a status the rpc ended with before any message: the agent's A2A error as a
/// JSON-RPC error answer, or, for a status that is the connection's and not the agent's, the
/// failure the caller gets as 502/504.
fn failed(
    status: &tonic::Status,
    (op, v03): (translate::Op, bool),
    face: &Face,
) -> Result<Answer, ClientError> {
    if let Some(e) = not_the_agents(status) {
        return Err(e);
    }
    let (code, body) = face.error(op, v03, status);
    Ok(Answer {
        head: head(code, status.metadata(), "application/json")?,
        body: Bytes::from(body),
    })
}

fn head_error(e: impl std::fmt::Display) -> ClientError {
    ClientError::Grpc(format!("answer head: {e}"))
}

/// The head of a made-up HTTP answer: `status`, `content_type`, and the agent's metadata as headers
/// (what the caller may see of them is cut down later, as for any agent's headers).
fn head(
    status: u16,
    metadata: &tonic::metadata::MetadataMap,
    content_type: &'static str,
) -> Result<Box<ResponseHeader>, ClientError> {
    let mut head =
        ResponseHeader::build_no_case(status, Some(metadata.len() + 1)).map_err(head_error)?;
    for (n, v) in metadata.clone().into_headers().iter() {
        if !is_transport_header(n) {
            head.append_header(n.clone(), v.clone())
                .map_err(head_error)?;
        }
    }
    head.insert_header(http::header::CONTENT_TYPE, content_type)
        .map_err(head_error)?;
    Ok(Box::new(head))
}
