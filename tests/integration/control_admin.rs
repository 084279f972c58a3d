//! The control plane end to end with the real fetcher over loopback sockets: the admin refresh route,
//! a card whose interface points at an address the integration may not reach, and the refresh
//! route while a panicked refresh worker waits to restart.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use a2a_egress::config::Config;
use a2a_egress::control::metrics::ControlMetrics;
use a2a_egress::control::refresh::ControlHandle;
use a2a_egress::state::{Status, Store};
use a2a_egress::testkit::{CardJson, ConfigToml, IntegrationToml};
use axum::Router;
use axum::http::header;
use axum::routing::get;

use crate::common::control::start;

/// Serves a card whose interface URL is `iface` (with `{port}` replaced by the bound port).
async fn agent(iface: &'static str) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let url = iface.replace("{port}", &addr.port().to_string());
    let card = CardJson::new(&url).text();
    let app = Router::new().route(
        "/card.json",
        get(move || {
            let card = card.clone();
            async move { ([(header::ETAG, "W/\"c\"")], card) }
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

/// The config for the agent at `addr`, approving `extra_origin` too when given.
fn config(addr: SocketAddr, extra_origin: Option<&str>) -> Config {
    let own = format!("http://{addr}");
    let origins: Vec<&str> = [Some(own.as_str()), extra_origin]
        .into_iter()
        .flatten()
        .collect();
    ConfigToml::bare()
        .head("[client]\nallow_plain_http = true\n[refresh]\nmin = \"1h\"")
        .integration(
            IntegrationToml::new("echo", &format!("{own}/card.json"))
                .origins(&origins)
                .data_classes(&["internal"]),
        )
        .parse(Path::new("gateway.toml"))
        .expect("test config")
}

async fn settle(h: &ControlHandle) {
    crate::assert_eventually!(
        h.store().load().ready(),
        every = Duration::from_millis(10),
        "no verdict: {:?}",
        h.readiness()
    );
}

#[tokio::test]
async fn admin_refresh_route_answers_with_the_outcome() {
    let addr = agent("http://127.0.0.1:{port}/a2a").await;
    let h = start(config(addr, None));
    settle(&h).await;
    assert!(h.store().load().get("echo").unwrap().usable().is_some());

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let admin = listener.local_addr().unwrap();
    let open = a2a_egress::admin::Access::open(a2a_egress::metrics::Metrics::new());
    let app = a2a_egress::admin::refresh::router(h.clone(), open.refresh);
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    a2a_egress::control::fetch::install_crypto_provider();
    let client = reqwest::Client::builder().no_proxy().build().unwrap();

    let r = client
        .post(format!("http://{admin}/v1/integrations/echo/refresh"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let body: serde_json::Value = r.json().await.unwrap();
    assert_eq!(body["integration"], "echo");
    // This scripted agent ignores If-None-Match: a full 200 with the same compiled profile.
    assert_eq!(body["result"], "unchanged", "{body}");
    assert_eq!(body["status"], "usable", "{body}");

    let r = client
        .post(format!("http://{admin}/v1/integrations/nope/refresh"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    let body: serde_json::Value = r.json().await.unwrap();
    assert_eq!(
        body["error"]["details"][0]["reason"], "UNKNOWN_INTEGRATION",
        "{body}"
    );
}

#[tokio::test]
async fn an_interface_resolving_to_loopback_is_refused_even_on_an_approved_origin() {
    // The operator approved the name `localhost`, not the loopback address it resolves to.
    let addr = agent("http://localhost:{port}/a2a").await;
    let h = start(config(
        addr,
        Some(&format!("http://localhost:{}", addr.port())),
    ));
    settle(&h).await;
    let snap = h.store().load();
    let s = snap.get("echo").unwrap();
    let Status::Unusable { reason, .. } = &s.status else {
        panic!("expected unusable, got {:?}", s.status)
    };
    assert!(
        reason.contains("interface refused") && reason.contains("loopback"),
        "{reason}"
    );
    assert!(s.upstream().is_none(), "nothing may route to it");
}

#[tokio::test]
async fn an_interface_on_an_unapproved_origin_is_refused() {
    let addr = agent("http://10.0.0.1:{port}/a2a").await;
    let h = start(config(addr, None));
    settle(&h).await;
    let snap = h.store().load();
    let Status::Unusable { reason, .. } = &snap.get("echo").unwrap().status else {
        panic!("expected unusable")
    };
    assert!(
        reason.contains("not approved") || reason.contains("approved origins"),
        "{reason}"
    );
}

/// A card source with a bug: every fetch panics.
struct Panicking;

#[async_trait::async_trait]
impl a2a_egress::control::refresh::CardSource for Panicking {
    async fn fetch(
        &self,
        _url: &str,
        _policy: &a2a_egress::control::fetch::FetchPolicy,
        _validators: Option<&a2a_egress::control::fetch::Validators>,
    ) -> Result<a2a_egress::control::fetch::FetchOutcome, a2a_egress::control::fetch::FetchError>
    {
        panic!("card source bug");
    }

    async fn extended(
        &self,
        _iface: &a2a_egress::profile::Interface,
        _tenant: Option<&str>,
        _authorization: &http::HeaderValue,
        _policy: &a2a_egress::control::fetch::FetchPolicy,
    ) -> Result<
        a2a_egress::control::extended::ExtendedOutcome,
        a2a_egress::control::extended::ExtendedError,
    > {
        panic!("card source bug");
    }
}

#[tokio::test]
async fn admin_refresh_route_answers_503_while_a_panicked_worker_restarts() {
    let text = "[client]\nallow_plain_http = true\n[refresh]\nmin = \"1h\"\nbackoff_initial = \"30s\"\n\
                backoff_max = \"1m\"\njitter = 0.0\n[[integrations]]\nname = \"echo\"\n\
                card = \"http://127.0.0.1:9/card.json\"\norigins = [\"http://127.0.0.1:9\"]\n\
                skills = [\"echo\"]\ndata_classes = [\"internal\"]\n";
    let cfg = Config::parse(text, Path::new("gateway.toml")).unwrap();
    let metrics = ControlMetrics::register(&prometheus::Registry::new());
    let h = ControlHandle::start(
        cfg,
        Arc::new(Store::default()),
        metrics,
        Arc::new(Panicking),
        None,
    );
    settle(&h).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let admin = listener.local_addr().unwrap();
    let open = a2a_egress::admin::Access::open(a2a_egress::metrics::Metrics::new());
    let app = a2a_egress::admin::refresh::router(h.clone(), open.refresh);
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    // No `CardFetcher` installs the crypto provider here (the card source is `Panicking`), and
    // reqwest panics without one: do not depend on another test having installed it first.
    a2a_egress::control::fetch::install_crypto_provider();
    let client = reqwest::Client::builder().no_proxy().build().unwrap();

    let r = client
        .post(format!("http://{admin}/v1/integrations/echo/refresh"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 503);
    let after: u64 = r
        .headers()
        .get(header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .expect("Retry-After");
    assert!((1..=30).contains(&after), "{after}");
    let body: serde_json::Value = r.json().await.unwrap();
    assert_eq!(
        body["error"]["details"][0]["reason"], "REFRESH_WORKER_RESTARTING",
        "{body}"
    );
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("refresh worker panicked: card source bug")),
        "{body}"
    );
    assert_eq!(
        h.metrics().worker_panics.with_label_values(&["echo"]).get(),
        1
    );
    h.shutdown();
}
