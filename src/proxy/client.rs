//! Every call the gateway makes to an agent (I/O): unary calls, message sends, streaming calls,
//! downgrades and retries, through one client instead of pingora's proxy loop, so there is one
//! HTTP stack and one connection pool on the hot path.
//!
//! Why not pingora's retry: a refused stream is only recognisable from its first answer — an
//! HTTP 200 JSON body with -32004 instead of `text/event-stream` — and pingora cannot re-send a
//! request once a response body was read (its retry hooks replay at most 64 KiB, and only before
//! a response). Here the gateway sees the first answer before the caller sees anything, so it can
//! pass a real stream through event by event, retry a refused one as `SendMessage`, refresh and
//! retry after -32008/-32009, or hand the original error back unchanged. The request is shaped by
//! the pure functions of `shape`, from the request's snapshot, and sent over pingora's own
//! connector and pool (`exchange`) on the data plane's runtime.
//!
//! No call outlives its caller or its deadlines: every wait on the agent is raced against the
//! caller's connection and `[limits] upstream_*` (see `exchange`). A caller that hung up ends
//! the call at once (outcome `client_closed`, logged at debug: leaving is the caller's right); a
//! deadline passed before the caller got anything is answered 504 `UPSTREAM_TIMEOUT`, one passed
//! later cuts the answer; both are counted in `a2a_egress_upstream_timeouts_total`.

mod caller;
mod exchange;
mod grpc;
mod grpc_stream;
mod inbound;
mod reply;
mod screen;
mod vet;

use bytes::Bytes;
use pingora::http::RequestHeader;
use pingora::proxy::Session;
use pingora::{Error, ErrorType, OrErr, Result};

pub use super::call::Client;

use self::exchange::Answer;
pub use self::screen::EVIDENCE_GAP;
use self::screen::Screen;
use super::answer::{Invalid, passes_unread};
use super::call::{Ctx, Gateway, Outcome, refused_stream_evidence, respond};
use super::deny::Deny;
use super::feedback::{agent_error, as_method, as_send_message, send_succeeded};
use super::policy::{DowngradeCause, Plan, StreamPlan};
use super::retry::{self, Next, Redo};
use super::shape::upstream_headers;
use super::trace::Trace;
use super::upstream::TlsFault;
use crate::config::StreamingMode;
use crate::profile::Binding;
use crate::state::{IntegrationState, StaleCause, Upstream};

/// Largest unary answer held back to look for an A2A error (errors are small).
const MAX_HELD_ERROR: u64 = 64 * 1024;

/// Largest non-stream answer read into memory (a SendMessage result or an error); public because
/// a deployment's memory limit is sized from it (`deploy/kubernetes/sidecar.yaml`).
pub const MAX_ANSWER_BYTES: usize = 16 * 1024 * 1024;

/// Why a call through the gateway's own client failed before the caller got an answer.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The integration has no prepared upstream (it was not usable when the call was decided).
    #[error("the integration has no prepared upstream")]
    NoUpstream,
    /// The upstream request header cannot be built (method or path).
    #[error("the upstream request cannot be built: {0}")]
    Request(Box<pingora::Error>),
    /// No connection to the agent (refused, unreachable, timed out).
    #[error("connecting to the agent failed: {0}")]
    Connect(Box<pingora::Error>),
    /// The TLS handshake failed; `fault` names the certificate check that refused it.
    #[error("TLS with the agent failed ({fault}): {error}")]
    Tls {
        /// What was wrong.
        fault: TlsFault,
        /// pingora's error.
        error: Box<pingora::Error>,
    },
    /// Writing the request failed.
    #[error("sending the request to the agent failed: {0}")]
    Send(Box<pingora::Error>),
    /// Reading the answer failed (closed, reset, timed out, malformed).
    #[error("reading the agent's answer failed: {0}")]
    Receive(Box<pingora::Error>),
    /// A non-stream answer larger than the gateway holds in memory.
    #[error("the agent's answer exceeds the gateway's limit of {limit} bytes")]
    TooLarge {
        /// The limit, bytes.
        limit: usize,
    },
    /// The agent's answer is not an A2A answer (see [`crate::proxy::answer`]).
    #[error("the agent's answer (HTTP {status}) is not an A2A answer: {why}")]
    Invalid {
        /// What is wrong with it.
        why: Invalid,
        /// The agent's HTTP status.
        status: u16,
    },
    /// A deadline of `[limits]` passed while the gateway waited on the agent.
    #[error("the agent did not answer within the {} deadline", .0.as_str())]
    Timeout(Deadline),
    /// The caller closed its connection while the gateway waited on the agent.
    #[error("the caller closed its connection")]
    CallerGone,
    /// A gRPC call failed before the agent answered it (the channel, the connection, TLS,
    /// HTTP/2): what tonic said.
    #[error("gRPC: {0}")]
    Grpc(String),
}

/// Which deadline of a call to an agent passed (the `phase` label of
/// `a2a_egress_upstream_timeouts_total`, one of [`crate::metrics::UPSTREAM_TIMEOUT_PHASES`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deadline {
    /// `upstream_header_timeout`: the answer head, from sending the request.
    Header,
    /// `upstream_body_timeout`: a unary answer's body, from its head.
    Body,
    /// `upstream_idle_timeout`: the silence between two reads.
    Idle,
}

impl Deadline {
    /// Bounded label.
    pub fn as_str(self) -> &'static str {
        match self {
            Deadline::Header => "header",
            Deadline::Body => "body",
            Deadline::Idle => "idle",
        }
    }
}

impl ClientError {
    /// Bounded label for logs and metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            ClientError::NoUpstream => "no_upstream",
            ClientError::Request(_) => "request",
            ClientError::Connect(_) => "connect",
            ClientError::Tls { fault, .. } => fault.as_str(),
            ClientError::Send(_) => "send",
            ClientError::Receive(_) => "receive",
            ClientError::TooLarge { .. } => "too_large",
            ClientError::Invalid { .. } => "invalid_answer",
            ClientError::Timeout(Deadline::Header) => "header_timeout",
            ClientError::Timeout(Deadline::Body) => "body_timeout",
            ClientError::Timeout(Deadline::Idle) => "idle_timeout",
            ClientError::CallerGone => "caller_gone",
            ClientError::Grpc(_) => "grpc",
        }
    }

    /// The refusal the caller gets.
    fn deny(&self) -> Deny {
        match self {
            ClientError::Tls { fault, .. } => Deny::UpstreamTls(*fault),
            ClientError::Invalid { why, status } => Deny::InvalidAgentResponse {
                why: *why,
                status: *status,
            },
            ClientError::Timeout(_) => Deny::UpstreamTimeout,
            _ => Deny::UpstreamUnavailable,
        }
    }
}

/// Where the failures of one call's answer are counted and logged: the gateway's metrics and
/// the integration's name.
pub(super) struct Tally<'a> {
    gw: &'a Gateway,
    name: &'a str,
}

impl Tally<'_> {
    /// Counts and logs a deadline that passed.
    fn timed_out(&self, d: Deadline) {
        (self.gw.metrics.upstream_timeouts)
            .with_label_values(&[self.name, d.as_str()])
            .inc();
        tracing::warn!(
            integration = self.name,
            deadline = d.as_str(),
            "the agent did not answer in time; the call was cancelled"
        );
    }

    /// Logs a caller that hung up while its answer was passing through.
    pub(super) fn gone(&self, what: &str) {
        tracing::debug!(
            integration = self.name,
            body = what,
            "the caller hung up; the call to the agent was cancelled"
        );
    }

    /// An upstream body that failed after the answer's head went to the caller: counted and
    /// logged, and made the error that drops the caller's connection. Only an error does that
    /// before pingora ends the body (an ended chunked body would look complete).
    pub(super) fn cut(&self, e: ClientError, what: &str) -> Box<Error> {
        match &e {
            ClientError::Timeout(d) => self.timed_out(*d),
            _ => tracing::warn!(
                integration = self.name,
                error = %e,
                kind = e.kind(),
                body = what,
                "upstream body broke"
            ),
        }
        Error::explain(ErrorType::ReadError, format!("upstream {what} cut: {e}"))
    }
}

/// What the gateway's client was asked to do: the call as policy planned it.
pub struct Call<'a> {
    /// The integration state the plan was made from.
    pub state: &'a IntegrationState,
    /// The plan.
    pub plan: &'a Plan,
    /// What the retry after -32008/-32009 needs to decide the request again.
    pub redo: &'a Redo<'a>,
    /// Whether -32008/-32009 may be answered by one refresh-and-retry (message sends, with a
    /// control plane); otherwise the agent's error goes back unchanged and marks the profile stale.
    pub may_retry: bool,
}

/// One attempt: the state and plan it is shaped from, and whether a refresh-and-retry after
/// -32008/-32009 is still allowed (never twice).
#[derive(Clone, Copy)]
struct Attempt<'a> {
    state: &'a IntegrationState,
    plan: &'a Plan,
    may_retry: bool,
}

impl Attempt<'_> {
    fn name(&self) -> &str {
        &self.state.integration.name
    }
}

/// What an attempt sends: the path, the body, and whether a large non-SSE answer may be passed
/// through as it arrives (only for the caller's own request, never for a `SendMessage` whose
/// answer must be re-framed).
struct Outgoing<'a> {
    path: &'a str,
    body: Bytes,
    pass_large: bool,
    /// The SendMessage form of a streaming call (a downgrade, or a refused stream's retry).
    downgraded: bool,
}

enum Sent<'c> {
    /// The agent is streaming SSE: pass it through.
    Stream(exchange::Response<'c>),
    /// A non-SSE answer too big to be an A2A error: pass it through as it arrives.
    Large(exchange::Response<'c>),
    /// A complete non-SSE answer.
    Whole(Answer),
}

impl Sent<'_> {
    /// The answer's HTTP status.
    fn status(&self) -> u16 {
        match self {
            Sent::Stream(r) | Sent::Large(r) => r.status(),
            Sent::Whole(a) => a.status(),
        }
    }
}

/// Makes the call described by `call` through the gateway's own client and answers the caller.
pub async fn call(
    gw: &Gateway,
    session: &mut Session,
    ctx: &mut Ctx,
    call: Call<'_>,
) -> Result<Outcome> {
    let at = Attempt {
        state: call.state,
        plan: call.plan,
        may_retry: call.may_retry,
    };
    match attempt(gw, session, ctx, call.redo, at).await {
        // Writing to the caller failed: it left (a reset, or a close seen only by the write),
        // or it stopped reading for longer than `[limits] write_timeout` (counted). The call
        // ended with its caller, like a hang-up seen while waiting on the agent.
        Err(e) if *e.etype() == ErrorType::WriteTimedout => {
            // The socket is full and stays full: the error path drops the connection, where
            // finishing the answer would wait on it again, with no deadline.
            (gw.metrics.downstream_timeouts)
                .with_label_values(&[super::limits::Phase::Write.as_str()])
                .inc();
            tracing::debug!(
                integration = at.name(),
                "the caller stopped reading its answer; the call is cut at the write timeout"
            );
            ctx.outcome = Some(Outcome::ClientClosed);
            Err(e)
        }
        Err(e) if *e.etype() == ErrorType::WriteError => {
            session.set_keepalive(None);
            tracing::debug!(
                integration = at.name(),
                error = %e,
                "the caller left while its answer was written"
            );
            Ok(Outcome::ClientClosed)
        }
        done => done,
    }
}

/// One attempt's future (see [`attempt`]).
type Boxed<'a> = std::pin::Pin<Box<dyn std::future::Future<Output = Result<Outcome>> + Send + 'a>>;

/// One attempt, by how the plan streams.
///
/// Boxed with a named type: the retry calls this function again, and a recursive `async fn`'s
/// future cannot be proven `Send` otherwise.
fn attempt<'a>(
    gw: &'a Gateway,
    session: &'a mut Session,
    ctx: &'a mut Ctx,
    redo: &'a Redo<'a>,
    at: Attempt<'a>,
) -> Boxed<'a> {
    Box::pin(async move {
        let mut job = Job {
            gw,
            session,
            ctx,
            redo,
        };
        // Every call moves this future into a box, so it holds only what the unary call needs
        // (a few kilobytes less to copy per call); streams and downgrades are boxed where they
        // run, as are the unary call's own rare turns (see [`Job::unary`]).
        match at.plan.stream {
            StreamPlan::Unary => job.unary(at).await,
            StreamPlan::Downgrade(cause) => Box::pin(job.downgrade(at, cause)).await,
            StreamPlan::Stream => Box::pin(job.stream(at)).await,
        }
    })
}

/// The request being answered: the gateway, the caller's session and context, and what a retry
/// needs.
struct Job<'a> {
    gw: &'a Gateway,
    session: &'a mut Session,
    ctx: &'a mut Ctx,
    redo: &'a Redo<'a>,
}

impl<'a> Job<'a> {
    /// The caller's own request, forwarded as planned.
    ///
    /// Only the usual path (a whole answer passed through) is awaited inline; a stream, a large
    /// answer, a failure or a retry is boxed where it happens, so this future stays small.
    async fn unary(&mut self, at: Attempt<'_>) -> Result<Outcome> {
        // An enforced schema needs the whole answer before the caller sees any of it.
        let enforced = self.screen(at).is_some_and(|s| s.enforcing());
        let out = Outgoing {
            path: &at.plan.upstream_path,
            body: self.ctx.body.clone(),
            pass_large: !enforced,
            downgraded: false,
        };
        let a = match self.send(at, out).await {
            Ok(Sent::Whole(a)) => a,
            Ok(Sent::Stream(resp)) => return Box::pin(self.pipe_stream(at, resp)).await,
            Ok(Sent::Large(resp)) => return Box::pin(self.pipe_large(at, resp)).await,
            Err(e) => return Box::pin(self.failed(at, e)).await,
        };
        if let Some(cause) = retry_cause(at, &a) {
            return Box::pin(self.retry_once(at, cause, a)).await;
        }
        let err = self.feed_back(at, &a);
        if let Some(d) = self.screen_whole(at, &a) {
            return self.refuse(d).await;
        }
        reply::pass_through(self.session, a).await?;
        Ok(if err {
            Outcome::AgentError
        } else {
            Outcome::Ok
        })
    }

    /// A streaming call the profile answers through `SendMessage`, as one SSE event.
    async fn downgrade(&mut self, at: Attempt<'_>, cause: DowngradeCause) -> Result<Outcome> {
        let out = Outgoing {
            path: &at.plan.send_path,
            body: send_message_body(at.plan, &self.ctx.body),
            pass_large: false,
            downgraded: true,
        };
        let a = match self.send(at, out).await {
            Ok(Sent::Whole(a)) => a,
            // An agent that streams a SendMessage answer: pass it on as it is.
            Ok(Sent::Stream(resp)) => return self.pipe_stream(at, resp).await,
            // Never produced without `pass_large`.
            Ok(Sent::Large(resp)) => return self.pipe_large(at, resp).await,
            Err(e) => return self.failed(at, e).await,
        };
        if send_succeeded(at.plan.binding, a.status(), &a.body) {
            self.gw
                .metrics
                .downgrades
                .with_label_values(&[at.name(), cause.as_str()])
                .inc();
            self.ctx.downgrade = Some(cause);
            if let Some(d) = self.screen_whole(at, &a) {
                return self.refuse(d).await;
            }
            reply::one_event(self.session, &a).await?;
            return Ok(Outcome::Downgraded);
        }
        if let Some(cause) = retry_cause(at, &a) {
            return self.retry_once(at, cause, a).await;
        }
        self.feed_back(at, &a);
        reply::pass_through(self.session, a).await?;
        Ok(Outcome::AgentError)
    }

    /// A streaming call sent as a stream; a refusal (-32004) is retried once as `SendMessage`.
    async fn stream(&mut self, at: Attempt<'_>) -> Result<Outcome> {
        let out = Outgoing {
            path: &at.plan.upstream_path,
            body: self.ctx.body.clone(),
            pass_large: false,
            downgraded: false,
        };
        let first = match self.send(at, out).await {
            Ok(Sent::Whole(a)) => a,
            Ok(Sent::Stream(resp)) => return self.pipe_stream(at, resp).await,
            Ok(Sent::Large(resp)) => return self.pipe_large(at, resp).await,
            Err(e) => return self.failed(at, e).await,
        };
        if let Some(cause) = retry_cause(at, &first) {
            return self.retry_once(at, cause, first).await;
        }
        let refused = agent_error(at.plan.binding, first.status(), &first.body)
            .is_some_and(|e| e.is_unsupported_operation());
        if !refused {
            self.feed_back(at, &first);
            reply::pass_through(self.session, first).await?;
            return Ok(Outcome::AgentError);
        }
        self.refused_stream(at, first).await
    }

    /// The agent refused a stream its card claims: unless streaming is required, the same
    /// request goes out as `SendMessage`, and streaming stays off until the next refresh if that
    /// works. Otherwise the caller gets the agent's first answer, unchanged.
    async fn refused_stream(&mut self, at: Attempt<'_>, first: Answer) -> Result<Outcome> {
        let name = at.name();
        self.gw.mark_stale(name, StaleCause::UnsupportedOperation);
        if at.state.integration.streaming == StreamingMode::Required {
            // Seed 003: never silently downgrade a required feature. The integration is marked
            // for review (stale mark above, evidence here) and the caller gets the agent's error.
            self.gw.store.update_integration(name, |cur| {
                cur.with_evidence(refused_stream_evidence().remove(0))
            });
            reply::pass_through(self.session, first).await?;
            return Ok(Outcome::AgentError);
        }
        let out = Outgoing {
            path: &at.plan.send_path,
            body: send_message_body(at.plan, &self.ctx.body),
            pass_large: false,
            downgraded: true,
        };
        match self.send(at, out).await {
            Ok(Sent::Whole(a)) if send_succeeded(at.plan.binding, a.status(), &a.body) => {
                self.gw
                    .override_streaming_off(at.state, refused_stream_evidence());
                self.gw
                    .metrics
                    .downgrades
                    .with_label_values(&[name, DowngradeCause::Refused.as_str()])
                    .inc();
                self.ctx.downgrade = Some(DowngradeCause::Refused);
                tracing::warn!(
                    integration = name,
                    "agent refused a stream its card claims; answered via SendMessage, streaming off until refresh"
                );
                if let Some(d) = self.screen_whole(at, &a) {
                    return self.refuse(d).await;
                }
                reply::one_event(self.session, &a).await?;
                Ok(Outcome::Downgraded)
            }
            Err(ClientError::CallerGone) => self.failed(at, ClientError::CallerGone).await,
            _ => {
                // The retry failed too: the caller gets the agent's first answer, unchanged.
                reply::pass_through(self.session, first).await?;
                Ok(Outcome::AgentError)
            }
        }
    }

    /// After -32008/-32009: refresh, and either answer the agent's error `first` unchanged, the
    /// new profile's refusal, or the result of one attempt decided and shaped from the new profile
    /// (which may stream, or downgrade, differently from the first).
    async fn retry_once(
        &mut self,
        at: Attempt<'_>,
        cause: StaleCause,
        first: Answer,
    ) -> Result<Outcome> {
        match retry::after_error(self.gw, at.state, at.plan, cause, self.redo).await {
            Next::Original => {
                reply::pass_through(self.session, first).await?;
                Ok(Outcome::AgentError)
            }
            Next::Refused(d) => self.refuse(d).await,
            Next::Retry {
                snapshot,
                state,
                plan,
                body,
            } => {
                // The rest of the request (log line, metrics) belongs to the snapshot the retry used.
                self.ctx.snapshot = Some(snapshot);
                self.ctx.state = Some(state.clone());
                self.ctx.body = body;
                // A second refusal is answered as it is (and marks stale).
                let next = Attempt {
                    state: &state,
                    plan: &plan,
                    may_retry: false,
                };
                attempt(self.gw, self.session, self.ctx, self.redo, next).await
            }
        }
    }

    /// The artifact schema the attempt's answers are held to, if the integration names one.
    fn screen(&self, at: Attempt<'a>) -> Option<Screen<'a>> {
        Screen::of(self.gw, at.state, at.plan.binding)
    }

    /// Checks a whole answer against the artifact schema: the refusal to send instead when the
    /// schema is enforced and the answer does not hold to it.
    fn screen_whole(&self, at: Attempt<'_>, a: &Answer) -> Option<Deny> {
        let screen = Screen::of(self.gw, at.state, at.plan.binding)?;
        let ok = (200..300).contains(&a.status());
        let v = screen.check(ok, &a.body)?;
        screen.enforcing().then(|| screen::refusal(&v))
    }

    /// Answers the caller with a refusal instead of the agent's answer.
    async fn refuse(&mut self, d: Deny) -> Result<Outcome> {
        let outcome = Outcome::Denied(d.clone());
        self.gw.deny(self.session, self.ctx, d).await?;
        Ok(outcome)
    }

    /// Where this attempt's failures are counted.
    fn tally<'t>(&self, at: Attempt<'t>) -> Tally<'t>
    where
        'a: 't,
    {
        Tally {
            gw: self.gw,
            name: &at.state.integration.name,
        }
    }

    /// Passes an SSE answer through, held to the artifact schema when there is one.
    async fn pipe_stream(
        &mut self,
        at: Attempt<'_>,
        resp: exchange::Response<'_>,
    ) -> Result<Outcome> {
        // Every stream is held to being A2A, event by event; the schema, when there is one, too.
        let screen = Screen::of(self.gw, at.state, at.plan.binding);
        let keep_ids = self.ctx.spans.is_some();
        let events = vet::Events::of(self.gw, at, &self.ctx.shape, resp.status(), keep_ids);
        let tally = self.tally(at);
        let out = screen::pipe_stream(
            self.session,
            resp,
            screen.as_ref(),
            &events,
            &self.ctx.shape,
            &tally,
        )
        .await;
        if let (Some((task, context)), Some(spans)) = (events.into_ids(), &mut self.ctx.spans) {
            spans.task_ids(task.as_deref(), context.as_deref());
        }
        out
    }

    /// Passes a large answer through, checked against the artifact schema when there is one.
    async fn pipe_large(
        &mut self,
        at: Attempt<'_>,
        resp: exchange::Response<'_>,
    ) -> Result<Outcome> {
        let tally = self.tally(at);
        match Screen::of(self.gw, at.state, at.plan.binding) {
            Some(s) => screen::pipe_large(self.session, resp, &s, &tally).await,
            None => reply::pipe_large(self.session, resp, &tally).await,
        }
    }

    /// Sends one request of the attempt (see [`send`]); the wait and the answer's status go
    /// into the request's context (access line, overhead).
    async fn send(
        &mut self,
        at: Attempt<'_>,
        out: Outgoing<'_>,
    ) -> std::result::Result<Sent<'a>, ClientError> {
        self.begin_span(at, &out);
        let out_downgraded = out.downgraded;
        let started = std::time::Instant::now();
        let sent = if at.plan.dialect.grpc() {
            self.send_grpc(at, out).await
        } else {
            send(self.gw, self.session, &self.ctx.trace, at, out).await
        };
        self.ctx.upstream_answered(started);
        if let Ok(s) = &sent {
            self.ctx.upstream_status = s.status();
        }
        let spans = (self.ctx.spans.as_mut()).filter(|_| vet::names_the_task(at.plan.method));
        let shape = &self.ctx.shape;
        let vetted = sent.and_then(|s| vet::vet(self.gw, at, shape, s, out_downgraded, spans));
        if let Some(spans) = &mut self.ctx.spans {
            match &vetted {
                Ok(s) => spans.answered(s.status(), matches!(s, Sent::Whole(_))),
                Err(e) => spans.failed(e.kind()),
            }
        }
        vetted
    }

    /// Sends one request of the attempt to a gRPC agent ([`grpc`]): the planned rpc with the
    /// shaped headers as metadata, answered as a JSON-RPC agent would (the caller's `id`).
    async fn send_grpc(
        &mut self,
        at: Attempt<'_>,
        out: Outgoing<'_>,
    ) -> std::result::Result<Sent<'a>, ClientError> {
        let up = at.state.upstream().ok_or(ClientError::NoUpstream)?;
        let shaped = upstream_headers(
            &self.session.req_header().headers,
            at.state,
            up,
            at.plan,
            out.body.len(),
            &self.ctx.trace,
        );
        let rpc = grpc::Rpc {
            path: out.path,
            body: out.body,
            metadata: grpc::metadata(shaped),
            face: match vet::request_id(&self.ctx.shape) {
                Some(id) => grpc::Face::JsonRpc(id.to_owned()),
                None => grpc::Face::Rest,
            },
            v03: at.plan.dialect.translates(),
        };
        let started = std::time::Instant::now();
        let sent = grpc::send(up, rpc, self.session, &self.gw.limits.upstream).await;
        observe(self.gw, at, started, &sent);
        if let Err(ClientError::Invalid { why, status }) = &sent {
            vet::report(self.gw, at.name(), *why, *status);
        }
        sent
    }

    /// With tracing on, starts the CLIENT span of the request about to be sent, whose id the
    /// request's `traceparent` carries.
    fn begin_span(&mut self, at: Attempt<'_>, out: &Outgoing<'_>) {
        let (Some(t), Some(spans)) = (&self.gw.telemetry, &mut self.ctx.spans) else {
            return;
        };
        let method = if out.downgraded {
            super::route::Method::SendMessage
        } else {
            at.plan.method
        };
        let authority = at.state.upstream().map_or("", |u| u.authority.as_str());
        let attempt = crate::telemetry::Attempt {
            method: method.as_str(),
            protocol_version: &at.plan.version,
            downgraded: out.downgraded,
            // The method that leaves (a 0.3 HTTP+JSON subscription is a GET whatever came).
            http_method: (at.plan.upstream_method)
                .unwrap_or_else(|| self.session.req_header().method.as_str()),
            authority,
        };
        self.ctx.trace.parent = spans.attempt(t, &attempt);
    }

    /// Reports an agent error that marks the profile stale; `true` when the answer is an error.
    fn feed_back(&self, at: Attempt<'_>, a: &Answer) -> bool {
        let err = agent_error(at.plan.binding, a.status(), &a.body);
        if let Some(cause) = err.as_ref().and_then(|e| e.stale_cause()) {
            self.gw.mark_stale(at.name(), cause);
        }
        err.is_some() || a.status() >= 400
    }

    /// The agent could not be reached (or failed before a usable answer): a protocol-shaped 502,
    /// or 504 when a deadline passed. A caller that hung up gets nothing.
    async fn failed(&mut self, at: Attempt<'_>, e: ClientError) -> Result<Outcome> {
        if let ClientError::Invalid { .. } = e {
            // Counted and logged where it was found ([`vet`]); a refusal like any other.
            return self.refuse(e.deny()).await;
        }
        match &e {
            ClientError::CallerGone => {
                // Nothing more is written, and the connection is not kept for a next request.
                self.session.set_keepalive(None);
                tracing::debug!(
                    integration = at.name(),
                    "the caller hung up; the call to the agent was cancelled"
                );
                return Ok(Outcome::ClientClosed);
            }
            ClientError::Timeout(d) => self.tally(at).timed_out(*d),
            _ => {
                tracing::warn!(integration = at.name(), error = %e, kind = e.kind(), "upstream call failed")
            }
        }
        let r = e
            .deny()
            .render(&self.ctx.shape, self.ctx.integration_name());
        respond(
            self.session,
            r.status,
            &[("content-type", r.content_type)],
            r.body,
        )
        .await?;
        Ok(Outcome::UpstreamFailed)
    }
}

/// Sends one request of an attempt and reads as much of the answer as deciding the caller's
/// answer needs: the header for a stream or a large answer, else the whole (small) body.
async fn send<'g>(
    gw: &'g Gateway,
    caller: &mut Session,
    trace: &Trace,
    at: Attempt<'_>,
    out: Outgoing<'_>,
) -> std::result::Result<Sent<'g>, ClientError> {
    let up = at
        .state
        .upstream()
        .map(|u| &**u)
        .ok_or(ClientError::NoUpstream)?;
    // Built from the caller's header just before each connection is tried, so the header is not
    // borrowed while the call is raced against the caller's connection, and built again only if
    // a pooled connection turns out closed before any answer (rare), rather than copied for
    // every call in case it is.
    let build = |caller: &RequestHeader| request_header(caller, at, up, &out, trace);
    let started = std::time::Instant::now();
    let resp = (gw.client)
        .send(
            up,
            &build,
            &out.body,
            caller,
            &gw.limits.upstream,
            at.plan.method.replayable(),
        )
        .await;
    observe(gw, at, started, &resp);
    let resp = resp?;
    if resp.is_sse() {
        return Ok(Sent::Stream(resp));
    }
    // A unary answer is held only while it can still be an error worth acting on (errors are
    // small); a big result goes to the caller as it arrives.
    // Only one whose header says JSON in identity: any other is read (and decoded) whole and
    // judged by its bytes ([`vet`]). Never a JSON-RPC answer: its `id` must be the request's,
    // which only reading it shows (another request's answer would otherwise pass), and it is
    // read within the same answer cap as any.
    let large = resp.content_length().is_some_and(|n| n > MAX_HELD_ERROR);
    // Never a 0.3 agent's, nor one in the binding the caller does not speak: their bytes reach
    // the caller only translated.
    let rest =
        at.plan.binding == Binding::HttpJson && !at.plan.dialect.translates() && !at.plan.crosses();
    if out.pass_large && rest && large && passes_unread(&resp.head().headers) {
        return Ok(Sent::Large(resp));
    }
    Ok(Sent::Whole(resp.read_all(MAX_ANSWER_BYTES, caller).await?))
}

/// Times one call to the agent (`a2a_egress_upstream_duration_seconds`, by protocol and binding), unless the
/// caller left first: that wait is the caller's, not the agent's.
fn observe<T>(
    gw: &Gateway,
    at: Attempt<'_>,
    started: std::time::Instant,
    sent: &std::result::Result<T, ClientError>,
) {
    if !matches!(sent, Err(ClientError::CallerGone)) {
        let dialect = at.plan.dialect;
        (gw.metrics).observe_upstream(at.name(), dialect, started.elapsed().as_secs_f64());
    }
}

/// The upstream request header of one request of an attempt: the caller's method (or the one
/// the plan names for the agent), the planned path and the shaped headers ([`upstream_headers`]).
///
/// Without a case map, and the shaped pairs go straight into the header map: every shaped name is
/// already a lowercase `HeaderName`, which pingora's `append_header` would turn into a title-cased
/// copy and parse back, for each header of every call.
fn request_header(
    caller: &RequestHeader,
    at: Attempt<'_>,
    up: &Upstream,
    out: &Outgoing<'_>,
    trace: &Trace,
) -> std::result::Result<Box<RequestHeader>, ClientError> {
    let shaped = upstream_headers(
        &caller.headers,
        at.state,
        up,
        at.plan,
        out.body.len(),
        trace,
    );
    let method = match at.plan.upstream_method {
        Some(m) => http::Method::from_bytes(m.as_bytes())
            .or_err(ErrorType::InvalidHTTPHeader, "the planned method")
            .map_err(ClientError::Request)?,
        None => caller.method.clone(),
    };
    let req = RequestHeader::build_no_case(method, out.path.as_bytes(), Some(shaped.len()))
        .map_err(ClientError::Request)?;
    let mut parts = http::request::Parts::from(req);
    for (n, v) in shaped {
        parts
            .headers
            .try_append(n, v)
            .or_err(ErrorType::InvalidHTTPHeader, "too many upstream headers")
            .map_err(ClientError::Request)?;
    }
    let mut req = RequestHeader::from(parts);
    // An origin-form target (every planned path) is written from the URI, which the parts keep;
    // any other form keeps its bytes only in the header, so it is set again.
    if !out.path.starts_with('/') {
        req.set_raw_path(out.path.as_bytes())
            .map_err(ClientError::Request)?;
    }
    Ok(Box::new(req))
}

/// The -32008/-32009 in an answer, when it is one and the attempt may still retry (the errors a
/// refresh-and-retry may fix).
fn retry_cause(at: Attempt<'_>, a: &Answer) -> Option<StaleCause> {
    if !at.may_retry {
        return None;
    }
    agent_error(at.plan.binding, a.status(), &a.body)
        .and_then(|e| e.stale_cause())
        .filter(|c| retry::retries(*c))
}

/// The SendMessage form of the request about to be sent (`held`): the same bytes with the
/// JSON-RPC method replaced; an HTTP+JSON body is the same for `message:send` as for
/// `message:stream`, and a gRPC request for both rpcs.
fn send_message_body(plan: &Plan, held: &Bytes) -> Bytes {
    // What the agent reads decides (a request moved to the other binding is the agent's): a gRPC
    // SendMessageRequest is the same message for SendMessage and SendStreamingMessage.
    if plan.dialect.binding != Binding::JsonRpc {
        return held.clone();
    }
    let sent = if plan.dialect.translates() {
        as_method(held, "\"message/send\"")
    } else {
        as_send_message(held)
    };
    sent.unwrap_or_else(|| {
        // Cannot happen for a request the router parsed as a JSON-RPC object with a method.
        tracing::warn!("request body has no JSON-RPC method to rewrite; sent unchanged");
        held.clone()
    })
}
