//! Building a lockfile from an integration manifest and its compiled profile (pure).
//!
//! The `requires` subset is the [`Manifest`] intersected with the profile (the integration's
//! manifest meets the lockfile): the accepted skills the card offers; per skill the media
//! types the workflow sends that the skill accepts, the ones it reads back that the skill
//! produces, and the scopes it holds that the skill's security uses; streaming when the
//! integration requires it, or prefers it and the card offers it; the optional extensions it activates that the card offers. A profile
//! the workflow could not use today cannot be pinned: every reason is reported. Whether the
//! profile meets the rest of the integration's contract (origins, pins) is the caller's check.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use super::diff::{render_list, render_security, satisfiable, used_scopes};
use super::{Lock, Requires, SkillNeed};
use crate::profile::Profile;
use crate::types::media_type::media_type_accepted;

/// How much the workflow needs streaming (the integration's `streaming` setting).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum StreamingNeed {
    /// Streaming calls must stream: losing streaming is breaking.
    Required,
    /// Streams when offered, else downgrades: losing streaming is review.
    #[default]
    Preferred,
    /// Never streams upstream: streaming is not pinned.
    Off,
}

/// What an integration declares about its workflow (the lockfile-relevant part of its config).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Manifest {
    /// The card URL (recorded as the lock's `agent`).
    pub agent: String,
    /// Accepted skill ids.
    pub skills: Vec<String>,
    /// Scopes the workflow's credential holds.
    pub scopes: Vec<String>,
    /// The integration's `streaming` setting.
    pub streaming: StreamingNeed,
    /// Optional extensions it activates.
    pub extensions: Vec<String>,
    /// Media types it sends (empty: whatever each skill accepts).
    pub input_modes: Vec<String>,
    /// Media types it reads back (empty: whatever each skill produces).
    pub output_modes: Vec<String>,
}

/// Why a profile cannot be pinned for an integration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PinError {
    /// The profile is unusable.
    #[error("the profile is not usable: {0}")]
    Unusable(String),
    /// `streaming = "required"` but the card does not advertise streaming.
    #[error("streaming: the integration requires streaming but the card does not advertise it")]
    StreamingMissing,
    /// The skill accepts none of the media types the integration sends.
    #[error(
        "skills.{skill}.input: the skill accepts {accepts}, none of the media types the integration sends ({sends})"
    )]
    NoInput {
        /// Skill id.
        skill: String,
        /// What the skill accepts.
        accepts: String,
        /// The integration's `input_modes`.
        sends: String,
    },
    /// The skill produces none of the media types the integration reads.
    #[error(
        "skills.{skill}.output: the skill produces {produces}, none of the media types the integration reads ({reads})"
    )]
    NoOutput {
        /// Skill id.
        skill: String,
        /// What the skill produces.
        produces: String,
        /// The integration's `output_modes`.
        reads: String,
    },
    /// Every security alternative of the skill needs a scope the integration does not hold.
    #[error(
        "skills.{skill}.security: every alternative ({needs}) needs a scope the integration does not hold (it holds {holds})"
    )]
    Scopes {
        /// Skill id.
        skill: String,
        /// The skill's security requirements.
        needs: String,
        /// The integration's `scopes`.
        holds: String,
    },
}

impl PinError {
    /// Bounded label for logs.
    pub fn kind(&self) -> &'static str {
        match self {
            PinError::Unusable(_) => "unusable",
            PinError::StreamingMissing => "streaming",
            PinError::NoInput { .. } => "input",
            PinError::NoOutput { .. } => "output",
            PinError::Scopes { .. } => "scopes",
        }
    }
}

/// A lock built for an integration, with what the manifest asked for but the card does not offer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pinned {
    /// The lock.
    pub lock: Lock,
    /// Accepted skills and activated extensions the card does not offer (not pinned), for the
    /// operator to see.
    pub skipped: Vec<String>,
}

/// Pins `profile` for the workflow `manifest` describes at `now`, with probe evidence `verified`
/// (claim → result).
pub fn pin(
    manifest: &Manifest,
    profile: &Profile,
    now: DateTime<Utc>,
    verified: BTreeMap<String, String>,
) -> Result<Pinned, Vec<PinError>> {
    let iface = match &profile.interface {
        Some(i) if profile.is_usable() => i,
        _ => {
            let why = profile
                .reason()
                .unwrap_or_else(|| "no usable interface".to_owned());
            return Err(vec![PinError::Unusable(why)]);
        }
    };
    let mut errors = Vec::new();
    let streaming = match manifest.streaming {
        StreamingNeed::Required => {
            if !profile.streaming {
                errors.push(PinError::StreamingMissing);
            }
            true
        }
        StreamingNeed::Preferred => profile.streaming,
        StreamingNeed::Off => false,
    };
    let mut skipped = Vec::new();
    let mut skills = BTreeMap::new();
    for id in &manifest.skills {
        match profile.skills.get(id) {
            None => skipped.push(format!("skill {id}")),
            Some(have) => match skill_need(manifest, id, have) {
                Ok(need) => {
                    skills.insert(id.clone(), need);
                }
                Err(e) => errors.push(e),
            },
        }
    }
    let mut extensions = Vec::new();
    for e in &manifest.extensions {
        if profile.extensions.contains(e) {
            extensions.push(e.clone());
        } else {
            skipped.push(format!("extension {e}"));
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    extensions.sort();
    let lock = Lock {
        agent: manifest.agent.clone(),
        pinned_at: now,
        card_digest: profile.card_digest.clone(),
        agent_version: profile.agent_version.clone(),
        interface: iface.binding_version(),
        requires: Requires {
            streaming,
            skills,
            extensions,
        },
        verified,
    };
    Ok(Pinned { lock, skipped })
}

/// One skill's needs: manifest media types ∩ what the skill offers, held scopes it uses.
fn skill_need(
    manifest: &Manifest,
    id: &str,
    have: &crate::profile::SkillProfile,
) -> Result<SkillNeed, PinError> {
    let policy = manifest;
    let pick = |wanted: &[String], offered: &[String]| -> Vec<String> {
        let mut v: Vec<String> = if wanted.is_empty() {
            offered.to_vec()
        } else {
            wanted
                .iter()
                .filter(|m| media_type_accepted(m, offered))
                .cloned()
                .collect()
        };
        v.sort();
        v.dedup();
        v
    };
    let input = pick(&policy.input_modes, &have.input);
    if input.is_empty() {
        return Err(PinError::NoInput {
            skill: id.to_owned(),
            accepts: render_list(&have.input),
            sends: render_list(&policy.input_modes),
        });
    }
    // What the workflow reads that the skill may produce, and what the skill produces that the
    // workflow reads: a wildcard on either side matches the other's concrete types.
    let mut output: Vec<String> = if policy.output_modes.is_empty() {
        have.output.clone()
    } else {
        let reads = &policy.output_modes;
        reads
            .iter()
            .filter(|r| media_type_accepted(r, &have.output))
            .chain(have.output.iter().filter(|o| media_type_accepted(o, reads)))
            .cloned()
            .collect()
    };
    output.sort();
    output.dedup();
    if output.is_empty() {
        return Err(PinError::NoOutput {
            skill: id.to_owned(),
            produces: render_list(&have.output),
            reads: render_list(&policy.output_modes),
        });
    }
    if !satisfiable(&have.security, &manifest.scopes) {
        return Err(PinError::Scopes {
            skill: id.to_owned(),
            needs: render_security(&have.security),
            holds: render_list(&manifest.scopes),
        });
    }
    Ok(SkillNeed {
        input,
        output,
        scopes: used_scopes(&have.security, &manifest.scopes),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lock::diff::tests::{manifest, pricing_profile};

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-10-02T08:30:00Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    #[test]
    fn pins_the_manifest_intersected_with_the_profile() {
        let mut i = manifest();
        i.skills.push("not-offered".into());
        i.extensions = vec![
            "https://example.com/ext/cost-estimate/v1".into(),
            "urn:gone".into(),
        ];
        i.input_modes = vec!["application/json".into(), "application/xml".into()];
        let p = pricing_profile();
        let pinned = pin(&i, &p, now(), BTreeMap::new()).unwrap();
        let l = &pinned.lock;
        assert_eq!(l.agent, i.agent);
        assert_eq!(l.agent_version, "3.2.0");
        assert_eq!(l.card_digest, p.card_digest);
        assert_eq!(l.interface.to_string(), "JSONRPC 1.0");
        assert!(l.requires.streaming);
        let s = &l.requires.skills["itinerary-pricing"];
        assert_eq!(s.input, ["application/json"]);
        assert_eq!(s.output, ["application/json"]);
        // The bearer alternative the integration can satisfy; the admin-only one is not used.
        assert_eq!(s.scopes, ["pricing.quote"]);
        assert_eq!(
            l.requires.extensions,
            ["https://example.com/ext/cost-estimate/v1"]
        );
        assert_eq!(pinned.skipped, ["skill not-offered", "extension urn:gone"]);
    }

    #[test]
    fn without_manifest_media_types_the_skill_offer_is_pinned() {
        let mut i = manifest();
        i.input_modes.clear();
        i.output_modes.clear();
        let mut p = pricing_profile();
        let s = p.skills.get_mut("itinerary-pricing").unwrap();
        s.input = vec!["text/plain".into(), "application/json".into()];
        let l = pin(&i, &p, now(), BTreeMap::new()).unwrap().lock;
        assert_eq!(
            l.requires.skills["itinerary-pricing"].input,
            ["application/json", "text/plain"]
        );
    }

    #[test]
    fn streaming_is_pinned_when_required_or_preferred_and_offered() {
        let mut i = manifest();
        i.streaming = StreamingNeed::Preferred;
        let mut p = pricing_profile();
        assert!(
            pin(&i, &p, now(), BTreeMap::new())
                .unwrap()
                .lock
                .requires
                .streaming
        );
        p.streaming = false;
        // Preferred and not offered: nothing to pin, and no error.
        assert!(
            !pin(&i, &p, now(), BTreeMap::new())
                .unwrap()
                .lock
                .requires
                .streaming
        );
        i.streaming = StreamingNeed::Off;
        let p = pricing_profile();
        assert!(
            !pin(&i, &p, now(), BTreeMap::new())
                .unwrap()
                .lock
                .requires
                .streaming
        );
    }

    #[test]
    fn a_profile_the_workflow_cannot_use_is_not_pinned() {
        let i = manifest();
        let mut p = pricing_profile();
        p.streaming = false;
        let s = p.skills.get_mut("itinerary-pricing").unwrap();
        s.input = vec!["application/pdf".into()];
        s.output = vec!["text/csv".into()];
        let errs = pin(&i, &p, now(), BTreeMap::new()).unwrap_err();
        let text: Vec<String> = errs.iter().map(ToString::to_string).collect();
        assert_eq!(
            text,
            [
                "streaming: the integration requires streaming but the card does not advertise it",
                "skills.itinerary-pricing.input: the skill accepts [application/pdf], none of the media types the integration sends ([application/json])",
            ]
        );
        let mut p = pricing_profile();
        p.skills.get_mut("itinerary-pricing").unwrap().output = vec!["text/csv".into()];
        let errs = pin(&i, &p, now(), BTreeMap::new()).unwrap_err();
        assert_eq!(
            errs[0].to_string(),
            "skills.itinerary-pricing.output: the skill produces [text/csv], none of the media types the integration reads ([application/json])"
        );
        let mut i2 = manifest();
        i2.scopes = vec!["other".into()];
        let errs = pin(&i2, &pricing_profile(), now(), BTreeMap::new()).unwrap_err();
        assert_eq!(
            errs[0].to_string(),
            "skills.itinerary-pricing.security: every alternative (bearer[pricing.quote] | bearer[pricing.admin]) needs a scope the integration does not hold (it holds [other])"
        );
        assert_eq!(errs[0].kind(), "scopes");
    }

    #[test]
    fn an_unusable_profile_is_not_pinned() {
        let mut p = pricing_profile();
        p.verdict =
            crate::profile::Verdict::Unusable(crate::profile::Unusable::NoSupportedInterface {
                offered: vec![("GRPC".into(), "1.0".into())],
            });
        let errs = pin(&manifest(), &p, now(), BTreeMap::new()).unwrap_err();
        assert_eq!(
            errs[0].to_string(),
            "the profile is not usable: no mutually supported interface (card offers GRPC 1.0)"
        );
        assert_eq!(errs[0].kind(), "unusable");
    }
}
