//! Raw JSON for the translator (pure, no I/O): an object read as its members, each value kept as
//! the agent's or the caller's exact text, and a small output tree written back from those texts.
//!
//! Why not `serde_json::Value`: without `arbitrary_precision` it turns a 30-digit id or a long
//! decimal into an `f64`, and it re-escapes strings. Here every value that is copied (ids,
//! numbers, strings, metadata, a data part's data) keeps its bytes; only the structure the two
//! protocol versions disagree on is rebuilt.

use std::borrow::Cow;
use std::fmt::Write as _;

use serde::Deserialize;
use serde::de::{MapAccess, Visitor};
use serde_json::value::RawValue;

use super::TranslateError;

/// One JSON object's members in order, each value as its raw text. A key that appears twice is
/// refused ([`TranslateError::Untranslatable`]): which of the two a reader takes is not agreed on.
pub(super) struct Obj<'a> {
    members: Vec<(Cow<'a, str>, &'a RawValue)>,
}

struct Members<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

/// A member name, borrowed from the text unless it has escapes (an owned `String` for every
/// name of every object read was a good part of a translation's allocations).
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a member name")
            }
            fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::with_capacity(map.size_hint().unwrap_or(4).min(64));
                while let Some(Key(k)) = map.next_key::<Key<'de>>()? {
                    let v: &'de RawValue = map.next_value()?;
                    out.push((k, v));
                }
                Ok(Members(out))
            }
        }
        d.deserialize_map(V)
    }
}

impl<'a> Obj<'a> {
    /// Reads `raw` as an object; `field` names it in the error.
    pub(super) fn parse(raw: &'a RawValue, field: &str) -> Result<Obj<'a>, TranslateError> {
        Self::parse_str(raw.get(), field)
    }

    /// Reads JSON text as an object; `field` names it in the error.
    pub(super) fn parse_str(text: &'a str, field: &str) -> Result<Obj<'a>, TranslateError> {
        let Members(members) = serde_json::from_str(text)
            .map_err(|_| TranslateError::untranslatable(field, "is not a JSON object"))?;
        // Pairwise for the small objects of the protocol (no vector to sort); sorted for others.
        let twice = if members.len() <= 16 {
            members
                .iter()
                .enumerate()
                .any(|(i, (k, _))| members.iter().skip(i + 1).any(|(o, _)| o == k))
        } else {
            let mut keys: Vec<&str> = members.iter().map(|(k, _)| k.as_ref()).collect();
            keys.sort_unstable();
            keys.windows(2).any(|w| w[0] == w[1])
        };
        if twice {
            return Err(TranslateError::untranslatable(
                field,
                "has a key that appears twice",
            ));
        }
        Ok(Obj { members })
    }

    /// The value of `key`, unless absent or `null` (ProtoJSON and both SDKs read `null` as unset).
    pub(super) fn get(&self, key: &str) -> Option<&'a RawValue> {
        self.members
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| *v)
            .filter(|v| v.get() != "null")
    }

    /// The value of `key` as written, `null` included (a JSON-RPC id of `null` is not "no id").
    pub(super) fn raw(&self, key: &str) -> Option<&'a RawValue> {
        self.members.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
    }

    /// Whether `key` is a member at all (`null` included).
    pub(super) fn has_key(&self, key: &str) -> bool {
        self.members.iter().any(|(k, _)| k == key)
    }

    /// Whether the object has no members.
    pub(super) fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Every member in order, as output members (the values' text as it came).
    pub(super) fn entries(&self) -> impl Iterator<Item = (String, Out<'a>)> + '_ {
        self.members
            .iter()
            .map(|(k, v)| (k.clone().into_owned(), Out::Raw(v)))
    }

    /// Whether `key` is present with a value other than `null`.
    pub(super) fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }
}

/// The first byte of a raw value's text (never whitespace: serde_json trims raw values).
fn lead(raw: &RawValue) -> u8 {
    raw.get().as_bytes().first().copied().unwrap_or(b' ')
}

/// `raw` when it is a JSON string.
pub(super) fn string<'a>(raw: &'a RawValue, field: &str) -> Result<Out<'a>, TranslateError> {
    match lead(raw) {
        b'"' => Ok(Out::Raw(raw)),
        _ => Err(TranslateError::untranslatable(field, "is not a string")),
    }
}

/// `raw` when it is a JSON object (copied whole: metadata, a data part's data).
pub(super) fn object<'a>(raw: &'a RawValue, field: &str) -> Result<Out<'a>, TranslateError> {
    match lead(raw) {
        b'{' => Ok(Out::Raw(raw)),
        _ => Err(TranslateError::untranslatable(field, "is not an object")),
    }
}

/// `raw` when it is a JSON array of strings (copied whole).
pub(super) fn strings<'a>(raw: &'a RawValue, field: &str) -> Result<Out<'a>, TranslateError> {
    let items = array(raw, field)?;
    for (i, v) in items.iter().enumerate() {
        string(v, &index(field, i))?;
    }
    Ok(Out::Raw(raw))
}

/// `raw` when it is a JSON integer (copied as written), or ProtoJSON's quoted form of one
/// (`"5"`, which 1.0 parsers accept for an int32), written as the number.
pub(super) fn integer<'a>(raw: &'a RawValue, field: &str) -> Result<Out<'a>, TranslateError> {
    let is_int = |t: &str| {
        let digits = t.strip_prefix('-').unwrap_or(t);
        !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
    };
    let t = raw.get();
    if is_int(t) {
        return Ok(Out::Raw(raw));
    }
    match t.strip_prefix('"').and_then(|q| q.strip_suffix('"')) {
        Some(inner) if is_int(inner) => Ok(Out::Owned(inner.to_owned())),
        _ => Err(TranslateError::untranslatable(field, "is not an integer")),
    }
}

/// `raw` read as a boolean.
pub(super) fn boolean(raw: &RawValue, field: &str) -> Result<bool, TranslateError> {
    match raw.get() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(TranslateError::untranslatable(field, "is not a boolean")),
    }
}

/// `raw` read as an array of raw values.
pub(super) fn array<'a>(
    raw: &'a RawValue,
    field: &str,
) -> Result<Vec<&'a RawValue>, TranslateError> {
    match lead(raw) {
        b'[' => serde_json::from_str(raw.get())
            .map_err(|_| TranslateError::untranslatable(field, "is not an array")),
        _ => Err(TranslateError::untranslatable(field, "is not an array")),
    }
}

/// `raw` read as a string's value (for enums and discriminators; never copied back).
pub(super) fn text(raw: &RawValue, field: &str) -> Result<String, TranslateError> {
    serde_json::from_str::<String>(raw.get())
        .map_err(|_| TranslateError::untranslatable(field, "is not a string"))
}

/// A JSON value being written: copied raw text, a literal the translator chose, an object of
/// known member names, or an array.
#[derive(Debug)]
pub(super) enum Out<'a> {
    /// Text copied as it came.
    Raw(&'a RawValue),
    /// JSON text the translator writes (`"user"`, `true`, `null`).
    Lit(&'static str),
    /// JSON text the translator built (a code it chose, a string it escaped).
    Owned(String),
    /// An object; `None` values are left out.
    Obj(Vec<(&'static str, Option<Out<'a>>)>),
    /// An object whose member names came with the input (copied metadata with a member added
    /// or taken out); each name is written as a JSON string.
    Map(Vec<(String, Out<'a>)>),
    /// An array.
    Arr(Vec<Out<'a>>),
}

impl Out<'_> {
    /// The JSON text.
    pub(super) fn to_json(&self) -> String {
        let mut s = String::new();
        self.write(&mut s);
        s
    }

    fn write(&self, s: &mut String) {
        match self {
            Out::Raw(r) => s.push_str(r.get()),
            Out::Lit(l) => s.push_str(l),
            Out::Owned(t) => s.push_str(t),
            Out::Obj(members) => {
                s.push('{');
                let mut first = true;
                for (k, v) in members {
                    let Some(v) = v else { continue };
                    if !first {
                        s.push(',');
                    }
                    first = false;
                    // Member names are the translator's own ASCII identifiers: no escaping.
                    s.push('"');
                    s.push_str(k);
                    s.push_str("\":");
                    v.write(s);
                }
                s.push('}');
            }
            Out::Map(members) => {
                s.push('{');
                for (i, (k, v)) in members.iter().enumerate() {
                    if i > 0 {
                        s.push(',');
                    }
                    // A name read from JSON text is valid UTF-8: serialising it cannot fail.
                    s.push_str(&serde_json::to_string(k).unwrap_or_default());
                    s.push(':');
                    v.write(s);
                }
                s.push('}');
            }
            Out::Arr(items) => {
                s.push('[');
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        s.push(',');
                    }
                    v.write(s);
                }
                s.push(']');
            }
        }
    }
}

/// The path of member `key` below `field` (`field.key`), put together without the formatting
/// machinery: every member the translator reads builds one, on every call.
pub(super) fn member(field: &str, key: &str) -> String {
    let mut s = String::with_capacity(field.len() + 1 + key.len());
    s.push_str(field);
    s.push('.');
    s.push_str(key);
    s
}

/// The path of element `i` of `field` (`field[i]`), as [`member`] does (only the index goes
/// through the formatter).
pub(super) fn index(field: &str, i: usize) -> String {
    let mut s = String::with_capacity(field.len() + 8);
    s.push_str(field);
    s.push('[');
    let _ = write!(s, "{i}");
    s.push(']');
    s
}

/// Each element of the array `raw` through `f`, with its path `field[i]`.
pub(super) fn each<'a>(
    raw: &'a RawValue,
    field: &str,
    f: impl Fn(&'a RawValue, &str) -> Result<Out<'a>, TranslateError>,
) -> Result<Out<'a>, TranslateError> {
    let items = array(raw, field)?;
    let mut out = Vec::with_capacity(items.len());
    for (i, v) in items.into_iter().enumerate() {
        out.push(f(v, &index(field, i))?);
    }
    Ok(Out::Arr(out))
}

/// `f` of the member `key` of `o`, when present.
pub(super) fn opt<'a>(
    o: &Obj<'a>,
    key: &str,
    field: &str,
    f: impl FnOnce(&'a RawValue, &str) -> Result<Out<'a>, TranslateError>,
) -> Result<Option<Out<'a>>, TranslateError> {
    o.get(key).map(|v| f(v, &member(field, key))).transpose()
}

/// `f` of the member `key` of `o`, which must be present.
pub(super) fn req<'a>(
    o: &Obj<'a>,
    key: &str,
    field: &str,
    f: impl FnOnce(&'a RawValue, &str) -> Result<Out<'a>, TranslateError>,
) -> Result<Option<Out<'a>>, TranslateError> {
    let path = member(field, key);
    match o.get(key) {
        Some(v) => f(v, &path).map(Some),
        None => Err(TranslateError::untranslatable(&path, "is required")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_written_as_format_would() {
        for i in [0, 7, 10, 99, 1234, usize::MAX] {
            assert_eq!(index("params.parts", i), format!("params.parts[{i}]"));
        }
        assert_eq!(member("result", "kind"), "result.kind");
        assert_eq!(member("", "a"), ".a");
    }

    #[test]
    fn escaped_member_names_are_read_and_duplicates_refused_at_any_size() {
        let o = Obj::parse_str(r#"{"k\u0069nd":"task","id":"t"}"#, "r").unwrap();
        assert_eq!(o.get("kind").map(RawValue::get), Some(r#""task""#));
        let e = Obj::parse_str(r#"{"kind":1,"k\u0069nd":2}"#, "r")
            .err()
            .unwrap();
        assert!(e.to_string().contains("appears twice"), "{e}");
        for n in [16, 17, 40] {
            let members: Vec<String> = (0..n).map(|i| format!("\"m{i}\":{i}")).collect();
            let body = format!("{{{},\"m3\":0}}", members.join(","));
            let e = Obj::parse_str(&body, "r").err().unwrap();
            assert!(e.to_string().contains("appears twice"), "{n}: {e}");
            assert!(Obj::parse_str(&format!("{{{}}}", members.join(",")), "r").is_ok());
        }
    }
}
