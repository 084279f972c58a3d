//! The harness of the agent's suite: the gateway suite's own files (`tests/integration/common/`),
//! included rather than copied so both products' tests start, guard and wait for processes one
//! way. Only the parts that need no gateway: locating the peers ([`host`]) and the agent ([`agent_bin`]), guarding a child
//! ([`process`]), waiting ([`eventually`]), the agent handle ([`ref_agent`], which here runs the
//! binary cargo built for this package) and the Python SDK client driver ([`sdk_client`]).
//! Does process and loopback network I/O; never binds fixed ports.
//!
//! Not every test file uses every helper, hence the `dead_code` allowance.
#![allow(dead_code, unused_imports)]

#[path = "../../../../tests/integration/common/agent_bin.rs"]
pub mod agent_bin;
#[path = "../../../../tests/integration/common/eventually.rs"]
pub mod eventually;
#[path = "../../../../tests/integration/common/host.rs"]
pub mod host;
#[path = "../../../../tests/integration/common/process.rs"]
pub mod process;
#[path = "../../../../tests/integration/common/ref_agent.rs"]
pub mod ref_agent;
#[path = "../../../../tests/integration/common/sdk_client.rs"]
pub mod sdk_client;

pub use host::{http, install_crypto_provider, python, repo_root};
pub use process::ChildGuard;
pub use ref_agent::RefAgent;
pub use sdk_client::{SdkRun, sdk_client};
