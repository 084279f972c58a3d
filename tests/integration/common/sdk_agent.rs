//! The official-SDK test agent (`tests/peers/sdk_agent.py`, a2a-sdk 1.3.0) as a Rust handle
//! (spawns Python, talks to it over loopback HTTP).

use std::net::SocketAddr;
use std::process::Command;
use std::time::Duration;

use serde::Deserialize;

use super::ChildGuard;

/// Startup deadline: the agent serves in ≈0.5 s; generous for a loaded 2-core CI machine.
const START_DEADLINE: Duration = Duration::from_secs(30);

/// A running `sdk_agent.py`, killed on drop. Interfaces live at `{base_url}/jsonrpc` (JSON-RPC)
/// and `{base_url}/rest` (HTTP+JSON); which of them the card lists is chosen by `--binding`.
pub struct SdkAgent {
    /// The process guard (stderr tail, pid, …).
    pub process: ChildGuard,
    /// The bound address.
    pub addr: SocketAddr,
    /// `http://127.0.0.1:PORT` (`https://` with [`start_tls`](Self::start_tls); no trailing slash).
    pub base_url: String,
    /// `http://127.0.0.1:PORT/.well-known/agent-card.json`.
    pub card_url: String,
    /// The client `card`/`seen`/`reset` use (trusts the test CA for a TLS agent).
    pub client: reqwest::Client,
}

/// One request as the agent recorded it (`GET /_test/seen`). Header values are as received
/// (several header lines joined with ", "); `None` when absent.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct Seen {
    /// Request path, e.g. `/jsonrpc`, `/rest/t1/message:send`, `/.well-known/agent-card.json`.
    pub path: String,
    /// HTTP method.
    pub http_method: String,
    /// JSON-RPC `method` when the request went to the JSON-RPC interface.
    pub rpc_method: Option<String>,
    /// HTTP+JSON route without the tenant, e.g. `POST /message:send`, `GET /tasks/abc`.
    pub rest_route: Option<String>,
    /// The tenant: JSON-RPC `params.tenant`, or the REST path prefix.
    pub tenant: Option<String>,
    /// `A2A-Version` header.
    pub a2a_version: Option<String>,
    /// `A2A-Extensions` header.
    pub a2a_extensions: Option<String>,
    /// `Authorization` header.
    pub authorization: Option<String>,
    /// `Content-Type` header.
    pub content_type: Option<String>,
    /// The request body as JSON (a string if it was not JSON, `null` if empty).
    pub body: serde_json::Value,
    /// The request body exactly as received (UTF-8, invalid bytes replaced), for byte-level checks.
    #[serde(default)]
    pub raw_body: String,
    /// Every request header: lower-cased name → value (repeated lines joined with ", "); for a
    /// gRPC call, its metadata.
    #[serde(default)]
    pub headers: std::collections::BTreeMap<String, String>,
    /// The rpc of a gRPC call (`SendMessage`, …; its path is `/lf.a2a.v1.A2AService/<rpc>`).
    #[serde(default)]
    pub grpc_method: Option<String>,
}

impl Seen {
    /// Whether this was a card fetch rather than an A2A call.
    pub fn is_card_fetch(&self) -> bool {
        self.path == "/.well-known/agent-card.json"
    }
}

impl SdkAgent {
    /// Starts the agent with `args` (see `sdk_agent.py --help`, e.g. `["--binding", "both",
    /// "--tenant", "t1"]`) and waits until it listens. Panics with its stderr if it cannot start.
    pub fn start(args: &[&str]) -> SdkAgent {
        Self::spawn(args, super::http())
    }

    /// Like [`start`](Self::start), serving HTTPS with `pki`'s server certificate (which must name
    /// `127.0.0.1`); interface URLs in the card are `https://127.0.0.1:PORT/...`.
    pub fn start_tls(args: &[&str], pki: &super::tls::TestPki) -> SdkAgent {
        let mut all = vec![
            "--tls-cert",
            pki.cert_path.to_str().expect("utf-8 path"),
            "--tls-key",
            pki.key_path.to_str().expect("utf-8 path"),
        ];
        all.extend_from_slice(args);
        Self::spawn(&all, pki.client())
    }

    /// Starts the A2A **0.3** agent `tests/peers/sdk_agent_v03.py` (official a2a-sdk 0.3.26, in
    /// `.venv03`) with `args` (e.g. `["--transport", "rest", "--both"]`).
    pub fn start_v03(args: &[&str]) -> SdkAgent {
        let mut cmd = Command::new(super::python_v03());
        cmd.arg(super::repo_root().join("tests/peers/sdk_agent_v03.py"));
        Self::spawn_cmd("sdk_agent_v03.py", cmd, args, super::http())
    }

    /// Starts the A2A **0.3** agent of the official JS SDK, `tests/peers/js03/agent.mjs`
    /// (`@a2a-js/sdk` 0.3.14, both bindings) with `args` (e.g. `["--transport", "rest"]`).
    /// Panics (never skips) when `npm ci` has not been run there.
    pub fn start_js03(args: &[&str]) -> SdkAgent {
        let dir = super::repo_root().join("tests/peers/js03");
        assert!(
            dir.join("node_modules/@a2a-js/sdk").exists(),
            "the JS 0.3 agent is not installed in {} — run `bash scripts/test.sh` once (or `npm ci` there)",
            dir.display()
        );
        let mut cmd = Command::new("node");
        cmd.current_dir(&dir).arg("agent.mjs");
        Self::spawn_cmd("js03/agent.mjs", cmd, args, super::http())
    }

    fn spawn(args: &[&str], client: reqwest::Client) -> SdkAgent {
        let mut cmd = Command::new(super::python());
        cmd.arg(super::repo_root().join("tests/peers/sdk_agent.py"));
        Self::spawn_cmd("sdk_agent.py", cmd, args, client)
    }

    fn spawn_cmd(
        name: &'static str,
        mut cmd: Command,
        args: &[&str],
        client: reqwest::Client,
    ) -> SdkAgent {
        cmd.arg("--exit-on-stdin-eof")
            .args(args)
            .env("PYTHONUNBUFFERED", "1");
        let process = ChildGuard::spawn(name, cmd, START_DEADLINE);
        let addr = process.addr();
        let card_url = process.first()["card_url"]
            .as_str()
            .expect("the agent announces card_url")
            .to_owned();
        let base_url = card_url
            .strip_suffix("/.well-known/agent-card.json")
            .expect("card_url ends with the well-known path")
            .to_owned();
        SdkAgent {
            addr,
            base_url,
            card_url,
            client,
            process,
        }
    }

    /// The JSON-RPC interface URL.
    pub fn jsonrpc_url(&self) -> String {
        format!("{}/jsonrpc", self.base_url)
    }

    /// The HTTP+JSON interface URL (routes and `/{tenant}` are appended to it).
    pub fn rest_url(&self) -> String {
        format!("{}/rest", self.base_url)
    }

    /// The card as the agent serves it.
    pub async fn card(&self) -> serde_json::Value {
        let resp = self
            .client
            .get(&self.card_url)
            .header("A2A-Version", "1.0")
            .send()
            .await
            .expect("fetching the agent card");
        assert!(
            resp.status().is_success(),
            "card fetch: HTTP {}",
            resp.status()
        );
        resp.json().await.expect("card is JSON")
    }

    /// Every request the agent received since start (or the last [`reset`](Self::reset)), in order.
    pub async fn seen(&self) -> Vec<Seen> {
        let resp = self
            .client
            .get(format!("{}/_test/seen", self.base_url))
            .send()
            .await
            .expect("GET /_test/seen");
        assert!(
            resp.status().is_success(),
            "/_test/seen: HTTP {}",
            resp.status()
        );
        resp.json()
            .await
            .expect("/_test/seen is a JSON list of requests")
    }

    /// The recorded A2A calls only (card fetches left out).
    pub async fn seen_calls(&self) -> Vec<Seen> {
        self.seen()
            .await
            .into_iter()
            .filter(|s| !s.is_card_fetch())
            .collect()
    }

    /// The streaming gRPC calls that have ended, by handler name (`on_message_send_stream`,
    /// `on_subscribe_to_task`; `/_test/ended`).
    pub async fn ended(&self) -> Vec<String> {
        let r = self
            .client
            .get(format!("{}/_test/ended", self.base_url))
            .send()
            .await
            .expect("GET /_test/ended");
        r.json().await.expect("/_test/ended is JSON")
    }

    /// Makes the running agent require extension `uri` (its card lists it as required at once,
    /// and message sends without it answer ExtensionSupportRequiredError).
    pub async fn require_extension(&self, uri: &str) {
        let resp = self
            .client
            .post(format!("{}/_test/require-extension", self.base_url))
            .json(&serde_json::json!({ "uri": uri }))
            .send()
            .await
            .expect("POST /_test/require-extension");
        assert!(
            resp.status().is_success(),
            "/_test/require-extension: HTTP {}",
            resp.status()
        );
    }

    /// Forgets the recorded requests.
    pub async fn reset(&self) {
        let resp = self
            .client
            .post(format!("{}/_test/reset", self.base_url))
            .send()
            .await
            .expect("POST /_test/reset");
        assert!(
            resp.status().is_success(),
            "/_test/reset: HTTP {}",
            resp.status()
        );
    }
}
