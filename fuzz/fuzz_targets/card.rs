//! Card bytes → strict parse → validate (three policies) → compile (two client capability sets),
//! plus the digest's independence from formatting: an accepted card re-serialised compactly and
//! pretty-printed has the same digest.
#![no_main]

use a2a_egress::card;
use a2a_egress_fuzz::{policies, validate_and_compile};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((v, _)) = validate_and_compile(data) else {
        return;
    };
    let policy = &policies()[1];
    for text in [
        serde_json::to_vec(v.json()).expect("serialises"),
        serde_json::to_vec_pretty(v.json()).expect("serialises"),
    ] {
        // The re-serialised card can be refused only for its size (pretty printing grows it).
        match card::validate(&text, policy, None) {
            Ok(again) => assert_eq!(again.digest(), v.digest()),
            Err(e) => assert!(
                e.iter()
                    .all(|e| matches!(e, card::CardError::TooLarge { .. })),
                "re-serialised card refused: {e}"
            ),
        }
    }
});
