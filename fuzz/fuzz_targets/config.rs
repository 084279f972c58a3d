//! Config text → TOML parse (with the every-unknown-key report) → validated `Config`.
//!
//! The path names a folder that does not exist, so relative `jwks`, `ca_file` and credential
//! paths resolve to nothing; an absolute path in the input is read as the real loader would.
#![no_main]

use std::path::Path;

use a2a_egress::config::Config;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match Config::parse(text, Path::new("/nonexistent/a2a-egress-fuzz/gateway.toml")) {
        Ok(c) => {
            for i in &c.integrations {
                assert!(!i.name.is_empty());
            }
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
});
