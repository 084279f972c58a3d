//! 0.3 JSON-RPC errors as 1.0 errors (pure, no I/O).
//!
//! 0.3 and 1.0 share the codes -32001..-32007 (0.3's -32007 is
//! `AuthenticatedExtendedCardNotConfiguredError`, 1.0's `ExtendedAgentCardNotConfiguredError`) and
//! the JSON-RPC ones; 1.0 adds a `google.rpc.ErrorInfo` in `data` (an array), where 0.3's `data`
//! was free-form. So a known code keeps its number and gains the ErrorInfo a 1.0 agent would send
//! (domain `a2a-protocol.org`: the agent's error, not the gateway's), the agent's `message` is
//! copied as written, and its free-form `data` is left out (no 1.0 reader expects it).
//!
//! Two rules are not a copy:
//! - **-32008/-32009** do not exist in 0.3: an agent that sends them means something of its own
//!   (0.3 leaves -32000..-32099 to servers), not 1.0's ExtensionSupportRequired or
//!   VersionNotSupported, which the gateway acts on (stale mark, refresh and retry). They become
//!   InternalError (-32603) with the agent's code in the ErrorInfo's metadata (`agentCode`).
//!   Any other code 0.3 does not define passes with its number and message, without ErrorInfo.
//! - **-32603 on a stream** whose message says streaming is not supported is what Python
//!   `a2a-sdk` 0.3.26 answers `message/stream` with when the agent does not stream (JS 0.3 uses
//!   -32004). The gateway decides the downgrade from the card's `capabilities.streaming` first
//!   (a card without it is never sent a stream); this rule covers only an agent whose card says
//!   it streams and whose server refuses anyway: it becomes -32004 UnsupportedOperationError, the
//!   refusal the gateway's refused-stream downgrade acts on. Any other -32603 stays InternalError.

use serde_json::value::RawValue;

use super::raw::{Obj, Out, text};
use super::{Op, TranslateError};

/// The ErrorInfo `@type`.
const ERROR_INFO: &str = "type.googleapis.com/google.rpc.ErrorInfo";

/// The A2A ErrorInfo domain.
const DOMAIN: &str = "a2a-protocol.org";

/// The 1.0 reason of a code both versions share.
fn reason(code: i64) -> Option<&'static str> {
    Some(match code {
        -32001 => "TASK_NOT_FOUND",
        -32002 => "TASK_NOT_CANCELABLE",
        -32003 => "PUSH_NOTIFICATION_NOT_SUPPORTED",
        -32004 => "UNSUPPORTED_OPERATION",
        -32005 => "CONTENT_TYPE_NOT_SUPPORTED",
        -32006 => "INVALID_AGENT_RESPONSE",
        -32007 => "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
        -32700 => "PARSE_ERROR",
        -32600 => "INVALID_REQUEST",
        -32601 => "METHOD_NOT_FOUND",
        -32602 => "INVALID_PARAMS",
        -32603 => "INTERNAL_ERROR",
        _ => return None,
    })
}

/// Whether an agent's error message is Python a2a-sdk 0.3.26's refusal of a stream ("Streaming
/// is not supported by the agent", `tests/fixtures/wire/v03/python-jsonrpc-stream-refused.json`),
/// case aside. Only that sentence: a looser match ("upstream … not supported") would turn an
/// ordinary internal error into a downgrade, a stale mark and streaming switched off.
pub fn says_streaming_unsupported(message: &str) -> bool {
    message
        .trim()
        .to_ascii_lowercase()
        .starts_with("streaming is not supported")
}

/// The ErrorInfo array of `reason`, with `metadata` (JSON object text) when given.
fn details(reason: &str, metadata: Option<String>) -> Out<'static> {
    let mut s = format!(r#"[{{"@type":"{ERROR_INFO}","reason":"{reason}","domain":"{DOMAIN}""#);
    if let Some(m) = metadata {
        s.push_str(",\"metadata\":");
        s.push_str(&m);
    }
    s.push_str("}]");
    Out::Owned(s)
}

/// A 0.3 error object answering `op` → the 1.0 error object.
pub(super) fn error_to10<'a>(op: Op, raw: &'a RawValue) -> Result<Out<'a>, TranslateError> {
    let f = "error";
    let e = Obj::parse(raw, f)?;
    let code: i64 = e
        .get("code")
        .and_then(|c| c.get().parse().ok())
        .ok_or_else(|| TranslateError::untranslatable("error.code", "is not an integer"))?;
    let message = e
        .get("message")
        .ok_or_else(|| TranslateError::untranslatable("error.message", "is required"))?;
    let said = text(message, "error.message")?;
    // A refused resubscription is no reason to resend anything: only a refused stream is.
    let streams = op == Op::SendStreamingMessage;
    let (code, data) = match code {
        -32603 if streams && says_streaming_unsupported(&said) => {
            (-32004, reason(-32004).map(|r| details(r, None)))
        }
        -32008 | -32009 => (
            -32603,
            Some(details(
                "INTERNAL_ERROR",
                Some(format!(r#"{{"agentCode":"{code}"}}"#)),
            )),
        ),
        c => (c, reason(c).map(|r| details(r, None))),
    };
    Ok(Out::Obj(vec![
        ("code", Some(Out::Owned(code.to_string()))),
        ("message", Some(Out::Raw(message))),
        ("data", data),
    ]))
}
