//! Shared harness for the integration tests (`mod common;` in `main.rs`): locating the Python
//! peers, guarding child processes, starting the official-SDK test agent, the reference agent
//! (the `a2a-agent` binary, [`ref_agent`]) and the gateway (in process or as the binary), and
//! waiting for asynchronous outcomes ([`crate::assert_eventually!`]). The reference agent's own
//! suite (`agent/tests/integration/`) includes `host`, `process`, `eventually`, `ref_agent` and
//! `sdk_client` from here, so both products' tests share one harness.
//! Does process and loopback network I/O; never binds fixed ports.
//!
//! Not every test file uses every helper, hence the `dead_code` allowance.
#![allow(dead_code, unused_imports)]

pub mod agent_bin;
pub mod control;
pub mod drip;
pub mod eventually;
pub mod gateway;
pub mod host;
pub mod process;
pub mod raw_agent;
pub mod ref_agent;
pub mod relay;
pub mod schema;
pub mod sdk_agent;
pub mod sdk_client;
pub mod tls;

use std::path::PathBuf;

pub use host::{http, install_crypto_provider, python, python_v03, repo_root};
pub use process::ChildGuard;
pub use ref_agent::RefAgent;
pub use sdk_agent::{SdkAgent, Seen};
pub use sdk_client::{SdkRun, sdk_client};
pub use tls::TestPki;

/// The gateway binary the tests run: `$A2A_EGRESS_BIN` when set, else the one cargo built for this
/// test binary. Several worktrees sharing one `CARGO_TARGET_DIR` overwrite `target/debug/a2a-egress`
/// with their own builds; pointing this at `target/debug/deps/a2a_egress-<hash>` pins a run to one.
pub fn gateway_bin() -> PathBuf {
    std::env::var_os("A2A_EGRESS_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_a2a-egress")))
}

/// The one way tests run the gateway binary (any subcommand): a command for [`gateway_bin`].
/// `GatewayProc` runs `serve` through it; tests of the other subcommands add their arguments.
pub fn gateway_cmd() -> std::process::Command {
    std::process::Command::new(gateway_bin())
}
