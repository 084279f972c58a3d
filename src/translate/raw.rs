//! Raw JSON for the translator (pure, no I/O): a document read once into the byte ranges of its
//! values, an object read as its members, each value kept as the agent's or the caller's exact
//! text, and a small output tree written back from those texts.
//!
//! Why not `serde_json::Value`: without `arbitrary_precision` it turns a 30-digit id or a long
//! decimal into an `f64`, and it re-escapes strings. Here every value that is copied (ids,
//! numbers, strings, metadata, a data part's data) keeps its bytes; only the structure the two
//! protocol versions disagree on is rebuilt.
//!
//! Why a [`Doc`] and not a `RawValue` per level: reading a `RawValue`'s members scans all the
//! text it holds, so a text part five levels down was scanned once per level (a 1 KB 0.3 call
//! spent most of its translation there). The document is validated once by serde_json and
//! walked once ([`crate::json::walk`]); every read after that is a lookup.

use std::borrow::Cow;
use std::fmt::Write as _;

use super::TranslateError;
use crate::json::{
    Bound, MAX_TREE_PER_BYTE, ScanError, TREE_BUDGET, TREE_FIXED, Token, unescape, walk,
};

/// No key (an array element, the root) or no next sibling.
const NONE: u32 = u32::MAX;

/// One value of a [`Doc`]: its text's byte range, the opening quote of its key when it is an
/// object's member, and the next value of the same container. The first member of a non-empty
/// container is the node right after it (document order), so no child link is kept: 20 bytes
/// a value, under the 32 of a `serde_json::Value` (the tree budget's bound holds).
#[derive(Debug, Clone, Copy)]
struct Node {
    start: u32,
    end: u32,
    key: u32,
    key_end: u32,
    next: u32,
}

/// A JSON document validated by serde_json and indexed by one walk (see the module doc).
#[derive(Debug)]
pub(super) struct Doc<'a> {
    text: &'a str,
    nodes: Vec<Node>,
}

impl<'a> Doc<'a> {
    /// Reads `text` (a caller's request), `field` naming it in the error: refused when it is not
    /// one JSON value, when it nests deeper than [`crate::json::MAX_DEPTH`], and when it holds
    /// more values than a `serde_json::Value` tree within [`TREE_BUDGET`] could (each takes at
    /// least one `Value` there; a [`Node`] is 20 bytes of its 32), before the index grows past that.
    pub(super) fn parse(text: &'a str, field: &str) -> Result<Doc<'a>, TranslateError> {
        Doc::read(text, field, false)
    }

    /// [`Doc::parse`] of an agent's answer or event, refused too when its `Value` tree would be
    /// over [`TREE_BUDGET`] ([`crate::json::tree_bound`], counted in the same walk): what every
    /// reader of an answer refuses, so a translated one is no exception.
    pub(super) fn answer(text: &'a str, field: &str) -> Result<Doc<'a>, TranslateError> {
        Doc::read(text, field, true)
    }

    fn read(text: &'a str, field: &str, bounded: bool) -> Result<Doc<'a>, TranslateError> {
        let refused = || TranslateError::untranslatable(field, "is not JSON");
        if u32::try_from(text.len()).is_err() {
            return Err(refused());
        }
        // A text too short for its tree to reach the budget is not counted (the bound costs as
        // much as the rest of the walk): nested raw-value texts aside, which only
        // `serde_json::Value` readers unfold, and they judge the budget themselves.
        let counted = bounded && text.len() > SMALL_ANSWER;
        let mut bound = counted.then(|| Bound::of(text));
        // The walk first: it names depth and size, which serde_json would report as a syntax
        // error. It only locates, so the strict parse after it still judges the text.
        let over = |mib: usize| TranslateError::TooLarge { mib };
        let nodes = index_of(text, bound.as_mut()).map_err(|e| match e {
            ScanError::TooDeep => TranslateError::untranslatable(field, "is nested too deeply"),
            // Stopped at the node cap: the bound of the whole text names the size (text it
            // cannot read is no JSON, whatever its size).
            ScanError::TooLarge { .. } => match crate::json::tree_bound(text) {
                Ok(n) => over(n.div_ceil(1 << 20).max((TREE_BUDGET >> 20) + 1)),
                Err(_) => refused(),
            },
            ScanError::Malformed => refused(),
        })?;
        if let Some(Err(ScanError::TooLarge { mib })) = bound.map(|b| b.check()) {
            return Err(over(mib));
        }
        serde_json::from_str::<serde::de::IgnoredAny>(text).map_err(|_| refused())?;
        if nodes.is_empty() {
            return Err(refused());
        }
        Ok(Doc { text, nodes })
    }

    /// The document's value.
    pub(super) fn root(&'a self) -> Val<'a> {
        Val { doc: self, i: 0 }
    }
}

/// The longest answer whose tree bound is not counted: its tree takes at most
/// `MAX_TREE_PER_BYTE` per byte plus `TREE_FIXED`, half the budget at this length.
const SMALL_ANSWER: usize = (TREE_BUDGET / 2 - TREE_FIXED) / MAX_TREE_PER_BYTE;

/// Most values a [`Doc`] indexes: as many as the smallest `serde_json::Value` tree within
/// [`TREE_BUDGET`] holds.
const MAX_NODES: usize = TREE_BUDGET / size_of::<serde_json::Value>();

/// The nodes of `text` in document order, through the one walk ([`walk`]); `TooLarge` past
/// [`MAX_NODES`], counting each token into `bound` when given. `text` is shorter than `u32::MAX` (the caller checked).
fn index_of(text: &str, mut bound: Option<&mut Bound<'_>>) -> Result<Vec<Node>, ScanError> {
    let mut nodes: Vec<Node> = Vec::new();
    // Each open container and its latest member.
    let mut open: Vec<(u32, u32)> = Vec::new();
    let mut key = (NONE, NONE);
    let at = |n: usize| u32::try_from(n).unwrap_or(NONE);
    walk(text, |t| {
        if let Some(b) = bound.as_deref_mut() {
            b.on(t)?;
        }
        let (start, end, container) = match t {
            Token::Open { at: a, .. } => (a, a, true),
            Token::Str { open: o, close } => (o, close + 1, false),
            Token::Scalar { start, end } => (start, end, false),
            Token::Key { open: o, close } => {
                key = (at(o), at(close));
                return Ok(());
            }
            Token::Close { at: a } => {
                if let Some((c, _)) = open.pop()
                    && let Some(n) = nodes.get_mut(c as usize)
                {
                    n.end = at(a + 1);
                }
                return Ok(());
            }
            Token::NextIndex => return Ok(()),
        };
        if nodes.len() >= MAX_NODES {
            return Err(ScanError::TooLarge { mib: 0 });
        }
        let i = at(nodes.len());
        let key = std::mem::replace(&mut key, (NONE, NONE));
        nodes.push(Node {
            start: at(start),
            end: at(end),
            key: key.0,
            key_end: key.1,
            next: NONE,
        });
        if let Some((_, last)) = open.last_mut() {
            if let Some(prev) = nodes.get_mut(*last as usize) {
                prev.next = i;
            }
            *last = i;
        }
        if container {
            open.push((i, NONE));
        }
        Ok(())
    })?;
    Ok(nodes)
}

/// One value of a [`Doc`]: its exact text, and for a container its members without a rescan.
#[derive(Clone, Copy)]
pub(super) struct Val<'a> {
    doc: &'a Doc<'a>,
    i: u32,
}

impl std::fmt::Debug for Val<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.get())
    }
}

impl<'a> Val<'a> {
    fn node(self) -> Node {
        self.doc
            .nodes
            .get(self.i as usize)
            .copied()
            .unwrap_or(Node {
                start: 0,
                end: 0,
                key: NONE,
                key_end: NONE,
                next: NONE,
            })
    }

    /// The value's text as it came.
    pub(super) fn get(self) -> &'a str {
        let n = self.node();
        self.doc
            .text
            .get(n.start as usize..n.end as usize)
            .unwrap_or_default()
    }

    /// The members (an object) or elements (an array), in order; none for a scalar.
    fn children(self) -> impl Iterator<Item = Val<'a>> {
        let n = self.node();
        let first = self.i + 1;
        // The node after a container is its first member only when it starts inside it.
        let mut next = match self.doc.nodes.get(first as usize) {
            Some(c) if matches!(lead(self), b'{' | b'[') && c.start < n.end => first,
            _ => NONE,
        };
        let doc = self.doc;
        std::iter::from_fn(move || {
            let i = next;
            let c = doc.nodes.get(i as usize)?;
            next = c.next;
            Some(Val { doc, i })
        })
    }

    /// The member's name, unescaped (borrowed from the text unless it has escapes).
    fn key(self) -> Option<Cow<'a, str>> {
        let n = self.node();
        if n.key == NONE {
            return None;
        }
        unescape(self.doc.text, n.key as usize, n.key_end as usize).ok()
    }
}

/// One JSON object's members in order, each value as its raw text. A key that appears twice is
/// refused ([`TranslateError::Untranslatable`]): which of the two a reader takes is not agreed on.
pub(super) struct Obj<'a> {
    members: Vec<(Cow<'a, str>, Val<'a>)>,
}

impl<'a> Obj<'a> {
    /// Reads `raw` as an object; `field` names it in the error.
    pub(super) fn parse(raw: Val<'a>, field: &str) -> Result<Obj<'a>, TranslateError> {
        if lead(raw) != b'{' {
            return Err(TranslateError::untranslatable(
                field,
                "is not a JSON object",
            ));
        }
        let mut members = Vec::with_capacity(8);
        for v in raw.children() {
            let k = v
                .key()
                .ok_or_else(|| TranslateError::untranslatable(field, "is not a JSON object"))?;
            members.push((k, v));
        }
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

    /// An object without members (a request's params left out).
    pub(super) fn empty() -> Obj<'a> {
        Obj {
            members: Vec::new(),
        }
    }

    /// The value of `key`, unless absent or `null` (ProtoJSON and both SDKs read `null` as unset).
    pub(super) fn get(&self, key: &str) -> Option<Val<'a>> {
        self.members
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| *v)
            .filter(|v| v.get() != "null")
    }

    /// The value of `key` as written, `null` included (a JSON-RPC id of `null` is not "no id").
    pub(super) fn raw(&self, key: &str) -> Option<Val<'a>> {
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
            .map(|(k, v)| (k.clone().into_owned(), Out::Raw(v.get())))
    }

    /// Whether `key` is present with a value other than `null`.
    pub(super) fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }
}

/// The first byte of a value's text (never whitespace: the walk starts a value at its first byte).
fn lead(raw: Val<'_>) -> u8 {
    raw.get().as_bytes().first().copied().unwrap_or(b' ')
}

/// `raw` when it is a JSON string.
pub(super) fn string<'a>(raw: Val<'a>, field: &str) -> Result<Out<'a>, TranslateError> {
    match lead(raw) {
        b'"' => Ok(Out::Raw(raw.get())),
        _ => Err(TranslateError::untranslatable(field, "is not a string")),
    }
}

/// `raw` when it is a JSON object (copied whole: metadata, a data part's data).
pub(super) fn object<'a>(raw: Val<'a>, field: &str) -> Result<Out<'a>, TranslateError> {
    match lead(raw) {
        b'{' => Ok(Out::Raw(raw.get())),
        _ => Err(TranslateError::untranslatable(field, "is not an object")),
    }
}

/// `raw` when it is a JSON array of strings (copied whole).
pub(super) fn strings<'a>(raw: Val<'a>, field: &str) -> Result<Out<'a>, TranslateError> {
    for (i, v) in elements(raw, field)?.enumerate() {
        string(v, &index(field, i))?;
    }
    Ok(Out::Raw(raw.get()))
}

/// `raw` when it is a JSON integer (copied as written), or ProtoJSON's quoted form of one
/// (`"5"`, which 1.0 parsers accept for an int32), written as the number.
pub(super) fn integer<'a>(raw: Val<'a>, field: &str) -> Result<Out<'a>, TranslateError> {
    let is_int = |t: &str| {
        let digits = t.strip_prefix('-').unwrap_or(t);
        !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
    };
    let t = raw.get();
    if is_int(t) {
        return Ok(Out::Raw(raw.get()));
    }
    match t.strip_prefix('"').and_then(|q| q.strip_suffix('"')) {
        Some(inner) if is_int(inner) => Ok(Out::Owned(inner.to_owned())),
        _ => Err(TranslateError::untranslatable(field, "is not an integer")),
    }
}

/// `raw` read as a boolean.
pub(super) fn boolean(raw: Val<'_>, field: &str) -> Result<bool, TranslateError> {
    match raw.get() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(TranslateError::untranslatable(field, "is not a boolean")),
    }
}

/// `raw` read as an array of raw values.
pub(super) fn array<'a>(raw: Val<'a>, field: &str) -> Result<Vec<Val<'a>>, TranslateError> {
    elements(raw, field).map(Iterator::collect)
}

/// The elements of the array `raw`, in order, without collecting them.
fn elements<'a>(
    raw: Val<'a>,
    field: &str,
) -> Result<impl Iterator<Item = Val<'a>>, TranslateError> {
    match lead(raw) {
        b'[' => Ok(raw.children()),
        _ => Err(TranslateError::untranslatable(field, "is not an array")),
    }
}

/// `raw` read as a string's value (for enums and discriminators; never copied back), borrowed
/// from the text unless it has escapes.
pub(super) fn text<'a>(raw: Val<'a>, field: &str) -> Result<Cow<'a, str>, TranslateError> {
    let n = raw.node();
    let not = || TranslateError::untranslatable(field, "is not a string");
    if lead(raw) != b'"' || n.end < n.start + 2 {
        return Err(not());
    }
    unescape(raw.doc.text, n.start as usize, n.end as usize - 1).map_err(|_| not())
}

/// A JSON value being written: copied raw text, a literal the translator chose, an object of
/// known member names, or an array.
#[derive(Debug)]
pub(super) enum Out<'a> {
    /// Text copied as it came.
    Raw(&'a str),
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
        self.to_json_sized(0)
    }

    /// [`Out::to_json`] into a buffer of `hint` bytes at first (the text it came from: the
    /// translation is about as long, and growing from empty copies it several times).
    pub(super) fn to_json_sized(&self, hint: usize) -> String {
        let mut s = String::with_capacity(hint);
        self.write(&mut s);
        s
    }

    fn write(&self, s: &mut String) {
        match self {
            Out::Raw(r) => s.push_str(r),
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
    raw: Val<'a>,
    field: &str,
    f: impl Fn(Val<'a>, &str) -> Result<Out<'a>, TranslateError>,
) -> Result<Out<'a>, TranslateError> {
    let mut out = Vec::new();
    for (i, v) in elements(raw, field)?.enumerate() {
        out.push(f(v, &index(field, i))?);
    }
    Ok(Out::Arr(out))
}

/// `f` of the member `key` of `o`, when present.
pub(super) fn opt<'a>(
    o: &Obj<'a>,
    key: &str,
    field: &str,
    f: impl FnOnce(Val<'a>, &str) -> Result<Out<'a>, TranslateError>,
) -> Result<Option<Out<'a>>, TranslateError> {
    o.get(key).map(|v| f(v, &member(field, key))).transpose()
}

/// `f` of the member `key` of `o`, which must be present.
pub(super) fn req<'a>(
    o: &Obj<'a>,
    key: &str,
    field: &str,
    f: impl FnOnce(Val<'a>, &str) -> Result<Out<'a>, TranslateError>,
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

    /// `text` read as an object, as the translators read an envelope.
    fn obj_of(text: &str) -> Result<usize, TranslateError> {
        let doc = Doc::parse(text, "r")?;
        Obj::parse(doc.root(), "r").map(|o| o.members.len())
    }

    #[test]
    fn escaped_member_names_are_read_and_duplicates_refused_at_any_size() {
        let doc = Doc::parse(r#"{"k\u0069nd":"task","id":"t"}"#, "r").unwrap();
        let o = Obj::parse(doc.root(), "r").unwrap();
        assert_eq!(o.get("kind").map(Val::get), Some(r#""task""#));
        let e = obj_of(r#"{"kind":1,"k\u0069nd":2}"#).err().unwrap();
        assert!(e.to_string().contains("appears twice"), "{e}");
        for n in [16, 17, 40] {
            let members: Vec<String> = (0..n).map(|i| format!("\"m{i}\":{i}")).collect();
            let body = format!("{{{},\"m3\":0}}", members.join(","));
            let e = obj_of(&body).err().unwrap();
            assert!(e.to_string().contains("appears twice"), "{n}: {e}");
            assert_eq!(obj_of(&format!("{{{}}}", members.join(","))), Ok(n));
        }
    }

    #[test]
    fn every_value_is_located_with_its_exact_text_and_members_in_order() {
        let text = r#" {"a" : [1, -2.5e3 ,"x\"y", {}, [], {"b":null}],"c":{"d":true,"e":[false]}, "f":"" } "#;
        let doc = Doc::parse(text, "r").unwrap();
        let root = Obj::parse(doc.root(), "r").unwrap();
        let a = array(root.raw("a").unwrap(), "a").unwrap();
        let texts: Vec<&str> = a.iter().map(|v| v.get()).collect();
        assert_eq!(
            texts,
            ["1", "-2.5e3", r#""x\"y""#, "{}", "[]", r#"{"b":null}"#]
        );
        assert!(Obj::parse(a[3], "a").unwrap().is_empty());
        assert!(array(a[4], "a").unwrap().is_empty());
        let b = Obj::parse(a[5], "a").unwrap();
        assert!(b.has_key("b") && !b.has("b"));
        let c = Obj::parse(root.get("c").unwrap(), "c").unwrap();
        assert_eq!(c.get("d").map(Val::get), Some("true"));
        assert_eq!(array(c.get("e").unwrap(), "e").unwrap()[0].get(), "false");
        assert_eq!(root.get("f").map(Val::get), Some(r#""""#));
        let keys: Vec<String> = root.entries().map(|(k, _)| k).collect();
        assert_eq!(keys, ["a", "c", "f"]);
        for scalar in ["5", "\"s\"", "null", " [ ] "] {
            let d = Doc::parse(scalar, "r").unwrap();
            assert_eq!(d.root().get(), scalar.trim());
        }
        for bad in ["", "{", "[1,]", "{\"a\":1}x", "nul"] {
            assert!(Doc::parse(bad, "r").is_err(), "{bad}");
        }
    }

    #[test]
    fn an_index_past_the_value_cap_is_refused_as_too_large_and_broken_text_as_no_json() {
        let over = format!("[{}0]", "0,".repeat(MAX_NODES));
        let e = Doc::parse(&over, "body").unwrap_err();
        assert!(
            matches!(e, TranslateError::TooLarge { mib } if mib > TREE_BUDGET >> 20),
            "{e:?}"
        );
        // One value fewer (the array is one) is within it.
        let within = format!("[{}0]", "0,".repeat(MAX_NODES - 2));
        assert!(Doc::parse(&within, "body").is_ok());
        let broken = format!("[{}0", "0,".repeat(MAX_NODES));
        let e = Doc::parse(&broken, "body").unwrap_err();
        assert_eq!(e.to_string(), "body is not JSON");
    }
}
