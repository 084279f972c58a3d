//! One probe's request and the judgement of its answer, for either binding and either protocol
//! version the gateway calls (pure). A probe is built as the 1.0 request, then, toward a 0.3
//! agent, translated by [`crate::translate`] like any data-plane call ([`super::dialect`]).

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method};
use serde_json::{Value, json};

use super::{
    Check, Outcome, Request, Response, Target, dialect, is_event_stream, is_jsonrpc, sse_data,
};
use crate::translate::{Dialect, Op, TranslateError};

/// An id no task has: `GetTask` of it is the side-effect-free call every agent must answer.
const NO_TASK: &str = "a2a-egress-probe-no-such-task";

/// Why a check was not probed: reported as the check's inconclusive result, never a failure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotProbed {
    /// A message probe, and the integration names no probe skill.
    #[error("no probe skill")]
    NoProbeSkill,
    /// The claim's question has no meaning in the agent's protocol version.
    #[error("{claim} has no meaning in A2A {version}: {why}")]
    NoMeaning {
        /// The claim ([`Check::claim`]).
        claim: String,
        /// The agent's protocol version.
        version: &'static str,
        /// Why.
        why: &'static str,
    },
    /// The probe's 1.0 request has no 0.3 form (an operation 0.3 lacks, a field it cannot say).
    #[error("the probe does not translate to A2A 0.3: {0}")]
    Untranslatable(#[from] TranslateError),
    /// The request cannot be written (a version or extension list that is no header value, an
    /// interface URL that cannot take a path): what is wrong.
    #[error("{0}")]
    Unsendable(&'static str),
}

/// The 1.0 operation `check` calls.
pub(super) fn op(check: &Check) -> Op {
    match check {
        Check::Interface | Check::RefusesOtherVersion(_) | Check::ExtensionEnforced(_) => {
            Op::GetTask
        }
        Check::Streaming => Op::SendStreamingMessage,
        Check::MediaType(_) => Op::SendMessage,
    }
}

/// The request for `check` against `target` (`n` numbers the probe within a run), in the
/// target's dialect; why not, for a message probe without a probe skill or a check the agent's
/// protocol version gives no meaning.
pub fn request(check: &Check, target: &Target, n: usize) -> Result<Request, NotProbed> {
    if let Some(why) = dialect::no_meaning(check, target.dialect) {
        return Err(NotProbed::NoMeaning {
            claim: check.claim(),
            version: target.dialect.protocol.as_str(),
            why,
        });
    }
    let iface = &target.interface;
    let version = match check {
        Check::RefusesOtherVersion(v) => v.as_str(),
        _ => iface.version.as_str(),
    };
    let extensions: Vec<&str> = target
        .extensions
        .iter()
        .map(String::as_str)
        .filter(|e| !matches!(check, Check::ExtensionEnforced(u) if u == e))
        .collect();
    let mut headers = HeaderMap::new();
    // The same headers a data-plane call in this dialect carries (`proxy::shape`).
    let dialect = target.dialect;
    if !dialect.translates() {
        let (name, v) = dialect
            .version_header(version)
            .ok_or(NotProbed::Unsendable(
                "the A2A-Version is not a header value",
            ))?;
        headers.insert(name, v);
    }
    if !extensions.is_empty() {
        let (name, v) = dialect
            .extensions_header(&extensions)
            .ok_or(NotProbed::Unsendable(
                "the extensions are not a header value",
            ))?;
        headers.insert(name, v);
    }
    let accept = if *check == Check::Streaming {
        "text/event-stream"
    } else {
        "application/json"
    };
    headers.insert(http::header::ACCEPT, HeaderValue::from_static(accept));
    let op = op(check);
    let (path, params) = match check {
        Check::Interface | Check::RefusesOtherVersion(_) | Check::ExtensionEnforced(_) => {
            (format!("tasks/{NO_TASK}"), json!({"id": NO_TASK}))
        }
        Check::Streaming => (
            "message:stream".to_owned(),
            json!({"message": message(target, "text/plain", n)?}),
        ),
        Check::MediaType(mt) => (
            "message:send".to_owned(),
            json!({"message": message(target, mt, n)?}),
        ),
    };
    if dialect.grpc() {
        return grpc(target, headers, op, params, n);
    }
    if !is_jsonrpc(iface.binding) {
        let r = rest(target, headers, &path, op != Op::GetTask, params).ok_or(
            NotProbed::Unsendable("the interface URL cannot take a path"),
        )?;
        return Ok(dialect::rest_request(dialect, op, &iface.url, &path, r)?);
    }
    let mut r = jsonrpc(iface.url.clone(), headers, op.as_str(), params, target, n);
    if let Some(body) = r.body.take() {
        r.body = Some(dialect::request_body(dialect, op, body)?);
    }
    Ok(r)
}

fn jsonrpc(
    url: String,
    mut headers: HeaderMap,
    method: &str,
    mut params: Value,
    target: &Target,
    n: usize,
) -> Request {
    if let (Some(t), Some(p)) = (&target.tenant, params.as_object_mut()) {
        p.insert("tenant".into(), json!(t));
    }
    headers.insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    let body = json!({"jsonrpc": "2.0", "id": format!("a2a-egress-probe-{n}"), "method": method, "params": params});
    Request {
        method: Method::POST,
        url,
        headers,
        body: Some(Bytes::from(body.to_string())),
        grpc: None,
    }
}

/// gRPC: the JSON-RPC request of [`jsonrpc`] made into the rpc's protobuf request, as the data
/// plane makes a JSON-RPC caller's; the headers go as metadata (no `Content-Type`, which is
/// gRPC's own).
fn grpc(
    target: &Target,
    headers: HeaderMap,
    op: Op,
    params: Value,
    n: usize,
) -> Result<Request, NotProbed> {
    use crate::translate::grpc as g;
    let url = target.interface.call_url().into_owned();
    let mut r = jsonrpc(url, headers, op.as_str(), params, target, n);
    let body = r.body.take().unwrap_or_default();
    let (pb, path) = if target.dialect.translates() {
        // 0.3's service: the 0.3 HTTP+JSON request of the probe, made into its rpc's message,
        // as the data plane makes a call (`translate::grpc03`).
        let call = crate::translate::binding::rpc_request_to_rest(op, &body)?;
        let query = call.query.as_deref();
        let r03 = crate::translate::rest_request_to03(op, &call.route, query, &call.body)?;
        let pb = crate::translate::grpc03::request_to_pb(op, &r03.path, &r03.body)?;
        let path = crate::translate::grpc03::path(op)
            .ok_or(NotProbed::Unsendable("the operation has no A2A 0.3 rpc"))?;
        (pb, path)
    } else {
        let pb = g::request_to_pb(op, &body)
            .map_err(|_| NotProbed::Unsendable("the probe cannot be said in protobuf"))?;
        (pb, g::path(op))
    };
    r.headers.remove(http::header::CONTENT_TYPE);
    r.headers.remove(http::header::ACCEPT);
    r.body = Some(Bytes::from(pb));
    r.grpc = Some(path);
    Ok(r)
}

/// HTTP+JSON: `{interface url}[/{tenant}]/{path}`, the tenant one path segment.
fn rest(
    target: &Target,
    mut headers: HeaderMap,
    path: &str,
    post: bool,
    params: Value,
) -> Option<Request> {
    let mut url = url::Url::parse(&target.interface.url).ok()?;
    {
        let mut segs = url.path_segments_mut().ok()?;
        segs.pop_if_empty();
        if let Some(t) = &target.tenant {
            segs.push(t);
        }
        segs.extend(path.split('/'));
    }
    let body = post.then(|| {
        headers.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        Bytes::from(params.to_string())
    });
    Some(Request {
        method: if post { Method::POST } else { Method::GET },
        url: url.to_string(),
        headers,
        body,
        grpc: None,
    })
}

/// A trivial message with one part of `mt` to the probe skill (named as the `skillId` hint).
fn message(target: &Target, mt: &str, n: usize) -> Result<Value, NotProbed> {
    let p = target.probe.as_ref().ok_or(NotProbed::NoProbeSkill)?;
    let part = match mt {
        "text/plain" => json!({"text": p.text}),
        "application/json" => json!({"data": {"text": p.text}, "mediaType": mt}),
        _ => {
            use base64::Engine as _;
            let raw = base64::engine::general_purpose::STANDARD.encode(p.text.as_bytes());
            json!({"raw": raw, "mediaType": mt})
        }
    };
    Ok(json!({
        "messageId": format!("a2a-egress-probe-{n}"),
        "role": "ROLE_USER",
        "parts": [part],
        "metadata": {"skillId": p.skill},
    }))
}

/// What an answer was, protocol-wise.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Answer {
    /// A JSON-RPC result, or a 2xx HTTP+JSON body.
    Result,
    /// An A2A error: its JSON-RPC code and/or its ErrorInfo reason.
    Error {
        code: Option<i64>,
        reason: Option<String>,
    },
    /// An event stream of `events` data events, the first error among them if any.
    Stream {
        events: usize,
        error: Option<Box<Answer>>,
    },
    /// Not an A2A answer at all.
    Other(String),
}

impl Answer {
    fn is(&self, code: i64, reason: &str) -> bool {
        match self {
            Answer::Error { code: c, reason: r } => {
                *c == Some(code) || r.as_deref() == Some(reason)
            }
            Answer::Stream { error: Some(e), .. } => e.is(code, reason),
            _ => false,
        }
    }

    fn describe(&self) -> String {
        match self {
            Answer::Result => "a result".into(),
            Answer::Error { code, reason } => match (code, reason) {
                (_, Some(r)) => format!("error {r}"),
                (Some(c), None) => format!("error {c}"),
                (None, None) => "an error".into(),
            },
            Answer::Stream { events, error } => match error {
                Some(e) => format!("a stream ending in {}", e.describe()),
                None => format!("a stream of {events} events"),
            },
            Answer::Other(s) => s.clone(),
        }
    }

    fn is_protocol(&self) -> bool {
        !matches!(self, Answer::Other(_))
    }
}

fn error_of(v: &Value) -> Option<Answer> {
    let e = v.get("error")?;
    let reason = e
        .get("data")
        .or_else(|| e.get("details"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find_map(|d| d.get("reason").and_then(Value::as_str))
        .map(str::to_owned);
    // JSON-RPC codes are negative; an HTTP+JSON `code` is the HTTP status.
    let code = e.get("code").and_then(Value::as_i64).filter(|c| *c < 0);
    Some(Answer::Error { code, reason })
}

/// An answer whose trees (the body's, or all of a stream's events', which are held together)
/// would take more than [`crate::json::TREE_BUDGET`]: no conclusion, as for any answer that
/// cannot be read, and nothing is built. A probe's answer is capped only by the card policy's
/// `max_card_bytes` (up to 16 MiB), the same size as a data-plane answer.
fn too_large(resp: &Response) -> Option<Outcome> {
    let result = if is_event_stream(resp.content_type.as_deref()) {
        let sum = sse_data(&resp.body)
            .iter()
            // An event the walk cannot read counts as over any budget (its parse would build
            // the prefix before the fault).
            .map(|d| crate::json::tree_bound(d).unwrap_or(usize::MAX))
            .fold(0usize, usize::saturating_add);
        if sum > crate::json::TREE_BUDGET {
            Err(crate::json::ScanError::TooLarge {
                mib: sum.div_ceil(1 << 20),
            })
        } else {
            Ok(())
        }
    } else {
        crate::json::check_tree(&resp.body)
    };
    let e = result.err()?;
    Some(Outcome::Inconclusive(format!("no A2A answer: {e}")))
}

fn answer(resp: &Response) -> Answer {
    if is_event_stream(resp.content_type.as_deref()) {
        let events: Vec<Value> = sse_data(&resp.body)
            .iter()
            .filter_map(|d| serde_json::from_str(d).ok())
            .collect();
        let error = events.iter().find_map(error_of).map(Box::new);
        return Answer::Stream {
            events: events.len(),
            error,
        };
    }
    match serde_json::from_slice::<Value>(&resp.body) {
        Ok(v) if v.get("error").is_some() => {
            error_of(&v).unwrap_or(Answer::Other("an error".into()))
        }
        Ok(v)
            if v.get("result").is_some() || (200..300).contains(&resp.status) && v.is_object() =>
        {
            Answer::Result
        }
        _ => Answer::Other(format!(
            "HTTP {} {}",
            resp.status,
            resp.content_type
                .as_deref()
                .unwrap_or("without a content type")
        )),
    }
}

/// Judges the agent's answer to `check`'s request made in `dialect`: a 0.3 agent's answer and
/// stream events are translated to 1.0 first, as the data plane translates them for a caller,
/// then judged as any 1.0 answer; one that does not translate is no A2A answer.
pub fn judge_in(check: &Check, dialect: Dialect, resp: Response) -> Outcome {
    if let Some(o) = too_large(&resp) {
        return o;
    }
    match dialect::answer_to10(dialect, op(check), resp) {
        Ok(r) => judge(check, &r),
        Err(e) => Outcome::Inconclusive(format!(
            "no A2A answer: the A2A 0.3 answer does not translate: {e}"
        )),
    }
}

/// Judges the 1.0 answer to `check`'s request.
pub fn judge(check: &Check, resp: &Response) -> Outcome {
    if let Some(o) = too_large(resp) {
        return o;
    }
    let a = answer(resp);
    if !a.is_protocol() {
        return Outcome::Inconclusive(format!("no A2A answer: {}", a.describe()));
    }
    let refused_version = a.is(-32009, "VERSION_NOT_SUPPORTED");
    match check {
        Check::Interface if refused_version => Outcome::Failed(
            "the interface refuses its own protocol version with VersionNotSupportedError".into(),
        ),
        Check::Interface => Outcome::Ok(format!("answered with {}", a.describe())),
        Check::RefusesOtherVersion(v) if refused_version => Outcome::Ok(format!(
            "A2A-Version {v} refused with VersionNotSupportedError"
        )),
        Check::RefusesOtherVersion(v) => Outcome::Failed(format!(
            "took A2A-Version {v}, which the card does not offer ({})",
            a.describe()
        )),
        Check::ExtensionEnforced(u) if a.is(-32008, "EXTENSION_SUPPORT_REQUIRED") => Outcome::Ok(
            format!("a call without {u} was refused with ExtensionSupportRequiredError"),
        ),
        Check::ExtensionEnforced(u) => Outcome::Failed(format!(
            "declared required, but a call without {u} was answered with {}",
            a.describe()
        )),
        Check::Streaming => judge_stream(&a),
        Check::MediaType(mt) if a.is(-32005, "CONTENT_TYPE_NOT_SUPPORTED") => Outcome::Failed(
            format!("a {mt} part was refused with ContentTypeNotSupportedError"),
        ),
        Check::MediaType(mt) => match a {
            Answer::Result | Answer::Stream { error: None, .. } => {
                Outcome::Ok(format!("a {mt} part was accepted"))
            }
            other => Outcome::Inconclusive(format!("answered {}", other.describe())),
        },
    }
}

fn judge_stream(a: &Answer) -> Outcome {
    if a.is(-32004, "UNSUPPORTED_OPERATION") {
        return Outcome::Failed(
            "the card claims streaming, but SendStreamingMessage was refused with UnsupportedOperationError"
                .into(),
        );
    }
    match a {
        Answer::Stream {
            events,
            error: None,
        } if *events > 0 => Outcome::Ok(format!("streamed {events} events")),
        Answer::Result | Answer::Stream { error: None, .. } => Outcome::Failed(format!(
            "the card claims streaming, but SendStreamingMessage answered {}",
            a.describe()
        )),
        other => Outcome::Inconclusive(format!("answered {}", other.describe())),
    }
}
