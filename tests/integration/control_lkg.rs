//! Last-known-good on disk through the real fetcher and real sockets: a restart while the agent is
//! down serves the persisted card at once (marked unrevalidated), a truncated or garbage state file
//! is ignored, and the agent coming back revalidates with a 304. The agent keeps its address all
//! along (it fails every request while "down"), so no other process can take the port meanwhile.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use a2a_egress::config::Config;
use a2a_egress::control::refresh::ControlHandle;
use a2a_egress::state::Status;
use a2a_egress::testkit::{CardJson, ConfigToml, IntegrationToml};
use axum::Router;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;

use crate::common::control::start;

#[derive(Default)]
struct Seen {
    full: AtomicUsize,
    not_modified: AtomicUsize,
    /// The agent is down: every request fails with 503.
    down: AtomicBool,
}

fn card(port: u16) -> String {
    CardJson::new(&format!("http://127.0.0.1:{port}/a2a"))
        .streaming(true)
        .text()
}

/// Serves the card with an ETag on `listener` (503 while `seen.down`) until the task is aborted.
fn serve(listener: tokio::net::TcpListener, seen: Arc<Seen>) -> tokio::task::JoinHandle<()> {
    let port = listener.local_addr().unwrap().port();
    let app = Router::new().route(
        "/.well-known/agent-card.json",
        get(move |h: HeaderMap| {
            let seen = seen.clone();
            async move {
                if seen.down.load(Ordering::SeqCst) {
                    return StatusCode::SERVICE_UNAVAILABLE.into_response();
                }
                if h.get(header::IF_NONE_MATCH).is_some_and(|v| v == "W/\"1\"") {
                    seen.not_modified.fetch_add(1, Ordering::SeqCst);
                    return (StatusCode::NOT_MODIFIED, [(header::ETAG, "W/\"1\"")]).into_response();
                }
                seen.full.fetch_add(1, Ordering::SeqCst);
                (
                    [
                        (header::ETAG, "W/\"1\""),
                        (header::CACHE_CONTROL, "max-age=3600"),
                    ],
                    card(port),
                )
                    .into_response()
            }
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() })
}

fn config(addr: SocketAddr, state: &Path) -> Config {
    ConfigToml::bare()
        .head(
            "[client]\nallow_plain_http = true\n\
             [refresh]\nmin = \"1h\"\nbackoff_initial = \"1h\"\nbackoff_max = \"1h\"",
        )
        .head(&format!("[state]\ndir = {state:?}"))
        .integration(
            IntegrationToml::new(
                "echo",
                &format!("http://{addr}/.well-known/agent-card.json"),
            )
            .data_classes(&["internal"]),
        )
        .parse(Path::new("/nonexistent/gateway.toml"))
        .expect("test config")
}

/// Waits (real time, bounded) until `f` holds for the handle.
async fn until(h: &ControlHandle, what: &str, f: impl Fn(&ControlHandle) -> bool) {
    crate::assert_eventually!(
        f(h),
        every = Duration::from_millis(10),
        "{what}: {:?}",
        h.readiness()
    );
}

fn degraded(h: &ControlHandle) -> bool {
    h.store()
        .load()
        .get("echo")
        .is_some_and(|s| s.freshness.degraded.is_some())
}

#[tokio::test]
async fn restart_with_the_agent_down_serves_last_known_good() {
    let dir = tempfile::tempdir().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Seen::default());
    let _server = serve(listener, seen.clone());

    let first = start(config(addr, dir.path()));
    until(&first, "a usable profile", |h| {
        h.store()
            .load()
            .get("echo")
            .is_some_and(|s| s.usable().is_some())
    })
    .await;
    first.shutdown();
    let file = dir.path().join("echo.card.json");
    assert!(file.exists(), "the good card was persisted");
    let pristine = std::fs::read(&file).unwrap();

    // The agent goes down; the gateway restarts.
    seen.down.store(true, Ordering::SeqCst);
    let second = start(config(addr, dir.path()));
    until(&second, "the failed revalidation", degraded).await;
    let snap = second.store().load();
    let s = snap.get("echo").unwrap();
    assert!(
        s.usable().is_some(),
        "traffic keeps flowing from the disk copy: {:?}",
        s.status
    );
    assert!(s.freshness.unrevalidated, "marked as not yet revalidated");
    let r = second.readiness();
    assert!(
        r.ready && r.unrevalidated == vec!["echo".to_string()],
        "{r:?}"
    );
    second.shutdown();

    // A truncated file is not trusted: no profile, and a definite verdict once the fetch fails.
    std::fs::write(&file, &pristine[..pristine.len() / 3]).unwrap();
    let third = start(config(addr, dir.path()));
    until(&third, "a verdict", |h| h.store().load().ready()).await;
    assert!(matches!(
        third.store().load().get("echo").unwrap().status,
        Status::Unusable { .. }
    ));
    third.shutdown();

    std::fs::write(&file, b"\x00\x01garbage{{{").unwrap();
    let fourth = start(config(addr, dir.path()));
    until(&fourth, "a verdict", |h| h.store().load().ready()).await;
    assert!(matches!(
        fourth.store().load().get("echo").unwrap().status,
        Status::Unusable { .. }
    ));
    fourth.shutdown();

    // The agent comes back on the same address: the disk copy is revalidated with a 304.
    std::fs::write(&file, &pristine).unwrap();
    seen.down.store(false, Ordering::SeqCst);
    let full_before = seen.full.load(Ordering::SeqCst);
    let fifth = start(config(addr, dir.path()));
    until(&fifth, "revalidation", |h| {
        h.store()
            .load()
            .get("echo")
            .is_some_and(|s| !s.freshness.unrevalidated && s.usable().is_some())
    })
    .await;
    assert_eq!(
        seen.not_modified.load(Ordering::SeqCst),
        1,
        "revalidated with If-None-Match"
    );
    assert_eq!(
        seen.full.load(Ordering::SeqCst),
        full_before,
        "no full fetch was needed"
    );
    fifth.shutdown();
}
