//! The parser the gateway used before [`super::parse`] (test only, no I/O): the document
//! validated whole by serde_json, checked for duplicate keys by [`crate::json::duplicate_keys`],
//! then each member read by serde's derive. It is kept as the oracle the property tests in
//! `props.rs` hold the parser to: every body, refusals included, is answered as it answers.

use std::borrow::Cow;
use std::ops::Range;

use bytes::Bytes;
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use super::{BodyError, EditPoints, RequestFacts, RpcError, RpcId, RpcRequest, media_type_of};
use crate::json::{ScanError, duplicate_keys};
use crate::proxy::route::Method;

fn id_of(raw: &RawValue) -> Option<RpcId> {
    matches!(kind(raw), Kind::String | Kind::Number | Kind::Null).then(|| RpcId(raw.to_owned()))
}

/// The JSON type of a raw value, from its first byte (serde_json trims whitespace around it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Object,
    Array,
    String,
    Number,
    Null,
    Bool,
}

fn kind(raw: &RawValue) -> Kind {
    match raw.get().as_bytes().first() {
        Some(b'{') => Kind::Object,
        Some(b'[') => Kind::Array,
        Some(b'"') => Kind::String,
        Some(b'n') => Kind::Null,
        Some(b't' | b'f') => Kind::Bool,
        _ => Kind::Number,
    }
}

/// Byte range of `inner` (a slice of `outer`) within `outer`.
fn span(outer: &str, inner: &str) -> Option<Range<usize>> {
    let start = (inner.as_ptr() as usize).checked_sub(outer.as_ptr() as usize)?;
    let range = start..start.checked_add(inner.len())?;
    (outer.get(range.clone())? == inner).then_some(range)
}

/// A present member as a raw value, `null` included (serde maps a `null` to `None` for `Option`).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(default, borrow, deserialize_with = "present")]
    jsonrpc: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    method: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    params: Option<&'a RawValue>,
}

/// Only the id: read even when another envelope member is duplicated.
#[derive(Deserialize)]
struct IdOnly<'a> {
    #[serde(default, borrow, deserialize_with = "present")]
    id: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct ObjectIn<'a> {
    #[serde(default, borrow, deserialize_with = "present")]
    tenant: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    message: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct MessageIn<'a> {
    #[serde(default, borrow)]
    parts: Option<Vec<PartIn<'a>>>,
}

#[derive(Deserialize)]
struct PartIn<'a> {
    #[serde(default, borrow, rename = "mediaType", alias = "media_type")]
    media_type: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "present")]
    text: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    data: Option<&'a RawValue>,
}

/// Validates the whole document: UTF-8, one JSON value, no duplicate key at any depth.
fn document(body: &[u8]) -> Result<(&str, &RawValue), BodyError> {
    let text = std::str::from_utf8(body).map_err(|_| BodyError::Parse)?;
    let doc: &RawValue = serde_json::from_str(text).map_err(|_| BodyError::Parse)?;
    match duplicate_keys(doc.get(), 1) {
        Ok(d) => match d.into_iter().next() {
            Some(path) => Err(BodyError::DuplicateKey { path }),
            None => Ok((text, doc)),
        },
        Err(ScanError::TooDeep | ScanError::Malformed | ScanError::TooLarge { .. }) => {
            Err(BodyError::Parse)
        }
    }
}

fn string_of(raw: &RawValue) -> Option<Cow<'_, str>> {
    (kind(raw) == Kind::String)
        .then(|| serde_json::from_str::<Cow<'_, str>>(raw.get()).ok())
        .flatten()
}

/// The facts of a request object; `sends_message` also reads `message.parts`. Returns the facts and
/// the tenant value (a string) as a raw slice of the object, when present.
fn request_object(
    raw: &RawValue,
    sends_message: bool,
) -> Result<(RequestFacts, Option<&RawValue>), BodyError> {
    let o: ObjectIn<'_> = serde_json::from_str(raw.get())
        .map_err(|_| BodyError::Invalid("the request is not a JSON object"))?;
    let tenant = match o.tenant {
        None => None,
        Some(t) => match string_of(t) {
            Some(s) if s.is_empty() => None,
            Some(s) => Some(s.into_owned()),
            None => return Err(BodyError::InvalidParams("tenant must be a string")),
        },
    };
    let parts = match (sends_message, o.message) {
        (true, Some(m)) if kind(m) != Kind::Null => {
            let m: MessageIn<'_> = serde_json::from_str(m.get()).map_err(|_| {
                BodyError::InvalidParams("message must be an object whose parts are part objects")
            })?;
            m.parts.map(|ps| ps.iter().map(media_type).collect())
        }
        _ => None,
    };
    Ok((RequestFacts { tenant, parts }, o.tenant))
}

fn media_type(p: &PartIn<'_>) -> String {
    media_type_of(p.media_type.as_deref(), p.text.is_some(), p.data.is_some())
}

fn no_id(error: BodyError) -> RpcError {
    RpcError {
        id: RpcId::null(),
        error,
    }
}

/// Where the tenant splice goes: positions of `doc` (the envelope), `params` and `params.tenant`
/// in `text`, the caller's body they all borrow from.
fn edit_points(
    text: &str,
    doc: &RawValue,
    params: Option<&RawValue>,
    tenant: Option<&RawValue>,
) -> Option<EditPoints> {
    let params = match params {
        Some(p) => Some(span(text, p.get())?),
        None => None,
    };
    Some(EditPoints {
        params_open: params.as_ref().map(|p| p.start),
        params_empty: params.is_some_and(|p| {
            text.get(p.start + 1..p.end.saturating_sub(1))
                .is_some_and(|inner| inner.bytes().all(|b| b.is_ascii_whitespace()))
        }),
        empty_tenant: match tenant {
            Some(t) if t.get() == "\"\"" => Some(span(text, t.get())?),
            _ => None,
        },
        envelope_end: span(text, doc.get())?.end.checked_sub(1)?,
    })
}

/// The reference parse of a JSON-RPC body: the document validated whole, checked for duplicate
/// keys by a separate scan, then each member read by serde's derive.
pub(super) fn reference_jsonrpc(body: &Bytes) -> Result<RpcRequest, RpcError> {
    let (text, doc) = match document(body) {
        Ok(d) => d,
        Err(error @ BodyError::DuplicateKey { .. }) => {
            // The id is echoed only if it is itself unambiguous (then serde's derive reads it).
            let id = std::str::from_utf8(body)
                .ok()
                .and_then(|t| serde_json::from_str::<IdOnly<'_>>(t).ok())
                .and_then(|e| e.id.and_then(id_of))
                .unwrap_or_else(RpcId::null);
            return Err(RpcError { id, error });
        }
        Err(e) => return Err(no_id(e)),
    };
    match kind(doc) {
        Kind::Object => {}
        Kind::Array => {
            return Err(no_id(BodyError::Invalid(
                "batch requests are not supported",
            )));
        }
        _ => {
            return Err(no_id(BodyError::Invalid(
                "the request is not a JSON object",
            )));
        }
    }
    let env: Envelope<'_> = serde_json::from_str(doc.get()).map_err(|_| no_id(BodyError::Parse))?;
    let id =
        match env.id {
            None => None,
            Some(raw) => Some(id_of(raw).ok_or_else(|| {
                no_id(BodyError::Invalid("id must be a string, a number or null"))
            })?),
        };
    let fail = |error| RpcError {
        id: id.clone().unwrap_or_else(RpcId::null),
        error,
    };
    if env.jsonrpc.and_then(string_of).as_deref() != Some("2.0") {
        return Err(fail(BodyError::Invalid("jsonrpc must be \"2.0\"")));
    }
    let Some(method_name) = env.method.and_then(string_of) else {
        return Err(fail(BodyError::Invalid("method must be a string")));
    };
    let Some(id) = id.clone() else {
        // A notification expects no answer; A2A has no notifications.
        return Err(fail(BodyError::Invalid(
            "notifications (requests without id) are not supported",
        )));
    };
    let method = Method::from_jsonrpc(&method_name);
    let (params, tenant_raw) = match env.params {
        None => (RequestFacts::default(), None),
        Some(p) if kind(p) == Kind::Object => {
            request_object(p, method.sends_message()).map_err(fail)?
        }
        Some(_) => return Err(fail(BodyError::Invalid("params must be an object"))),
    };
    // Every raw value borrows from `text`, so this cannot fail; refusing beats guessing.
    let at =
        edit_points(text, doc, env.params, tenant_raw).ok_or_else(|| fail(BodyError::Parse))?;
    Ok(RpcRequest {
        id,
        method,
        params,
        body: body.clone(),
        at,
    })
}

/// The reference parse of an HTTP+JSON body (see [`reference_jsonrpc`]).
pub(super) fn reference_rest(body: &[u8], sends_message: bool) -> Result<RequestFacts, BodyError> {
    // JSON's own whitespace only: a form feed (which `is_ascii_whitespace` counts) is not JSON,
    // so a body of form feeds is refused as one, not passed on as empty.
    if body
        .iter()
        .all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
    {
        return Ok(RequestFacts::default());
    }
    let (_, doc) = document(body)?;
    if kind(doc) != Kind::Object {
        return Err(BodyError::Invalid("the body is not a JSON object"));
    }
    request_object(doc, sends_message).map(|(facts, _)| facts)
}
