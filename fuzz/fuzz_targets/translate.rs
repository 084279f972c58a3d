//! The A2A 1.0 ⇄ 0.3 JSON-RPC translator (`a2a_egress::translate`): the first byte picks the
//! direction (`% 3`: request, answer, event) and the operation (`/ 3`, an index into `Op::ALL`),
//! the rest is the body (a 1.0 request toward a 0.3 agent, or a 0.3
//! answer or stream event back).
//!
//! Invariants beyond "no panic", for a body without duplicate keys (the gateway translates only
//! bodies its parser accepted, and refuses answers with duplicates): whatever the translator
//! writes is one JSON object without duplicate keys; a request keeps `jsonrpc: "2.0"` and the
//! caller's id as its exact text; an answer has exactly one of `result` and `error`, and the
//! agent's id as its exact text.
#![no_main]

use a2a_egress::translate::{Op, answer_to10, event_to10, request_to03};
use a2a_egress_fuzz::has_duplicate_key;
use libfuzzer_sys::fuzz_target;
use serde_json::value::RawValue;
use std::collections::HashMap;

/// The top-level members of `text` as raw JSON, when it is an object.
fn members(text: &[u8]) -> Option<HashMap<String, &RawValue>> {
    serde_json::from_slice(text).ok()
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    let op = Op::ALL[usize::from(pick / 3) % Op::ALL.len()];
    let out = match pick % 3 {
        0 => request_to03(op, body).map(|b| (b, true)),
        1 => answer_to10(op, body).map(|t| (t.json, false)),
        _ => event_to10(op, body).map(|t| (t.json, false)),
    };
    let Ok((out, request)) = out else { return };
    if has_duplicate_key(body) != Some(false) {
        return;
    }
    assert_eq!(
        has_duplicate_key(&out),
        Some(false),
        "{}",
        String::from_utf8_lossy(&out)
    );
    let (Some(got), Some(came)) = (members(&out), members(body)) else {
        panic!("not one JSON object: {}", String::from_utf8_lossy(&out));
    };
    assert_eq!(got.get("jsonrpc").map(|v| v.get()), Some("\"2.0\""));
    let id = |m: &HashMap<String, &RawValue>| m.get("id").map(|v| v.get().to_owned());
    if request {
        assert_eq!(id(&got), id(&came));
    } else {
        assert_eq!(got.contains_key("result"), !got.contains_key("error"));
        assert_eq!(id(&got), Some(id(&came).unwrap_or_else(|| "null".into())));
    }
});
