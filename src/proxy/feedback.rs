//! Reading agent answers: A2A error detection for stale marks and the refused-stream retry, and
//! SSE framing of a one-event downgrade (pure, no I/O). The answer is read without a tree
//! (`read`): these checks run on every answer that mentions `"error"` and on every downgrade.

mod read;

use bytes::Bytes;

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

/// Parses an agent's answer as an A2A error: a JSON-RPC `error` member (any HTTP status), or an
/// HTTP+JSON `google.rpc.Status` body with a status of 400 or more.
pub fn agent_error(binding: Binding, status: u16, body: &[u8]) -> Option<AgentError> {
    // Every answer passes here: skip the parse unless an `"error"` member can be present.
    if !body.windows(7).any(|w| w == b"\"error\"") {
        return None;
    }
    match binding {
        Binding::JsonRpc => {
            let e = read::read(body, "data")?.error?;
            Some(AgentError {
                code: e.code.unwrap_or(0),
                reason: e.reason,
            })
        }
        Binding::HttpJson => {
            if status < 400 {
                return None;
            }
            let e = read::read(body, "details")?.error?;
            Some(AgentError {
                code: 0,
                reason: e.reason,
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
    // Any JSON passes over HTTP+JSON, as it did when this was a `Value`; the `list` is not read.
    let Some(a) = read::read(body, "data") else {
        return false;
    };
    match binding {
        Binding::HttpJson => true,
        Binding::JsonRpc => a.object && a.result && a.error.is_none(),
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
    use serde_json::{Value, json};

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

    /// The readings of `agent_error` and `send_succeeded` as they were with a `Value` tree: the
    /// oracle the tree-free pass is held to.
    fn by_tree(binding: Binding, status: u16, body: &[u8]) -> (Option<AgentError>, bool) {
        fn first_reason(details: Option<&Value>) -> Option<String> {
            details?
                .as_array()?
                .iter()
                .find_map(|d| d.get("reason").and_then(Value::as_str))
                .map(str::to_owned)
        }
        let Ok(v) = serde_json::from_slice::<Value>(body) else {
            return (None, false);
        };
        let list = if binding == Binding::JsonRpc {
            "data"
        } else {
            "details"
        };
        let error = v.get("error").map(|e| AgentError {
            code: match binding {
                Binding::JsonRpc => e.get("code").and_then(Value::as_i64).unwrap_or(0),
                _ => 0,
            },
            reason: first_reason(e.get(list)),
        });
        let mentioned = body.windows(7).any(|w| w == b"\"error\"");
        let error = error.filter(|_| mentioned && (binding == Binding::JsonRpc || status >= 400));
        let ok = (200..300).contains(&status)
            && match binding {
                Binding::HttpJson => true,
                _ => v.get("result").is_some() && v.get("error").is_none(),
            };
        (error, ok)
    }

    #[test]
    fn the_pass_without_a_tree_reads_answers_as_the_tree_did() {
        let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
        let deep_result = format!(r#"{{"result":{deep},"error":1}}"#);
        let deep_reason = format!(r#"{{"error":{{"data":[{{"reason":"A"}},{deep}]}}}}"#);
        let cases: Vec<&[u8]> = vec![
            // `null` is present; a top-level array is no object (derive would read it by position).
            br#"{"result":null}"#,
            br#"{"error":null}"#,
            br#"[{"result":1},null]"#,
            br#"["result","error"]"#,
            br#"{"result":1,"error":null}"#,
            // The last of a repeated key counts.
            br#"{"error":{"code":1},"error":{"message":"m"}}"#,
            br#"{"error":{"code":-32004,"code":"x"}}"#,
            br#"{"error":{"code":"x","code":-32004,"data":[{"reason":"A","reason":7}]}}"#,
            br#"{"error":{"data":[{"reason":"A"}],"data":{"reason":"B"}}}"#,
            // Codes as `as_i64` reads them.
            br#"{"error":{"code":9223372036854775807}}"#,
            br#"{"error":{"code":9223372036854775808}}"#,
            br#"{"error":{"code":-32004.0}}"#,
            br#"{"error":{"code":-0}}"#,
            br#"{"error":{"code":1e2}}"#,
            // The first string reason of the objects in the list.
            br#"{"error":{"code":-32009,"data":[1,[{"reason":"A"}],{"reason":null},{"reason":"B"},{"reason":"C"}]}}"#,
            br#"{"error":{"details":[{"reason":"EXTENSION_SUPPORT_REQUIRED"}],"data":[{"reason":"VERSION_NOT_SUPPORTED"}]}}"#,
            br#"{"error":"error"}"#,
            br#"{"error":0,"\u0065rror":{"c\u006fde":-32004,"data":[{"re\u0061son":"UNSUPPORTED_\u004fPERATION"}]}}"#,
            // What `Value` refuses is refused: numbers out of range, depth, trailing text, UTF-8.
            br#"{"result":1,"x":1e400}"#,
            br#"{"error":{"code":-32004},"x":[1e400]}"#,
            deep_result.as_bytes(),
            deep_reason.as_bytes(),
            br#"{"error":{"code":-32004}} x"#,
            b"{\"error\":{\"code\":-32004},\"s\":\"\xff\"}",
            br#"{"error":{"code":-32004}"#,
            b"  {\"result\":{}}  \n",
        ];
        for body in cases {
            for binding in [Binding::JsonRpc, Binding::HttpJson] {
                for status in [200, 400] {
                    let got = (
                        agent_error(binding, status, body),
                        send_succeeded(binding, status, body),
                    );
                    assert_eq!(
                        got,
                        by_tree(binding, status, body),
                        "{binding:?} {status} {}",
                        String::from_utf8_lossy(&body[..body.len().min(80)])
                    );
                }
            }
        }
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
