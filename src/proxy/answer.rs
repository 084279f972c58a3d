//! Whether an agent's answer is an A2A answer at all, and how an answer in a `Content-Encoding`
//! the gateway did not ask for is read (pure, no I/O).
//!
//! The gateway asks every agent for `identity`. What it accepts back, by kind of answer:
//!
//! - **A whole answer** (read into memory, at most the client's answer cap): gzip and deflate are
//!   decoded, never past that same cap, so a decompression bomb costs no more memory than a
//!   plain answer of the cap's size; any other coding (br, zstd, compress, two codings stacked)
//!   is [`Invalid::Encoding`]. The decoded body is then judged by [`check_whole`]:
//!   - 2xx: the binding's answer. JSON-RPC: one JSON-RPC 2.0 response object (`"jsonrpc":"2.0"`,
//!     exactly one of `result` and `error`, an `error` with an integer `code`) whose `id` is the
//!     request's (an error may carry `null`, as JSON-RPC allows when the id could not be read).
//!     HTTP+JSON: a JSON object; a 204 may be empty (a deleted push config).
//!   - 3xx: never an A2A answer (and the gateway follows no redirect): [`Invalid::Redirect`].
//!   - 4xx/5xx: the agent's error, passed on when its body is JSON (a JSON-RPC envelope among
//!     them is held to the same id rule). A body that is not JSON — a proxy's HTML page, an empty
//!     404 — is the agent's failure too, except for the statuses that are a complete answer at the
//!     HTTP level whatever the body: 401/403 (authentication, outside A2A's error table),
//!     429 and 503 (load shedding, with `Retry-After`), 408 and 413 (the request took too long or
//!     was too large for a server in front of the agent), 502 and 504 (a load balancer's page for
//!     an agent that is down or slow), passed on as they are: callers' retry logic reads the
//!     status, and it is the only thing such a page says.
//! - **A large answer** (over the held size, passed on as it arrives): only over HTTP+JSON and
//!   when its header says JSON (`application/json`, `application/a2a+json`, any `+json`) in
//!   `identity` ([`passes_unread`]); any other large answer, every JSON-RPC one among them (its
//!   `id` must be checked), is read whole like a small one and judged the same way, within the
//!   same cap.
//! - **An empty body** under gzip or deflate (a 204, an error with a coding header) has nothing
//!   to decode and is judged as the empty body it is.
//! - **A stream**: `identity` only ([`Invalid::Encoding`] otherwise, before anything reached the
//!   caller: decoding SSE incrementally would buy nothing an agent that was asked for `identity`
//!   needs). Each event's data is judged like a 2xx body ([`check_event`]).
//!
//! Every [`Invalid`] is answered to the caller as InvalidAgentResponseError (-32006,
//! `INVALID_AGENT_RESPONSE`), counted with its [`Invalid::as_str`] label, and marks the profile
//! stale unless it is a server error's body ([`Invalid::marks_stale`]).

use std::io::Read;

use bytes::Bytes;
use http::HeaderMap;
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::profile::Binding;

mod ids;
pub use ids::TaskIds;

/// Statuses that are a whole answer at the HTTP level whatever their body says (see the module
/// documentation): passed on even when the body is not JSON.
const HTTP_LEVEL: [u16; 8] = [401, 403, 408, 413, 429, 502, 503, 504];

/// Why an answer is not an A2A answer. The label ([`Invalid::as_str`]) is bounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
pub enum Invalid {
    /// The body is not JSON (HTML, text, empty where JSON is due).
    #[error("the body is not JSON")]
    NotJson,
    /// The body is JSON that ends early.
    #[error("the body is JSON cut short")]
    Truncated,
    /// A JSON-RPC response whose `id` is not the request's.
    #[error("the JSON-RPC response's id is not the request's")]
    IdMismatch,
    /// JSON, but not a JSON-RPC 2.0 response object.
    #[error("the body is not a JSON-RPC 2.0 response object")]
    NotJsonRpc,
    /// HTTP+JSON: JSON, but not an object.
    #[error("the body is not a JSON object")]
    NotObject,
    /// A `Content-Encoding` the gateway does not read, or a body that does not decode.
    #[error("the answer's Content-Encoding is not identity, gzip or deflate, or does not decode")]
    Encoding,
    /// A redirect (3xx).
    #[error("the agent answered with a redirect")]
    Redirect,
    /// An A2A 0.3 answer that does not translate into 1.0 (a member its version requires is
    /// missing or of the wrong type, an unknown task state or part kind, a duplicate key).
    #[error("the A2A 0.3 answer does not translate into A2A 1.0")]
    Untranslatable,
    /// An answer whose tree would take `mib` MiB, more than [`crate::json::TREE_BUDGET`], to read
    /// (the translator measures it first).
    #[error(
        "the answer would take {mib} MiB to read, over the {} MiB the gateway holds per answer",
        crate::json::TREE_BUDGET >> 20
    )]
    TooLarge {
        /// The bound of [`crate::json::tree_bound`], in MiB.
        mib: usize,
    },
}

impl Invalid {
    /// Every kind (for pre-registering metric series).
    pub const ALL: [Invalid; 9] = [
        Invalid::NotJson,
        Invalid::Truncated,
        Invalid::IdMismatch,
        Invalid::NotJsonRpc,
        Invalid::NotObject,
        Invalid::Encoding,
        Invalid::Redirect,
        Invalid::Untranslatable,
        // The kind; its size is the answer's.
        Invalid::TooLarge { mib: 0 },
    ];

    /// Bounded label (metric `reason`, ErrorInfo metadata).
    pub fn as_str(self) -> &'static str {
        match self {
            Invalid::NotJson => "not_json",
            Invalid::Truncated => "truncated",
            Invalid::IdMismatch => "id_mismatch",
            Invalid::NotJsonRpc => "not_jsonrpc",
            Invalid::NotObject => "not_object",
            Invalid::Encoding => "encoding",
            Invalid::Redirect => "redirect",
            Invalid::Untranslatable => "untranslatable",
            Invalid::TooLarge { .. } => "too_large",
        }
    }

    /// Whether an answer of HTTP `status` that is invalid this way marks the profile stale: a
    /// 2xx/3xx/4xx that is not A2A says the interface in the card may no longer be the agent's
    /// (moved, replaced by a web page, a different protocol), which a refresh can find out; a
    /// 5xx's page says the agent is failing, which a new card would not change.
    pub fn marks_stale(self, status: u16) -> bool {
        // A new card would not make an answer smaller.
        status < 500 && !matches!(self, Invalid::TooLarge { .. })
    }
}

/// A `Content-Encoding` the gateway reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// None, or `identity`.
    Identity,
    /// `gzip` (or `x-gzip`).
    Gzip,
    /// `deflate` (zlib-wrapped as RFC 9110 says, or raw as some servers send it).
    Deflate,
}

/// The answer's coding: one of [`Encoding`], or [`Invalid::Encoding`] for anything else, two
/// codings stacked included (`identity` entries aside).
pub fn encoding(headers: &HeaderMap) -> Result<Encoding, Invalid> {
    let mut found = Encoding::Identity;
    for v in headers.get_all(http::header::CONTENT_ENCODING) {
        let v = v.to_str().map_err(|_| Invalid::Encoding)?;
        for coding in v.split(',').map(str::trim).filter(|c| !c.is_empty()) {
            let this = match coding.to_ascii_lowercase().as_str() {
                "identity" => continue,
                "gzip" | "x-gzip" => Encoding::Gzip,
                "deflate" => Encoding::Deflate,
                _ => return Err(Invalid::Encoding),
            };
            if found != Encoding::Identity {
                return Err(Invalid::Encoding);
            }
            found = this;
        }
    }
    Ok(found)
}

/// A decoded body, or the fact that it grew past the cap.
#[derive(Debug, PartialEq, Eq)]
pub enum Decoded {
    /// The decoded bytes (the input itself for `identity`).
    Body(Bytes),
    /// Decoding went past `limit` bytes (and stopped there).
    TooLarge,
}

/// Decodes `body` in coding `enc`, never holding more than `limit` decoded bytes. An empty body
/// (a 204, an error with a coding header and nothing after it) has nothing to decode and is
/// passed on as it is.
pub fn decode(enc: Encoding, body: Bytes, limit: usize) -> Result<Decoded, Invalid> {
    if body.is_empty() {
        return Ok(Decoded::Body(body));
    }
    let out = match enc {
        Encoding::Identity => return Ok(Decoded::Body(body)),
        Encoding::Gzip => bounded(flate2::read::MultiGzDecoder::new(&body[..]), limit),
        Encoding::Deflate => bounded(flate2::read::ZlibDecoder::new(&body[..]), limit)
            .or_else(|_| bounded(flate2::read::DeflateDecoder::new(&body[..]), limit)),
    }?;
    Ok(if out.len() <= limit {
        Decoded::Body(Bytes::from(out))
    } else {
        Decoded::TooLarge
    })
}

/// First size of the decoding buffer, bytes (it doubles from there, up to the cap).
const DECODE_START: usize = 16 * 1024;

/// Reads `r` to its end or to `limit + 1` bytes, whichever comes first. The buffer grows by
/// doubling but never past `limit + 1`, so a bomb costs the cap and not twice it (as
/// `read_to_end`'s amortised growth would).
fn bounded(mut r: impl Read, limit: usize) -> Result<Vec<u8>, Invalid> {
    let max = limit.saturating_add(1);
    let mut out = Vec::new();
    let mut filled = 0;
    loop {
        if filled == out.len() {
            if filled >= max {
                break;
            }
            let grow = filled.max(DECODE_START).min(max - filled);
            out.reserve_exact(grow);
            out.resize(filled + grow, 0);
        }
        match r.read(&mut out[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return Err(Invalid::Encoding),
        }
    }
    out.truncate(filled);
    Ok(out)
}

/// Whether a large answer may go to the caller unread: its header says JSON, in `identity`.
pub fn passes_unread(headers: &HeaderMap) -> bool {
    encoding(headers) == Ok(Encoding::Identity) && is_json_type(headers)
}

/// Whether the `Content-Type` is JSON (`application/json`, `application/a2a+json`, any `+json`).
fn is_json_type(headers: &HeaderMap) -> bool {
    let Some(v) = headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let essence = v
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

/// Judges a whole answer of HTTP `status` (see the module documentation); `id` is the JSON
/// text of the JSON-RPC request's id. With `ids`, a 2xx answer's task and context ids come
/// back, read in the same pass ([`TaskIds`]; without, the answer is skimmed as before, which
/// costs less); an error answer names none.
pub fn check_whole<'b>(
    binding: Binding,
    id: Option<&str>,
    status: u16,
    body: &'b [u8],
    ids: bool,
) -> Result<TaskIds<'b>, Invalid> {
    match status {
        200..=299
            if status == 204 && body.trim_ascii().is_empty() && binding == Binding::HttpJson =>
        {
            Ok(TaskIds::default())
        }
        200..=299 => check_event(binding, id, body, ids),
        300..=399 => Err(Invalid::Redirect),
        400..=599 => check_error(binding, id, status, body).map(|()| TaskIds::default()),
        _ => Err(Invalid::NotJson),
    }
}

/// Judges one 2xx body or SSE event's data: the binding's answer (see [`check_whole`]), and
/// with `ids` the task and context ids it names (the JSON-RPC `result`'s, or the HTTP+JSON
/// body's).
pub fn check_event<'b>(
    binding: Binding,
    id: Option<&str>,
    data: &'b [u8],
    ids: bool,
) -> Result<TaskIds<'b>, Invalid> {
    match binding {
        Binding::JsonRpc if ids => check_rpc::<TaskIds<'b>>(id, data, false),
        Binding::JsonRpc => check_rpc::<&RawValue>(id, data, false),
        Binding::HttpJson if ids => {
            let trimmed = data.trim_ascii();
            if trimmed.is_empty() {
                return Err(Invalid::NotJson);
            }
            let ids = serde_json::from_slice::<TaskIds<'b>>(trimmed).map_err(syntax)?;
            (trimmed.first() == Some(&b'{'))
                .then_some(ids)
                .ok_or(Invalid::NotObject)
        }
        Binding::HttpJson => {
            let v = json_syntax(data)?;
            v.then(TaskIds::default).ok_or(Invalid::NotObject)
        }
        // No call is sent over gRPC yet (`profile::compile` makes such a profile unusable), so
        // no gRPC answer reaches this check; were one to, it is not an answer the gateway reads.
        Binding::Grpc => Err(Invalid::NotJson),
    }
}

/// An error answer (4xx/5xx): JSON passes (a JSON-RPC envelope held to the id rule); anything
/// else only for the [`HTTP_LEVEL`] statuses.
fn check_error(
    binding: Binding,
    id: Option<&str>,
    status: u16,
    body: &[u8],
) -> Result<(), Invalid> {
    match json_syntax(body) {
        Ok(true) if binding == Binding::JsonRpc && has_jsonrpc_member(body) => {
            check_rpc::<&RawValue>(id, body, true).map(drop)
        }
        Ok(_) => Ok(()),
        Err(_) if HTTP_LEVEL.contains(&status) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Whether a whole answer that passed [`check_whole`] is a JSON-RPC response (every 2xx JSON-RPC
/// answer, and an error answer with a `jsonrpc` member): the answers a 0.3 agent's translation
/// reads. Other error bodies (an HTTP-level 401 or 502 page) pass as they came, as from a 1.0 agent.
pub fn carries_rpc(status: u16, body: &[u8]) -> bool {
    (200..300).contains(&status) || (json_syntax(body) == Ok(true) && has_jsonrpc_member(body))
}

/// Whether `data` is one JSON value (`true` when it is an object); empty is not JSON.
fn json_syntax(data: &[u8]) -> Result<bool, Invalid> {
    let trimmed = data.trim_ascii();
    if trimmed.is_empty() {
        return Err(Invalid::NotJson);
    }
    serde_json::from_slice::<serde::de::IgnoredAny>(trimmed).map_err(syntax)?;
    Ok(trimmed.first() == Some(&b'{'))
}

fn syntax(e: serde_json::Error) -> Invalid {
    match e.classify() {
        serde_json::error::Category::Eof => Invalid::Truncated,
        _ => Invalid::NotJson,
    }
}

fn has_jsonrpc_member(body: &[u8]) -> bool {
    serde_json::from_slice::<RpcAnswer<'_, &RawValue>>(body).is_ok_and(|a| a.jsonrpc.is_some())
}

/// The members of a JSON-RPC response that matter here, borrowed from the body (no copy, no
/// map): each is `Some` when present, `null` included. A member that appears twice is an error.
#[derive(Deserialize)]
#[serde(bound(deserialize = "R: Deserialize<'de>, 'de: 'a"))]
struct RpcAnswer<'a, R> {
    #[serde(borrow, default, deserialize_with = "present")]
    jsonrpc: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    /// Skimmed (`&RawValue`) or read for its task and context ids in the same pass
    /// ([`TaskIds`]); any value, `null` too, is present.
    #[serde(default, deserialize_with = "present_as")]
    result: Option<R>,
    #[serde(borrow, default, deserialize_with = "present")]
    error: Option<&'a RawValue>,
}

/// A member that is present, whatever its value (`null` too, which `Option` alone would lose).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// [`present`] for the `result`, as `R` reads it.
fn present_as<'de, D: serde::Deserializer<'de>, R: Deserialize<'de>>(
    d: D,
) -> Result<Option<R>, D::Error> {
    R::deserialize(d).map(Some)
}

/// What a `result` read as `R` says of its ids.
trait ResultIds<'a> {
    fn into_ids(self) -> TaskIds<'a>;
}

impl<'a> ResultIds<'a> for &RawValue {
    fn into_ids(self) -> TaskIds<'a> {
        TaskIds::default()
    }
}

impl<'a> ResultIds<'a> for TaskIds<'a> {
    fn into_ids(self) -> TaskIds<'a> {
        self
    }
}

/// The `error` member's one required fact here: an integer `code` (read, so that an error
/// without one, or with a code that is not an integer, is not a JSON-RPC error).
#[derive(Deserialize)]
struct RpcErrorObject {
    code: i64,
}

/// A JSON-RPC 2.0 response object whose id is `id` (an error may carry `null`).
fn check_rpc<'b, R: Deserialize<'b> + ResultIds<'b>>(
    id: Option<&str>,
    data: &'b [u8],
    error_status: bool,
) -> Result<TaskIds<'b>, Invalid> {
    let data = data.trim_ascii();
    if data.is_empty() {
        return Err(Invalid::NotJson);
    }
    let answer: RpcAnswer<'_, R> = match serde_json::from_slice(data) {
        Ok(a) => a,
        // Valid JSON of another shape (an array, a batch, a string, a member twice) is JSON,
        // just not a JSON-RPC response.
        Err(e) if e.classify() == serde_json::error::Category::Data => {
            return Err(Invalid::NotJsonRpc);
        }
        Err(e) => return Err(syntax(e)),
    };
    if answer.jsonrpc.map(RawValue::get) != Some("\"2.0\"") {
        return Err(Invalid::NotJsonRpc);
    }
    let (is_error, ids) = match (answer.result, answer.error) {
        (Some(r), None) if !error_status => (false, r.into_ids()),
        (None, Some(e)) => {
            let _code: i64 = serde_json::from_str::<RpcErrorObject>(e.get())
                .map_err(|_| Invalid::NotJsonRpc)?
                .code;
            (true, TaskIds::default())
        }
        _ => return Err(Invalid::NotJsonRpc),
    };
    let got = answer.id.map_or("null", RawValue::get);
    if (is_error && got == "null") || same_id(id.unwrap_or("null"), got) {
        Ok(ids)
    } else {
        Err(Invalid::IdMismatch)
    }
}

/// Whether two JSON ids are the same: the same text, the same string, or the same number as an
/// f64 (a JavaScript agent echoes `12345678901234567890123` as `1.2345678901234568e22`).
fn same_id(want: &str, got: &str) -> bool {
    if want == got {
        return true;
    }
    match (
        serde_json::from_str::<Value>(want),
        serde_json::from_str::<Value>(got),
    ) {
        (Ok(Value::Number(a)), Ok(Value::Number(b))) => {
            a.as_f64().is_some() && a.as_f64() == b.as_f64()
        }
        (Ok(a @ Value::String(_)), Ok(b)) => a == b,
        _ => false,
    }
}

#[cfg(test)]
mod tests;
