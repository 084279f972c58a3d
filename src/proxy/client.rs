//! Calls made through the gateway's own HTTP client instead of pingora's proxy loop (I/O):
//! streaming calls, downgrades, and bodies too big for pingora's replay buffer.
//!
//! Why not pingora's retry: a refused stream is only recognisable from its first answer — an
//! HTTP 200 JSON body with -32004 instead of `text/event-stream` — and pingora cannot re-send a
//! request once a response body was read (its retry hooks replay at most 64 KiB, and only before
//! a response). Here the gateway sees the first answer before the caller sees anything, so it can
//! pass a real stream through event by event, retry a refused one as `SendMessage`, or hand the
//! original error back unchanged. The request is shaped by the same pure functions as the
//! pingora path, from the same snapshot.

use bytes::{Bytes, BytesMut};
use pingora::http::ResponseHeader;
use pingora::proxy::Session;
use pingora::{Error, ErrorType, Result};

use super::deny::Deny;
use super::feedback::{agent_error, send_succeeded, sse_event};
use super::gateway::{Gateway, Outcome, refused_stream_evidence, respond};
use super::policy::{DowngradeCause, Plan, StreamPlan};
use super::retry::{self, Next, Redo};
use super::route::RpcRequest;
use super::shape::plan_headers;
use crate::config::StreamingMode;
use crate::profile::Binding;
use crate::profile::snapshot::{IntegrationState, StaleCause};

/// Largest unary answer held back to look for an A2A error (as pingora's path copies).
const MAX_HELD_ERROR: usize = 64 * 1024;

/// Largest non-stream answer read into memory (a SendMessage result or an error).
const MAX_ANSWER_BYTES: usize = 16 * 1024 * 1024;

/// A fully read answer.
struct Answer {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: Bytes,
}

enum Sent {
    /// The agent is streaming SSE: pass it through.
    Stream(reqwest::Response),
    /// A non-SSE answer too big to be an A2A error: pass it through as it arrives.
    Large(reqwest::Response),
    /// A complete non-SSE answer.
    Whole(Answer),
}

fn upstream_err(e: impl std::fmt::Display) -> Box<Error> {
    Error::explain(ErrorType::ConnectError, format!("upstream: {e}"))
}

async fn send(
    state: &IntegrationState,
    plan: &Plan,
    session: &Session,
    path_and_query: &str,
    body: Bytes,
    pass_large: bool,
) -> std::result::Result<Sent, String> {
    let up = state.upstream.as_ref().ok_or("no upstream")?;
    let mut url = up.url.clone();
    let (path, query) = match path_and_query.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (path_and_query, None),
    };
    url.set_path(path);
    url.set_query(query);
    let mut headers = session.req_header().headers.clone();
    plan_headers(&headers, state, up, plan, None).apply(&mut headers);
    let method = reqwest::Method::from_bytes(session.req_header().method.as_str().as_bytes())
        .map_err(|e| e.to_string())?;
    let mut req = up.client.request(method, url).headers(headers);
    if !body.is_empty() {
        req = req.body(body);
    }
    let resp = req.send().await.map_err(|e| e.to_string())?;
    let is_sse = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|c| c.starts_with("text/event-stream"));
    if is_sse && resp.status().is_success() {
        return Ok(Sent::Stream(resp));
    }
    // A unary answer is held only while it can still be an error worth acting on (errors are
    // small); a big result goes to the caller as it arrives, as on pingora's path.
    if pass_large
        && resp
            .content_length()
            .is_some_and(|n| n > MAX_HELD_ERROR as u64)
    {
        return Ok(Sent::Large(resp));
    }
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let mut buf = BytesMut::new();
    let mut resp = resp;
    while let Some(chunk) = resp.chunk().await.map_err(|e| e.to_string())? {
        if buf.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Err("answer larger than the gateway's limit".into());
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(Sent::Whole(Answer {
        status,
        headers,
        body: buf.freeze(),
    }))
}

/// Response headers never copied from the agent (framing is the gateway's, hop-by-hop never leaves).
fn copyable(name: &str) -> bool {
    !matches!(
        name,
        "connection"
            | "keep-alive"
            | "proxy-connection"
            | "te"
            | "trailer"
            | "upgrade"
            | "transfer-encoding"
            | "content-length"
    )
}

/// Passes a whole answer to the caller unchanged (status, headers, bytes).
async fn pass_through(session: &mut Session, a: &Answer) -> Result<()> {
    let mut h = ResponseHeader::build(a.status, Some(a.headers.len() + 1))?;
    for (n, v) in &a.headers {
        if copyable(n.as_str()) {
            h.append_header(n.clone(), v.clone())?;
        }
    }
    h.insert_header("content-length", a.body.len().to_string())?;
    session
        .write_response_header(Box::new(h), a.body.is_empty())
        .await?;
    if !a.body.is_empty() {
        session
            .write_response_body(Some(a.body.clone()), true)
            .await?;
    }
    Ok(())
}

async fn sse_header(
    session: &mut Session,
    from: Option<&reqwest::header::HeaderMap>,
) -> Result<()> {
    let mut h = ResponseHeader::build(200, Some(4))?;
    if let Some(from) = from {
        for (n, v) in from {
            if copyable(n.as_str()) {
                h.append_header(n.clone(), v.clone())?;
            }
        }
    }
    h.insert_header("content-type", "text/event-stream")?;
    h.insert_header("cache-control", "no-cache")?;
    // pingora frames a body without length only if told to: SSE needs chunked on HTTP/1.1.
    h.insert_header("transfer-encoding", "chunked")?;
    session.write_response_header(Box::new(h), false).await
}

/// Streams an SSE answer to the caller chunk by chunk, never buffering it.
async fn pipe_stream(session: &mut Session, mut resp: reqwest::Response) -> Result<Outcome> {
    sse_header(session, Some(resp.headers())).await?;
    copy_body(session, &mut resp, "stream").await?;
    Ok(Outcome::Ok)
}

/// Copies the rest of an upstream body to the caller chunk by chunk, then ends the response.
async fn copy_body(session: &mut Session, resp: &mut reqwest::Response, what: &str) -> Result<()> {
    loop {
        match resp.chunk().await {
            Ok(Some(chunk)) => session.write_response_body(Some(chunk), false).await?,
            Ok(None) => break,
            Err(e) => {
                // Headers are out: the only honest signal left is cutting the response.
                tracing::warn!(error = %e, body = what, "upstream body broke");
                return Err(upstream_err(e));
            }
        }
    }
    session.write_response_body(None, true).await
}

/// Passes a large non-SSE answer through chunk by chunk (status and headers unchanged).
async fn pipe_large(session: &mut Session, mut resp: reqwest::Response) -> Result<Outcome> {
    let mut h = ResponseHeader::build(resp.status().as_u16(), Some(resp.headers().len()))?;
    for (n, v) in resp.headers() {
        if copyable(n.as_str()) {
            h.append_header(n.clone(), v.clone())?;
        }
    }
    if let Some(n) = resp.content_length() {
        h.insert_header("content-length", n.to_string())?;
    }
    let ok = resp.status().is_success();
    session.write_response_header(Box::new(h), false).await?;
    copy_body(session, &mut resp, "answer").await?;
    Ok(if ok { Outcome::Ok } else { Outcome::AgentError })
}

/// Answers a successful SendMessage as a one-event SSE stream.
async fn one_event(session: &mut Session, a: &Answer) -> Result<()> {
    sse_header(session, None).await?;
    session
        .write_response_body(Some(sse_event(&a.body)), true)
        .await
}

fn feed_back(gw: &Gateway, state: &IntegrationState, binding: Binding, a: &Answer) -> bool {
    let err = agent_error(binding, a.status, &a.body);
    if let Some(cause) = err.as_ref().and_then(|e| e.stale_cause()) {
        gw.mark_stale(&state.integration.name, cause);
    }
    err.is_some() || a.status >= 400
}

/// The SendMessage form of the request: same params, `SendMessage` method or `message:send` path.
fn send_message_body(plan: &Plan, rpc: Option<&RpcRequest>, held: &Bytes) -> Bytes {
    plan.send_message_body(rpc, held)
}

/// One attempt's future (see [`call_once`]).
type Attempt<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<Outcome>> + Send + 'a>>;

/// Makes the call described by `plan` through the gateway's own client and answers the caller.
pub async fn call(
    gw: &Gateway,
    session: &mut Session,
    state: &IntegrationState,
    plan: &Plan,
    ctx: &mut super::gateway::Ctx,
    rpc: Option<&RpcRequest>,
    redo: &Redo<'_>,
) -> Result<Outcome> {
    call_once(gw, session, state, plan, ctx, rpc, redo, true).await
}

/// One attempt; `may_retry` allows one refresh-and-retry after -32008/-32009 (never twice).
///
/// Boxed with a named type: the retry calls this function again, and a recursive `async fn`'s
/// future cannot be proven `Send` otherwise.
#[allow(clippy::too_many_arguments)]
fn call_once<'a>(
    gw: &'a Gateway,
    session: &'a mut Session,
    state: &'a IntegrationState,
    plan: &'a Plan,
    ctx: &'a mut super::gateway::Ctx,
    rpc: Option<&'a RpcRequest>,
    redo: &'a Redo<'a>,
    may_retry: bool,
) -> Attempt<'a> {
    Box::pin(async move {
        let name = state.integration.name.as_str();
        let started = std::time::Instant::now();
        let observe = |gw: &Gateway| {
            gw.metrics
                .upstream_duration
                .with_label_values(&[name])
                .observe(started.elapsed().as_secs_f64());
        };
        let unavailable = |e: String| {
            tracing::warn!(integration = name, error = %e, "upstream call failed");
        };
        match plan.stream {
            StreamPlan::Unary => {
                let sent = send(
                    state,
                    plan,
                    session,
                    &plan.upstream_path,
                    ctx.body.clone(),
                    true,
                )
                .await;
                observe(gw);
                match sent {
                    Ok(Sent::Stream(resp)) => pipe_stream(session, resp).await,
                    Ok(Sent::Large(resp)) => pipe_large(session, resp).await,
                    Ok(Sent::Whole(a)) => {
                        if may_retry && let Some(cause) = retry_cause(plan, &a) {
                            return retry_once(gw, session, state, plan, ctx, rpc, redo, cause, a)
                                .await;
                        }
                        let err = feed_back(gw, state, plan.binding, &a);
                        pass_through(session, &a).await?;
                        Ok(if err {
                            Outcome::AgentError
                        } else {
                            Outcome::Ok
                        })
                    }
                    Err(e) => {
                        unavailable(e);
                        upstream_failed(session, ctx).await
                    }
                }
            }
            StreamPlan::Downgrade(cause) => {
                let body = send_message_body(plan, rpc, &ctx.body);
                let sent = send(state, plan, session, &plan.send_path, body, false).await;
                observe(gw);
                match sent {
                    Ok(Sent::Whole(a)) if send_succeeded(plan.binding, a.status, &a.body) => {
                        gw.metrics
                            .downgrades
                            .with_label_values(&[name, cause.as_str()])
                            .inc();
                        one_event(session, &a).await?;
                        Ok(Outcome::Downgraded)
                    }
                    Ok(Sent::Whole(a)) => {
                        if may_retry && let Some(cause) = retry_cause(plan, &a) {
                            return retry_once(gw, session, state, plan, ctx, rpc, redo, cause, a)
                                .await;
                        }
                        feed_back(gw, state, plan.binding, &a);
                        pass_through(session, &a).await?;
                        Ok(Outcome::AgentError)
                    }
                    // An agent that streams a SendMessage answer: pass it on as it is.
                    Ok(Sent::Stream(resp)) => pipe_stream(session, resp).await,
                    // Never produced without `pass_large`.
                    Ok(Sent::Large(resp)) => pipe_large(session, resp).await,
                    Err(e) => {
                        unavailable(e);
                        upstream_failed(session, ctx).await
                    }
                }
            }
            StreamPlan::Stream => {
                let sent = send(
                    state,
                    plan,
                    session,
                    &plan.upstream_path,
                    ctx.body.clone(),
                    false,
                )
                .await;
                observe(gw);
                let first = match sent {
                    Ok(Sent::Stream(resp)) => return pipe_stream(session, resp).await,
                    Ok(Sent::Large(resp)) => return pipe_large(session, resp).await,
                    Ok(Sent::Whole(a)) => a,
                    Err(e) => {
                        unavailable(e);
                        return upstream_failed(session, ctx).await;
                    }
                };
                if may_retry && let Some(cause) = retry_cause(plan, &first) {
                    return retry_once(gw, session, state, plan, ctx, rpc, redo, cause, first)
                        .await;
                }
                let err = agent_error(plan.binding, first.status, &first.body);
                let refused = err.as_ref().is_some_and(|e| e.is_unsupported_operation());
                if !refused {
                    feed_back(gw, state, plan.binding, &first);
                    pass_through(session, &first).await?;
                    return Ok(Outcome::AgentError);
                }
                gw.mark_stale(name, StaleCause::UnsupportedOperation);
                if state.integration.streaming == StreamingMode::Required {
                    // Seed 003: never silently downgrade a required feature. The integration is marked
                    // for review (stale mark above, evidence here) and the caller gets the agent's error.
                    gw.store.update_integration(name, |cur| {
                        cur.with_evidence(refused_stream_evidence().remove(0))
                    });
                    pass_through(session, &first).await?;
                    return Ok(Outcome::AgentError);
                }
                let body = send_message_body(plan, rpc, &ctx.body);
                let retry = send(state, plan, session, &plan.send_path, body, false).await;
                match retry {
                    Ok(Sent::Whole(a)) if send_succeeded(plan.binding, a.status, &a.body) => {
                        gw.override_streaming_off(state, refused_stream_evidence());
                        gw.metrics
                            .downgrades
                            .with_label_values(&[name, DowngradeCause::Refused.as_str()])
                            .inc();
                        tracing::warn!(
                            integration = name,
                            "agent refused a stream its card claims; answered via SendMessage, streaming off until refresh"
                        );
                        one_event(session, &a).await?;
                        Ok(Outcome::Downgraded)
                    }
                    _ => {
                        // The retry failed too: the caller gets the agent's first answer, unchanged.
                        pass_through(session, &first).await?;
                        Ok(Outcome::AgentError)
                    }
                }
            }
        }
    })
}

/// The -32008/-32009 in an answer, when it is one (the errors a refresh-and-retry may fix).
fn retry_cause(plan: &Plan, a: &Answer) -> Option<StaleCause> {
    agent_error(plan.binding, a.status, &a.body)
        .and_then(|e| e.stale_cause())
        .filter(|c| retry::retries(*c))
}

/// After -32008/-32009: refresh, and either answer the agent's error `first` unchanged, the new
/// profile's refusal, or the result of one attempt decided and shaped from the new profile (which
/// may stream, or downgrade, differently from the first).
#[allow(clippy::too_many_arguments)]
async fn retry_once(
    gw: &Gateway,
    session: &mut Session,
    state: &IntegrationState,
    plan: &Plan,
    ctx: &mut super::gateway::Ctx,
    rpc: Option<&RpcRequest>,
    redo: &Redo<'_>,
    cause: StaleCause,
    first: Answer,
) -> Result<Outcome> {
    match retry::after_error(gw, state, plan, cause, redo).await {
        Next::Original => {
            pass_through(session, &first).await?;
            Ok(Outcome::AgentError)
        }
        Next::Refused(d) => {
            let reason = d.reason();
            gw.deny(session, ctx, d).await?;
            Ok(Outcome::Denied(reason))
        }
        Next::Retry {
            snapshot,
            state: next,
            plan: next_plan,
            body,
        } => {
            // The rest of the request (log line, metrics) belongs to the snapshot the retry used.
            ctx.snapshot = Some(snapshot);
            ctx.state = Some(next.clone());
            ctx.body = body;
            // `may_retry = false`: a second refusal is answered as it is (and marks stale).
            call_once(gw, session, &next, &next_plan, ctx, rpc, redo, false).await
        }
    }
}

async fn upstream_failed(session: &mut Session, ctx: &mut super::gateway::Ctx) -> Result<Outcome> {
    let r = Deny::UpstreamUnavailable.render(&ctx.shape, ctx.integration.as_deref());
    respond(
        session,
        r.status,
        &[("content-type", r.content_type)],
        r.body,
    )
    .await?;
    Ok(Outcome::UpstreamFailed)
}
