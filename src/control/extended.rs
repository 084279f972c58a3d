//! The extended Agent Card (`GetExtendedAgentCard`, A2A specification §3.1.11; a 0.3 agent's
//! `agent/getAuthenticatedExtendedCard` or `GET /v1/card`, offered when its card says
//! `supportsAuthenticatedExtendedCard`): fetched with an integration's credential over the chosen
//! interface, cached per credential identity (I/O).
//!
//! The call goes through the same guarded sender as card fetches (approved origin, checked and
//! pinned address, size cap, timeouts) and never follows a redirect, because it carries a credential.
//! `UnsupportedOperationError` and `ExtendedAgentCardNotConfiguredError` mean "use the public card";
//! the caller records that as evidence. The cache key is a digest of the credential, never the secret,
//! and a lookup with another identity never sees an entry: one tenant's partner-only skills cannot
//! leak into another's view.

use std::collections::HashMap;
use std::sync::Mutex;

use bytes::Bytes;
use http::HeaderValue;
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::control::fetch::{CardFetcher, FetchError, FetchPolicy, Outgoing};
use crate::profile::{Binding, Interface};
use crate::state::ExtendedFallback;
use crate::translate::{self, Dialect, Op};

/// Errors of the extended-card call that are not a documented fallback.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum ExtendedError {
    /// The guarded request itself failed or was refused.
    #[error("extended card request: {0}")]
    Fetch(#[from] FetchError),
    /// The agent refused the credential (HTTP 401/403).
    #[error("the agent refused the integration's credential (HTTP {status})")]
    Unauthorized {
        /// 401 or 403.
        status: u16,
    },
    /// The agent answered with another A2A or JSON-RPC error.
    #[error("the agent answered GetExtendedAgentCard with error {code}: {message}")]
    Agent {
        /// JSON-RPC code (or the HTTP status for HTTP+JSON).
        code: i64,
        /// The agent's message, cut to 200 characters.
        message: String,
    },
    /// The answer was not a JSON-RPC response or card JSON.
    #[error("malformed GetExtendedAgentCard response: {0}")]
    Malformed(String),
}

/// Why the public card is used instead of an extended one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Fallback {
    /// -32004 / `UNSUPPORTED_OPERATION`: the agent does not offer an extended card after all.
    UnsupportedOperation,
    /// -32007 / `EXTENDED_AGENT_CARD_NOT_CONFIGURED`.
    NotConfigured,
}

impl From<Fallback> for ExtendedFallback {
    fn from(f: Fallback) -> ExtendedFallback {
        match f {
            Fallback::UnsupportedOperation => ExtendedFallback::UnsupportedOperation,
            Fallback::NotConfigured => ExtendedFallback::NotConfigured,
        }
    }
}

/// The result of a successful `GetExtendedAgentCard` exchange.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExtendedOutcome {
    /// The extended card's JSON, to be validated and compiled as a whole replacement.
    Card(Bytes),
    /// Use the public card, for this documented reason.
    Fallback(Fallback),
}

/// The identity of a credential: `sha256:<hex>` of the exact `Authorization` value. Safe to log and
/// to use as a key; the secret cannot be recovered from it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct CredentialIdentity(String);

impl CredentialIdentity {
    /// The identity of an `Authorization` header value.
    pub fn of(authorization: &HeaderValue) -> Self {
        CredentialIdentity(format!(
            "sha256:{}",
            hex::encode(Sha256::digest(authorization.as_bytes()))
        ))
    }

    /// The digest text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Calls `GetExtendedAgentCard` on `iface` with `authorization`. `tenant` is the effective tenant
/// (the integration's override, else the interface's).
pub async fn fetch_extended(
    fetcher: &CardFetcher,
    iface: &Interface,
    tenant: Option<&str>,
    authorization: &HeaderValue,
    policy: &FetchPolicy,
) -> Result<ExtendedOutcome, ExtendedError> {
    use http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE};
    let mut headers = http::HeaderMap::new();
    headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
    // A 0.3 agent: no `A2A-Version` (absent means 0.3) and 0.3's method, without params; its
    // answer is a 0.3 card, which validation converts like any 0.3 card (`card::v03`). The
    // header comes from the one place the data plane and the probes take it from.
    let dialect = Dialect::of(iface).ok_or_else(|| {
        ExtendedError::Malformed("the interface is not one the gateway can call".into())
    })?;
    let v03 = dialect.translates();
    if let Some((name, value)) = dialect.version_header(&iface.version) {
        headers.insert(name, value);
    } else if !v03 {
        return Err(ExtendedError::Malformed(
            "interface version is not a header value".into(),
        ));
    }
    let mut auth = authorization.clone();
    auth.set_sensitive(true);
    headers.insert(AUTHORIZATION, auth);
    let req = match iface.binding {
        Binding::JsonRpc => {
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            Outgoing {
                method: reqwest::Method::POST,
                url: iface.url.clone(),
                headers,
                body: Some(jsonrpc_body(v03, tenant)),
                follow_redirects: false,
            }
        }
        Binding::HttpJson => Outgoing {
            method: reqwest::Method::GET,
            url: rest_url(iface, tenant, v03)?,
            headers,
            body: None,
            follow_redirects: false,
        },
        Binding::Grpc => return fetch_grpc(iface, tenant, headers, policy, v03).await,
    };
    let binding = iface.binding;
    let resp = fetcher.send(req, policy).await?;
    let status = resp.status.as_u16();
    if status == 401 || status == 403 {
        return Err(ExtendedError::Unauthorized { status });
    }
    match binding {
        Binding::JsonRpc => parse_jsonrpc(status, &resp.body),
        // A 0.3 agent's error is one of the 0.3 SDKs' shapes: read as the 1.0 error it means
        // (Python 0.3.26's 404 `{"message"}` is -32007, not configured).
        Binding::HttpJson if v03 && status != 200 => {
            match translate::rest_answer_to10(Op::GetExtendedAgentCard, status, &resp.body) {
                Ok(Some(t)) => parse_rest(t.status, Bytes::from(t.json)),
                _ => parse_rest(status, resp.body),
            }
        }
        Binding::HttpJson | Binding::Grpc => parse_rest(status, resp.body),
    }
}

/// The extended card of a gRPC agent, through the control plane's guarded gRPC call, with
/// `headers` (the version and the credential) as metadata. A 1.0 agent's `GetExtendedAgentCard`
/// rpc: the JSON-RPC request's params made the protobuf request, and the answer or status made
/// the JSON-RPC answer a JSON-RPC agent would give (`translate::grpc`). A 0.3 agent's
/// `GetAgentCard` (what the official 0.3 client calls for the extended card): its proto
/// `AgentCard` made the 0.3 JSON card (`translate::grpc03::card_to_json`), which validation then
/// converts like any 0.3 card; a status is the 0.3 error it names.
async fn fetch_grpc(
    iface: &Interface,
    tenant: Option<&str>,
    mut headers: http::HeaderMap,
    policy: &FetchPolicy,
    v03: bool,
) -> Result<ExtendedOutcome, ExtendedError> {
    use translate::{grpc as g, grpc03 as g03};
    let op = Op::GetExtendedAgentCard;
    let malformed = |e: translate::TranslateError| ExtendedError::Malformed(e.to_string());
    let (path, request) = if v03 {
        // `GetAgentCardRequest` has no fields: its encoding is empty.
        (g03::path(op).expect("0.3 has GetAgentCard"), Vec::new())
    } else {
        let body = jsonrpc_body(false, tenant);
        (g::path(op), g::request_to_pb(op, &body).map_err(malformed)?)
    };
    headers.remove(http::header::ACCEPT);
    let metadata = tonic::metadata::MetadataMap::from_headers(headers);
    let url = iface.call_url();
    let answered =
        crate::control::grpc_call::unary(&url, path, Bytes::from(request), metadata, policy)
            .await?;
    let id = serde_json::to_string(RPC_ID).expect("a string");
    let json = match answered {
        Ok(bytes) if v03 => {
            return Ok(ExtendedOutcome::Card(Bytes::from(
                g03::card_to_json(&bytes).map_err(malformed)?,
            )));
        }
        Ok(bytes) => g::answer_to_rpc(op, &id, &bytes).map_err(malformed)?,
        Err(status) => {
            // The gRPC binding's refusals of the credential.
            match status.code() {
                tonic::Code::Unauthenticated => {
                    return Err(ExtendedError::Unauthorized { status: 401 });
                }
                tonic::Code::PermissionDenied => {
                    return Err(ExtendedError::Unauthorized { status: 403 });
                }
                _ => {}
            }
            if v03 {
                g03::status_to10(op, Some(&id), status.code() as i32, status.message()).1
            } else {
                let s = g::Status {
                    code: status.code() as i32,
                    message: status.message(),
                    details: status.details(),
                };
                g::status_to_rpc(op, &id, s)
            }
        }
    };
    parse_jsonrpc(200, &Bytes::from(json))
}

/// The HTTP+JSON URL of the extended card below the interface's: 1.0's `/extendedAgentCard`
/// (after the tenant), or 0.3's `/v1/card` (no tenant), named by the translator that names every
/// 0.3 route.
fn rest_url(iface: &Interface, tenant: Option<&str>, v03: bool) -> Result<String, ExtendedError> {
    let mut url = url::Url::parse(&iface.url).map_err(|e| {
        ExtendedError::Fetch(FetchError::InvalidUrl {
            url: iface.url.clone(),
            reason: e.to_string(),
        })
    })?;
    let route = if v03 {
        translate::rest_request_to03(Op::GetExtendedAgentCard, "/extendedAgentCard", None, b"")
            .map_err(|e| ExtendedError::Malformed(e.to_string()))?
            .path
    } else {
        "/extendedAgentCard".to_owned()
    };
    {
        let mut segs = url
            .path_segments_mut()
            .map_err(|_| ExtendedError::Malformed("interface URL cannot take a path".into()))?;
        segs.pop_if_empty();
        if let Some(t) = tenant.filter(|_| !v03) {
            segs.push(t);
        }
        segs.extend(route.trim_start_matches('/').split('/'));
    }
    Ok(url.to_string())
}

/// The JSON-RPC request for the extended card: 1.0's `GetExtendedAgentCard` with the tenant, or
/// 0.3's `agent/getAuthenticatedExtendedCard`, which takes no params (0.3 has no tenant).
fn jsonrpc_body(v03: bool, tenant: Option<&str>) -> Bytes {
    let body = match translate::method_03(Op::GetExtendedAgentCard) {
        Some(method) if v03 => serde_json::json!({
            "jsonrpc": "2.0",
            "id": RPC_ID,
            "method": method,
        }),
        _ => serde_json::json!({
            "jsonrpc": "2.0",
            "id": RPC_ID,
            "method": "GetExtendedAgentCard",
            "params": match tenant {
                Some(t) => serde_json::json!({ "tenant": t }),
                None => serde_json::json!({}),
            },
        }),
    };
    Bytes::from(serde_json::to_vec(&body).expect("json"))
}

/// The JSON-RPC id of the extended-card request; the answer must carry it.
const RPC_ID: &str = "a2a-egress-extended-card";

/// Longest agent-written error message kept, in characters.
const MAX_AGENT_MESSAGE_CHARS: usize = 200;

/// An agent-written error message, made safe to show the way every provider-written string is
/// ([`crate::card::sanitize`]: controls and invisible characters dropped, whitespace folded, cut).
fn cut(s: &str) -> String {
    crate::card::sanitize::sanitize(s, MAX_AGENT_MESSAGE_CHARS)
}

/// A JSON-RPC answer: the result kept as the agent's bytes, so the card's validation sees exactly
/// what the agent sent (a parsed value would have folded duplicate keys away).
#[derive(serde::Deserialize)]
struct RpcAnswer<'a> {
    /// `None` when absent; `Some(Null)` for `"id": null`.
    #[serde(default, deserialize_with = "present")]
    id: Option<serde_json::Value>,
    #[serde(borrow, default)]
    result: Option<&'a serde_json::value::RawValue>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

/// A member that is present, `null` included (serde's default reads `null` as absent).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<serde_json::Value>, D::Error> {
    serde::Deserialize::deserialize(d).map(Some)
}

/// Parses a JSON-RPC answer (pure). It must answer this request: its `id` is the request's (an
/// error may carry `null`, JSON-RPC's id for a request the server could not read).
fn parse_jsonrpc(status: u16, body: &[u8]) -> Result<ExtendedOutcome, ExtendedError> {
    let v: RpcAnswer<'_> = serde_json::from_slice(body)
        .map_err(|e| ExtendedError::Malformed(format!("HTTP {status}, body is not JSON: {e}")))?;
    let ours = match &v.id {
        Some(serde_json::Value::String(id)) => id == RPC_ID,
        Some(serde_json::Value::Null) => v.error.is_some(),
        _ => false,
    };
    if !ours {
        return Err(ExtendedError::Malformed(format!(
            "HTTP {status}, the answer's id is not the request's ({RPC_ID:?})"
        )));
    }
    if let Some(err) = &v.error {
        let code = err.get("code").and_then(|c| c.as_i64()).unwrap_or(0);
        return match code {
            // -32601 (no such method) stays an agent error, not a fallback: a fallback forgets
            // this credential's cached extended card, and one -32601 from a rolling deploy or a
            // misrouting proxy must not drop partner-only skills. Without a cached card the
            // public one serves either way, with the agent's answer as the reason.
            -32004 => Ok(ExtendedOutcome::Fallback(Fallback::UnsupportedOperation)),
            -32007 => Ok(ExtendedOutcome::Fallback(Fallback::NotConfigured)),
            _ => Err(ExtendedError::Agent {
                code,
                message: cut(err.get("message").and_then(|m| m.as_str()).unwrap_or("")),
            }),
        };
    }
    match v.result.map(|r| r.get()) {
        Some(card) if card.starts_with('{') => Ok(ExtendedOutcome::Card(Bytes::copy_from_slice(
            card.as_bytes(),
        ))),
        _ => Err(ExtendedError::Malformed(
            "neither a result object nor an error".into(),
        )),
    }
}

/// Parses an HTTP+JSON answer (pure): 200 is the card, an error body is matched by its reason.
fn parse_rest(status: u16, body: Bytes) -> Result<ExtendedOutcome, ExtendedError> {
    if status == 200 {
        return Ok(ExtendedOutcome::Card(body));
    }
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let err = v.get("error");
    let reasons = err
        .and_then(|e| e.get("details"))
        .and_then(|d| d.as_array())
        .into_iter()
        .flatten()
        .filter_map(|d| d.get("reason").and_then(|r| r.as_str()));
    for r in reasons {
        match r {
            "UNSUPPORTED_OPERATION" => {
                return Ok(ExtendedOutcome::Fallback(Fallback::UnsupportedOperation));
            }
            "EXTENDED_AGENT_CARD_NOT_CONFIGURED" => {
                return Ok(ExtendedOutcome::Fallback(Fallback::NotConfigured));
            }
            _ => {}
        }
    }
    Err(ExtendedError::Agent {
        code: i64::from(status),
        message: cut(err
            .and_then(|e| e.get("message"))
            .and_then(|m| m.as_str())
            .unwrap_or("")),
    })
}

/// Compiled extended profiles by (integration, credential identity). An entry is only ever returned
/// for the identity it was stored under.
#[derive(Debug, Default)]
pub struct ExtendedCache<T> {
    entries: Mutex<HashMap<(String, CredentialIdentity), T>>,
}

impl<T: Clone> ExtendedCache<T> {
    /// An empty cache.
    pub fn new() -> Self {
        ExtendedCache {
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// The entry for exactly this integration and identity.
    pub fn get(&self, integration: &str, id: &CredentialIdentity) -> Option<T> {
        self.lock()
            .get(&(integration.to_owned(), id.clone()))
            .cloned()
    }

    /// Stores an entry, replacing every other identity's entry for the integration (a credential
    /// that changed must not leave the old identity's view behind).
    pub fn put(&self, integration: &str, id: CredentialIdentity, value: T) {
        let mut m = self.lock();
        m.retain(|(i, _), _| i != integration);
        m.insert((integration.to_owned(), id), value);
    }

    /// Drops an integration's entries (fallback to the public card, or removed from the config).
    pub fn remove(&self, integration: &str) {
        self.lock().retain(|(i, _), _| i != integration);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(String, CredentialIdentity), T>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agent_error_message_is_sanitised_like_every_provider_string() {
        let body = serde_json::json!({"jsonrpc": "2.0", "id": RPC_ID, "error": {"code": -32603,
            "message": "pay\u{202E}lauf \u{200B}now\n\n  please"}})
        .to_string();
        let Err(ExtendedError::Agent { message, .. }) = parse_jsonrpc(200, body.as_bytes()) else {
            panic!("an agent error")
        };
        assert_eq!(message, "paylauf now please");
    }

    #[test]
    fn identity_is_a_digest_not_the_secret() {
        let a = CredentialIdentity::of(&HeaderValue::from_static("Bearer alpha-secret"));
        let b = CredentialIdentity::of(&HeaderValue::from_static("Bearer beta-secret"));
        assert_ne!(a, b);
        assert!(a.as_str().starts_with("sha256:"));
        assert!(!a.as_str().contains("alpha"));
        assert_eq!(
            a,
            CredentialIdentity::of(&HeaderValue::from_static("Bearer alpha-secret"))
        );
    }

    #[test]
    fn cache_never_crosses_identities() {
        let c = ExtendedCache::new();
        let a = CredentialIdentity::of(&HeaderValue::from_static("Bearer a"));
        let b = CredentialIdentity::of(&HeaderValue::from_static("Bearer b"));
        c.put("x", a.clone(), 1);
        assert_eq!(c.get("x", &a), Some(1));
        assert_eq!(c.get("x", &b), None);
        assert_eq!(c.get("y", &a), None);
        c.put("x", b.clone(), 2);
        assert_eq!(c.get("x", &a), None, "the old identity's view is gone");
        assert_eq!(c.get("x", &b), Some(2));
        c.remove("x");
        assert_eq!(c.get("x", &b), None);
    }

    #[test]
    fn jsonrpc_answers() {
        let ok = parse_jsonrpc(
            200,
            br#"{"jsonrpc":"2.0","id":"a2a-egress-extended-card","result":{"name":"x"}}"#,
        )
        .unwrap();
        assert_eq!(
            ok,
            ExtendedOutcome::Card(Bytes::from_static(br#"{"name":"x"}"#))
        );
        let un = parse_jsonrpc(
            200,
            br#"{"jsonrpc":"2.0","id":"a2a-egress-extended-card","error":{"code":-32004,"message":"no"}}"#,
        );
        assert_eq!(
            un,
            Ok(ExtendedOutcome::Fallback(Fallback::UnsupportedOperation))
        );
        let nc = parse_jsonrpc(
            200,
            br#"{"jsonrpc":"2.0","id":"a2a-egress-extended-card","error":{"code":-32007,"message":"no"}}"#,
        );
        assert_eq!(nc, Ok(ExtendedOutcome::Fallback(Fallback::NotConfigured)));
        let other = parse_jsonrpc(
            200,
            br#"{"jsonrpc":"2.0","id":"a2a-egress-extended-card","error":{"code":-32603,"message":"boom\u0007"}}"#,
        );
        assert_eq!(
            other,
            Err(ExtendedError::Agent {
                code: -32603,
                message: "boom".into()
            })
        );
        assert!(matches!(
            parse_jsonrpc(200, b"<html>"),
            Err(ExtendedError::Malformed(_))
        ));
        assert!(matches!(
            parse_jsonrpc(200, br#"{"result":[1]}"#),
            Err(ExtendedError::Malformed(_))
        ));
        // No such method is an agent error (a cached card survives it), not a fallback.
        let nm = parse_jsonrpc(
            200,
            br#"{"jsonrpc":"2.0","id":"a2a-egress-extended-card","error":{"code":-32601,"message":"Method not found"}}"#,
        );
        assert!(
            matches!(nm, Err(ExtendedError::Agent { code: -32601, .. })),
            "{nm:?}"
        );
        // An answer to another request (or to none) is not this one's.
        for body in [
            &br#"{"jsonrpc":"2.0","id":"1","result":{"name":"x"}}"#[..],
            br#"{"jsonrpc":"2.0","id":null,"result":{"name":"x"}}"#,
            br#"{"jsonrpc":"2.0","result":{"name":"x"}}"#,
            br#"{"jsonrpc":"2.0","id":7,"error":{"code":-32004,"message":"no"}}"#,
        ] {
            let got = parse_jsonrpc(200, body);
            assert!(
                matches!(&got, Err(ExtendedError::Malformed(m)) if m.contains("id")),
                "{}: {got:?}",
                String::from_utf8_lossy(body)
            );
        }
        // An error for a request the server could not read carries a null id.
        let null = parse_jsonrpc(
            200,
            br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse"}}"#,
        );
        assert!(
            matches!(null, Err(ExtendedError::Agent { code: -32700, .. })),
            "{null:?}"
        );
    }

    #[test]
    fn a_jsonrpc_result_is_the_agents_bytes_so_validation_sees_duplicate_keys() {
        let body = br#"{"jsonrpc":"2.0","id":"a2a-egress-extended-card","result":{"name":"x", "name":"evil"}}"#;
        let Ok(ExtendedOutcome::Card(card)) = parse_jsonrpc(200, body) else {
            panic!("a card")
        };
        assert_eq!(&card[..], br#"{"name":"x", "name":"evil"}"#);
        let text = std::str::from_utf8(&card).unwrap();
        assert_eq!(
            crate::json::duplicate_keys(text, 8).unwrap().len(),
            1,
            "{text}"
        );
    }

    #[test]
    fn rest_answers() {
        assert!(matches!(
            parse_rest(200, Bytes::from_static(b"{}")),
            Ok(ExtendedOutcome::Card(_))
        ));
        let body = br#"{"error":{"code":400,"status":"FAILED_PRECONDITION","message":"m","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"EXTENDED_AGENT_CARD_NOT_CONFIGURED","domain":"a2a-protocol.org"}]}}"#;
        assert_eq!(
            parse_rest(400, Bytes::from_static(body)),
            Ok(ExtendedOutcome::Fallback(Fallback::NotConfigured))
        );
        assert!(matches!(
            parse_rest(500, Bytes::from_static(b"x")),
            Err(ExtendedError::Agent { code: 500, .. })
        ));
    }
}
