//! Every agent answer, before anything of it reaches the caller (no I/O of its own): decoded
//! when it came gzip- or deflate-encoded, held to being an A2A answer ([`crate::proxy::answer`]),
//! and its headers cut down to the ones the caller may get ([`crate::proxy::headers`]).
//!
//! An answer that is not A2A becomes [`ClientError::Invalid`], which the caller gets as
//! InvalidAgentResponseError; it is counted (`a2a_egress_invalid_agent_answers_total`) and, unless
//! it is a server error's page, marks the profile stale ([`invalid`]).

use bytes::Bytes;
use pingora::http::ResponseHeader;

use super::{Attempt, ClientError, MAX_ANSWER_BYTES, Sent};
use crate::profile::Binding;
use crate::proxy::answer::{self, Decoded, Encoding, Invalid};
use crate::proxy::call::Gateway;
use crate::proxy::deny::{Deny, Shape};
use crate::proxy::headers::{Prune, prune};
use crate::proxy::route::Method;
use crate::state::StaleCause;
use crate::telemetry::CallSpans;
use crate::translate::{self, Op, TranslateError, Translated};

/// What an attempt's answers go through before anything reads them: a 0.3 agent's are made
/// 1.0 first (in the agent's binding), then moved to the caller's binding when the agent's is the
/// other one ([`translate::binding`]).
#[derive(Debug, Clone, Copy)]
struct Translation {
    op: Op,
    /// The agent speaks 0.3.
    from_03: bool,
    /// The agent's binding, when it is not the caller's.
    cross: Option<Binding>,
}

/// The translation of the attempt's answers, when they have one; `downgraded`: the request
/// was the SendMessage of a streaming call, whose answers are SendMessage's.
fn translation(at: Attempt<'_>, downgraded: bool) -> Option<Translation> {
    // A 0.3 gRPC agent's answers are made 1.0, in the caller's binding, by the gRPC client.
    let from_03 = at.plan.dialect.translates() && !at.plan.dialect.grpc();
    let cross = at.plan.crosses().then_some(at.plan.dialect.binding);
    if !from_03 && cross.is_none() {
        return None;
    }
    let op = match downgraded {
        true => Op::SendMessage,
        false => Op::from_v10(at.plan.method.as_str())?,
    };
    Some(Translation { op, from_03, cross })
}

/// What the agent's answers are judged as before any move to the caller's binding: its binding,
/// and the JSON text of the id its JSON-RPC answers must carry (the caller's, or the gateway's
/// own when the caller's request was HTTP+JSON; none over HTTP+JSON). A gRPC agent's answers are
/// made in the caller's binding by the gRPC client itself.
fn judged<'s>(at: Attempt<'s>, shape: &'s Shape) -> (Binding, Option<&'s str>) {
    let plan = at.plan;
    match plan.dialect.binding {
        Binding::Grpc => (plan.binding, request_id(shape)),
        Binding::HttpJson => (Binding::HttpJson, None),
        Binding::JsonRpc => (
            Binding::JsonRpc,
            plan.rpc_id.as_deref().or(request_id(shape)),
        ),
    }
}

/// Counts, logs (with the field) and refuses a 0.3 answer that does not translate, as any
/// answer that is not A2A ([`report`]).
fn untranslatable(gw: &Gateway, name: &str, e: &TranslateError, status: u16) -> ClientError {
    tracing::warn!(integration = name, error = %e, "the A2A 0.3 answer does not translate");
    let why = invalid_of(e);
    report(gw, name, why, status);
    ClientError::Invalid { why, status }
}

/// The kind of invalid answer a translation error is counted as.
fn invalid_of(e: &TranslateError) -> Invalid {
    match e {
        TranslateError::TooLarge { mib } => Invalid::TooLarge { mib: *mib },
        TranslateError::NotInVersion { .. } | TranslateError::Untranslatable { .. } => {
            Invalid::Untranslatable
        }
    }
}

/// The JSON text of the JSON-RPC request's id, which every answer to it must carry.
pub(super) fn request_id(shape: &Shape) -> Option<&str> {
    match shape {
        Shape::JsonRpc(id) => Some(id.get()),
        Shape::Rest => None,
    }
}

/// Whether the answers of `method` name the call's task (a message send's task or message, the
/// task read or cancelled, a stream's events): the ids the call's span records.
pub(super) fn names_the_task(method: Method) -> bool {
    matches!(
        method,
        Method::SendMessage
            | Method::SendStreamingMessage
            | Method::GetTask
            | Method::CancelTask
            | Method::SubscribeToTask
    )
}

/// Hands the ids an answer named to the call's spans, when it has any and spans are kept.
fn record(spans: Option<&mut CallSpans>, ids: &answer::TaskIds<'_>) {
    if let Some(spans) = spans
        && !ids.is_empty()
    {
        spans.task_ids(ids.task.as_deref(), ids.context.as_deref());
    }
}

/// `sent` as the caller may see it, or why it is not an A2A answer. With `spans`, a whole
/// answer's task and context ids (from the check's parse) go to the call's span.
pub(super) fn vet<'c>(
    gw: &Gateway,
    at: Attempt<'_>,
    shape: &Shape,
    sent: Sent<'c>,
    downgraded: bool,
    spans: Option<&mut CallSpans>,
) -> Result<Sent<'c>, ClientError> {
    match sent {
        Sent::Whole(mut a) => {
            let mut status = a.status();
            let enc = answer::encoding(&a.head.headers).map_err(|w| invalid(gw, at, w, status))?;
            a.body = match answer::decode(enc, a.body, MAX_ANSWER_BYTES) {
                Ok(Decoded::Body(b)) => b,
                Ok(Decoded::TooLarge) => {
                    return Err(ClientError::TooLarge {
                        limit: MAX_ANSWER_BYTES,
                    });
                }
                Err(w) => return Err(invalid(gw, at, w, status)),
            };
            let id = request_id(shape);
            // A 0.3 agent's answer is translated first, and the 1.0 answer the caller would get
            // is what is held to being A2A (its id is the agent's, copied): a 0.3 answer may lack
            // what 1.0 requires (Python 0.3.26 leaves a null `result` out). One that does not
            // translate is judged as it came, so it is refused for what is wrong with it.
            if let Some(t) = translation(at, downgraded) {
                let (binding, agent_id) = judged(at, shape);
                let translated = translate_whole(t, (binding, agent_id), id, &mut a);
                if let Err(e) = translated {
                    // Judged as it came (or as the 0.3 step made it), so it is refused for what
                    // is wrong with it.
                    let status = a.status();
                    answer::check_whole(binding, agent_id, status, &a.body, false)
                        .map_err(|w| invalid(gw, at, w, status))?;
                    return Err(untranslatable(gw, at.name(), &e, status));
                }
                status = a.status();
            }
            let ids = answer::check_whole(at.plan.binding, id, status, &a.body, spans.is_some())
                .map_err(|w| invalid(gw, at, w, status))?;
            record(spans, &ids);
            if let Some(g) = super::inbound::guard_of(at.state.integration.guard.as_ref())
                && (200..300).contains(&status)
            {
                super::inbound::record(gw, at.name(), g, at.plan.binding, &a.body);
            }
            extensions_as_10(at, &mut a.head)?;
            keep_allowed(gw, at, &mut a.head)?;
            Ok(Sent::Whole(a))
        }
        Sent::Stream(mut r) => {
            // Refused before the caller sees anything: the gateway asked for identity, and
            // decoding an endless stream would be state for every stream for nothing.
            if answer::encoding(&r.head().headers) != Ok(Encoding::Identity) {
                return Err(invalid(gw, at, Invalid::Encoding, r.status()));
            }
            extensions_as_10(at, r.head_mut())?;
            keep_allowed(gw, at, r.head_mut())?;
            Ok(Sent::Stream(r))
        }
        Sent::Large(mut r) => {
            // `send` passes only a JSON answer in identity through unread; its length is the
            // gateway's framing, kept for the reply to write again.
            let len = r.content_length();
            keep_allowed(gw, at, r.head_mut())?;
            if let Some(n) = len {
                (r.head_mut().insert_header(http::header::CONTENT_LENGTH, n))
                    .map_err(ClientError::Receive)?;
            }
            Ok(Sent::Large(r))
        }
    }
}

/// An agent's whole answer `a`, translated in place ([`Translation`]): from a 0.3 agent, a
/// JSON-RPC response's body, over HTTP+JSON the status too (200 for JS 0.3.14's 201/202/204, the
/// 1.0 error table's for an error); then, from an agent on the binding the caller does not
/// speak, the caller's binding's answer (`id`: the caller's JSON-RPC id). The type of the JSON
/// the caller gets is set with a new body. What is no A2A answer of the agent's (an HTTP-level
/// page) is left as it came, for [`answer::check_whole`] to judge as from any agent.
fn translate_whole(
    t: Translation,
    (agent, agent_id): (Binding, Option<&str>),
    id: Option<&str>,
    a: &mut super::exchange::Answer,
) -> Result<(), TranslateError> {
    let op = t.op;
    if t.from_03 {
        match agent {
            Binding::HttpJson => {
                if let Some(r) = translate::rest_answer_to10(op, a.status(), &a.body)? {
                    set(a, r.status, r.json)?;
                }
            }
            _ => {
                if answer::carries_rpc(a.status(), &a.body) {
                    a.body = Bytes::from(translate::answer_to10(op, &a.body)?.json);
                }
            }
        }
    }
    if t.cross.is_none() {
        return Ok(());
    }
    // What crosses is first held to being the agent's binding's answer, as any answer is: the
    // move must not make a broken one valid.
    let bad = |_| TranslateError::untranslatable("body", "is not an A2A answer");
    answer::check_whole(agent, agent_id, a.status(), &a.body, false).map_err(bad)?;
    match agent {
        Binding::HttpJson => {
            let id = id.unwrap_or("null");
            if let Some((status, json)) =
                translate::binding::rest_answer_to_rpc(op, id, a.status(), &a.body)?
            {
                set(a, status, json)?;
            }
        }
        Binding::JsonRpc if answer::carries_rpc(a.status(), &a.body) => {
            let gateway = agent_id.unwrap_or("null");
            let (status, json) =
                translate::binding::rpc_answer_to_rest(a.status(), gateway, &a.body)?;
            set(a, status, json)?;
        }
        _ => {}
    }
    Ok(())
}

/// Gives answer `a` the translator's `status` and JSON `body`.
fn set(a: &mut super::exchange::Answer, status: u16, body: Vec<u8>) -> Result<(), TranslateError> {
    let bad = |_| TranslateError::untranslatable("status", "is not an HTTP status");
    a.head.set_status(status).map_err(bad)?;
    a.head
        .insert_header(http::header::CONTENT_TYPE, "application/json")
        .map_err(bad)?;
    a.body = Bytes::from(body);
    Ok(())
}

/// A 0.3 agent echoes the extensions it activated as `X-A2A-Extensions` (0.3's name): the
/// caller, which speaks 1.0, reads them as `A2A-Extensions`. The 0.3 name never reaches it.
fn extensions_as_10(at: Attempt<'_>, head: &mut ResponseHeader) -> Result<(), ClientError> {
    if !at.plan.dialect.translates() {
        return Ok(());
    }
    let echoed: Vec<http::HeaderValue> = head
        .headers
        .get_all("x-a2a-extensions")
        .iter()
        .cloned()
        .collect();
    head.remove_header("x-a2a-extensions");
    // What the agent put under 1.0's names is not 0.3 and does not pass beside the translation,
    // echo or not: its version header would name 0.3 on an answer the caller reads as 1.0.
    head.remove_header("a2a-extensions");
    head.remove_header("a2a-version");
    for v in echoed {
        head.append_header("a2a-extensions", v)
            .map_err(ClientError::Receive)?;
    }
    Ok(())
}

/// Removes the agent's headers the caller may not get; past the caps, the dropped ones are
/// counted.
fn keep_allowed(
    gw: &Gateway,
    at: Attempt<'_>,
    head: &mut ResponseHeader,
) -> Result<(), ClientError> {
    match prune(&head.headers, &at.state.integration.forward_headers) {
        Prune::Remove(names) => {
            for n in names {
                head.remove_header(&n);
            }
        }
        Prune::Rebuild(kept, dropped) => {
            let mut h = ResponseHeader::build_no_case(head.status, Some(kept.len()))
                .map_err(ClientError::Receive)?;
            // An owned map yields a name only with its first value; the next values of that
            // name come with `None` and belong to the name before them.
            let mut name = None;
            for (n, v) in kept {
                if n.is_some() {
                    name = n;
                }
                if let Some(n) = &name {
                    h.append_header(n.clone(), v)
                        .map_err(ClientError::Receive)?;
                }
            }
            h.set_version(head.version);
            *head = h;
            gw.metrics
                .answer_headers_dropped
                .with_label_values(&[at.name()])
                .inc_by(dropped as u64);
            tracing::warn!(
                integration = at.name(),
                dropped,
                "the agent's answer headers are over the gateway's cap; the rest were dropped"
            );
        }
    }
    Ok(())
}

/// Counts, logs and (see [`Invalid::marks_stale`]) marks stale an answer of HTTP `status` that is
/// not an A2A answer; the error the call fails with.
pub(super) fn invalid(gw: &Gateway, at: Attempt<'_>, why: Invalid, status: u16) -> ClientError {
    report(gw, at.name(), why, status);
    ClientError::Invalid { why, status }
}

/// The counting, logging and stale mark of [`invalid`], and the refusal the caller gets.
pub(super) fn report(gw: &Gateway, name: &str, why: Invalid, status: u16) -> Deny {
    gw.metrics
        .invalid_answers
        .with_label_values(&[name, why.as_str()])
        .inc();
    tracing::warn!(
        integration = name,
        answer = why.as_str(),
        status,
        "the agent's answer is not an A2A answer; the caller gets InvalidAgentResponseError"
    );
    if why.marks_stale(status) {
        gw.mark_stale(name, StaleCause::InvalidAgentResponse);
    }
    Deny::InvalidAgentResponse { why, status }
}

/// Judges a stream's events: each event's data must be the binding's answer, as a 2xx body.
pub(super) struct Events<'a> {
    gw: &'a Gateway,
    name: &'a str,
    /// The caller's binding (the events' once translated).
    binding: Binding,
    /// The caller's JSON-RPC id.
    id: Option<&'a str>,
    /// The agent's binding and the id its JSON-RPC events carry: what an event is judged as.
    agent: (Binding, Option<&'a str>),
    status: u16,
    /// What the events go through, when they come from a 0.3 agent or one on the other binding.
    translation: Option<Translation>,
    /// The first task and context ids an event named, kept only when the call has spans.
    ids: Option<std::sync::OnceLock<(Option<String>, Option<String>)>>,
    /// The guard that records findings in events (`[guard] inbound = "record"`).
    inbound: Option<&'a crate::config::IntegrationGuard>,
}

impl<'a> Events<'a> {
    /// The judge of the events of a stream of HTTP `status` answering the attempt's request.
    /// `keep_ids`: the first event's task and context ids are kept ([`Events::into_ids`]).
    pub(super) fn of(
        gw: &'a Gateway,
        at: Attempt<'a>,
        shape: &'a Shape,
        status: u16,
        keep_ids: bool,
    ) -> Self {
        Events {
            ids: (keep_ids && names_the_task(at.plan.method)).then(std::sync::OnceLock::new),
            gw,
            name: &at.state.integration.name,
            binding: at.plan.binding,
            id: request_id(shape),
            agent: judged(at, shape),
            status,
            translation: translation(at, false),
            inbound: super::inbound::guard_of(at.state.integration.guard.as_ref()),
        }
    }

    /// Event data as the caller gets it: `None` when it passes unchanged (a 1.0 agent on the
    /// caller's binding), else the caller's form of it ([`Translation`]), or the refusal of one
    /// that does not translate.
    pub(super) fn translate(&self, data: &[u8]) -> Result<Option<Translated>, Deny> {
        let Some(t) = self.translation else {
            return Ok(None);
        };
        match self.translated(t, data) {
            Ok(t) => Ok(Some(t)),
            Err(e) => {
                tracing::warn!(integration = self.name, error = %e, "an agent's stream event does not translate");
                Err(report(self.gw, self.name, invalid_of(&e), self.status))
            }
        }
    }

    /// The steps of [`Events::translate`]: 0.3 to 1.0, then to the caller's binding; the event
    /// is the last when either step says so.
    fn translated(&self, t: Translation, data: &[u8]) -> Result<Translated, TranslateError> {
        let op = t.op;
        let mut out = match (t.from_03, self.agent.0) {
            (false, _) => None,
            (true, Binding::HttpJson) => Some(translate::rest_event_to10(op, data)?),
            (true, _) => Some(translate::event_to10(op, data)?),
        };
        let data = out.as_ref().map_or(data, |o| &o.json[..]);
        let moved = match t.cross {
            Some(Binding::HttpJson) => {
                let id = self.id.unwrap_or("null");
                Some(translate::binding::rest_event_to_rpc(op, id, data)?)
            }
            Some(Binding::JsonRpc) => {
                let gateway = self.agent.1.unwrap_or("null");
                Some(translate::binding::rpc_event_to_rest(gateway, data)?)
            }
            _ => None,
        };
        if let Some(m) = moved {
            let last = m.last || out.as_ref().is_some_and(|o| o.last);
            out = Some(Translated { last, ..m });
        }
        out.ok_or_else(|| TranslateError::untranslatable("data", "has no translation"))
    }

    /// The refusal of an event too large to hold when the stream is translated: its bytes are
    /// 0.3 and may not reach the caller untranslated.
    pub(super) fn too_large(&self) -> Option<Deny> {
        self.translation?;
        Some(report(
            self.gw,
            self.name,
            Invalid::Untranslatable,
            self.status,
        ))
    }

    /// Records what the inbound guard finds in event data as the caller gets it (1.0), when
    /// `[guard] inbound = "record"`.
    pub(super) fn record_inbound(&self, data: &[u8]) {
        if let Some(g) = self.inbound {
            super::inbound::record(self.gw, self.name, g, self.binding, data);
        }
    }

    /// The integration's name.
    pub(super) fn name(&self) -> &'a str {
        self.name
    }

    /// The refusal that ends the stream instead of event data `data`, when it is not A2A
    /// (counted, logged, marking stale as [`invalid`] does).
    pub(super) fn judge(&self, data: &[u8]) -> Option<Deny> {
        let keep = self.ids.as_ref().is_some_and(|k| k.get().is_none());
        let (binding, id) = self.agent;
        match answer::check_event(binding, id, data, keep) {
            Ok(ids) => {
                if let Some(keep) = &self.ids
                    && !ids.is_empty()
                    && keep.get().is_none()
                {
                    let owned = (
                        ids.task.map(std::borrow::Cow::into_owned),
                        ids.context.map(std::borrow::Cow::into_owned),
                    );
                    let _ = keep.set(owned);
                }
                None
            }
            Err(why) => Some(report(self.gw, self.name, why, self.status)),
        }
    }

    /// The first task and context ids an event of the stream named, when they were kept.
    pub(super) fn into_ids(self) -> Option<(Option<String>, Option<String>)> {
        self.ids.and_then(std::sync::OnceLock::into_inner)
    }
}
