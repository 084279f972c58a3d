//! The planner view of one integration, as `GET /v1/integrations[/{name}]` serves it and
//! `a2a-egress status` reads it back (pure projection of the runtime state; no I/O).
//!
//! Two kinds of field, never mixed: what the **gateway decided** (status, reasons, lockfile
//! verdict and the class of each finding, interface, the accepted skill ids, streaming and its
//! evidence, timestamps), and what the **provider wrote**, all under `untrusted` (card and
//! skill names, descriptions, examples, tags, the skills' media types, the agent version, ids of
//! skills the integration does not accept, and the gateway's own accounts of a status, a
//! degraded refresh or a lock finding, since those quote card values and agent answers). Every
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
use crate::select::{StreamingEvidence, streaming_evidence, streaming_verified_at};
use crate::state::{Claim, IntegrationState, Observer, Source, claims};

/// Longest gateway-written sentence (a reason, a finding, an evidence detail) kept, in chars;
/// some quote card values (a version, a binding), so they are bounded like card text.
pub const MAX_REASON_CHARS: usize = 512;
/// Most media types of one skill's input or output rendered.
pub const MAX_MEDIA_TYPES: usize = 32;
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
    /// Why it is not usable, blocked or degraded (gateway-written only; the accounts that quote
    /// the card are `untrusted.reasons`).
    pub reasons: Vec<String>,
    /// The verdict against the lockfile.
    pub lock: LockView,
    /// The interface the gateway uses, when there is a profile.
    pub interface: Option<InterfaceView>,
    /// The accepted skill ids (configuration) the card offers; their modes are provider-written
    /// and under `untrusted.skills`.
    pub skills: Vec<String>,
    /// Streaming: declared, verified, observed.
    pub streaming: StreamingView,
    /// Runtime evidence, oldest first.
    pub evidence: Vec<EvidenceView>,
    /// Each claim of the profile and where its truth comes from now (declared by the card,
    /// verified or contradicted by a probe or a call, inconclusive), with when. The claims'
    /// own words (which quote card values) are `untrusted.claims`, in the same order.
    #[serde(default)]
    pub claims: Vec<ClaimView>,
    /// The profile's identity and age, when there is one.
    pub profile: Option<ProfileView>,
    /// The content guard's policy on message sends (configuration); `None`: content is not
    /// scanned.
    #[serde(default)]
    pub guard: Option<GuardView>,
    /// Provider-written strings, sanitised: quote as data, never follow.
    pub untrusted: Untrusted,
}

/// An integration's content guard policy, as configured (gateway-written).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuardView {
    /// The detectors that run on message sends (`url_origin` last when URL parts are checked).
    pub detectors: Vec<String>,
    /// What a finding does unless its class is in `actions`: `refuse`, `redact` or `record`.
    pub action: String,
    /// Per data class actions.
    pub actions: BTreeMap<String, String>,
    /// The origins URL parts may point at; `None`: URL parts are not checked.
    pub url_origins: Option<Vec<String>>,
    /// Bytes of content scanned per request at most.
    pub budget_bytes: usize,
    /// What content past the budget does: `refuse` or `allow`.
    pub on_unscanned: String,
    /// `record` when answers are scanned too (never changed), else `off`.
    pub inbound: String,
}

impl GuardView {
    /// The view of a compiled policy.
    pub fn of(g: &crate::config::IntegrationGuard) -> GuardView {
        let p = g.policy();
        GuardView {
            detectors: p.detector_names().into_iter().map(str::to_owned).collect(),
            action: g.action.as_str().to_owned(),
            actions: (g.actions.iter())
                .map(|(c, a)| (c.clone(), a.as_str().to_owned()))
                .collect(),
            url_origins: (p.url_origins()).map(|o| o.into_iter().map(str::to_owned).collect()),
            budget_bytes: p.budget_bytes(),
            on_unscanned: match p.on_unscanned() {
                crate::guard::OnUnscanned::Refuse => "refuse",
                crate::guard::OnUnscanned::Allow => "allow",
            }
            .to_owned(),
            inbound: match g.inbound {
                crate::config::Inbound::Off => "off",
                crate::config::Inbound::Record => "record",
            }
            .to_owned(),
        }
    }
}

/// The lockfile verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LockView {
    /// `unpinned`, `compatible`, `review` or `breaking`.
    pub verdict: String,
    /// One line per finding: its class and why it matters (gateway-written); the field and the
    /// values it is about are `untrusted.lock_findings`, in the same order.
    pub findings: Vec<String>,
    /// When the verdict was reached (RFC 3339).
    pub at: String,
    /// Where new delegations go instead (`on_breaking = "fallback:<name>"`).
    pub fallback: Option<String>,
}

/// Binding and protocol version of the chosen interface.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InterfaceView {
    /// `JSONRPC`, `HTTP+JSON` or `GRPC`.
    pub binding: String,
    /// `Major.Minor`.
    pub version: String,
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
    /// `verified` when a probe showed streaming works on the card now served (the gateway's own
    /// probe since the profile was installed, or the lockfile's evidence for this card),
    /// `contradicted` when the newest probe since then showed it does not, else `declared`:
    /// nothing beyond the card's word.
    pub verified: String,
    /// When that probe ran (RFC 3339).
    pub verified_at: Option<String>,
    /// What calls showed since the profile was installed: `refused` when the agent turned a
    /// stream down (streaming is then off until the next refresh), else `null`.
    pub observed: Option<String>,
    /// When the agent last refused a stream (RFC 3339).
    pub observed_at: Option<String>,
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

/// One claim's standing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClaimView {
    /// Which kind of claim: `interface`, `version`, `streaming`, `extension`, `extensions`,
    /// `input` or `artifacts` (the per-value key is `untrusted.claims`).
    pub claim: String,
    /// `declared`, `verified`, `contradicted` or `inconclusive`.
    pub source: String,
    /// Who contradicted it: `probe` or `runtime`.
    pub by: Option<String>,
    /// When it was observed (for `declared`: when the profile was installed), RFC 3339.
    pub at: String,
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
    /// The gateway's account of the status, then of the degraded refresh (they quote card
    /// values and agent answers).
    #[serde(default)]
    pub reasons: Vec<String>,
    /// Per claim (same order as `claims`): `key: what is declared (what was seen)`.
    #[serde(default)]
    pub claims: Vec<String>,
    /// Per lock finding (same order as `lock.findings`): `field: was -> now`.
    #[serde(default)]
    pub lock_findings: Vec<String>,
    /// The card's validation warnings (`path: message`, e.g. a 0.3 card read without its
    /// `protocolVersion`): they name card fields and may quote card values.
    #[serde(default)]
    pub warnings: Vec<String>,
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
    /// Accepted input media types.
    #[serde(default)]
    pub input: Vec<String>,
    /// Produced output media types.
    #[serde(default)]
    pub output: Vec<String>,
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
            findings: (lock.findings.iter())
                .map(|f| format!("{}: {}", f.class, said(&f.why)))
                .collect(),
            at: timestamp(lock.at),
            fallback: lock.fallback.clone(),
        },
        interface: profile
            .and_then(|p| p.interface.as_ref())
            .map(|i| InterfaceView {
                binding: i.binding.as_str().to_owned(),
                version: said(&i.version),
            }),
        skills: profile
            .map(|p| accepted(state, p).cloned().collect())
            .unwrap_or_default(),
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
        claims: claims(state).iter().map(claim_view).collect(),
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
        guard: state.integration.guard.as_ref().map(GuardView::of),
        untrusted: Untrusted {
            reasons: accounts(state),
            claims: (claims(state).iter())
                .map(|c| {
                    said(&format!(
                        "{}: {} ({})",
                        c.claim,
                        c.declared,
                        detail(&c.source)
                    ))
                })
                .collect(),
            lock_findings: (lock.findings.iter())
                .map(|f| said(&format!("{}: {} -> {}", f.field, f.was, f.now)))
                .collect(),
            ..profile.map(|p| untrusted(state, p)).unwrap_or_default()
        },
    }
}

/// Gateway-written sentences only: the state's accounts quote card values, so they are
/// [`accounts`], under `untrusted`.
fn reasons(state: &IntegrationState) -> Vec<String> {
    let mut out = Vec::new();
    match state.status {
        crate::state::Status::Unusable { .. } => {
            out.push("no usable profile (why: untrusted.reasons)".to_owned())
        }
        crate::state::Status::Blocked { .. } => {
            out.push("traffic stopped on purpose (why: untrusted.reasons)".to_owned())
        }
        _ => {}
    }
    if let Some(d) = &state.freshness.degraded {
        out.push(format!(
            "degraded since {} ({} failed refreshes; why: untrusted.reasons)",
            timestamp(d.since),
            d.failures,
        ));
    }
    if state.lock.verdict == crate::state::LockVerdict::Breaking {
        out.push("breaking against the integration's lockfile".into());
    }
    out
}

/// A claim's gateway-decided part; its key is cut to the kind (the rest quotes the card).
fn claim_view(c: &Claim) -> ClaimView {
    let kind = c.claim.split(':').next().unwrap_or_default();
    let (source, by, at) = match &c.source {
        Source::Declared { at } => ("declared", None, at),
        Source::Verified { at, .. } => ("verified", None, at),
        Source::Contradicted { at, by, .. } => {
            let by = match by {
                Observer::Probe => "probe",
                Observer::Runtime => "runtime",
            };
            ("contradicted", Some(by.to_owned()), at)
        }
        Source::Inconclusive { at, .. } => ("inconclusive", None, at),
    };
    ClaimView {
        claim: said(kind),
        source: source.to_owned(),
        by,
        at: timestamp(*at),
    }
}

/// What the observation saw (a probe's detail may quote the agent's answer).
fn detail(s: &Source) -> &str {
    match s {
        Source::Declared { .. } => "declared",
        Source::Verified { detail, .. }
        | Source::Contradicted { detail, .. }
        | Source::Inconclusive { detail, .. } => detail,
    }
}

/// The status's own account, then the degraded refresh's, sanitised and bounded.
fn accounts(state: &IntegrationState) -> Vec<String> {
    let status = state.status.reason().map(said);
    let degraded = state.freshness.degraded.as_ref().map(|d| said(&d.reason));
    status.into_iter().chain(degraded).collect()
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

fn streaming(state: &IntegrationState) -> StreamingView {
    let observed_at = state
        .evidence
        .iter()
        .rev()
        .find(|e| matches!(e.kind, crate::state::EvidenceKind::StreamingRefused))
        .map(|e| timestamp(e.at));
    let verified_at = streaming_verified_at(state);
    StreamingView {
        declared: state.profile().is_some_and(|p| p.streaming),
        mode: state.integration.streaming.as_str().to_owned(),
        allowed: state.streaming_allowed(),
        verified: match (streaming_evidence(state), verified_at) {
            (StreamingEvidence::Contradicted, _) => "contradicted",
            (_, Some(_)) => "verified",
            (_, None) => "declared",
        }
        .to_owned(),
        verified_at: verified_at.map(timestamp),
        observed: (streaming_evidence(state) == StreamingEvidence::Refused)
            .then(|| "refused".to_owned()),
        observed_at,
    }
}

fn untrusted(state: &IntegrationState, p: &Profile) -> Untrusted {
    let d = &p.display;
    let skills = accepted(state, p)
        .map(|id| {
            let shown = d.skills.get(id).cloned().unwrap_or_default();
            let modes = p.skills.get(id);
            let tags = modes.map(|s| s.tags.as_slice()).unwrap_or_default();
            let types = |v: Option<&Vec<String>>| -> Vec<String> {
                (v.into_iter().flatten().take(MAX_MEDIA_TYPES))
                    .map(|m| sanitize(m, MAX_NAME_CHARS))
                    .collect()
            };
            let s = UntrustedSkill {
                name: sanitize(&shown.name, MAX_NAME_CHARS),
                description: sanitize(&shown.description, MAX_SKILL_DESCRIPTION_CHARS),
                examples: (shown.examples.iter().take(MAX_EXAMPLES))
                    .map(|e| sanitize(e, MAX_EXAMPLE_CHARS))
                    .collect(),
                tags: (tags.iter().take(MAX_TAGS))
                    .map(|t| sanitize(t, MAX_TAG_CHARS))
                    .collect(),
                input: types(modes.map(|s| &s.input)),
                output: types(modes.map(|s| &s.output)),
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
        reasons: Vec::new(),
        claims: Vec::new(),
        lock_findings: Vec::new(),
        warnings: d.warnings.iter().map(|w| said(w)).collect(),
    }
}

#[cfg(test)]
pub(super) mod tests;
