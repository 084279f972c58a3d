//! 0.3 errors as 1.0 errors, on either binding (pure, no I/O): a JSON-RPC error object, or an
//! HTTP+JSON error answer as the 1.0 `google.rpc.Status`.
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

use super::raw::{Doc, Obj, Out, Val, text};
use super::{Op, TranslateError};

/// The ErrorInfo `@type`.
const ERROR_INFO: &str = "type.googleapis.com/google.rpc.ErrorInfo";

/// The A2A ErrorInfo domain.
const DOMAIN: &str = "a2a-protocol.org";

/// The 1.0 errors' JSON-RPC codes and ErrorInfo reasons (FACTS §7), the one table both
/// translators read.
const CATALOGUE: [(i64, &str); 14] = [
    (-32001, "TASK_NOT_FOUND"),
    (-32002, "TASK_NOT_CANCELABLE"),
    (-32003, "PUSH_NOTIFICATION_NOT_SUPPORTED"),
    (-32004, "UNSUPPORTED_OPERATION"),
    (-32005, "CONTENT_TYPE_NOT_SUPPORTED"),
    (-32006, "INVALID_AGENT_RESPONSE"),
    (-32007, "EXTENDED_AGENT_CARD_NOT_CONFIGURED"),
    (-32008, "EXTENSION_SUPPORT_REQUIRED"),
    (-32009, "VERSION_NOT_SUPPORTED"),
    (-32700, "PARSE_ERROR"),
    (-32600, "INVALID_REQUEST"),
    (-32601, "METHOD_NOT_FOUND"),
    (-32602, "INVALID_PARAMS"),
    (-32603, "INTERNAL_ERROR"),
];

/// The 1.0 reason of a code both versions share (not -32008/-32009, which 0.3 does not define).
fn reason(code: i64) -> Option<&'static str> {
    if matches!(code, -32008 | -32009) {
        return None;
    }
    CATALOGUE.iter().find(|(c, _)| *c == code).map(|(_, r)| *r)
}

/// The 1.0 JSON-RPC code an A2A ErrorInfo `reason` names, also under the second name a2a-lf
/// reads for two of them.
pub(super) fn code_of_reason(reason: &str) -> Option<i64> {
    let reason = match reason {
        "UNSUPPORTED_CONTENT_TYPE" => "CONTENT_TYPE_NOT_SUPPORTED",
        "EXTENDED_CARD_NOT_CONFIGURED" => "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
        r => r,
    };
    CATALOGUE
        .iter()
        .find(|(_, r)| *r == reason)
        .map(|(c, _)| *c)
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

/// The ErrorInfo array a 1.0 error of `code` carries (FACTS §7: mandatory over HTTP+JSON), when
/// the code is one of the table's.
pub(super) fn info_of(code: i64) -> Option<Out<'static>> {
    CATALOGUE
        .iter()
        .find(|(c, _)| *c == code)
        .map(|(_, r)| details(r, None))
}

/// The 1.0 code and ErrorInfo of a 0.3 error `code` answering `op` with message `said` (the
/// rules of the module doc, the same on both bindings).
fn mapped(op: Op, code: i64, said: &str) -> (i64, Option<Out<'static>>) {
    // A refused resubscription is no reason to resend anything: only a refused stream is.
    let streams = op == Op::SendStreamingMessage;
    match code {
        -32603 if streams && says_streaming_unsupported(said) => {
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
    }
}

/// A 0.3 error object answering `op` → the 1.0 error object.
pub(super) fn error_to10<'a>(op: Op, raw: Val<'a>) -> Result<Out<'a>, TranslateError> {
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
    let (code, data) = mapped(op, code, &said);
    Ok(Out::Obj(vec![
        ("code", Some(Out::Owned(code.to_string()))),
        ("message", Some(Out::Raw(message.get()))),
        ("data", data),
    ]))
}

/// The HTTP status and `google.rpc.Status` code name of a 1.0 error over HTTP+JSON (A2A
/// specification's error table, FACTS §7); `None` for a code 1.0 does not define.
pub(super) fn http_of(code: i64) -> Option<(u16, &'static str)> {
    Some(match code {
        -32001 | -32601 => (404, "NOT_FOUND"),
        -32002 | -32003 | -32004 | -32007 | -32008 | -32009 => (400, "FAILED_PRECONDITION"),
        -32005 | -32700 | -32600 | -32602 => (400, "INVALID_ARGUMENT"),
        -32006 | -32603 => (500, "INTERNAL"),
        _ => return None,
    })
}

/// The 0.3 error an HTTP+JSON answer of `status` names when it carries no code: Python a2a-sdk
/// 0.3.26 sends `{"message"}` with the status of its `A2AErrorToHttpStatus` table, read back
/// here (`op` tells its two 404s apart); a body the web framework wrote (FastAPI's `{"detail"}`:
/// no A2A handler ran) says only that the route is not there (MethodNotFound, as a JSON-RPC
/// agent without the method answers: no stale mark, since a new card would not add the route),
/// or its parameters are wrong.
fn code_of_status(op: Op, status: u16, framework: bool) -> i64 {
    let push = matches!(
        op,
        Op::CreatePushConfig | Op::GetPushConfig | Op::ListPushConfigs | Op::DeletePushConfig
    );
    match (framework, status) {
        (true, 404 | 405) => -32601,
        (_, 422) => -32602,
        (true, _) => -32603,
        (false, 400) => -32600,
        (false, 404) if op == Op::GetExtendedAgentCard => -32007,
        (false, 404) => -32001,
        (false, 409) => -32002,
        (false, 415) => -32005,
        (false, 501) if push => -32003,
        (false, 501) => -32004,
        (false, 502) => -32006,
        (false, _) => -32603,
    }
}

/// A 0.3 HTTP+JSON error answer of `status` to `op` → the 1.0 one: its HTTP status and a
/// `google.rpc.Status` body with the ErrorInfo (FACTS §6). The 0.3 SDKs write no Status: JS
/// 0.3.14 sends `{"code", "message"}` with the JSON-RPC code, Python 0.3.26 `{"message"}` alone
/// (README of `tests/fixtures/wire/v03`, fact 9), FastAPI `{"detail"}` for a route it lacks.
/// `None` for a body that is none of these (an HTML page, a proxy's text): it passes as it came,
/// as from a 1.0 agent, and is judged as such.
pub(super) fn rest_error_to10(op: Op, status: u16, body: &[u8]) -> Option<(u16, String)> {
    // An error body is read up to the answer cap too: one whose tree would be over the budget
    // (or that the walk cannot read) is not parsed, and passes as it came.
    let doc = Doc::answer(std::str::from_utf8(body).ok()?, "body").ok()?;
    let e = Obj::parse(doc.root(), "body").ok()?;
    let said = e.get("message").and_then(text_of);
    let detail = e.get("detail").and_then(text_of);
    let code = match e.get("code") {
        Some(c) => c.get().parse::<i64>().ok()?,
        None if said.is_some() => code_of_status(op, status, false),
        None if e.has_key("detail") => code_of_status(op, status, true),
        None => return None,
    };
    let message = said.or(detail);
    let (code, info) = mapped(op, code, message.as_ref().map_or("", |(_, t)| t.as_str()));
    let (http, name) = http_of(code).unwrap_or((status, "UNKNOWN"));
    let error = Out::Obj(vec![
        ("code", Some(Out::Owned(http.to_string()))),
        ("status", Some(Out::Lit(quoted_status(name)))),
        ("message", message.map(|(raw, _)| Out::Raw(raw.get()))),
        ("details", info),
    ]);
    Some((http, Out::Obj(vec![("error", Some(error))]).to_json()))
}

/// A JSON string's raw text and its value.
fn text_of(raw: Val<'_>) -> Option<(Val<'_>, String)> {
    text(raw, "").ok().map(|t| (raw, t.into_owned()))
}

/// A `google.rpc.Code` name as JSON text.
fn quoted_status(name: &str) -> &'static str {
    match name {
        "NOT_FOUND" => "\"NOT_FOUND\"",
        "FAILED_PRECONDITION" => "\"FAILED_PRECONDITION\"",
        "INVALID_ARGUMENT" => "\"INVALID_ARGUMENT\"",
        "INTERNAL" => "\"INTERNAL\"",
        _ => "\"UNKNOWN\"",
    }
}
