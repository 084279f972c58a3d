//! An upper bound of the heap a `serde_json::Value` of a document takes at its peak, from one walk
//! over the text (pure, no I/O).
//!
//! Why: a `Value` costs far more than its text (`[0,0,…]` about 36 bytes per byte of text,
//! `[{"a":0},…]` about 55), and an agent's answer is read up to 16 MiB, so one tree could take a
//! gigabyte. Every reader that builds a tree from an answer first asks [`check_tree`], which
//! refuses a document over [`TREE_BUDGET`] before a byte of the tree exists.
//!
//! What is counted, for this crate's serde_json features (`preserve_order`, `raw_value`; no
//! `arbitrary_precision`, so numbers live inside their `Value`):
//! - an array of n > 0 elements: one `Vec<Value>` grown by pushes, capacity `max(4, 2^⌈log2 n⌉)`;
//! - an object of n > 0 members: an `IndexMap`, whose entries `Vec` follows the index table's
//!   capacity (hashbrown buckets B, the smallest power of two from 4 that holds n at 7/8 load)
//!   and whose table is `8·B` bytes of indices plus `B + 16` control bytes;
//! - every non-empty key and string value: its bytes (the literal's raw length less what its
//!   escapes save at least, which is never less than the unescaped length);
//! - the growth of one block while its old block is still held (a `Vec` or table grows into a
//!   new block, then frees the old one): at most the largest block once more;
//! - the parser's scratch buffer, which holds the longest string that has an escape
//!   (`max(8, 2L) + L`, its growth included);
//! - a member keyed `$serde_json::private::RawValue`, which serde_json's `raw_value` reads as
//!   JSON text inside the string and parses again: the bound of that text, nested.
//!
//! Allocator rounding is not counted (the bound is of requested bytes, what
//! `tests/tree_memory.rs` measures); the empty array, object and string allocate nothing.

use std::mem::size_of;

use serde_json::Value;

use super::{ScanError, Token, unescape, walk};

/// More bytes of `Value` tree than this per byte of text, plus [`TREE_FIXED`], no document takes
/// ([`tree_bound`]'s costliest shape, `[[[…]]]` 127 deep, about 145: a 4-element `Vec<Value>`
/// and its growth per two bytes), nested raw-value texts aside. A reader may skip the bound of a text so short that this
/// stays well within [`TREE_BUDGET`] (`tests` holds the shapes that cost most to it).
pub const MAX_TREE_PER_BYTE: usize = 256;

/// The part of that limit a small document takes whatever its length (one object's table).
pub const TREE_FIXED: usize = 4096;

/// Most bytes the `Value` tree of one agent answer may take (see the module doc): 64 MiB. The
/// checks that build one run without awaiting while it lives, so at most one per worker thread
/// exists at once; the sidecar's memory limit counts `worker_threads × TREE_BUDGET`.
pub const TREE_BUDGET: usize = 64 << 20;

/// The key serde_json's `raw_value` feature reads as "the string is JSON text".
const RAW_VALUE_KEY: &str = "$serde_json::private::RawValue";

/// How many such strings inside such strings are followed; deeper is counted as over budget.
const MAX_RAW_NESTING: usize = 4;

/// Group width of hashbrown's control bytes (16 with SSE2, 8 otherwise: the larger).
const CTRL_GROUP: usize = 16;

/// One `IndexMap` entry: the hash, the key, the value.
const ENTRY: usize = size_of::<(usize, String, Value)>();

/// Refuses `body` when its `Value` tree could take more than [`TREE_BUDGET`], and text the walk
/// cannot read (not UTF-8, nested deeper than [`super::MAX_DEPTH`], not well-formed): a parser
/// builds its tree in document order and fails only at the fault, so a malformed document's
/// tree is as large as the prefix before it, which the bound has not judged.
pub fn check_tree(body: &[u8]) -> Result<(), ScanError> {
    check_tree_text(std::str::from_utf8(body).map_err(|_| ScanError::Malformed)?)
}

/// [`check_tree`] of text already known to be UTF-8 (no second validation).
pub fn check_tree_text(text: &str) -> Result<(), ScanError> {
    within_budget(tree_bound(text)?)
}

/// A bound over [`TREE_BUDGET`] refused, naming its size in MiB.
fn within_budget(bound: usize) -> Result<(), ScanError> {
    match bound {
        n if n > TREE_BUDGET => Err(ScanError::TooLarge {
            mib: n.div_ceil(1 << 20),
        }),
        _ => Ok(()),
    }
}

/// An upper bound of the bytes `serde_json::from_str::<Value>(text)` holds on the heap at its
/// peak (see the module doc), for text serde_json accepts.
pub fn tree_bound(text: &str) -> Result<usize, ScanError> {
    bound_at(text, 0)
}

/// Members (object) or elements (array) seen so far in one open container.
struct Level {
    object: bool,
    n: usize,
}

/// The sums of one walk.
#[derive(Default)]
struct Sum {
    /// Every block that stays (containers and strings).
    kept: usize,
    /// The largest container block, grown once more while its old block is held.
    largest: usize,
    /// The longest literal with an escape (the parser's scratch buffer).
    escaped: usize,
    /// Bounds of the texts of `RAW_VALUE_KEY` members.
    nested: usize,
}

impl Sum {
    fn block(&mut self, bytes: usize) {
        self.kept = self.kept.saturating_add(bytes);
        self.largest = self.largest.max(bytes);
    }

    fn string(&mut self, bytes: &[u8], open: usize, close: usize) {
        let raw = bytes.get(open + 1..close).unwrap_or_default();
        let Some(first) = memchr::memchr(b'\\', raw) else {
            self.kept = self.kept.saturating_add(raw.len());
            return;
        };
        let len = unescaped_len(raw, first);
        self.kept = self.kept.saturating_add(len);
        self.escaped = self.escaped.max(len);
    }

    fn close(&mut self, level: &Level) {
        if level.n == 0 {
            return;
        }
        if level.object {
            let buckets = buckets(level.n);
            self.block(capacity(buckets).saturating_mul(ENTRY));
            self.block(buckets.saturating_mul(size_of::<usize>() + 1) + CTRL_GROUP);
        } else {
            let cap = level
                .n
                .checked_next_power_of_two()
                .unwrap_or(usize::MAX)
                .max(4);
            self.block(cap.saturating_mul(size_of::<Value>()));
        }
    }

    fn total(&self) -> usize {
        let scratch = if self.escaped == 0 {
            0
        } else {
            (2 * self.escaped).max(8) + self.escaped
        };
        self.kept
            .saturating_add(self.largest)
            .saturating_add(scratch)
            .saturating_add(self.nested)
    }
}

/// At least the bytes of the literal `raw` (between its quotes, its first backslash at `first`)
/// once unescaped: each `\\uXXXX` is at most 3 bytes of UTF-8 (a surrogate pair, 12 written, is
/// 4), any other escape 1. The raw length alone would count escape-heavy text (Python's
/// `ensure_ascii` writes every non-ASCII character as `\\u`) up to twice over.
fn unescaped_len(raw: &[u8], first: usize) -> usize {
    let mut len = raw.len();
    let mut at = Some(first);
    while let Some(i) = at {
        let (written, read) = match raw.get(i + 1) {
            Some(b'u') => (6, 3),
            _ => (2, 1),
        };
        len = len.saturating_sub(written - read);
        let next = i + written;
        at = raw
            .get(next..)
            .and_then(|rest| memchr::memchr(b'\\', rest))
            .map(|j| next + j);
    }
    len
}

/// hashbrown's bucket count after growing one insert at a time to `n` items.
fn buckets(n: usize) -> usize {
    let mut b = 4usize;
    while capacity(b) < n {
        b = b.saturating_mul(2);
    }
    b
}

/// Items a hashbrown table of `b` buckets holds (7/8 load, one free bucket when small).
fn capacity(b: usize) -> usize {
    if b < 16 { b - 1 } else { b / 8 * 7 }
}

/// Whether the first byte after `at` that is not JSON whitespace is `want`.
fn next_is(bytes: &[u8], at: usize, want: u8) -> bool {
    bytes
        .get(at + 1..)
        .unwrap_or_default()
        .iter()
        .find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        == Some(&want)
}

fn bound_at(text: &str, nesting: usize) -> Result<usize, ScanError> {
    let mut bound = Bound::at(text, nesting);
    walk(text, |t| bound.on(t))?;
    Ok(bound.total())
}

/// [`tree_bound`] fed one token at a time, so a reader with a walk of its own over the text
/// (the translator's index) judges the budget in that same walk instead of a second one.
pub struct Bound<'t> {
    text: &'t str,
    nesting: usize,
    open: Vec<Level>,
    sum: Sum,
    /// The next string value is the text of a `RAW_VALUE_KEY` member.
    raw_next: bool,
}

impl<'t> Bound<'t> {
    /// The bound of `text`, whose tokens [`Bound::on`] is then given in order.
    pub fn of(text: &'t str) -> Bound<'t> {
        Bound::at(text, 0)
    }

    fn at(text: &'t str, nesting: usize) -> Bound<'t> {
        Bound {
            text,
            nesting,
            open: Vec::new(),
            sum: Sum::default(),
            raw_next: false,
        }
    }

    /// Counts the next token of the walk over the text.
    pub fn on(&mut self, t: Token) -> Result<(), ScanError> {
        let bytes = self.text.as_bytes();
        match t {
            Token::Open { object, at } => {
                let n = usize::from(!object && !next_is(bytes, at, b']'));
                self.open.push(Level { object, n });
                self.raw_next = false;
            }
            Token::NextIndex => {
                if let Some(l) = self.open.last_mut() {
                    l.n += 1;
                }
            }
            Token::Close { .. } => {
                if let Some(l) = self.open.pop() {
                    self.sum.close(&l);
                }
            }
            Token::Key { open: o, close } => {
                if let Some(l) = self.open.last_mut() {
                    l.n += 1;
                }
                self.sum.string(bytes, o, close);
                self.raw_next = is_raw_value_key(self.text, o, close)?;
            }
            Token::Str { open: o, close } => {
                self.sum.string(bytes, o, close);
                if std::mem::take(&mut self.raw_next) {
                    let inner = nested(self.text, o, close, self.nesting)?;
                    self.sum.nested = self.sum.nested.saturating_add(inner);
                }
            }
            Token::Scalar { .. } => self.raw_next = false,
        }
        Ok(())
    }

    /// The bound, once every token was counted.
    pub fn total(&self) -> usize {
        self.sum.total()
    }

    /// [`check_tree_text`]'s verdict on the bound, once every token was counted.
    pub fn check(&self) -> Result<(), ScanError> {
        within_budget(self.total())
    }
}

/// Whether the key literal at `open`..`close` is [`RAW_VALUE_KEY`] (unescaped only when it could
/// be: as long as the key written plainly or with escapes).
fn is_raw_value_key(text: &str, open: usize, close: usize) -> Result<bool, ScanError> {
    let len = close.saturating_sub(open + 1);
    if len < RAW_VALUE_KEY.len() || len > RAW_VALUE_KEY.len() * 6 {
        return Ok(false);
    }
    Ok(unescape(text, open, close)? == RAW_VALUE_KEY)
}

/// The bound of the JSON text inside the string literal at `open`..`close`.
fn nested(text: &str, open: usize, close: usize, nesting: usize) -> Result<usize, ScanError> {
    if nesting >= MAX_RAW_NESTING {
        return Ok(usize::MAX);
    }
    let inner = unescape(text, open, close)?;
    // serde_json parses that text as JSON and builds its prefix before failing at a fault: text
    // the walk cannot judge counts as over any budget.
    Ok(bound_at(&inner, nesting + 1).unwrap_or(usize::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_costly_shape_takes_more_than_the_factor_per_byte_of_text() {
        for n in [1, 2, 7, 100, 1000] {
            let list = |unit: &str| format!("[{}]", vec![unit; n].join(","));
            let deep = n.clamp(1, 127);
            let wide: Vec<String> = (0..n).map(|i| format!("\"k{i}\":0")).collect();
            for text in [
                list("0"),
                list(r#"{"a":0}"#),
                list(r#"{"":0}"#),
                list("[0]"),
                list(r#"{"":[0]}"#),
                list(r#""\u00e9""#),
                format!("{{{}}}", wide.join(",")),
                format!("{}0{}", "[".repeat(deep), "]".repeat(deep)),
                format!("{}0{}", "{\"\":".repeat(deep), "}".repeat(deep)),
            ] {
                let bound = tree_bound(&text).unwrap();
                let most = MAX_TREE_PER_BYTE * text.len() + TREE_FIXED;
                assert!(
                    bound <= most,
                    "{bound} for {} bytes: {text:.40}",
                    text.len()
                );
            }
        }
    }

    #[test]
    fn empty_containers_and_scalars_take_nothing() {
        for t in ["0", "null", "\"\"", "[]", "{}", " [ ] ", "-1.5e3", "true"] {
            assert_eq!(tree_bound(t), Ok(0), "{t}");
        }
        assert_eq!(tree_bound("\"abc\""), Ok(3));
    }

    #[test]
    fn arrays_count_their_elements_whatever_they_are() {
        let v = size_of::<Value>();
        // One element: capacity 4, and the one growth.
        assert_eq!(tree_bound("[0]"), Ok(8 * v));
        assert_eq!(tree_bound("[ 1e400 ]"), Ok(8 * v));
        assert_eq!(tree_bound("[0,1,2,3,4]"), Ok(16 * v));
        // Nested: 4 + 4 for the outer array, 4 for each inner one, plus one growth of 4.
        assert_eq!(tree_bound("[[1],[2]]"), Ok(16 * v));
        assert_eq!(tree_bound("[[],[]]"), Ok(8 * v));
    }

    #[test]
    fn objects_count_entries_table_and_keys() {
        let one = 3 * ENTRY + (4 * 9 + 16);
        assert_eq!(tree_bound(r#"{"ab":0}"#), Ok(one + 3 * ENTRY + 2));
        assert_eq!(buckets(3), 4);
        assert_eq!(buckets(4), 8);
        assert_eq!(buckets(8), 16);
        assert_eq!(buckets(15), 32);
        assert_eq!(capacity(32), 28);
    }

    #[test]
    fn escapes_add_the_scratch_buffer_and_raw_value_text_is_counted() {
        // 7 bytes written, at most 4 read (a `\u` escape is at most 3 bytes): 4 kept, scratch
        // max(8, 2 x 4) + 4.
        assert_eq!(tree_bound(r#""\u0041b""#), Ok(4 + 12));
        // 17 bytes written: `\\` and `\n` save 1 each, each `\u` 3 (😀 is 4 bytes, x 1: 7 read).
        assert_eq!(unescaped_len(br"\\\n\ud83d\ude00x", 0), 9);
        assert_eq!(tree_bound(r#""\\\"""#), Ok(2 + 10));
        let inner = tree_bound("[0,0]").unwrap();
        let doc = r#"{"$serde_json::private::RawValue":"[0,0]"}"#;
        let plain = tree_bound(r#"{"$serde_json::private::RawVal_e":"[0,0]"}"#).unwrap();
        assert_eq!(tree_bound(doc), Ok(plain + inner));
    }

    #[test]
    fn over_budget_is_refused_with_its_size_and_so_is_text_the_walk_cannot_read() {
        let many = format!("[{}0]", "0,".repeat(1 << 20));
        let n = tree_bound(&many).unwrap();
        assert!(n > TREE_BUDGET, "{n}");
        assert_eq!(
            check_tree(many.as_bytes()),
            Err(ScanError::TooLarge {
                mib: n.div_ceil(1 << 20)
            })
        );
        let msg = check_tree(many.as_bytes()).unwrap_err().to_string();
        assert!(msg.contains("MiB to read, over the 64 MiB"), "{msg}");
        assert_eq!(check_tree(b"[0,0,0]"), Ok(()));
        // The walk goes as deep as serde_json and one level more: whatever the parser builds
        // was measured.
        let nest = |d: usize| format!("{}0{}", "[".repeat(d), "]".repeat(d));
        assert!(serde_json::from_str::<Value>(&nest(127)).is_ok());
        assert!(serde_json::from_str::<Value>(&nest(128)).is_err());
        assert!(tree_bound(&nest(128)).is_ok());
        // A parser builds the prefix before the fault: a document cut short, not UTF-8 or too
        // deep is refused, not judged by the prefix the bound saw.
        for bad in [&b"\xff[[["[..], b"[[[}", b"[0,0,0", b"{\"a\":\"\xff\"}"] {
            assert_eq!(check_tree(bad), Err(ScanError::Malformed), "{bad:?}");
        }
        assert_eq!(check_tree(nest(129).as_bytes()), Err(ScanError::TooDeep));
        // Text a RawValue key holds that is not JSON: serde_json parses its prefix too.
        let inner = format!("[{}0", "0,".repeat(10));
        let doc = format!(r#"{{"$serde_json::private::RawValue":"{inner}"}}"#);
        assert!(matches!(
            check_tree(doc.as_bytes()),
            Err(ScanError::TooLarge { .. })
        ));
    }
}
