//! Safe probes: small calls that each check one claim of an integration's profile against the
//! agent's behaviour (a card's claims are not its behaviour). The plan, the requests and the
//! judgement are pure; [`run`] does the calls through a [`Transport`] the caller provides (the
//! gateway's own SSRF-checked client), never on the request path.
//!
//! When: on demand (`a2a-egress probe`, `lock`), and in the running gateway by [`runner`] after a
//! `review` verdict and on the slow schedule [`schedule`] keeps.
//!
//! Only side-effect-free calls, unless the integration names a probe skill
//! (`[integrations.probe] skill`): then, and only to that skill, trivial messages are sent too.
//!
//! | claim | call | holds when |
//! |---|---|---|
//! | `interface` | `GetTask` of an id that cannot exist, at the pinned version | a protocol answer that is not VersionNotSupportedError |
//! | `version` | the same at a version the card does not offer | VersionNotSupportedError |
//! | `extension:<uri>` | the same without the required extension | ExtensionSupportRequiredError |
//! | `streaming` | `SendStreamingMessage` to the probe skill | an event stream, not UnsupportedOperationError |
//! | `input:<type>` | `SendMessage` to the probe skill with one part of the type | not ContentTypeNotSupportedError |
//!
//! Toward an A2A 0.3 agent (JSON-RPC, translated) each request is built as the 1.0 one and
//! translated as a data-plane call is, with 0.3's headers (no `A2A-Version`, `X-A2A-Extensions`),
//! and the answer and every stream event are translated back before the same judgement
//! (`dialect`). `version` and `extension:<uri>` ask about errors 0.3 does not have: they are
//! not sent, and their result is inconclusive with the reason (`not probed: …`), never failed.
//!
//! Toward a gRPC agent each request is the JSON-RPC one made into the rpc's protobuf request, as
//! a data-plane call is, with the same headers as metadata; the transport answers with the
//! JSON-RPC answer (or event stream) a JSON-RPC agent would have given.

use std::time::SystemTime;

use bytes::Bytes;
use serde::Serialize;

use crate::config::StreamingMode;
use crate::profile::{Binding, Interface};
use crate::state::IntegrationState;
use crate::translate::Dialect;
use crate::types::media_type::media_type_accepted;

mod dialect;
mod judge;
pub mod runner;
pub mod schedule;

pub use judge::{NotProbed, judge, judge_in, request};

/// One claim to check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "check", content = "of", rename_all = "snake_case")]
pub enum Check {
    /// The chosen interface answers at the pinned version.
    Interface,
    /// A version the card does not offer is refused with VersionNotSupportedError.
    RefusesOtherVersion(String),
    /// A call without this required extension is refused with ExtensionSupportRequiredError.
    ExtensionEnforced(String),
    /// A trivial `SendStreamingMessage` to the probe skill streams.
    Streaming,
    /// A part of this media type is accepted by the probe skill.
    MediaType(String),
}

impl Check {
    /// The claim's key in a lockfile's `verified` and in evidence.
    pub fn claim(&self) -> String {
        match self {
            Check::Interface => "interface".into(),
            Check::RefusesOtherVersion(_) => "version".into(),
            Check::ExtensionEnforced(uri) => format!("extension:{uri}"),
            Check::Streaming => "streaming".into(),
            Check::MediaType(mt) => format!("input:{mt}"),
        }
    }

    /// Bounded label of the kind of check (the claim without its URI or media type), one of
    /// [`crate::metrics::PROBE_CHECKS`].
    pub fn kind(&self) -> &'static str {
        match self {
            Check::Interface => "interface",
            Check::RefusesOtherVersion(_) => "version",
            Check::ExtensionEnforced(_) => "extension",
            Check::Streaming => "streaming",
            Check::MediaType(_) => "input",
        }
    }

    /// Whether the call sends a message (allowed only to the probe skill).
    pub fn sends_message(&self) -> bool {
        matches!(self, Check::Streaming | Check::MediaType(_))
    }
}

/// What a probe found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "result", content = "detail", rename_all = "snake_case")]
pub enum Outcome {
    /// The claim holds.
    Ok(String),
    /// The agent contradicts the claim.
    Failed(String),
    /// No conclusion (no protocol answer, transport failure).
    Inconclusive(String),
}

impl Outcome {
    /// Bounded label.
    pub fn as_str(&self) -> &'static str {
        match self {
            Outcome::Ok(_) => "ok",
            Outcome::Failed(_) => "failed",
            Outcome::Inconclusive(_) => "inconclusive",
        }
    }

    fn detail(&self) -> &str {
        match self {
            Outcome::Ok(d) | Outcome::Failed(d) | Outcome::Inconclusive(d) => d,
        }
    }
}

/// One probe's evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProbeResult {
    /// The claim checked.
    pub check: Check,
    /// What the agent did.
    pub outcome: Outcome,
    /// When.
    #[serde(serialize_with = "crate::types::rfc3339::serialize")]
    pub at: SystemTime,
}

impl std::fmt::Display for ProbeResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {} ({})",
            self.check.claim(),
            self.outcome.as_str(),
            self.outcome.detail()
        )
    }
}

/// Where and how probes call the agent: the integration's chosen interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The interface.
    pub interface: Interface,
    /// What the agent speaks there: a 0.3 agent's probes are translated.
    pub dialect: Dialect,
    /// The tenant to send (the integration's override, else the interface's).
    pub tenant: Option<String>,
    /// Extensions activated on every call (the card's required ones among them).
    pub extensions: Vec<String>,
    /// The probe skill and the text of its trivial messages, when the integration names one.
    pub probe: Option<ProbeSkill>,
}

/// The one skill message probes may reach, as the integration names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeSkill {
    /// Skill id (sent as the `skillId` metadata hint).
    pub skill: String,
    /// Text of the trivial message.
    pub text: String,
}

/// A call to make: the transport adds the integration's credential and nothing else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// HTTP method.
    pub method: http::Method,
    /// Absolute URL (the interface's, plus the HTTP+JSON path).
    pub url: String,
    /// Headers (A2A-Version and A2A-Extensions, or 0.3's X-A2A-Extensions; content negotiation).
    pub headers: http::HeaderMap,
    /// JSON body, if any (for a gRPC agent, the rpc's protobuf request).
    pub body: Option<Bytes>,
    /// Toward a gRPC agent, the rpc the call is (its path, `/lf.a2a.v1.A2AService/GetTask`):
    /// `url` is the interface's, `headers` go as metadata, and the transport answers as a
    /// JSON-RPC agent would ([`crate::translate::grpc`]), so the judgement is the same.
    pub grpc: Option<&'static str>,
}

/// The agent's answer, read within the transport's size cap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// HTTP status.
    pub status: u16,
    /// `Content-Type`, if any.
    pub content_type: Option<String>,
    /// The body.
    pub body: Bytes,
}

/// Why a probe call got no answer (the check is then inconclusive).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{detail}")]
pub struct TransportError {
    /// Bounded label of the failure (the transport's own error kind).
    pub kind: &'static str,
    /// What happened, for the evidence line.
    pub detail: String,
}

impl TransportError {
    /// Bounded label for logs and metrics.
    pub fn kind(&self) -> &'static str {
        self.kind
    }
}

/// Sends probe requests (I/O lives in the implementation).
#[async_trait::async_trait]
pub trait Transport: Send + Sync {
    /// Makes one call; `Err` is a transport failure.
    async fn send(&self, request: Request) -> Result<Response, TransportError>;
}

/// The probes a state allows (pure): the side-effect-free ones always, message probes only with
/// a probe skill the profile offers. `None` when the state has no usable interface (none, or one
/// in a dialect the gateway does not call).
pub fn plan(state: &IntegrationState) -> Option<(Target, Vec<Check>)> {
    let (profile, _) = state.serving()?;
    let interface = profile.interface.clone()?;
    let dialect = Dialect::of(&interface)?;
    let mut checks = vec![Check::Interface];
    if let Some(other) = ["0.3", "99.0"]
        .into_iter()
        .find(|v| !profile.offered.iter().any(|o| o.version == *v) && *v != interface.version)
    {
        checks.push(Check::RefusesOtherVersion(other.to_owned()));
    }
    checks.extend(
        profile
            .required_extensions
            .iter()
            .map(|u| Check::ExtensionEnforced(u.clone())),
    );
    let i = &state.integration;
    let probe = i
        .lock
        .probe
        .as_ref()
        .and_then(|p| Some((p, profile.skills.get(&p.skill)?)));
    if let Some((_, skill)) = probe {
        if profile.streaming && i.streaming != StreamingMode::Off {
            checks.push(Check::Streaming);
        }
        let accepts = &skill.input;
        let sends: Vec<String> = if i.lock.input_modes.is_empty() {
            accepts.clone()
        } else {
            i.lock.input_modes.clone()
        };
        checks.extend(
            sends
                .into_iter()
                .filter(|m| !m.contains('*') && media_type_accepted(m, accepts))
                .map(Check::MediaType),
        );
    }
    let target = Target {
        tenant: i.tenant.clone().or_else(|| interface.tenant.clone()),
        interface,
        dialect,
        extensions: state.activated_extensions(),
        probe: probe.map(|(p, _)| ProbeSkill {
            skill: p.skill.clone(),
            text: p.text.clone(),
        }),
    };
    Some((target, checks))
}

/// Runs every check of `plan` through `transport`, one at a time (a probe run must not look like
/// load), and returns the evidence in plan order.
pub async fn run(target: &Target, checks: &[Check], transport: &dyn Transport) -> Vec<ProbeResult> {
    let mut out = Vec::with_capacity(checks.len());
    for (n, check) in checks.iter().enumerate() {
        // Never a message to a skill the integration did not name as safe.
        // A check the agent's protocol version gives no meaning is reported as not probed.
        let outcome = match request(check, target, n) {
            Err(why) => Outcome::Inconclusive(format!("not probed: {why}")),
            Ok(req) => match transport.send(req).await {
                Ok(resp) => judge_in(check, target.dialect, resp),
                Err(e) => Outcome::Inconclusive(format!("no answer: {e}")),
            },
        };
        out.push(ProbeResult {
            check: check.clone(),
            outcome,
            at: SystemTime::now(),
        });
    }
    out
}

/// Whether the binding sends JSON-RPC envelopes.
fn is_jsonrpc(b: Binding) -> bool {
    b == Binding::JsonRpc
}

/// Whether a `Content-Type` is an event stream (parameters and case aside).
fn is_event_stream(content_type: Option<&str>) -> bool {
    content_type
        .and_then(|c| c.split(';').next())
        .is_some_and(|c| c.trim().eq_ignore_ascii_case("text/event-stream"))
}

/// The data of each event of an event-stream body, in order, read as the data plane reads a
/// stream (the one splitter, [`crate::types::sse`]): an event's `data:` lines joined with LF (as
/// the SSE format says; Python a2a-sdk 0.3.26 spreads one REST event over several), any line end,
/// a leading byte order mark dropped, an event without data (or only blank data) left out, and
/// an event the body ends without finishing dropped, as an SSE reader drops it. The body was
/// read whole within the transport's cap, so no event can be over the splitter's cap.
fn sse_data(body: &[u8]) -> Vec<String> {
    let mut split = crate::types::sse::Splitter::new(body.len().saturating_add(1));
    let events = split.push(body).unwrap_or_else(|e| e.done);
    (events.iter())
        .filter_map(|e| crate::types::sse::data_of(e))
        .map(|d| String::from_utf8_lossy(&d).into_owned())
        .collect()
}

#[cfg(test)]
mod tests;
