//! Config hot reload from the file (content polling) and SIGHUP-equivalent direct reloads: a good
//! file is applied by difference, a bad one is refused while the old config keeps serving.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use a2a_egress::config::Config;
use a2a_egress::control::fetch::CardFetcher;
use a2a_egress::control::metrics::ControlMetrics;
use a2a_egress::control::refresh::ControlHandle;
use a2a_egress::control::reload::spawn_reloader;
use a2a_egress::state::Store;
use axum::Router;
use axum::http::header;
use axum::routing::get;

/// An agent serving one card per path `/{name}/card.json`, counting fetches.
async fn agent(fetches: Arc<AtomicUsize>) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let card = format!(
        r#"{{"name":"Echo","description":"echo agent","version":"1.0.0",
 "supportedInterfaces":[{{"url":"http://{addr}/a2a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}}],
 "capabilities":{{}},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],
 "skills":[{{"id":"echo","name":"Echo","description":"echoes","tags":["demo"]}}]}}"#
    );
    let app = Router::new().route(
        "/{name}/card.json",
        get(move || {
            let card = card.clone();
            fetches.fetch_add(1, Ordering::SeqCst);
            async move { ([(header::CACHE_CONTROL, "max-age=3600")], card) }
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

fn text(addr: SocketAddr, names: &[&str]) -> String {
    let mut t = "[client]\nallow_plain_http = true\n[refresh]\nmin = \"1h\"\n".to_string();
    for n in names {
        t.push_str(&format!(
            "[[integrations]]\nname = \"{n}\"\ncard = \"http://{addr}/{n}/card.json\"\norigins = [\"http://{addr}\"]\n\
             skills = [\"echo\"]\ndata_classes = [\"internal\"]\n"
        ));
    }
    t
}

async fn eventually(what: &str, f: impl Fn() -> bool) {
    crate::assert_eventually!(f(), every = Duration::from_millis(10), "{what}");
}

#[tokio::test]
async fn file_changes_reload_by_difference_and_bad_files_are_refused() {
    let fetches = Arc::new(AtomicUsize::new(0));
    let addr = agent(fetches.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gateway.toml");
    std::fs::write(&path, text(addr, &["a", "b"])).unwrap();
    let metrics = ControlMetrics::register(&prometheus::Registry::new()).unwrap();
    let h = ControlHandle::start(
        Config::load(&path).unwrap(),
        Arc::new(Store::default()),
        metrics,
        Arc::new(CardFetcher::new()),
        None,
    );
    let reloader = spawn_reloader(h.clone(), path.clone(), Duration::from_millis(50));
    eventually("both usable", || {
        let s = h.store().load();
        ["a", "b"]
            .iter()
            .all(|n| s.get(n).is_some_and(|s| s.usable().is_some()))
    })
    .await;
    assert_eq!(fetches.load(Ordering::SeqCst), 2);
    let a_before = h
        .store()
        .load()
        .get("a")
        .unwrap()
        .profile()
        .cloned()
        .unwrap();

    // Saved the way editors do: a temp file renamed over the config.
    let tmp = dir.path().join(".gateway.toml.swp");
    std::fs::write(&tmp, text(addr, &["a", "c"])).unwrap();
    std::fs::rename(&tmp, &path).unwrap();
    eventually("c usable and b gone", || {
        let s = h.store().load();
        s.get("b").is_none() && s.get("c").is_some_and(|s| s.usable().is_some())
    })
    .await;
    assert_eq!(
        fetches.load(Ordering::SeqCst),
        3,
        "only the new integration was fetched"
    );
    assert!(Arc::ptr_eq(
        &a_before,
        h.store().load().get("a").unwrap().profile().unwrap()
    ));
    assert_eq!(h.metrics().reloads.with_label_values(&["ok"]).get(), 1);

    // A bad file (unknown key) is refused; the running config and profiles stay.
    std::fs::write(&path, format!("{}bogus = 1\n", text(addr, &["z"]))).unwrap();
    eventually("the refusal", || {
        h.metrics().reloads.with_label_values(&["refused"]).get() == 1
    })
    .await;
    let r = h.readiness();
    assert!(
        r.config_refused
            .as_deref()
            .is_some_and(|m| m.contains("bogus")),
        "{r:?}"
    );
    assert!(r.ready);
    assert_eq!(h.metrics().config_refused.get(), 1, "refused while on disk");
    let s = h.store().load();
    assert!(s.get("a").is_some() && s.get("c").is_some() && s.get("z").is_none());
    assert_eq!(h.config().integrations.len(), 2);

    // An invalid value is refused too; then a good file clears the refusal.
    std::fs::write(
        &path,
        text(addr, &["a"]).replace("min = \"1h\"", "min = \"soon\""),
    )
    .unwrap();
    eventually("the second refusal", || {
        h.metrics().reloads.with_label_values(&["refused"]).get() == 2
    })
    .await;
    assert!(
        h.readiness()
            .config_refused
            .unwrap()
            .contains("refresh.min")
    );
    std::fs::write(&path, text(addr, &["a"])).unwrap();
    eventually("the good file", || h.readiness().config_refused.is_none()).await;
    assert_eq!(
        h.metrics().config_refused.get(),
        0,
        "applied: no longer refused"
    );
    assert!(h.store().load().get("c").is_none());
    reloader.abort();
    h.shutdown();
}

#[tokio::test]
async fn reload_from_applies_at_once() {
    let fetches = Arc::new(AtomicUsize::new(0));
    let addr = agent(fetches.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gateway.toml");
    std::fs::write(&path, text(addr, &["a"])).unwrap();
    let metrics = ControlMetrics::register(&prometheus::Registry::new()).unwrap();
    let h = ControlHandle::start(
        Config::load(Path::new(&path)).unwrap(),
        Arc::new(Store::default()),
        metrics,
        Arc::new(CardFetcher::new()),
        None,
    );
    std::fs::write(&path, text(addr, &["a", "b"])).unwrap();
    // What SIGHUP triggers.
    let report = h.reload_from(&path).unwrap();
    assert_eq!(report.added, vec!["b"]);
    assert_eq!(report.unchanged, vec!["a"]);
    std::fs::write(&path, "[[integrations]]\nname = 1\n").unwrap();
    assert!(h.reload_from(&path).is_err());
    assert!(
        h.store().load().get("b").is_some(),
        "the old config keeps serving"
    );
    h.shutdown();
}

#[test]
fn the_sample_config_documents_the_refresh_defaults() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/gateway.toml");
    let c = Config::load(&path).expect("the sample config is valid");
    assert_eq!(
        c.refresh,
        a2a_egress::config::RefreshSettings::default(),
        "the sample's [refresh] values are the built-in defaults"
    );
    assert_eq!(c.state_dir, None);
}
