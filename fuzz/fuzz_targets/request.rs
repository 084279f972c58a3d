//! Caller requests: the first byte picks the surface, the rest is the input.
//! - 0: JSON-RPC bodies → `parse_jsonrpc`, the tenant splice (`forward_body`) and the downgrade's
//!   method rename (`as_send_message`), each re-parsed;
//! - 1: request paths → `check_path`, `route`, and for HTTP+JSON routes `Method::from_rest` under
//!   every method;
//! - 2: HTTP+JSON bodies → `parse_rest_body` (with and without message parts);
//! - 3: any JSON text → `json::duplicate_keys`, against a reference duplicate detector.
#![no_main]

use a2a_egress::json::duplicate_keys;
use a2a_egress::proxy::body;
use a2a_egress::proxy::body::parse_rest_body;
use a2a_egress::proxy::feedback::as_send_message;
use a2a_egress::proxy::route::{self, Method, Route};
use a2a_egress_fuzz::has_duplicate_key;
use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use serde::de::IgnoredAny;

const MODES: &[&str] = &["text/plain", "application/json", "image/*"];

fn is_json(b: &[u8]) -> bool {
    serde_json::from_slice::<IgnoredAny>(b).is_ok()
}

fn jsonrpc(body: &[u8]) {
    let bytes = Bytes::copy_from_slice(body);
    let Ok(r) = body::parse_jsonrpc(&bytes) else {
        return;
    };
    // Decided on exactly these bytes: JSON without a duplicated key, id echoed verbatim.
    assert!(is_json(body));
    assert_eq!(
        has_duplicate_key(body),
        Some(false),
        "accepted a duplicate key"
    );
    assert!(serde_json::from_str::<IgnoredAny>(r.id.get()).is_ok());
    assert_eq!(r.body().as_ref(), body);
    if let Some(parts) = &r.params.parts {
        let modes: Vec<String> = MODES.iter().map(|m| m.to_string()).collect();
        for mt in parts {
            let _ = route::media_type_accepted(mt, &modes);
        }
    }
    // The tenant splice yields a request that parses to the same facts plus that tenant.
    if let Some(fwd) = r.forward_body(Some("acme\"/\u{e9}")) {
        let again = body::parse_jsonrpc(&fwd).unwrap_or_else(|e| {
            panic!(
                "spliced body refused ({e:?}): {:?}",
                String::from_utf8_lossy(&fwd)
            )
        });
        assert_eq!(again.tenant(), Some("acme\"/\u{e9}"));
        assert_eq!(again.method, r.method);
        assert_eq!(again.id.get(), r.id.get());
        assert_eq!(again.params.parts, r.params.parts);
    } else {
        assert!(
            r.tenant().is_some(),
            "no splice although the caller sent no tenant"
        );
    }
    // The downgrade rename (applied to message sends only) keeps everything but the method.
    if r.method.sends_message()
        && let Some(renamed) = as_send_message(body)
    {
        let again = body::parse_jsonrpc(&renamed).expect("renamed body parses");
        assert_eq!(again.method, Method::SendMessage);
        assert_eq!(again.id.get(), r.id.get());
        assert_eq!(again.tenant(), r.tenant());
    }
}

fn path(text: &str) {
    let checked = route::check_path(text);
    let r = route::route(text);
    if let Some(name) = r.name() {
        assert!(!name.is_empty() && !name.contains('/'));
    }
    if let Route::Rest { path, tenant, .. } = &r {
        assert!(path.starts_with('/'), "{path:?}");
        if checked.is_ok()
            && let Some(t) = tenant
        {
            assert!(
                t != "." && t != ".." && !t.contains('/'),
                "tenant {t:?} from {text:?}"
            );
        }
        for m in ["GET", "POST", "DELETE", "PUT", "PATCH", "HEAD", "get"] {
            let _ = Method::from_rest(m, path).as_str();
        }
    }
}

fn rest_body(body: &[u8]) {
    for sends in [false, true] {
        if parse_rest_body(body, sends).is_ok() && !body.iter().all(u8::is_ascii_whitespace) {
            assert!(is_json(body));
            assert_eq!(
                has_duplicate_key(body),
                Some(false),
                "accepted a duplicate key"
            );
        }
    }
}

fn dup_scan(body: &[u8]) {
    let Ok(text) = std::str::from_utf8(body) else {
        return;
    };
    let scanned = duplicate_keys(text, 4);
    // Compare with the reference only on JSON that serde_json takes within its depth limit.
    if let (Some(expected), Ok(found)) = (has_duplicate_key(body), &scanned) {
        assert_eq!(!found.is_empty(), expected, "scan {found:?} on {text:?}");
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    match mode % 4 {
        0 => jsonrpc(rest),
        1 => path(&String::from_utf8_lossy(rest)),
        2 => rest_body(rest),
        _ => dup_scan(rest),
    }
});
