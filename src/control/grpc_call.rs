//! One guarded unary gRPC call of the control plane (I/O), as [`super::fetch`] guards an HTTP
//! one: the URL's origin must be approved and its scheme allowed, the address is resolved once
//! and checked (every address the name has), the call connects to that address only, with the
//! integration's roots, within the policy's total timeout, and the answer is at most its body
//! cap. Used for the extended card of a gRPC agent and for the probes of one (a server-streaming
//! call read up to a bounded number of messages).

use bytes::Bytes;
use tonic::metadata::MetadataMap;

use super::fetch::{FetchError, FetchPolicy, check_destination};
use crate::state::grpc;
use crate::state::trust::trust_roots;
use crate::state::upstream::authority_of;

/// What the agent answered: its protobuf answer, or the status it ended the call with.
pub type Answered = Result<Bytes, tonic::Status>;

/// A client for the agent at `url` under `policy`: the address checked and pinned, the
/// integration's roots for `https`, the policy's size cap both ways.
async fn connect(
    url: &str,
    policy: &FetchPolicy,
) -> Result<tonic::client::Grpc<tonic::transport::Channel>, FetchError> {
    let invalid = |reason: String| FetchError::InvalidUrl {
        url: url.to_owned(),
        reason,
    };
    let u = url::Url::parse(url).map_err(|e| invalid(e.to_string()))?;
    let (_, host, addrs) = check_destination(&u, policy).await?;
    let port = u
        .port_or_known_default()
        .ok_or_else(|| invalid("no port".into()))?;
    let addr = match addrs.first() {
        Some(a) => *a,
        // An IP literal: checked as it is, no lookup.
        None => std::net::SocketAddr::new(
            host.parse().map_err(|_| invalid("no address".into()))?,
            port,
        ),
    };
    let authority = authority_of(&u).unwrap_or_default();
    let tls = u.scheme() == "https";
    let roots = if tls {
        let ca = policy.ca_file.as_deref();
        Some(
            crate::types::file::blocking(|| trust_roots(ca)).map_err(|e| FetchError::CaFile {
                path: e.path().to_owned(),
                reason: e.detail().to_owned(),
            })?,
        )
    } else {
        None
    };
    let sni = host.trim_start_matches('[').trim_end_matches(']');
    let target = grpc::Target {
        addr,
        authority: &authority,
        tls: roots.as_deref().map(|r| (r, sni)),
    };
    let channel = grpc::channel(&target).map_err(|e| transport(url, e.to_string()))?;
    Ok(tonic::client::Grpc::new(channel)
        .max_decoding_message_size(policy.max_bytes)
        .max_encoding_message_size(policy.max_bytes))
}

fn transport(url: &str, reason: String) -> FetchError {
    FetchError::Transport {
        url: url.to_owned(),
        reason,
    }
}

/// A client for the agent at `url` ([`connect`]) whose connection is up and ready for a call.
async fn ready(
    url: &str,
    policy: &FetchPolicy,
) -> Result<tonic::client::Grpc<tonic::transport::Channel>, FetchError> {
    let mut client = connect(url, policy).await?;
    client
        .ready()
        .await
        .map_err(|e| transport(url, e.to_string()))?;
    Ok(client)
}

/// `call`, cut at the policy's total timeout (which covers connecting too).
async fn within<T>(
    policy: &FetchPolicy,
    call: impl std::future::Future<Output = Result<T, FetchError>>,
) -> Result<T, FetchError> {
    tokio::time::timeout(policy.total_timeout, call)
        .await
        .map_err(|_| FetchError::Timeout {
            after: policy.total_timeout,
        })?
}

/// `request` with `body`, `metadata` and the policy's deadline.
fn request(body: Bytes, metadata: MetadataMap, policy: &FetchPolicy) -> tonic::Request<Bytes> {
    let mut request = tonic::Request::new(body);
    *request.metadata_mut() = metadata;
    request.set_timeout(policy.total_timeout);
    request
}

/// A status of the call as the agent's answer, or the exchange's failure when tonic made it (the
/// connection failed, the message was over the cap).
fn answered(
    url: &str,
    s: tonic::Status,
    policy: &FetchPolicy,
) -> Result<tonic::Status, FetchError> {
    if s.code() == tonic::Code::ResourceExhausted && s.message().contains("larger") {
        return Err(FetchError::TooLarge {
            limit: policy.max_bytes,
        });
    }
    if std::error::Error::source(&s).is_some() {
        return Err(transport(url, s.to_string()));
    }
    Ok(s)
}

/// Calls rpc `path` at `url` (an interface URL as [`crate::profile::Interface::call_url`] gives
/// it) with `body` and `metadata`, under `policy`.
pub async fn unary(
    url: &str,
    path: &'static str,
    body: Bytes,
    metadata: MetadataMap,
    policy: &FetchPolicy,
) -> Result<Answered, FetchError> {
    let call = async {
        let mut client = ready(url, policy).await?;
        let path = http::uri::PathAndQuery::from_static(path);
        Ok(client
            .unary(request(body, metadata, policy), path, grpc::Raw)
            .await)
    };
    match within(policy, call).await? {
        Ok(r) => Ok(Ok(r.into_inner())),
        Err(s) => answered(url, s, policy).map(Err),
    }
}

/// What a server-streaming call gave: the messages read, and the status it ended with when that
/// was an error (`None`: it ended well, or the reader stopped at its bound).
#[derive(Debug)]
pub struct Streamed {
    /// The messages, in order.
    pub messages: Vec<Bytes>,
    /// The agent's error status, before or after messages.
    pub status: Option<tonic::Status>,
}

/// Calls server-streaming rpc `path` as [`unary`] calls one, reading at most `max_messages`
/// messages (then the call is dropped, which cancels it at the agent), all within the policy's
/// total timeout and each within its size cap.
pub async fn streaming(
    url: &str,
    path: &'static str,
    body: Bytes,
    metadata: MetadataMap,
    policy: &FetchPolicy,
    max_messages: usize,
) -> Result<Streamed, FetchError> {
    let call = async {
        let mut client = ready(url, policy).await?;
        let path = http::uri::PathAndQuery::from_static(path);
        let mut out = Streamed {
            messages: Vec::new(),
            status: None,
        };
        let req = request(body, metadata, policy);
        let mut stream = match client.server_streaming(req, path, grpc::Raw).await {
            Ok(r) => r.into_inner(),
            Err(s) => {
                out.status = Some(answered(url, s, policy)?);
                return Ok(out);
            }
        };
        while out.messages.len() < max_messages {
            match stream.message().await {
                Ok(Some(m)) => out.messages.push(m),
                Ok(None) => break,
                Err(s) => {
                    out.status = Some(answered(url, s, policy)?);
                    break;
                }
            }
        }
        Ok(out)
    };
    within(policy, call).await
}
