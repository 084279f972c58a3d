//! The gateway as a test peer, two ways: [`InProcess`] runs the gateway core
//! (`a2a_egress::server::run`) on port-0 listeners inside the test process; [`GatewayProc`] runs
//! the `a2a-egress serve` binary, for tests that need a process boundary (signals, environment
//! variables, log capture, exit codes). Both write the config into a temp dir and wait for
//! `/readyz`; [`Endpoints`] holds the call helpers they share (process and loopback I/O).

use std::net::SocketAddr;
use std::ops::Deref;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use a2a_egress::testkit::{ConfigToml, IntegrationToml};
use serde_json::{Value, json};

use super::ChildGuard;

/// Startup deadline for the gateway (it is ready once every integration has a verdict).
const START_DEADLINE: Duration = Duration::from_secs(60);
/// Longest wait for an in-process gateway to stop when its handle is dropped.
const STOP_DEADLINE: Duration = Duration::from_secs(40);
/// The `[listen]`/`[client]`/`[policy]` head used by the tests; integrations are appended
/// (the test kit's [`ConfigToml`] head, as text).
pub fn config_head(extensions: &[&str]) -> String {
    ConfigToml::new(extensions).text()
}

/// Writes `content` and a newline to `dir/name`, readable by its owner only: a token file a
/// config names (the gateway refuses one that others may read).
pub fn write_secret(dir: &std::path::Path, name: &str, content: &str) {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("{content}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// One `[[integrations]]` table for an agent whose card is at `card_url`; `extra` adds TOML lines
/// (the test kit's [`IntegrationToml`] defaults, as text).
pub fn integration(name: &str, card_url: &str, extra: &str) -> String {
    IntegrationToml::new(name, card_url).extra(extra).text()
}

/// Where a running gateway listens, and the calls tests make to it.
#[derive(Debug, Clone)]
pub struct Endpoints {
    /// Data plane address.
    pub proxy: SocketAddr,
    /// Admin address.
    pub admin: SocketAddr,
    /// `public_url` it announced.
    pub public_url: String,
    /// The admin bearer token of `[admin] token_file`, when the config names one: `/readyz`
    /// shows its detail only to the token's holder.
    pub admin_token: Option<String>,
}

/// The token in the file `[admin] token_file` of `config` names (relative to `dir`), if any.
fn admin_token(dir: &std::path::Path, config: &str) -> Option<String> {
    let doc: toml::Table = config.parse().ok()?;
    let file = doc.get("admin")?.get("token_file")?.as_str()?;
    let text = std::fs::read_to_string(dir.join(file)).ok()?;
    Some(text.trim().to_owned())
}

impl Endpoints {
    /// Waits until `/readyz` answers 200 (every integration has a verdict); `context` says what
    /// to show when it never does.
    async fn wait_ready(&self, context: impl Fn() -> String) {
        let url = format!("http://{}/readyz", self.admin);
        let mut last: Option<u16>;
        crate::assert_eventually!(
            {
                last = super::http()
                    .get(&url)
                    .send()
                    .await
                    .map(|r| r.status().as_u16())
                    .ok();
                last == Some(200)
            },
            within = START_DEADLINE,
            every = Duration::from_millis(50),
            "gateway never became ready (last /readyz: {last:?})\n{}",
            context()
        );
    }

    /// `http://PROXY{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.proxy)
    }

    /// `http://PROXY/agents/{name}`.
    pub fn agent_url(&self, name: &str) -> String {
        self.url(&format!("/agents/{name}"))
    }

    /// `http://ADMIN{path}`.
    pub fn admin_url(&self, path: &str) -> String {
        format!("http://{}{path}", self.admin)
    }

    /// The effective card the gateway serves for integration `name`, as JSON.
    pub async fn effective_card(&self, name: &str) -> Value {
        let url = format!("{}/.well-known/agent-card.json", self.agent_url(name));
        let r = super::http().get(&url).send().await.unwrap();
        assert_eq!(r.status(), 200, "GET {url}");
        r.json().await.unwrap()
    }

    /// `GET http://ADMIN{path}` with the admin bearer `token`: a 200 JSON answer (the planner
    /// view of `/v1/integrations/NAME`, for one).
    pub async fn admin_json(&self, path: &str, token: &str) -> Value {
        let r = super::http()
            .get(self.admin_url(path))
            .bearer_auth(token)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "GET {path}");
        r.json().await.unwrap()
    }

    /// `GET http://ADMIN/metrics` as text.
    pub async fn metrics(&self) -> String {
        super::http()
            .get(self.admin_url("/metrics"))
            .send()
            .await
            .expect("GET /metrics")
            .text()
            .await
            .expect("metrics text")
    }

    /// `GET http://ADMIN/readyz` as JSON (with the admin token when the config has one).
    pub async fn readyz(&self) -> Value {
        let mut req = super::http().get(self.admin_url("/readyz"));
        if let Some(t) = &self.admin_token {
            req = req.bearer_auth(t);
        }
        req.send()
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

/// A running `a2a-egress serve` process, killed on drop.
pub struct GatewayProc {
    /// The process.
    pub process: ChildGuard,
    /// Where it listens.
    pub endpoints: Endpoints,
    /// The temp dir holding the config (and any files the test put there).
    pub dir: tempfile::TempDir,
}

impl Deref for GatewayProc {
    type Target = Endpoints;
    fn deref(&self) -> &Endpoints {
        &self.endpoints
    }
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
        Self::start_wrapped(dir, config, env, &[]).await
    }

    /// As [`start_in`](Self::start_in), run by `wrapper` (a command and its arguments that end
    /// by running the rest of their command line, e.g. `taskset -c 0`).
    pub async fn start_wrapped(
        dir: tempfile::TempDir,
        config: &str,
        env: &[(&str, &str)],
        wrapper: &[&str],
    ) -> GatewayProc {
        let path = dir.path().join("gateway.toml");
        std::fs::write(&path, config).expect("writing the config");
        // Every config a test serves is one the committed schema accepts too.
        super::schema::assert_matches_schema(config, "the test config");
        let mut cmd = match wrapper.split_first() {
            Some((program, args)) => {
                let mut cmd = Command::new(program);
                cmd.args(args).arg(super::gateway_bin());
                cmd
            }
            None => super::gateway_cmd(),
        };
        cmd.arg("serve").arg("--config").arg(&path);
        // Before `env`, so a test can ask for another log level; the thread count is the
        // config's or the CPUs' unless a test sets it (not the environment the suite runs in).
        cmd.env("RUST_LOG", "info");
        cmd.env_remove("TOKIO_WORKER_THREADS");
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
            endpoints: Endpoints {
                proxy: parse("proxy"),
                admin: parse("admin"),
                public_url: first["public_url"].as_str().unwrap_or_default().to_owned(),
                admin_token: admin_token(dir.path(), config),
            },
            process,
            dir,
        };
        g.endpoints
            .wait_ready(|| format!("--- stderr ---\n{}", g.process.stderr_tail()))
            .await;
        g
    }
}

/// The gateway core running inside the test process, on its own runtime and thread (so a test's
/// runtime flavour or a blocking call in a test cannot stall it). Dropping it stops the gateway
/// (drain included) and waits for that; [`InProcess::stop`] does the same and returns the result.
pub struct InProcess {
    /// Where it listens.
    pub endpoints: Endpoints,
    /// The temp dir holding the config (and any files the test put there).
    pub dir: tempfile::TempDir,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    /// What `run` returned, once it has; taken by [`InProcess::stop`].
    done: Option<std::sync::mpsc::Receiver<Result<(), String>>>,
}

impl Deref for InProcess {
    type Target = Endpoints;
    fn deref(&self) -> &Endpoints {
        &self.endpoints
    }
}

impl InProcess {
    /// Starts the gateway with `config` (TOML, listeners on port 0), then waits for `/readyz`.
    pub async fn start(config: &str) -> InProcess {
        Self::start_in(tempfile::tempdir().expect("temp dir"), config).await
    }

    /// As [`start`](Self::start), in a prepared directory (for token, CA or key files).
    pub async fn start_in(dir: tempfile::TempDir, config: &str) -> InProcess {
        Self::start_with_workers(dir, config, 2).await
    }

    /// As [`start_in`](Self::start_in), on a runtime of `workers` threads (one: anything that
    /// blocks a runtime thread stops every call and the admin listener with it).
    pub async fn start_with_workers(
        dir: tempfile::TempDir,
        config: &str,
        workers: usize,
    ) -> InProcess {
        init_tracing();
        let path = dir.path().join("gateway.toml");
        std::fs::write(&path, config).expect("writing the config");
        let admin_token = admin_token(dir.path(), config);
        // Every config a test serves is one the committed schema accepts too.
        super::schema::assert_matches_schema(config, "the test config");
        let config = a2a_egress::config::Config::load(&path)
            .unwrap_or_else(|e| panic!("the test config is refused: {e}"));
        let listeners = a2a_egress::server::Listeners::bind(&config.listen).expect("binding");
        let (proxy, admin) = listeners.local_addrs().expect("bound addresses");
        let endpoints = Endpoints {
            proxy,
            admin,
            public_url: a2a_egress::server::public_url(&config.listen, proxy),
            admin_token,
        };
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (done_tx, done) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name(format!("gateway {proxy}"))
            .spawn(move || {
                let result = serve(config, listeners, stopped, workers);
                let _ = done_tx.send(result);
            })
            .expect("spawning the gateway thread");
        let g = InProcess {
            endpoints,
            dir,
            stop: Some(stop),
            done: Some(done),
        };
        g.endpoints
            .wait_ready(|| "(in-process gateway; set RUST_LOG for its log)".into())
            .await;
        g
    }

    /// The config file (tests edit it to trigger a reload).
    pub fn config_path(&self) -> PathBuf {
        self.dir.path().join("gateway.toml")
    }

    /// Starts the shutdown (what SIGTERM does to `serve`) without waiting for it.
    pub fn shutdown(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }

    /// Starts the shutdown and waits for the gateway to stop; what `run` returned.
    pub async fn stop(mut self) -> Result<(), String> {
        self.shutdown();
        let done = self.done.take().expect("stopped once");
        let mut result: Option<Result<(), String>>;
        crate::assert_eventually!(
            {
                result = done.try_recv().ok();
                result.is_some()
            },
            within = STOP_DEADLINE,
            "the in-process gateway did not stop"
        );
        result.unwrap_or_else(|| Err("no result".into()))
    }
}

impl Drop for InProcess {
    fn drop(&mut self) {
        self.shutdown();
        // Blocks the dropping thread, not the gateway's: it runs on its own runtime.
        if let Some(done) = self.done.take()
            && done.recv_timeout(STOP_DEADLINE).is_err()
            && !std::thread::panicking()
        {
            panic!("the in-process gateway did not stop within {STOP_DEADLINE:?}");
        }
    }
}

/// The gateway thread: a runtime of its own, `run` until `stopped` fires (or its sender is
/// dropped), then the runtime ends, taking any task still running with it.
fn serve(
    config: a2a_egress::config::Config,
    listeners: a2a_egress::server::Listeners,
    stopped: tokio::sync::oneshot::Receiver<()>,
    workers: usize,
) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .thread_name("gateway")
        .enable_all()
        .build()
        .map_err(|e| format!("runtime: {e}"))?;
    let result = runtime.block_on(a2a_egress::server::run(config, listeners, async {
        let _ = stopped.await;
    }));
    runtime.shutdown_timeout(Duration::from_secs(1));
    result.map_err(|e| e.to_string())
}

/// Logs of in-process gateways go to the test's captured output (shown when a test fails), at
/// `RUST_LOG` (default `warn`). Installed once per test binary.
fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_test_writer()
        .try_init();
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
/// `a2a_egress_downgrades_total{integration, cause}` in a scrape.
pub fn downgrades(text: &str, integration: &str, cause: &str) -> f64 {
    metric(
        text,
        "a2a_egress_downgrades_total",
        &[("integration", integration), ("cause", cause)],
    )
}

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
