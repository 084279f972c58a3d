//! Where a test finds what it runs against: the repository root, the Python peers' interpreter,
//! and a loopback HTTP client (reads the environment and the file system; no network of its own).
//!
//! Shared by the gateway's suite and the reference agent's (`agent/tests/integration/common/`
//! includes this file), so both find the peers the same way.

use std::path::{Path, PathBuf};

/// The workspace root (where `Cargo.lock` and `config/` are), for the gateway's package at the
/// root and the agent's package in `agent/` alike.
pub fn repo_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .ancestors()
        .find(|d| d.join("Cargo.lock").is_file())
        .unwrap_or(manifest)
        .to_path_buf()
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

/// The Python of the 0.3 peer's venv (`tests/peers/v03/requirements.txt`: a2a-sdk 0.3.26):
/// `A2A_EGRESS_PYTHON_V03`, else `.venv03/bin/python` (both created by `scripts/test.sh`).
pub fn python_v03() -> PathBuf {
    let p = std::env::var_os("A2A_EGRESS_PYTHON_V03")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join(".venv03/bin/python"));
    assert!(
        p.exists(),
        "the 0.3 Python test peer was not found at {} — run `bash scripts/test.sh` once (it \
         creates .venv03 with a2a-sdk 0.3.26), or set A2A_EGRESS_PYTHON_V03 to that venv's python",
        p.display()
    );
    p
}

/// Installs rustls' ring provider for this process (reqwest is built without one); idempotent.
pub fn install_crypto_provider() {
    // Err only means another test in this binary installed it first.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// How long a test client keeps an idle connection: under uvicorn's 5 s keep-alive, so a
/// connection the Python peers already closed is never picked for the next request (which then
/// fails with `IncompleteMessage` when the close and the request cross).
pub const PEER_KEEP_ALIVE_MARGIN: std::time::Duration = std::time::Duration::from_secs(2);

/// A reqwest client for loopback tests: crypto provider installed, system proxies ignored.
pub fn http() -> reqwest::Client {
    install_crypto_provider();
    reqwest::Client::builder()
        .no_proxy()
        .pool_idle_timeout(PEER_KEEP_ALIVE_MARGIN)
        .build()
        .expect("building a reqwest client")
}
