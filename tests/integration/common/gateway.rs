//! The gateway binary (`a2a-egress serve`) as a test peer: writes a config into a temp dir, starts
//! the process on port-0 listeners, and offers small call helpers (process and loopback I/O).

use std::net::SocketAddr;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::ChildGuard;

/// Startup deadline for the gateway process (it prints its line once both listeners accept).
const START_DEADLINE: Duration = Duration::from_secs(60);

/// A running gateway, killed on drop.
pub struct GatewayProc {
    /// The process.
    pub process: ChildGuard,
    /// Data plane address.
    pub proxy: SocketAddr,
    /// Admin address.
    pub admin: SocketAddr,
    /// `public_url` it announced.
    pub public_url: String,
    /// The temp dir holding the config (and any files the test put there).
    pub dir: tempfile::TempDir,
}

/// The `[listen]`/`[client]`/`[policy]` head used by the tests; integrations are appended.
pub fn config_head(extensions: &[&str]) -> String {
    format!(
        "[listen]\nproxy = \"127.0.0.1:0\"\nadmin = \"127.0.0.1:0\"\n\
         [client]\nbindings = [\"JSONRPC\", \"HTTP+JSON\"]\nversions = [\"1.0\"]\nextensions = {}\nallow_plain_http = true\n\
         [policy]\ndefault_data_class = \"internal\"\n",
        serde_json::to_string(extensions).unwrap()
    )
}

/// One `[[integrations]]` table for an agent whose card is at `card_url`; `extra` adds TOML lines.
pub fn integration(name: &str, card_url: &str, extra: &str) -> String {
    let u = url::Url::parse(card_url).expect("card URL");
    let origin = u.origin().ascii_serialization();
    format!(
        "\n[[integrations]]\nname = \"{name}\"\ncard = \"{card_url}\"\norigins = [\"{origin}\"]\n\
         skills = [\"echo\"]\ndata_classes = [\"public\", \"internal\"]\n{extra}\n"
    )
}

impl GatewayProc {
    /// Starts `a2a-egress serve` with `config` (TOML) and `env`, waits for its first line, then
    /// for `/readyz` (every integration has a verdict).
    pub async fn start(config: &str, env: &[(&str, &str)]) -> GatewayProc {
        let dir = tempfile::tempdir().expect("temp dir");
        Self::start_in(dir, config, env).await
    }

    /// As [`start`](Self::start), in a prepared directory (for token or CA files).
    pub async fn start_in(
        dir: tempfile::TempDir,
        config: &str,
        env: &[(&str, &str)],
    ) -> GatewayProc {
        let path = dir.path().join("gateway.toml");
        std::fs::write(&path, config).expect("writing the config");
        let mut cmd = Command::new(super::gateway_bin());
        cmd.arg("serve").arg("--config").arg(&path);
        // Before `env`, so a test can ask for another log level.
        cmd.env("A2A_EGRESS_LOG", "info");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let process = ChildGuard::spawn("a2a-egress serve", cmd, START_DEADLINE);
        let first = process.first().clone();
        let parse = |k: &str| -> SocketAddr {
            first[k]
                .as_str()
                .and_then(|a| a.parse().ok())
                .unwrap_or_else(|| panic!("serve's first line lacks {k}: {first}"))
        };
        let g = GatewayProc {
            proxy: parse("proxy"),
            admin: parse("admin"),
            public_url: first["public_url"].as_str().unwrap_or_default().to_owned(),
            process,
            dir,
        };
        g.wait_ready().await;
        g
    }

    async fn wait_ready(&self) {
        let end = Instant::now() + START_DEADLINE;
        let url = format!("http://{}/readyz", self.admin);
        loop {
            let status = super::http()
                .get(&url)
                .send()
                .await
                .map(|r| r.status().as_u16());
            if status.ok() == Some(200) {
                return;
            }
            assert!(
                Instant::now() < end,
                "gateway never became ready\n--- stderr ---\n{}",
                self.process.stderr_tail()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// `http://PROXY{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.proxy)
    }

    /// `http://PROXY/agents/{name}`.
    pub fn agent_url(&self, name: &str) -> String {
        self.url(&format!("/agents/{name}"))
    }

    /// `GET http://ADMIN/metrics` as text.
    pub async fn metrics(&self) -> String {
        super::http()
            .get(format!("http://{}/metrics", self.admin))
            .send()
            .await
            .expect("GET /metrics")
            .text()
            .await
            .expect("metrics text")
    }

    /// `GET http://ADMIN/readyz` as JSON.
    pub async fn readyz(&self) -> Value {
        super::http()
            .get(format!("http://{}/readyz", self.admin))
            .send()
            .await
            .expect("GET /readyz")
            .json()
            .await
            .expect("readyz JSON")
    }

    /// A JSON-RPC call to integration `name`; returns the HTTP status, headers and raw body.
    pub async fn rpc_raw(
        &self,
        name: &str,
        body: &Value,
        headers: &[(&str, &str)],
    ) -> (u16, reqwest::header::HeaderMap, String) {
        let mut req = super::http()
            .post(self.agent_url(name))
            .header("content-type", "application/json")
            .body(body.to_string());
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let resp = req.send().await.expect("sending through the gateway");
        let status = resp.status().as_u16();
        let h = resp.headers().clone();
        (status, h, resp.text().await.expect("body"))
    }

    /// A JSON-RPC call; returns the HTTP status and the JSON body.
    pub async fn rpc(&self, name: &str, body: &Value, headers: &[(&str, &str)]) -> (u16, Value) {
        let (s, _, b) = self.rpc_raw(name, body, headers).await;
        let v = serde_json::from_str(&b)
            .unwrap_or_else(|e| panic!("gateway answer is not JSON ({e}): {b:?}"));
        (s, v)
    }
}

/// A SendMessage (or SendStreamingMessage) JSON-RPC request with one text part.
pub fn send_request(id: &str, method: &str, text: &str) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": method,
        "params": {
            "message": {
                "messageId": format!("m-{id}"),
                "role": "ROLE_USER",
                "parts": [{"text": text}]
            }
        }
    })
}

/// Parses an SSE body into the JSON of each event's `data` (multi-line data joined by newlines).
pub fn sse_events(body: &str) -> Vec<Value> {
    let mut events = Vec::new();
    let mut data: Vec<String> = Vec::new();
    for line in body.split('\n') {
        let line = line.trim_end_matches('\r');
        if line.is_empty() {
            if !data.is_empty() {
                let joined = data.join("\n");
                events.push(
                    serde_json::from_str(&joined)
                        .unwrap_or_else(|e| panic!("SSE data is not JSON ({e}): {joined:?}")),
                );
                data.clear();
            }
        } else if let Some(d) = line.strip_prefix("data:") {
            data.push(d.strip_prefix(' ').unwrap_or(d).to_owned());
        }
    }
    if !data.is_empty() {
        events.push(serde_json::from_str(&data.join("\n")).expect("trailing SSE data is JSON"));
    }
    events
}

/// The value of metric `name` with all `labels` (as `k="v"` pairs), or 0 when absent.
pub fn metric(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(name) && !l.starts_with('#'))
        .filter(|l| {
            labels
                .iter()
                .all(|(k, v)| l.contains(&format!("{k}=\"{v}\"")))
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}
