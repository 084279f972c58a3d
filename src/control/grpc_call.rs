//! One guarded unary gRPC call of the control plane (I/O), as [`super::fetch`] guards an HTTP
//! one: the URL's origin must be approved and its scheme allowed, the address is resolved once
//! and checked (every address the name has), the call connects to that address only, with the
//! integration's roots, within the policy's total timeout, and the answer is at most its body
//! cap. Used for the extended card of a gRPC agent.

use bytes::Bytes;
use tonic::metadata::MetadataMap;

use super::fetch::{FetchError, FetchPolicy, check_destination};
use crate::state::grpc;
use crate::state::trust::trust_roots;
use crate::state::upstream::authority_of;

/// What the agent answered: its protobuf answer, or the status it ended the call with.
pub type Answered = Result<Bytes, tonic::Status>;

/// Calls rpc `path` at `url` (an interface URL as [`crate::profile::Interface::call_url`] gives
/// it) with `body` and `metadata`, under `policy`.
pub async fn unary(
    url: &str,
    path: &'static str,
    body: Bytes,
    metadata: MetadataMap,
    policy: &FetchPolicy,
) -> Result<Answered, FetchError> {
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
    let transport = |reason: String| FetchError::Transport {
        url: url.to_owned(),
        reason,
    };
    let channel = grpc::channel(&target).map_err(|e| transport(e.to_string()))?;
    let mut client = tonic::client::Grpc::new(channel)
        .max_decoding_message_size(policy.max_bytes)
        .max_encoding_message_size(policy.max_bytes);
    let mut request = tonic::Request::new(body);
    *request.metadata_mut() = metadata;
    request.set_timeout(policy.total_timeout);
    let call = async {
        client.ready().await.map_err(|e| transport(e.to_string()))?;
        let path = http::uri::PathAndQuery::from_static(path);
        Ok::<_, FetchError>(client.unary(request, path, grpc::Raw).await)
    };
    let answered = tokio::time::timeout(policy.total_timeout, call)
        .await
        .map_err(|_| FetchError::Timeout {
            after: policy.total_timeout,
        })??;
    match answered {
        Ok(r) => Ok(Ok(r.into_inner())),
        Err(s) if s.code() == tonic::Code::ResourceExhausted && s.message().contains("larger") => {
            Err(FetchError::TooLarge {
                limit: policy.max_bytes,
            })
        }
        // A status tonic made itself: the connection failed.
        Err(s) if std::error::Error::source(&s).is_some() => Err(transport(s.to_string())),
        Err(s) => Ok(Err(s)),
    }
}
