//! The JSON-RPC ⇄ HTTP+JSON mover (`a2a_egress::translate::binding`): the first byte picks the
//! direction (`% 6`: JSON-RPC request, HTTP+JSON request, HTTP+JSON answer, JSON-RPC answer,
//! HTTP+JSON event, JSON-RPC event) and the operation (`/ 6`, an index into `Op::ALL`); an
//! answer's next byte picks its HTTP status (`% 8` into `STATUSES`).
//!
//! Invariants beyond "no panic": whatever translates is one JSON object, without duplicate keys
//! unless the input had one (values the mover copies, such as an error's `details`, come as they
//! were; on the data plane `answer::check_whole` has refused a duplicate before the move), a
//! JSON-RPC one with the id and exactly one of `result`/`error`; a route is ASCII without spaces
//! or controls (every id percent-encoded).
#![no_main]

use a2a_egress::translate::Op;
use a2a_egress::translate::binding as b;
use a2a_egress_fuzz::has_duplicate_key;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

const STATUSES: [u16; 8] = [200, 204, 400, 404, 500, 401, 429, 302];

/// One JSON object without duplicate keys (unless `input` had one: see the module doc); a
/// JSON-RPC one answers `id` with one member.
fn object(json: &[u8], id: Option<&str>, input: &[u8]) {
    let text = String::from_utf8_lossy(json);
    if has_duplicate_key(input) != Some(true) {
        assert_eq!(has_duplicate_key(json), Some(false), "{text}");
    }
    let v: Value = match serde_json::from_slice(json) {
        Ok(v) => v,
        // A number no `f64` holds is copied as written (on purpose): then the input was as
        // unreadable to a `Value` reader, and only the checks above apply.
        Err(e) => {
            let same = serde_json::from_slice::<Value>(input).is_err();
            assert!(same, "{e}: {text}");
            return;
        }
    };
    assert!(v.is_object(), "{text}");
    if let Some(id) = id {
        assert_eq!(v["jsonrpc"], "2.0", "{text}");
        assert_eq!(v["id"].to_string(), id, "{text}");
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
    let op = Op::ALL[usize::from(pick / 6) % Op::ALL.len()];
    let status = |rest: &[u8]| rest.first().map(|s| STATUSES[usize::from(*s) % 8]);
    match pick % 6 {
        0 => {
            let Ok(call) = b::rpc_request_to_rest(op, rest) else {
                return;
            };
            let path = call.path();
            assert!(
                path.starts_with('/') && path.bytes().all(|c| c.is_ascii_graphic()),
                "{path}"
            );
            if !call.body.is_empty() {
                object(&call.body, None, rest);
            }
        }
        1 => {
            if let Ok(json) = b::rest_request_to_rpc(op, "/tasks/x", None, rest, Some("t"), "\"g\"")
            {
                match serde_json::from_slice::<Value>(&json) {
                    Ok(v) => assert_eq!(v["method"], op.as_str()),
                    // A number no `f64` holds, copied as written (see `object`).
                    Err(_) => assert!(serde_json::from_slice::<Value>(rest).is_err()),
                }
                // A duplicate nested in what is copied stays (the request parser refused it before).
                if has_duplicate_key(rest) != Some(true) {
                    assert_eq!(has_duplicate_key(&json), Some(false));
                }
            }
        }
        2 => {
            let Some(s) = status(rest) else { return };
            if let Ok(Some((_, json))) = b::rest_answer_to_rpc(op, "\"c\"", s, &rest[1..]) {
                object(&json, Some("\"c\""), &rest[1..]);
            }
        }
        3 => {
            let Some(s) = status(rest) else { return };
            if let Ok((_, json)) = b::rpc_answer_to_rest(s, "\"g\"", &rest[1..]) {
                object(&json, None, &rest[1..]);
            }
        }
        4 => {
            if let Ok(t) = b::rest_event_to_rpc(op, "\"c\"", rest) {
                object(&t.json, Some("\"c\""), rest);
            }
        }
        _ => {
            if let Ok(t) = b::rpc_event_to_rest("\"g\"", rest) {
                object(&t.json, None, rest);
            }
        }
    }
});
