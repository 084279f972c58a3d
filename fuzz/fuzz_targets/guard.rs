//! The content guard on arbitrary JSON-ish input: `scan_request` (both shapes) with every
//! built-in detector on redact, then `Verdict::redact`; whatever was accepted as JSON must come
//! out as JSON without duplicate keys, and a rescan of it must find nothing to redact.
#![no_main]

use std::collections::BTreeMap;
use std::sync::OnceLock;

use a2a_egress::guard::{self, Action, Detectors, OnUnscanned, Policy, Shape};
use a2a_egress::json::duplicate_keys;
use libfuzzer_sys::fuzz_target;
use serde::de::IgnoredAny;

fn guard() -> &'static (Detectors, Policy) {
    static G: OnceLock<(Detectors, Policy)> = OnceLock::new();
    G.get_or_init(|| {
        let all = Detectors::compile(Vec::new()).expect("built-ins compile");
        let names: Vec<String> = guard::BUILTIN_NAMES
            .iter()
            .map(|n| (*n).to_owned())
            .collect();
        let policy = Policy::new(
            &all,
            &names,
            Action::Redact,
            &BTreeMap::new(),
            None,
            1 << 20,
            OnUnscanned::Allow,
        )
        .expect("built-in policy");
        (all, policy)
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(body) = std::str::from_utf8(data) else {
        return;
    };
    if serde_json::from_str::<IgnoredAny>(body).is_err()
        || !duplicate_keys(body, 1).is_ok_and(|d| d.is_empty())
    {
        return;
    }
    let (all, policy) = guard();
    for shape in [Shape::JsonRpc, Shape::Rest] {
        let verdict = guard::scan_request(all, policy, body, shape);
        match verdict.redact(body) {
            Ok(out) => {
                assert!(
                    serde_json::from_str::<IgnoredAny>(&out).is_ok(),
                    "redacted body is not JSON"
                );
                assert!(duplicate_keys(&out, 1).is_ok_and(|d| d.is_empty()));
            }
            Err(guard::GuardError::DuplicateKey { .. }) => {}
            Err(e) => panic!("redact failed on scanned JSON: {e}"),
        }
    }
});
