//! Reading agent answers: A2A error detection for stale marks and the refused-stream retry, and
//! SSE framing of a one-event downgrade (pure, no I/O).

use bytes::Bytes;
use serde_json::Value;

use crate::profile::Binding;
use crate::state::StaleCause;

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
        // No call is sent over gRPC yet (`profile::compile`), so no such answer is parsed.
        Binding::Grpc => None,
    }
}

/// Whether a `SendMessage` answer succeeded: a 2xx with a JSON body and, for JSON-RPC, a `result`
/// and no `error`. Only such an answer is re-framed as an SSE event ([`sse_event`] relies on the
/// body being JSON).
pub fn send_succeeded(binding: Binding, status: u16, body: &[u8]) -> bool {
    if !(200..300).contains(&status) {
        return false;
    }
    let Ok(v) = serde_json::from_slice::<Value>(body) else {
        return false;
    };
    match binding {
        Binding::HttpJson => true,
        Binding::JsonRpc => v.get("result").is_some() && v.get("error").is_none(),
        // No call is sent over gRPC yet (`profile::compile`).
        Binding::Grpc => false,
    }
}

/// One SSE event carrying the JSON answer `json` on a single `data:` line. A `SendMessage` answer
/// is a valid `SendStreamingMessage` event as is (`{task}`/`{message}` is a StreamResponse, FACTS
/// §11).
///
/// The SSE format (HTML Living Standard, "Parsing an event stream") ends a line at CR, LF or CRLF,
/// so any raw CR or LF in the data would end the field (and a blank line the event) early. In
/// valid JSON, raw CR and LF can only be insignificant whitespace between tokens (inside strings
/// they must be escaped), so each is replaced by a space: every token, number and string keeps its
/// exact bytes, and the event holds exactly one line. U+2028/U+2029 are not SSE line ends and stay.
/// Without a JSON body the output still holds no raw CR or LF.
pub fn sse_event(json: &[u8]) -> Bytes {
    let trimmed = json.trim_ascii();
    let mut out = Vec::with_capacity(trimmed.len() + 8);
    out.extend_from_slice(b"data: ");
    out.extend(
        trimmed
            .iter()
            .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
    );
    out.extend_from_slice(b"\n\n");
    Bytes::from(out)
}

/// The JSON-RPC `SendStreamingMessage` request `body` as `SendMessage` (same params, FACTS §11):
/// the value of the top-level `method` member is replaced in the original bytes, so nothing else
/// (numbers beyond f64, key order, the id) is re-serialised. `None` when `body` is not a JSON
/// object with a `method` member.
pub fn as_send_message(body: &[u8]) -> Option<Bytes> {
    as_method(body, "\"SendMessage\"")
}

/// `body` with the value of its top-level `method` member replaced by `name` (JSON text), the
/// rest as it was: the 0.3 form of a downgrade sends `"message/send"`.
pub fn as_method(body: &[u8], name: &str) -> Option<Bytes> {
    use serde_json::value::RawValue;
    let members: std::collections::HashMap<std::borrow::Cow<'_, str>, &RawValue> =
        serde_json::from_slice(body).ok()?;
    let method = members.get("method")?.get().as_bytes();
    // The raw value borrows from `body`: its position there is the distance between the two.
    let start = (method.as_ptr() as usize).checked_sub(body.as_ptr() as usize)?;
    let end = start.checked_add(method.len())?;
    let (before, after) = (body.get(..start)?, body.get(end..)?);
    let mut out = Vec::with_capacity(body.len());
    out.extend_from_slice(before);
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(after);
    Some(Bytes::from(out))
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

    /// Splits an SSE stream the way the HTML standard's parser does (CR, LF and CRLF end a line;
    /// a blank line ends an event) and returns each event's data.
    fn parse_sse(stream: &[u8]) -> Vec<String> {
        let text = String::from_utf8_lossy(stream)
            .replace("\r\n", "\n")
            .replace('\r', "\n");
        let mut events = Vec::new();
        let mut data: Vec<&str> = Vec::new();
        for line in text.split('\n') {
            if line.is_empty() {
                if !data.is_empty() {
                    events.push(data.join("\n"));
                    data.clear();
                }
            } else if let Some(d) = line.strip_prefix("data:") {
                data.push(d.strip_prefix(' ').unwrap_or(d));
            }
        }
        events
    }

    #[test]
    fn sse_event_is_one_line_for_every_line_end() {
        let answers: [&[u8]; 5] = [
            b"{\"a\":1}\n",
            b"{\r\n \"a\": 1\r\n}",
            b"{\r\"a\":\r\r1}",
            b"{\n\n\"a\":\n\n1}\n\n",
            "{\"t\":\"line\u{2028}sep\u{2029}para\"}".as_bytes(),
        ];
        for json in answers {
            let framed = sse_event(json);
            assert!(framed.starts_with(b"data: ") && framed.ends_with(b"\n\n"));
            let body = &framed[..framed.len() - 2];
            assert!(
                !body.contains(&b'\r') && !body.contains(&b'\n'),
                "{framed:?}"
            );
            let events = parse_sse(&framed);
            assert_eq!(events.len(), 1, "{framed:?}");
            let got: Value = serde_json::from_str(&events[0]).unwrap();
            let want: Value = serde_json::from_slice(json).unwrap();
            assert_eq!(got, want);
        }
        // U+2028 is not an SSE line end: it stays, unescaped.
        let framed = sse_event("{\"t\":\"a\u{2028}b\"}".as_bytes());
        assert_eq!(&framed[..], "data: {\"t\":\"a\u{2028}b\"}\n\n".as_bytes());
    }

    #[test]
    fn sse_event_keeps_the_bytes_of_every_token() {
        let json = b"{\"id\":123456789012345678901234567890,\r\n\"x\":1.000000000000000000001,\"s\":\"a\\r\\nb\"}";
        assert_eq!(
            &sse_event(json)[..],
            &b"data: {\"id\":123456789012345678901234567890,  \"x\":1.000000000000000000001,\"s\":\"a\\r\\nb\"}\n\n"[..]
        );
    }

    #[test]
    fn send_message_form_changes_only_the_method() {
        let body = br#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"SendStreamingMessage","params":{"n":1.0000000000000000001,"method":"keep"}}"#;
        let out = as_send_message(body).unwrap();
        assert_eq!(
            &out[..],
            &br#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"SendMessage","params":{"n":1.0000000000000000001,"method":"keep"}}"#[..]
        );
        let spaced = b"{ \"method\" :\n \"SendStreamingMessage\" , \"id\": 1 }";
        assert_eq!(
            &as_send_message(spaced).unwrap()[..],
            b"{ \"method\" :\n \"SendMessage\" , \"id\": 1 }"
        );
        assert!(as_send_message(b"[1]").is_none());
        assert!(as_send_message(b"{\"id\":1}").is_none());
    }
}
