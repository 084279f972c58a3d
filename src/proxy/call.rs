//! What the data plane's request path shares between its pingora hooks ([`super::gateway`]), its
//! own client ([`super::client`]) and the refresh-and-retry ([`super::retry`]): the per-process
//! [`Gateway`], a request's [`Ctx`] and how it ended ([`Outcome`]), and the few actions all three
//! take on them (refuse, mark stale, turn streaming off). Kept apart so the three use it and not
//! each other (I/O: writes responses, sends stale marks).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use pingora::Result;
use pingora::http::ResponseHeader;
use pingora::proxy::Session;
use tokio::sync::OwnedSemaphorePermit;

use super::deny::{Deny, Shape};
use super::limits::{Cap, RequestLimits};
use super::policy::DowngradeCause;
use super::route::Method;
use super::trace::Trace;
use crate::config::Integration;
use crate::metrics::Metrics;
use crate::seam::Connector;
use crate::state::{
    Evidence, EvidenceKind, IntegrationState, RefreshHook, Snapshot, StaleCause, StaleMark,
    StaleSender, Store,
};
use crate::telemetry::{CallSpans, Telemetry};

/// Least time between two evidence records (and log lines) of one kind for one integration:
/// agent errors marking the profile stale, answers that do not hold to the artifact schema.
pub const EVIDENCE_GAP: Duration = Duration::from_secs(1);

/// The gateway's own HTTP client: one pingora connector, and so one connection pool, for every
/// call the gateway makes itself. Shared by all requests (it lives on the [`Gateway`]); its
/// calls are in [`super::client`]. HTTP/1.1 only, as every peer is (ALPN `http/1.1`), so the
/// connector is pingora's HTTP/1 one: its pooled-connection lookup can be awaited apart from a
/// new connection's (much larger) connect and handshake.
pub struct Client {
    pub(super) connector: Connector,
}

impl Default for Client {
    fn default() -> Self {
        Self::new()
    }
}

impl Client {
    /// A client with pingora's default connector options (platform roots, pool of 128 idle
    /// connections).
    pub fn new() -> Client {
        Client {
            connector: Connector::new(None),
        }
    }
}

/// The data plane's shared state (per process, not per request).
pub struct Gateway {
    /// The profile store.
    pub store: Arc<Store>,
    /// Metrics.
    pub metrics: Metrics,
    /// Stale marks to the control plane.
    pub stale: StaleSender,
    /// The gateway's base URL for effective cards (no trailing slash).
    pub public_url: String,
    /// `[policy] default_data_class`.
    pub default_data_class: String,
    /// Set when shutdown starts: new calls are refused with GATEWAY_DRAINING.
    pub draining: Arc<AtomicBool>,
    /// The control plane, for the refresh-and-retry of -32008/-32009; `None` when the gateway
    /// runs without one (then those errors only mark the profile stale).
    pub control: Option<Arc<dyn RefreshHook>>,
    /// The in-flight cap and the body deadline (`[limits]`).
    pub limits: RequestLimits,
    /// The gateway's own HTTP client (pingora's connector and pool) for the calls it makes
    /// itself: message sends, streams, downgrades, retries and large bodies.
    pub client: Client,
    /// `[log] access = "on"`: one access line per call.
    pub access_log: bool,
    /// Signs effective cards and serves the JWK Set (`[effective_card] signing_key`); `None`:
    /// cards are unsigned and `/.well-known/jwks.json` is not a route.
    pub signer: Option<Arc<super::card_signer::CardSigner>>,
    /// OpenTelemetry traces (`[telemetry]`); `None`: off, and no span is made.
    pub telemetry: Option<Arc<Telemetry>>,
}

/// How a request ended, for the log line and the `outcome` label.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Forwarded and answered without an A2A error (or the effective card was served).
    Ok,
    /// Forwarded; the agent answered with an error, passed through unchanged.
    AgentError,
    /// Refused by the gateway (before anything left, or after a retry's refresh).
    Denied(Deny),
    /// A streaming call answered through SendMessage as one SSE event.
    Downgraded,
    /// The agent could not be reached, failed mid-answer or passed a deadline.
    UpstreamFailed,
    /// The caller closed its connection before its answer was complete: the call to the agent
    /// was cancelled (its connection dropped, never pooled).
    ClientClosed,
}

impl Outcome {
    /// Bounded label.
    pub fn as_str(&self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::AgentError => "agent_error",
            Outcome::Denied(_) => "denied",
            Outcome::Downgraded => "downgraded",
            Outcome::UpstreamFailed => "upstream_failed",
            Outcome::ClientClosed => "client_closed",
        }
    }
}

/// Decrements the in-flight gauge when the request's context is dropped, however it ends.
pub struct Inflight(pub(super) prometheus::IntGauge);

impl Drop for Inflight {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// Per-request state.
pub struct Ctx {
    /// The snapshot loaded in `early_request_filter`, used by every phase.
    pub snapshot: Option<Arc<Snapshot>>,
    /// The integration the route names, when it is a configured one: its name is the bounded
    /// label (shared with the snapshot rather than copied for every request).
    pub integration: Option<Arc<Integration>>,
    /// The integration's state from `snapshot`.
    pub state: Option<Arc<IntegrationState>>,
    /// The operation.
    pub method: Method,
    /// The body to send upstream.
    pub body: Bytes,
    /// Error shape for this request.
    pub shape: Shape,
    /// How it ended.
    pub outcome: Option<Outcome>,
    /// Request start.
    pub started: Instant,
    /// Upstream response status (0: no answer).
    pub upstream_status: u16,
    /// The request id and trace context sent upstream and logged.
    pub trace: Trace,
    /// Time spent waiting on the upstream, summed over attempts (to each answer's header, or to
    /// its whole body when the gateway reads it).
    pub upstream_time: Duration,
    /// When the last upstream answer was in hand (`None`: nothing went upstream).
    pub upstream_done: Option<Instant>,
    /// Why a streaming call was answered through SendMessage, when it was.
    pub downgrade: Option<DowngradeCause>,
    /// The cap that refuses this request, if one was reached before it started.
    pub overloaded: Option<Cap>,
    /// The guard's detectors that found something in the request, comma-separated (empty:
    /// none; allocated only when one did).
    pub guard: String,
    /// The call's spans, when tracing is on (started once the request's headers are read).
    pub spans: Option<CallSpans>,
    pub(super) _inflight: Inflight,
    /// This request's slot of `[limits] max_inflight`, given back when the context drops.
    pub(super) _slot: Option<OwnedSemaphorePermit>,
}

impl Ctx {
    pub(super) fn label(&self) -> &str {
        self.integration_name().unwrap_or("")
    }

    /// The name of the integration the route names, when it is a configured one.
    pub(super) fn integration_name(&self) -> Option<&str> {
        self.integration.as_deref().map(|i| i.name.as_str())
    }

    /// Records one upstream exchange that began at `started` and has just been answered.
    pub fn upstream_answered(&mut self, started: Instant) {
        let now = Instant::now();
        self.upstream_time += now.saturating_duration_since(started);
        self.upstream_done = Some(now);
    }

    /// The gateway's own time on a forwarded call: until the last upstream answer was in hand,
    /// minus the time spent waiting on the upstream. `None` when nothing went upstream.
    pub(super) fn overhead(&self) -> Option<Duration> {
        let done = self.upstream_done?;
        Some(
            done.saturating_duration_since(self.started)
                .saturating_sub(self.upstream_time),
        )
    }
}

/// Writes a whole response.
pub async fn respond(
    session: &mut Session,
    status: u16,
    headers: &[(&str, &str)],
    body: Bytes,
) -> Result<()> {
    let mut h = ResponseHeader::build(status, Some(headers.len() + 1))?;
    for (k, v) in headers {
        h.insert_header(k.to_string(), v.to_string())?;
    }
    h.insert_header("content-length", body.len().to_string())?;
    session
        .write_response_header(Box::new(h), body.is_empty())
        .await?;
    if !body.is_empty() {
        session.write_response_body(Some(body), true).await?;
    }
    Ok(())
}

impl Gateway {
    /// Counts, logs and answers a refusal.
    ///
    /// Boxed: refusals are the rare path, and their future held inline would make every
    /// request's future bigger (pingora moves that future into a box on every request).
    pub(super) fn deny<'a>(
        &'a self,
        session: &'a mut Session,
        ctx: &'a mut Ctx,
        deny: Deny,
    ) -> Pin<Box<dyn Future<Output = Result<bool>> + Send + 'a>> {
        Box::pin(self.refuse(session, ctx, deny))
    }

    async fn refuse(&self, session: &mut Session, ctx: &mut Ctx, deny: Deny) -> Result<bool> {
        let reason = deny.reason();
        self.metrics
            .policy_denials
            .with_label_values(&[ctx.label(), reason])
            .inc();
        if let Deny::DataDetected { detector, path } = &deny {
            self.metrics
                .guard_findings
                .with_label_values(&[ctx.label(), detector, "refuse"])
                .inc();
            tracing::info!(
                integration = ctx.label(),
                detector = detector.as_str(),
                path = path.as_str(),
                action = "refuse",
                "content guard refused the request"
            );
            ctx.guard.clone_from(detector);
        }
        let r = deny.render(&ctx.shape, ctx.integration_name());
        if deny.closes_connection() {
            // The rest of the body is never read: the connection cannot be reused.
            session.set_keepalive(None);
        }
        let retry_after = deny.retry_after().map(|s| s.to_string());
        ctx.outcome = Some(Outcome::Denied(deny));
        let mut headers = vec![("content-type", r.content_type)];
        if let Some(secs) = retry_after.as_deref() {
            headers.push(("retry-after", secs));
        }
        respond(session, r.status, &headers, r.body).await?;
        Ok(true)
    }

    /// Records an agent error that marks the profile stale: metric, log, evidence-free channel send.
    pub fn mark_stale(&self, integration: &str, cause: StaleCause) {
        self.note_stale(integration, cause);
        let mark = StaleMark {
            integration: integration.to_owned(),
            cause,
            at: SystemTime::now(),
        };
        if self.stale.try_send(mark).is_err() {
            self.metrics.stale_marks_dropped.inc();
        }
    }

    /// Counts and logs a stale mark without sending it (the retry hook refreshes instead), and
    /// records it as evidence about the card (at most one record per cause per second).
    pub fn note_stale(&self, integration: &str, cause: StaleCause) {
        self.metrics
            .stale_marks
            .with_label_values(&[integration, cause.as_str()])
            .inc();
        tracing::warn!(
            integration,
            error = cause.as_str(),
            "agent error marks the profile stale"
        );
        let now = SystemTime::now();
        let kind = EvidenceKind::StaleError(cause);
        let recent = |s: &IntegrationState| s.observed_within(kind, now, EVIDENCE_GAP);
        // Looked at before the swap: an error storm must not become a storm of snapshot swaps.
        if self.store.load().get(integration).is_none_or(|s| recent(s)) {
            return;
        }
        self.store.update_integration(integration, |cur| {
            if recent(cur) {
                return cur.clone();
            }
            cur.with_evidence(Evidence {
                at: now,
                kind,
                detail: format!("the agent answered {}", cause.as_str()),
            })
        });
    }

    /// Turns streaming off for `name` until the next refresh, if the profile is still the one the
    /// request used (a refresh in between wins), and records the evidence.
    pub fn override_streaming_off(&self, state: &IntegrationState, evidence: Vec<Evidence>) {
        let name = state.integration.name.clone();
        let used = state.profile().cloned();
        self.store.update_integration(&name, |cur| {
            let same = match (cur.profile(), &used) {
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                _ => false,
            };
            if !same {
                return cur.clone();
            }
            let mut next = cur.clone();
            next.overrides.streaming_off = true;
            for e in &evidence {
                next = next.with_evidence(e.clone());
            }
            next
        });
    }
}

/// Evidence records for a refused-then-retried stream.
pub fn refused_stream_evidence() -> Vec<Evidence> {
    let now = SystemTime::now();
    vec![
        Evidence {
            at: now,
            kind: EvidenceKind::StreamingRefused,
            detail: "SendStreamingMessage answered with UnsupportedOperationError".into(),
        },
        Evidence {
            at: now,
            kind: EvidenceKind::StreamingDowngradeVerified,
            detail: "the same request as SendMessage succeeded; streaming off until refresh".into(),
        },
    ]
}
