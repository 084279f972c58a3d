//! Caller requests: the first byte picks the surface, the rest is the input.
//! - JSON-RPC bodies → `parse_jsonrpc`, the part media types of a message send and their check
//!   against a skill's modes, and the `SendStreamingMessage` → `SendMessage` rewrite;
//! - request paths → `route`, and for HTTP+JSON routes `Method::from_rest` under every method.
#![no_main]

use a2a_egress::proxy::feedback::as_send_message;
use a2a_egress::proxy::route::{self, Method, Route, RpcParseError};
use libfuzzer_sys::fuzz_target;

const MODES: &[&str] = &["text/plain", "application/json", "image/*"];

fn jsonrpc(body: &[u8]) {
    match route::parse_jsonrpc(body) {
        Ok(r) => {
            assert_eq!(r.method, Method::from_jsonrpc(&r.method_name));
            assert!(r.id.is_string() || r.id.is_number() || r.id.is_null());
            if let Some(t) = &r.tenant {
                assert!(!t.is_empty());
            }
            let modes: Vec<String> = MODES.iter().map(|m| m.to_string()).collect();
            let params = r.body.get("params").cloned().unwrap_or_default();
            for mt in route::part_media_types(&params) {
                let _ = route::media_type_accepted(&mt, &modes);
            }
            let rewritten = as_send_message(r.body.clone());
            if r.body.is_object() {
                assert_eq!(rewritten["method"], "SendMessage");
            }
            let _ = r.method.as_str();
        }
        Err(RpcParseError::Parse) => {}
        Err(RpcParseError::Invalid { id, .. }) => {
            if let Some(id) = id {
                assert!(id.is_string() || id.is_number() || id.is_null());
            }
        }
    }
}

fn path(text: &str) {
    let r = route::route(text);
    if let Some(name) = r.name() {
        assert!(!name.is_empty() && !name.contains('/'));
    }
    if let Route::Rest { path, .. } = &r {
        assert!(path.starts_with('/'), "{path:?}");
        for m in ["GET", "POST", "DELETE", "PUT", "PATCH", "HEAD", "get"] {
            let _ = Method::from_rest(m, path).as_str();
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    match mode % 2 {
        0 => jsonrpc(rest),
        _ => path(&String::from_utf8_lossy(rest)),
    }
});
