//! Deterministic selection: which integration can take a planner's [`Need`], and why each other
//! one cannot (pure; the admin listener serves it as `POST /v1/select`, the CLI as
//! `a2a-egress select`).
//!
//! Selection is a constrained filter, not a ranking by popularity: a candidate is **accepted**
//! only when it passes every hard check, and every candidate gets its reasons, each a
//! machine-readable [`Code`] and one gateway-written sentence. The checks, in order:
//!
//! 1. standing: pending, unusable or blocked integrations are excluded (`PENDING`, `UNUSABLE`,
//!    `BLOCKED`); a `breaking` lockfile verdict excludes too (`LOCK_BREAKING`);
//! 2. skill: the named skill must be offered by the card (`NO_SKILL`) and be one of the
//!    integration's accepted skills (`SKILL_NOT_ACCEPTED`); requested tags must all be carried
//!    by one accepted skill (`TAGS_MISSING`); that skill must accept every input media type
//!    (`INPUT_MODE`) and produce one of the output types (`OUTPUT_MODE`);
//! 3. streaming, when required: declared by the card (`NO_STREAMING`), not turned off by the
//!    integration (`STREAMING_OFF`), not refused by the agent at runtime (`STREAMING_REFUSED`),
//!    not contradicted by the gateway's own probe since the profile was installed
//!    (`STREAMING_CONTRADICTED`);
//! 4. binding, when named: the interface the gateway uses speaks it (`BINDING_UNSUPPORTED`);
//! 5. data classes: each is allowed by the integration (`DATA_CLASS_NOT_ALLOWED`).
//!
//! Reason messages are gateway-written only. Where a reason is about provider-written values
//! (the card's media types, the state's account of why a profile is unusable, which quotes the
//! card), they travel apart in the reason's `untrusted` list, sanitised and bounded.
//!
//! When several accepted skills fit a tags-only need, the first by id (byte order) serves it.
//!
//! An accepted candidate's reasons also name the risks the tie rule weighs (`PROFILE_DEGRADED`,
//! `PROFILE_UNREVALIDATED`, `LOCK_REVIEW`, `LOCK_UNPINNED`, `STREAMING_UNVERIFIED`), so the
//! chosen one says what it carries, not only the candidates it outranked.
//!
//! No partial matches: when nothing passes, `chosen` is `null` and [`Gap`] lists what each
//! candidate lacks. Among accepted candidates the **tie rule** picks the first by: lockfile
//! verdict (`compatible` before `unpinned` before `review`), then freshness (revalidated before
//! served-from-disk before degraded), then, when streaming is required, streaming verified by a
//! probe of the card now served before streaming only declared, then integration name (byte
//! order). No
//! provider-written text (names, descriptions, examples) exists in a [`Candidate`], so none can
//! sway the answer.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::card::sanitize::sanitize;
use crate::config::StreamingMode;
use crate::profile::Binding;
use crate::state::LockVerdict;
use crate::types::media_type::media_type_accepted;

mod from_state;
mod need;

pub use from_state::{candidate, streaming_claim, streaming_evidence, streaming_verified_at};
pub use need::{MAX_NEED_BYTES, Need, NeedError};

/// Whether an integration can take traffic at all, as selection sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    /// A usable profile is loaded.
    Usable,
    /// No verdict yet.
    Pending,
    /// No usable profile (gateway-written reason).
    Unusable(String),
    /// Traffic stopped on purpose (gateway-written reason).
    Blocked(String),
}

/// How current the profile is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Freshness {
    /// Confirmed by a fetch since start, and the last refresh succeeded.
    Fresh,
    /// Served from the last-known-good file; no fetch confirmed it yet.
    Unrevalidated,
    /// The last refresh failed; the last good profile serves.
    Degraded,
}

impl Freshness {
    /// Bounded label.
    pub fn as_str(self) -> &'static str {
        match self {
            Freshness::Fresh => "fresh",
            Freshness::Unrevalidated => "unrevalidated",
            Freshness::Degraded => "degraded",
        }
    }
}

/// What is known about streaming beyond the card's claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamingEvidence {
    /// Only the card's declaration.
    Declared,
    /// A probe showed it works on the card now served.
    Verified,
    /// The agent refused a stream the card claimed (streaming is off until the next refresh).
    Refused,
    /// The newest probe of streaming (or a call) since the profile was installed showed it does
    /// not work.
    Contradicted,
}

/// The modes and tags of one skill.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SkillModes {
    /// Accepted input media types.
    pub input: Vec<String>,
    /// Produced output media types.
    pub output: Vec<String>,
    /// Tags (sanitised, compared lowercase).
    pub tags: Vec<String>,
}

/// Everything selection reads about one integration: gateway decisions and validated card
/// facts, never provider prose. Built from the runtime state by [`candidate`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// Integration name.
    pub name: String,
    /// Usable, pending, unusable or blocked.
    pub standing: Standing,
    /// The verdict against the lockfile.
    pub lock: LockVerdict,
    /// How current the profile is.
    pub freshness: Freshness,
    /// The binding of the interface the gateway uses (`None` without a profile).
    pub binding: Option<Binding>,
    /// The integration's accepted skill ids (configuration).
    pub accepted_skills: Vec<String>,
    /// Skill id → modes, for every skill the card offers.
    pub skills: BTreeMap<String, SkillModes>,
    /// The card's `capabilities.streaming`.
    pub streaming_declared: bool,
    /// The integration's streaming mode.
    pub streaming_mode: StreamingMode,
    /// Runtime and probe evidence about streaming.
    pub streaming_evidence: StreamingEvidence,
    /// The integration's allowed data classes.
    pub data_classes: Vec<String>,
}

/// A reason code: what was checked and how it came out (serialised SCREAMING_SNAKE_CASE).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Code {
    /// Excluded: the integration has no verdict yet.
    Pending,
    /// Excluded: no usable profile.
    Unusable,
    /// Excluded: traffic stopped on purpose (breaking change, `on_breaking = "block"`).
    Blocked,
    /// Excluded: the profile is breaking against the lockfile.
    LockBreaking,
    /// Excluded: the card offers no skill with the requested id.
    NoSkill,
    /// Excluded: the card offers the skill but the integration does not accept it.
    SkillNotAccepted,
    /// Excluded: no accepted skill carries every requested tag.
    TagsMissing,
    /// Excluded: the skill does not accept a media type the need sends.
    InputMode,
    /// Excluded: the skill produces none of the media types the need takes.
    OutputMode,
    /// Excluded: streaming required, the card does not declare it.
    NoStreaming,
    /// Excluded: streaming required, the integration turns it off.
    StreamingOff,
    /// Excluded: streaming required, the agent refused a stream at runtime.
    StreamingRefused,
    /// Excluded: streaming required, the gateway's own probe (or a call) showed it does not work.
    StreamingContradicted,
    /// Excluded: the gateway reaches the agent over another binding than the need's.
    BindingUnsupported,
    /// Excluded: a data class of the need is not allowed by the integration.
    DataClassNotAllowed,
    /// Accepted: the skill is offered and accepted.
    SkillOffered,
    /// Accepted: every input media type is accepted.
    InputAccepted,
    /// Accepted: an output media type the need takes is produced.
    OutputProduced,
    /// Accepted: streaming is available (declared, or verified).
    StreamingSupported,
    /// Accepted: the binding matches.
    BindingSupported,
    /// Accepted: every data class is allowed.
    DataClassesAllowed,
    /// Accepted, with a risk: the last refresh failed and the last good profile serves.
    ProfileDegraded,
    /// Accepted, with a risk: served from the last-known-good file, no fetch confirmed it yet.
    ProfileUnrevalidated,
    /// Accepted, with a risk: the profile changed in a way the lockfile says someone should review.
    LockReview,
    /// Accepted, with a risk: no lockfile pins what the workflow needs.
    LockUnpinned,
    /// Accepted, with a risk: streaming is needed and only the card declares it.
    StreamingUnverified,
    /// Accepted and chosen: first by the tie rule.
    Chosen,
    /// Accepted, not chosen: ranked after another by the tie rule.
    Outranked,
}

/// One reason: a code, a gateway-written sentence, and the provider-written values it is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reason {
    /// Machine-readable.
    pub code: Code,
    /// For a person (or a planner) reading the answer; gateway-written only, never card text.
    pub message: String,
    /// Card values (or the state's account that quotes them) the message refers to: quote as
    /// data, never follow. Each is sanitised and at most [`MAX_QUOTED_CHARS`] characters; at most
    /// `MAX_LISTED` entries. Absent when empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub untrusted: Vec<String>,
}

/// Longest provider-written value quoted in a reason, in characters.
pub const MAX_QUOTED_CHARS: usize = 512;

fn reason(code: Code, message: impl Into<String>) -> Reason {
    Reason {
        code,
        message: message.into(),
        untrusted: Vec::new(),
    }
}

impl Reason {
    /// The same reason, quoting `values` (provider-written) apart from the message, sanitised
    /// and bounded here: the state's strings may come from a file read back from disk.
    fn quoting(mut self, values: &[String]) -> Reason {
        self.untrusted = (values.iter().take(MAX_LISTED))
            .map(|v| sanitize(v, MAX_QUOTED_CHARS))
            .collect();
        self
    }
}

/// One candidate's verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// Integration name.
    pub integration: String,
    /// Whether it passed every check.
    pub accepted: bool,
    /// The skill it would serve the need with, when accepted.
    pub skill: Option<String>,
    /// Why: the checks passed (accepted) or failed (excluded).
    pub reasons: Vec<Reason>,
}

/// What each candidate lacks, when none fits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Gap {
    /// One sentence.
    pub message: String,
    /// Per candidate, the codes it failed.
    pub candidates: Vec<Lacks>,
}

/// The failed checks of one candidate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Lacks {
    /// Integration name.
    pub integration: String,
    /// Codes of the failed checks.
    pub lacks: Vec<Code>,
}

/// The answer to a need.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Answer {
    /// The chosen integration, or `null` when none fits.
    pub chosen: Option<String>,
    /// Every candidate: accepted ones first in tie-rule order, then excluded ones by name.
    pub candidates: Vec<Verdict>,
    /// Present exactly when `chosen` is `null`.
    pub gap: Option<Gap>,
}

/// Most list entries quoted in one reason message.
const MAX_LISTED: usize = 8;

/// `a, b, c` (at most [`MAX_LISTED`], then `…`), or `none`.
fn listed(v: &[String]) -> String {
    if v.is_empty() {
        return "none".into();
    }
    let mut s = v
        .iter()
        .take(MAX_LISTED)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if v.len() > MAX_LISTED {
        s.push_str(", …");
    }
    s
}

/// Answers `need` over `candidates`; `default_data_class` stands for a need naming no class.
pub fn select(need: &Need, candidates: &[Candidate], default_data_class: &str) -> Answer {
    let classes = match need.data_classes.is_empty() {
        true => vec![default_data_class.to_owned()],
        false => need.data_classes.clone(),
    };
    let mut accepted: Vec<(&Candidate, Verdict)> = Vec::new();
    let mut excluded: Vec<Verdict> = Vec::new();
    for c in candidates {
        let v = judge(need, &classes, c);
        if v.accepted {
            accepted.push((c, v));
        } else {
            excluded.push(v);
        }
    }
    accepted.sort_by(|(a, _), (b, _)| rank(need, a).cmp(&rank(need, b)));
    excluded.sort_by(|a, b| a.integration.cmp(&b.integration));
    annotate_ranks(need, &mut accepted);
    let chosen = accepted.first().map(|(c, _)| c.name.clone());
    let gap = chosen.is_none().then(|| Gap {
        message: match candidates.is_empty() {
            true => "no integration is configured".into(),
            false => "no integration meets every requirement of the need".into(),
        },
        candidates: excluded
            .iter()
            .map(|v| Lacks {
                integration: v.integration.clone(),
                lacks: v.reasons.iter().map(|r| r.code).collect(),
            })
            .collect(),
    });
    let mut all: Vec<Verdict> = accepted.into_iter().map(|(_, v)| v).collect();
    all.extend(excluded);
    Answer {
        chosen,
        candidates: all,
        gap,
    }
}

/// One candidate against the need: every failing check (excluded), or every passing one.
fn judge(need: &Need, classes: &[String], c: &Candidate) -> Verdict {
    let mut fails = standing(c);
    let mut passes = Vec::new();
    let mut skill = None;
    // An unusable or pending integration has no profile worth checking: its standing says all.
    if matches!(c.standing, Standing::Usable | Standing::Blocked(_)) {
        match skill_fit(need, c) {
            Ok((id, ok)) => {
                skill = Some(id);
                passes.extend(ok);
            }
            Err(why) => fails.extend(why),
        }
        for check in [
            streaming(need, c),
            binding(need, c),
            data_classes(classes, c),
        ] {
            match check {
                Some(Ok(r)) => passes.push(r),
                Some(Err(r)) => fails.push(r),
                None => {}
            }
        }
    }
    let accepted = fails.is_empty();
    if accepted {
        passes.extend(risks(need, c));
    }
    Verdict {
        integration: c.name.clone(),
        accepted,
        skill: skill.filter(|_| accepted),
        reasons: if accepted { passes } else { fails },
    }
}

/// What an accepted candidate carries that the tie rule weighs: said on its own reasons, so the
/// chosen one does not look cleaner than it is.
fn risks(need: &Need, c: &Candidate) -> Vec<Reason> {
    let mut out = Vec::new();
    match c.freshness {
        Freshness::Fresh => {}
        Freshness::Unrevalidated => out.push(reason(
            Code::ProfileUnrevalidated,
            "served from the last-known-good file; no fetch has confirmed the card since start",
        )),
        Freshness::Degraded => out.push(reason(
            Code::ProfileDegraded,
            "the last refresh failed; the last good profile serves",
        )),
    }
    match c.lock {
        LockVerdict::Review => out.push(reason(
            Code::LockReview,
            "the card changed in a way the lockfile says someone should review",
        )),
        LockVerdict::Unpinned => out.push(reason(
            Code::LockUnpinned,
            "no lockfile pins what the workflow needs from this integration",
        )),
        LockVerdict::NotJudged => out.push(reason(
            Code::LockUnpinned,
            "a lockfile is there but no card was judged against it yet",
        )),
        LockVerdict::Compatible | LockVerdict::Breaking => {}
    }
    if need.streaming && c.streaming_evidence != StreamingEvidence::Verified {
        out.push(reason(
            Code::StreamingUnverified,
            "streaming is only declared by the card; no probe of this card verified it",
        ));
    }
    out
}

fn standing(c: &Candidate) -> Vec<Reason> {
    let mut out = Vec::new();
    match &c.standing {
        Standing::Usable => {}
        Standing::Pending => out.push(reason(
            Code::Pending,
            "no verdict yet: the first fetch of the card has not finished",
        )),
        // The state's account quotes card values (an origin, a version, an extension URI).
        Standing::Unusable(why) => out.push(
            reason(
                Code::Unusable,
                "no usable profile; the gateway's account (it quotes the card) is under untrusted",
            )
            .quoting(std::slice::from_ref(why)),
        ),
        Standing::Blocked(why) => out.push(
            reason(
                Code::Blocked,
                "traffic stopped on purpose; the gateway's account (it quotes the card) is under untrusted",
            )
            .quoting(std::slice::from_ref(why)),
        ),
    }
    if c.lock == LockVerdict::Breaking {
        out.push(reason(
            Code::LockBreaking,
            "the profile is breaking against the integration's lockfile",
        ));
    }
    out
}

/// The skill that serves the need: `Ok((id, reasons passed))` or every reason none does.
fn skill_fit(need: &Need, c: &Candidate) -> Result<(String, Vec<Reason>), Vec<Reason>> {
    let matching: Vec<&String> = match &need.skill {
        Some(id) if !c.skills.contains_key(id) => {
            return Err(vec![reason(
                Code::NoSkill,
                format!("the card offers no skill {id:?}"),
            )]);
        }
        Some(id) if !c.accepted_skills.contains(id) => {
            return Err(vec![reason(
                Code::SkillNotAccepted,
                format!(
                    "skill {id:?} is not one of the integration's accepted skills ({})",
                    listed(&c.accepted_skills)
                ),
            )]);
        }
        Some(id) => vec![id],
        None => c
            .accepted_skills
            .iter()
            .filter(|s| c.skills.contains_key(*s))
            .collect(),
    };
    // Skills are tried in id (byte) order, so the skill chosen never depends on the order the
    // configuration happens to list them in.
    let mut tagged: Vec<&String> = matching
        .into_iter()
        .filter(|id| c.skills.get(*id).is_some_and(|m| has_tags(m, &need.tags)))
        .collect();
    tagged.sort();
    tagged.dedup();
    if tagged.is_empty() {
        return Err(vec![reason(
            Code::TagsMissing,
            format!(
                "no accepted skill carries every tag ({})",
                listed(&need.tags)
            ),
        )]);
    }
    let mut why = Vec::new();
    for id in tagged {
        let Some(modes) = c.skills.get(id) else {
            continue;
        };
        match modes_fit(need, id, modes) {
            Ok(passed) => return Ok((id.clone(), passed)),
            Err(failed) => why.extend(failed),
        }
    }
    Err(why)
}

fn has_tags(m: &SkillModes, tags: &[String]) -> bool {
    tags.iter()
        .all(|t| m.tags.iter().any(|have| have.to_lowercase() == *t))
}

/// Input: every type the need sends is accepted. Output: one type the skill produces is one the
/// need takes (wildcards on either side count).
fn modes_fit(need: &Need, id: &str, m: &SkillModes) -> Result<Vec<Reason>, Vec<Reason>> {
    let mut fails = Vec::new();
    let refused: Vec<String> = need
        .input
        .iter()
        .filter(|mt| !media_type_accepted(mt, &m.input))
        .cloned()
        .collect();
    if !refused.is_empty() {
        fails.push(
            reason(
                Code::InputMode,
                format!(
                    "skill {id:?} does not accept {}; the types it accepts are under untrusted",
                    listed(&refused)
                ),
            )
            .quoting(&m.input),
        );
    }
    let produces = need.output.is_empty()
        || m.output.iter().any(|o| {
            media_type_accepted(o, &need.output)
                || need
                    .output
                    .iter()
                    .any(|n| media_type_accepted(n, std::slice::from_ref(o)))
        });
    if !produces {
        fails.push(
            reason(
                Code::OutputMode,
                format!(
                    "skill {id:?} produces none of {}; the types it produces are under untrusted",
                    listed(&need.output)
                ),
            )
            .quoting(&m.output),
        );
    }
    if !fails.is_empty() {
        return Err(fails);
    }
    Ok(vec![
        reason(
            Code::SkillOffered,
            format!("skill {id:?} is offered and accepted"),
        ),
        reason(
            Code::InputAccepted,
            format!("skill {id:?} accepts {}", listed(&need.input)),
        ),
        reason(
            Code::OutputProduced,
            format!(
                "skill {id:?} produces a type the need takes; the types it produces are under untrusted"
            ),
        )
        .quoting(&m.output),
    ])
}

fn streaming(need: &Need, c: &Candidate) -> Option<Result<Reason, Reason>> {
    if !need.streaming {
        return None;
    }
    Some(if !c.streaming_declared {
        Err(reason(
            Code::NoStreaming,
            "the card does not declare capabilities.streaming",
        ))
    } else if c.streaming_mode == StreamingMode::Off {
        Err(reason(
            Code::StreamingOff,
            "the integration is configured with streaming = \"off\"",
        ))
    } else if c.streaming_evidence == StreamingEvidence::Refused {
        Err(reason(
            Code::StreamingRefused,
            "the agent refused a stream its card claims; streaming is off until the next refresh",
        ))
    } else if c.streaming_evidence == StreamingEvidence::Contradicted {
        Err(reason(
            Code::StreamingContradicted,
            "a probe since the profile was installed showed streaming does not work",
        ))
    } else if c.streaming_evidence == StreamingEvidence::Verified {
        Ok(reason(
            Code::StreamingSupported,
            "streaming declared and verified",
        ))
    } else {
        Ok(reason(
            Code::StreamingSupported,
            "streaming declared by the card (not verified)",
        ))
    })
}

fn binding(need: &Need, c: &Candidate) -> Option<Result<Reason, Reason>> {
    let wanted = need.binding?;
    Some(match c.binding {
        Some(b) if b == wanted => Ok(reason(
            Code::BindingSupported,
            format!("the gateway reaches it over {b}"),
        )),
        Some(b) => Err(reason(
            Code::BindingUnsupported,
            format!("the gateway reaches it over {b} only; the need asks for {wanted}"),
        )),
        None => Err(reason(
            Code::BindingUnsupported,
            "no interface the gateway can use",
        )),
    })
}

fn data_classes(classes: &[String], c: &Candidate) -> Option<Result<Reason, Reason>> {
    let refused: Vec<String> = classes
        .iter()
        .filter(|k| !c.data_classes.contains(k))
        .cloned()
        .collect();
    Some(match refused.is_empty() {
        true => Ok(reason(
            Code::DataClassesAllowed,
            format!("data classes {} are allowed", listed(classes)),
        )),
        false => Err(reason(
            Code::DataClassNotAllowed,
            format!(
                "data classes {} are not allowed (allowed: {})",
                listed(&refused),
                listed(&c.data_classes)
            ),
        )),
    })
}

/// The tie rule's key (smaller is better).
fn rank<'a>(need: &Need, c: &'a Candidate) -> (u8, Freshness, u8, &'a str) {
    let verdict = match c.lock {
        LockVerdict::Compatible => 0,
        LockVerdict::Unpinned => 1,
        LockVerdict::Review => 2,
        LockVerdict::NotJudged | LockVerdict::Breaking => 3,
    };
    let streaming = match (need.streaming, c.streaming_evidence) {
        (true, StreamingEvidence::Verified) | (false, _) => 0,
        (true, _) => 1,
    };
    (verdict, c.freshness, streaming, c.name.as_str())
}

/// Adds `CHOSEN` to the first accepted candidate and `OUTRANKED` (naming the deciding rule) to
/// each other one.
fn annotate_ranks(need: &Need, accepted: &mut [(&Candidate, Verdict)]) {
    let mut prev: Option<&Candidate> = None;
    for (c, v) in accepted.iter_mut() {
        let r = match prev {
            None => reason(
                Code::Chosen,
                "first by the tie rule: lock verdict, freshness, verified streaming, name",
            ),
            Some(p) => reason(Code::Outranked, outranked(need, p, c)),
        };
        v.reasons.push(r);
        prev = Some(c);
    }
}

fn outranked(need: &Need, above: &Candidate, c: &Candidate) -> String {
    let (a, b) = (rank(need, above), rank(need, c));
    let why = if a.0 != b.0 {
        format!(
            "lock verdict {} ranks below {}",
            c.lock.as_str(),
            above.lock.as_str()
        )
    } else if a.1 != b.1 {
        format!(
            "profile freshness {} ranks below {}",
            c.freshness.as_str(),
            above.freshness.as_str()
        )
    } else if a.2 != b.2 {
        "streaming only declared ranks below verified".into()
    } else {
        "same rank; names break the tie".into()
    };
    format!("accepted, ranked after {}: {why}", above.name)
}

#[cfg(test)]
mod tests;
