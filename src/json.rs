//! Strict reading of JSON text, shared by the card validator, the data plane and the content guard:
//! one walk over the text's structure and string literals, duplicate object keys and the JSON path
//! of each, path rendering that is safe to echo, and the memory a `serde_json::Value` of a
//! document would take (pure, no I/O).
//!
//! Why a scan of our own next to serde_json: `serde_json::Value` silently keeps the last of two
//! equal keys, and other readers keep the first, so `{"method":"GetExtendedAgentCard",
//! "method":"GetTask"}` means one operation to the gateway and another to some agent. A document
//! with a duplicated key is therefore refused, never interpreted. The scan runs over text that
//! serde_json has already accepted, compares keys after unescaping (`"a"` and `"\u0061"` are the same
//! key, as every JSON reader decodes them), and never interprets numbers: a request carrying numbers
//! no float can hold (`1e400`, a 30-digit id) is checked without being refused or changed.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt::Write as _;

mod tree;
pub use tree::{
    Bound, MAX_TREE_PER_BYTE, TREE_BUDGET, TREE_FIXED, check_tree, check_tree_text, tree_bound,
};

/// Deepest nesting scanned (serde_json's own default limit, so both agree on what is too deep).
pub const MAX_DEPTH: usize = 128;

/// Why a scan stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ScanError {
    /// Objects and arrays nested deeper than [`MAX_DEPTH`].
    #[error("JSON nested deeper than {MAX_DEPTH} levels")]
    TooDeep,
    /// The text is not JSON (callers validate first; this only keeps the scan total).
    #[error("not well-formed JSON")]
    Malformed,
    /// Its `serde_json::Value` would take more than [`TREE_BUDGET`] ([`check_tree`]).
    #[error(
        "the agent's answer would take {mib} MiB to read, over the {} MiB the gateway holds per answer",
        TREE_BUDGET >> 20
    )]
    TooLarge {
        /// The bound of [`tree_bound`], in MiB rounded up.
        mib: usize,
    },
}

/// Objects with more keys than this get a hash set of their own; smaller ones (nearly all) are
/// searched linearly in the shared key stack, so scanning allocates nothing per object.
const LINEAR_KEYS: usize = 16;

/// One open container during the scan.
enum Frame<'a> {
    Object {
        /// Where this object's keys begin in the shared key stack: they are
        /// `keys[start..]` while it is the innermost object, and end where the next open object's
        /// begin otherwise (its last key is then the one that object is the value of).
        start: usize,
        /// The same keys, once there are more than [`LINEAR_KEYS`].
        set: Option<HashSet<Cow<'a, str>>>,
    },
    Array {
        index: usize,
    },
}

/// One structural event of the walk over JSON text (see [`walk`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Token {
    /// `{` (`object`) or `[` opens a container, at byte offset `at`.
    Open { object: bool, at: usize },
    /// `}` or `]`, at byte offset `at`, closes the innermost container.
    Close { at: usize },
    /// `,` inside an array: the next element begins.
    NextIndex,
    /// An object key: the string literal whose quotes are at `open` and `close`.
    Key { open: usize, close: usize },
    /// A string value: the literal whose quotes are at `open` and `close`.
    Str { open: usize, close: usize },
    /// A number, `true`, `false` or `null`: the bytes `start..end`.
    Scalar { start: usize, end: usize },
}

/// The one walk over JSON text every reader of this module shares: calls `on` for each container,
/// array element boundary, key, string value and other scalar, in document order; whitespace and
/// separators are skipped. Fails on nesting deeper than [`MAX_DEPTH`] and on unbalanced or
/// unterminated text (for anything else the events are unspecified but the walk terminates).
pub fn walk(
    text: &str,
    mut on: impl FnMut(Token) -> Result<(), ScanError>,
) -> Result<(), ScanError> {
    let bytes = text.as_bytes();
    // Whether each open container is an object.
    let mut objects: Vec<bool> = Vec::new();
    let mut expect_key = false;
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'{' | b'[' => {
                if objects.len() >= MAX_DEPTH {
                    return Err(ScanError::TooDeep);
                }
                objects.push(b == b'{');
                expect_key = b == b'{';
                on(Token::Open {
                    object: b == b'{',
                    at: i,
                })?;
            }
            b'}' | b']' => {
                objects.pop().ok_or(ScanError::Malformed)?;
                expect_key = false;
                on(Token::Close { at: i })?;
            }
            b',' => match objects.last() {
                Some(false) => on(Token::NextIndex)?,
                Some(true) => expect_key = true,
                None => return Err(ScanError::Malformed),
            },
            b'"' => {
                let close = string_end(bytes, i)?;
                on(if expect_key {
                    Token::Key { open: i, close }
                } else {
                    Token::Str { open: i, close }
                })?;
                expect_key = false;
                i = close;
            }
            b'-' | b'0'..=b'9' | b't' | b'f' | b'n' => {
                let len = bytes
                    .get(i..)
                    .unwrap_or_default()
                    .iter()
                    // A quote too: in text that is not JSON (`[t"]`) the string is still seen.
                    .position(|b| {
                        matches!(b, b',' | b'}' | b']' | b'"' | b' ' | b'\t' | b'\n' | b'\r')
                    })
                    .unwrap_or(bytes.len() - i);
                on(Token::Scalar {
                    start: i,
                    end: i + len,
                })?;
                i += len - 1;
            }
            _ => {}
        }
        i += 1;
    }
    if objects.is_empty() {
        Ok(())
    } else {
        Err(ScanError::Malformed)
    }
}

/// One step of a path into a JSON document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seg<'a> {
    /// An object member, by its unescaped key.
    Key(Cow<'a, str>),
    /// An array element, by index.
    Index(usize),
}

/// A string literal met by [`visit_strings`].
#[derive(Debug)]
pub struct StringSite<'s, 'a> {
    /// Where it is: for a value, the path to it; for a key, the path to the member it names.
    pub path: &'s [Seg<'a>],
    /// Whether the literal is an object key.
    pub key: bool,
    /// Byte offsets of its opening and closing quotes.
    pub open: usize,
    /// See `open`.
    pub close: usize,
}

/// Calls `f` for every string literal of `text` (keys and values), in document order, with its
/// path, through [`walk`].
pub fn visit_strings<'a>(
    text: &'a str,
    mut f: impl FnMut(&StringSite<'_, 'a>),
) -> Result<(), ScanError> {
    // One segment per open container: the key or index of its current member.
    // Room for the usual depth (a SendMessage's data part is about eight deep).
    let mut segs: Vec<Seg<'a>> = Vec::with_capacity(16);
    walk(text, |t| {
        match t {
            Token::Open { object, .. } => {
                segs.push(if object {
                    Seg::Key(Cow::Borrowed(""))
                } else {
                    Seg::Index(0)
                });
            }
            Token::Close { .. } => {
                segs.pop();
            }
            Token::NextIndex => {
                if let Some(Seg::Index(n)) = segs.last_mut() {
                    *n += 1;
                }
            }
            Token::Key { open, close } => {
                let key = unescape(text, open, close)?;
                if let Some(last) = segs.last_mut() {
                    *last = Seg::Key(key);
                }
                f(&StringSite {
                    path: &segs,
                    key: true,
                    open,
                    close,
                });
            }
            Token::Str { open, close } => {
                f(&StringSite {
                    path: &segs,
                    key: false,
                    open,
                    close,
                });
            }
            Token::Scalar { .. } => {}
        }
        Ok(())
    })
}

/// Renders a path as [`duplicate_keys`] does (`params.message.parts[0].text`, `$` for the root).
pub fn render_path(path: &[Seg<'_>]) -> String {
    let mut s = String::new();
    for seg in path {
        match seg {
            Seg::Key(k) => push_key(&mut s, k),
            Seg::Index(n) => {
                let _ = write!(s, "[{n}]");
            }
        }
    }
    if s.is_empty() { "$".into() } else { s }
}

/// The JSON paths (e.g. `params.message.parts[0].mediaType`, `$` for the root) of the first `limit`
/// duplicated object keys in `text`, in document order. `text` should already be known to be JSON
/// (for example parsed by serde_json); for anything else the result is unspecified but the scan
/// still terminates without panicking.
pub fn duplicate_keys(text: &str, limit: usize) -> Result<Vec<String>, ScanError> {
    let mut stack: Vec<Frame<'_>> = Vec::new();
    // Keys of every open object, unescaped (borrowed unless they contained an escape).
    let mut keys: Vec<Cow<'_, str>> = Vec::new();
    let mut found = Vec::new();
    walk(text, |t| {
        match t {
            Token::Open { object, .. } => stack.push(if object {
                Frame::Object {
                    start: keys.len(),
                    set: None,
                }
            } else {
                Frame::Array { index: 0 }
            }),
            Token::Close { .. } => {
                if let Some(Frame::Object { start, .. }) = stack.pop() {
                    keys.truncate(start);
                }
            }
            Token::NextIndex => {
                if let Some(Frame::Array { index }) = stack.last_mut() {
                    *index += 1;
                }
            }
            Token::Key { open, close } => {
                let key = unescape(text, open, close)?;
                if let Some(Frame::Object { start, set }) = stack.last_mut() {
                    let own = keys.get(*start..).unwrap_or_default();
                    let duplicate = match set {
                        Some(set) => !set.insert(key.clone()),
                        None => own.contains(&key),
                    };
                    if set.is_none() && own.len() >= LINEAR_KEYS {
                        *set = Some(own.iter().cloned().chain([key.clone()]).collect());
                    }
                    keys.push(key);
                    if duplicate && found.len() < limit {
                        found.push(render(&stack, &keys));
                    }
                }
            }
            Token::Str { .. } | Token::Scalar { .. } => {}
        }
        Ok(())
    })?;
    Ok(found)
}

/// Index of the closing quote of the string that opens at `start`.
fn string_end(bytes: &[u8], start: usize) -> Result<usize, ScanError> {
    let mut j = start + 1;
    loop {
        // Straight to the next quote or backslash: string contents are most of a body's bytes,
        // and memchr reads them many at a time.
        let rest = bytes.get(j..).ok_or(ScanError::Malformed)?;
        j += memchr::memchr2(b'"', b'\\', rest).ok_or(ScanError::Malformed)?;
        match bytes.get(j) {
            Some(b'\\') => j += 2,
            _ => return Ok(j),
        }
    }
}

/// The string between the quotes at `start` and `end`, unescaped only when it contains an escape.
pub fn unescape(text: &str, start: usize, end: usize) -> Result<Cow<'_, str>, ScanError> {
    let raw = text.get(start + 1..end).ok_or(ScanError::Malformed)?;
    if !raw.contains('\\') {
        return Ok(Cow::Borrowed(raw));
    }
    let quoted = text.get(start..=end).ok_or(ScanError::Malformed)?;
    serde_json::from_str::<String>(quoted)
        .map(Cow::Owned)
        .map_err(|_| ScanError::Malformed)
}

/// The path of the latest key of the innermost object, through every open container.
fn render(stack: &[Frame<'_>], keys: &[Cow<'_, str>]) -> String {
    let mut s = String::new();
    for (n, frame) in stack.iter().enumerate() {
        match frame {
            Frame::Object { start, .. } => {
                // This object's keys end where the next open object's begin.
                let end = stack
                    .get(n + 1..)
                    .unwrap_or_default()
                    .iter()
                    .find_map(|f| match f {
                        Frame::Object { start, .. } => Some(*start),
                        Frame::Array { .. } => None,
                    })
                    .unwrap_or(keys.len());
                if end > *start
                    && let Some(k) = end.checked_sub(1).and_then(|last| keys.get(last))
                {
                    push_key(&mut s, k);
                }
            }
            Frame::Array { index } => {
                let _ = write!(s, "[{index}]");
            }
        }
    }
    if s.is_empty() { "$".into() } else { s }
}

/// Longest key (in chars) echoed into a path; keys come from whoever wrote the document.
const MAX_KEY_IN_PATH: usize = 64;

/// Appends `.key` for plain identifiers, else `["…"]` with every non-printable-ASCII character
/// escaped, so a hostile key cannot inject terminal control or bidi characters into messages.
pub fn push_key(s: &mut String, key: &str) {
    let plain = !key.is_empty()
        && key.len() <= MAX_KEY_IN_PATH
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'$')
        && !key.starts_with(|c: char| c.is_ascii_digit());
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

/// A string from outside made safe for a one-line message: double-quoted, anything outside
/// printable ASCII escaped as `\u{…}`, cut after 64 chars.
pub fn quote(text: &str) -> String {
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

    fn dups(text: &str) -> Vec<String> {
        duplicate_keys(text, usize::MAX).unwrap()
    }

    #[test]
    fn scalars_are_tokens_with_their_exact_bytes_and_a_quote_after_one_is_still_a_string() {
        let mut seen = Vec::new();
        let text = "[-0.5e+10, true,false ,null,{\"a\":7}]";
        walk(text, |t| {
            if let Token::Scalar { start, end } = t {
                seen.push(&text[start..end]);
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, ["-0.5e+10", "true", "false", "null", "7"]);
        // Not JSON: the quote opens an unterminated string, as it did before scalars were seen.
        assert_eq!(walk("[t\"]", |_| Ok(())), Err(ScanError::Malformed));
    }

    #[test]
    fn duplicates_anywhere_with_their_paths_in_document_order() {
        assert_eq!(
            dups(r#"{"a":1,"b":[{"x":1,"x":2}],"a":3,"c":{"d":{"e":0,"e":1}}}"#),
            vec!["b[0].x", "a", "c.d.e"]
        );
        assert_eq!(
            dups(r#"[1,{"k":[0,0,{"z":1,"y":2,"z":3}]}]"#),
            vec!["[1].k[2].z"]
        );
        assert_eq!(dups(r#"{"":1,"":2}"#), vec![r#"[""]"#]);
    }

    #[test]
    fn keys_compare_after_unescaping_and_strings_are_not_keys() {
        assert_eq!(dups(r#"{"method":1,"\u006dethod":2}"#), vec!["method"]);
        assert_eq!(dups(r#"{"a\"b":1,"a\u0022b":2}"#), vec![r#"["a\"b"]"#]);
        // Values that look like keys, braces and escapes inside strings are not structure.
        assert!(dups(r#"{"a":"a","b":"{\"a\":1,\"a\":2}","c":["a","a"],"d\\":"\\"}"#).is_empty());
        assert!(dups(r#"{"a":{"a":{"a":1}}}"#).is_empty());
        // Same key in sibling objects is fine.
        assert!(dups(r#"[{"a":1},{"a":1}]"#).is_empty());
    }

    #[test]
    fn numbers_are_never_interpreted() {
        let t = r#"{"big":1e400,"id":123456789012345678901234567890,"d":0.1000000000000000055511151231257827}"#;
        assert!(dups(t).is_empty());
        assert_eq!(dups(r#"{"n":1e400,"n":-0.0e-0}"#), vec!["n"]);
    }

    #[test]
    fn depth_limit_and_malformed_text_terminate() {
        let deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
        assert_eq!(duplicate_keys(&deep, 1), Err(ScanError::TooDeep));
        let ok = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
        assert_eq!(duplicate_keys(&ok, 1), Ok(vec![]));
        for bad in ["{", "}", "\"abc", "{\"a\\", "[1,2", ",", "{\"a\":1}}"] {
            assert_eq!(duplicate_keys(bad, 1), Err(ScanError::Malformed), "{bad}");
        }
    }

    #[test]
    fn large_objects_switch_to_a_set_and_paths_stay_right() {
        let members: Vec<String> = (0..40)
            .map(|i| format!(r#""k{i}":{{"x":[{{}}]}}"#))
            .collect();
        let text = format!(
            r#"{{"a":{{{}, "k39":1, "k3":{{"z":1,"z":2}}}}}}"#,
            members.join(",")
        );
        assert_eq!(dups(&text), vec!["a.k39", "a.k3", "a.k3.z"]);
        let nested = r#"{"a":[{"b":1},{"b":2,"c":{"d":1,"d":2}}],"e":{"f":1},"a":0}"#;
        assert_eq!(dups(nested), vec!["a[1].c.d", "a"]);
    }

    #[test]
    fn limit_bounds_the_report() {
        let many = format!(
            "{{{}}}",
            (0..100).map(|_| r#""k":1"#).collect::<Vec<_>>().join(",")
        );
        assert_eq!(duplicate_keys(&many, 3).unwrap().len(), 3);
    }

    #[test]
    fn visit_strings_gives_every_literal_with_its_path() {
        let text = r#"{"a":["x",{"b\u0063":"y"},1,"z"],"k":{}}"#;
        let mut seen = Vec::new();
        visit_strings(text, |s| {
            seen.push((render_path(s.path), s.key, &text[s.open..=s.close]));
        })
        .unwrap();
        let want = [
            ("a", true, r#""a""#),
            ("a[0]", false, r#""x""#),
            ("a[1].bc", true, r#""b\u0063""#),
            ("a[1].bc", false, r#""y""#),
            ("a[3]", false, r#""z""#),
            ("k", true, r#""k""#),
        ];
        let want: Vec<(String, bool, &str)> = want
            .iter()
            .map(|(p, k, l)| (p.to_string(), *k, *l))
            .collect();
        assert_eq!(seen, want);
    }

    #[test]
    fn hostile_keys_are_escaped_in_paths() {
        assert_eq!(
            dups("{\"my key\u{202e}\":{\"x\":1,\"x\":2}}"),
            vec![r#"["my key\u{202e}"].x"#]
        );
        let mut s = String::new();
        push_key(&mut s, &"k".repeat(100));
        assert!(s.ends_with("…\"]"), "{s}");
    }
}
