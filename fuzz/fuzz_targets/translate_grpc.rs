//! The JSON-RPC ⇄ gRPC translator (`a2a_egress::translate::grpc`): the first byte picks the
//! direction (`% 3`: request, answer, status) and the operation (`/ 3`, an index into `Op::ALL`).
//! A request's input is a JSON-RPC request body; an answer's the rpc's protobuf answer bytes; a
//! status's a gRPC code (the next byte, `% 17`) and the encoded `google.rpc.Status` details.
//!
//! Invariants beyond "no panic": an answer that translates is one JSON object without duplicate
//! keys, with `"jsonrpc":"2.0"`, the id and a `result`; a status always becomes one JSON object
//! with an integer `error.code` (the agent's bytes never make it fail or panic).
#![no_main]

use a2a_egress::translate::Op;
use a2a_egress::translate::grpc::{Status, answer_to_rpc, request_to_pb, status_to_rpc};
use a2a_egress_fuzz::has_duplicate_key;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let op = Op::ALL[usize::from(pick / 3) % Op::ALL.len()];
    match pick % 3 {
        0 => {
            let _ = request_to_pb(op, rest);
        }
        1 => {
            let Ok(json) = answer_to_rpc(op, "\"id-1\"", rest) else {
                return;
            };
            let text = String::from_utf8_lossy(&json);
            assert_eq!(has_duplicate_key(&json), Some(false), "{text}");
            let v: Value = serde_json::from_slice(&json).unwrap_or_else(|e| panic!("{e}: {text}"));
            assert_eq!(v["jsonrpc"], "2.0", "{text}");
            assert_eq!(v["id"], "id-1", "{text}");
            assert!(v.get("result").is_some(), "{text}");
        }
        _ => {
            let [code, details @ ..] = rest else { return };
            let status = Status {
                code: i32::from(*code % 17),
                message: "m",
                details,
            };
            let json = status_to_rpc(op, "7", status);
            let text = String::from_utf8_lossy(&json);
            let v: Value = serde_json::from_slice(&json).unwrap_or_else(|e| panic!("{e}: {text}"));
            assert!(v["error"]["code"].is_i64(), "{text}");
            assert_eq!(v["id"], 7, "{text}");
        }
    }
});
