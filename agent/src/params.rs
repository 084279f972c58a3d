//! Strict parsing of request params (JSON-RPC `params`, or the REST body and query folded into one
//! object) into the official a2a-lf request types (pure).
//!
//! a2a-lf is lenient (it picks the first of several part contents, ignores a bad part `metadata`,
//! and knows no enum numbers), so every field the agent relies on is checked here first and a
//! failure names the field: `message.parts[1]: has both "text" and "data"`. ProtoJSON leniencies
//! the spec requires are accepted: enum numbers, int32 as strings. Unknown fields are ignored (§5.7).

use a2a::{
    CancelTaskRequest, GetTaskRequest, ListTasksRequest, SendMessageRequest,
    SubscribeToTaskRequest, TaskState,
};
use base64::Engine;
use serde_json::{Map, Value};

use super::errors::A2aError;

type R<T> = Result<T, A2aError>;

fn object<'a>(v: &'a Value, field: &str) -> R<&'a Map<String, Value>> {
    v.as_object()
        .ok_or_else(|| A2aError::invalid(field, "must be an object"))
}

fn opt_str<'a>(o: &'a Map<String, Value>, key: &str, at: &str) -> R<Option<&'a str>> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(A2aError::invalid(join(at, key), "must be a string")),
    }
}

fn req_str<'a>(o: &'a Map<String, Value>, key: &str, at: &str) -> R<&'a str> {
    match opt_str(o, key, at)? {
        Some(s) if !s.is_empty() => Ok(s),
        _ => Err(A2aError::invalid(join(at, key), "is required")),
    }
}

/// An int32 given as a number or a string (ProtoJSON), within `min..=max`.
fn opt_int(o: &Map<String, Value>, key: &str, at: &str, min: i64, max: i64) -> R<Option<i32>> {
    let n = match o.get(key) {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Number(n)) => n.as_i64(),
        Some(Value::String(s)) => s.trim().parse::<i64>().ok(),
        Some(_) => None,
    };
    match n {
        Some(n) if (min..=max).contains(&n) => Ok(Some(n as i32)),
        Some(n) => Err(A2aError::invalid(
            join(at, key),
            format!("{n} is out of range {min}..={max}"),
        )),
        None => Err(A2aError::invalid(join(at, key), "must be an integer")),
    }
}

fn opt_bool(o: &Map<String, Value>, key: &str, at: &str) -> R<Option<bool>> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        // Query strings carry booleans as text (§11.5).
        Some(Value::String(s)) if s == "true" => Ok(Some(true)),
        Some(Value::String(s)) if s == "false" => Ok(Some(false)),
        Some(_) => Err(A2aError::invalid(join(at, key), "must be true or false")),
    }
}

fn opt_object(o: &Map<String, Value>, key: &str, at: &str) -> R<()> {
    match o.get(key) {
        None | Some(Value::Null) | Some(Value::Object(_)) => Ok(()),
        Some(_) => Err(A2aError::invalid(join(at, key), "must be an object")),
    }
}

fn join(at: &str, key: &str) -> String {
    if at.is_empty() {
        key.to_string()
    } else {
        format!("{at}.{key}")
    }
}

fn decode<T: serde::de::DeserializeOwned>(v: Value, at: &str) -> R<T> {
    serde_json::from_value(v)
        .map_err(|e| A2aError::invalid(if at.is_empty() { "params" } else { at }, e.to_string()))
}

/// The tenant field, if present.
pub fn tenant(params: &Value) -> R<Option<String>> {
    match params {
        Value::Null => Ok(None),
        Value::Object(o) => Ok(opt_str(o, "tenant", "")?.map(str::to_string)),
        _ => Err(A2aError::invalid("params", "must be an object")),
    }
}

/// Checks and normalises one message; returns the normalised JSON.
fn message(v: &Value, at: &str) -> R<Value> {
    let o = object(v, at)?;
    req_str(o, "messageId", at)?;
    opt_str(o, "contextId", at)?;
    opt_str(o, "taskId", at)?;
    opt_object(o, "metadata", at)?;
    let role = match o.get("role") {
        Some(Value::String(s)) if s == "ROLE_USER" => "ROLE_USER",
        Some(Value::Number(n)) if n.as_i64() == Some(1) => "ROLE_USER",
        None => return Err(A2aError::invalid(join(at, "role"), "is required")),
        Some(other) => {
            return Err(A2aError::invalid(
                join(at, "role"),
                format!("must be ROLE_USER for a message sent to an agent, not {other}"),
            ));
        }
    };
    for key in ["extensions", "referenceTaskIds"] {
        match o.get(key) {
            None | Some(Value::Null) => {}
            Some(Value::Array(a)) if a.iter().all(Value::is_string) => {}
            Some(_) => {
                return Err(A2aError::invalid(
                    join(at, key),
                    "must be a list of strings",
                ));
            }
        }
    }
    let parts = match o.get("parts") {
        Some(Value::Array(p)) if !p.is_empty() => p,
        Some(Value::Array(_)) | None => {
            return Err(A2aError::invalid(
                join(at, "parts"),
                "must hold at least one part",
            ));
        }
        Some(_) => return Err(A2aError::invalid(join(at, "parts"), "must be a list")),
    };
    for (i, p) in parts.iter().enumerate() {
        part(p, &format!("{at}.parts[{i}]"))?;
    }
    let mut norm = o.clone();
    norm.insert("role".into(), Value::String(role.into()));
    Ok(Value::Object(norm))
}

fn part(v: &Value, at: &str) -> R<()> {
    let o = object(v, at)?;
    let present: Vec<&str> = ["text", "raw", "url", "data"]
        .into_iter()
        .filter(|k| o.get(*k).is_some_and(|v| !v.is_null()))
        .collect();
    match present.as_slice() {
        [] => {
            return Err(A2aError::invalid(
                at,
                "must have exactly one of \"text\", \"raw\", \"url\" or \"data\"",
            ));
        }
        [_] => {}
        [a, b, ..] => {
            return Err(A2aError::invalid(at, format!("has both {a:?} and {b:?}")));
        }
    }
    match present[0] {
        "text" | "url" => {
            opt_str(o, present[0], at)?;
        }
        "raw" => {
            let s = opt_str(o, "raw", at)?.unwrap_or_default();
            base64::engine::general_purpose::STANDARD
                .decode(s)
                .map_err(|e| A2aError::invalid(join(at, "raw"), format!("is not base64: {e}")))?;
        }
        _ => {}
    }
    if let Some(mt) = opt_str(o, "mediaType", at)?
        && !super::registry::is_media_type(mt)
    {
        return Err(A2aError::invalid(
            join(at, "mediaType"),
            format!("{mt:?} is not a media type"),
        ));
    }
    opt_str(o, "filename", at)?;
    opt_object(o, "metadata", at)?;
    Ok(())
}

/// `SendMessage` / `SendStreamingMessage` params.
pub fn send_message(params: &Value) -> R<SendMessageRequest> {
    let o = object(params, "params")?;
    let msg = o
        .get("message")
        .ok_or_else(|| A2aError::invalid("message", "is required"))?;
    let msg = message(msg, "message")?;
    opt_str(o, "tenant", "")?;
    opt_object(o, "metadata", "")?;
    let mut norm = o.clone();
    norm.insert("message".into(), msg);
    if let Some(c) = o.get("configuration").filter(|c| !c.is_null()) {
        let co = object(c, "configuration")?;
        match co.get("acceptedOutputModes") {
            None | Some(Value::Null) => {}
            Some(Value::Array(a)) if a.iter().all(Value::is_string) => {}
            Some(_) => {
                return Err(A2aError::invalid(
                    "configuration.acceptedOutputModes",
                    "must be a list of media types",
                ));
            }
        }
        let history_length = opt_int(co, "historyLength", "configuration", 0, i32::MAX as i64)?;
        opt_bool(co, "returnImmediately", "configuration")?;
        if co
            .get("taskPushNotificationConfig")
            .or_else(|| co.get("pushNotificationConfig"))
            .is_some_and(|v| !v.is_null())
        {
            return Err(A2aError::PushNotificationNotSupported);
        }
        let mut cn = co.clone();
        if let Some(h) = history_length {
            cn.insert("historyLength".into(), h.into());
        }
        norm.insert("configuration".into(), Value::Object(cn));
    }
    decode(Value::Object(norm), "")
}

/// `GetTask` params.
pub fn get_task(params: &Value) -> R<GetTaskRequest> {
    let o = object(params, "params")?;
    let id = req_str(o, "id", "")?;
    let history_length = opt_int(o, "historyLength", "", 0, i32::MAX as i64)?;
    Ok(GetTaskRequest {
        id: id.into(),
        history_length,
        tenant: opt_str(o, "tenant", "")?.map(Into::into),
    })
}

/// `CancelTask` params.
pub fn cancel_task(params: &Value) -> R<CancelTaskRequest> {
    let o = object(params, "params")?;
    let id = req_str(o, "id", "")?;
    opt_object(o, "metadata", "")?;
    let metadata = match o.get("metadata") {
        Some(Value::Object(m)) => Some(m.clone().into_iter().collect()),
        _ => None,
    };
    Ok(CancelTaskRequest {
        id: id.into(),
        metadata,
        tenant: opt_str(o, "tenant", "")?.map(Into::into),
    })
}

/// `SubscribeToTask` params.
pub fn subscribe_to_task(params: &Value) -> R<SubscribeToTaskRequest> {
    let o = object(params, "params")?;
    Ok(SubscribeToTaskRequest {
        id: req_str(o, "id", "")?.into(),
        tenant: opt_str(o, "tenant", "")?.map(Into::into),
    })
}

/// `ListTasks` params (`params` may be absent).
pub fn list_tasks(params: &Value) -> R<ListTasksRequest> {
    let empty = Map::new();
    let o = match params {
        Value::Null => &empty,
        v => object(v, "params")?,
    };
    let status = match o.get("status") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => Some(
            state_from_number(n.as_i64())
                .ok_or_else(|| A2aError::invalid("status", format!("{n} is not a TaskState")))?,
        ),
        Some(Value::String(s)) => Some(
            serde_json::from_value::<TaskState>(Value::String(s.clone()))
                .map_err(|_| A2aError::invalid("status", format!("{s:?} is not a TaskState")))?,
        ),
        Some(_) => return Err(A2aError::invalid("status", "must be a TaskState name")),
    };
    let status_timestamp_after = match opt_str(o, "statusTimestampAfter", "")? {
        None => None,
        Some(s) => Some(
            chrono::DateTime::parse_from_rfc3339(s)
                .map_err(|e| {
                    A2aError::invalid("statusTimestampAfter", format!("is not RFC 3339: {e}"))
                })?
                .with_timezone(&chrono::Utc),
        ),
    };
    Ok(ListTasksRequest {
        context_id: opt_str(o, "contextId", "")?.map(Into::into),
        status,
        page_size: opt_int(o, "pageSize", "", 1, 100)?,
        page_token: opt_str(o, "pageToken", "")?.map(Into::into),
        history_length: opt_int(o, "historyLength", "", 0, i32::MAX as i64)?,
        status_timestamp_after,
        include_artifacts: opt_bool(o, "includeArtifacts", "")?,
        tenant: opt_str(o, "tenant", "")?.map(Into::into),
    })
}

fn state_from_number(n: Option<i64>) -> Option<TaskState> {
    Some(match n? {
        0 => TaskState::Unspecified,
        1 => TaskState::Submitted,
        2 => TaskState::Working,
        3 => TaskState::Completed,
        4 => TaskState::Failed,
        5 => TaskState::Canceled,
        6 => TaskState::InputRequired,
        7 => TaskState::Rejected,
        8 => TaskState::AuthRequired,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn field(e: A2aError) -> String {
        match e {
            A2aError::InvalidParams { field, .. } => field,
            other => panic!("expected InvalidParams, got {other:?}"),
        }
    }

    fn ok_msg() -> Value {
        json!({"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]})
    }

    #[test]
    fn send_message_accepts_the_spec_example() {
        let r = send_message(&json!({"tenant": "t1", "message": ok_msg(),
            "configuration": {"acceptedOutputModes": ["text/plain"], "historyLength": "2"}, "metadata": {}}))
        .unwrap();
        assert_eq!(r.tenant.as_deref(), Some("t1"));
        assert_eq!(r.configuration.unwrap().history_length, Some(2));
        // enum number for the role
        let mut m = ok_msg();
        m["role"] = json!(1);
        assert!(send_message(&json!({"message": m})).is_ok());
    }

    #[test]
    fn send_message_names_the_bad_field() {
        let cases = [
            (json!({}), "message"),
            (
                json!({"message": {"role": "ROLE_USER", "parts": [{"text": "x"}]}}),
                "message.messageId",
            ),
            (
                json!({"message": {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "x"}]}}),
                "message.role",
            ),
            (
                json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": []}}),
                "message.parts",
            ),
            (
                json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "a"}, {"text": "b", "data": {}}]}}),
                "message.parts[1]",
            ),
            (
                json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"raw": "!!"}]}}),
                "message.parts[0].raw",
            ),
            (
                json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "a", "mediaType": "plain"}]}}),
                "message.parts[0].mediaType",
            ),
            (
                json!({"message": ok_msg(), "configuration": {"historyLength": -1}}),
                "configuration.historyLength",
            ),
            (json!({"message": ok_msg(), "tenant": 5}), "tenant"),
            (json!([1]), "params"),
        ];
        for (params, want) in cases {
            assert_eq!(field(send_message(&params).unwrap_err()), want, "{params}");
        }
    }

    #[test]
    fn push_config_in_send_is_push_not_supported() {
        let e = send_message(&json!({"message": ok_msg(),
            "configuration": {"taskPushNotificationConfig": {"url": "https://x"}}}))
        .unwrap_err();
        assert_eq!(e, A2aError::PushNotificationNotSupported);
    }

    #[test]
    fn list_tasks_checks_ranges_and_enums() {
        assert_eq!(
            field(list_tasks(&json!({"pageSize": 0})).unwrap_err()),
            "pageSize"
        );
        assert_eq!(
            field(list_tasks(&json!({"pageSize": "101"})).unwrap_err()),
            "pageSize"
        );
        assert_eq!(
            field(list_tasks(&json!({"status": "DONE"})).unwrap_err()),
            "status"
        );
        assert_eq!(
            field(list_tasks(&json!({"statusTimestampAfter": "yesterday"})).unwrap_err()),
            "statusTimestampAfter"
        );
        let r =
            list_tasks(&json!({"status": 3, "includeArtifacts": "true", "pageSize": "5"})).unwrap();
        assert_eq!(r.status, Some(TaskState::Completed));
        assert_eq!(r.include_artifacts, Some(true));
        assert_eq!(r.page_size, Some(5));
        assert!(list_tasks(&Value::Null).is_ok());
    }

    #[test]
    fn task_ids_are_required() {
        assert_eq!(field(get_task(&json!({})).unwrap_err()), "id");
        assert_eq!(field(cancel_task(&json!({"id": ""})).unwrap_err()), "id");
        assert_eq!(
            field(subscribe_to_task(&json!({"id": 3})).unwrap_err()),
            "id"
        );
        assert_eq!(
            field(get_task(&json!({"id": "t", "historyLength": "x"})).unwrap_err()),
            "historyLength"
        );
    }
}
