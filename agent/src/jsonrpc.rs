//! The JSON-RPC 2.0 binding (A2A §9): one POST endpoint per interface (I/O: builds HTTP responses).
//!
//! Order of checks: envelope (parse error, batch, id, `jsonrpc`, method) → `A2A-Version` →
//! `A2A-Extensions` → bearer token → tenant → method params. Errors go out as HTTP 200 with a
//! JSON-RPC error body (as both SDKs do), except authentication/authorisation (401/403).

use std::sync::Arc;

use a2a::{JsonRpcId, JsonRpcResponse, SendMessageResponse, methods};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use serde_json::Value;

use super::errors::A2aError;
use super::params;
use super::registry::Interface;
use super::service::{self, App, Call, Snapshot};
use super::sse::{self, Framing};

/// Handles one JSON-RPC POST.
pub async fn handle(
    app: Arc<App>,
    snap: Arc<Snapshot>,
    iface: Interface,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let mut activated = Vec::new();
    let (id, method, params) = match envelope(&body) {
        Ok(e) => e,
        Err((id, e)) => return error(id, e, &activated),
    };
    let call = match admit(&snap, &iface, &headers, &params, &mut activated) {
        Ok(c) => c,
        Err(e) => return error(id, e, &activated),
    };
    let result: Result<Value, A2aError> = match method.as_str() {
        methods::SEND_MESSAGE => match params::send_message(&params) {
            Ok(req) => service::send_message(&app, &call, req)
                .await
                .map(|t| to_value(&SendMessageResponse::Task(t))),
            Err(e) => Err(e),
        },
        methods::SEND_STREAMING_MESSAGE => {
            match params::send_message(&params)
                .and_then(|req| service::stream_message(&app, &call, req))
            {
                Ok(events) => return stream(events, id, &snap, &activated),
                Err(e) => Err(e),
            }
        }
        methods::SUBSCRIBE_TO_TASK => {
            match params::subscribe_to_task(&params)
                .and_then(|req| service::subscribe(&app, &call, &req.id))
            {
                Ok(events) => return stream(events, id, &snap, &activated),
                Err(e) => Err(e),
            }
        }
        methods::GET_TASK => params::get_task(&params)
            .and_then(|req| service::get_task(&app, &call, &req))
            .map(|t| to_value(&t)),
        methods::LIST_TASKS => params::list_tasks(&params)
            .and_then(|req| service::list_tasks(&app, &call, &req))
            .map(|r| to_value(&r)),
        methods::CANCEL_TASK => params::cancel_task(&params)
            .and_then(|req| service::cancel_task(&app, &call, &req))
            .map(|t| to_value(&t)),
        methods::GET_EXTENDED_AGENT_CARD => service::extended_card(&call).map(|c| c.json),
        methods::CREATE_PUSH_CONFIG
        | methods::GET_PUSH_CONFIG
        | methods::LIST_PUSH_CONFIGS
        | methods::DELETE_PUSH_CONFIG => Err(A2aError::PushNotificationNotSupported),
        other => Err(A2aError::MethodNotFound(other.to_string())),
    };
    match result {
        Ok(v) => reply(StatusCode::OK, &JsonRpcResponse::success(id, v), &activated),
        Err(e) => error(id, e, &activated),
    }
}

fn to_value<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// Parses the envelope; on failure returns the id to answer with (null when unknown).
fn envelope(body: &[u8]) -> Result<(JsonRpcId, String, Value), (JsonRpcId, A2aError)> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| (JsonRpcId::Null, A2aError::Parse(e.to_string())))?;
    let o = match v {
        Value::Object(o) => o,
        Value::Array(_) => {
            return Err((
                JsonRpcId::Null,
                A2aError::InvalidRequest("batch requests are not supported".into()),
            ));
        }
        _ => {
            return Err((
                JsonRpcId::Null,
                A2aError::InvalidRequest("the request must be a JSON object".into()),
            ));
        }
    };
    let id = match o.get("id") {
        None => {
            return Err((
                JsonRpcId::Null,
                A2aError::InvalidRequest("id is required (notifications are not supported)".into()),
            ));
        }
        Some(id) => serde_json::from_value::<JsonRpcId>(id.clone()).map_err(|_| {
            (
                JsonRpcId::Null,
                A2aError::InvalidRequest("id must be a string, an integer or null".into()),
            )
        })?,
    };
    if o.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err((
            id,
            A2aError::InvalidRequest("jsonrpc must be \"2.0\"".into()),
        ));
    }
    let Some(method) = o.get("method").and_then(Value::as_str) else {
        return Err((
            id,
            A2aError::InvalidRequest("method must be a string".into()),
        ));
    };
    let params = o.get("params").cloned().unwrap_or(Value::Null);
    if !matches!(params, Value::Object(_) | Value::Null) {
        return Err((id, A2aError::invalid("params", "must be an object")));
    }
    Ok((id, method.to_string(), params))
}

fn admit(
    snap: &Arc<Snapshot>,
    iface: &Interface,
    headers: &HeaderMap,
    params: &Value,
    activated: &mut Vec<String>,
) -> Result<Call, A2aError> {
    let reg = &snap.registry;
    service::negotiate_version(headers, iface)?;
    *activated = service::negotiate_extensions(headers, reg)?;
    let caller = service::authenticate(headers, reg)?;
    let requested = params::tenant(params)?;
    let tenant = service::resolve_tenant(caller.as_ref(), requested)?;
    Ok(Call {
        snap: snap.clone(),
        caller,
        tenant,
        extensions: activated.clone(),
    })
}

fn stream(
    events: service::EventStream,
    id: JsonRpcId,
    snap: &Snapshot,
    activated: &[String],
) -> Response {
    let mut r = sse::response(
        events,
        Framing::JsonRpc(id),
        snap.registry.misbehave.drop_stream_after_events,
    );
    echo_extensions(r.headers_mut(), activated);
    r
}

/// Writes `A2A-Extensions` with the activated set (the Extensions specification: the server
/// SHOULD echo the extensions it activated).
pub fn echo_extensions(h: &mut HeaderMap, activated: &[String]) {
    if !activated.is_empty()
        && let Ok(v) = HeaderValue::from_str(&activated.join(", "))
    {
        h.insert(a2a::SVC_PARAM_EXTENSIONS, v);
    }
}

fn reply(status: StatusCode, body: &JsonRpcResponse, activated: &[String]) -> Response {
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    let mut r = (status, [(header::CONTENT_TYPE, "application/json")], bytes).into_response();
    echo_extensions(r.headers_mut(), activated);
    r
}

fn error(id: JsonRpcId, e: A2aError, activated: &[String]) -> Response {
    let status = match e {
        A2aError::Unauthenticated(_) | A2aError::PermissionDenied(_) => e.http_status(),
        _ => StatusCode::OK,
    };
    let mut r = reply(
        status,
        &JsonRpcResponse::error(id, e.jsonrpc_error()),
        activated,
    );
    if status == StatusCode::UNAUTHORIZED {
        r.headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelope_errors() {
        let (_, e) = envelope(b"{").unwrap_err();
        assert_eq!(e.code(), -32700);
        let (_, e) = envelope(b"[]").unwrap_err();
        assert!(matches!(e, A2aError::InvalidRequest(ref m) if m.contains("batch")));
        let (id, e) = envelope(br#"{"jsonrpc":"1.0","id":7,"method":"GetTask"}"#).unwrap_err();
        assert_eq!(id, JsonRpcId::Number(7));
        assert_eq!(e.code(), -32600);
        let (_, e) = envelope(br#"{"jsonrpc":"2.0","method":"GetTask"}"#).unwrap_err();
        assert_eq!(e.code(), -32600);
        let (_, e) =
            envelope(br#"{"jsonrpc":"2.0","id":"a","method":"GetTask","params":[1]}"#).unwrap_err();
        assert_eq!(e.code(), -32602);
        let (id, m, _) = envelope(br#"{"jsonrpc":"2.0","id":"a","method":"GetTask"}"#).unwrap();
        assert_eq!((id, m.as_str()), (JsonRpcId::String("a".into()), "GetTask"));
    }
}
