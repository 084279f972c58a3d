//! Property tests of the parser against the reference parse it replaced (pure, no I/O): on hostile
//! JSON text (multi-byte, control and bidi characters, member names and values written with
//! escapes, lone surrogates in names and values, repeated member names at every depth, numbers no
//! float holds, odd message and part shapes, nesting around the depth limit, whitespace
//! everywhere, byte-level damage) the parser gives exactly the reference's answer: the same facts
//! and splice points, or the same refusal with the same id.

use proptest::prelude::*;

use super::reference::{reference_jsonrpc, reference_rest};
use super::*;

/// A JSON tree whose rendering is chosen here (escapes, whitespace), not by a serializer.
#[derive(Debug, Clone)]
enum J {
    Null,
    Bool(bool),
    Num(&'static str),
    Str(String, bool),
    /// JSON text written as it is (lone surrogates, deep nesting: what no Rust string holds).
    Raw(String),
    Arr(Vec<J>),
    Obj(Vec<(Key, J)>),
}

/// A member name and whether its first character is written as a `\u` escape.
#[derive(Debug, Clone)]
struct Key(String, bool);

const NUMBERS: &[&str] = &[
    "0",
    "-0.0",
    "7",
    "1e400",
    "-1e400",
    "123456789012345678901234567890",
    "0.10000000000000000555",
    "-1.5E-3",
    "18446744073709551616",
];

const STRINGS: &[&str] = &[
    "",
    "t",
    "t1",
    "2.0",
    "SendMessage",
    "SendStreamingMessage",
    "GetTask",
    "text/plain",
    "image/png",
    "é",
    "日本",
    "😀",
    "\u{202e}rtl",
    "\u{0}",
    "\u{1}\u{1f}\u{7f}",
    "a\"b\\c/",
    "\u{2028}",
];

const NAMES: &[&str] = &[
    "jsonrpc",
    "id",
    "method",
    "params",
    "tenant",
    "message",
    "parts",
    "mediaType",
    "media_type",
    "text",
    "data",
    "x",
    "é",
    "",
];

/// `s` as a JSON string; `escaped` writes its first character as `\u` escapes (UTF-16).
fn quoted(s: &str, escaped: bool) -> String {
    let plain = serde_json::to_string(s).unwrap_or_default();
    let Some(first) = s.chars().next().filter(|_| escaped) else {
        return plain;
    };
    let mut units = [0u16; 2];
    let esc: String = first
        .encode_utf16(&mut units)
        .iter()
        .map(|u| format!("\\u{u:04x}"))
        .collect();
    let rest = serde_json::to_string(&s[first.len_utf8()..]).unwrap_or_default();
    format!("\"{esc}{}", &rest[1..])
}

impl J {
    fn render(&self, ws: &str, out: &mut String) {
        match self {
            J::Null => out.push_str("null"),
            J::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            J::Num(n) => out.push_str(n),
            J::Str(s, e) => out.push_str(&quoted(s, *e)),
            J::Raw(r) => out.push_str(r),
            J::Arr(items) => {
                out.push('[');
                for (n, v) in items.iter().enumerate() {
                    if n > 0 {
                        out.push(',');
                    }
                    out.push_str(ws);
                    v.render(ws, out);
                }
                out.push_str(ws);
                out.push(']');
            }
            J::Obj(members) => {
                out.push('{');
                for (n, (Key(k, e), v)) in members.iter().enumerate() {
                    if n > 0 {
                        out.push(',');
                    }
                    out.push_str(ws);
                    match k.strip_prefix(RAW) {
                        Some(raw) => out.push_str(raw),
                        None => out.push_str(&quoted(k, *e)),
                    }
                    out.push_str(ws);
                    out.push(':');
                    out.push_str(ws);
                    v.render(ws, out);
                }
                out.push_str(ws);
                out.push('}');
            }
        }
    }
}

/// A name that starts with this is written as the JSON text after it.
const RAW: &str = "\u{0}raw:";

/// Names no Rust string holds: lone surrogates, alone or beside other characters.
const RAW_NAMES: &[&str] = &[
    "\u{0}raw:\"\\ud800\"",
    "\u{0}raw:\"a\\udc00\"",
    "\u{0}raw:\"\\ud83d\\ude00\"",
];

/// Values no Rust string holds, and nesting around the depth limit (128 containers).
fn raw() -> impl Strategy<Value = J> {
    let deep = |n: usize| "[".repeat(n) + &"]".repeat(n);
    prop_oneof![
        prop::sample::select(vec![
            r#""\ud800""#,
            r#""x\udfff""#,
            r#""\udc00\ud800""#,
            r#""\ud83d\ude00""#,
            r#""\u0000\u001f\u202e""#,
            "1E+400",
            "-0e-999",
        ])
        .prop_map(|r| J::Raw(r.into())),
        (120usize..130).prop_map(move |n| J::Raw(deep(n))),
    ]
}

fn key(names: &'static [&'static str]) -> impl Strategy<Value = Key> {
    prop_oneof![
        30 => (prop::sample::select(names), prop::bool::weighted(0.15))
            .prop_map(|(k, e)| Key(k.into(), e)),
        1 => prop::sample::select(RAW_NAMES).prop_map(|k| Key(k.into(), false)),
    ]
}

fn string() -> impl Strategy<Value = J> {
    (prop::sample::select(STRINGS), prop::bool::weighted(0.2))
        .prop_map(|(s, e)| J::Str(s.into(), e))
}

fn leaf() -> impl Strategy<Value = J> {
    prop_oneof![
        3 => Just(J::Null),
        3 => any::<bool>().prop_map(J::Bool),
        3 => prop::sample::select(NUMBERS).prop_map(J::Num),
        3 => string(),
        1 => raw(),
    ]
}

/// Free-form values: small name pool, so repeated names in one object are common.
fn value() -> impl Strategy<Value = J> {
    leaf().prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(J::Arr),
            prop::collection::vec((key(NAMES), inner), 0..4).prop_map(J::Obj),
        ]
    })
}

/// An object of the named members (each present or not) plus free-form ones, in shuffled order.
fn object(present: f64, named: Vec<(&'static str, BoxedStrategy<J>)>) -> impl Strategy<Value = J> {
    let members: Vec<_> = named
        .into_iter()
        .map(|(k, v)| {
            prop::option::weighted(present, (prop::bool::weighted(0.05), v))
                .prop_map(move |m| m.map(|(e, v)| (Key(k.into(), e), v)))
        })
        .collect();
    let extra = prop_oneof![
        3 => Just(vec![]),
        1 => prop::collection::vec((key(NAMES), value()), 1..3),
    ];
    (members, extra)
        .prop_map(|(named, extra)| named.into_iter().flatten().chain(extra).collect::<Vec<_>>())
        .prop_shuffle()
        .prop_map(J::Obj)
}

fn part() -> BoxedStrategy<J> {
    prop_oneof![
        6 => object(0.5, vec![
            ("mediaType", prop_oneof![string(), Just(J::Null), leaf()].boxed()),
            ("media_type", prop_oneof![string(), Just(J::Null)].boxed()),
            ("text", value().boxed()),
            ("data", value().boxed()),
        ]),
        1 => value(),
        1 => prop::collection::vec(leaf(), 0..4).prop_map(J::Arr),
    ]
    .boxed()
}

fn message() -> BoxedStrategy<J> {
    let parts = prop_oneof![
        6 => prop::collection::vec(part(), 0..3).prop_map(J::Arr),
        1 => Just(J::Null),
        1 => value(),
    ];
    prop_oneof![
        6 => object(0.9, vec![("parts", parts.boxed()), ("messageId", string().boxed())]),
        1 => Just(J::Null),
        1 => prop::collection::vec(prop::collection::vec(part(), 0..2).prop_map(J::Arr), 0..3)
            .prop_map(J::Arr),
        1 => value(),
    ]
    .boxed()
}

fn params() -> BoxedStrategy<J> {
    prop_oneof![
        6 => object(0.7, vec![
            ("tenant", prop_oneof![8 => string(), 1 => leaf()].boxed()),
            ("message", message()),
        ]),
        2 => Just(J::Obj(vec![])),
        1 => value(),
    ]
    .boxed()
}

fn envelope() -> impl Strategy<Value = J> {
    let jsonrpc = prop_oneof![
        12 => Just(J::Str("2.0".into(), false)),
        1 => Just(J::Str("2.0".into(), true)),
        1 => leaf(),
    ];
    let id = prop_oneof![
        4 => prop::sample::select(NUMBERS).prop_map(J::Num),
        4 => string(),
        1 => leaf(),
        1 => value(),
    ];
    let method = prop_oneof![
        8 => prop::sample::select(vec!["SendMessage", "GetTask", "CancelTask", "x"])
            .prop_map(|m| J::Str(m.into(), false)),
        2 => string(),
        1 => leaf(),
    ];
    object(
        0.95,
        vec![
            ("jsonrpc", jsonrpc.boxed()),
            ("id", id.boxed()),
            ("method", method.boxed()),
            ("params", params()),
        ],
    )
}

/// Byte-level damage: none, a byte removed, a byte inserted, or the tail cut.
#[derive(Debug, Clone)]
enum Damage {
    None,
    Remove(prop::sample::Index),
    Insert(prop::sample::Index, u8),
    Cut(prop::sample::Index),
}

fn damage() -> impl Strategy<Value = Damage> {
    let byte = prop::sample::select(vec![
        0u8, 0x1f, b'"', b'\\', b'{', b'}', b',', b':', 0xff, 0xc3,
    ]);
    prop_oneof![
        24 => Just(Damage::None),
        1 => any::<prop::sample::Index>().prop_map(Damage::Remove),
        1 => (any::<prop::sample::Index>(), byte).prop_map(|(i, b)| Damage::Insert(i, b)),
        1 => any::<prop::sample::Index>().prop_map(Damage::Cut),
    ]
}

fn body(doc: &J, ws: &str, edge: &str, damage: &Damage) -> Bytes {
    let mut text = String::from(edge);
    doc.render(ws, &mut text);
    text.push_str(edge);
    let mut bytes = text.into_bytes();
    match damage {
        Damage::None => {}
        Damage::Remove(i) => {
            let n = i.index(bytes.len());
            bytes.remove(n);
        }
        Damage::Insert(i, b) => {
            let n = i.index(bytes.len() + 1);
            bytes.insert(n, *b);
        }
        Damage::Cut(i) => bytes.truncate(i.index(bytes.len())),
    }
    Bytes::from(bytes)
}

fn whitespace() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec!["", " ", "\n\t", "\r\n  "])
}

/// The JSON-RPC parse answers as the reference on `b`, and so does every splice.
fn agrees_jsonrpc(b: &Bytes) -> Result<(), TestCaseError> {
    let reference = reference_jsonrpc(b);
    let got = parse_jsonrpc(b);
    prop_assert_eq!(&got, &reference, "{:?}", String::from_utf8_lossy(b));
    if let (Ok(g), Ok(r)) = (&got, &reference) {
        prop_assert_eq!(&g.at, &r.at, "{:?}", String::from_utf8_lossy(b));
        for t in [Some("t1"), Some("acme\"/\u{e9}"), None] {
            prop_assert_eq!(g.forward_body(t), r.forward_body(t));
        }
    }
    Ok(())
}

fn agrees_rest(b: &[u8]) -> Result<(), TestCaseError> {
    for sends in [false, true] {
        prop_assert_eq!(
            parse_rest_body(b, sends),
            reference_rest(b, sends),
            "{:?}",
            String::from_utf8_lossy(b)
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4096, ..ProptestConfig::default() })]

    #[test]
    fn jsonrpc_bodies_are_answered_as_the_reference_does(
        doc in envelope(),
        ws in whitespace(),
        edge in whitespace(),
        damage in damage(),
    ) {
        agrees_jsonrpc(&body(&doc, ws, edge, &damage))?;
    }

    #[test]
    fn rest_bodies_are_answered_as_the_reference_does(
        doc in params(),
        ws in whitespace(),
        edge in whitespace(),
        damage in damage(),
    ) {
        agrees_rest(&body(&doc, ws, edge, &damage))?;
    }

    #[test]
    fn any_value_is_answered_as_the_reference_does(doc in value(), ws in whitespace()) {
        let b = body(&doc, ws, "", &Damage::None);
        agrees_jsonrpc(&b)?;
        agrees_rest(&b)?;
    }
}
