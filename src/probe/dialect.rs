//! Probes in the dialect of the integration's chosen interface (pure, no I/O): which checks have
//! a meaning in the agent's protocol version, a probe's 1.0 JSON-RPC body or HTTP+JSON request
//! as the 0.3 agent's,
//! and a 0.3 agent's answer and stream events back to 1.0, so the judgement reads the same 1.0
//! answer for every agent. The translation is [`crate::translate`]'s, the one the data plane
//! uses: nothing here rewrites a member itself.

use bytes::Bytes;

use super::{Check, Request, Response, sse_data};
use crate::profile::Binding;
use crate::translate::{self, Dialect, Op, TranslateError};

/// Why `check` asks nothing of an agent speaking `dialect`; `None` when it does.
///
/// Both checks below rest on 1.0-only errors (FACTS §11: -32008 and -32009 are new in 1.0): a
/// 0.3 agent reads no `A2A-Version` (none is sent to it, an absent header is what means 0.3),
/// and 0.3 has no error for a call without a required extension, so neither answer could
/// confirm or contradict the claim.
pub(super) fn no_meaning(check: &Check, dialect: Dialect) -> Option<&'static str> {
    if !dialect.translates() {
        return None;
    }
    match check {
        Check::RefusesOtherVersion(_) => Some(
            "0.3 has no A2A-Version header and no VersionNotSupportedError (-32009 is new in 1.0)",
        ),
        Check::ExtensionEnforced(_) => Some(
            "0.3 has no ExtensionSupportRequiredError (-32008 is new in 1.0) to refuse a call without it",
        ),
        Check::Interface | Check::Streaming | Check::MediaType(_) => None,
    }
}

/// The JSON-RPC `body` of a probe of `op`, built as 1.0, as the agent's: unchanged for a 1.0
/// agent, translated for a 0.3 one (an operation 0.3 lacks, such as ListTasks, is refused).
pub(super) fn request_body(dialect: Dialect, op: Op, body: Bytes) -> Result<Bytes, TranslateError> {
    if !dialect.translates() {
        return Ok(body);
    }
    translate::request_to03(op, &body).map(Bytes::from)
}

/// The HTTP+JSON probe `r` of `op` (its 1.0 route `path` below the interface URL `base`) as the
/// agent's: unchanged for a 1.0 agent; for a 0.3 one, the 0.3 method, `/v1/…` route and body
/// [`translate::rest_request_to03`] makes of it, as the data plane sends it.
pub(super) fn rest_request(
    dialect: Dialect,
    op: Op,
    base: &str,
    path: &str,
    r: Request,
) -> Result<Request, TranslateError> {
    if !dialect.translates() {
        return Ok(r);
    }
    let body = r.body.as_deref().unwrap_or_default();
    let t = translate::rest_request_to03(op, &format!("/{path}"), None, body)?;
    let unsendable = || TranslateError::untranslatable("url", "cannot take the 0.3 route");
    let mut url = url::Url::parse(base).map_err(|_| unsendable())?;
    url.path_segments_mut()
        .map_err(|_| unsendable())?
        .pop_if_empty()
        .extend(t.path.trim_start_matches('/').split('/'));
    let mut headers = r.headers;
    headers.remove(http::header::CONTENT_TYPE);
    if !t.body.is_empty() {
        headers.insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("application/json"),
        );
    }
    Ok(Request {
        method: http::Method::from_bytes(t.method.as_bytes()).map_err(|_| unsendable())?,
        url: url.to_string(),
        headers,
        body: (!t.body.is_empty()).then(|| Bytes::from(t.body)),
        grpc: None,
    })
}

/// The agent's answer to a probe of `op` as a 1.0 agent's: unchanged for a 1.0 agent; for a 0.3
/// one, a JSON-RPC answer translated with `answer_to10`, an event stream event by event with
/// `event_to10` (up to the event 0.3 marks `final`), and anything that is not a JSON-RPC answer
/// (an HTML error page) left as it came, for the judgement to call it no A2A answer.
pub(super) fn answer_to10(
    dialect: Dialect,
    op: Op,
    resp: Response,
) -> Result<Response, TranslateError> {
    // A gRPC agent's answers come from the transport already as 1.0 JSON-RPC answers.
    if !dialect.translates() || dialect.grpc() {
        return Ok(resp);
    }
    let rest = dialect.binding == Binding::HttpJson;
    if super::is_event_stream(resp.content_type.as_deref()) {
        let mut body = String::new();
        for data in sse_data(&resp.body) {
            let t = if rest {
                translate::rest_event_to10(op, data.as_bytes())?
            } else {
                translate::event_to10(op, data.as_bytes())?
            };
            body.push_str("data: ");
            body.push_str(&String::from_utf8_lossy(&t.json));
            body.push_str("\n\n");
            if t.last {
                break;
            }
        }
        return Ok(Response {
            body: Bytes::from(body),
            ..resp
        });
    }
    if rest {
        return Ok(
            match translate::rest_answer_to10(op, resp.status, &resp.body)? {
                Some(t) => Response {
                    status: t.status,
                    content_type: Some("application/json".to_owned()),
                    body: Bytes::from(t.json),
                },
                None => resp,
            },
        );
    }
    if !is_rpc_answer(&resp.body) {
        return Ok(resp);
    }
    let t = translate::answer_to10(op, &resp.body)?;
    Ok(Response {
        body: Bytes::from(t.json),
        ..resp
    })
}

/// Whether `body` is a JSON object with a `result` or an `error`: the answers the translator
/// reads (a page that is not JSON is judged as it came).
fn is_rpc_answer(body: &[u8]) -> bool {
    matches!(
        serde_json::from_slice::<serde_json::Value>(body),
        Ok(serde_json::Value::Object(o)) if o.contains_key("result") || o.contains_key("error")
    )
}
