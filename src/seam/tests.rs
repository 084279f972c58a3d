//! One test per assumption of the upgrade checklist (the table in the module's doc), each on real
//! sockets on 127.0.0.1. Every wait is bounded ([`bounded`]) so a broken assumption fails instead
//! of hanging.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use pingora::ErrorType;
use pingora::http::{RequestHeader, ResponseHeader};
use pingora::prelude::HttpPeer;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

use super::*;

/// Bound on every wait here: far beyond what any step takes, short enough to fail a broken one.
const BOUND: Duration = Duration::from_secs(20);

async fn bounded<F: Future>(what: &str, f: F) -> F::Output {
    tokio::time::timeout(BOUND, f)
        .await
        .unwrap_or_else(|_| panic!("{what}: no result within {BOUND:?}"))
}

/// A connected pair: the caller's socket and the server's end as pingora's `Stream`.
async fn pair() -> (TcpStream, Stream) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let client = TcpStream::connect(listener.local_addr().unwrap())
        .await
        .unwrap();
    let (server, _) = listener.accept().await.unwrap();
    let server: Stream = Box::new(pingora::protocols::l4::stream::Stream::from(server));
    (client, server)
}

/// Reads from `s` until `needle` has arrived; returns all bytes read.
async fn read_until(s: &mut TcpStream, needle: &str) -> String {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&got).contains(needle) {
        let n = bounded("read", s.read(&mut buf)).await.unwrap();
        assert!(
            n > 0,
            "closed before {needle:?}: {}",
            String::from_utf8_lossy(&got)
        );
        got.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&got).into_owned()
}

/// A session whose request (`raw`) has been read.
async fn session_with(raw: &[u8]) -> (TcpStream, Session) {
    let (mut client, server) = pair().await;
    client.write_all(raw).await.unwrap();
    let mut session = Session::new_h1(server);
    assert!(bounded("request", session.read_request()).await.unwrap());
    (client, session)
}

/// Assumption 1.
#[tokio::test]
async fn an_idle_read_returns_when_the_caller_hangs_up() {
    let (mut client, mut session) = session_with(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n").await;
    {
        // While the caller waits, the idle read has nothing to say.
        let idle = caller_idle(&mut session);
        tokio::pin!(idle);
        for _ in 0..10 {
            tokio::task::yield_now().await;
            assert!(futures::poll!(&mut idle).is_pending());
        }
    }
    client.shutdown().await.unwrap();
    let e = bounded("idle read after FIN", caller_idle(&mut session))
        .await
        .expect_err("a hang-up is an error");
    assert_eq!(e.etype(), &ErrorType::ConnectionClosed, "{e}");
}

/// Assumption 2: a caller that stops reading fails the answer's body writes, instead of
/// holding them forever (without the timeout this test hits [`BOUND`]).
#[tokio::test]
async fn the_write_timeout_applies_to_body_writes() {
    let (_client, mut session) = session_with(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n").await;
    set_write_timeout(&mut session, Duration::from_millis(50));
    let mut head = ResponseHeader::build(200, None).unwrap();
    head.insert_header("Transfer-Encoding", "chunked").unwrap();
    session
        .write_response_header(Box::new(head), false)
        .await
        .unwrap();
    let chunk = Bytes::from(vec![b'x'; 64 * 1024]);
    let e = bounded("body writes to a caller that does not read", async {
        loop {
            if let Err(e) = session
                .write_response_body(Some(chunk.clone()), false)
                .await
            {
                return e;
            }
        }
    })
    .await;
    assert_eq!(e.etype(), &ErrorType::WriteTimedout, "{e}");
}

/// Assumptions 3 and 4: the connection goes to the peer's address whatever the SNI and `Host`
/// say, and a released session comes back for the same peer.
#[tokio::test]
async fn the_connector_dials_the_pinned_address_and_pools_by_peer() {
    let agent = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let pinned = agent.local_addr().unwrap();
    let peer = HttpPeer::new(pinned, false, "agent.invalid".to_owned());
    let connector = Connector::new(None);
    let (mut session, reused) = bounded("connect", connector.get_http_session(&peer))
        .await
        .unwrap();
    assert!(!reused);
    set_client_timeouts(&mut session, BOUND, Some(BOUND));
    let mut req = RequestHeader::build("GET", b"/card", None).unwrap();
    req.insert_header("Host", "agent.invalid").unwrap();
    session.write_request_header(Box::new(req)).await.unwrap();
    let (mut accepted, _) = bounded("accept", agent.accept()).await.unwrap();
    let head = read_until(&mut accepted, "\r\n\r\n").await;
    assert!(head.starts_with("GET /card HTTP/1.1"), "{head}");
    accepted
        .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        .await
        .unwrap();
    bounded("answer head", session.read_response())
        .await
        .unwrap();
    assert_eq!(session.resp_header().unwrap().status, 200);
    let body = bounded("answer body", session.read_body_bytes())
        .await
        .unwrap();
    assert_eq!(body.as_deref(), Some(&b"ok"[..]));
    assert!(session.is_body_done());
    connector
        .release_http_session(session, &peer, Some(BOUND))
        .await;
    assert!(connector.reused_http_session(&peer).await.is_some());
    let elsewhere = HttpPeer::new("127.0.0.1:9", false, "agent.invalid".to_owned());
    assert!(connector.reused_http_session(&elsewhere).await.is_none());
}

/// An agent on 127.0.0.1 that answers each request of a kept-alive connection `200 ok`.
async fn keep_alive_agent() -> std::net::SocketAddr {
    let agent = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = agent.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = agent.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                while matches!(s.read(&mut buf).await, Ok(n) if n > 0) {
                    let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
                    if s.write_all(ok).await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    addr
}

/// One request on a session of `connector` for `peer`, answered whole; the session is then
/// released to the pool.
async fn one_pooled_call(connector: &Connector, peer: &HttpPeer) {
    let (mut session, _) = bounded("connect", connector.get_http_session(peer))
        .await
        .unwrap();
    set_client_timeouts(&mut session, BOUND, Some(BOUND));
    let mut req = RequestHeader::build("GET", b"/", None).unwrap();
    req.insert_header("Host", "agent.invalid").unwrap();
    session.write_request_header(Box::new(req)).await.unwrap();
    bounded("answer head", session.read_response())
        .await
        .unwrap();
    let body = bounded("answer body", session.read_body_bytes())
        .await
        .unwrap();
    assert_eq!(body.as_deref(), Some(&b"ok"[..]));
    connector
        .release_http_session(session, peer, Some(BOUND))
        .await;
}

/// Assumption 11: the pool hands a released session only to a peer of the same trust group,
/// though the peers differ in nothing else (the CA roots, which pingora's pool key ignores, are
/// what the group stands for).
#[tokio::test]
async fn the_pool_keeps_trust_groups_apart() {
    let addr = keep_alive_agent().await;
    let in_group = |group: u64| {
        let mut peer = HttpPeer::new(addr, false, "agent.invalid".to_owned());
        set_trust_group(&mut peer, group);
        peer
    };
    let connector = Connector::new(None);
    one_pooled_call(&connector, &in_group(1)).await;
    assert!(
        connector.reused_http_session(&in_group(2)).await.is_none(),
        "a connection of trust group 1 was handed to group 2"
    );
    assert!(
        connector.reused_http_session(&in_group(1)).await.is_some(),
        "the connection is pooled for its own group"
    );
}

/// Assumption 4, second half: [`set_client_timeouts`] bound the session they are set on only.
/// A session, new or taken from the pool, starts with no read or write timeout at all (pingora
/// does not apply the peer's `options.read_timeout`/`write_timeout` to an HTTP/1 client session),
/// and a pooled one does not keep what an earlier call set: so they are set on every session.
#[tokio::test]
async fn client_timeouts_are_per_session() {
    let addr = keep_alive_agent().await;
    let mut peer = HttpPeer::new(addr, false, "agent.invalid".to_owned());
    peer.options.read_timeout = Some(Duration::from_secs(7));
    peer.options.write_timeout = Some(Duration::from_secs(8));
    let connector = Connector::new(None);
    let (mut first, _) = bounded("connect", connector.get_http_session(&peer))
        .await
        .unwrap();
    let (second, _) = bounded("connect", connector.get_http_session(&peer))
        .await
        .unwrap();
    set_client_timeouts(
        &mut first,
        Duration::from_secs(1),
        Some(Duration::from_secs(2)),
    );
    assert_eq!(
        (first.read_timeout, first.write_timeout),
        (Some(Duration::from_secs(1)), Some(Duration::from_secs(2)))
    );
    assert_eq!(
        (second.read_timeout, second.write_timeout),
        (None, None),
        "another session of the same peer: none, whatever the peer's options say"
    );
    drop(second);
    // The first session's connection, used and released, comes back without its timeouts.
    let mut req = RequestHeader::build("GET", b"/", None).unwrap();
    req.insert_header("Host", "agent.invalid").unwrap();
    first.write_request_header(Box::new(req)).await.unwrap();
    bounded("answer head", first.read_response()).await.unwrap();
    let body = bounded("answer body", first.read_body_bytes())
        .await
        .unwrap();
    assert_eq!(body.as_deref(), Some(&b"ok"[..]));
    connector
        .release_http_session(first, &peer, Some(BOUND))
        .await;
    let again = connector
        .reused_http_session(&peer)
        .await
        .expect("the released connection is pooled");
    assert_eq!(
        (again.read_timeout, again.write_timeout),
        (None, None),
        "a pooled session keeps no timeout of the call before"
    );
}

/// Says `hi` and closes.
struct Hello;

#[async_trait]
impl ServerApp for Hello {
    async fn process_new(self: &Arc<Self>, mut io: Stream, _: &ShutdownWatch) -> Option<Stream> {
        let _ = io.write_all(b"hi").await;
        let _ = io.shutdown().await;
        None
    }
}

/// Assumption 5: a connection the kernel queued on the socket before the hand-off is served,
/// which a bind of a new socket (even on the same port) would lose.
#[tokio::test]
async fn a_handed_off_socket_is_served_without_a_bind() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let mut early = TcpStream::connect(addr).await.unwrap();
    let (stop, serve) = hand_off("seam test", listener, Hello, 16 * 1024).unwrap();
    let served = tokio::spawn(serve);
    let mut got = String::new();
    bounded("hello", early.read_to_string(&mut got))
        .await
        .unwrap();
    assert_eq!(got, "hi");
    stop.send(true).unwrap();
    bounded("accept loop stops", served).await.unwrap();
}

/// Answers every request `204` and hands the connection back, as pingora's proxy does.
struct NoContent;

#[async_trait]
impl HttpServerApp for NoContent {
    async fn process_new_http(
        self: &Arc<Self>,
        mut session: ServerSession,
        _: &ShutdownWatch,
    ) -> Option<ReusedHttpStream> {
        session.read_request().await.ok()?;
        let head = ResponseHeader::build(204, None).unwrap();
        session.write_response_header(Box::new(head)).await.ok()?;
        let settings = HttpPersistentSettings::for_session(&session);
        let reusable = session.finish().await.ok()??;
        Some(ReusedHttpStream::from_reusable_stream(reusable, settings))
    }
}

/// Assumption 6: the loop `proxy::limits::Limited` runs — a session on the stream, the app, and
/// the stream (with its settings) back for the next request of the connection.
#[tokio::test]
async fn a_finished_session_gives_its_stream_back_for_the_next_request() {
    let (mut client, mut stream) = pair().await;
    let app = Arc::new(NoContent);
    let (_stop, watch) = watch::channel(false);
    let mut settings: Option<HttpPersistentSettings> = None;
    for n in 0..2 {
        client
            .write_all(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
            .await
            .unwrap();
        let mut session = ServerSession::new_http1(stream);
        match settings.take() {
            Some(s) => s.apply_to_session(&mut session),
            None => session.set_keepalive(Some(60)),
        }
        let reused = bounded("request", app.process_new_http(session, &watch)).await;
        let answer = read_until(&mut client, "\r\n\r\n").await;
        assert!(answer.starts_with("HTTP/1.1 204"), "request {n}: {answer}");
        (stream, settings) = reused
            .expect("a keep-alive connection is handed back")
            .consume();
    }
}

/// Assumption 7.
#[tokio::test]
async fn a_continue_is_written_before_the_body_is_read() {
    let raw = b"POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n";
    let (mut client, mut session) = session_with(raw).await;
    bounded("100", write_continue(&mut session)).await.unwrap();
    let got = read_until(&mut client, "\r\n\r\n").await;
    assert!(got.starts_with("HTTP/1.1 100 Continue\r\n"), "{got}");
    client.write_all(b"ok").await.unwrap();
    let body = bounded("body", session.read_request_body()).await.unwrap();
    assert_eq!(body.as_deref(), Some(&b"ok"[..]));
}

/// A CA and a TLS listener on 127.0.0.1 presenting a leaf for `agent.test` it signed; returns
/// the listener's address and the CA's certificate (DER). Each accepted connection completes
/// its handshake, if the client accepts the certificate, and is then held open.
async fn tls_agent() -> (std::net::SocketAddr, Vec<u8>) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let leaf_key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["agent.test".to_owned()])
        .unwrap()
        .signed_by(&leaf_key, &issuer)
        .unwrap();
    let chain = vec![leaf.der().clone(), ca.der().clone()];
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der()));
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(chain, key)
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                if let Ok(mut tls) = acceptor.accept(tcp).await {
                    let mut buf = [0u8; 1024];
                    while matches!(tls.read(&mut buf).await, Ok(n) if n > 0) {}
                }
            });
        }
    });
    let ca_der: CertificateDer<'static> = ca.der().clone();
    (addr, ca_der.to_vec())
}

/// Assumption 9: a peer's [`CaType`] built from [`WrappedX509`] roots is what its certificate is
/// verified against: the agent's private CA there, the handshake succeeds; without it (the
/// platform's roots), it fails.
#[tokio::test]
async fn a_peers_own_roots_are_what_its_certificate_is_checked_against() {
    let (addr, ca) = tls_agent().await;
    let peer = |roots: Option<Arc<CaType>>| {
        let mut peer = HttpPeer::new(addr, true, "agent.test".to_owned());
        peer.options.verify_cert = true;
        peer.options.verify_hostname = true;
        peer.options.ca = roots;
        peer
    };
    let roots: Arc<CaType> = Arc::from(vec![WrappedX509::new(ca, parse_x509)].into_boxed_slice());
    let connector = Connector::new(None);
    let trusted = bounded("handshake", connector.get_http_session(&peer(Some(roots)))).await;
    assert!(trusted.is_ok(), "{:?}", trusted.err());
    let untrusted = bounded("handshake", connector.get_http_session(&peer(None))).await;
    let Err(e) = untrusted else {
        panic!("the platform's roots do not know the test CA");
    };
    assert_eq!(e.etype(), &ErrorType::TLSHandshakeFailure, "{e}");
}

/// Assumption 12.
#[tokio::test]
async fn an_invalid_chunked_body_is_a_framing_error() {
    let raw =
        b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nok\r\n0\r\n\r\n";
    let (_client, mut session) = session_with(raw).await;
    let e = bounded("body", session.read_request_body())
        .await
        .expect_err("a chunk size that is not hex");
    assert!(is_invalid_body_framing(&e), "{e}");
    // Nor is it the caller leaving (assumption 13).
    assert!(!is_caller_gone(&e), "{e}");
    let refused = pingora::Error::explain(ErrorType::ConnectionClosed, "caller hung up");
    assert!(!is_invalid_body_framing(&refused));
}

/// Assumption 13: a caller that closes (or resets) its connection before its body is complete
/// fails `read_request_body` with an error [`is_caller_gone`] recognises, for a sized and for a
/// chunked body.
#[tokio::test]
async fn a_caller_that_leaves_mid_body_is_gone() {
    for raw in [
        &b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\n{\"half\""[..],
        &b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab"[..],
    ] {
        let (client, mut session) = session_with(raw).await;
        drop(client);
        let e = loop {
            match bounded("body", session.read_request_body()).await {
                Ok(Some(_)) => continue,
                Ok(None) => panic!("an incomplete body read as complete"),
                Err(e) => break e,
            }
        };
        assert!(is_caller_gone(&e), "{e}");
        assert!(!is_invalid_body_framing(&e), "{e}");
    }
    // (A framing error is not one: `an_invalid_chunked_body_is_a_framing_error`.)
    // The `100 Continue` written before the body fails as a write when the caller left.
    let gone = pingora::Error::explain(ErrorType::WriteError, "writing 100 Continue");
    assert!(is_caller_gone(&gone));
}

/// Assumption 8.
#[test]
fn the_etag_comparison_is_weak() {
    assert!(weak_validate_etag(b"\"a\"", b"\"a\""));
    assert!(weak_validate_etag(b"W/\"a\"", b"\"a\""));
    assert!(weak_validate_etag(b"\"a\"", b"W/\"a\""));
    assert!(!weak_validate_etag(b"\"a\"", b"\"b\""));
    assert!(!weak_validate_etag(b"W/\"a\"", b"W/\"b\""));
}
