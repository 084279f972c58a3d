//! pingora's internals in one place: every item of pingora (and pingora-runtime) the gateway uses
//! beyond `ProxyHttp`'s documented surface, and every behaviour of pingora it relies on, is reached
//! through this module (I/O: sockets, through pingora). It uses nothing of the crate, so every
//! layer may use it.
//!
//! The gateway leans on pingora's internals in three places, because pingora does not offer what
//! it needs through `ProxyHttp`:
//! - `proxy::limits` runs pingora's HTTP/1 connection loop itself ([`ServerApp`],
//!   [`HttpServerApp`], [`ServerSession`], [`ReusedHttpStream`]): pingora bounds neither the wait
//!   for a request's first byte nor the header time nor the connections;
//! - `proxy::client` calls agents through pingora's [`Connector`] and HTTP/1 client
//!   [`HttpSession`] instead of pingora's proxy loop, because a refused stream is only visible in
//!   the first answer and pingora cannot send the request again;
//! - `server` hands its already-bound data-plane socket to pingora's listening service
//!   ([`hand_off`]) instead of letting pingora bind one.
//!
//! Beside those: the trust roots in pingora's form (`state::upstream`, `state::trust`), the
//! ETag comparison (`types::etag`), the no-steal runtime (`cli::serve`) and pingora's log targets
//! (`cli::serve`). `scripts/check-layers.sh` fails on a `pingora` path outside this module other
//! than the `ProxyHttp` surface: `pingora::proxy::{ProxyHttp, Session, FailToProxy}`,
//! `pingora::http::{RequestHeader, ResponseHeader}`, `pingora::prelude::HttpPeer` and
//! `pingora::{Error, ErrorType, OrErr, Result, RetryType}`; on an alias of a pingora path
//! (`use pingora… as`, `extern crate pingora… as`); and on pingora's session internals
//! (`as_downstream`, `downstream_session`, and the calls wrapped here, which `Session`'s `Deref`
//! reaches) outside it.
//!
//! # Upgrade checklist
//!
//! A pingora upgrade is: bump the version, build, and run the tests below (`cargo test --lib
//! seam::` and the integration tests named); each is one assumption this module makes.
//!
//! | # | assumption | relied on by | test |
//! |---|---|---|---|
//! | 1 | [`caller_idle`] (`read_body_or_idle(true)` once the request is read) returns `ConnectionClosed` when the caller hangs up (pingora's `abort_on_close`, on by default), and stays pending while the caller waits | `proxy::client::caller::hung_up` | `seam::tests::an_idle_read_returns_when_the_caller_hangs_up` |
//! | 2 | [`set_write_timeout`] bounds each write of the answer, body included (pingora sets no write deadline of its own) | `proxy::gateway` | `seam::tests::the_write_timeout_applies_to_body_writes` |
//! | 3 | an `HttpPeer`'s connection goes to the peer's address as given (the pinned, checked address), whatever its SNI and the request's `Host` | `proxy::upstream`, `proxy::client` | `seam::tests::the_connector_dials_the_pinned_address_and_pools_by_peer` |
//! | 4 | a client session released to the [`Connector`] comes back from `reused_http_session` for the same peer, and [`set_client_timeouts`] are per session: they bound that session only; a session, new or from the pool, starts with no read or write timeout (pingora applies none of the peer's `options` timeouts to an HTTP/1 client session), so they are set on every session taken | `proxy::client::exchange` | `seam::tests::the_connector_dials_the_pinned_address_and_pools_by_peer`, `seam::tests::client_timeouts_are_per_session` |
//! | 5 | a descriptor registered under the listener's address is served as it is: pingora binds nothing ([`hand_off`]) | `server` | `seam::tests::a_handed_off_socket_is_served_without_a_bind`, `server::tests::serves_the_sockets_it_is_given_until_shutdown` |
//! | 6 | pingora's HTTP/1 loop is `ServerSession::new_http1`, `HttpServerApp::process_new_http`, and the `ReusedHttpStream` it returns gives the stream back for the next request (`consume`) | `proxy::limits::Limited` | `seam::tests::a_finished_session_gives_its_stream_back_for_the_next_request`, `tests/integration/gateway_limits.rs::an_idle_keep_alive_connection_is_closed` |
//! | 7 | [`write_continue`] answers `Expect: 100-continue` before the body is read | `proxy::gateway` | `seam::tests::a_continue_is_written_before_the_body_is_read` |
//! | 8 | [`weak_validate_etag`] is RFC 9110's weak comparison (`W/` ignored on either side) | `types::etag` | `seam::tests::the_etag_comparison_is_weak` |
//! | 9 | a [`CaType`] built from [`WrappedX509`] roots is what the connector verifies an agent's certificate against ([`load_native_certs`] the platform's) | `state::upstream`, `state::trust` | `seam::tests::a_peers_own_roots_are_what_its_certificate_is_checked_against`, `tests/integration/gateway_tls.rs::calls_reach_an_https_agent_trusted_through_ca_file` |
//! | 10 | raw traffic (request and answer headers and bodies, the caller's and the agent's) reaches pingora's logs only at DEBUG or finer under `pingora_core::protocols` and `pingora_proxy`, and at TRACE elsewhere in `pingora_core` ([`RAW_TRAFFIC_TARGETS`]); `log` records keep their module as target | `cli::serve` | `cli::serve::tests::pingora_events_that_carry_raw_requests_are_dropped_at_any_filter`, `tests/integration/security.rs::raw_traffic_never_reaches_the_log_at_any_level` |
//! | 11 | a session released for a peer is not handed to a peer that differs only by its trust group ([`set_trust_group`], pingora's `group_key`), and is to one of the same group: the pool's key ignores a peer's CA roots, so the group is what keeps agents trusted differently apart | `proxy::upstream` | `seam::tests::the_pool_keeps_trust_groups_apart` |
//! | 12 | a request body with invalid chunked framing fails `read_request_body` with pingora's `InvalidChunk` error type ([`is_invalid_body_framing`]) | `proxy::gateway` | `seam::tests::an_invalid_chunked_body_is_a_framing_error`, `tests/integration/gateway_hostile_requests.rs::a_malformed_chunked_body_is_refused_400_and_closes_the_connection` |
//! | 13 | a caller that closes or resets its connection before its request body is complete fails `read_request_body` with `ConnectionClosed` or `ReadError` ([`is_caller_gone`]), never with `InvalidChunk` | `proxy::gateway` | `seam::tests::a_caller_that_leaves_mid_body_is_gone`, `tests/integration/gateway_deadlines.rs::a_caller_that_hangs_up_mid_body_is_client_closed_and_logs_no_warning` |
//!
//! The `ProxyHttp` surface itself (the hooks `proxy::gateway` implements) is pingora's public
//! API and stays where it is used.

use std::future::Future;
use std::net::TcpListener;
use std::os::fd::IntoRawFd as _;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use pingora::listeners::{L4BufferSettings, ListenerConfig};
use pingora::proxy::{HttpProxy, ProxyHttp, Session};
use pingora::server::configuration::ServerConf;
use pingora::server::{Fds, ListenFds};
use pingora::services::Service as _;
use pingora::services::listening::Service;
use tokio::sync::watch;

pub use pingora::apps::{HttpPersistentSettings, HttpServerApp, ReusedHttpStream, ServerApp};
pub use pingora::connectors::http::v1::Connector;
pub use pingora::protocols::ALPN;
pub use pingora::protocols::Stream;
pub use pingora::protocols::http::ServerSession;
pub use pingora::protocols::http::conditional_filter::weak_validate_etag;
pub use pingora::protocols::http::v1::client::HttpSession;
pub use pingora::protocols::tls::CaType;
pub use pingora::server::ShutdownWatch;
pub use pingora::tls::load_native_certs;
pub use pingora::utils::tls::{WrappedX509, parse_x509};
pub use pingora_runtime::NoStealRuntime;

/// The log targets under which pingora may write raw traffic, each with the most severe level at
/// which it does: every event under the prefix at that level or finer is taken to carry raw
/// traffic (assumption 10). pingora-core 0.9.1 writes the bytes of an invalid chunked body
/// (request or answer) at DEBUG (`protocols::http::v1::body`), an agent's whole answer header at
/// DEBUG and raw request and answer headers at TRACE (`protocols::http::v1::client`), and a
/// request header and each answer task at TRACE (`apps::http_app`); pingora_proxy the whole
/// upstream request header and every body chunk at DEBUG. So the line is drawn by module, not by
/// event: a new DEBUG line under `protocols` in the next release is dropped before it is read.
pub const RAW_TRAFFIC_TARGETS: [(&str, tracing::Level); 3] = [
    ("pingora_core::protocols", tracing::Level::DEBUG),
    ("pingora_proxy", tracing::Level::DEBUG),
    ("pingora_core", tracing::Level::TRACE),
];

/// The ProxyHttp app pingora builds around `inner` (its HTTP proxy, default server options), as
/// an [`HttpServerApp`] for `proxy::limits::Limited` to run.
pub fn proxy_app<SV: ProxyHttp>(inner: SV) -> HttpProxy<SV> {
    pingora::proxy::http_proxy(&Arc::new(ServerConf::default()), inner)
}

/// Serves `listener`, already bound, with `app` on pingora's listening service: the socket is
/// registered as a descriptor under its address (the way pingora's graceful upgrade passes
/// sockets), so pingora's accept loop serves it and never binds (assumption 5). Returns the
/// sender that stops the accept loop (send `true`) and the future that runs it; each accepted
/// connection's socket reads with a `read_buffer`-byte buffer.
pub fn hand_off<A>(
    name: &str,
    listener: TcpListener,
    app: A,
    read_buffer: usize,
) -> std::io::Result<(
    watch::Sender<bool>,
    impl Future<Output = ()> + Send + 'static,
)>
where
    A: ServerApp + Send + Sync + 'static,
{
    let key = listener.local_addr()?.to_string();
    // pingora serves a registered descriptor as it is; its accept loop must not block a thread.
    listener.set_nonblocking(true)?;
    let fds: ListenFds = Arc::new(Fds::new().into());
    fds.lock().add(key.clone(), listener.into_raw_fd());
    let mut service = Service::new(name.to_owned(), app);
    // The address pingora looks the descriptor up by; it binds nothing itself.
    service.add_listener(
        ListenerConfig::tcp(&key).l4_buffer(L4BufferSettings::default().read(read_buffer)),
    );
    let (stop, watch) = watch::channel(false);
    let serve = async move {
        service.start_service(Some(fds), watch, 1).await;
    };
    Ok((stop, serve))
}

/// Resolves when the caller's side of `session` has news once its request is read: `Err` with
/// `ConnectionClosed` (FIN) or `ReadError` (reset) when it hung up, `Ok` or another error when
/// bytes arrived after the request (assumption 1). It never reads body bytes: the gateway reads
/// the body before any call goes out.
pub async fn caller_idle(session: &mut Session) -> pingora::Result<Option<Bytes>> {
    session.as_downstream_mut().read_body_or_idle(true).await
}

/// Bounds each write to the caller (header and body) by `timeout` (assumption 2).
pub fn set_write_timeout(session: &mut Session, timeout: Duration) {
    session.set_write_timeout(Some(timeout));
}

/// Answers `Expect: 100-continue` (assumption 7).
pub async fn write_continue(session: &mut Session) -> pingora::Result<()> {
    session.as_downstream_mut().write_continue_response().await
}

/// Whether `e`, from reading a request body, says the body's framing is invalid (a malformed
/// chunk size, chunk extensions over pingora's limit): the caller's fault, and the rest of the
/// connection is unreadable (assumption 12).
pub fn is_invalid_body_framing(e: &pingora::Error) -> bool {
    e.etype() == &pingora::ErrorType::Custom("InvalidChunk")
}

/// Whether `e`, from reading a request body, says the caller is gone (assumption 13): it closed its connection
/// before the body was complete (pingora's `ConnectionClosed`, "Peer prematurely closed
/// connection …") or the read failed (`ReadError`: a reset). Leaving is the caller's right; it
/// is no failure of the gateway's or the agent's.
pub fn is_caller_gone(e: &pingora::Error) -> bool {
    matches!(
        e.etype(),
        pingora::ErrorType::ConnectionClosed
            | pingora::ErrorType::ReadError
            // Writing `100 Continue` to a caller that already left.
            | pingora::ErrorType::WriteError
    )
}

/// Puts `peer` in the connection pool's trust group `group` (assumption 11): a pooled connection
/// is handed only to a peer of the same group. pingora's pool key (`HttpPeer`'s `Hash`) covers
/// the address, scheme, SNI, verification flags and `group_key`, not the roots in `options.ca`,
/// so without a group two upstreams on one address that trust different roots would share
/// connections whose certificate was checked against the other's roots.
pub fn set_trust_group(peer: &mut pingora::prelude::HttpPeer, group: u64) {
    peer.group_key = group;
}

/// Bounds each read and each write of one client session to an agent (assumption 4).
pub fn set_client_timeouts(session: &mut HttpSession, read: Duration, write: Option<Duration>) {
    session.read_timeout = Some(read);
    session.write_timeout = write;
}

#[cfg(test)]
mod tests;
