//! Shared harness for the integration tests (`mod common;` in `main.rs`): locating the Python
//! peers, guarding child processes, starting the official-SDK test agent and the gateway (in
//! process or as the binary), and waiting for asynchronous outcomes ([`crate::assert_eventually!`]).
//! Does process and loopback network I/O; never binds fixed ports.
//!
//! Not every test file uses every helper, hence the `dead_code` allowance.
#![allow(dead_code, unused_imports)]

pub mod drip;
pub mod eventually;
pub mod gateway;
pub mod hostile;
pub mod process;
pub mod raw_agent;
pub mod ref_agent;
pub mod relay;
pub mod sdk_agent;
pub mod sdk_client;
pub mod tls;

use std::path::PathBuf;

pub use process::ChildGuard;
pub use ref_agent::RefAgent;
pub use sdk_agent::{SdkAgent, Seen};
pub use sdk_client::{SdkRun, sdk_client};
pub use tls::TestPki;

/// The repository root (where `Cargo.toml` is).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The Python interpreter of the test peers' virtualenv: `$A2A_EGRESS_PYTHON`, else
/// `<repo>/.venv/bin/python`. Panics (never skips) when it is missing, so a machine without the
/// peers fails loudly instead of silently testing less.
pub fn python() -> PathBuf {
    let p = std::env::var_os("A2A_EGRESS_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join(".venv/bin/python"));
    assert!(
        p.exists(),
        "Python test peers not found at {} — run `bash scripts/test.sh` once (it creates .venv with the \
         official a2a-sdk), or set A2A_EGRESS_PYTHON to that venv's python",
        p.display()
    );
    p
}

/// The gateway binary the tests run: `$A2A_EGRESS_BIN` when set, else the one cargo built for this
/// test binary. Several worktrees sharing one `CARGO_TARGET_DIR` overwrite `target/debug/a2a-egress`
/// with their own builds; pointing this at `target/debug/deps/a2a_egress-<hash>` pins a run to one.
pub fn gateway_bin() -> PathBuf {
    std::env::var_os("A2A_EGRESS_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_a2a-egress")))
}

/// Installs rustls' ring provider for this process (reqwest is built without one); idempotent.
pub fn install_crypto_provider() {
    // Err only means another test in this binary installed it first.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// A reqwest client for loopback tests: crypto provider installed, system proxies ignored.
pub fn http() -> reqwest::Client {
    install_crypto_provider();
    reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("building a reqwest client")
}
