//! The body parser (pure, no I/O): serde_json decides whether the bytes are one JSON value, then
//! one walk over the text reads every member name (repeats are refused) and the few facts policy
//! needs, and every refusal is decided from what the walk saw.
//!
//! Why a walk of our own after serde_json, and not serde_json's visitors: serde_json hands a
//! visitor every number as an `f64`/`u64`/`i64`, so `1e400` (valid JSON, echoed verbatim as an
//! id) is an error there, and a string is unescaped before a visitor sees it, so a lone surrogate
//! such as `"\ud800"` (which serde_json's own validation accepts) is one too. Validation itself
//! (`IgnoredAny`) interprets nothing, so it accepts exactly what the gateway must accept; the walk
//! then runs over text known to be JSON and only finds where values begin and end. Strings that
//! are read (member names, `jsonrpc`, `method`, `tenant`, `mediaType`) are unescaped by
//! serde_json; the walk never decodes JSON itself.
//!
//! What the walk answers, in the order a refusal is chosen:
//! - not UTF-8, not one JSON value: [`BodyError::Parse`];
//! - containers nested deeper than [`MAX_DEPTH`], or a member name whose escapes do not decode
//!   (a lone surrogate), anywhere: [`BodyError::Parse`], as [`crate::json::duplicate_keys`]
//!   would answer;
//! - a member name repeated in one object (compared after unescaping), anywhere: the first one's
//!   path as [`crate::json::duplicate_keys`] renders it;
//! - then the envelope's and the request object's rules (see [`super::parse_jsonrpc`]).

use std::borrow::Cow;
use std::collections::HashSet;
use std::ops::Range;

use serde::de::IgnoredAny;

use super::{BodyError, EditPoints, RequestFacts, RpcError, RpcId, media_type_of};
use crate::json::{MAX_DEPTH, duplicate_keys};
use crate::proxy::route::Method;

/// Objects with more members than this get a hash set; smaller ones (nearly all) are searched
/// linearly in the shared name stack, so the walk allocates nothing per object.
const LINEAR_KEYS: usize = 16;

/// The facts of a JSON-RPC envelope the parser accepted.
pub(super) struct Envelope {
    pub id: RpcId,
    pub method: Method,
    pub params: RequestFacts,
    pub at: EditPoints,
}

/// Why the walk stopped before the end: the body is refused as [`BodyError::Parse`].
struct Stop;

/// A message or part of a shape the binding does not define (refused only for message sends).
struct Bad;

/// The media types of `message.parts`: `Ok(None)` for no parts.
type Parts = Result<Option<Vec<String>>, Bad>;

/// What a request object's members gave (JSON-RPC `params`, an HTTP+JSON body).
#[derive(Default)]
struct ObjectRead {
    /// The `tenant` value, as a range of the text.
    tenant: Option<Range<usize>>,
    /// `message.parts` read as for a message send; `None` without a `message` or for `null`.
    parts: Option<Parts>,
    members: usize,
}

/// The envelope's members, as ranges of the text.
#[derive(Default)]
struct TopRead {
    jsonrpc: Option<Range<usize>>,
    id: Option<Range<usize>>,
    /// How many members are named `id` (the id is echoed only when it is unambiguous).
    ids: usize,
    method: Option<Range<usize>>,
    params: Option<Range<usize>>,
    /// `params` read as a request object, when it is an object.
    object: Option<ObjectRead>,
}

/// One walk over `text` (already known to be JSON).
struct Walk<'a> {
    text: &'a str,
    at: usize,
    /// Member names of every open object, unescaped (borrowed unless written with an escape).
    names: Vec<Cow<'a, str>>,
    /// A name was repeated somewhere.
    repeated: bool,
}

/// What a value begins with (the text is JSON, so the first byte says).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Object,
    Array,
    String,
    Null,
    Bool,
    /// A number.
    Other,
}

impl<'a> Walk<'a> {
    fn new(text: &'a str) -> Self {
        Walk {
            text,
            at: 0,
            names: Vec::new(),
            repeated: false,
        }
    }

    fn byte(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    fn ws(&mut self) {
        while matches!(self.byte(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    /// Skips whitespace and says what the next value is.
    fn peek(&mut self) -> Kind {
        self.ws();
        match self.byte() {
            Some(b'{') => Kind::Object,
            Some(b'[') => Kind::Array,
            Some(b'"') => Kind::String,
            Some(b'n') => Kind::Null,
            Some(b't' | b'f') => Kind::Bool,
            _ => Kind::Other,
        }
    }

    /// The string that opens here, quotes included.
    fn string(&mut self) -> Result<Range<usize>, Stop> {
        let start = self.at;
        let bytes = self.text.as_bytes();
        let mut i = start + 1;
        loop {
            let rest = bytes.get(i..).ok_or(Stop)?;
            i += memchr::memchr2(b'"', b'\\', rest).ok_or(Stop)?;
            if bytes.get(i) == Some(&b'"') {
                self.at = i + 1;
                return Ok(start..self.at);
            }
            i += 2;
        }
    }

    /// A number or literal: everything up to the next delimiter.
    fn scalar(&mut self) -> Range<usize> {
        let start = self.at;
        while !matches!(
            self.byte(),
            None | Some(b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r')
        ) {
            self.at += 1;
        }
        start..self.at
    }

    /// Any value, its containers walked for their names; its range.
    fn value(&mut self, depth: usize) -> Result<Range<usize>, Stop> {
        let kind = self.peek();
        let start = self.at;
        match kind {
            Kind::Object => {
                self.object(depth, &mut |w, _, d| w.value(d).map(|_| ()))?;
            }
            Kind::Array => self.array(depth, &mut |w, _, d| w.value(d).map(|_| ()))?,
            Kind::String => return self.string(),
            Kind::Null | Kind::Bool | Kind::Other => return Ok(self.scalar()),
        }
        Ok(start..self.at)
    }

    /// Opens a container at `depth` (the number of containers around it).
    fn open(&mut self, depth: usize) -> Result<(), Stop> {
        if depth >= MAX_DEPTH {
            return Err(Stop);
        }
        self.at += 1;
        Ok(())
    }

    /// After a member or element: `true` when another follows, `false` at the container's end.
    fn next(&mut self) -> Result<bool, Stop> {
        self.ws();
        let more = match self.byte() {
            Some(b',') => true,
            Some(b'}' | b']') => false,
            _ => return Err(Stop),
        };
        self.at += 1;
        Ok(more)
    }

    /// The object that opens here: each member's unescaped name goes to `member`, which reads
    /// its value (at the depth it is given); the number of members.
    fn object(
        &mut self,
        depth: usize,
        member: &mut dyn FnMut(&mut Self, &str, usize) -> Result<(), Stop>,
    ) -> Result<usize, Stop> {
        self.open(depth)?;
        let start = self.names.len();
        let mut set: Option<HashSet<Cow<'a, str>>> = None;
        let mut count = 0;
        self.ws();
        if self.byte() == Some(b'}') {
            self.at += 1;
            return Ok(0);
        }
        loop {
            self.ws();
            let quoted = self.string()?;
            let name = self.name(quoted)?;
            let own = self.names.get(start..).unwrap_or_default();
            self.repeated |= match &mut set {
                Some(set) => !set.insert(name.clone()),
                None => own.contains(&name),
            };
            if set.is_none() && own.len() >= LINEAR_KEYS {
                set = Some(own.iter().cloned().chain([name.clone()]).collect());
            }
            self.names.push(name.clone());
            self.ws();
            if self.byte() != Some(b':') {
                return Err(Stop);
            }
            self.at += 1;
            count += 1;
            member(self, &name, depth + 1)?;
            if !self.next()? {
                break;
            }
        }
        self.names.truncate(start);
        Ok(count)
    }

    /// A member name, unescaped by serde_json when it was written with an escape.
    fn name(&self, quoted: Range<usize>) -> Result<Cow<'a, str>, Stop> {
        let text: &'a str = self.text;
        let raw = text.get(quoted.start + 1..quoted.end - 1).ok_or(Stop)?;
        if !raw.contains('\\') {
            return Ok(Cow::Borrowed(raw));
        }
        let quoted = text.get(quoted).ok_or(Stop)?;
        serde_json::from_str::<String>(quoted)
            .map(Cow::Owned)
            .map_err(|_| Stop)
    }

    /// The array that opens here: each element's index goes to `element`, which reads it.
    fn array(
        &mut self,
        depth: usize,
        element: &mut dyn FnMut(&mut Self, usize, usize) -> Result<(), Stop>,
    ) -> Result<(), Stop> {
        self.open(depth)?;
        self.ws();
        if self.byte() == Some(b']') {
            self.at += 1;
            return Ok(());
        }
        let mut index = 0;
        loop {
            element(self, index, depth + 1)?;
            index += 1;
            if !self.next()? {
                return Ok(());
            }
        }
    }

    /// A request object's members: `tenant` and `message`.
    fn request_object(&mut self, depth: usize) -> Result<ObjectRead, Stop> {
        let mut out = ObjectRead::default();
        let members = self.object(depth, &mut |w, name, d| {
            match name {
                "tenant" => out.tenant = Some(w.value(d)?),
                "message" => out.parts = w.message(d)?,
                _ => {
                    w.value(d)?;
                }
            }
            Ok(())
        })?;
        out.members = members;
        Ok(out)
    }

    /// `message` as serde's derive reads it: `null` (no parts), an object whose `parts` is read,
    /// or an array holding at most `parts` (a struct may be written as a sequence).
    fn message(&mut self, depth: usize) -> Result<Option<Parts>, Stop> {
        let mut parts: Parts = Ok(None);
        match self.peek() {
            Kind::Null => {
                self.scalar();
                return Ok(None);
            }
            Kind::Object => {
                self.object(depth, &mut |w, name, d| {
                    match name {
                        "parts" => parts = w.parts(d)?,
                        _ => {
                            w.value(d)?;
                        }
                    }
                    Ok(())
                })?;
            }
            Kind::Array => self.array(depth, &mut |w, index, d| {
                match index {
                    0 => parts = w.parts(d)?,
                    _ => (parts, _) = (Err(Bad), w.value(d)?),
                }
                Ok(())
            })?,
            Kind::String | Kind::Bool | Kind::Other => {
                (parts, _) = (Err(Bad), self.value(depth)?);
            }
        }
        Ok(Some(parts))
    }

    /// `message.parts`: `null`, or an array of parts (their media types, in order).
    fn parts(&mut self, depth: usize) -> Result<Parts, Stop> {
        match self.peek() {
            Kind::Null => {
                self.scalar();
                Ok(Ok(None))
            }
            Kind::Array => {
                let mut types = Ok(Vec::new());
                self.array(depth, &mut |w, _, d| {
                    match (w.part(d)?, &mut types) {
                        (Ok(t), Ok(types)) => types.push(t),
                        (_, types) => *types = Err(Bad),
                    }
                    Ok(())
                })?;
                Ok(types.map(Some))
            }
            _ => {
                self.value(depth)?;
                Ok(Err(Bad))
            }
        }
    }

    /// One part: its media type as policy reads it. Written as an object (`mediaType` or
    /// `media_type`, not both; `text`; `data`) or, as serde's derive allows, as an array of
    /// at most those three in that order.
    fn part(&mut self, depth: usize) -> Result<Result<String, Bad>, Stop> {
        let (mut media, mut named, mut text, mut data, mut ok) = (None, false, false, false, true);
        match self.peek() {
            Kind::Object => {
                self.object(depth, &mut |w, name, d| {
                    match name {
                        "mediaType" | "media_type" => {
                            ok &= !named;
                            named = true;
                            media = w.media_type(d, &mut ok)?;
                        }
                        "text" => (text, _) = (true, w.value(d)?),
                        "data" => (data, _) = (true, w.value(d)?),
                        _ => {
                            w.value(d)?;
                        }
                    }
                    Ok(())
                })?;
            }
            Kind::Array => self.array(depth, &mut |w, index, d| {
                match index {
                    0 => media = w.media_type(d, &mut ok)?,
                    1 => (text, _) = (true, w.value(d)?),
                    2 => (data, _) = (true, w.value(d)?),
                    _ => (ok, _) = (false, w.value(d)?),
                }
                Ok(())
            })?,
            Kind::String | Kind::Null | Kind::Bool | Kind::Other => {
                (ok, _) = (false, self.value(depth)?);
            }
        }
        Ok(ok
            .then(|| media_type_of(media.as_deref(), text, data))
            .ok_or(Bad))
    }

    /// `mediaType`: a string or `null`; anything else clears `ok`.
    fn media_type(&mut self, depth: usize, ok: &mut bool) -> Result<Option<Cow<'a, str>>, Stop> {
        let kind = self.peek();
        let range = self.value(depth)?;
        Ok(match kind {
            Kind::Null => None,
            Kind::String => {
                let s = self.string_at(range);
                *ok &= s.is_some();
                s
            }
            _ => {
                *ok = false;
                None
            }
        })
    }

    /// The string value at `range`, unescaped; `None` when it is not a string or does not
    /// decode (a lone surrogate).
    fn string_at(&self, range: Range<usize>) -> Option<Cow<'a, str>> {
        let text: &'a str = self.text;
        let raw = text.get(range)?;
        if !raw.starts_with('"') {
            return None;
        }
        serde_json::from_str::<Cow<'a, str>>(raw).ok()
    }

    /// The envelope's members.
    fn envelope(&mut self) -> Result<TopRead, Stop> {
        let mut out = TopRead::default();
        self.object(0, &mut |w, name, d| {
            match name {
                "jsonrpc" => out.jsonrpc = Some(w.value(d)?),
                "id" => (out.id, out.ids) = (Some(w.value(d)?), out.ids + 1),
                "method" => out.method = Some(w.value(d)?),
                "params" => {
                    let start = {
                        w.ws();
                        w.at
                    };
                    if w.peek() == Kind::Object {
                        out.object = Some(w.request_object(d)?);
                        out.params = Some(start..w.at);
                    } else {
                        out.params = Some(w.value(d)?);
                    }
                }
                _ => {
                    w.value(d)?;
                }
            }
            Ok(())
        })?;
        Ok(out)
    }
}

/// The text of a JSON document: UTF-8 and one JSON value (serde_json's validation, which
/// interprets no number and decodes no string).
fn document(body: &[u8]) -> Result<&str, BodyError> {
    let text = std::str::from_utf8(body).map_err(|_| BodyError::Parse)?;
    serde_json::from_str::<IgnoredAny>(text).map_err(|_| BodyError::Parse)?;
    Ok(text)
}

/// The refusal of a walk that saw a repeated name: the first one's path (rendered by the JSON
/// module, the one place paths are rendered).
fn repeated(text: &str) -> BodyError {
    match duplicate_keys(text, 1).map(|d| d.into_iter().next()) {
        Ok(Some(path)) => BodyError::DuplicateKey { path },
        // The walk and the scan read names alike, so this is not reached; refusing beats guessing.
        Ok(None) | Err(_) => BodyError::Parse,
    }
}

fn kind_of(text: &str, range: &Range<usize>) -> Kind {
    match text.as_bytes().get(range.start) {
        Some(b'{') => Kind::Object,
        Some(b'[') => Kind::Array,
        Some(b'"') => Kind::String,
        Some(b'n') => Kind::Null,
        Some(b't' | b'f') => Kind::Bool,
        _ => Kind::Other,
    }
}

/// A request object's facts, once the walk is over; `sends_message` decides whether its parts
/// are read (and their shape refused).
fn facts(
    walk: &Walk<'_>,
    object: ObjectRead,
    sends_message: bool,
) -> Result<RequestFacts, BodyError> {
    let tenant = match object.tenant {
        None => None,
        Some(range) => match walk.string_at(range) {
            Some(t) if t.is_empty() => None,
            Some(t) => Some(t.into_owned()),
            None => return Err(BodyError::InvalidParams("tenant must be a string")),
        },
    };
    let parts = match object.parts {
        Some(Err(Bad)) if sends_message => {
            return Err(BodyError::InvalidParams(
                "message must be an object whose parts are part objects",
            ));
        }
        Some(Ok(parts)) if sends_message => parts,
        _ => None,
    };
    Ok(RequestFacts { tenant, parts })
}

fn no_id(error: BodyError) -> RpcError {
    RpcError {
        id: RpcId::null(),
        error,
    }
}

/// A JSON-RPC request.
pub(super) fn jsonrpc(body: &[u8]) -> Result<Envelope, RpcError> {
    let text = document(body).map_err(no_id)?;
    let mut walk = Walk::new(text);
    let (top, kind) = match walk.peek() {
        Kind::Object => (walk.envelope(), Kind::Object),
        k => (walk.value(0).map(|_| TopRead::default()), k),
    };
    let top = top.map_err(|Stop| no_id(BodyError::Parse))?;
    let id = top
        .id
        .as_ref()
        .filter(|_| top.ids == 1)
        .map(|r| (r, kind_of(text, r)));
    let echoed = |id: Option<(&Range<usize>, Kind)>| match id {
        Some((r, Kind::String | Kind::Null | Kind::Other)) => text.get(r.clone()).and_then(raw),
        _ => None,
    };
    let id = echoed(id);
    if walk.repeated {
        return Err(RpcError {
            id: id.unwrap_or_else(RpcId::null),
            error: repeated(text),
        });
    }
    match kind {
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
    envelope(&walk, top, id)
}

/// An id's JSON text as an [`RpcId`].
fn raw(text: &str) -> Option<RpcId> {
    serde_json::value::RawValue::from_string(text.to_owned())
        .ok()
        .map(RpcId)
}

/// The envelope's rules, in the order they are checked.
fn envelope(walk: &Walk<'_>, top: TopRead, id: Option<RpcId>) -> Result<Envelope, RpcError> {
    if top.id.is_some() && id.is_none() {
        return Err(no_id(BodyError::Invalid(
            "id must be a string, a number or null",
        )));
    }
    let fail = |error| RpcError {
        id: id.clone().unwrap_or_else(RpcId::null),
        error,
    };
    let string = |r: Option<Range<usize>>| r.and_then(|r| walk.string_at(r));
    if string(top.jsonrpc).as_deref() != Some("2.0") {
        return Err(fail(BodyError::Invalid("jsonrpc must be \"2.0\"")));
    }
    let Some(method_name) = string(top.method) else {
        return Err(fail(BodyError::Invalid("method must be a string")));
    };
    let Some(id) = id.clone() else {
        // A notification expects no answer; A2A has no notifications.
        return Err(fail(BodyError::Invalid(
            "notifications (requests without id) are not supported",
        )));
    };
    let method = Method::from_jsonrpc(&method_name);
    let text = walk.text;
    let envelope_end = text
        .trim_end_matches(super::json_ws)
        .len()
        .checked_sub(1)
        .ok_or_else(|| fail(BodyError::Parse))?;
    let mut at = EditPoints {
        params_open: None,
        params_empty: false,
        empty_tenant: None,
        envelope_end,
    };
    let params = match (top.params, top.object) {
        (None, _) => RequestFacts::default(),
        (Some(range), Some(object)) => {
            at.params_open = Some(range.start);
            at.params_empty = object.members == 0;
            at.empty_tenant = object
                .tenant
                .clone()
                .filter(|t| text.get(t.clone()) == Some("\"\""));
            facts(walk, object, method.sends_message()).map_err(fail)?
        }
        (Some(_), None) => return Err(fail(BodyError::Invalid("params must be an object"))),
    };
    Ok(Envelope {
        id,
        method,
        params,
        at,
    })
}

/// An HTTP+JSON request object (not empty: the caller answers that).
pub(super) fn rest(body: &[u8], sends_message: bool) -> Result<RequestFacts, BodyError> {
    let text = document(body)?;
    let mut walk = Walk::new(text);
    let object = match walk.peek() {
        Kind::Object => walk.request_object(0).map(Some),
        _ => walk.value(0).map(|_| None),
    }
    .map_err(|Stop| BodyError::Parse)?;
    if walk.repeated {
        return Err(repeated(text));
    }
    let object = object.ok_or(BodyError::Invalid("the body is not a JSON object"))?;
    facts(&walk, object, sends_message)
}
