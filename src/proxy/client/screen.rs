//! Every stream, and the integration's `artifact_schema` on the gateway's own client path (I/O
//! on the caller's session): stream events are held to being A2A answers (`vet`), and answers
//! and stream events are checked with [`crate::proxy::artifact`] before they reach the caller
//! (`artifact_policy = "enforce"`) or beside it (`"record"`).
//!
//! - A whole answer is checked before it is passed on; enforced, a mismatch answers the caller
//!   with `ARTIFACT_SCHEMA_MISMATCH` instead.
//! - A stream is cut into events ([`crate::types::sse`]), each held until it is checked (one
//!   event at most: [`MAX_EVENT_BYTES`] under a schema, [`MAX_A2A_EVENT_BYTES`] without); an event that is not A2A, or (enforced) a mismatch,
//!   ends the stream with an error event in the binding's shape; recorded, a mismatch is only
//!   reported.
//! - A large unary answer (recorded only: enforced answers are read whole) goes on as it arrives
//!   and is checked at its end when it fits in [`MAX_EVENT_BYTES`].
//!
//! Every mismatch is counted (`a2a_egress_artifact_schema_mismatches_total`); evidence and a log
//! line are written at most once per [`EVIDENCE_GAP`] per integration, so a flood of bad answers
//! does not turn into a flood of snapshot swaps.

use std::time::SystemTime;

use bytes::{Bytes, BytesMut};
use pingora::Result;
use pingora::proxy::Session;

use super::Tally;
use super::exchange::Response;
use super::reply::{Piece, copied, piece, sse_header};
use super::vet::Events;
use crate::config::{ArtifactPolicy, ArtifactSchema};
use crate::profile::Binding;
use crate::proxy::artifact::{Violation, check_answer};
use crate::proxy::call::{Gateway, Outcome};
use crate::proxy::deny::{Deny, Shape};
use crate::proxy::feedback::sse_event;
use crate::state::{Evidence, EvidenceKind, IntegrationState};
use crate::types::sse::{Splitter, data_of};

/// Largest stream event held to be checked against an artifact schema, and largest large answer
/// checked (bytes): an artifact may carry a large data part, and the schema must see all of it.
pub const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// Largest stream event held when only the A2A check applies (no artifact schema), bytes. Every
/// stream holds one event, so this bounds the memory of every stream the gateway carries; the
/// check only needs to see that an event is a JSON-RPC response with the request's id (or a
/// JSON object), which status updates and ordinary artifact chunks are far below. A larger event
/// and the rest of its stream pass unchecked, as past [`MAX_EVENT_BYTES`].
pub const MAX_A2A_EVENT_BYTES: usize = 1024 * 1024;

pub use crate::proxy::call::EVIDENCE_GAP;

/// The schema an attempt's answers are held to, and where mismatches are reported.
pub(super) struct Screen<'a> {
    gw: &'a Gateway,
    name: &'a str,
    schema: &'a ArtifactSchema,
    binding: Binding,
}

impl<'a> Screen<'a> {
    /// The screen of `state`'s integration, or `None` when it names no schema.
    pub(super) fn of(
        gw: &'a Gateway,
        state: &'a IntegrationState,
        binding: Binding,
    ) -> Option<Self> {
        let schema = state.integration.artifacts.as_ref()?;
        Some(Screen {
            gw,
            name: &state.integration.name,
            schema,
            binding,
        })
    }

    /// Whether a mismatch replaces the answer.
    pub(super) fn enforcing(&self) -> bool {
        self.schema.policy == ArtifactPolicy::Enforce
    }

    /// Checks one answer body (or one event's data); a violation is counted and recorded.
    pub(super) fn check(&self, ok: bool, body: &[u8]) -> Option<Violation> {
        let v = check_answer(self.schema, self.binding, ok, body).violation?;
        self.report(&v);
        Some(v)
    }

    /// Counts `v`, and records it as evidence and logs it unless that happened just now.
    pub(super) fn report(&self, v: &Violation) {
        self.gw
            .metrics
            .artifact_mismatches
            .with_label_values(&[self.name])
            .inc();
        let now = SystemTime::now();
        let kind = EvidenceKind::ArtifactSchemaMismatch;
        let recent = |s: &IntegrationState| s.observed_within(kind, now, EVIDENCE_GAP);
        if self
            .gw
            .store
            .load()
            .get(self.name)
            .is_none_or(|s| recent(s))
        {
            return;
        }
        tracing::warn!(
            integration = self.name,
            policy = self.schema.policy.as_str(),
            violation = %v,
            "an artifact does not match the integration's artifact schema"
        );
        let detail = v.to_string();
        self.gw.store.update_integration(self.name, |cur| {
            if recent(cur) {
                return cur.clone();
            }
            cur.with_evidence(Evidence {
                at: now,
                kind,
                detail: detail.clone(),
            })
        });
    }
}

/// The refusal for an answer that does not hold to the schema.
pub(super) fn refusal(v: &Violation) -> Deny {
    let (part, keyword) = match v {
        Violation::Part { part, mismatch } => (part.clone(), mismatch.keyword.clone()),
        Violation::Unreadable(why) => (why.to_string(), v.keyword().to_owned()),
    };
    Deny::ArtifactSchemaMismatch { part, keyword }
}

/// The SSE error event that ends a stream (JSON-RPC error envelope with the caller's id, or
/// `{"error": google.rpc.Status}`, as A2A servers send errors after a stream started).
fn error_event(d: &Deny, shape: &Shape, integration: &str) -> Bytes {
    let r = d.render(shape, Some(integration));
    let mut out = BytesMut::from(&b"event: error\n"[..]);
    out.extend_from_slice(&sse_event(&r.body));
    out.freeze()
}

/// Streams an SSE answer to the caller one whole event at a time: each event's data must be an
/// A2A answer ([`Events`]), and held to the schema when there is one. A bad event is never
/// passed on: the stream ends with an error event instead. An event larger than the cap
/// ([`MAX_EVENT_BYTES`] under a schema, else [`MAX_A2A_EVENT_BYTES`]) cannot be held: the whole
/// events before it are judged and passed on, then it and the rest of the stream pass unchecked
/// (an enforced schema ends the stream instead), so memory stays bounded whatever the agent
/// sends.
pub(super) async fn pipe_stream(
    session: &mut Session,
    mut resp: Response<'_>,
    screen: Option<&Screen<'_>>,
    events: &Events<'_>,
    shape: &Shape,
    tally: &Tally<'_>,
) -> Result<Outcome> {
    sse_header(session, Some(resp.head())).await?;
    let limit = match screen {
        Some(_) => MAX_EVENT_BYTES,
        None => MAX_A2A_EVENT_BYTES,
    };
    let mut split = Some(Splitter::new(limit));
    loop {
        let chunk = match piece(session, &mut resp, "stream", tally).await? {
            Piece::Chunk(chunk) => chunk,
            Piece::End => break,
            Piece::Gone => return Ok(Outcome::ClientClosed),
        };
        let Some(s) = split.as_mut() else {
            session.write_response_body(Some(chunk), false).await?;
            continue;
        };
        let done = match s.push(&chunk) {
            Ok(done) => done,
            Err(e) => {
                // The events the chunk completed before the large one are whole: they go first.
                for event in e.done {
                    if let Some(end) = emit(session, screen, events, shape, event).await? {
                        return Ok(end);
                    }
                }
                if let Some(d) = too_large(screen, events) {
                    return end_with_error(session, d, shape, events.name()).await;
                }
                // Nothing more is held: what was, and the rest, pass unchecked.
                let held = split.take().map(Splitter::rest).unwrap_or_default();
                session.write_response_body(Some(held), false).await?;
                continue;
            }
        };
        for event in done {
            if let Some(end) = emit(session, screen, events, shape, event).await? {
                return Ok(end);
            }
        }
    }
    // An event the stream did not finish: an SSE reader drops it, but it is checked anyway.
    if let Some(rest) = split.map(Splitter::rest).filter(|r| !r.is_empty())
        && let Some(end) = emit(session, screen, events, shape, rest).await?
    {
        return Ok(end);
    }
    session.write_response_body(None, true).await?;
    resp.release().await;
    Ok(Outcome::Ok)
}

/// Passes one whole event on (translated from a 0.3 agent), or ends the stream: with an error
/// event when it is refused, or after it when a 0.3 agent said it is the last (`final: true`;
/// the agent's connection is then dropped, not read further). `Some` is the stream's outcome.
async fn emit(
    session: &mut Session,
    screen: Option<&Screen<'_>>,
    events: &Events<'_>,
    shape: &Shape,
    event: Bytes,
) -> Result<Option<Outcome>> {
    match pass(screen, events, event) {
        Err(d) => end_with_error(session, d, shape, events.name())
            .await
            .map(Some),
        Ok((event, false)) => {
            session.write_response_body(Some(event), false).await?;
            Ok(None)
        }
        Ok((event, true)) => {
            session.write_response_body(Some(event), true).await?;
            Ok(Some(Outcome::Ok))
        }
    }
}

/// One event as the caller gets it, and whether it is the last; or the refusal that replaces
/// it: not an A2A answer, not translatable, or (enforced) not the schema's. The schema sees the
/// 1.0 form.
fn pass(
    screen: Option<&Screen<'_>>,
    events: &Events<'_>,
    event: Bytes,
) -> std::result::Result<(Bytes, bool), Deny> {
    let translated = {
        // Events without data (`: ping`) pass.
        let Some(data) = data_of(&event) else {
            return Ok((event, false));
        };
        if let Some(d) = events.judge(&data) {
            return Err(d);
        }
        match events.translate(&data)? {
            Some(t) => t,
            None => {
                schema(screen, &data)?;
                events.record_inbound(&data);
                return Ok((event, false));
            }
        }
    };
    schema(screen, &translated.json)?;
    events.record_inbound(&translated.json);
    let mut out = BytesMut::new();
    if translated.error {
        out.extend_from_slice(b"event: error\n");
    }
    out.extend_from_slice(&sse_event(&translated.json));
    Ok((out.freeze(), translated.last))
}

/// The refusal of event data that (enforced) does not hold to the schema.
fn schema(screen: Option<&Screen<'_>>, data: &[u8]) -> std::result::Result<(), Deny> {
    let Some(s) = screen else { return Ok(()) };
    match s.check(true, data) {
        Some(v) if s.enforcing() => Err(refusal(&v)),
        _ => Ok(()),
    }
}

/// An event too large to hold: the refusal when an enforced schema must see it or a 0.3 agent's
/// event must be translated (untranslated bytes never reach the caller), else `None` (reported
/// when a schema is recorded).
fn too_large(screen: Option<&Screen<'_>>, events: &Events<'_>) -> Option<Deny> {
    if let Some(d) = events.too_large() {
        return Some(d);
    }
    let s = screen?;
    let v = Violation::Unreadable("an event larger than the gateway checks".into());
    s.report(&v);
    s.enforcing().then(|| refusal(&v))
}

/// Ends a stream with the error event of `d`; the agent's connection is dropped unread.
async fn end_with_error(
    session: &mut Session,
    d: Deny,
    shape: &Shape,
    integration: &str,
) -> Result<Outcome> {
    let event = error_event(&d, shape, integration);
    session.write_response_body(Some(event), true).await?;
    Ok(Outcome::Denied(d))
}

/// Passes a large non-SSE answer through as it arrives (recorded only), checking it at its end.
pub(super) async fn pipe_large(
    session: &mut Session,
    mut resp: Response<'_>,
    screen: &Screen<'_>,
    tally: &Tally<'_>,
) -> Result<Outcome> {
    let mut h = copied(resp.head(), resp.status(), 1)?;
    if let Some(n) = resp.content_length() {
        h.insert_header("content-length", n.to_string())?;
    }
    let ok = resp.head().status.is_success();
    session.write_response_header(Box::new(h), false).await?;
    let mut held = Some(BytesMut::new());
    loop {
        let chunk = match piece(session, &mut resp, "answer", tally).await? {
            Piece::Chunk(chunk) => chunk,
            Piece::End => break,
            Piece::Gone => return Ok(Outcome::ClientClosed),
        };
        if let Some(b) = held.as_mut() {
            if b.len() + chunk.len() > MAX_EVENT_BYTES {
                held = None;
                screen.report(&Violation::Unreadable(
                    "an answer larger than the gateway checks".into(),
                ));
            } else {
                b.extend_from_slice(&chunk);
            }
        }
        session.write_response_body(Some(chunk), false).await?;
    }
    session.write_response_body(None, true).await?;
    resp.release().await;
    if let Some(b) = held {
        screen.check(ok, &b);
    }
    Ok(if ok { Outcome::Ok } else { Outcome::AgentError })
}
