//! What one slow or greedy caller can hold of the data plane: the connection cap, the keep-alive
//! idle timeout and the request-header deadline around pingora's HTTP/1 proxy, and the in-flight
//! request cap, body deadline and upstream deadlines the request hooks apply (I/O: downstream
//! sockets, timers).
//!
//! pingora 0.9.1 bounds none of these itself: every accepted connection gets a task, the header
//! is read with a per-read timeout only (a client sending one byte a second is never cut off),
//! and the first request of a connection may wait 60 s for its first byte. [`Limited`] therefore
//! takes over pingora's per-connection HTTP/1 loop (the few lines of its `ServerApp` impl for
//! HTTP apps) and, for each connection:
//! - takes a slot of `max_connections` when it is accepted and gives it back when the connection
//!   closes, however it ends. Without a slot the connection is still served one request, which
//!   the hooks answer `503 GATEWAY_BUSY` with `Retry-After` (in the caller's protocol), then
//!   closed; it gets only `header_timeout` to send that request, so connections over the cap are
//!   short-lived too. What the cap does not cover: the kernel's accept backlog and the file
//!   descriptor of a connection waiting for its answer (the process fd limit bounds those);
//! - waits for the first byte of each request at most `idle_timeout` (keep-alive idle timeout),
//!   holding only the socket meanwhile: pingora's session (header buffer, request future) is
//!   built once bytes arrive, so idle connections cost little memory;
//! - gives the request header `header_timeout` from its first byte. The request hooks mark the
//!   header as read (through a task-local set around each request); a header still incomplete at
//!   the deadline closes the connection without an answer, since there is no request to answer.
//!
//! Only HTTP/1 is served this way: the data plane listens on plain TCP without h2c, so pingora
//! never negotiates HTTP/2 on it. Pipelining stays off (pingora's default), so no bytes of a next
//! request are held between two requests of a connection.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::config::Limits;
use crate::metrics::Metrics;
use crate::seam::{
    HttpPersistentSettings, HttpServerApp, ReusedHttpStream, ServerApp, ServerSession,
    ShutdownWatch, Stream,
};

/// Which cap refused a call (the `limit` label of `a2a_egress_overload_refusals_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cap {
    /// `[limits] max_connections`.
    Connections,
    /// `[limits] max_inflight`.
    Inflight,
}

impl Cap {
    /// Every cap, in the order of [`crate::metrics::OVERLOAD_LIMITS`].
    pub const ALL: [Cap; 2] = [Cap::Connections, Cap::Inflight];

    /// Bounded label.
    pub fn as_str(self) -> &'static str {
        match self {
            Cap::Connections => "connections",
            Cap::Inflight => "inflight",
        }
    }
}

/// Which deadline cut a connection off (the `phase` label of `a2a_egress_downstream_timeouts_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// No request began within `idle_timeout`.
    Idle,
    /// A request header did not complete within `header_timeout`.
    Header,
    /// A request body did not complete within `body_timeout` (answered 408).
    Body,
    /// A write of the answer waited longer than `write_timeout` for the caller to read.
    Write,
}

impl Phase {
    /// Every phase, in the order of [`crate::metrics::DOWNSTREAM_TIMEOUT_PHASES`].
    pub const ALL: [Phase; 4] = [Phase::Idle, Phase::Header, Phase::Body, Phase::Write];

    /// Bounded label.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Idle => "idle",
            Phase::Header => "header",
            Phase::Body => "body",
            Phase::Write => "write",
        }
    }
}

/// One downstream connection, as the request hooks see it.
struct Connection {
    /// Set by the first request hook: pingora has read and parsed the header.
    header_read: AtomicBool,
    /// The connection holds no slot: its request is refused.
    over_cap: bool,
}

tokio::task_local! {
    /// The connection whose request the current task runs (set by [`Limited`] around each request;
    /// pingora runs an HTTP/1 request's hooks in the connection's task).
    static CONNECTION: Arc<Connection>;
}

/// Called by the first request hook once pingora has read a request header: stops the header
/// deadline. Returns the cap that refuses this request's connection, if any. Outside a
/// [`Limited`] connection (e.g. a bare pingora service in a test) nothing is limited.
pub fn header_read() -> Option<Cap> {
    CONNECTION
        .try_with(|c| {
            c.header_read.store(true, Ordering::Release);
            c.over_cap.then_some(Cap::Connections)
        })
        .ok()
        .flatten()
}

/// The request-side limits the hooks apply, shared by every request.
#[derive(Debug, Clone)]
pub struct RequestLimits {
    /// Slots of `max_inflight`; a request holds one from its context's creation to its drop.
    inflight: Arc<Semaphore>,
    /// `body_timeout`.
    pub body_timeout: Duration,
    /// The deadlines of every call the gateway makes to an agent.
    pub upstream: UpstreamDeadlines,
    /// `write_timeout`: each write of an answer to the caller.
    pub write_timeout: Duration,
}

/// How long one call to an agent may take (`[limits] upstream_*`): a caller that waits is never
/// held longer, and a call whose caller left is cancelled before any of these (see
/// `proxy::client`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpstreamDeadlines {
    /// From sending the request to the final answer head, across the connections tried.
    pub header: Duration,
    /// From the answer head to the last byte of a unary answer.
    pub body: Duration,
    /// Longest silence between two reads (a stream's only bound).
    pub idle: Duration,
}

impl RequestLimits {
    /// From the validated `[limits]`.
    pub fn new(limits: &Limits) -> RequestLimits {
        RequestLimits {
            inflight: Arc::new(Semaphore::new(limits.max_inflight)),
            body_timeout: limits.body_timeout,
            write_timeout: limits.write_timeout,
            upstream: UpstreamDeadlines {
                header: limits.upstream_header_timeout,
                body: limits.upstream_body_timeout,
                idle: limits.upstream_idle_timeout,
            },
        }
    }

    /// A slot for one request, or `None` when `max_inflight` requests are in progress.
    pub fn admit(&self) -> Option<OwnedSemaphorePermit> {
        self.inflight.clone().try_acquire_owned().ok()
    }
}

/// Holds one connection slot and the open-connections gauge for a connection's lifetime.
struct Slot {
    _permit: OwnedSemaphorePermit,
    gauge: prometheus::IntGauge,
}

impl Slot {
    fn new(permit: OwnedSemaphorePermit, gauge: &prometheus::IntGauge) -> Slot {
        gauge.inc();
        Slot {
            _permit: permit,
            gauge: gauge.clone(),
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.gauge.dec();
    }
}

/// How the wait for a request's first byte ended.
enum FirstByte {
    Arrived,
    Idle,
    Closed,
}

/// pingora's HTTP/1 connection loop with the connection cap, idle timeout and header deadline
/// (see the module doc). `A` is the pingora HTTP app, i.e. the data plane's `HttpProxy`.
pub struct Limited<A> {
    app: Arc<A>,
    limits: Limits,
    slots: Arc<Semaphore>,
    metrics: Metrics,
}

impl<A> Limited<A> {
    /// Wraps `app` with `limits`, counting in `metrics`.
    pub fn new(app: A, limits: Limits, metrics: Metrics) -> Limited<A> {
        // Every series exists from the start, so a dashboard shows zeros rather than gaps.
        for cap in [Cap::Connections, Cap::Inflight] {
            metrics.overload_refusals.with_label_values(&[cap.as_str()]);
        }
        for phase in [Phase::Idle, Phase::Header, Phase::Body, Phase::Write] {
            metrics
                .downstream_timeouts
                .with_label_values(&[phase.as_str()]);
        }
        Limited {
            app: Arc::new(app),
            slots: Arc::new(Semaphore::new(limits.max_connections)),
            limits,
            metrics,
        }
    }

    fn timed_out(&self, phase: Phase) {
        self.metrics
            .downstream_timeouts
            .with_label_values(&[phase.as_str()])
            .inc();
    }

    /// Waits for the first byte of a request without consuming it (pingora's stream rewinds what
    /// it peeked), at most `wait`, and not past shutdown.
    async fn first_byte(
        stream: &mut Stream,
        wait: Duration,
        shutdown: &ShutdownWatch,
    ) -> FirstByte {
        if *shutdown.borrow() {
            return FirstByte::Closed;
        }
        let mut stop = shutdown.clone();
        let mut byte = [0u8; 1];
        tokio::select! {
            r = tokio::time::timeout(wait, stream.try_peek(&mut byte)) => match r {
                // `Ok(false)`: this stream cannot peek; pingora's own per-read timeout applies.
                Ok(Ok(_)) => FirstByte::Arrived,
                Ok(Err(_)) => FirstByte::Closed,
                Err(_) => FirstByte::Idle,
            },
            _ = stop.changed() => FirstByte::Closed,
        }
    }

    /// Runs one request, closing the connection (by dropping the request, which owns the
    /// socket) if its header is not read within `header_timeout`.
    async fn within_header_deadline(
        &self,
        conn: &Connection,
        request: impl Future<Output = Option<ReusedHttpStream>>,
    ) -> Option<ReusedHttpStream> {
        tokio::pin!(request);
        tokio::select! {
            done = &mut request => return done,
            _ = tokio::time::sleep(self.limits.header_timeout) => {}
        }
        if conn.header_read.load(Ordering::Acquire) {
            request.await
        } else {
            self.timed_out(Phase::Header);
            None
        }
    }
}

/// `[limits] idle_timeout` as pingora's keep-alive seconds (its per-read timeout while a header
/// is read, and the value carried to the next request), never 0, which pingora reads as "forever".
fn keepalive_secs(limits: &Limits) -> u64 {
    let d = limits.idle_timeout.max(limits.header_timeout);
    (d.as_secs() + u64::from(d.subsec_nanos() > 0)).max(1)
}

impl<A: HttpServerApp + Send + Sync + 'static> Limited<A> {
    /// The keep-alive loop of one connection (pingora's HTTP/1 branch of `ServerApp::process_new`,
    /// with the waits bounded).
    async fn serve(&self, mut stream: Stream, shutdown: &ShutdownWatch, over_cap: bool) {
        let conn = Arc::new(Connection {
            header_read: AtomicBool::new(false),
            over_cap,
        });
        // Over the cap, one request only, and no longer than a header may take to send it.
        let first_wait = if over_cap {
            self.limits.header_timeout
        } else {
            self.limits.idle_timeout
        };
        let mut settings: Option<HttpPersistentSettings> = None;
        loop {
            match Self::first_byte(&mut stream, first_wait, shutdown).await {
                FirstByte::Arrived => {}
                FirstByte::Idle => return self.timed_out(Phase::Idle),
                FirstByte::Closed => return,
            }
            let mut session = ServerSession::new_http1(stream);
            match settings.take() {
                Some(s) => s.apply_to_session(&mut session),
                None => session.set_keepalive(Some(keepalive_secs(&self.limits))),
            }
            if over_cap || *shutdown.borrow() {
                session.set_keepalive(None);
            }
            conn.header_read.store(false, Ordering::Release);
            let request =
                CONNECTION.scope(conn.clone(), self.app.process_new_http(session, shutdown));
            let Some(reused) = self.within_header_deadline(&conn, request).await else {
                return;
            };
            (stream, settings) = reused.consume();
        }
    }
}

#[async_trait]
impl<A: HttpServerApp + Send + Sync + 'static> ServerApp for Limited<A> {
    async fn process_new(
        self: &Arc<Self>,
        stream: Stream,
        shutdown: &ShutdownWatch,
    ) -> Option<Stream> {
        let slot = self
            .slots
            .clone()
            .try_acquire_owned()
            .ok()
            .map(|p| Slot::new(p, &self.metrics.downstream_connections));
        self.serve(stream, shutdown, slot.is_none()).await;
        drop(slot);
        // The connection is finished here: nothing is handed back to pingora for reuse.
        None
    }

    async fn cleanup(&self) {
        self.app.http_cleanup().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_label_sets_metrics_creates_at_zero_are_these_enums() {
        assert_eq!(Cap::ALL.map(Cap::as_str), crate::metrics::OVERLOAD_LIMITS);
        let phases = Phase::ALL.map(Phase::as_str);
        assert_eq!(phases, crate::metrics::DOWNSTREAM_TIMEOUT_PHASES);
    }

    #[test]
    fn keepalive_seconds_round_up_and_are_never_forever() {
        let l = |idle_ms, header_ms| Limits {
            idle_timeout: Duration::from_millis(idle_ms),
            header_timeout: Duration::from_millis(header_ms),
            ..Limits::default()
        };
        assert_eq!(keepalive_secs(&l(300, 300)), 1);
        assert_eq!(keepalive_secs(&l(60_000, 10_000)), 60);
        assert_eq!(keepalive_secs(&l(1_500, 10_000)), 10);
        assert_eq!(keepalive_secs(&l(2_001, 1)), 3);
    }

    #[tokio::test]
    async fn outside_a_limited_connection_nothing_is_refused() {
        assert_eq!(header_read(), None);
        let c = Arc::new(Connection {
            header_read: AtomicBool::new(false),
            over_cap: true,
        });
        let got = CONNECTION.scope(c.clone(), async { header_read() }).await;
        assert_eq!(got, Some(Cap::Connections));
        assert!(c.header_read.load(Ordering::Acquire));
    }

    #[test]
    fn in_flight_slots_are_given_back_when_a_request_ends() {
        let r = RequestLimits::new(&Limits {
            max_inflight: 1,
            ..Limits::default()
        });
        let first = r.admit().expect("one slot");
        assert!(r.admit().is_none());
        drop(first);
        assert!(r.admit().is_some());
    }
}
