//! Reading agent answers: A2A error detection for stale marks and the refused-stream retry, and
//! SSE framing of a one-event downgrade (pure, no I/O).

use bytes::Bytes;
use serde_json::Value;

use crate::profile::Binding;
use crate::profile::snapshot::StaleCause;

/// The A2A error an agent answered with, when the answer is one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentError {
    /// JSON-RPC code (HTTP+JSON errors carry none: 0).
    pub code: i64,
    /// `ErrorInfo.reason` (A2A domain), when present.
    pub reason: Option<String>,
}

impl AgentError {
    /// The stale cause this error signals, if any.
    pub fn stale_cause(&self) -> Option<StaleCause> {
        StaleCause::from_code(self.code)
            .or_else(|| self.reason.as_deref().and_then(StaleCause::from_reason))
    }

    /// Whether it is UnsupportedOperationError (-32004 / `UNSUPPORTED_OPERATION`).
    pub fn is_unsupported_operation(&self) -> bool {
        self.stale_cause() == Some(StaleCause::UnsupportedOperation)
    }
}

fn first_reason(details: Option<&Value>) -> Option<String> {
    details?
        .as_array()?
        .iter()
        .find_map(|d| d.get("reason").and_then(Value::as_str))
        .map(str::to_owned)
}

/// Parses an agent's answer as an A2A error: a JSON-RPC `error` member (any HTTP status), or an
/// HTTP+JSON `google.rpc.Status` body with a status of 400 or more.
pub fn agent_error(binding: Binding, status: u16, body: &[u8]) -> Option<AgentError> {
    // Every answer passes here: skip the parse unless an `"error"` member can be present.
    if !body.windows(7).any(|w| w == b"\"error\"") {
        return None;
    }
    let v: Value = serde_json::from_slice(body).ok()?;
    match binding {
        Binding::JsonRpc => {
            let e = v.get("error")?;
            Some(AgentError {
                code: e.get("code").and_then(Value::as_i64).unwrap_or(0),
                reason: first_reason(e.get("data")),
            })
        }
        Binding::HttpJson => {
            if status < 400 {
                return None;
            }
            let e = v.get("error")?;
            Some(AgentError {
                code: 0,
                reason: first_reason(e.get("details")),
            })
        }
    }
}

/// Whether a `SendMessage` answer succeeded: a 2xx and, for JSON-RPC, a `result` and no `error`.
pub fn send_succeeded(binding: Binding, status: u16, body: &[u8]) -> bool {
    if !(200..300).contains(&status) {
        return false;
    }
    match binding {
        Binding::HttpJson => true,
        Binding::JsonRpc => serde_json::from_slice::<Value>(body)
            .ok()
            .is_some_and(|v| v.get("result").is_some() && v.get("error").is_none()),
    }
}

/// One SSE event carrying `json` unchanged: each line of the body becomes a `data:` line (SSE joins
/// them with newlines again), so the bytes need no re-serialisation. A `SendMessage` answer is a
/// valid `SendStreamingMessage` event as is (`{task}`/`{message}` is a StreamResponse, FACTS §11).
pub fn sse_event(json: &[u8]) -> Bytes {
    let text = String::from_utf8_lossy(json);
    let mut out = String::with_capacity(json.len() + 16);
    for line in text.trim_end().split('\n') {
        out.push_str("data: ");
        out.push_str(line.trim_end_matches('\r'));
        out.push('\n');
    }
    out.push('\n');
    Bytes::from(out)
}

/// Rewrites a JSON-RPC `SendStreamingMessage` request into `SendMessage` (same params, FACTS §11).
pub fn as_send_message(mut body: Value) -> Value {
    if let Some(o) = body.as_object_mut() {
        o.insert("method".into(), Value::String("SendMessage".into()));
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn jsonrpc_errors() {
        let b = json!({"jsonrpc":"2.0","id":1,"error":{"code":-32004,"message":"Streaming is not supported","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"UNSUPPORTED_OPERATION","domain":"a2a-protocol.org"}]}}).to_string();
        let e = agent_error(Binding::JsonRpc, 200, b.as_bytes()).unwrap();
        assert!(e.is_unsupported_operation());
        let b = json!({"jsonrpc":"2.0","id":1,"error":{"code":-32009,"message":"v"}}).to_string();
        assert_eq!(
            agent_error(Binding::JsonRpc, 200, b.as_bytes())
                .unwrap()
                .stale_cause(),
            Some(StaleCause::VersionNotSupported)
        );
        let ok = json!({"jsonrpc":"2.0","id":1,"result":{"task":{}}}).to_string();
        assert_eq!(agent_error(Binding::JsonRpc, 200, ok.as_bytes()), None);
        assert!(send_succeeded(Binding::JsonRpc, 200, ok.as_bytes()));
        assert!(!send_succeeded(Binding::JsonRpc, 200, b.as_bytes()));
    }

    #[test]
    fn rest_errors() {
        let b = json!({"error":{"code":400,"status":"FAILED_PRECONDITION","message":"m","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"EXTENSION_SUPPORT_REQUIRED","domain":"a2a-protocol.org"}]}}).to_string();
        assert_eq!(
            agent_error(Binding::HttpJson, 400, b.as_bytes())
                .unwrap()
                .stale_cause(),
            Some(StaleCause::ExtensionSupportRequired)
        );
        assert_eq!(agent_error(Binding::HttpJson, 200, b.as_bytes()), None);
        assert!(!send_succeeded(Binding::HttpJson, 400, b.as_bytes()));
    }

    #[test]
    fn sse_framing_keeps_bytes() {
        assert_eq!(&sse_event(b"{\"a\":1}\n")[..], b"data: {\"a\":1}\n\n");
        assert_eq!(
            &sse_event(b"{\r\n \"a\": 1\r\n}")[..],
            b"data: {\ndata:  \"a\": 1\ndata: }\n\n"
        );
        let v = as_send_message(
            json!({"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{}}),
        );
        assert_eq!(v["method"], "SendMessage");
    }
}
