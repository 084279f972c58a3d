//! Hostile value generators for property tests (proptest strategies; pure, no I/O).
//!
//! Everything an attacker controls is a string, a number or a JSON document, so these strategies
//! produce the values that break naive code: multi-byte characters where byte offsets are taken
//! (around a URL's `scheme:` / `//` / host boundary above all), control characters (CR/LF/NUL/DEL,
//! C1), bidi overrides and isolates, zero-width characters, path tricks, huge or odd numbers
//! (`1e400`, `2^70`, `-0`), deep nesting, and JSON *text* with duplicate keys at any depth —
//! generated as text, because `serde_json::Value` cannot hold a duplicate.
//!
//! Reusable by any test: cards, JSON-RPC envelopes, REST paths, headers. [`Raw`] is a JSON tree that
//! keeps member order and duplicates and renders in several formattings (for "formatting does
//! not matter" properties).

use std::fmt::Write as _;

use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::Value;

/// Bidi embeddings, overrides, isolates and marks (the "Trojan Source" set) plus ALM.
pub const BIDI: &[char] = &[
    '\u{202A}', '\u{202B}', '\u{202C}', '\u{202D}', '\u{202E}', '\u{2066}', '\u{2067}', '\u{2068}',
    '\u{2069}', '\u{200E}', '\u{200F}', '\u{061C}',
];

/// Zero-width and other invisible characters (ZWSP, ZWNJ, ZWJ, word joiner, BOM, soft hyphen,
/// a tag character, a variation selector).
pub const INVISIBLE: &[char] = &[
    '\u{200B}',
    '\u{200C}',
    '\u{200D}',
    '\u{2060}',
    '\u{FEFF}',
    '\u{00AD}',
    '\u{E0041}',
    '\u{FE0F}',
];

/// Control characters: C0 (NUL, BEL, BS, TAB, LF, VT, FF, CR, ESC), DEL, C1 (NEL, CSI), and the
/// Unicode line/paragraph separators that some readers treat as newlines.
pub const CONTROL: &[char] = &[
    '\u{0}', '\u{7}', '\u{8}', '\t', '\n', '\u{B}', '\u{C}', '\r', '\u{1B}', '\u{7F}', '\u{85}',
    '\u{9B}', '\u{2028}', '\u{2029}',
];

/// Multi-byte characters of every UTF-8 width (2, 3 and 4 bytes), a combining mark, a fullwidth
/// solidus and colon (which look like `/` and `:`), and a non-breaking space.
pub const MULTIBYTE: &[char] = &[
    'é', 'ß', 'Ω', 'ж', '中', '€', '\u{FF0F}', '\u{FF1A}', '😀', '𝔘', '\u{0301}', '\u{00A0}', 'İ',
    'ﬀ',
];

/// ASCII characters that mean something in URLs, paths, headers or JSON.
pub const ASCII_SPECIAL: &[char] = &[
    '/', '\\', '.', '%', ':', '@', '?', '#', '[', ']', '"', '\'', ';', '=', ' ', '{', '}', ',',
];

/// Whether `c` is a control character (Unicode Cc, or a line/paragraph separator) or a bidi or
/// invisible formatting character — what must never reach a display string, a header or a log.
pub fn is_control_or_bidi(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{2028}' | '\u{2029}')
        || BIDI.contains(&c)
        || INVISIBLE.contains(&c)
        || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200B}'..='\u{200F}')
}

/// One character from the sets above.
pub fn nasty_char() -> impl Strategy<Value = char> {
    prop_oneof![
        prop::sample::select(BIDI),
        prop::sample::select(INVISIBLE),
        prop::sample::select(CONTROL),
        prop::sample::select(MULTIBYTE),
        prop::sample::select(ASCII_SPECIAL),
        any::<char>(),
    ]
}

/// A multi-byte character (2–4 bytes in UTF-8), the kind that panics `&s[..n]`.
pub fn multibyte_char() -> impl Strategy<Value = char> {
    prop_oneof![
        prop::sample::select(MULTIBYTE),
        any::<char>().prop_filter("multi-byte", |c| c.len_utf8() > 1),
    ]
}

/// A short string mixing plain ASCII with hostile characters (possibly empty).
pub fn hostile_string() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            3 => "[a-zA-Z0-9._-]{1,4}",
            2 => nasty_char().prop_map(String::from),
        ],
        0..12,
    )
    .prop_map(|parts| parts.concat())
}

/// `base` with one hostile character inserted at every possible char boundary chosen by `at`.
pub fn with_char_inserted(base: String) -> impl Strategy<Value = String> {
    (any::<Index>(), nasty_char()).prop_map(move |(at, c)| {
        let bounds: Vec<usize> = base
            .char_indices()
            .map(|(i, _)| i)
            .chain([base.len()])
            .collect();
        let i = *at.get(&bounds);
        let mut s = base.clone();
        s.insert(i, c);
        s
    })
}

/// Identifiers (ids, versions, scheme names, skill ids): plausible ones, and ones with a hostile
/// character inserted anywhere, or made only of hostile text.
pub fn hostile_id() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z][a-z0-9._-]{0,12}",
        "[a-z]{1,8}".prop_flat_map(with_char_inserted),
        hostile_string(),
        Just(String::new()),
        "[a-z]{250,300}",
    ]
}

/// Tenant values: path tricks (`..`, `.`, `/`, `\`, `%2f`), whitespace, controls, multi-byte, empty
/// and over-long values, next to plausible ones.
pub fn hostile_tenant() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "",
            ".",
            "..",
            "../x",
            "a/b",
            "a\\b",
            "%2e%2e",
            "%2f",
            "a%2Fb",
            "a b",
            " a",
            "a\n",
            "a\r\nX-Evil: 1",
            "\u{0}",
            "acme\u{202E}",
            "tenant\u{200B}",
            "ténant",
            "../../admin",
            "a/../b",
            "~",
            "*",
            "?x=1",
            "#f",
            ";x",
        ])
        .prop_map(str::to_string),
        "[a-z0-9-]{1,12}",
        "[a-z]{1,8}".prop_flat_map(with_char_inserted),
        hostile_string(),
        "[a-z]{200,300}",
    ]
}

/// Media types: plausible ones, ones with hostile characters inserted, parameters with odd
/// whitespace, and non-ASCII subtypes.
pub fn hostile_media_type() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "text/plain",
            "application/json",
            "text/plain; charset=utf-8",
            "text/plain;charset=\"utf-8\"",
            "text",
            "*/*",
            "text/plain ; q = 1",
            "text/plaîn",
            "text/\u{202E}nialp",
            "text/plain\r\nX: 1",
            "",
        ])
        .prop_map(str::to_string),
        "text/plain".prop_flat_map(|s| with_char_inserted(s.to_string())),
        hostile_string(),
    ]
}

/// The scheme part of a hostile URL, with the separator that follows it: every way of writing
/// (or almost writing) `https://`, so that a multi-byte character falls on the byte offset where
/// `scheme://` would end.
fn url_prefix() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "https://",
            "http://",
            "HTTPS://",
            "https:",
            "https:/",
            "https:\\\\",
            "https:/\\",
            "https:///",
            "http:",
            "hTtP://",
            "grpc://",
            "ftp://",
            "file:",
            "data:",
            "javascript:",
            "urn:",
            "",
            "//",
            "https//",
            "https:é",
            "httpé://",
            "https:/é",
            "h:",
        ])
        .prop_map(str::to_string),
        // A multi-byte character inside or right after the scheme.
        (
            "[a-z]{1,6}",
            multibyte_char(),
            prop::sample::select(vec![":", "://", ":/", ""])
        )
            .prop_map(|(s, c, sep)| format!("{s}{c}{sep}")),
        (
            "https?",
            prop::sample::select(vec![":", "://", ":/"]),
            multibyte_char()
        )
            .prop_map(|(s, sep, c)| format!("{s}{sep}{c}")),
    ]
}

/// A hostile host (or authority): multi-byte and IDN, percent-encoded, odd IPv4 forms, userinfo,
/// brackets, empty, with ports.
fn url_authority() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "a.example",
            "xé.example",
            "é",
            "中文.example",
            "xn--nxasmq6b.example",
            "%65vil.example",
            "0x7f.1",
            "127.1",
            "2130706433",
            "[::1]",
            "[::1",
            "::1]",
            "u:p@a.example",
            "@a.example",
            ":@a.example",
            "a.example:443",
            "a.example:99999",
            "a.example:",
            "",
            "a..example",
            "a.example.",
            "localhost",
            "A.EXAMPLE",
            "a\u{FF0E}example",
            "a.example\u{FF0F}x",
        ])
        .prop_map(str::to_string),
        "[a-z]{1,8}\\.example".prop_flat_map(with_char_inserted),
    ]
}

/// URLs (interfaces, security schemes, providers, icons, documentation): hostile prefixes, hosts,
/// paths and suffixes, next to plausible ones — the scheme/host boundary above all.
pub fn hostile_url() -> impl Strategy<Value = String> {
    prop_oneof![
        1 => Just("https://a.example/a2a".to_string()),
        1 => Just("https:xé.example/a2a".to_string()),
        6 => (
            url_prefix(),
            url_authority(),
            prop::sample::select(vec![
                "", "/", "/a2a", "/a2a?x=1", "/a2a#f", "/é", "/%2e%2e/", "/../admin", "\\x", "?",
                "#", "/a2a\u{202E}", "/a b", "/a\nb",
            ]),
        )
            .prop_map(|(p, a, rest)| format!("{p}{a}{rest}")),
        2 => "https://a.example/a2a".prop_flat_map(|s| with_char_inserted(s.to_string())),
        1 => hostile_string(),
    ]
}

/// Extension URIs: plausible ones, the URL generator, and URNs with hostile text.
pub fn hostile_extension_uri() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("https://example.com/ext/trace/v1".to_string()),
        hostile_url(),
        hostile_string().prop_map(|s| format!("urn:{s}")),
    ]
}

/// JSON number *text* that breaks naive numeric code: out of f64 range (`1e400`), beyond u64/i64
/// (`2^64`, `2^70`), negative zero, long mantissas, tiny exponents. Some are out of range for
/// serde_json without `arbitrary_precision` (it refuses `1e400`), which is part of the point.
pub fn huge_number() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "1e400",
            "-1e400",
            "1E+400",
            "1e-400",
            "-0",
            "-0.0",
            "0e0",
            "18446744073709551615",
            "18446744073709551616",
            "1180591620717411303424",
            "-9223372036854775809",
            "9007199254740993",
            "123456789012345678901234567890.123456789",
            "0.1",
            "1.0",
            "1e2",
            "4.9e-324",
            "1.7976931348623157e308",
        ])
        .prop_map(str::to_string),
        "[1-9][0-9]{20,60}",
        "-?[1-9][0-9]{0,3}\\.[0-9]{15,40}",
    ]
}

/// A JSON value as text-to-be: keeps member order and duplicate keys, numbers as raw text.
#[derive(Debug, Clone, PartialEq)]
pub enum Raw {
    /// `null`
    Null,
    /// `true` / `false`
    Bool(bool),
    /// A number, written exactly as this text (must be valid JSON number syntax).
    Num(String),
    /// A string (escaped when rendered).
    Str(String),
    /// An array.
    Arr(Vec<Raw>),
    /// An object; a key may repeat.
    Obj(Vec<(String, Raw)>),
}

/// How [`Raw::render`] lays out the text; every style denotes the same JSON value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// No whitespace, only the escapes JSON requires.
    Compact,
    /// Spaces, tabs and newlines around every token.
    Spaced,
    /// Compact, with every non-ASCII character and `/` written as a `\u` escape.
    Escaped,
}

impl Raw {
    /// Converts a `serde_json::Value` (which has no duplicates) into a `Raw`.
    pub fn from_value(v: &Value) -> Raw {
        match v {
            Value::Null => Raw::Null,
            Value::Bool(b) => Raw::Bool(*b),
            Value::Number(n) => Raw::Num(n.to_string()),
            Value::String(s) => Raw::Str(s.clone()),
            Value::Array(a) => Raw::Arr(a.iter().map(Raw::from_value).collect()),
            Value::Object(m) => Raw::Obj(
                m.iter()
                    .map(|(k, v)| (k.clone(), Raw::from_value(v)))
                    .collect(),
            ),
        }
    }

    /// The JSON text.
    pub fn render(&self, style: Style) -> String {
        let mut out = String::new();
        self.write(&mut out, style);
        out
    }

    /// Compact JSON text.
    pub fn text(&self) -> String {
        self.render(Style::Compact)
    }

    fn write(&self, out: &mut String, style: Style) {
        let ws = if style == Style::Spaced { " \n\t" } else { "" };
        match self {
            Raw::Null => out.push_str("null"),
            Raw::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Raw::Num(n) => out.push_str(n),
            Raw::Str(s) => write_string(out, s, style == Style::Escaped),
            Raw::Arr(items) => {
                out.push('[');
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(ws);
                    v.write(out, style);
                    out.push_str(ws);
                }
                out.push(']');
            }
            Raw::Obj(members) => {
                out.push('{');
                for (i, (k, v)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(ws);
                    write_string(out, k, style == Style::Escaped);
                    out.push_str(ws);
                    out.push(':');
                    out.push_str(ws);
                    v.write(out, style);
                    out.push_str(ws);
                }
                out.push('}');
            }
        }
    }

    /// Every object in the tree, as a path of child indexes from the root (root = `[]`).
    pub fn object_paths(&self) -> Vec<Vec<usize>> {
        let mut out = Vec::new();
        self.collect_objects(&mut Vec::new(), &mut out);
        out
    }

    fn collect_objects(&self, at: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
        let children: Vec<&Raw> = match self {
            Raw::Obj(m) => {
                out.push(at.clone());
                m.iter().map(|(_, v)| v).collect()
            }
            Raw::Arr(a) => a.iter().collect(),
            _ => return,
        };
        for (i, c) in children.into_iter().enumerate() {
            at.push(i);
            c.collect_objects(at, out);
            at.pop();
        }
    }

    /// The node at a path of child indexes.
    pub fn at_mut(&mut self, path: &[usize]) -> Option<&mut Raw> {
        let Some((first, rest)) = path.split_first() else {
            return Some(self);
        };
        let child = match self {
            Raw::Obj(m) => m.get_mut(*first).map(|(_, v)| v),
            Raw::Arr(a) => a.get_mut(*first),
            _ => None,
        }?;
        child.at_mut(rest)
    }

    /// Whether any object in the tree repeats a key.
    pub fn has_duplicate_key(&self) -> bool {
        match self {
            Raw::Obj(m) => {
                let mut seen = std::collections::HashSet::new();
                m.iter().any(|(k, _)| !seen.insert(k.as_str()))
                    || m.iter().any(|(_, v)| v.has_duplicate_key())
            }
            Raw::Arr(a) => a.iter().any(Raw::has_duplicate_key),
            _ => false,
        }
    }
}

/// Writes `s` as a JSON string literal; with `escape_all`, every non-ASCII character, `/` and
/// every control character is a `\u` escape (surrogate pairs above the BMP).
pub fn write_string(out: &mut String, s: &str, escape_all: bool) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '/' if escape_all => out.push_str("\\/"),
            c if (c as u32) < 0x20 || (escape_all && !c.is_ascii()) => {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A JSON string literal for `s` (compact escaping).
pub fn json_string(s: &str) -> String {
    let mut out = String::new();
    write_string(&mut out, s, false);
    out
}

/// Leaves of hostile JSON: every hostile string kind, huge numbers, the usual scalars.
pub fn raw_leaf() -> impl Strategy<Value = Raw> {
    prop_oneof![
        Just(Raw::Null),
        any::<bool>().prop_map(Raw::Bool),
        huge_number().prop_map(Raw::Num),
        any::<i64>().prop_map(|n| Raw::Num(n.to_string())),
        hostile_string().prop_map(Raw::Str),
        hostile_url().prop_map(Raw::Str),
    ]
}

/// Arbitrary hostile JSON trees (up to `depth` levels), with keys drawn from `keys` or hostile
/// text; objects may already repeat a key.
pub fn raw_json(keys: Vec<&'static str>, depth: u32) -> impl Strategy<Value = Raw> {
    let key = prop_oneof![
        3 => prop::sample::select(keys).prop_map(str::to_string),
        1 => hostile_string(),
    ];
    raw_leaf().prop_recursive(depth, 64, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Raw::Arr),
            prop::collection::vec((key.clone(), inner), 0..6).prop_map(Raw::Obj),
        ]
    })
}

/// `base` with a duplicate key added to one of its objects (chosen at any depth): either a copy
/// of an existing member's key with a different value, placed after the original, or — in an
/// empty object — the same new key twice. Trees without an object get a wrapping object.
pub fn with_duplicate_key(base: Raw) -> impl Strategy<Value = Raw> {
    (any::<Index>(), any::<Index>(), raw_leaf(), any::<bool>()).prop_map(
        move |(which, member, value, before)| {
            let mut raw = base.clone();
            let paths = raw.object_paths();
            if paths.is_empty() {
                return Raw::Obj(vec![("k".into(), raw.clone()), ("k".into(), value)]);
            }
            let path = which.get(&paths).clone();
            if let Some(Raw::Obj(m)) = raw.at_mut(&path) {
                if m.is_empty() {
                    m.push(("dup".into(), value.clone()));
                    m.push(("dup".into(), value));
                } else {
                    let i = member.index(m.len());
                    let key = m[i].0.clone();
                    // The copy goes after or before the original: readers keep the first or the
                    // last, and a bypass needs only one of them to differ.
                    let at = if before { i } else { m.len() };
                    m.insert(at, (key, value));
                }
            }
            raw
        },
    )
}

/// Deeply nested JSON text: `depth` arrays or single-member objects around a leaf, closed or
/// (when `closed` is false) left open.
pub fn nested_text(depth: usize, objects: bool, closed: bool) -> String {
    let (open, close) = if objects {
        ("{\"a\":", "}")
    } else {
        ("[", "]")
    };
    let mut s = open.repeat(depth);
    s.push('1');
    if closed {
        s.push_str(&close.repeat(depth));
    }
    s
}

/// Deep nesting, from harmless to far beyond any recursion limit.
pub fn deep_nesting() -> impl Strategy<Value = String> {
    (
        prop_oneof![
            1usize..200,
            120usize..140,
            1000usize..5000,
            Just(100_000usize)
        ],
        any::<bool>(),
        prop::bool::weighted(0.9),
    )
        .prop_map(|(d, objects, closed)| nested_text(d, objects, closed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    fn sample<S: Strategy>(s: S, n: usize) -> Vec<S::Value> {
        let mut runner = TestRunner::deterministic();
        (0..n)
            .map(|_| s.new_tree(&mut runner).unwrap().current())
            .collect()
    }

    #[test]
    fn hostile_urls_include_multibyte_at_the_scheme_boundary() {
        let urls = sample(hostile_url(), 2000);
        assert!(urls.iter().any(|u| u == "https:xé.example/a2a"));
        // Some URL has a multi-byte character starting inside the first 8 bytes ("https://").
        assert!(
            urls.iter()
                .any(|u| u.char_indices().any(|(i, c)| i < 8 && c.len_utf8() > 1)),
        );
        assert!(urls.iter().any(|u| u.starts_with("https://")));
    }

    #[test]
    fn duplicates_render_as_text_serde_json_accepts() {
        let base = Raw::Obj(vec![(
            "a".into(),
            Raw::Arr(vec![Raw::Obj(vec![("b".into(), Raw::Null)])]),
        )]);
        for raw in sample(with_duplicate_key(base), 64) {
            assert!(raw.has_duplicate_key(), "{raw:?}");
            for style in [Style::Compact, Style::Spaced, Style::Escaped] {
                // Valid JSON syntax; only an out-of-range number (1e400) may stop serde_json.
                if let Err(e) = serde_json::from_str::<Value>(&raw.render(style)) {
                    assert!(e.to_string().contains("out of range"), "{e}: {raw:?}");
                }
            }
        }
    }

    #[test]
    fn styles_denote_the_same_value() {
        for raw in sample(raw_json(vec!["a", "b"], 3), 200) {
            let compact = serde_json::from_str::<Value>(&raw.text());
            // Out-of-range numbers (1e400) are refused by every style alike.
            for style in [Style::Spaced, Style::Escaped] {
                let other = serde_json::from_str::<Value>(&raw.render(style));
                match (&compact, &other) {
                    (Ok(a), Ok(b)) => assert_eq!(a, b),
                    (Err(_), Err(_)) => {}
                    _ => panic!("styles disagree on {raw:?}"),
                }
            }
        }
    }

    #[test]
    fn escaped_strings_round_trip() {
        for s in sample(hostile_string(), 500) {
            let mut out = String::new();
            write_string(&mut out, &s, true);
            assert!(out.is_ascii());
            assert_eq!(serde_json::from_str::<String>(&out).unwrap(), s);
            assert_eq!(serde_json::from_str::<String>(&json_string(&s)).unwrap(), s);
        }
    }
}
