//! The gateway's own refusals and failures, and the one exhaustive mapping from each to an HTTP
//! status, a protocol-shaped body and a bounded `reason` (pure, no I/O).
//!
//! The same `reason` string is used in the response's `google.rpc.ErrorInfo`, in the log line and
//! as the metric label, so the three can never disagree. Where A2A has its own error
//! (ContentTypeNotSupported, VersionNotSupported, UnsupportedOperation) its code is used; the
//! ErrorInfo's domain is always `a2a-egress` so a caller can tell the gateway answered.

use bytes::Bytes;
use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::answer::Invalid;
use super::body::{BodyError, RpcId};
use super::route::{Method, PathError};
use super::upstream::TlsFault;
use crate::types::status;

pub use crate::types::status::DOMAIN;

/// JSON-RPC code for gateway policy refusals that have no A2A equivalent: -32000 is the one
/// implementation-defined server-error code A2A (-32001..-32009) leaves free.
const GATEWAY_REFUSAL: i64 = -32000;

/// Everything the gateway refuses or fails on by itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Deny {
    /// A path outside `/agents/{name}/…`.
    RouteNotFound,
    /// `/agents/{name}` with no such integration.
    UnknownIntegration,
    /// The integration has no usable profile (pending, fetch/validation/compile failure, contract).
    NoUsableProfile,
    /// The integration is blocked.
    IntegrationBlocked,
    /// The request uses the binding the effective card does not offer (JSON-RPC vs HTTP+JSON).
    BindingNotOffered,
    /// Unknown JSON-RPC method or HTTP+JSON route.
    MethodNotFound,
    /// An A2A operation the profile does not allow (push configs without push, subscribe without
    /// streaming, the extended card).
    MethodNotAllowed(Method),
    /// `streaming = "required"` and streaming is not available: never downgraded.
    StreamingRequired,
    /// The request body exceeds `max_body_bytes`.
    BodyTooLarge {
        /// The limit, bytes.
        limit: usize,
    },
    /// The path carries a trick (dot segments, encoded separators, …), refused before routing.
    InvalidPath(PathError),
    /// A JSON-RPC POST or an HTTP+JSON body whose `Content-Type` is not JSON.
    UnsupportedContentType,
    /// The body is not JSON (-32700).
    ParseError,
    /// An object key appears twice in one object somewhere in the body (-32600).
    DuplicateKey {
        /// The key's JSON path (escaped, from [`crate::json::duplicate_keys`]).
        path: String,
    },
    /// The body is JSON but not a valid request (-32600).
    InvalidRequest(&'static str),
    /// A valid request whose params lack what the method needs (-32602).
    InvalidParams(&'static str),
    /// A part's media type is accepted by none of the integration's accepted skills (-32005).
    ContentTypeNotSupported {
        /// The first refused media type (sanitised: it came from the caller).
        media_type: String,
    },
    /// An `A2A-Egress-Data-Class` line is not readable text (not visible ASCII).
    InvalidDataClass,
    /// A data class of the request is not allowed for this integration.
    PolicyDenied {
        /// The first refused class (lowercased token, or `invalid`).
        class: String,
    },
    /// The integration's guard found content that may not leave (a detector whose action is
    /// refuse, a URL part outside the allowed origins, a request longer than the scan budget
    /// under `on_unscanned = "refuse"`, or a redaction that could not be made safely).
    DataDetected {
        /// The detector (`url_origin`, `unscanned` for those two cases).
        detector: String,
        /// JSON path of the part it was found in (gateway-written; never the matched text).
        path: String,
    },
    /// The caller's tenant differs from the integration's.
    TenantMismatch,
    /// The caller asked for an A2A version the effective card does not offer (-32009).
    VersionNotSupported {
        /// The version the card offers.
        offered: String,
    },
    /// The upstream could not be reached or failed before answering.
    UpstreamUnavailable,
    /// The TLS handshake with the upstream failed; the fault says which check refused it.
    UpstreamTls(TlsFault),
    /// The agent's answer head (or a unary answer's body) did not arrive within
    /// `[limits] upstream_header_timeout` (`upstream_body_timeout`, `upstream_idle_timeout`).
    UpstreamTimeout,
    /// The gateway is shutting down and takes no new calls.
    Draining,
    /// A data-plane cap (`[limits] max_connections` or `max_inflight`) is reached: retry later.
    Overloaded,
    /// The request body did not arrive within `[limits] body_timeout`.
    RequestTimeout,
    /// The request body's HTTP/1.1 framing is invalid (a malformed chunk): nothing of it is
    /// read, and the connection closes.
    InvalidBodyFraming,
    /// The agent's answer holds an artifact data part that does not match the integration's
    /// `artifact_schema` (`artifact_policy = "enforce"`); the answer is not passed on.
    ArtifactSchemaMismatch {
        /// Where the part is in the answer (gateway-written: `task.artifacts[0].parts[1]`), or
        /// why the answer could not be checked.
        part: String,
        /// The schema keyword that failed (from the operator's schema), or `unreadable`.
        keyword: String,
    },
    /// A 1.0 operation that A2A 0.3, which the agent speaks, does not have (ListTasks over
    /// JSON-RPC): refused before anything leaves, as UnsupportedOperationError.
    NotInAgentVersion(Method),
    /// A request that cannot be said in A2A 0.3, which the agent speaks (a data part that is not
    /// an object, a role that is neither user nor agent): refused before anything leaves.
    Untranslatable {
        /// The field's path (gateway-written from the protocol's member names and indices).
        field: String,
        /// What is wrong with it (gateway-written).
        why: &'static str,
    },
    /// The agent's answer is not an A2A answer (HTML, truncated JSON, another request's id, an
    /// encoding the gateway does not read): A2A's InvalidAgentResponseError, not passed on.
    InvalidAgentResponse {
        /// What is wrong with it.
        why: Invalid,
        /// The agent's HTTP status.
        status: u16,
    },
}

/// `Retry-After` of an overload refusal, seconds: caps free up as soon as one call ends, so the
/// shortest value HTTP can express.
pub const OVERLOAD_RETRY_AFTER_SECS: u64 = 1;

/// How a refusal is rendered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// HTTP status.
    pub status: u16,
    /// Body bytes (JSON).
    pub body: Bytes,
    /// `Content-Type`.
    pub content_type: &'static str,
}

/// Which binding's error shape to use.
#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    /// JSON-RPC envelope with this `id`.
    JsonRpc(RpcId),
    /// HTTP+JSON `google.rpc.Status`.
    Rest,
}

struct Spec {
    /// HTTP status for HTTP+JSON (and for JSON-RPC when `rpc_http` is None).
    http: u16,
    /// gRPC status name for the HTTP+JSON body.
    grpc: &'static str,
    /// JSON-RPC code.
    code: i64,
    /// HTTP status for the JSON-RPC shape (agents answer JSON-RPC errors with 200).
    rpc_http: u16,
}

impl Deny {
    /// The bounded reason: ErrorInfo.reason, log field and metric label.
    pub fn reason(&self) -> &'static str {
        match self {
            Deny::RouteNotFound => "ROUTE_NOT_FOUND",
            Deny::UnknownIntegration => "UNKNOWN_INTEGRATION",
            Deny::NoUsableProfile => "NO_USABLE_PROFILE",
            Deny::IntegrationBlocked => "INTEGRATION_BLOCKED",
            Deny::BindingNotOffered => "BINDING_NOT_OFFERED",
            Deny::MethodNotFound => "METHOD_NOT_FOUND",
            Deny::MethodNotAllowed(_) => "METHOD_NOT_ALLOWED",
            Deny::StreamingRequired => "STREAMING_REQUIRED",
            Deny::BodyTooLarge { .. } => "BODY_TOO_LARGE",
            Deny::InvalidPath(_) => "INVALID_PATH",
            Deny::UnsupportedContentType => "UNSUPPORTED_REQUEST_CONTENT_TYPE",
            Deny::ParseError => "PARSE_ERROR",
            Deny::DuplicateKey { .. } => "DUPLICATE_JSON_KEY",
            Deny::InvalidRequest(_) => "INVALID_REQUEST",
            Deny::InvalidParams(_) => "INVALID_PARAMS",
            Deny::ContentTypeNotSupported { .. } => "CONTENT_TYPE_NOT_SUPPORTED",
            Deny::InvalidDataClass => "INVALID_DATA_CLASS",
            Deny::PolicyDenied { .. } => "POLICY_DENIED",
            Deny::DataDetected { .. } => "DATA_DETECTED",
            Deny::TenantMismatch => "TENANT_MISMATCH",
            Deny::VersionNotSupported { .. } => "VERSION_NOT_SUPPORTED",
            Deny::UpstreamUnavailable => "UPSTREAM_UNAVAILABLE",
            Deny::UpstreamTls(TlsFault::UnknownIssuer) => "UPSTREAM_CERTIFICATE_UNKNOWN",
            Deny::UpstreamTls(TlsFault::NameMismatch) => "UPSTREAM_CERTIFICATE_NAME_MISMATCH",
            Deny::UpstreamTls(TlsFault::Expired) => "UPSTREAM_CERTIFICATE_EXPIRED",
            Deny::UpstreamTls(TlsFault::Handshake) => "UPSTREAM_TLS_FAILED",
            Deny::UpstreamTimeout => "UPSTREAM_TIMEOUT",
            Deny::Draining => "GATEWAY_DRAINING",
            Deny::Overloaded => "GATEWAY_BUSY",
            Deny::RequestTimeout => "REQUEST_TIMEOUT",
            Deny::InvalidBodyFraming => "INVALID_BODY_FRAMING",
            Deny::ArtifactSchemaMismatch { .. } => "ARTIFACT_SCHEMA_MISMATCH",
            Deny::InvalidAgentResponse { .. } => "INVALID_AGENT_RESPONSE",
            Deny::NotInAgentVersion(_) => "NOT_IN_AGENT_VERSION",
            Deny::Untranslatable { .. } => "UNTRANSLATABLE",
        }
    }

    fn spec(&self) -> Spec {
        let s = |http, grpc, code, rpc_http| Spec {
            http,
            grpc,
            code,
            rpc_http,
        };
        match self {
            Deny::RouteNotFound => s(404, "NOT_FOUND", -32601, 404),
            Deny::UnknownIntegration => s(404, "NOT_FOUND", GATEWAY_REFUSAL, 200),
            Deny::NoUsableProfile => s(503, "UNAVAILABLE", GATEWAY_REFUSAL, 200),
            Deny::IntegrationBlocked => s(403, "PERMISSION_DENIED", GATEWAY_REFUSAL, 200),
            Deny::BindingNotOffered => s(404, "NOT_FOUND", GATEWAY_REFUSAL, 200),
            Deny::MethodNotFound => s(404, "NOT_FOUND", -32601, 200),
            // A2A has its own error for push configs on an agent without push (-32003); other
            // operations the profile does not allow are UnsupportedOperationError (-32004).
            Deny::MethodNotAllowed(m) if m.is_push() => s(400, "FAILED_PRECONDITION", -32003, 200),
            Deny::MethodNotAllowed(_) => s(400, "FAILED_PRECONDITION", -32004, 200),
            Deny::StreamingRequired => s(400, "FAILED_PRECONDITION", -32004, 200),
            // The unread body makes the connection unusable: a real 413 in both shapes.
            Deny::BodyTooLarge { .. } => s(413, "RESOURCE_EXHAUSTED", -32600, 413),
            // Answered before routing, always as google.rpc.Status.
            Deny::InvalidPath(_) => s(400, "INVALID_ARGUMENT", -32600, 400),
            // A2A's ContentTypeNotSupportedError (-32005), as SDK servers that check the
            // Content-Type answer it (JSON-RPC errors travel as HTTP 200).
            Deny::UnsupportedContentType => s(400, "INVALID_ARGUMENT", -32005, 200),
            Deny::ParseError => s(400, "INVALID_ARGUMENT", -32700, 200),
            Deny::DuplicateKey { .. } => s(400, "INVALID_ARGUMENT", -32600, 200),
            Deny::InvalidRequest(_) => s(400, "INVALID_ARGUMENT", -32600, 200),
            Deny::InvalidParams(_) => s(400, "INVALID_ARGUMENT", -32602, 200),
            Deny::ContentTypeNotSupported { .. } => s(400, "INVALID_ARGUMENT", -32005, 200),
            Deny::InvalidDataClass => s(400, "INVALID_ARGUMENT", -32600, 200),
            Deny::PolicyDenied { .. } => s(403, "PERMISSION_DENIED", GATEWAY_REFUSAL, 200),
            Deny::DataDetected { .. } => s(403, "PERMISSION_DENIED", GATEWAY_REFUSAL, 200),
            Deny::TenantMismatch => s(403, "PERMISSION_DENIED", GATEWAY_REFUSAL, 200),
            Deny::VersionNotSupported { .. } => s(400, "FAILED_PRECONDITION", -32009, 200),
            // An unreachable agent is a 502 in both shapes, so HTTP-level tooling sees it too.
            Deny::UpstreamUnavailable | Deny::UpstreamTls(_) => s(502, "UNAVAILABLE", -32603, 502),
            // The same failure of the agent, found by a deadline: a 504 in both shapes, with
            // the InternalError code of the 502 (A2A has no error for it, and -32000 is the
            // gateway's policy refusals), DEADLINE_EXCEEDED as HTTP+JSON's status.
            Deny::UpstreamTimeout => s(504, "DEADLINE_EXCEEDED", -32603, 504),
            Deny::Draining => s(503, "UNAVAILABLE", GATEWAY_REFUSAL, 503),
            // Load shedding and deadlines are HTTP-level facts (retried by HTTP tooling), and the
            // unread body closes the connection: real 503/408 in both shapes.
            Deny::Overloaded => s(503, "UNAVAILABLE", GATEWAY_REFUSAL, 503),
            Deny::RequestTimeout => s(408, "DEADLINE_EXCEEDED", GATEWAY_REFUSAL, 408),
            // The caller's bytes are not HTTP: a real 400 in both shapes, and the connection
            // closes (what follows the bad chunk is not a request).
            Deny::InvalidBodyFraming => s(400, "INVALID_ARGUMENT", -32600, 400),
            // The agent answered, but not what the integration expects: a bad gateway answer in
            // the HTTP+JSON shape, a JSON-RPC error (HTTP 200) in the other.
            Deny::ArtifactSchemaMismatch { .. } => s(502, "INTERNAL", GATEWAY_REFUSAL, 200),
            // A2A's InvalidAgentResponseError (-32006, INTERNAL, HTTP 500): the protocol's own
            // mapping (FACTS.md §errors), although RFC 9110 would call a bad answer from an
            // inbound server a 502; where the two disagree the protocol wins, so an A2A client
            // maps it to the error it knows.
            Deny::InvalidAgentResponse { .. } => s(500, "INTERNAL", -32006, 200),
            // The operation exists in 1.0 but not in the agent's 0.3: UnsupportedOperationError,
            // what a 1.0 agent without it would answer.
            Deny::NotInAgentVersion(_) => s(400, "FAILED_PRECONDITION", -32004, 200),
            Deny::Untranslatable { .. } => s(400, "INVALID_ARGUMENT", -32602, 200),
        }
    }

    /// Human-readable message (gateway-written; caller-supplied values are sanitised and short).
    pub fn message(&self) -> String {
        match self {
            Deny::RouteNotFound => "no such route; integrations live under /agents/{name}/".into(),
            Deny::UnknownIntegration => "no integration with this name is configured".into(),
            Deny::NoUsableProfile => "the integration has no usable profile".into(),
            Deny::IntegrationBlocked => "the integration is blocked".into(),
            Deny::BindingNotOffered => {
                "this binding is not offered; use the interface in the effective agent card".into()
            }
            Deny::MethodNotFound => "method not found".into(),
            Deny::MethodNotAllowed(m) => {
                format!(
                    "{} is not allowed by this integration's profile",
                    m.as_str()
                )
            }
            Deny::StreamingRequired => {
                "streaming is required for this integration and the agent does not offer it; \
                 the call is not downgraded"
                    .into()
            }
            Deny::BodyTooLarge { limit } => {
                format!("request body exceeds this integration's limit of {limit} bytes")
            }
            Deny::InvalidPath(e) => format!("invalid path: {e}"),
            Deny::UnsupportedContentType => {
                "Content-Type must be application/json (HTTP+JSON also takes application/a2a+json)"
                    .into()
            }
            Deny::ParseError => "request body is not valid JSON".into(),
            Deny::DuplicateKey { path } => format!(
                "duplicate JSON object key at {}; every key may appear once per object",
                short(path)
            ),
            Deny::InvalidRequest(d) => format!("invalid request: {d}"),
            Deny::InvalidParams(d) => format!("invalid params: {d}"),
            Deny::ContentTypeNotSupported { media_type } => {
                format!("media type {media_type} is not accepted by any skill of this integration")
            }
            Deny::InvalidDataClass => {
                "A2A-Egress-Data-Class must be visible ASCII (comma-separated class names)".into()
            }
            Deny::PolicyDenied { .. } | Deny::DataDetected { .. } => self.boundary_message(),
            Deny::TenantMismatch => "the request's tenant differs from the integration's".into(),
            Deny::VersionNotSupported { offered } => {
                format!("A2A-Version not supported; this agent is offered at {offered}")
            }
            Deny::UpstreamUnavailable => "the agent could not be reached".into(),
            Deny::UpstreamTls(fault) => format!("the agent could not be reached: {fault}"),
            Deny::UpstreamTimeout => {
                "the agent did not answer within the gateway's deadline; the call was cancelled"
                    .into()
            }
            Deny::Draining => "the gateway is shutting down".into(),
            Deny::Overloaded => {
                "the gateway is at its limit of connections or requests in progress; retry later"
                    .into()
            }
            Deny::RequestTimeout => "the request body did not arrive in time".into(),
            Deny::InvalidBodyFraming => {
                "the request body's chunked encoding is invalid; the connection is closed".into()
            }
            Deny::ArtifactSchemaMismatch { part, keyword } => format!(
                "the agent's answer does not match this integration's artifact schema \
                 ({}: `{}`); it was not passed on",
                short(part),
                sanitize_echo(keyword)
            ),
            Deny::InvalidAgentResponse { why, status } => invalid_answer(*why, *status),
            Deny::NotInAgentVersion(_) | Deny::Untranslatable { .. } => self.translation_message(),
        }
    }

    /// The message of a request refused for the data it holds: a data class (declared or
    /// detected) the integration does not allow, or content its guard refuses.
    fn boundary_message(&self) -> String {
        match self {
            Deny::PolicyDenied { class } => {
                format!("data class {class} may not be sent to this integration")
            }
            Deny::DataDetected { detector, path } => format!(
                "content found by detector {detector} at {} may not be sent to this \
                 integration; the call was not sent",
                short(path)
            ),
            other => other.reason().to_owned(),
        }
    }

    /// The message of a request refused because the agent speaks A2A 0.3.
    fn translation_message(&self) -> String {
        match self {
            Deny::NotInAgentVersion(m) => format!(
                "{} does not exist in A2A 0.3, which this agent speaks; the call was not sent",
                m.as_str()
            ),
            Deny::Untranslatable { field, why } => format!(
                "{} {why}: the request cannot be said in A2A 0.3, which this agent speaks; \
                 the call was not sent",
                short(field)
            ),
            other => other.reason().to_owned(),
        }
    }

    /// `Retry-After` seconds to send with this refusal, if any.
    pub fn retry_after(&self) -> Option<u64> {
        matches!(self, Deny::Overloaded).then_some(OVERLOAD_RETRY_AFTER_SECS)
    }

    /// Whether the connection must close after this refusal: the request body was not (fully)
    /// read, so the next bytes on the connection are not a request.
    pub fn closes_connection(&self) -> bool {
        matches!(
            self,
            Deny::BodyTooLarge { .. }
                | Deny::Overloaded
                | Deny::RequestTimeout
                | Deny::InvalidBodyFraming
        )
    }

    fn error_info(&self, integration: Option<&str>) -> Value {
        let mut meta = serde_json::Map::new();
        if let Some(i) = integration {
            meta.insert("integration".into(), Value::String(i.to_owned()));
        }
        if let Deny::DuplicateKey { path } = self {
            meta.insert("path".into(), Value::String(short(path)));
        }
        if let Deny::DataDetected { detector, path } = self {
            meta.insert("detector".into(), Value::String(detector.clone()));
            meta.insert("path".into(), Value::String(short(path)));
        }
        if let Deny::ArtifactSchemaMismatch { part, keyword } = self {
            meta.insert("part".into(), Value::String(short(part)));
            meta.insert("keyword".into(), Value::String(sanitize_echo(keyword)));
        }
        if let Deny::InvalidAgentResponse { why, status } = self {
            meta.insert("answer".into(), Value::String(why.as_str().into()));
            meta.insert("agentStatus".into(), Value::String(status.to_string()));
        }
        status::error_info(self.reason(), meta)
    }

    /// Renders the refusal in the caller's binding.
    pub fn render(&self, shape: &Shape, integration: Option<&str>) -> Rendered {
        let spec = self.spec();
        match shape {
            Shape::JsonRpc(id) => {
                let envelope = Envelope {
                    jsonrpc: "2.0",
                    id: id.raw(),
                    error: status::jsonrpc_error(
                        spec.code,
                        &self.message(),
                        self.error_info(integration),
                    ),
                };
                // Serialising a struct of plain strings, a raw id and a Value cannot fail; the
                // fallback keeps this total anyway.
                let body = serde_json::to_vec(&envelope).unwrap_or_else(|_| {
                    br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"internal error"}}"#
                        .to_vec()
                });
                Rendered {
                    status: spec.rpc_http,
                    body: Bytes::from(body),
                    content_type: "application/json",
                }
            }
            Shape::Rest => {
                let body = status::google_rpc_status(
                    spec.http,
                    spec.grpc,
                    &self.message(),
                    self.error_info(integration),
                );
                Rendered {
                    status: spec.http,
                    body: Bytes::from(body.to_string()),
                    content_type: "application/json",
                }
            }
        }
    }
}

/// A JSON-RPC error envelope whose `id` is written exactly as the caller sent it.
#[derive(Serialize)]
struct Envelope<'a> {
    jsonrpc: &'static str,
    id: &'a RawValue,
    error: Value,
}

impl From<BodyError> for Deny {
    fn from(e: BodyError) -> Deny {
        match e {
            BodyError::Parse => Deny::ParseError,
            BodyError::DuplicateKey { path } => Deny::DuplicateKey { path },
            BodyError::Invalid(d) => Deny::InvalidRequest(d),
            BodyError::InvalidParams(d) => Deny::InvalidParams(d),
        }
    }
}

/// At most 200 chars of a gateway-rendered path (already printable: see [`crate::json::quote`]).
/// The message of an agent's answer that was not passed on for being no A2A answer, or for
/// being too large to read.
fn invalid_answer(why: Invalid, status: u16) -> String {
    if let Invalid::TooLarge { mib } = why {
        return format!(
            "the agent's answer (HTTP {status}) would take {mib} MiB to read, over the {} MiB the \
             gateway holds per answer; it was not passed on",
            crate::json::TREE_BUDGET >> 20
        );
    }
    format!("the agent's answer (HTTP {status}) is not an A2A answer: {why}; it was not passed on")
}

fn short(path: &str) -> String {
    let mut s: String = path.chars().take(200).collect();
    if s.len() < path.len() {
        s.push('…');
    }
    s
}

/// Longest caller- or agent-supplied string echoed in a message, in characters.
const ECHO_CHARS: usize = 100;

/// Makes a caller- or agent-supplied string safe to echo in a message, by the one sanitiser of
/// foreign text ([`crate::card::sanitize`]), short.
pub fn sanitize_echo(s: &str) -> String {
    crate::card::sanitize::sanitize(s, ECHO_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all() -> Vec<Deny> {
        vec![
            Deny::RouteNotFound,
            Deny::UnknownIntegration,
            Deny::NoUsableProfile,
            Deny::IntegrationBlocked,
            Deny::BindingNotOffered,
            Deny::MethodNotFound,
            Deny::MethodNotAllowed(Method::CreatePushConfig),
            Deny::StreamingRequired,
            Deny::BodyTooLarge { limit: 10 },
            Deny::InvalidPath(PathError::DotSegment),
            Deny::UnsupportedContentType,
            Deny::ParseError,
            Deny::DuplicateKey {
                path: "params.tenant".into(),
            },
            Deny::InvalidRequest("x"),
            Deny::InvalidParams("x"),
            Deny::ContentTypeNotSupported {
                media_type: "a/b".into(),
            },
            Deny::InvalidDataClass,
            Deny::PolicyDenied {
                class: "secret".into(),
            },
            Deny::DataDetected {
                detector: "pci".into(),
                path: "params.message.parts[0].text".into(),
            },
            Deny::TenantMismatch,
            Deny::VersionNotSupported {
                offered: "1.0".into(),
            },
            Deny::UpstreamUnavailable,
            Deny::UpstreamTls(TlsFault::UnknownIssuer),
            Deny::UpstreamTls(TlsFault::NameMismatch),
            Deny::UpstreamTls(TlsFault::Expired),
            Deny::UpstreamTls(TlsFault::Handshake),
            Deny::UpstreamTimeout,
            Deny::Draining,
            Deny::Overloaded,
            Deny::RequestTimeout,
            Deny::InvalidBodyFraming,
            Deny::ArtifactSchemaMismatch {
                part: "task.artifacts[0].parts[1]".into(),
                keyword: "required".into(),
            },
            Deny::InvalidAgentResponse {
                why: Invalid::IdMismatch,
                status: 200,
            },
        ]
    }

    #[test]
    fn jsonrpc_shape_keeps_the_id_and_carries_error_info() {
        for d in all() {
            let r = d.render(&Shape::JsonRpc(id("\"req-1\"")), Some("echo"));
            let v: Value = serde_json::from_slice(&r.body).unwrap();
            assert_eq!(v["id"], "req-1");
            assert_eq!(v["jsonrpc"], "2.0");
            assert!(v["error"]["code"].as_i64().unwrap() < 0);
            assert_eq!(v["error"]["data"][0]["domain"], DOMAIN);
            assert_eq!(v["error"]["data"][0]["reason"], d.reason());
            assert_eq!(v["error"]["data"][0]["metadata"]["integration"], "echo");
        }
    }

    #[test]
    fn rest_shape_is_google_rpc_status() {
        for d in all() {
            let r = d.render(&Shape::Rest, None);
            let v: Value = serde_json::from_slice(&r.body).unwrap();
            assert_eq!(v["error"]["code"], r.status);
            assert!(r.status >= 400);
            assert!(v["error"]["status"].is_string());
            assert_eq!(v["error"]["details"][0]["reason"], d.reason());
        }
    }

    #[test]
    fn a2a_errors_use_a2a_codes() {
        let code = |d: Deny| {
            let v: Value =
                serde_json::from_slice(&d.render(&Shape::JsonRpc(id("1")), None).body).unwrap();
            v["error"]["code"].as_i64().unwrap()
        };
        assert_eq!(
            code(Deny::ContentTypeNotSupported {
                media_type: "x/y".into()
            }),
            -32005
        );
        assert_eq!(
            code(Deny::VersionNotSupported {
                offered: "1.0".into()
            }),
            -32009
        );
        assert_eq!(code(Deny::ParseError), -32700);
        assert_eq!(code(Deny::InvalidRequest("x")), -32600);
        assert_eq!(code(Deny::InvalidParams("x")), -32602);
        assert_eq!(
            code(Deny::MethodNotAllowed(Method::CreatePushConfig)),
            -32003
        );
        assert_eq!(
            code(Deny::MethodNotAllowed(Method::SubscribeToTask)),
            -32004
        );
        let invalid = Deny::InvalidAgentResponse {
            why: Invalid::NotJson,
            status: 200,
        };
        assert_eq!(code(invalid.clone()), -32006);
        let rest = invalid.render(&Shape::Rest, Some("x"));
        let v: Value = serde_json::from_slice(&rest.body).unwrap();
        assert_eq!(
            (rest.status, &v["error"]["status"]),
            (500, &Value::from("INTERNAL"))
        );
        assert_eq!(v["error"]["details"][0]["reason"], "INVALID_AGENT_RESPONSE");
        assert_eq!(v["error"]["details"][0]["metadata"]["answer"], "not_json");
        assert_eq!(
            Deny::UpstreamUnavailable
                .render(&Shape::JsonRpc(id("1")), None)
                .status,
            502
        );
    }

    fn id(text: &str) -> RpcId {
        let body = format!(r#"{{"jsonrpc":"2.0","id":{text},"method":"GetTask"}}"#);
        crate::proxy::body::parse_jsonrpc(&Bytes::from(body))
            .unwrap()
            .id
    }

    #[test]
    fn ids_and_paths_are_echoed_as_sent() {
        let big = "123456789012345678901234567890";
        let r = Deny::ParseError.render(&Shape::JsonRpc(id(big)), None);
        let text = std::str::from_utf8(&r.body).unwrap();
        assert!(text.contains(&format!("\"id\":{big},")), "{text}");
        let v: Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(v["error"]["code"], -32700);
        let d = Deny::DuplicateKey {
            path: "params.message.parts[0].mediaType".into(),
        };
        let v: Value =
            serde_json::from_slice(&d.render(&Shape::JsonRpc(RpcId::null()), None).body).unwrap();
        assert!(v["id"].is_null());
        assert_eq!(v["error"]["code"], -32600);
        assert_eq!(
            v["error"]["data"][0]["metadata"]["path"],
            "params.message.parts[0].mediaType"
        );
        assert!(v["error"]["message"].as_str().unwrap().contains("parts[0]"));
        let code = |d: Deny| {
            let v: Value =
                serde_json::from_slice(&d.render(&Shape::JsonRpc(id("1")), None).body).unwrap();
            v["error"]["code"].as_i64().unwrap()
        };
        assert_eq!(code(Deny::UnsupportedContentType), -32005);
        assert_eq!(code(Deny::InvalidDataClass), -32600);
        assert_eq!(
            Deny::InvalidPath(PathError::EmptySegment)
                .render(&Shape::Rest, None)
                .status,
            400
        );
    }

    #[test]
    fn an_upstream_timeout_is_a_504_in_both_shapes() {
        let rpc = Deny::UpstreamTimeout.render(&Shape::JsonRpc(id("\"t-1\"")), Some("echo"));
        assert_eq!(rpc.status, 504);
        let v: Value = serde_json::from_slice(&rpc.body).unwrap();
        assert_eq!(v["id"], "t-1");
        assert_eq!(v["error"]["code"], -32603);
        assert_eq!(v["error"]["data"][0]["reason"], "UPSTREAM_TIMEOUT");
        let rest = Deny::UpstreamTimeout.render(&Shape::Rest, Some("echo"));
        assert_eq!(rest.status, 504);
        let v: Value = serde_json::from_slice(&rest.body).unwrap();
        assert_eq!(v["error"]["code"], 504);
        assert_eq!(v["error"]["status"], "DEADLINE_EXCEEDED");
        assert_eq!(v["error"]["details"][0]["reason"], "UPSTREAM_TIMEOUT");
        assert!(!Deny::UpstreamTimeout.closes_connection());
    }

    #[test]
    fn echo_is_sanitised() {
        assert_eq!(sanitize_echo("a\u{1b}[31mb\u{202e}\nc"), "a[31mb c");
        assert_eq!(sanitize_echo(&"x".repeat(500)).chars().count(), 100);
    }
}
