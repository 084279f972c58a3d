//! `a2a_egress::json::tree_bound` against the heap a `serde_json::Value` really takes: every
//! allocation of the test thread is counted (current and peak bytes, as requested of the
//! allocator) while a generated document is parsed, and the peak must never exceed the bound. For
//! the shapes an agent would send to make the tree large (many small numbers, small objects,
//! empty strings or arrays, deep nesting, wide objects) the bound must also stay within 3 times
//! the peak, or refusing over it would refuse honest answers. The 0.3 translator, refused by the
//! same bound, is held to it too (plus its output text, an answer-sized buffer). Its own binary
//! (and package): the counting allocator is global.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use a2a_egress::json::tree_bound;
use a2a_egress::translate::{Op, answer_to10};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

thread_local! {
    static CURRENT: Cell<usize> = const { Cell::new(0) };
    static PEAK: Cell<usize> = const { Cell::new(0) };
}

fn grew(bytes: usize) {
    let _ = CURRENT.try_with(|c| {
        let now = c.get() + bytes;
        c.set(now);
        let _ = PEAK.try_with(|p| p.set(p.get().max(now)));
    });
}

fn shrank(bytes: usize) {
    let _ = CURRENT.try_with(|c| c.set(c.get().saturating_sub(bytes)));
}

/// The system allocator, counting per thread (tests run on threads of their own; each counts
/// only what its own thread allocates and frees).
struct Counting;

// A global allocator is an `unsafe trait`; this one only counts around `System`, which allocates.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        shrank(layout.size());
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            // Counted as a move: the new block is taken while the old one is still held.
            grew(new_size);
            shrank(layout.size());
        }
        p
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// The peak bytes `f` held above what was held before it (its result is dropped after).
fn peak_of<T>(f: impl FnOnce() -> T) -> (usize, T) {
    let base = CURRENT.with(Cell::get);
    PEAK.with(|p| p.set(base));
    let out = f();
    (PEAK.with(Cell::get) - base, out)
}

/// The peak of parsing `text` into a `Value`, and the bound.
fn measured(text: &str) -> (usize, usize) {
    let (peak, v) = peak_of(|| serde_json::from_str::<Value>(text));
    assert!(v.is_ok(), "not JSON: {}", &text[..text.len().min(80)]);
    drop(v);
    (peak, tree_bound(text).unwrap())
}

fn holds(text: &str) -> Result<(), TestCaseError> {
    let (peak, bound) = measured(text);
    prop_assert!(
        peak <= bound,
        "peak {peak} > bound {bound}: {}",
        &text[..text.len().min(120)]
    );
    Ok(())
}

/// JSON text of `v` with every string character written as a `\u` escape (surrogate pairs for
/// those above the BMP): the longest text serde_json reads for the same tree, and the parser's
/// scratch buffer in use for every string.
fn escaped(v: &Value) -> String {
    fn string(s: &str, out: &mut String) {
        out.push('"');
        for c in s.chars() {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{u:04x}"));
            }
        }
        out.push('"');
    }
    fn go(v: &Value, out: &mut String) {
        match v {
            Value::String(s) => string(s, out),
            Value::Array(a) => {
                out.push('[');
                for (i, e) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    go(e, out);
                }
                out.push(']');
            }
            Value::Object(o) => {
                out.push('{');
                for (i, (k, e)) in o.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    string(k, out);
                    out.push(':');
                    go(e, out);
                }
                out.push('}');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut out = String::new();
    go(v, &mut out);
    out
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        (-1e300f64..1e300).prop_map(|f| json!(f)),
        // Multi-byte text, quotes, backslashes and control characters (escaped when written).
        "(\\PC|[\"\\\\\n\t\u{0}\u{1f}é€😀]){0,24}".prop_map(Value::String),
        // Big strings.
        (0usize..5000, "[a-zé😀\"\\\\]").prop_map(|(n, c)| Value::String(c.repeat(n))),
    ]
}

fn tree() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(10, 400, 24, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..40).prop_map(Value::Array),
            // Keys are unique in a `Map`: the documents are free of duplicates.
            prop::collection::vec(("(\\PC|[\"\\\\é😀]){0,12}", inner), 0..40)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// The shapes that make a tree much larger than its text, `n` of their unit each.
fn shapes(n: usize) -> Vec<(&'static str, String)> {
    let list = |unit: &str| format!("[{}]", vec![unit; n].join(","));
    let wide: Vec<String> = (0..n).map(|i| format!("\"k{i}\":0")).collect();
    let deep = n.clamp(1, 127);
    vec![
        ("[0,0,…]", list("0")),
        ("[{\"a\":0},…]", list(r#"{"a":0}"#)),
        ("[\"\",…]", list(r#""""#)),
        ("[[],…]", list("[]")),
        ("[{},…]", list("{}")),
        ("[[0],…]", list("[0]")),
        ("[{\"a\":0,\"b\":[1,2]},…]", list(r#"{"a":0,"b":[1,2]}"#)),
        ("{\"k0\":0,…}", format!("{{{}}}", wide.join(","))),
        (
            "[[[…0…]]] (127 deep at most)",
            format!("{}0{}", "[".repeat(deep), "]".repeat(deep)),
        ),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 96,
        // A failure prints its input; this package has no source root to keep regressions in.
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn the_bound_is_never_below_the_peak(v in tree()) {
        holds(&v.to_string())?;
        holds(&serde_json::to_string_pretty(&v).unwrap())?;
        holds(&escaped(&v))?;
    }

    #[test]
    fn the_bound_holds_and_is_tight_for_the_shapes_that_cost_most(n in 1usize..30_000) {
        for (name, text) in shapes(n) {
            let (peak, bound) = measured(&text);
            prop_assert!(peak <= bound, "{name} × {n}: peak {peak} > bound {bound}");
            prop_assert!(bound <= 3 * peak, "{name} × {n}: bound {bound} > 3 × peak {peak}");
        }
    }

    #[test]
    fn the_translators_tree_is_within_the_bound(
        messages in 0usize..400,
        parts in 0usize..40,
        data in prop::collection::vec(tree(), 0..8),
    ) {
        let part = r#"{"kind":"text","text":"x"}"#;
        let message = format!(
            r#"{{"kind":"message","messageId":"m","role":"agent","parts":[{}]}}"#,
            vec![part; parts].join(",")
        );
        let data: Vec<String> = data
            .iter()
            // 0.3 requires an object.
            .map(|d| format!(r#"{{"kind":"data","data":{{"v":{d}}}}}"#))
            .collect();
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{"kind":"task","id":"t","contextId":"c","status":{{"state":"completed"}},"history":[{}],"artifacts":[{{"artifactId":"a","parts":[{}]}}]}}}}"#,
            vec![message.as_str(); messages].join(","),
            data.join(",")
        );
        let (peak, out) = peak_of(|| answer_to10(Op::GetTask, body.as_bytes()));
        prop_assert!(out.is_ok(), "{out:?}");
        let bound = tree_bound(&body).unwrap();
        // The translated text is written into a `String` that grows by doubling (its output is
        // about as long as the answer): an answer-sized buffer, which the memory formula counts
        // apart (`2 × MAX_ANSWER_BYTES` per call), not part of the tree.
        let output = 3 * body.len();
        prop_assert!(
            peak <= bound + output,
            "translation peak {peak} > bound {bound} + output {output} (text {})",
            body.len()
        );
    }
}

/// The factor of the bound over the peak for each costly shape at a few sizes (printed with
/// `--nocapture`), and the same two properties as above at sizes proptest may not reach.
#[test]
fn factors_of_the_costly_shapes() {
    for n in [1, 10, 1000, 100_000, 300_000] {
        for (name, text) in shapes(n) {
            let (peak, bound) = measured(&text);
            println!(
                "{name:32} n={n:<7} text {:>9} B  peak {peak:>10} B ({:>5.1}× text)  bound {bound:>10} B  bound/peak {:.2}",
                text.len(),
                peak as f64 / text.len() as f64,
                bound as f64 / peak as f64
            );
            assert!(
                peak <= bound && bound <= 3 * peak,
                "{name} × {n}: {peak} {bound}"
            );
        }
    }
    for (name, text) in [
        ("1 MiB string", format!("\"{}\"", "a".repeat(1 << 20))),
        (
            "1 MiB string of \\n escapes",
            format!("\"{}\"", "\\n".repeat(1 << 19)),
        ),
        ("1 MiB string of é", format!("\"{}\"", "é".repeat(1 << 19))),
        // Python's `ensure_ascii` writing CJK text.
        (
            "1 MiB string of \\u4e2d",
            format!("\"{}\"", "\\u4e2d".repeat((1 << 20) / 6)),
        ),
    ] {
        let (peak, bound) = measured(&text);
        println!(
            "{name:32} text {:>9} B  peak {peak:>10} B  bound {bound:>10} B  bound/peak {:.2}",
            text.len(),
            bound as f64 / peak as f64
        );
        assert!(peak <= bound, "{name}: {peak} {bound}");
    }
}
