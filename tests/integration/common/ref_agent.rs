//! The bundled reference agent (the `a2a-agent` binary, `agent/` in the workspace) as a Rust
//! handle for integration tests: starts the real binary on 127.0.0.1:0 and kills it on drop
//! (process and loopback I/O).
//!
//! ```ignore
//! let agent = RefAgent::sample();                       // config/agent/registry.toml, demo tokens
//! let agent = RefAgent::start(&path, &RefAgent::demo_envs()); // any registry file
//! let agent = RefAgent::start_with_args(&path, &RefAgent::demo_envs(), &["--watch-interval-ms", "0"]);
//! agent.card_url; agent.jsonrpc_url(); agent.rest_url(); agent.card().await; agent.sighup();
//! ```
//!
//! The binary is the one [`agent_bin`] finds (and, in the gateway's suite, builds first).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use super::ChildGuard;
pub use super::agent_bin::agent_bin;

/// Startup deadline (the agent listens within milliseconds; generous for a loaded CI machine).
const START_DEADLINE: Duration = Duration::from_secs(30);

/// Demo token of principal `partner` (scope `recon.run`, tenant `acme`, previews on).
pub const PARTNER_TOKEN: &str = "partner-demo-token";
/// Demo token of principal `viewer` (no scopes, tenant `acme`).
pub const VIEWER_TOKEN: &str = "viewer-demo-token";
/// Demo token of principal `other` (scope `recon.run`, tenant `globex`).
pub const OTHER_TOKEN: &str = "other-demo-token";

/// A running reference agent, killed on drop.
pub struct RefAgent {
    /// The process guard (stderr tail, pid, terminate, ...).
    pub process: ChildGuard,
    /// The bound address.
    pub addr: SocketAddr,
    /// `http://127.0.0.1:PORT` (no trailing slash).
    pub base_url: String,
    /// `http://127.0.0.1:PORT/.well-known/agent-card.json`, from the agent's `listening` line.
    pub card_url: String,
}

impl RefAgent {
    /// The sample registry shipped in `config/agent/registry.toml`.
    pub fn sample_registry() -> PathBuf {
        super::repo_root().join("config/agent/registry.toml")
    }

    /// The sample registry's text, to derive variants from (see [`RefAgent::write_registry`]).
    pub fn sample_registry_text() -> String {
        std::fs::read_to_string(Self::sample_registry()).expect("reading the sample registry")
    }

    /// Writes a registry file `name` into `dir` and returns its path.
    pub fn write_registry(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).expect("writing a test registry");
        path
    }

    /// The environment that gives the sample principals their demo tokens.
    pub fn demo_envs() -> [(&'static str, &'static str); 3] {
        [
            ("A2A_AGENT_TOKEN_PARTNER", PARTNER_TOKEN),
            ("A2A_AGENT_TOKEN_VIEWER", VIEWER_TOKEN),
            ("A2A_AGENT_TOKEN_OTHER", OTHER_TOKEN),
        ]
    }

    /// Starts the agent on the sample registry with the demo tokens.
    pub fn sample() -> RefAgent {
        Self::start(&Self::sample_registry(), &Self::demo_envs())
    }

    /// Starts `a2a-agent --registry <registry> --listen 127.0.0.1:0` with `envs` added to
    /// the environment, and waits for its `listening` line. Panics with its stderr if it fails.
    pub fn start(registry: &Path, envs: &[(&str, &str)]) -> RefAgent {
        Self::start_with_args(registry, envs, &[])
    }

    /// [`RefAgent::start`] with extra command-line arguments, e.g. `["--watch-interval-ms", "0"]`
    /// (reload only on SIGHUP).
    pub fn start_with_args(registry: &Path, envs: &[(&str, &str)], args: &[&str]) -> RefAgent {
        Self::spawn(registry, envs, args, "127.0.0.1:0")
    }

    /// [`RefAgent::start`] on a given address, e.g. the one of an agent that just stopped (to
    /// restart it where a gateway already points).
    pub fn start_on(registry: &Path, envs: &[(&str, &str)], listen: SocketAddr) -> RefAgent {
        Self::spawn(registry, envs, &[], &listen.to_string())
    }

    fn spawn(registry: &Path, envs: &[(&str, &str)], args: &[&str], listen: &str) -> RefAgent {
        let mut cmd = Command::new(agent_bin());
        // The guard holds stdin open; if the test process dies, EOF stops the agent too.
        cmd.args(["--exit-on-stdin-eof", "--listen", listen, "--registry"])
            .arg(registry)
            .args(args)
            .env("RUST_LOG", "info");
        for (k, v) in envs {
            cmd.env(k, v);
        }
        let process = ChildGuard::spawn("a2a-agent", cmd, START_DEADLINE);
        assert_eq!(
            process.first()["event"],
            "listening",
            "unexpected first line {}",
            process.first()
        );
        let addr = process.addr();
        let card_url = process.first()["card_url"]
            .as_str()
            .expect("the listening line has card_url")
            .to_owned();
        RefAgent {
            addr,
            base_url: format!("http://{addr}"),
            card_url,
            process,
        }
    }

    /// The JSON-RPC interface URL of registries that keep the sample's paths.
    pub fn jsonrpc_url(&self) -> String {
        format!("{}/a2a/jsonrpc", self.base_url)
    }

    /// The HTTP+JSON interface URL of registries that keep the sample's paths.
    pub fn rest_url(&self) -> String {
        format!("{}/a2a/rest", self.base_url)
    }

    /// The public card as served (with `A2A-Version: 1.0`).
    pub async fn card(&self) -> serde_json::Value {
        let resp = super::http()
            .get(&self.card_url)
            .header("A2A-Version", "1.0")
            .send()
            .await
            .expect("fetching the agent card");
        assert!(resp.status().is_success(), "card: HTTP {}", resp.status());
        resp.json().await.expect("card is JSON")
    }

    /// Sends SIGHUP (registry reload), through `kill(1)` to keep tests free of unsafe FFI.
    pub fn sighup(&self) {
        let ok = Command::new("kill")
            .args(["-HUP", &self.process.pid().to_string()])
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "could not send SIGHUP to the agent");
    }

    /// Polls the public card until `pred` holds (reloads are asynchronous); panics after 20 s.
    pub async fn wait_for_card(
        &self,
        pred: impl Fn(&serde_json::Value) -> bool,
    ) -> serde_json::Value {
        let mut card: serde_json::Value;
        crate::assert_eventually!(
            {
                card = self.card().await;
                pred(&card)
            },
            every = Duration::from_millis(100),
            "card never reached the expected state; last: {card}\n--- agent stderr ---\n{}",
            self.process.stderr_tail()
        );
        card
    }
}
