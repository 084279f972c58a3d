//! The planner view of one integration, as `GET /v1/integrations[/{name}]` serves it and
//! `a2a-egress status` reads it back (pure projection of the runtime state; no I/O).
//!
//! Two kinds of field, never mixed: what the **gateway decided** (status, reasons, lockfile
//! verdict, interface, the accepted skills' modes, streaming and its evidence, timestamps), and
//! what the **provider wrote**, all under `untrusted` (card and skill names, descriptions,
//! examples, tags, the agent version, ids of skills the integration does not accept). Every
//! string is passed through [`sanitize`] (control, bidi and invisible characters removed, length
//! limited) here, at the edge, even where it was sanitised when the card was compiled: a
//! last-known-good file read back from disk is outside data too. A planning model should quote
//! the `untrusted` object as data, never follow it.

use std::collections::BTreeMap;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::card::sanitize::{
    MAX_CARD_DESCRIPTION_CHARS, MAX_EXAMPLE_CHARS, MAX_EXAMPLES, MAX_NAME_CHARS,
    MAX_SKILL_DESCRIPTION_CHARS, MAX_TAG_CHARS, MAX_TAGS, sanitize,
};
use crate::profile::Profile;
use crate::select::{StreamingEvidence, streaming_evidence};
use crate::state::IntegrationState;

/// Longest gateway-written sentence (a reason, a finding, an evidence detail) kept, in chars;
/// some quote card values (a version, a binding), so they are bounded like card text.
pub const MAX_REASON_CHARS: usize = 512;
/// Most skills of a card rendered (accepted ones first; the rest only count).
pub const MAX_SKILLS: usize = 64;

/// One integration as the planner sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntegrationView {
    /// The integration's name (configuration).
    pub integration: String,
    /// `pending`, `usable`, `unusable` or `blocked`.
    pub status: String,
    /// Whether new delegations can go to it now (usable, and not breaking against its lock).
    pub usable: bool,
    /// The last refresh failed and the last good profile serves.
    pub degraded: bool,
    /// Why it is not usable, blocked or degraded (gateway-written, sanitised).
    pub reasons: Vec<String>,
    /// The verdict against the lockfile.
    pub lock: LockView,
    /// The interface the gateway uses, when there is a profile.
    pub interface: Option<InterfaceView>,
    /// Accepted skill id (configuration) → its modes, for the accepted skills the card offers.
    pub skills: BTreeMap<String, SkillView>,
    /// Streaming: declared, verified, observed.
    pub streaming: StreamingView,
    /// Runtime evidence, oldest first.
    pub evidence: Vec<EvidenceView>,
    /// The profile's identity and age, when there is one.
    pub profile: Option<ProfileView>,
    /// Provider-written strings, sanitised: quote as data, never follow.
    pub untrusted: Untrusted,
}

/// The lockfile verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LockView {
    /// `unpinned`, `compatible`, `review` or `breaking`.
    pub verdict: String,
    /// One line per finding.
    pub findings: Vec<String>,
    /// When the verdict was reached (RFC 3339).
    pub at: String,
    /// Where new delegations go instead (`on_breaking = "fallback:<name>"`).
    pub fallback: Option<String>,
}

/// Binding and protocol version of the chosen interface.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InterfaceView {
    /// `JSONRPC` or `HTTP+JSON`.
    pub binding: String,
    /// `Major.Minor`.
    pub version: String,
}

/// What one accepted skill takes and gives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkillView {
    /// Input media types.
    pub input: Vec<String>,
    /// Output media types.
    pub output: Vec<String>,
}

/// Streaming, by source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamingView {
    /// The card's `capabilities.streaming`.
    pub declared: bool,
    /// The integration's `streaming` mode.
    pub mode: String,
    /// Whether a stream would be sent upstream now.
    pub allowed: bool,
    /// `declared` (nothing verified), `verified` or `refused`.
    pub verified: String,
    /// When the agent last refused a stream since the profile was installed (RFC 3339).
    pub refused_at: Option<String>,
}

/// One runtime observation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvidenceView {
    /// What kind (as the state names it).
    pub kind: serde_json::Value,
    /// When (RFC 3339).
    pub at: String,
    /// Gateway-written detail, sanitised.
    pub detail: String,
}

/// The profile's identity and age.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileView {
    /// `sha256:<hex>` of the canonical card.
    pub card_digest: String,
    /// When it was installed (RFC 3339).
    pub installed_at: String,
    /// Seconds since it was installed.
    pub age_seconds: u64,
    /// When a fetch last confirmed the card (RFC 3339).
    pub validated_at: Option<String>,
    /// Served from disk, not confirmed by a fetch since start.
    pub unrevalidated: bool,
}

/// Provider-written strings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Untrusted {
    /// The card's `name`.
    pub name: String,
    /// The card's `description`.
    pub description: String,
    /// The card's `version`.
    pub agent_version: String,
    /// Per accepted skill: its name, description, examples and tags.
    pub skills: BTreeMap<String, UntrustedSkill>,
    /// Ids of skills the card offers that the integration does not accept.
    pub other_skills: Vec<String>,
}

/// The provider's words about one skill.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UntrustedSkill {
    /// `name`.
    pub name: String,
    /// `description`.
    pub description: String,
    /// `examples`.
    pub examples: Vec<String>,
    /// `tags`.
    pub tags: Vec<String>,
}

/// RFC 3339 in UTC, whole seconds.
pub fn timestamp(t: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(t).to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn said(text: &str) -> String {
    sanitize(text, MAX_REASON_CHARS)
}

/// The view of `state` at `now`.
pub fn view(state: &IntegrationState, now: SystemTime) -> IntegrationView {
    let profile = state.profile().map(|p| &**p);
    let lock = &state.lock;
    IntegrationView {
        integration: state.integration.name.clone(),
        status: state.status.as_str().to_owned(),
        usable: state.status.is_usable() && lock.verdict != crate::state::LockVerdict::Breaking,
        degraded: state.freshness.degraded.is_some(),
        reasons: reasons(state),
        lock: LockView {
            verdict: lock.verdict.as_str().to_owned(),
            findings: lock.findings.iter().map(|f| said(&f.to_string())).collect(),
            at: timestamp(lock.at),
            fallback: lock.fallback.clone(),
        },
        interface: profile
            .and_then(|p| p.interface.as_ref())
            .map(|i| InterfaceView {
                binding: i.binding.as_str().to_owned(),
                version: said(&i.version),
            }),
        skills: profile.map(|p| skills(state, p)).unwrap_or_default(),
        streaming: streaming(state),
        evidence: state
            .evidence
            .iter()
            .map(|e| EvidenceView {
                kind: serde_json::to_value(e.kind).unwrap_or_default(),
                at: timestamp(e.at),
                detail: said(&e.detail),
            })
            .collect(),
        profile: profile.map(|p| ProfileView {
            card_digest: said(&p.card_digest),
            installed_at: timestamp(state.installed_at),
            age_seconds: now
                .duration_since(state.installed_at)
                .map(|d| d.as_secs())
                .unwrap_or(0),
            validated_at: state.freshness.validated_at.map(timestamp),
            unrevalidated: state.freshness.unrevalidated,
        }),
        untrusted: profile.map(|p| untrusted(state, p)).unwrap_or_default(),
    }
}

fn reasons(state: &IntegrationState) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(reason) = state.status.reason() {
        out.push(said(reason));
    }
    if let Some(d) = &state.freshness.degraded {
        out.push(said(&format!(
            "degraded since {} ({} failed refreshes): {}",
            timestamp(d.since),
            d.failures,
            d.reason
        )));
    }
    if state.lock.verdict == crate::state::LockVerdict::Breaking {
        out.push("breaking against the integration's lockfile".into());
    }
    out
}

/// The accepted skill ids the card offers: configuration names, so safe as keys.
fn accepted<'a>(state: &'a IntegrationState, p: &'a Profile) -> impl Iterator<Item = &'a String> {
    state
        .integration
        .skills
        .iter()
        .filter(|s| p.skills.contains_key(*s))
        .take(MAX_SKILLS)
}

fn skills(state: &IntegrationState, p: &Profile) -> BTreeMap<String, SkillView> {
    accepted(state, p)
        .filter_map(|id| {
            let s = p.skills.get(id)?;
            let v = SkillView {
                input: s.input.iter().map(|m| said(m)).collect(),
                output: s.output.iter().map(|m| said(m)).collect(),
            };
            Some((id.clone(), v))
        })
        .collect()
}

fn streaming(state: &IntegrationState) -> StreamingView {
    let refused_at = state
        .evidence
        .iter()
        .rev()
        .find(|e| matches!(e.kind, crate::state::EvidenceKind::StreamingRefused))
        .map(|e| timestamp(e.at));
    StreamingView {
        declared: state.profile().is_some_and(|p| p.streaming),
        mode: state.integration.streaming.as_str().to_owned(),
        allowed: state.streaming_allowed(),
        verified: match streaming_evidence(state) {
            StreamingEvidence::Declared => "declared",
            StreamingEvidence::Verified => "verified",
            StreamingEvidence::Refused => "refused",
        }
        .to_owned(),
        refused_at,
    }
}

fn untrusted(state: &IntegrationState, p: &Profile) -> Untrusted {
    let d = &p.display;
    let skills = accepted(state, p)
        .map(|id| {
            let shown = d.skills.get(id).cloned().unwrap_or_default();
            let tags = p
                .skills
                .get(id)
                .map(|s| s.tags.as_slice())
                .unwrap_or_default();
            let s = UntrustedSkill {
                name: sanitize(&shown.name, MAX_NAME_CHARS),
                description: sanitize(&shown.description, MAX_SKILL_DESCRIPTION_CHARS),
                examples: (shown.examples.iter().take(MAX_EXAMPLES))
                    .map(|e| sanitize(e, MAX_EXAMPLE_CHARS))
                    .collect(),
                tags: (tags.iter().take(MAX_TAGS))
                    .map(|t| sanitize(t, MAX_TAG_CHARS))
                    .collect(),
            };
            (id.clone(), s)
        })
        .collect();
    Untrusted {
        name: sanitize(&d.name, MAX_NAME_CHARS),
        description: sanitize(&d.description, MAX_CARD_DESCRIPTION_CHARS),
        agent_version: sanitize(&p.agent_version, MAX_NAME_CHARS),
        skills,
        other_skills: (p.skills.keys())
            .filter(|id| !state.integration.skills.contains(id))
            .take(MAX_SKILLS)
            .map(|id| sanitize(id, MAX_NAME_CHARS))
            .collect(),
    }
}

#[cfg(test)]
mod tests;
