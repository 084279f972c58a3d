//! The HTTP+JSON binding (A2A §11): routes appended to the interface URL, each also under a
//! `/{tenant}` prefix (I/O: builds HTTP responses).
//!
//! Paths are matched by hand rather than by axum's router because `/tasks/{id}:cancel` puts a verb
//! after a parameter in one segment, and because the interface path comes from the (reloadable)
//! registry. Errors are google.rpc.Status bodies with the HTTP status of the A2A specification's
//! error code table (§3.3.2, §11.6).

use std::sync::Arc;

use a2a::SendMessageResponse;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use serde_json::{Map, Value};

use super::errors::A2aError;
use super::jsonrpc::echo_extensions;
use super::params;
use super::project::ProjectedCard;
use super::registry::Interface;
use super::service::{self, App, Call, Snapshot};
use super::sse::{self, Framing};
use a2a_egress::types::etag::if_none_match;

/// A REST operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// `POST /message:send`
    Send,
    /// `POST /message:stream`
    Stream,
    /// `GET /tasks/{id}`
    GetTask(String),
    /// `GET /tasks`
    ListTasks,
    /// `POST /tasks/{id}:cancel`
    Cancel(String),
    /// `GET|POST /tasks/{id}:subscribe`
    Subscribe(String),
    /// Any push-notification-config route.
    Push,
    /// `GET /extendedAgentCard`
    ExtendedCard,
}

fn decode(seg: &str) -> String {
    percent_encoding::percent_decode_str(seg)
        .decode_utf8_lossy()
        .into_owned()
}

fn match_op(method: &Method, segs: &[&str]) -> Option<Op> {
    let m = method.as_str();
    Some(match (m, segs) {
        ("POST", ["message:send"]) => Op::Send,
        ("POST", ["message:stream"]) => Op::Stream,
        ("GET", ["tasks"]) => Op::ListTasks,
        ("GET", ["extendedAgentCard"]) => Op::ExtendedCard,
        ("POST", ["tasks", last]) if last.ends_with(":cancel") && last.len() > 7 => {
            Op::Cancel(decode(&last[..last.len() - 7]))
        }
        ("GET" | "POST", ["tasks", last]) if last.ends_with(":subscribe") && last.len() > 10 => {
            Op::Subscribe(decode(&last[..last.len() - 10]))
        }
        ("GET", ["tasks", id]) if !id.is_empty() && !id.contains(':') => Op::GetTask(decode(id)),
        ("GET" | "POST", ["tasks", _, "pushNotificationConfigs"])
        | ("GET" | "DELETE", ["tasks", _, "pushNotificationConfigs", _]) => Op::Push,
        _ => return None,
    })
}

/// Parses the path below the interface (`rest` starts with `/`) into (tenant, operation).
pub fn parse_route(method: &Method, rest: &str) -> Result<(Option<String>, Op), A2aError> {
    let segs: Vec<&str> = rest.trim_start_matches('/').split('/').collect();
    if let Some(op) = match_op(method, &segs) {
        return Ok((None, op));
    }
    if segs.len() >= 2
        && !segs[0].is_empty()
        && let Some(op) = match_op(method, &segs[1..])
    {
        return Ok((Some(decode(segs[0])), op));
    }
    Err(A2aError::MethodNotFound(format!("{method} {rest}")))
}

/// One request on an HTTP+JSON interface, as the server read it.
#[derive(Debug)]
pub struct RestRequest<'a> {
    /// The HTTP method.
    pub method: Method,
    /// The path below the interface path.
    pub rest: &'a str,
    /// The query string, if any.
    pub query: Option<&'a str>,
    /// The request headers.
    pub headers: HeaderMap,
    /// The whole body (already bounded by `max_request_bytes`).
    pub body: Bytes,
}

/// What an operation answers: a JSON body, or a response of its own (an SSE stream, the
/// extended card with its cache headers).
enum Answer {
    Json(Value),
    Own(Response),
}

/// Handles one request on an HTTP+JSON interface.
pub async fn handle(
    app: Arc<App>,
    snap: Arc<Snapshot>,
    iface: Interface,
    req: RestRequest<'_>,
) -> Response {
    let mut activated = Vec::new();
    let (path_tenant, op) = match parse_route(&req.method, req.rest) {
        Ok(r) => r,
        Err(e) => return error(e, &activated),
    };
    let mut params = match input(&op, req.query, &req.body) {
        Ok(p) => p,
        Err(e) => return error(e, &activated),
    };
    let call = match admit(
        &snap,
        &iface,
        &req.headers,
        path_tenant,
        &mut params,
        &mut activated,
    ) {
        Ok(c) => c,
        Err(e) => return error(e, &activated),
    };
    match perform(&app, &call, op, params, &req.headers, &activated).await {
        Ok(Answer::Own(r)) => r,
        Ok(Answer::Json(v)) => {
            let mut r = (
                StatusCode::OK,
                [(header::CONTENT_TYPE, "application/a2a+json")],
                serde_json::to_vec(&v).unwrap_or_default(),
            )
                .into_response();
            echo_extensions(r.headers_mut(), &activated);
            r
        }
        Err(e) => error(e, &activated),
    }
}

/// Runs one admitted operation.
async fn perform(
    app: &App,
    call: &Call,
    op: Op,
    mut params: Map<String, Value>,
    headers: &HeaderMap,
    activated: &[String],
) -> Result<Answer, A2aError> {
    let snap = &call.snap;
    match op {
        Op::Send => {
            let req = params::send_message(&Value::Object(params))?;
            let t = service::send_message(app, call, req).await?;
            Ok(Answer::Json(to_value(&SendMessageResponse::Task(t))))
        }
        Op::Stream => {
            let req = params::send_message(&Value::Object(params))?;
            let events = service::stream_message(app, call, req)?;
            Ok(Answer::Own(stream(events, snap, activated)))
        }
        Op::Subscribe(id) => {
            let events = service::subscribe(app, call, &id)?;
            Ok(Answer::Own(stream(events, snap, activated)))
        }
        Op::GetTask(id) => {
            params.insert("id".into(), Value::String(id));
            let req = params::get_task(&Value::Object(params))?;
            Ok(Answer::Json(to_value(&service::get_task(app, call, &req)?)))
        }
        Op::ListTasks => {
            let req = params::list_tasks(&Value::Object(params))?;
            Ok(Answer::Json(to_value(&service::list_tasks(
                app, call, &req,
            )?)))
        }
        Op::Cancel(id) => {
            params.insert("id".into(), Value::String(id));
            let req = params::cancel_task(&Value::Object(params))?;
            Ok(Answer::Json(to_value(&service::cancel_task(
                app, call, &req,
            )?)))
        }
        // Per-principal content: cacheable by the caller only, revalidated by ETag.
        Op::ExtendedCard => {
            let card = service::extended_card(call)?;
            Ok(Answer::Own(extended_card_response(
                &card, headers, snap, activated,
            )))
        }
        Op::Push => Err(A2aError::PushNotificationNotSupported),
    }
}

fn extended_card_response(
    card: &ProjectedCard,
    headers: &HeaderMap,
    snap: &Snapshot,
    activated: &[String],
) -> Response {
    let mut r = if if_none_match(headers, &card.etag) {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/a2a+json")],
            card.body.clone(),
        )
            .into_response()
    };
    let h = r.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&card.etag) {
        h.insert(header::ETAG, v);
    }
    let cache = format!("private, max-age={}", snap.registry.agent.card_max_age_secs);
    if let Ok(v) = HeaderValue::from_str(&cache) {
        h.insert(header::CACHE_CONTROL, v);
    }
    echo_extensions(h, activated);
    r
}

fn to_value<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// The request's fields as one object: the JSON body for POSTs, the query string for GETs.
fn input(op: &Op, query: Option<&str>, body: &[u8]) -> Result<Map<String, Value>, A2aError> {
    match op {
        Op::Send | Op::Stream | Op::Cancel(_) => {
            if body.iter().all(u8::is_ascii_whitespace) {
                return if matches!(op, Op::Cancel(_)) {
                    Ok(Map::new())
                } else {
                    Err(A2aError::invalid("message", "is required (empty body)"))
                };
            }
            match serde_json::from_slice::<Value>(body) {
                Ok(Value::Object(o)) => Ok(o),
                Ok(_) => Err(A2aError::invalid("body", "must be a JSON object")),
                Err(e) => Err(A2aError::Parse(e.to_string())),
            }
        }
        Op::GetTask(_) | Op::ListTasks => Ok(url::form_urlencoded::parse(
            query.unwrap_or_default().as_bytes(),
        )
        .map(|(k, v)| (k.into_owned(), Value::String(v.into_owned())))
        .collect()),
        Op::Subscribe(_) | Op::Push | Op::ExtendedCard => Ok(Map::new()),
    }
}

fn admit(
    snap: &Arc<Snapshot>,
    iface: &Interface,
    headers: &HeaderMap,
    path_tenant: Option<String>,
    params: &mut Map<String, Value>,
    activated: &mut Vec<String>,
) -> Result<Call, A2aError> {
    let reg = &snap.registry;
    service::negotiate_version(headers, iface)?;
    *activated = service::negotiate_extensions(headers, reg)?;
    let caller = service::authenticate(headers, reg)?;
    let body_tenant = params::tenant(&Value::Object(params.clone()))?;
    let requested = match (path_tenant, body_tenant) {
        (Some(p), Some(b)) if p != b => {
            return Err(A2aError::invalid(
                "tenant",
                format!("{b:?} in the body differs from {p:?} in the path"),
            ));
        }
        (Some(p), _) => Some(p),
        (None, b) => b,
    };
    let tenant = service::resolve_tenant(caller.as_ref(), requested)?;
    Ok(Call {
        snap: snap.clone(),
        caller,
        tenant,
        extensions: activated.clone(),
    })
}

fn stream(events: service::EventStream, snap: &Snapshot, activated: &[String]) -> Response {
    let mut r = sse::response(
        events,
        Framing::Rest,
        snap.registry.misbehave.drop_stream_after_events,
    );
    echo_extensions(r.headers_mut(), activated);
    r
}

/// A google.rpc.Status error response.
pub fn error(e: A2aError, activated: &[String]) -> Response {
    let mut r = (
        e.http_status(),
        [(header::CONTENT_TYPE, "application/json")],
        serde_json::to_vec(&e.rest_body()).unwrap_or_default(),
    )
        .into_response();
    if e.http_status() == StatusCode::UNAUTHORIZED {
        r.headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    echo_extensions(r.headers_mut(), activated);
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(m: Method, p: &str) -> Result<(Option<String>, Op), A2aError> {
        parse_route(&m, p)
    }

    #[test]
    fn routes_with_and_without_tenant() {
        assert_eq!(
            route(Method::POST, "/message:send").unwrap(),
            (None, Op::Send)
        );
        assert_eq!(
            route(Method::POST, "/acme/message:stream").unwrap(),
            (Some("acme".into()), Op::Stream)
        );
        assert_eq!(
            route(Method::GET, "/tasks/abc").unwrap(),
            (None, Op::GetTask("abc".into()))
        );
        assert_eq!(
            route(Method::POST, "/a%20b/tasks/abc:cancel").unwrap(),
            (Some("a b".into()), Op::Cancel("abc".into()))
        );
        assert_eq!(
            route(Method::GET, "/tasks/abc:subscribe").unwrap(),
            (None, Op::Subscribe("abc".into()))
        );
        assert_eq!(
            route(Method::GET, "/acme/tasks").unwrap(),
            (Some("acme".into()), Op::ListTasks)
        );
        assert_eq!(
            route(Method::GET, "/extendedAgentCard").unwrap(),
            (None, Op::ExtendedCard)
        );
        assert_eq!(
            route(Method::DELETE, "/tasks/x/pushNotificationConfigs/y").unwrap(),
            (None, Op::Push)
        );
        assert!(matches!(
            route(Method::GET, "/message:send"),
            Err(A2aError::MethodNotFound(_))
        ));
        assert!(matches!(
            route(Method::GET, "/v1/card"),
            Err(A2aError::MethodNotFound(_))
        ));
        assert!(matches!(
            route(Method::POST, "/tasks/:cancel"),
            Err(A2aError::MethodNotFound(_))
        ));
    }
}
