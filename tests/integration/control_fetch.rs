//! Safe card fetch against scripted servers on loopback: the faults a real agent will not produce
//! (oversized, stalled and redirecting cards, TLS with a test-time CA) and the SSRF refusals.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use a2a_egress::control::fetch::{
    AddrClass, CardFetcher, FetchError, FetchOutcome, FetchPolicy, Validators,
};
use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

const CARD: &str = r#"{"name":"scripted","version":"1"}"#;

#[derive(Default)]
struct Seen {
    hits: AtomicUsize,
    not_modified: AtomicUsize,
    with_version: AtomicUsize,
    with_accept_json: AtomicUsize,
}

fn scripted(seen: Arc<Seen>, port_other: u16) -> Router {
    Router::new()
        .route(
            "/card",
            get(|State(s): State<Arc<Seen>>, h: HeaderMap| async move {
                s.hits.fetch_add(1, Ordering::SeqCst);
                if h.get("a2a-version").is_some_and(|v| v == "1.0") {
                    s.with_version.fetch_add(1, Ordering::SeqCst);
                }
                if h.get(header::ACCEPT)
                    .is_some_and(|v| v == "application/json")
                {
                    s.with_accept_json.fetch_add(1, Ordering::SeqCst);
                }
                if h.get(header::IF_NONE_MATCH)
                    .is_some_and(|v| v == "W/\"v1\"")
                {
                    s.not_modified.fetch_add(1, Ordering::SeqCst);
                    return (StatusCode::NOT_MODIFIED, [(header::ETAG, "W/\"v1\"")])
                        .into_response();
                }
                (
                    [
                        (header::ETAG, "W/\"v1\""),
                        (header::CACHE_CONTROL, "public, max-age=60"),
                        (header::LAST_MODIFIED, "Mon, 30 Nov 2026 10:00:00 GMT"),
                        (header::CONTENT_TYPE, "application/json"),
                    ],
                    CARD,
                )
                    .into_response()
            }),
        )
        .route(
            "/endless",
            get(|State(s): State<Arc<Seen>>| async move {
                s.hits.fetch_add(1, Ordering::SeqCst);
                // No Content-Length and no end: only a cap enforced while streaming stops this.
                let chunk = bytes::Bytes::from(vec![b' '; 4096]);
                let stream =
                    futures::stream::repeat_with(move || Ok::<_, std::io::Error>(chunk.clone()));
                Response::new(Body::from_stream(stream))
            }),
        )
        .route(
            "/declared-large",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "application/json")],
                    vec![b' '; 10_000],
                )
            }),
        )
        .route(
            "/stall",
            get(|| async {
                // Headers and a first chunk, then nothing, forever.
                let first = futures::stream::once(async {
                    Ok::<_, std::io::Error>(bytes::Bytes::from_static(b"{"))
                });
                let stream = futures::StreamExt::chain(first, futures::stream::pending());
                Response::new(Body::from_stream(stream))
            }),
        )
        .route(
            "/same",
            get(|| async { (StatusCode::FOUND, [(header::LOCATION, "/card")]) }),
        )
        .route(
            "/other",
            get(move || async move {
                let to = format!("http://127.0.0.2:{port_other}/card");
                (StatusCode::FOUND, [(header::LOCATION, to)])
            }),
        )
        .route(
            "/metadata",
            get(|| async {
                (
                    StatusCode::TEMPORARY_REDIRECT,
                    [(header::LOCATION, "http://169.254.169.254/latest/meta-data/")],
                )
            }),
        )
        .route(
            "/loop",
            get(|| async { (StatusCode::FOUND, [(header::LOCATION, "/loop")]) }),
        )
        .route(
            "/broken",
            get(|| async { StatusCode::INTERNAL_SERVER_ERROR }),
        )
        .with_state(seen)
}

/// Serves the scripted router on 127.0.0.1:0; the task ends with the test's runtime.
async fn serve(seen: Arc<Seen>) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, scripted(seen, addr.port()))
            .await
            .unwrap()
    });
    addr
}

fn policy(origins: &[String]) -> FetchPolicy {
    let mut p = FetchPolicy::from_origin_strs(origins, 1024, true).unwrap();
    p.total_timeout = Duration::from_secs(2);
    p
}

#[tokio::test]
async fn fetches_with_version_header_then_revalidates_with_304() {
    let seen = Arc::new(Seen::default());
    let addr = serve(seen.clone()).await;
    let f = CardFetcher::new();
    let p = policy(&[format!("http://{addr}")]);
    let url = format!("http://{addr}/card");
    let FetchOutcome::Fetched {
        bytes,
        validators,
        max_age,
        origin,
        ..
    } = f.fetch(&url, &p, None).await.unwrap()
    else {
        panic!("expected a body")
    };
    assert_eq!(&bytes[..], CARD.as_bytes());
    assert_eq!(validators.etag.as_deref(), Some("W/\"v1\""));
    assert!(validators.last_modified.is_some());
    assert_eq!(max_age, Some(Duration::from_secs(60)));
    assert_eq!(origin, format!("http://{addr}"));
    let again = f.fetch(&url, &p, Some(&validators)).await.unwrap();
    assert!(
        matches!(again, FetchOutcome::NotModified { ref validators, .. } if validators.etag.as_deref() == Some("W/\"v1\"")),
        "{again:?}"
    );
    assert_eq!(
        seen.not_modified.load(Ordering::SeqCst),
        1,
        "the server answered one 304"
    );
    assert_eq!(
        seen.with_version.load(Ordering::SeqCst),
        2,
        "A2A-Version: 1.0 on every card GET"
    );
    assert_eq!(seen.with_accept_json.load(Ordering::SeqCst), 2);
    // Stale validators: a full body again.
    let stale = Validators {
        etag: Some("W/\"v0\"".into()),
        last_modified: None,
    };
    assert!(matches!(
        f.fetch(&url, &p, Some(&stale)).await.unwrap(),
        FetchOutcome::Fetched { .. }
    ));
}

#[tokio::test]
async fn same_origin_redirect_is_followed_and_others_refused() {
    let seen = Arc::new(Seen::default());
    let addr = serve(seen.clone()).await;
    let f = CardFetcher::new();
    let p = policy(&[format!("http://{addr}")]);
    let ok = f
        .fetch(&format!("http://{addr}/same"), &p, None)
        .await
        .unwrap();
    assert!(
        matches!(ok, FetchOutcome::Fetched { ref url, .. } if url.ends_with("/card")),
        "{ok:?}"
    );

    let e = f
        .fetch(&format!("http://{addr}/other"), &p, None)
        .await
        .unwrap_err();
    assert!(matches!(e, FetchError::RedirectOffOrigin { .. }), "{e}");
    // Even when the other origin is approved too: a redirect never leaves the card's origin.
    let both = policy(&[
        format!("http://{addr}"),
        format!("http://127.0.0.2:{}", addr.port()),
    ]);
    let e = f
        .fetch(&format!("http://{addr}/other"), &both, None)
        .await
        .unwrap_err();
    assert!(matches!(e, FetchError::RedirectOffOrigin { .. }), "{e}");

    let e = f
        .fetch(&format!("http://{addr}/metadata"), &p, None)
        .await
        .unwrap_err();
    assert!(
        matches!(e, FetchError::RedirectOffOrigin { ref to, .. } if to.contains("169.254.169.254")),
        "{e}"
    );
    assert!(e.to_string().contains("leaves the origin"), "{e}");

    let e = f
        .fetch(&format!("http://{addr}/loop"), &p, None)
        .await
        .unwrap_err();
    assert_eq!(e, FetchError::TooManyRedirects { limit: 3 });

    let e = f
        .fetch(&format!("http://{addr}/broken"), &p, None)
        .await
        .unwrap_err();
    assert!(matches!(e, FetchError::Status { status: 500, .. }), "{e}");
}

#[tokio::test]
async fn oversized_cards_are_cut_off_while_streaming() {
    let seen = Arc::new(Seen::default());
    let addr = serve(seen.clone()).await;
    let f = CardFetcher::new();
    let p = policy(&[format!("http://{addr}")]);
    // An endless body: if the cap were applied after buffering, this would never return.
    let e = f
        .fetch(&format!("http://{addr}/endless"), &p, None)
        .await
        .unwrap_err();
    assert_eq!(e, FetchError::TooLarge { limit: 1024 });
    let e = f
        .fetch(&format!("http://{addr}/declared-large"), &p, None)
        .await
        .unwrap_err();
    assert_eq!(e, FetchError::TooLarge { limit: 1024 });
}

#[tokio::test]
async fn a_stalled_card_times_out() {
    let seen = Arc::new(Seen::default());
    let addr = serve(seen).await;
    let f = CardFetcher::new();
    let mut p = policy(&[format!("http://{addr}")]);
    p.total_timeout = Duration::from_millis(300);
    let e = f
        .fetch(&format!("http://{addr}/stall"), &p, None)
        .await
        .unwrap_err();
    assert!(matches!(e, FetchError::Timeout { .. }), "{e}");
}

#[tokio::test]
async fn a_name_resolving_to_loopback_is_refused_unless_the_literal_is_approved() {
    let seen = Arc::new(Seen::default());
    let addr = serve(seen.clone()).await;
    let f = CardFetcher::new();
    let p = policy(&[format!("http://localhost:{}", addr.port())]);
    let e = f
        .fetch(&format!("http://localhost:{}/card", addr.port()), &p, None)
        .await
        .unwrap_err();
    assert!(
        matches!(e, FetchError::AddressRefused { class: AddrClass::Loopback, ref host, .. } if host == "localhost"),
        "{e}"
    );
    assert_eq!(
        seen.hits.load(Ordering::SeqCst),
        0,
        "nothing may reach the server"
    );
    // The literal loopback origin is allowed, for that origin only.
    let p = policy(&[format!("http://{addr}")]);
    assert!(
        f.fetch(&format!("http://{addr}/card"), &p, None)
            .await
            .is_ok()
    );
    let e = f
        .fetch(&format!("http://127.0.0.2:{}/card", addr.port()), &p, None)
        .await
        .unwrap_err();
    assert!(matches!(e, FetchError::OriginNotApproved { .. }), "{e}");
}

/// An axum listener that terminates TLS with a certificate made at test time.
struct TlsListener {
    tcp: tokio::net::TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
}

impl axum::serve::Listener for TlsListener {
    type Io = tokio_rustls::server::TlsStream<tokio::net::TcpStream>;
    type Addr = SocketAddr;
    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let Ok((tcp, peer)) = self.tcp.accept().await else {
                continue;
            };
            // A client that rejects our certificate fails the handshake: keep accepting.
            if let Ok(tls) = self.acceptor.accept(tcp).await {
                return (tls, peer);
            }
        }
    }
    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.tcp.local_addr()
    }
}

#[tokio::test]
async fn tls_with_the_integrations_ca_file() {
    a2a_egress::control::fetch::install_crypto_provider();
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca = rcgen::CertifiedIssuer::self_signed(ca_params, ca_key).unwrap();
    let leaf_key = rcgen::KeyPair::generate().unwrap();
    let leaf = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()])
        .unwrap()
        .signed_by(&leaf_key, &ca)
        .unwrap();
    let server_config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(
            vec![leaf.der().clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(leaf_key.serialize_der().into()),
        )
        .unwrap();
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = tcp.local_addr().unwrap();
    let listener = TlsListener {
        tcp,
        acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(server_config)),
    };
    let seen = Arc::new(Seen::default());
    tokio::spawn(async move { axum::serve(listener, scripted(seen, 1)).await.unwrap() });

    let dir = tempfile::tempdir().unwrap();
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, ca.pem()).unwrap();
    let f = CardFetcher::new();
    let url = format!("https://{addr}/card");

    let mut p = FetchPolicy::from_origin_strs(&[format!("https://{addr}")], 1024, false).unwrap();
    let e = f.fetch(&url, &p, None).await.unwrap_err();
    assert!(
        matches!(e, FetchError::Transport { .. }),
        "without the CA the certificate is unknown: {e}"
    );

    p.ca_file = Some(ca_file);
    let got = f.fetch(&url, &p, None).await.unwrap();
    assert!(
        matches!(got, FetchOutcome::Fetched { ref bytes, .. } if &bytes[..] == CARD.as_bytes()),
        "{got:?}"
    );

    p.ca_file = Some(dir.path().join("missing.pem"));
    let e = f.fetch(&url, &p, None).await.unwrap_err();
    assert!(matches!(e, FetchError::CaFile { .. }), "{e}");
}
