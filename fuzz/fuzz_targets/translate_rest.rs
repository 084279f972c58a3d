//! The A2A 1.0 ⇄ 0.3 HTTP+JSON translator (`a2a_egress::translate::rest_*`): the first byte
//! picks the direction (`% 3`: request, answer, event) and the operation (`/ 3`, an index into
//! `Op::ALL`). A request's input is its 1.0 route path below the interface (the first line, with
//! an optional `?query`) and its body (the rest); an answer's is its HTTP status (100 + the next two
//! bytes, little-endian, modulo 500) and its body; an event's is its `data`.
//!
//! Invariants beyond "no panic", for a body without duplicate keys (the gateway translates only
//! bodies its parser accepted, and refuses answers with duplicates): a request leaves with a
//! path below `/v1/` and a body that is empty or one JSON object without duplicate keys; an
//! answer or event is one JSON object without duplicate keys, an error one with an `error`
//! member (a success may hold one too: an extended card is copied as it came), with an HTTP status of a success or of the 1.0 error table.
#![no_main]

use a2a_egress::translate::{Op, rest_answer_to10, rest_event_to10, rest_request_to03};
use a2a_egress_fuzz::has_duplicate_key;
use libfuzzer_sys::fuzz_target;
use serde_json::value::RawValue;
use std::collections::HashMap;

/// One JSON object's members as raw JSON.
fn object(text: &[u8]) -> Option<HashMap<String, &RawValue>> {
    serde_json::from_slice(text).ok()
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let op = Op::ALL[usize::from(pick / 3) % Op::ALL.len()];
    match pick % 3 {
        0 => {
            let (line, body) = match rest.iter().position(|&b| b == b'\n') {
                Some(n) => (&rest[..n], &rest[n + 1..]),
                None => (rest, &[][..]),
            };
            let Ok(line) = std::str::from_utf8(line) else {
                return;
            };
            let (path, query) = match line.split_once('?') {
                Some((p, q)) => (p, Some(q)),
                None => (line, None),
            };
            let Ok(r) = rest_request_to03(op, path, query, body) else {
                return;
            };
            assert!(r.path.starts_with("/v1/"), "{}", r.path);
            if r.body.is_empty() || has_duplicate_key(body) != Some(false) {
                return;
            }
            assert_eq!(has_duplicate_key(&r.body), Some(false));
            assert!(
                object(&r.body).is_some(),
                "{}",
                String::from_utf8_lossy(&r.body)
            );
        }
        1 => {
            let [a, b, body @ ..] = rest else { return };
            let status = 100 + u16::from_le_bytes([*a, *b]) % 500;
            let Ok(Some(a)) = rest_answer_to10(op, status, body) else {
                return;
            };
            if has_duplicate_key(body) != Some(false) {
                return;
            }
            let text = String::from_utf8_lossy(&a.json);
            assert_eq!(has_duplicate_key(&a.json), Some(false), "{text}");
            let o = object(&a.json).unwrap_or_else(|| panic!("not one object: {text}"));
            assert_eq!(a.error, a.status >= 400, "{} {text}", a.status);
            // Not the converse: a success may copy an object holding an `error` member (the
            // extended card is passed on as the agent wrote it; the fuzzer found one).
            assert!(!a.error || o.contains_key("error"), "{text}");
        }
        _ => {
            let Ok(t) = rest_event_to10(op, rest) else {
                return;
            };
            if has_duplicate_key(rest) != Some(false) {
                return;
            }
            let text = String::from_utf8_lossy(&t.json);
            assert_eq!(has_duplicate_key(&t.json), Some(false), "{text}");
            assert!(object(&t.json).is_some(), "not one object: {text}");
        }
    }
});
