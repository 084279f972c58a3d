//! The one conversion from an integration's runtime state to a selection [`Candidate`] (pure).
//!
//! Only gateway decisions and validated card facts cross over: the status, the lockfile
//! verdict, freshness, the chosen interface's binding, skill modes and tags, streaming with its
//! evidence, and the configured data classes. `Profile.display` (names, descriptions,
//! examples) does not, so provider prose cannot reach a selection.

use super::{Candidate, Freshness, SkillModes, Standing, StreamingEvidence};
use crate::state::{EvidenceKind, IntegrationState, Status};

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

/// Refused when the agent turned a stream down since the last refresh; verified when the
/// state holds evidence of a working stream; else declared.
pub fn streaming_evidence(state: &IntegrationState) -> StreamingEvidence {
    if state.overrides.streaming_off {
        return StreamingEvidence::Refused;
    }
    // Exhaustive on purpose: a new kind of evidence must be judged here.
    let verified = state.evidence.iter().any(|e| match e.kind {
        EvidenceKind::StreamingRefused
        | EvidenceKind::StreamingDowngradeVerified
        | EvidenceKind::StaleError(_)
        | EvidenceKind::ArtifactSchemaMismatch => false,
    });
    match verified {
        true => StreamingEvidence::Verified,
        false => StreamingEvidence::Declared,
    }
}
