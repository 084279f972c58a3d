//! The pingora `ProxyHttp` implementation: one request's life from routing to logging (I/O).
//!
//! Phases (pingora-proxy `proxy_trait.rs`):
//! - `early_request_filter`: load the snapshot **once**; every later phase and any retry use it.
//! - `request_filter`: route, read the body (bounded), decide (pure [`policy::decide`]); answer
//!   refusals and the effective card, and make every call to the agent through [`super::client`]
//!   (pingora's connector and pool), so pingora's own upstream path and pool are never used.
//! - `fail_to_proxy`: an error no answer was written for becomes a protocol-shaped 502, never HTML.
//! - `logging`: the request metrics and one access line (target `a2a_egress::access`), with the
//!   same bounded reason; the request id is the caller's when valid ([`super::trace`]).

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::{Bytes, BytesMut};
use pingora::http::RequestHeader;
use pingora::prelude::HttpPeer;
use pingora::proxy::{FailToProxy, ProxyHttp, Session};
use pingora::{Error, ErrorType, Result};
use tracing::Instrument as _;

use super::body::{RequestFacts, RpcId, RpcRequest, parse_jsonrpc, parse_rest_body};
use super::call::{Ctx, Gateway, Inflight, Outcome, respond};
use super::card::{CACHE_CONTROL, served_card};
use super::card_signer::{JWKS_CACHE_CONTROL, JWKS_CONTENT_TYPE};
use super::deny::{Deny, Shape};
use super::limits::{self, Cap, Phase};
use super::policy::{self, DataClasses, Facts, StreamPlan};
use super::route::{Method, Route, check_path, route};
use super::trace::Trace;
use super::upstream::tls_fault;
use crate::config::DEFAULT_MAX_BODY_BYTES;
use crate::metrics::Label;
use crate::state::IntegrationState;

impl Gateway {
    /// Sends a decided request through the gateway's own client and records its outcome.
    async fn forward(
        &self,
        session: &mut Session,
        ctx: &mut Ctx,
        state: &IntegrationState,
        plan: &policy::Plan,
        facts: &Facts<'_>,
        body: &Bytes,
    ) -> Result<bool> {
        ctx.method = plan.method;
        if !plan.findings.is_empty() {
            self.count_findings(ctx, &plan.findings);
        }
        if plan.unscanned_bytes > 0 {
            self.metrics
                .guard_unscanned_bytes
                .with_label_values(&[ctx.label()])
                .inc_by(plan.unscanned_bytes as u64);
        }
        if let Some(spans) = &mut ctx.spans {
            spans.planned(&plan.version);
        }
        // Forward the caller's bytes unless the tenant must be spliced in (a rewrite costs about
        // a third more CPU per request).
        ctx.body = plan.rewritten_body.clone().unwrap_or_else(|| body.clone());
        // Every call leaves through the gateway's own client: one HTTP stack and one connection
        // pool (pingora's connector, on this runtime) for unary calls, message sends, streams,
        // downgrades and retries alike. Message sends and streams that the agent refuses with
        // -32008/-32009 before doing any work, and calls whose answer the artifact schema must
        // see, may be refreshed, re-shaped and retried once (see `super::retry`); other calls
        // (task reads, cancels, push configs) answer the agent's error unchanged and mark the
        // profile stale.
        let screened =
            state.integration.artifacts.is_some() && plan.method.answers_with_artifacts();
        let redo = super::retry::Redo {
            facts,
            original_body: body,
        };
        let call = super::client::Call {
            state,
            plan,
            redo: &redo,
            may_retry: plan.method.sends_message() || plan.stream != StreamPlan::Unary || screened,
        };
        let outcome = super::client::call(self, session, ctx, call).await?;
        ctx.outcome = Some(outcome);
        Ok(true)
    }

    /// Counts and logs what the guard found in a request that leaves (recorded or redacted),
    /// and names the detectors on the access line. Never the matched text.
    fn count_findings(&self, ctx: &mut Ctx, findings: &[crate::guard::Finding]) {
        for (n, f) in findings.iter().enumerate() {
            let action = f.action.as_str();
            self.metrics
                .guard_findings
                .with_label_values(&[ctx.label(), &f.detector, action])
                .inc();
            if n == crate::guard::LOGGED_FINDINGS {
                tracing::info!(
                    integration = ctx.label(),
                    more = findings.len() - n,
                    "content guard findings not logged one by one (counted)"
                );
            }
            if n >= crate::guard::LOGGED_FINDINGS {
                continue;
            }
            tracing::info!(
                integration = ctx.label(),
                detector = f.detector.as_str(),
                class = f.class.as_str(),
                path = f.path.as_str(),
                action,
                "content guard finding"
            );
            if !ctx.guard.split(',').any(|d| d == f.detector) {
                if !ctx.guard.is_empty() {
                    ctx.guard.push(',');
                }
                ctx.guard.push_str(&f.detector);
            }
        }
    }

    /// Reads the request body, refusing before reading past `limit`.
    async fn read_body(&self, session: &mut Session, limit: usize) -> Result<Option<Bytes>> {
        if let Some(len) = session
            .req_header()
            .headers
            .get("content-length")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<usize>().ok())
            && len > limit
        {
            return Ok(None);
        }
        // The body is read here, before any upstream exists, so the gateway answers
        // `Expect: 100-continue` itself (curl otherwise waits a second before sending).
        let expects_continue = session
            .req_header()
            .headers
            .get("expect")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.eq_ignore_ascii_case("100-continue"));
        if expects_continue {
            crate::seam::write_continue(session).await?;
        }
        // A body that arrives in one piece (the usual case) is kept as it came, without a copy.
        let mut whole: Option<Bytes> = None;
        let mut buf = BytesMut::new();
        while let Some(chunk) = session.read_request_body().await? {
            let held = whole.as_ref().map_or(buf.len(), Bytes::len);
            if held + chunk.len() > limit {
                return Ok(None);
            }
            match whole.take() {
                None if buf.is_empty() => whole = Some(chunk),
                first => {
                    if let Some(first) = first {
                        buf.extend_from_slice(&first);
                    }
                    buf.extend_from_slice(&chunk);
                }
            }
        }
        Ok(Some(whole.unwrap_or_else(|| buf.freeze())))
    }

    /// What refuses a request before it is even routed: shutdown, or a cap reached when it began
    /// (counted here, by cap).
    fn refusal_before_routing(&self, ctx: &Ctx) -> Option<Deny> {
        if self.draining.load(Ordering::Relaxed) {
            return Some(Deny::Draining);
        }
        let cap = ctx.overloaded?;
        self.metrics
            .overload_refusals
            .with_label_values(&[cap.as_str()])
            .inc();
        Some(Deny::Overloaded)
    }

    /// [`Self::read_body`] within `[limits] body_timeout`: a body too large or too slow is the
    /// refusal to answer (a slow one is counted as a body timeout).
    async fn read_body_in_time(
        &self,
        session: &mut Session,
        limit: usize,
    ) -> Result<std::result::Result<Bytes, Deny>> {
        let read = tokio::time::timeout(self.limits.body_timeout, self.read_body(session, limit));
        match read.await {
            // The caller's malformed body is the caller's fault, not the agent's (no 502).
            Ok(Err(e)) if crate::seam::is_invalid_body_framing(&e) => {
                Ok(Err(Deny::InvalidBodyFraming))
            }
            Ok(body) => Ok(body?.ok_or(Deny::BodyTooLarge { limit })),
            Err(_) => {
                self.metrics
                    .downstream_timeouts
                    .with_label_values(&[Phase::Body.as_str()])
                    .inc();
                Ok(Err(Deny::RequestTimeout))
            }
        }
    }

    /// A route that names no integration: `GET /.well-known/jwks.json`, the public keys that
    /// verify the effective cards' signatures (not a route when the gateway does not sign), or
    /// nothing.
    async fn serve_gateway_route(
        &self,
        session: &mut Session,
        ctx: &mut Ctx,
        r: &Route,
    ) -> Result<bool> {
        let (Route::Jwks, Some(signer)) = (r, &self.signer) else {
            return self.deny(session, ctx, Deny::RouteNotFound).await;
        };
        ctx.method = Method::Jwks;
        let head = match session.req_header().method.as_str() {
            "GET" => false,
            "HEAD" => true,
            _ => return self.deny(session, ctx, Deny::MethodNotFound).await,
        };
        ctx.outcome = Some(Outcome::Ok);
        let headers = [
            ("cache-control", JWKS_CACHE_CONTROL),
            ("content-type", JWKS_CONTENT_TYPE),
        ];
        let body = if head { Bytes::new() } else { signer.jwks() };
        respond(session, 200, &headers, body).await?;
        Ok(true)
    }

    async fn serve_card(&self, session: &mut Session, ctx: &mut Ctx) -> Result<bool> {
        let state = ctx.state.clone().expect("card route has a state");
        if let Err(d) = policy::check_status(&state) {
            return self.deny(session, ctx, d).await;
        }
        if !matches!(session.req_header().method.as_str(), "GET" | "HEAD") {
            return self.deny(session, ctx, Deny::MethodNotFound).await;
        }
        let Some(card) = served_card(&state, &self.public_url, self.signer.as_deref()) else {
            return self.deny(session, ctx, Deny::NoUsableProfile).await;
        };
        ctx.outcome = Some(Outcome::Ok);
        let not_modified =
            crate::types::etag::if_none_match(&session.req_header().headers, &card.etag);
        let common = [
            ("etag", card.etag.as_str()),
            ("cache-control", CACHE_CONTROL),
            ("content-type", "application/json"),
        ];
        if not_modified {
            respond(session, 304, &common[..2], Bytes::new()).await?;
        } else if session.req_header().method == "HEAD" {
            respond(session, 200, &common, Bytes::new()).await?;
        } else {
            respond(session, 200, &common, card.body).await?;
        }
        Ok(true)
    }

    /// What `request_filter` does, inside the call's span: route, read and check the request,
    /// then answer it (through `proxy::client`) or refuse it.
    async fn filter(&self, session: &mut Session, ctx: &mut Ctx) -> Result<bool> {
        let snapshot = ctx.snapshot.clone().unwrap_or_else(|| self.store.load());
        // Path tricks are refused before the path is classified, so no forwarding path ever sees
        // (or normalises differently) a path that means two things.
        if let Err(e) = check_path(session.req_header().uri.path()) {
            return self.deny(session, ctx, Deny::InvalidPath(e)).await;
        }
        let r = route(session.req_header().uri.path());
        if matches!(r, Route::JsonRpc { .. }) {
            ctx.shape = Shape::JsonRpc(RpcId::null());
        }
        if let Some(d) = self.refusal_before_routing(ctx) {
            return self.deny(session, ctx, d).await;
        }
        let Some(name) = r.name() else {
            return self.serve_gateway_route(session, ctx, &r).await;
        };
        let state = snapshot.get(name).cloned();
        if let Some(state) = &state {
            ctx.integration = Some(state.integration.clone());
            ctx.state = Some(state.clone());
        }
        if let Route::Card { .. } = r {
            ctx.method = Method::Card;
            if state.is_none() {
                return self.deny(session, ctx, Deny::UnknownIntegration).await;
            }
            // Boxed, as refusals are: most requests are calls, not card reads.
            return Box::pin(self.serve_card(session, ctx)).await;
        }
        // The body is read (bounded) before any refusal so a JSON-RPC error keeps the caller's id.
        let limit = state
            .as_ref()
            .map(|s| s.integration.max_body_bytes)
            .unwrap_or(DEFAULT_MAX_BODY_BYTES);
        let body = match self.read_body_in_time(session, limit).await {
            Ok(Ok(body)) => body,
            Ok(Err(d)) => return self.deny(session, ctx, d).await,
            Err(e) => {
                // A caller that hung up (or reset) mid-body left: nothing failed upstream, and
                // nothing is logged above debug (the error's path reads `ctx.outcome`).
                if crate::seam::is_caller_gone(&e) {
                    ctx.outcome = Some(Outcome::ClientClosed);
                }
                return Err(e);
            }
        };
        let parsed = match parse_body(&r, session.req_header(), &body, ctx) {
            Ok(parsed) => parsed,
            Err(d) => return self.deny(session, ctx, d).await,
        };
        let Some(state) = state else {
            return self.deny(session, ctx, Deny::UnknownIntegration).await;
        };
        if let Err(d) = policy::check_admission(&state) {
            return self.deny(session, ctx, d).await;
        }
        let parsed = match parsed {
            Ok(facts) => facts,
            Err(d) => return self.deny(session, ctx, d).await,
        };
        let head = RequestHead::of(session.req_header(), &ctx.trace);
        let facts = head.facts(&r, &parsed, &self.default_data_class, &body);
        // A breaking change that falls back sends new delegations to the fallback integration:
        // its state (profile, upstream) serves the request from here on.
        let state = match policy::lock_route(&snapshot, &state, policy::method_of(&facts)) {
            Ok(s) => s,
            Err(d) => return self.deny(session, ctx, d).await,
        };
        ctx.state = Some(state.clone());
        let plan = match policy::decide(&state, &facts) {
            Ok(p) => p,
            Err(d) => return self.deny(session, ctx, d).await,
        };
        self.forward(session, ctx, &state, &plan, &facts, &body)
            .await
    }
}

/// A request body's facts, from its one parse (see [`super::body`]).
#[derive(Default)]
struct BodyFacts {
    /// The JSON-RPC request (JSON-RPC route).
    rpc: Option<RpcRequest>,
    /// The HTTP+JSON body's facts (HTTP+JSON route).
    rest: Option<RequestFacts>,
}

/// Checks the Content-Type (the outer error: a refusal now) and parses the body for route `r`. The
/// JSON-RPC id goes into `ctx.shape` as soon as it is read; a body that cannot be used (the inner
/// error) is refused only after the integration's own refusals (unknown, not usable), which then
/// keep the caller's id too.
fn parse_body(
    r: &Route,
    req: &RequestHeader,
    body: &Bytes,
    ctx: &mut Ctx,
) -> std::result::Result<std::result::Result<BodyFacts, Deny>, Deny> {
    let content_type = req.headers.get("content-type").map(|v| v.as_bytes());
    policy::check_content_type(r, content_type, !body.is_empty())?;
    Ok(match r {
        Route::JsonRpc { .. } => match parse_jsonrpc(body) {
            Ok(rpc) => {
                ctx.shape = Shape::JsonRpc(rpc.id.clone());
                ctx.method = rpc.method;
                Ok(BodyFacts {
                    rpc: Some(rpc),
                    rest: None,
                })
            }
            Err(e) => {
                ctx.shape = Shape::JsonRpc(e.id);
                Err(e.error.into())
            }
        },
        Route::Rest { path, .. } => {
            let sends = Method::from_rest(req.method.as_str(), path).sends_message();
            parse_rest_body(body, sends)
                .map(|facts| BodyFacts {
                    rpc: None,
                    rest: Some(facts),
                })
                .map_err(Deny::from)
        }
        Route::Card { .. } | Route::Jwks | Route::NotFound => Ok(BodyFacts::default()),
    })
}

/// Owned copies of what policy reads from the request head, so the same facts can be decided
/// again against a refreshed profile after -32008/-32009 (the session is busy by then). The
/// method and the `A2A-Version` value are kept as they came (a standard method is a constant, a
/// header value shares the request's bytes), so keeping them allocates nothing.
struct RequestHead {
    http_method: http::Method,
    query: Option<String>,
    /// Every `A2A-Egress-Data-Class` line.
    data_class: DataClasses,
    /// The first `A2A-Version` line (read as text where the facts are made).
    a2a_version: Option<http::HeaderValue>,
    /// An id unique to this call, whatever the caller's `X-Request-Id` (which a caller may
    /// reuse): [`Facts::request_id`].
    call_id: super::trace::RequestId,
}

impl RequestHead {
    fn of(req: &RequestHeader, trace: &super::trace::Trace) -> RequestHead {
        RequestHead {
            http_method: req.method.clone(),
            query: req.uri.query().map(str::to_owned),
            data_class: DataClasses::from_lines(
                req.headers
                    .get_all("a2a-egress-data-class")
                    .iter()
                    .map(|v| v.as_bytes()),
            ),
            a2a_version: req.headers.get("a2a-version").cloned(),
            call_id: trace.unique_id(),
        }
    }

    fn facts<'a>(
        &'a self,
        route: &'a Route,
        parsed: &'a BodyFacts,
        default_data_class: &'a str,
        body: &'a [u8],
    ) -> Facts<'a> {
        Facts {
            route,
            http_method: self.http_method.as_str(),
            query: self.query.as_deref(),
            data_class: &self.data_class,
            a2a_version: self.a2a_version.as_ref().and_then(|v| v.to_str().ok()),
            rpc: parsed.rpc.as_ref(),
            rest_body: parsed.rest.as_ref(),
            default_data_class,
            body,
            request_id: self.call_id.as_str(),
        }
    }
}

#[async_trait]
impl ProxyHttp for Gateway {
    type CTX = Ctx;

    fn new_ctx(&self) -> Ctx {
        self.metrics.inflight.inc();
        let slot = self.limits.admit();
        Ctx {
            snapshot: None,
            integration: None,
            state: None,
            method: Method::Unknown,
            body: Bytes::new(),
            shape: Shape::Rest,
            outcome: None,
            started: Instant::now(),
            upstream_status: 0,
            trace: Trace::unset(),
            upstream_time: Duration::ZERO,
            upstream_done: None,
            downgrade: None,
            overloaded: slot.is_none().then_some(Cap::Inflight),
            guard: String::new(),
            spans: None,
            _inflight: Inflight(self.metrics.inflight.clone()),
            _slot: slot,
        }
    }

    async fn early_request_filter(&self, session: &mut Session, ctx: &mut Ctx) -> Result<()> {
        ctx.snapshot = Some(self.store.load());
        ctx.trace = Trace::of(&session.req_header().headers);
        if let Some(t) = &self.telemetry {
            let (trace, req) = (&ctx.trace, session.req_header());
            let spans = t.server(
                trace.traceparent.as_ref(),
                trace.tracestate.as_ref(),
                req.method.as_str(),
            );
            ctx.spans = Some(spans);
        }
        // A caller that stops reading its answer holds the call no longer than this per write
        // (pingora sets no write deadline of its own).
        crate::seam::set_write_timeout(session, self.limits.write_timeout);
        // The header is read: its deadline stops, and a connection over the cap is refused.
        if let Some(cap) = limits::header_read() {
            ctx.overloaded = Some(cap);
        }
        Ok(())
    }

    async fn request_filter(&self, session: &mut Session, ctx: &mut Ctx) -> Result<bool> {
        // Every line the call logs beside its access line (a retry, a stale mark, an answer that
        // is not A2A, a deadline) names the call's request id, through this span's one field;
        // the access line carries it as a field of its own. At ERROR level, so a filter that
        // lets any line through (`warn`, `error`) keeps the span, and with it the id.
        let span = tracing::error_span!("call", request_id = %ctx.trace.id.as_str());
        self.filter(session, ctx).instrument(span).await
    }

    /// Required by `ProxyHttp`, never reached: pingora asks for a peer only when
    /// `request_filter` returns `Ok(false)`, and the gateway's returns `Ok(true)` on every path
    /// (it answers each request itself, through `proxy::client`, or refuses it) or an error.
    /// Were it reached, it connects nowhere: the error goes to `fail_to_proxy`, which answers
    /// 502 `UPSTREAM_UNAVAILABLE` in the caller's protocol.
    async fn upstream_peer(&self, _session: &mut Session, _ctx: &mut Ctx) -> Result<Box<HttpPeer>> {
        Error::e_explain(
            ErrorType::InternalError,
            "pingora's upstream path is not used",
        )
    }

    /// What pingora writes about the request in its error lines ("Fail to filter request: …").
    /// Its default is the caller's method, path and Host as sent, which would put caller bytes
    /// (control characters, bidi marks, secrets in a query) into an ERROR line; this names only
    /// what the gateway decided: the integration (a configured name), the operation and the
    /// request id (id characters only).
    fn request_summary(&self, _session: &Session, ctx: &Ctx) -> String {
        format!(
            "integration: {}, method: {}, request_id: {}",
            ctx.integration_name().unwrap_or("-"),
            ctx.method.as_str(),
            ctx.trace.id.as_str()
        )
    }

    fn suppress_error_log(&self, _session: &Session, ctx: &Ctx, _error: &Error) -> bool {
        // A caller that left or stopped reading is no failure of the gateway's (counted as
        // `client_closed` and, for a write timeout, in `downstream_timeouts_total`).
        matches!(ctx.outcome, Some(Outcome::ClientClosed))
    }

    async fn fail_to_proxy(&self, session: &mut Session, e: &Error, ctx: &mut Ctx) -> FailToProxy {
        if matches!(ctx.outcome, Some(Outcome::ClientClosed)) {
            // Nothing can reach the caller, and the connection is not kept for another request.
            return FailToProxy {
                error_code: 0,
                can_reuse_downstream: false,
            };
        }
        // Nothing written yet: answer in the caller's protocol, never pingora's HTML page, naming
        // the certificate check when TLS with the agent failed.
        let deny = tls_fault(e).map_or(Deny::UpstreamUnavailable, Deny::UpstreamTls);
        let code = if session.response_written().is_none() {
            let r = deny.render(&ctx.shape, ctx.integration_name());
            if let Err(err) = respond(
                session,
                r.status,
                &[("content-type", r.content_type)],
                r.body,
            )
            .await
            {
                tracing::debug!(error = %err, "could not send the 502 downstream");
            }
            r.status
        } else {
            0
        };
        // Outside `request_filter`'s span: the request id is named here.
        let request_id = ctx.trace.id.as_str();
        tracing::warn!(integration = ctx.label(), request_id, error = %e, "upstream call failed");
        ctx.outcome = Some(Outcome::UpstreamFailed);
        FailToProxy {
            error_code: code,
            can_reuse_downstream: false,
        }
    }

    async fn logging(&self, session: &mut Session, e: Option<&Error>, ctx: &mut Ctx) {
        let outcome = ctx.outcome.take().unwrap_or(if e.is_some() {
            Outcome::UpstreamFailed
        } else {
            Outcome::Ok
        });
        let (method, outcome_label) = (method_label(ctx.method), outcome_label(&outcome));
        let overhead = ctx.overhead().map(|d| d.as_secs_f64());
        (self.metrics).record_call(ctx.label(), method, outcome_label, overhead);
        if self.access_log {
            access_line(session, ctx, &outcome);
        }
        if let Some(spans) = ctx.spans.take() {
            spans.finish(&call_facts(session, ctx, &outcome));
        }
    }
}

/// What the call's SERVER span records (the access line's facts).
fn call_facts<'a>(
    session: &Session,
    ctx: &'a Ctx,
    outcome: &Outcome,
) -> crate::telemetry::Call<'a> {
    crate::telemetry::Call {
        method: ctx.method.as_str(),
        integration: ctx.label(),
        binding: match ctx.shape {
            Shape::JsonRpc(_) => crate::profile::Binding::JsonRpc.as_str(),
            Shape::Rest => crate::profile::Binding::HttpJson.as_str(),
        },
        protocol_version: None,
        outcome: outcome.as_str(),
        reason: match outcome {
            Outcome::Denied(d) => d.reason(),
            _ => "",
        },
        downgrade: ctx.downgrade.map_or("", |c| c.as_str()),
        status: session
            .response_written()
            .map(|r| r.status.as_u16())
            .unwrap_or(0),
        request_id: ctx.trace.id.as_str(),
    }
}

/// The one access line of a call: bounded values only (integration names from the config, enum
/// labels, numbers, a checked request id), never a header value, a path or a body.
fn access_line(session: &Session, ctx: &Ctx, outcome: &Outcome) {
    let status = session
        .response_written()
        .map(|r| r.status.as_u16())
        .unwrap_or(0);
    let reason = match outcome {
        Outcome::Denied(d) => d.reason(),
        _ => "",
    };
    // Unset only when the request was refused before its headers were read.
    let id = ctx.trace.id.or_generate();
    super::access::emit(&super::access::AccessLine {
        request_id: id.as_str(),
        integration: ctx.label(),
        method: ctx.method.as_str(),
        outcome: outcome.as_str(),
        reason,
        downgrade: ctx.downgrade.map_or("", |c| c.as_str()),
        guard: &ctx.guard,
        status,
        upstream_status: ctx.upstream_status,
        total_us: micros(ctx.started.elapsed()),
        upstream_us: micros(ctx.upstream_time),
        profile_version: ctx.snapshot.as_ref().map(|s| s.version).unwrap_or(0),
    });
}

/// The method as a metric label with its slot in the metrics' per-integration cache.
fn method_label(m: Method) -> Label {
    Label {
        slot: m as usize,
        value: m.as_str(),
    }
}

/// The outcome as a metric label with its slot in the metrics' per-integration cache.
fn outcome_label(o: &Outcome) -> Label {
    let slot = match o {
        Outcome::Ok => 0,
        Outcome::AgentError => 1,
        Outcome::Denied(_) => 2,
        Outcome::Downgraded => 3,
        Outcome::UpstreamFailed => 4,
        Outcome::ClientClosed => 5,
    };
    Label {
        slot,
        value: o.as_str(),
    }
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::metrics::{METHOD_SLOTS, OUTCOME_SLOTS};

    /// Every method and outcome has its own slot of the metrics' cache (a value past the end
    /// would still be counted, only without it).
    #[test]
    fn every_method_and_outcome_has_its_own_metric_slot() {
        let methods = [
            Method::SendMessage,
            Method::SendStreamingMessage,
            Method::GetTask,
            Method::ListTasks,
            Method::CancelTask,
            Method::SubscribeToTask,
            Method::CreatePushConfig,
            Method::GetPushConfig,
            Method::ListPushConfigs,
            Method::DeletePushConfig,
            Method::GetExtendedAgentCard,
            Method::Card,
            Method::Jwks,
            Method::Unknown,
        ];
        let slots: BTreeSet<usize> = methods.iter().map(|m| method_label(*m).slot).collect();
        assert_eq!(slots.len(), methods.len());
        assert!(slots.iter().all(|s| *s < METHOD_SLOTS), "{slots:?}");
        let outcomes = [
            Outcome::Ok,
            Outcome::AgentError,
            Outcome::Denied(Deny::UnknownIntegration),
            Outcome::Downgraded,
            Outcome::UpstreamFailed,
            Outcome::ClientClosed,
        ];
        let slots: BTreeSet<usize> = outcomes.iter().map(|o| outcome_label(o).slot).collect();
        assert_eq!(slots.len(), outcomes.len());
        assert!(slots.iter().all(|s| *s < OUTCOME_SLOTS), "{slots:?}");
    }
}
