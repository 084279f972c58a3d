//! The agent's HTTP server (I/O): the axum app, the listener, the public card with its cache
//! validators, registry reload on SIGHUP or file change, and graceful shutdown.
//!
//! Routing below the well-known card is done per request from the live snapshot, because a reload
//! may change interface paths. A failed reload keeps the running registry.

use std::future::{Future, IntoFuture};
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use sha2::{Digest, Sha256};
use tokio::net::TcpListener;

use super::errors::A2aError;
use super::project::ProjectError;
use super::registry::{self, RegistryError};
use super::service::{App, Snapshot};
use super::{jsonrpc, rest};
use a2a_egress::profile::Binding;
use a2a_egress::types::etag::if_none_match;
use a2a_egress::types::file::read_capped;

/// Path of the public card.
pub const CARD_PATH: &str = "/.well-known/agent-card.json";
/// How long open streams may run on after a shutdown signal.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Errors starting the agent.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The registry is unreadable or invalid.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The card could not be generated.
    #[error(transparent)]
    Project(#[from] ProjectError),
    /// Binding or serving failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// Options of `a2a-agent`.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The registry file.
    pub registry: PathBuf,
    /// Address to bind; port 0 picks a free port.
    pub listen: SocketAddr,
    /// How often the registry file is checked for changes; `None` = only on SIGHUP.
    pub poll_interval: Option<Duration>,
    /// Shut down when stdin reaches end-of-file, so a test harness that dies without killing
    /// the agent (SIGKILL) does not leave it running.
    pub exit_on_stdin_eof: bool,
}

/// The base URL of the interfaces: the registry's `public_url`, else the bound address.
pub fn base_url(reg: &registry::Registry, bound: SocketAddr) -> String {
    reg.agent
        .public_url
        .clone()
        .unwrap_or_else(|| format!("http://{bound}"))
}

/// Loads the registry, binds, prints the `listening` line, and serves until SIGINT/SIGTERM.
pub async fn serve(opts: ServeOptions) -> Result<(), ServerError> {
    // Installed before the listening line: the default actions of SIGHUP and SIGTERM terminate
    // the process, and whoever read the line may signal at once.
    let hup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok();
    let term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    let reg = registry::load(&opts.registry)?;
    for w in &reg.warnings {
        tracing::warn!(at = %w.at, "{}", w.message);
    }
    let listener = TcpListener::bind(opts.listen)
        .await
        .map_err(|source| ServerError::Io {
            context: format!("cannot bind {}", opts.listen),
            source,
        })?;
    let bound = listener.local_addr().map_err(|source| ServerError::Io {
        context: "cannot read the bound address".into(),
        source,
    })?;
    let base = base_url(&reg, bound);
    let app = Arc::new(App::new(Snapshot::new(reg, base)?));
    // The first stdout line tells scripts and tests where we are; flushed before serving.
    let line = serde_json::json!({
        "event": "listening",
        "addr": bound.to_string(),
        "card_url": format!("http://{bound}{CARD_PATH}"),
    });
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }
    tracing::info!(addr = %bound, version = %app.live.load().public.card.version, "agent listening");
    tokio::spawn(watch_registry(
        app.clone(),
        opts.registry.clone(),
        bound,
        opts.poll_interval,
        hup,
    ));
    let stdin_eof = opts.exit_on_stdin_eof;
    let shutdown = async move {
        tokio::select! {
            _ = shutdown_signal(term) => {}
            _ = stdin_closed(), if stdin_eof => {}
        }
    };
    run(listener, app, shutdown)
        .await
        .map_err(|source| ServerError::Io {
            context: "server failed".into(),
            source,
        })
}

/// Serves `app` on `listener` until `shutdown` resolves, then lets open requests finish for up to
/// five seconds.
pub async fn run(
    listener: TcpListener,
    app: Arc<App>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let (tx, mut rx) = tokio::sync::watch::channel(false);
    let server = axum::serve(listener, router(app)).with_graceful_shutdown(async move {
        let _ = rx.wait_for(|stop| *stop).await;
    });
    let mut handle = tokio::spawn(server.into_future());
    tokio::select! {
        r = &mut handle => return r.map_err(std::io::Error::other)?,
        _ = shutdown => {}
    }
    let _ = tx.send(true);
    match tokio::time::timeout(SHUTDOWN_GRACE, handle).await {
        Ok(r) => r.map_err(std::io::Error::other)?,
        Err(_) => {
            tracing::warn!("open streams still running after the grace period; exiting");
            Ok(())
        }
    }
}

async fn shutdown_signal(term: Option<tokio::signal::unix::Signal>) {
    let term = async {
        match term {
            Some(mut s) => {
                s.recv().await;
            }
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term => {}
    }
}

/// Resolves when stdin reaches end-of-file (or fails). Reads on a detached OS thread: a tokio
/// blocking read would keep the runtime from shutting down while stdin stays open.
async fn stdin_closed() {
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        use std::io::Read;
        let mut stdin = std::io::stdin();
        let mut buf = [0u8; 256];
        while let Ok(n) = stdin.read(&mut buf) {
            if n == 0 {
                break;
            }
        }
        let _ = tx.send(());
    });
    let _ = rx.await;
}

/// The axum application.
pub fn router(app: Arc<App>) -> Router {
    Router::new()
        .route(CARD_PATH, get(agent_card))
        .fallback(dispatch)
        .with_state(app)
}

async fn agent_card(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    let snap = app.live.load();
    let card = &snap.public;
    let cache = format!("public, max-age={}", snap.registry.agent.card_max_age_secs);
    let mut r = if if_none_match(&headers, &card.etag) {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            card.body.clone(),
        )
            .into_response()
    };
    // One line per card request, so gateway tests can see revalidation (304s) from the agent's side.
    tracing::info!(status = r.status().as_u16(), etag = %card.etag, "agent card served");
    let h = r.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&card.etag) {
        h.insert(header::ETAG, v);
    }
    if let Ok(v) = HeaderValue::from_str(&cache) {
        h.insert(header::CACHE_CONTROL, v);
    }
    r
}

async fn dispatch(State(app): State<Arc<App>>, req: Request) -> Response {
    let snap = app.live.load_full();
    let path = req.uri().path().to_string();
    let query = req.uri().query().map(str::to_string);
    let found = snap.registry.agent.interfaces.iter().find(|i| {
        path == i.path
            || (i.binding == Binding::HttpJson && path.starts_with(&format!("{}/", i.path)))
    });
    let Some(iface) = found.cloned() else {
        return rest::error(
            A2aError::MethodNotFound(format!("no route for {path}")),
            &[],
        );
    };
    let latency = snap.registry.misbehave.latency_ms;
    if latency > 0 {
        tokio::time::sleep(Duration::from_millis(latency)).await;
    }
    let (parts, body) = req.into_parts();
    let limit = snap.registry.agent.max_request_bytes;
    let body = match axum::body::to_bytes(Body::new(body), limit).await {
        Ok(b) => b,
        Err(_) => {
            let e = A2aError::InvalidRequest(format!("request body exceeds {limit} bytes"));
            let mut r = rest::error(e, &[]);
            *r.status_mut() = StatusCode::PAYLOAD_TOO_LARGE;
            return r;
        }
    };
    match iface.binding {
        Binding::JsonRpc if parts.method == Method::POST => {
            jsonrpc::handle(app.clone(), snap.clone(), iface, parts.headers, body).await
        }
        Binding::JsonRpc => {
            let mut r = rest::error(
                A2aError::MethodNotFound(format!("{} {path}: JSON-RPC takes POST", parts.method)),
                &[],
            );
            *r.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
            r.headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("POST"));
            r
        }
        Binding::HttpJson => {
            let req = rest::RestRequest {
                method: parts.method,
                rest: path.strip_prefix(iface.path.as_str()).unwrap_or_default(),
                query: query.as_deref(),
                headers: parts.headers,
                body,
            };
            rest::handle(app.clone(), snap.clone(), iface.clone(), req).await
        }
        // The registry refuses a gRPC interface (`registry::validate`), so none is served.
        Binding::Grpc => rest::error(
            A2aError::UnsupportedOperation("this agent does not serve gRPC".into()),
            &[],
        ),
    }
}

/// Content fingerprint of the registry file (`None` while it cannot be read, e.g. mid-rename, or
/// is not a regular file or over [`registry::MAX_REGISTRY_BYTES`]).
fn fingerprint(path: &Path) -> Option<[u8; 32]> {
    read_capped(path, registry::MAX_REGISTRY_BYTES, "registry")
        .ok()
        .map(|b| Sha256::digest(b).into())
}

/// [`fingerprint`] on a blocking thread: the poll runs on the runtime that serves requests, and a
/// slow disk must not stall them.
async fn fingerprint_off_runtime(path: &Path) -> Option<[u8; 32]> {
    let path = path.to_path_buf();
    tokio::task::spawn_blocking(move || fingerprint(&path))
        .await
        .ok()
        .flatten()
}

/// Reloads on SIGHUP, or when the file's content changes (polled: editors replace files by
/// rename, which a content check sees without watching directories, and without a new crate).
async fn watch_registry(
    app: Arc<App>,
    path: PathBuf,
    bound: SocketAddr,
    every: Option<Duration>,
    mut hup: Option<tokio::signal::unix::Signal>,
) {
    let mut last = fingerprint_off_runtime(&path).await;
    // With polling off the tick arm below is disabled; the period is then irrelevant.
    let mut tick = tokio::time::interval(every.unwrap_or(Duration::from_secs(3600)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    tick.tick().await;
    loop {
        let why = tokio::select! {
            _ = async {
                match hup.as_mut() {
                    Some(h) => { h.recv().await; }
                    None => std::future::pending::<()>().await,
                }
            } => "SIGHUP",
            _ = tick.tick(), if every.is_some() => {
                let now = fingerprint_off_runtime(&path).await;
                if now.is_none() || now == last {
                    continue;
                }
                "file change"
            }
        };
        last = fingerprint_off_runtime(&path).await;
        // The reload reads the registry and its token files: off the runtime too.
        let (a, p) = (app.clone(), path.clone());
        match tokio::task::spawn_blocking(move || reload(&a, &p, bound)).await {
            Ok(Ok(version)) => tracing::info!(trigger = why, %version, "registry reloaded"),
            Ok(Err(e)) => tracing::warn!(
                trigger = why,
                error = %e,
                "registry reload failed; keeping the running registry"
            ),
            Err(e) => tracing::warn!(trigger = why, error = %e, "registry reload task failed"),
        }
    }
}

/// Loads, validates and swaps in a new snapshot; on error the old one stays. Returns the new
/// public card version.
pub fn reload(app: &App, path: &Path, bound: SocketAddr) -> Result<String, ServerError> {
    let reg = registry::load(path)?;
    for w in &reg.warnings {
        tracing::warn!(at = %w.at, "{}", w.message);
    }
    let base = base_url(&reg, bound);
    let snap = Snapshot::new(reg, base)?;
    let version = snap.public.card.version.clone();
    app.live.store(Arc::new(snap));
    Ok(version)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The poll's read is bounded: a registry path that became a FIFO (nobody writing) or a huge
    /// file gives no fingerprint instead of blocking the poll or reading it all.
    #[test]
    fn fingerprint_refuses_a_fifo_and_an_oversized_file() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("registry.toml");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let (tx, rx) = std::sync::mpsc::channel();
        let p = fifo.clone();
        std::thread::spawn(move || tx.send(fingerprint(&p)).unwrap());
        // A bound on the wait, not a timing assertion: the old read blocks forever.
        let got = rx.recv_timeout(Duration::from_secs(30));
        assert_eq!(got, Ok(None), "the read of a FIFO did not return");
        let big = dir.path().join("big.toml");
        std::fs::write(&big, vec![b'#'; registry::MAX_REGISTRY_BYTES as usize + 1]).unwrap();
        assert_eq!(fingerprint(&big), None);
        std::fs::write(&big, b"# small\n").unwrap();
        assert!(fingerprint(&big).is_some());
    }

    /// The agent answers conditional card fetches with the gateway's one matcher.
    #[test]
    fn if_none_match_forms() {
        let not_modified = if_none_match;
        let etag = "\"sha256:ab\"";
        let mut h = HeaderMap::new();
        assert!(!not_modified(&h, etag));
        h.insert(
            header::IF_NONE_MATCH,
            HeaderValue::from_static("\"x\", W/\"sha256:ab\""),
        );
        assert!(not_modified(&h, etag));
        h.insert(header::IF_NONE_MATCH, HeaderValue::from_static("*"));
        assert!(not_modified(&h, etag));
        h.insert(
            header::IF_NONE_MATCH,
            HeaderValue::from_static("\"sha256:ac\""),
        );
        assert!(!not_modified(&h, etag));
    }
}
