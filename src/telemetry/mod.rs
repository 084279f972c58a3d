//! OpenTelemetry traces of the data plane's calls: one SERVER span per caller request and one
//! CLIENT span per request to an agent, exported by OTLP (I/O only in [`export`] and [`queue`]:
//! their own threads and runtime; the request path only fills spans and hands finished ones to
//! the bounded queue, which counts the spans it drops).
//!
//! Pure parts: [`attrs`] (span names and attributes, from facts the data plane hands over as plain
//! values) and [`w3c`] (the `traceparent` of a span context, and a checked caller's one read back
//! into a span context). [`span`] holds one call's spans (no I/O: ending a span enqueues it).
//!
//! The `a2a.*` names follow the open OpenTelemetry proposal for A2A semantic conventions,
//! open-telemetry/semantic-conventions-genai pull request 195 ("semconv for a2a protocol",
//! `model/a2a/`, as reviewed in July 2026): `a2a.method.name` with its snake_case values, and
//! `a2a.protocol.version`, `a2a.task.id`, `a2a.context.id`. What the proposal does not name (the integration, the gateway's outcome
//! and refusal reason, the binding, the attempt) is under the gateway's own `a2a_egress.*`, and
//! HTTP facts use the stable HTTP semantic conventions (`http.request.method`,
//! `http.response.status_code`, `server.address`, `server.port`, `error.type`).

pub mod attrs;
pub mod export;
pub mod queue;
pub mod span;
pub mod w3c;

pub use attrs::{Attempt, Call};
pub use export::{Telemetry, TelemetryError};
pub use queue::Dropped;
pub use span::CallSpans;
