//! The A2A 0.3 gRPC service's translator (`a2a_egress::translate::grpc03`): the first byte picks
//! the direction (`% 5`: request, answer, stream message, status, card) and the operation (`/ 5`,
//! an index into `Op::ALL`). A request's input is a 0.3 HTTP+JSON route, a newline and its body;
//! an answer's and a stream message's the rpc's protobuf bytes; a status's a gRPC code (the next
//! byte, `% 17`) and the message text; a card's a protobuf `AgentCard`.
//!
//! Invariants beyond "no panic": whatever translates is one JSON object without duplicate keys
//! (a JSON-RPC one keeps the id and has exactly one of `result`/`error`); a status always becomes
//! one; a card that converts is a JSON object the card rules can read (or refuse by name).
#![no_main]

use a2a_egress::translate::Op;
use a2a_egress::translate::grpc03::{
    answer_to10, card_to_json, event_to10, request_to_pb, status_to10,
};
use a2a_egress_fuzz::has_duplicate_key;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fn object(json: &[u8], rpc: bool) {
    let text = String::from_utf8_lossy(json);
    assert_eq!(has_duplicate_key(json), Some(false), "{text}");
    let v: Value = serde_json::from_slice(json).unwrap_or_else(|e| panic!("{e}: {text}"));
    assert!(v.is_object(), "{text}");
    if rpc {
        assert_eq!(v["id"], "id-1", "{text}");
        assert!(
            v.get("result").is_some() != v.get("error").is_some(),
            "{text}"
        );
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let op = Op::ALL[usize::from(pick / 5) % Op::ALL.len()];
    match pick % 5 {
        0 => {
            let Ok(text) = std::str::from_utf8(rest) else {
                return;
            };
            let (route, body) = text.split_once('\n').unwrap_or((text, ""));
            let _ = request_to_pb(op, route, body.as_bytes());
        }
        1 => {
            if let Ok(json) = answer_to10(op, Some("\"id-1\""), rest) {
                object(&json, true);
            }
            if let Ok(json) = answer_to10(op, None, rest) {
                object(&json, false);
            }
        }
        2 => {
            if let Ok(t) = event_to10(op, Some("\"id-1\""), rest) {
                object(&t.json, true);
            }
            if let Ok(t) = event_to10(op, None, rest) {
                object(&t.json, false);
            }
        }
        3 => {
            let [code, message @ ..] = rest else { return };
            let message = String::from_utf8_lossy(message);
            let (_, json) = status_to10(op, Some("\"id-1\""), i32::from(*code % 17), &message);
            object(&json, true);
            let (_, json) = status_to10(op, None, i32::from(*code % 17), &message);
            object(&json, false);
        }
        _ => {
            if let Ok(json) = card_to_json(rest) {
                object(&json, false);
                let policy = a2a_egress::card::CardPolicy::default();
                let _ = a2a_egress::card::validate(&json, &policy, None);
            }
        }
    }
});
