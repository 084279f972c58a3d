//! The single validating pass over a request body (pure, no I/O): serde_json reads the document
//! once while these visitors take the facts policy needs, note where the tenant splice goes and
//! check every object for a repeated member name (compared after unescaping, as serde_json decodes
//! it).
//!
//! The pass only ever answers "this is a well-formed request, and here are its facts". Anything
//! else (a duplicate key, any error, a number serde_json cannot hold such as `1e400`, an escaped
//! `params` name whose position the splice needs, a part or message of an unusual shape, nesting
//! near the depth limit) makes it decline, and the caller runs the reference parse, which gives the
//! exact refusal or the exact facts. So the pass can be wrong only by declining too often, never by
//! accepting what the reference would refuse; a property test beside the code checks that.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;
use std::ops::Range;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use super::{EditPoints, RequestFacts, RpcId, json_ws};
use crate::proxy::route::Method;

/// Objects with more members than this get a hash set; smaller ones (nearly all) are searched
/// linearly in the shared name stack, so the pass allocates nothing per object.
const LINEAR_KEYS: usize = 16;

/// The facts of a JSON-RPC envelope the pass accepted.
pub(super) struct Envelope {
    pub id: RpcId,
    pub method: Method,
    pub params: RequestFacts,
    pub at: EditPoints,
}

/// Runs `seed` over the whole of `text` (and only whitespace after it); `None` is "decline".
fn run<'de, S: DeserializeSeed<'de>>(text: &'de str, seed: S) -> Option<S::Value> {
    let mut de = serde_json::Deserializer::from_str(text);
    let value = seed.deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(value)
}

/// A JSON-RPC request in one pass, or `None` when the reference parse must decide.
pub(super) fn jsonrpc(body: &[u8]) -> Option<Envelope> {
    let text = std::str::from_utf8(body).ok()?;
    let mut names = Vec::new();
    let top = run(
        text,
        Top {
            text,
            names: &mut names,
        },
    )?;
    let (Some(id), Some(method), true) = (top.id, top.method, top.jsonrpc) else {
        return None;
    };
    let envelope_end = text.trim_end_matches(json_ws).len().checked_sub(1)?;
    (text.as_bytes().get(envelope_end) == Some(&b'}')).then_some(())?;
    let (params, at) = match top.params {
        None => (
            RequestFacts::default(),
            EditPoints {
                params_open: None,
                params_empty: false,
                empty_tenant: None,
                envelope_end,
            },
        ),
        Some(p) => {
            let at = EditPoints {
                params_open: Some(p.open),
                params_empty: p.empty,
                empty_tenant: p.facts.tenant.as_ref().and_then(|t| t.empty_at.clone()),
                envelope_end,
            };
            (p.facts.into_facts(method.sends_message()), at)
        }
    };
    Some(Envelope {
        id: RpcId::from_raw(id)?,
        method,
        params,
        at,
    })
}

/// An HTTP+JSON request object in one pass, or `None` when the reference parse must decide.
pub(super) fn rest(body: &[u8], sends_message: bool) -> Option<RequestFacts> {
    let text = std::str::from_utf8(body).ok()?;
    let mut names = Vec::new();
    let object = run(
        text,
        Object {
            text,
            names: &mut names,
        },
    )?;
    Some(object.facts.into_facts(sends_message))
}

fn decline<E: de::Error>() -> E {
    E::custom("declined")
}

/// Offset of `inner` (borrowed from `outer`) in `outer`.
fn offset(outer: &str, inner: &str) -> Option<usize> {
    let start = (inner.as_ptr() as usize).checked_sub(outer.as_ptr() as usize)?;
    (start.checked_add(inner.len())? <= outer.len()).then_some(start)
}

/// A member name: borrowed from the text unless it was written with an escape.
struct Name;

impl<'de> DeserializeSeed<'de> for Name {
    type Value = Cow<'de, str>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Name {
    type Value = Cow<'de, str>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.to_owned()))
    }
}

/// The member names of one object, checked for repeats as they are read.
struct Members<'n, 'de> {
    names: &'n mut Vec<Cow<'de, str>>,
    start: usize,
    set: Option<HashSet<Cow<'de, str>>>,
}

impl<'n, 'de> Members<'n, 'de> {
    fn new(names: &'n mut Vec<Cow<'de, str>>) -> Self {
        let start = names.len();
        Members {
            names,
            start,
            set: None,
        }
    }

    /// The next name, or `None` at the end of the object; a repeated name declines.
    fn next<A: MapAccess<'de>>(&mut self, map: &mut A) -> Result<Option<Cow<'de, str>>, A::Error> {
        let Some(name) = map.next_key_seed(Name)? else {
            self.names.truncate(self.start);
            return Ok(None);
        };
        let own = self.names.get(self.start..).unwrap_or_default();
        let repeated = match &mut self.set {
            Some(set) => !set.insert(name.clone()),
            None => own.contains(&name),
        };
        if repeated {
            return Err(decline());
        }
        if self.set.is_none() && own.len() >= LINEAR_KEYS {
            self.set = Some(own.iter().cloned().chain([name.clone()]).collect());
        }
        self.names.push(name.clone());
        Ok(Some(name))
    }

    /// Seed for a value whose facts are not needed: still read, for its own member names.
    fn any(&mut self) -> Any<'_, 'de> {
        Any { names: self.names }
    }

    fn names(&mut self) -> &mut Vec<Cow<'de, str>> {
        self.names
    }
}

/// Any JSON value, read only to check the objects inside it.
struct Any<'n, 'de> {
    names: &'n mut Vec<Cow<'de, str>>,
}

impl<'de> DeserializeSeed<'de> for Any<'_, 'de> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Any<'_, 'de> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq
            .next_element_seed(Any {
                names: &mut *self.names,
            })?
            .is_some()
        {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut members = Members::new(self.names);
        while members.next(&mut map)?.is_some() {
            map.next_value_seed(members.any())?;
        }
        Ok(())
    }
}

/// A string value (unescaped); anything else declines.
struct Text;

impl<'de> DeserializeSeed<'de> for Text {
    type Value = Cow<'de, str>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(Name)
    }
}

/// The id exactly as written; an object or array (never a valid id) declines.
struct Id;

impl<'de> DeserializeSeed<'de> for Id {
    type Value = &'de RawValue;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        let raw: &'de RawValue = serde::Deserialize::deserialize(d)?;
        match raw.get().as_bytes().first() {
            Some(b'{' | b'[') => Err(decline()),
            _ => Ok(raw),
        }
    }
}

/// What the envelope's members gave.
struct TopOut<'de> {
    /// `jsonrpc` was the string "2.0".
    jsonrpc: bool,
    id: Option<&'de RawValue>,
    method: Option<Method>,
    params: Option<ParamsOut<'de>>,
}

struct ParamsOut<'de> {
    /// Offset of the `{` that opens `params`.
    open: usize,
    /// Whether `params` has no members.
    empty: bool,
    facts: ObjectOut<'de>,
}

/// The JSON-RPC envelope: `jsonrpc` "2.0", `id`, `method`, and `params` as a request object.
struct Top<'n, 'de> {
    text: &'de str,
    names: &'n mut Vec<Cow<'de, str>>,
}

impl<'de> DeserializeSeed<'de> for Top<'_, 'de> {
    type Value = TopOut<'de>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Top<'_, 'de> {
    type Value = TopOut<'de>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC request object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let text = self.text;
        let mut out = TopOut {
            jsonrpc: false,
            id: None,
            method: None,
            params: None,
        };
        let mut members = Members::new(self.names);
        while let Some(name) = members.next(&mut map)? {
            match &*name {
                "jsonrpc" if map.next_value_seed(Text)? == "2.0" => out.jsonrpc = true,
                "jsonrpc" => return Err(decline()),
                "id" => out.id = Some(map.next_value_seed(Id)?),
                "method" => out.method = Some(Method::from_jsonrpc(&map.next_value_seed(Text)?)),
                "params" => {
                    // An escaped name has no place in `text` to start from.
                    let Cow::Borrowed(name) = name else {
                        return Err(decline());
                    };
                    let open = value_open(text, name).ok_or_else(decline)?;
                    let object = map.next_value_seed(Object {
                        text,
                        names: members.names(),
                    })?;
                    out.params = Some(ParamsOut {
                        open,
                        empty: object.members == 0,
                        facts: object.facts,
                    });
                }
                _ => map.next_value_seed(members.any())?,
            }
        }
        Ok(out)
    }
}

/// Offset of the `{` opening the value of the member named `name` (borrowed from `text`): only
/// whitespace and the `:` stand between a name's closing quote and its value.
fn value_open(text: &str, name: &str) -> Option<usize> {
    let after = offset(text, name)?
        .checked_add(name.len())?
        .checked_add(1)?;
    let gap = text
        .get(after..)?
        .bytes()
        .take_while(|&b| b == b':' || json_ws(b as char))
        .count();
    let open = after.checked_add(gap)?;
    (text.as_bytes().get(open) == Some(&b'{')).then_some(open)
}

/// `tenant` as read: its text, and its offset when it is the empty string `""`.
struct TenantOut<'de> {
    text: Cow<'de, str>,
    empty_at: Option<Range<usize>>,
}

/// What a request object's members gave.
#[derive(Default)]
struct ObjectOut<'de> {
    tenant: Option<TenantOut<'de>>,
    /// The media types of `message.parts`, when there are parts.
    parts: Option<Vec<String>>,
}

impl ObjectOut<'_> {
    fn into_facts(self, sends_message: bool) -> RequestFacts {
        RequestFacts {
            tenant: self
                .tenant
                .map(|t| t.text.into_owned())
                .filter(|t| !t.is_empty()),
            parts: self.parts.filter(|_| sends_message),
        }
    }
}

struct ObjectRead<'de> {
    facts: ObjectOut<'de>,
    members: usize,
}

/// A request object (JSON-RPC `params`, or an HTTP+JSON body): `tenant` and `message.parts`.
struct Object<'n, 'de> {
    text: &'de str,
    names: &'n mut Vec<Cow<'de, str>>,
}

impl<'de> DeserializeSeed<'de> for Object<'_, 'de> {
    type Value = ObjectRead<'de>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Object<'_, 'de> {
    type Value = ObjectRead<'de>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a request object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let text = self.text;
        let mut out = ObjectRead {
            facts: ObjectOut::default(),
            members: 0,
        };
        let mut members = Members::new(self.names);
        while let Some(name) = members.next(&mut map)? {
            out.members += 1;
            match &*name {
                "tenant" => {
                    let t = map.next_value_seed(Text)?;
                    let empty_at = match &t {
                        Cow::Borrowed("") => Some(empty_string_at(text, &t).ok_or_else(decline)?),
                        _ => None,
                    };
                    out.facts.tenant = Some(TenantOut { text: t, empty_at });
                }
                "message" => {
                    out.facts.parts = map.next_value_seed(Message {
                        names: members.names(),
                    })?;
                }
                _ => map.next_value_seed(members.any())?,
            }
        }
        Ok(out)
    }
}

/// The range of the `""` whose (empty, borrowed) content is `s`.
fn empty_string_at(text: &str, s: &str) -> Option<Range<usize>> {
    let range = offset(text, s)?.checked_sub(1)?..offset(text, s)?.checked_add(1)?;
    (text.get(range.clone()) == Some("\"\"")).then_some(range)
}

/// `message`: `null` or an object whose `parts` is `null` or an array of part objects.
struct Message<'n, 'de> {
    names: &'n mut Vec<Cow<'de, str>>,
}

impl<'de> DeserializeSeed<'de> for Message<'_, 'de> {
    type Value = Option<Vec<String>>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Message<'_, 'de> {
    type Value = Option<Vec<String>>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a message object")
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut parts = None;
        let mut members = Members::new(self.names);
        while let Some(name) = members.next(&mut map)? {
            if name == "parts" {
                parts = map.next_value_seed(Parts {
                    names: members.names(),
                })?;
            } else {
                map.next_value_seed(members.any())?;
            }
        }
        Ok(parts)
    }
}

/// `message.parts`: `null`, or an array of part objects (their media types, in order).
struct Parts<'n, 'de> {
    names: &'n mut Vec<Cow<'de, str>>,
}

impl<'de> DeserializeSeed<'de> for Parts<'_, 'de> {
    type Value = Option<Vec<String>>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Parts<'_, 'de> {
    type Value = Option<Vec<String>>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of parts")
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut types = Vec::with_capacity(seq.size_hint().unwrap_or(1));
        while let Some(t) = seq.next_element_seed(Part {
            names: &mut *self.names,
        })? {
            types.push(t);
        }
        Ok(Some(types))
    }
}

/// One part object: its media type as policy reads it.
struct Part<'n, 'de> {
    names: &'n mut Vec<Cow<'de, str>>,
}

impl<'de> DeserializeSeed<'de> for Part<'_, 'de> {
    type Value = String;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Part<'_, 'de> {
    type Value = String;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a part object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (mut media_type, mut named, mut text, mut data) = (None, false, false, false);
        let mut members = Members::new(self.names);
        while let Some(name) = members.next(&mut map)? {
            match &*name {
                // Both spellings name one field: a part with both is refused by the reference.
                "mediaType" | "media_type" if named => return Err(decline()),
                "mediaType" | "media_type" => {
                    named = true;
                    media_type = map.next_value_seed(MediaType)?;
                }
                "text" => {
                    text = true;
                    map.next_value_seed(members.any())?;
                }
                "data" => {
                    data = true;
                    map.next_value_seed(members.any())?;
                }
                _ => map.next_value_seed(members.any())?,
            }
        }
        Ok(super::media_type_of(media_type.as_deref(), text, data))
    }
}

/// `mediaType`: a string or `null`.
struct MediaType;

impl<'de> DeserializeSeed<'de> for MediaType {
    type Value = Option<Cow<'de, str>>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for MediaType {
    type Value = Option<Cow<'de, str>>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a media type or null")
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Some(Cow::Borrowed(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Some(Cow::Owned(v.to_owned())))
    }
}
