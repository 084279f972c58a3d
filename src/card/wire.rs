//! The card's wire form: bounded reading, JSON parsing that detects duplicate object keys, and the
//! JSON paths used in every validation message (pure; [`read_bounded`] reads only from the reader it is given).
//!
//! Why a parser of our own on top of serde_json: `serde_json::Value` silently keeps the last of two
//! equal keys, so `{"url":"https://good","url":"https://evil"}` would validate one value while another
//! JSON reader (or a signature verifier) may see the other. We build the `Value` in one pass with a
//! visitor that notices duplicates, so detection costs nothing beyond the parse itself.

use std::fmt::{self, Write as _};
use std::io::Read;

use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Reads at most `limit + 1` bytes from `reader`, so an oversized card is refused without being
/// buffered whole; [`crate::card::validate()`] then reports it as too large.
pub fn read_bounded<R: Read>(reader: R, limit: usize) -> std::io::Result<Vec<u8>> {
    let mut buf = Vec::with_capacity(limit.min(64 * 1024) + 1);
    reader
        .take(u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1))
        .read_to_end(&mut buf)?;
    Ok(buf)
}

/// A JSON document parsed strictly.
#[derive(Debug)]
pub(crate) struct Parsed {
    /// The value (for a duplicated key: the last occurrence, as serde_json would keep).
    pub value: Value,
    /// The JSON path of every duplicated key, in document order.
    pub duplicates: Vec<String>,
}

/// Parses one JSON document (trailing non-whitespace is an error), noting duplicate keys.
pub(crate) fn parse(bytes: &[u8]) -> Result<Parsed, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let (value, dups) = ValueSeed.deserialize(&mut de)?;
    de.end()?;
    let duplicates = dups
        .into_iter()
        .map(|mut rev| {
            rev.reverse();
            render_owned(&rev)
        })
        .collect();
    Ok(Parsed { value, duplicates })
}

/// A path segment owned by the parser (keys come from the document).
#[derive(Debug)]
enum OwnedSeg {
    Key(String),
    Index(usize),
}

/// Duplicate-key paths built bottom-up: each level appends its own segment only when a child
/// reported something, so the common case (no duplicates) allocates nothing extra.
type Dups = Vec<Vec<OwnedSeg>>;

struct ValueSeed;

impl<'de> DeserializeSeed<'de> for ValueSeed {
    type Value = (Value, Dups);

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(ValueVisitor)
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = (Value, Dups);

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
        Ok((Value::Bool(v), Vec::new()))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok((Value::Number(v.into()), Vec::new()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok((Value::Number(v.into()), Vec::new()))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
        // JSON cannot spell NaN or infinity, so this is always Some for parsed input.
        Ok((
            Number::from_f64(v).map_or(Value::Null, Value::Number),
            Vec::new(),
        ))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok((Value::String(v.to_owned()), Vec::new()))
    }
    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok((Value::String(v), Vec::new()))
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok((Value::Null, Vec::new()))
    }
    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok((Value::Null, Vec::new()))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
        let mut dups = Vec::new();
        while let Some((v, d)) = seq.next_element_seed(ValueSeed)? {
            let i = out.len();
            for mut p in d {
                p.push(OwnedSeg::Index(i));
                dups.push(p);
            }
            out.push(v);
        }
        Ok((Value::Array(out), dups))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = Map::new();
        let mut dups = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            let (v, d) = map.next_value_seed(ValueSeed)?;
            for mut p in d {
                p.push(OwnedSeg::Key(key.clone()));
                dups.push(p);
            }
            if out.contains_key(&key) {
                dups.push(vec![OwnedSeg::Key(key.clone())]);
            }
            out.insert(key, v);
        }
        Ok((Value::Object(out), dups))
    }
}

fn render_owned(segs: &[OwnedSeg]) -> String {
    let mut s = String::new();
    for seg in segs {
        match seg {
            OwnedSeg::Key(k) => push_key(&mut s, k),
            OwnedSeg::Index(i) => {
                let _ = write!(s, "[{i}]");
            }
        }
    }
    if s.is_empty() { "$".into() } else { s }
}

/// One step of a JSON path.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Seg<'a> {
    Root,
    Key(&'a str),
    Index(usize),
}

/// A JSON path as a chain of borrowed segments on the validator's stack: building one costs
/// nothing; it is rendered to text only when a problem is reported.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Path<'a> {
    parent: Option<&'a Path<'a>>,
    seg: Seg<'a>,
}

impl<'a> Path<'a> {
    /// The document root (rendered `$`).
    pub const ROOT: Path<'static> = Path {
        parent: None,
        seg: Seg::Root,
    };

    /// The member `key` of this object.
    pub fn key<'b>(&'b self, key: &'b str) -> Path<'b> {
        Path {
            parent: Some(self),
            seg: Seg::Key(key),
        }
    }

    /// Element `i` of this array.
    pub fn index<'b>(&'b self, i: usize) -> Path<'b> {
        Path {
            parent: Some(self),
            seg: Seg::Index(i),
        }
    }
}

impl fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut segs = Vec::new();
        let mut cur = Some(self);
        while let Some(p) = cur {
            segs.push(p.seg);
            cur = p.parent;
        }
        let mut s = String::new();
        for seg in segs.iter().rev() {
            match seg {
                Seg::Root => {}
                Seg::Key(k) => push_key(&mut s, k),
                Seg::Index(i) => {
                    let _ = write!(s, "[{i}]");
                }
            }
        }
        f.write_str(if s.is_empty() { "$" } else { &s })
    }
}

/// Longest key (in chars) echoed into a path; keys are provider-written.
const MAX_KEY_IN_PATH: usize = 64;

/// Appends `.key` for plain identifiers, else `["…"]` with every non-printable-ASCII character
/// escaped, so a hostile key cannot inject terminal control or bidi characters into messages.
fn push_key(s: &mut String, key: &str) {
    let plain = !key.is_empty()
        && key.len() <= MAX_KEY_IN_PATH
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'$')
        && !key.bytes().next().is_some_and(|b| b.is_ascii_digit());
    if plain {
        if !s.is_empty() {
            s.push('.');
        }
        s.push_str(key);
    } else {
        s.push('[');
        s.push_str(&quote(key));
        s.push(']');
    }
}

/// A provider-written string made safe for a one-line message: double-quoted, anything outside
/// printable ASCII escaped as `\u{…}`, cut after 64 chars.
pub(crate) fn quote(text: &str) -> String {
    let mut s = String::with_capacity(text.len().min(80) + 2);
    s.push('"');
    for (n, c) in text.chars().enumerate() {
        if n == MAX_KEY_IN_PATH {
            s.push('…');
            break;
        }
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            ' '..='~' => s.push(c),
            _ => {
                let _ = write!(s, "\\u{{{:x}}}", c as u32);
            }
        }
    }
    s.push('"');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates_are_found_with_their_paths() {
        let p = parse(br#"{"a":1,"b":[{"x":1,"x":2}],"a":3,"c":{"d":{"e":0,"e":1}}}"#).unwrap();
        assert_eq!(p.duplicates, vec!["b[0].x", "a", "c.d.e"]);
        // serde_json semantics for the value itself: the last occurrence wins.
        assert_eq!(p.value["a"], 3);
    }

    #[test]
    fn no_duplicates_and_same_value_as_serde_json() {
        let text = br#"{"z":[1,-2,3.5,1e300,"s",null,true],"a":{"k":"v"}}"#;
        let p = parse(text).unwrap();
        assert!(p.duplicates.is_empty());
        assert_eq!(p.value, serde_json::from_slice::<Value>(text).unwrap());
        // preserve_order: document order is kept (JCS sorts later, where it matters).
        assert_eq!(p.value.as_object().unwrap().keys().next().unwrap(), "z");
    }

    #[test]
    fn trailing_garbage_and_bad_json_are_errors() {
        assert!(parse(b"{} {}").is_err());
        assert!(parse(b"{\"a\":}").is_err());
        assert!(parse(b"").is_err());
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        let deep = "[".repeat(100_000);
        assert!(parse(deep.as_bytes()).is_err());
    }

    #[test]
    fn paths_render_and_escape_hostile_keys() {
        let root = Path::ROOT;
        let a = root.key("supportedInterfaces");
        let b = a.index(1);
        let c = b.key("url");
        assert_eq!(c.to_string(), "supportedInterfaces[1].url");
        assert_eq!(root.to_string(), "$");
        let s = root.key("securitySchemes");
        let k = s.key("my scheme\u{202e}");
        assert_eq!(k.to_string(), r#"securitySchemes["my scheme\u{202e}"]"#);
    }

    #[test]
    fn bounded_read_stops_after_limit_plus_one() {
        let data = vec![b'x'; 10_000];
        assert_eq!(read_bounded(&data[..], 100).unwrap().len(), 101);
        assert_eq!(read_bounded(&data[..], 20_000).unwrap().len(), 10_000);
    }
}
