//! The card's wire form: bounded reading, JSON parsing that detects duplicate object keys, and the
//! JSON paths used in every validation message (pure; [`read_bounded`] reads only from the reader it is given).
//!
//! Why duplicates matter: `serde_json::Value` silently keeps the last of two equal keys, so
//! `{"url":"https://good","url":"https://evil"}` would validate one value while another JSON reader
//! (or a signature verifier) may see the other. The detection is [`crate::json::duplicate_keys`],
//! the same scan the data plane runs over request bodies.

use std::fmt::{self, Write as _};
use std::io::Read;

use serde_json::Value;

pub(crate) use crate::json::quote;
use crate::json::{duplicate_keys, push_key};

/// Most duplicate keys reported for one card (each is one validation problem).
const MAX_DUPLICATES_REPORTED: usize = 32;

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
    let value: Value = serde_json::from_slice(bytes)?;
    // serde_json accepted the bytes, so they are UTF-8 and JSON; the scan cannot fail on them,
    // except on nesting serde_json itself would have refused.
    let duplicates = std::str::from_utf8(bytes)
        .ok()
        .and_then(|text| duplicate_keys(text, MAX_DUPLICATES_REPORTED).ok())
        .unwrap_or_default();
    Ok(Parsed { value, duplicates })
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
