//! The one conversion from an integration's runtime state to a selection [`Candidate`] (pure).
//!
//! Only gateway decisions and validated card facts cross over: the status, the lockfile
//! verdict, freshness, the chosen interface's binding, skill modes and tags, streaming with its
//! evidence, and the configured data classes. `Profile.display` (names, descriptions,
//! examples) does not, so provider prose cannot reach a selection.

use std::time::SystemTime;

use super::{Candidate, Freshness, SkillModes, Standing, StreamingEvidence};
use crate::state::{IntegrationState, LockVerdict, Source, Status, claims};

/// The candidate `state` makes.
pub fn candidate(state: &IntegrationState) -> Candidate {
    let integration = &state.integration;
    let profile = state.profile().map(|p| &**p);
    Candidate {
        name: integration.name.clone(),
        standing: match &state.status {
            Status::Usable { .. } => Standing::Usable,
            Status::Pending => Standing::Pending,
            Status::Unusable { reason, .. } => Standing::Unusable(reason.clone()),
            Status::Blocked { reason, .. } => Standing::Blocked(reason.clone()),
        },
        lock: state.lock.verdict,
        freshness: freshness(state),
        binding: profile
            .and_then(|p| p.interface.as_ref())
            .map(|i| i.binding),
        accepted_skills: integration.skills.clone(),
        skills: profile
            .map(|p| {
                p.skills
                    .iter()
                    .map(|(id, s)| {
                        let modes = SkillModes {
                            input: s.input.clone(),
                            output: s.output.clone(),
                            tags: s.tags.clone(),
                        };
                        (id.clone(), modes)
                    })
                    .collect()
            })
            .unwrap_or_default(),
        streaming_declared: profile.is_some_and(|p| p.streaming),
        streaming_mode: integration.streaming,
        streaming_evidence: streaming_evidence(state),
        data_classes: integration.data_classes.clone(),
    }
}

fn freshness(state: &IntegrationState) -> Freshness {
    if state.freshness.degraded.is_some() {
        Freshness::Degraded
    } else if state.freshness.unrevalidated {
        Freshness::Unrevalidated
    } else {
        Freshness::Fresh
    }
}

/// Refused when the agent turned a stream down since the last refresh; contradicted when the
/// newest observation of the `streaming` claim since the profile was installed (the gateway's
/// own probe, or a call) says it does not work; verified when a probe showed streaming works on
/// the card now served ([`streaming_verified_at`]); else declared.
pub fn streaming_evidence(state: &IntegrationState) -> StreamingEvidence {
    if state.overrides.streaming_off {
        return StreamingEvidence::Refused;
    }
    if matches!(streaming_claim(state), Some(Source::Contradicted { .. })) {
        return StreamingEvidence::Contradicted;
    }
    match streaming_verified_at(state) {
        Some(_) => StreamingEvidence::Verified,
        None => StreamingEvidence::Declared,
    }
}

/// Where the profile's `streaming` claim stands now (see [`claims`]).
pub fn streaming_claim(state: &IntegrationState) -> Option<Source> {
    (claims(state).into_iter())
        .find(|c| c.claim == "streaming")
        .map(|c| c.source)
}

/// When a probe last verified streaming for the card now served: the gateway's own scheduled
/// probe when the `streaming` claim's newest observation is a verifying one, else the
/// lockfile's `verified.streaming` (`probe ok <RFC 3339>`, written by `a2a-egress lock`),
/// counted only while the lock was pinned from this very card (same digest) and is not
/// breaking. A lock of an older card says nothing about the current one.
pub fn streaming_verified_at(state: &IntegrationState) -> Option<SystemTime> {
    match streaming_claim(state) {
        Some(Source::Verified { at, .. }) => Some(at),
        Some(Source::Contradicted { .. }) => None,
        _ => lock_verified_at(state),
    }
}

fn lock_verified_at(state: &IntegrationState) -> Option<SystemTime> {
    let lock = state.lock.lock.as_deref()?;
    let profile = state.profile()?;
    if state.lock.verdict == LockVerdict::Breaking || lock.card_digest != profile.card_digest {
        return None;
    }
    let at = lock.verified.get("streaming")?.strip_prefix("probe ok ")?;
    chrono::DateTime::parse_from_rfc3339(at)
        .ok()
        .map(|t| SystemTime::from(t.with_timezone(&chrono::Utc)))
}
