//! One call's spans (no I/O: ending a span hands it to the exporter's bounded queue, see
//! [`super::export`]): the SERVER span of the caller's request, and the CLIENT span of each
//! request the gateway sends the agent for it (the first, a downgrade's SendMessage, a
//! refused stream's retry, a refresh-and-retry), each the child of the SERVER span, whose
//! parent is the caller's `traceparent` when one arrived.

use std::borrow::Cow;

use http::HeaderValue;
use opentelemetry::trace::{
    Span as _, SpanContext, SpanKind, Status, TraceContextExt as _, Tracer as _,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::Span;

use super::attrs::{self, Attempt, Call};
use super::export::Telemetry;
use super::w3c;

/// The spans of one call.
pub struct CallSpans {
    /// The SERVER span, held directly: in a `Context` every use of it went through a boxed,
    /// mutex-guarded span.
    server: Span,
    /// The SERVER span's context as the CLIENT spans' parent, made at the first attempt (a
    /// refusal never needs it).
    parent: Option<Context>,
    /// The attempt whose answer is still passing to the caller (a stream, a large answer), ended
    /// when the next attempt starts or the call ends.
    client: Option<Span>,
    /// Attempts started.
    attempts: u32,
    /// The A2A version spoken with the agent, once the call is planned.
    version: Option<Cow<'static, str>>,
    /// The task and context ids the agent's answer named (the first that named them).
    task: Option<String>,
    context: Option<String>,
}

impl std::fmt::Debug for CallSpans {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallSpans")
            .field("server", self.server.span_context())
            .field("attempts", &self.attempts)
            .finish()
    }
}

impl Telemetry {
    /// Starts a call's SERVER span: the child of the caller's checked `traceparent` (with its
    /// `tracestate`), else the root of a new trace. Named for the route until the call ends.
    pub fn server(
        &self,
        traceparent: Option<&HeaderValue>,
        tracestate: Option<&HeaderValue>,
        http_method: &str,
    ) -> CallSpans {
        let parent = traceparent
            .and_then(|tp| w3c::remote_parent(tp.as_bytes(), tracestate.map(|s| s.as_bytes())))
            .map_or_else(Context::new, |sc| {
                Context::new().with_remote_span_context(sc)
            });
        let span = self
            .tracer
            .span_builder("a2a-egress")
            .with_kind(SpanKind::Server)
            .with_attributes([KeyValue::new(
                attrs::HTTP_METHOD,
                attrs::http_method(http_method),
            )])
            .start_with_context(&self.tracer, &parent);
        CallSpans {
            server: span,
            parent: None,
            client: None,
            attempts: 0,
            version: None,
            task: None,
            context: None,
        }
    }
}

impl CallSpans {
    /// The A2A version the call speaks with the agent (from its plan).
    pub fn planned(&mut self, version: &str) {
        if self.version.as_deref() != Some(version) {
            self.version = Some(attrs::version(version));
        }
    }

    /// Starts the CLIENT span of one request to the agent (ending the previous one, if its
    /// answer was still open), and answers the `traceparent` to send with it.
    pub fn attempt(&mut self, t: &Telemetry, a: &Attempt<'_>) -> Option<HeaderValue> {
        if let Some(mut open) = self.client.take() {
            open.end();
        }
        self.planned(a.protocol_version);
        self.attempts += 1;
        let server = &self.server;
        let parent = self.parent.get_or_insert_with(|| {
            // The SERVER span's own context (not remote: it is this process's span).
            let sc = server.span_context();
            let local = SpanContext::new(
                sc.trace_id(),
                sc.span_id(),
                sc.trace_flags(),
                false,
                sc.trace_state().clone(),
            );
            Context::new().with_remote_span_context(local)
        });
        let span = t
            .tracer
            .span_builder(attrs::span_name(a.method))
            .with_kind(SpanKind::Client)
            .with_attributes(a.attributes(self.attempts))
            .start_with_context(&t.tracer, parent);
        let tp = w3c::traceparent(span.span_context());
        self.client = Some(span);
        tp
    }

    /// The agent answered the current attempt with `status`; `done`: nothing more of it passes
    /// through the gateway (a whole answer), so its span ends now.
    pub fn answered(&mut self, status: u16, done: bool) {
        let Some(span) = self.client.as_mut() else {
            return;
        };
        span.set_attribute(KeyValue::new(attrs::HTTP_STATUS, i64::from(status)));
        if status >= 400 {
            span.set_status(Status::error(""));
            // The HTTP semantic conventions name the status code as the error type.
            span.set_attribute(KeyValue::new(attrs::ERROR_TYPE, status.to_string()));
        }
        if done && let Some(mut span) = self.client.take() {
            span.end();
        }
    }

    /// The task and context ids an answer of the call named; the first answer naming them
    /// wins (a retry's answer names the same task).
    pub fn task_ids(&mut self, task: Option<&str>, context: Option<&str>) {
        if self.task.is_none() && self.context.is_none() {
            self.task = task.map(str::to_owned);
            self.context = context.map(str::to_owned);
        }
    }

    /// The current attempt failed before a usable answer (`kind`: the client error's label).
    pub fn failed(&mut self, kind: &'static str) {
        if let Some(mut span) = self.client.take() {
            span.set_status(Status::error(kind));
            span.set_attribute(KeyValue::new(attrs::ERROR_TYPE, kind));
            span.end();
        }
    }

    /// Ends the call: the open attempt, then the SERVER span with what `call` says.
    pub fn finish(mut self, call: &Call<'_>) {
        if let Some(mut open) = self.client.take() {
            open.end();
        }
        let call = Call {
            protocol_version: call.protocol_version.or(self.version.as_deref()),
            ..*call
        };
        let mut kv = call.attributes();
        if let Some(t) = self.task.take() {
            kv.push(KeyValue::new(attrs::A2A_TASK_ID, t));
        }
        if let Some(c) = self.context.take() {
            kv.push(KeyValue::new(attrs::A2A_CONTEXT_ID, c));
        }
        let span = &mut self.server;
        span.update_name(attrs::span_name(call.method));
        span.set_attributes(kv);
        if call.is_error() {
            span.set_status(Status::error(call.error_type().unwrap_or("")));
        }
        span.end();
    }
}
