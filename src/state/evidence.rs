//! Declared versus observed (pure): the last probe run kept in an integration's state, and
//! [`claims`], which says for each claim of the profile where its truth comes from — declared
//! by the card, verified by a probe at T, or contradicted by a probe or at runtime at T.
//!
//! [`Claim`] is the serializable view readers render (`/readyz` detail, the planner view): it is
//! derived on demand from the profile, the last probe run and the runtime evidence, so it never
//! disagrees with them. Only observations made since the current profile was installed count;
//! older ones stay in the evidence log but say nothing about this profile.
//!
//! | claim | declared by the card as | probe (check) | runtime evidence that contradicts it |
//! |---|---|---|---|
//! | `interface` | `<binding> <version>` | `interface` | VersionNotSupportedError |
//! | `version` | only the versions it lists | `version` | — |
//! | `streaming` | `capabilities.streaming` | `streaming` | a refused stream |
//! | `extension:<uri>` | `required` | `extension:<uri>` | — |
//! | `extensions` | the required ones it lists | — | ExtensionSupportRequiredError |
//! | `input:<skill>:<type>` | in the skill's input modes | `input:<type>` (probe skill) | — |
//! | `input` | every skill's input modes | — | ContentTypeNotSupportedError |
//! | `artifacts` | (the integration's `artifact_schema`) | — | a data part that does not match |

use std::time::SystemTime;

use serde::Serialize;

use super::{Evidence, EvidenceKind, IntegrationState, StaleCause};

/// Longest probe detail kept (probe details may quote an agent's error reason).
const MAX_DETAIL: usize = 160;

/// Why a probe run happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProbeTrigger {
    /// The profile changed with a `review` verdict against the lockfile.
    Review,
    /// The slow schedule (`[probes] every`).
    Scheduled,
}

impl ProbeTrigger {
    /// Every trigger (for metric series).
    pub const ALL: [ProbeTrigger; 2] = [ProbeTrigger::Review, ProbeTrigger::Scheduled];

    /// Bounded label.
    pub fn as_str(self) -> &'static str {
        match self {
            ProbeTrigger::Review => "review",
            ProbeTrigger::Scheduled => "scheduled",
        }
    }
}

/// What one probe found, as the state keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProbeVerdict {
    /// The claim holds.
    Ok,
    /// The agent contradicts the claim.
    Failed,
    /// No conclusion (no protocol answer, transport failure).
    Inconclusive,
}

impl ProbeVerdict {
    /// Every verdict (for metric series).
    pub const ALL: [ProbeVerdict; 3] = [
        ProbeVerdict::Ok,
        ProbeVerdict::Failed,
        ProbeVerdict::Inconclusive,
    ];

    /// Bounded label.
    pub fn as_str(self) -> &'static str {
        match self {
            ProbeVerdict::Ok => "ok",
            ProbeVerdict::Failed => "failed",
            ProbeVerdict::Inconclusive => "inconclusive",
        }
    }
}

/// One probe's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProbeRecord {
    /// The claim checked (`interface`, `version`, `streaming`, `extension:<uri>`, `input:<type>`).
    pub claim: String,
    /// What the agent did.
    pub result: ProbeVerdict,
    /// Gateway-written detail (printable ASCII, bounded).
    pub detail: String,
    /// When.
    #[serde(serialize_with = "crate::types::rfc3339::serialize")]
    pub at: SystemTime,
}

impl ProbeRecord {
    /// A record with `detail` made safe to keep and show.
    pub fn new(claim: String, result: ProbeVerdict, detail: &str, at: SystemTime) -> Self {
        let detail = detail
            .chars()
            .filter(|c| c.is_ascii_graphic() || *c == ' ')
            .take(MAX_DETAIL)
            .collect();
        ProbeRecord {
            claim,
            result,
            detail,
            at,
        }
    }
}

/// The last probe run of an integration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProbeRun {
    /// Why it ran.
    pub trigger: ProbeTrigger,
    /// When it started.
    #[serde(serialize_with = "crate::types::rfc3339::serialize")]
    pub at: SystemTime,
    /// Each probe's result, in plan order.
    pub results: Vec<ProbeRecord>,
}

impl ProbeRun {
    /// How many claims failed.
    pub fn failed(&self) -> usize {
        self.results
            .iter()
            .filter(|r| r.result == ProbeVerdict::Failed)
            .count()
    }
}

/// Who observed a claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Observer {
    /// A safe probe.
    Probe,
    /// A call on the data plane.
    Runtime,
}

/// Where a claim's truth comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "source", rename_all = "snake_case")]
pub enum Source {
    /// Only the card (or the integration's config) says so, since the profile was installed.
    Declared {
        /// When the profile was installed.
        #[serde(serialize_with = "crate::types::rfc3339::serialize")]
        at: SystemTime,
    },
    /// A probe confirmed it.
    Verified {
        /// When.
        #[serde(serialize_with = "crate::types::rfc3339::serialize")]
        at: SystemTime,
        /// What the probe saw.
        detail: String,
    },
    /// A probe or a call contradicted it.
    Contradicted {
        /// When.
        #[serde(serialize_with = "crate::types::rfc3339::serialize")]
        at: SystemTime,
        /// Who saw it.
        by: Observer,
        /// What was seen.
        detail: String,
    },
    /// The last probe of it was inconclusive (the declaration stands, unconfirmed).
    Inconclusive {
        /// When.
        #[serde(serialize_with = "crate::types::rfc3339::serialize")]
        at: SystemTime,
        /// Why.
        detail: String,
    },
}

/// One claim of the profile and its source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Claim {
    /// The claim's key (see the module table).
    pub claim: String,
    /// What is claimed, in words (gateway-written from the compiled profile).
    pub declared: String,
    /// Where its truth comes from now.
    #[serde(flatten)]
    pub source: Source,
}

/// Every claim of `state`'s profile with its source (pure); empty without a profile.
pub fn claims(state: &IntegrationState) -> Vec<Claim> {
    let Some(p) = state.profile() else {
        return Vec::new();
    };
    let since = state.installed_at;
    let mut out: Vec<(String, String)> = Vec::new();
    if let Some(i) = &p.interface {
        out.push(("interface".into(), format!("{} {}", i.binding, i.version)));
        out.push(("version".into(), "only the versions the card lists".into()));
    }
    out.push(("streaming".into(), p.streaming.to_string()));
    for uri in &p.required_extensions {
        out.push((format!("extension:{uri}"), "required".into()));
    }
    out.push((
        "extensions".into(),
        "the card lists every extension it requires".into(),
    ));
    let probe_skill = state.integration.lock.probe.as_ref().map(|p| &p.skill);
    for id in &state.integration.skills {
        let Some(skill) = p.skills.get(id) else {
            continue;
        };
        for mt in &skill.input {
            out.push((format!("input:{id}:{mt}"), format!("{id} accepts {mt}")));
        }
    }
    out.push(("input".into(), "the skills accept their input modes".into()));
    if let Some(a) = &state.integration.artifacts {
        out.push((
            "artifacts".into(),
            format!("data parts match {}", a.path.display()),
        ));
    }
    out.into_iter()
        .map(|(claim, declared)| {
            let probed = probe_key(&claim, probe_skill.map(String::as_str));
            let source = source(state, &claim, probed.as_deref(), since);
            Claim {
                claim,
                declared,
                source,
            }
        })
        .collect()
}

/// The probe claim that checks `claim`: the same key, or `input:<type>` for the probe skill's
/// `input:<skill>:<type>`.
fn probe_key(claim: &str, probe_skill: Option<&str>) -> Option<String> {
    match claim.strip_prefix("input:") {
        Some(rest) => {
            let (skill, mt) = rest.split_once(':')?;
            (Some(skill) == probe_skill).then(|| format!("input:{mt}"))
        }
        None => Some(claim.to_owned()),
    }
}

/// The newest observation of `claim` since `since`: the last probe run's record of it, or
/// runtime evidence against it, whichever is later.
fn source(
    state: &IntegrationState,
    claim: &str,
    probed: Option<&str>,
    since: SystemTime,
) -> Source {
    let probe = state
        .probes
        .as_deref()
        .into_iter()
        .flat_map(|r| &r.results)
        .rfind(|r| Some(r.claim.as_str()) == probed && r.at >= since);
    let runtime = state
        .evidence
        .iter()
        .rfind(|e| e.at >= since && contradicts(e, claim));
    match (probe, runtime) {
        (_, Some(e)) if probe.is_none_or(|p| e.at >= p.at) => Source::Contradicted {
            at: e.at,
            by: Observer::Runtime,
            detail: e.detail.clone(),
        },
        (Some(r), _) => match r.result {
            ProbeVerdict::Ok => Source::Verified {
                at: r.at,
                detail: r.detail.clone(),
            },
            ProbeVerdict::Failed => Source::Contradicted {
                at: r.at,
                by: Observer::Probe,
                detail: r.detail.clone(),
            },
            ProbeVerdict::Inconclusive => Source::Inconclusive {
                at: r.at,
                detail: r.detail.clone(),
            },
        },
        _ => Source::Declared { at: since },
    }
}

/// Whether runtime evidence `e` contradicts `claim`.
fn contradicts(e: &Evidence, claim: &str) -> bool {
    match e.kind {
        EvidenceKind::StreamingRefused => claim == "streaming",
        EvidenceKind::StaleError(StaleCause::VersionNotSupported) => claim == "interface",
        EvidenceKind::StaleError(StaleCause::ExtensionSupportRequired) => claim == "extensions",
        EvidenceKind::StaleError(StaleCause::ContentTypeNotSupported) => claim == "input",
        EvidenceKind::ArtifactSchemaMismatch => claim == "artifacts",
        // A refused stream is recorded as StreamingRefused; a downgrade that worked says the
        // message path works, not that a claim is wrong; an answer that is not A2A says the
        // agent is broken (or moved), not which claim is wrong.
        EvidenceKind::StaleError(StaleCause::UnsupportedOperation)
        | EvidenceKind::StaleError(StaleCause::InvalidAgentResponse)
        | EvidenceKind::StreamingDowngradeVerified => false,
    }
}

#[cfg(test)]
mod tests;
