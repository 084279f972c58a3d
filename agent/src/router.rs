//! Routing a message to a capability without a skill id, in layers, cheapest first (pure).
//!
//! 1. A continuing task stays with the capability it is bound to (a pending clarification is
//!    resolved against its candidates).
//! 2. A `metadata` skill hint is honoured only if the caller is entitled and the parts fit; a hint
//!    (or a verbatim mention) naming a removed capability the caller was entitled to fails clearly,
//!    naming the replacement.
//! 3. Candidates: the router index ([`super::project::router_index`], i.e. entitlement) FIRST, then the
//!    part media types (none fit → ContentTypeNotSupported), then the accepted output modes.
//! 4. One fit → it. Several → a deterministic, explainable classifier over skill ids, tags, names
//!    and examples (weights below, divided by how many candidates share the term); below the
//!    confidence threshold the task goes to INPUT_REQUIRED asking which skill was meant.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::project::{router_index, tombstone_applies, visible};
use super::registry::{AgentBase, Manifest, Principal, Registry, State};

/// Weight of a message term found in a skill's id or tags.
const W_ID_TAG: f64 = 3.0;
/// Weight of a term found in a skill's name.
const W_NAME: f64 = 2.0;
/// Weight of a term found in a skill's examples.
const W_EXAMPLE: f64 = 1.0;

/// Words that carry no routing signal.
const STOPWORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "for", "from", "how", "i", "in",
    "is", "it", "its", "me", "my", "of", "on", "or", "please", "that", "the", "this", "to", "what",
    "with", "you", "your", "want", "would", "like", "some",
];

/// What the router needs to know about a message.
#[derive(Debug, Clone, Default)]
pub struct RouteRequest {
    /// Media type of every part (text → `text/plain`, data → `application/json` unless given).
    pub media_types: Vec<String>,
    /// All text parts, joined with newlines.
    pub text: String,
    /// The skill hint from metadata, if any.
    pub hint: Option<String>,
    /// `configuration.acceptedOutputModes` (empty = anything).
    pub accepted_output_modes: Vec<String>,
}

/// What the task being continued is bound to.
#[derive(Debug, Clone)]
pub enum Continuing {
    /// Bound to this capability.
    Skill(String),
    /// A clarification is pending between these candidates.
    Clarify(Vec<String>),
}

/// The layer that decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Layer {
    /// The task was already bound.
    ContinuingTask,
    /// The caller's answer to a clarification named a candidate.
    Clarified,
    /// The metadata hint.
    Hint,
    /// Exactly one entitled capability accepts the parts.
    OnlyFit,
    /// The classifier, above the threshold.
    Classifier,
}

/// One candidate's classifier score.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Scored {
    /// Capability id.
    pub skill: String,
    /// Sum of matched term weights.
    pub score: f64,
    /// Matched message terms, sorted.
    pub matched: Vec<String>,
}

/// Why the router decided what it did; attached to the task when the trace extension is active.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Explanation {
    /// Capabilities the caller is entitled to (layer 3a).
    pub entitled: Vec<String>,
    /// Of those, the ones whose modes fit the message (layer 3b/3c).
    pub fits: Vec<String>,
    /// Classifier scores, best first (only when the classifier ran).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub scores: Vec<Scored>,
    /// Classifier confidence: best / (best + runner-up); 1 when only one candidate scored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    /// Notes such as an ignored hint or a deprecated candidate yielding to its replacement.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// The router's decision.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Run this capability.
    Run {
        /// Capability id.
        skill: String,
        /// Deciding layer.
        layer: Layer,
        /// Why.
        explanation: Explanation,
    },
    /// Ask which of these was meant (TASK_STATE_INPUT_REQUIRED).
    Clarify {
        /// Candidate capability ids, registry order.
        candidates: Vec<String>,
        /// Why.
        explanation: Explanation,
    },
    /// A removed capability was asked for: fail naming the replacement.
    Removed {
        /// The removed capability.
        skill: String,
        /// Its replacement.
        replacement: String,
    },
}

/// Routing failures.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RouteError {
    /// No entitled capability accepts the parts' media types.
    #[error("no available skill accepts input of type {}", .0.join(", "))]
    InputNotSupported(Vec<String>),
    /// Capabilities accept the input, but none produces an accepted output mode.
    #[error("no available skill for this input produces any of the accepted output modes {}", .0.join(", "))]
    OutputNotSupported(Vec<String>),
}

/// Routes a message for `caller`. `continuing` is what the task named by `message.taskId` is bound to.
pub fn route(
    reg: &Registry,
    caller: Option<&Principal>,
    req: &RouteRequest,
    continuing: Option<&Continuing>,
) -> Result<Decision, RouteError> {
    // Layer 1: continuing work stays put (the handler re-checks entitlement).
    if let Some(c) = continuing {
        return Ok(route_continuing(reg, caller, req, c));
    }
    // Layer 2: a removed capability asked for by hint or by its exact id fails clearly.
    if let Some(removed) = removed_asked_for(reg, caller, req) {
        return Ok(removed);
    }
    // Layer 3: entitlement first, then media types, then output modes.
    let entitled = router_index(reg, caller);
    let fits = fitting(&reg.agent, &entitled, req)?;
    let mut explanation = Explanation {
        entitled: ids(&entitled),
        fits: ids(&fits),
        ..Default::default()
    };
    let mut notes = Vec::new();
    // Layer 2 (live): the hint, only within what the caller may use and what fits.
    if let Some(h) = &req.hint {
        if let Some(m) = fits.iter().find(|m| &m.id == h) {
            return Ok(Decision::Run {
                skill: m.id.clone(),
                layer: Layer::Hint,
                explanation,
            });
        }
        // Same words for unknown and not-entitled, so the hint cannot probe for hidden skills.
        notes.push(format!(
            "skill hint {h:?} is not available for this message; ignored"
        ));
    }
    let pool = without_yielding(&fits, &mut notes);
    explanation.notes = notes;
    if let [only] = pool.as_slice() {
        return Ok(Decision::Run {
            skill: only.id.clone(),
            layer: Layer::OnlyFit,
            explanation,
        });
    }
    Ok(decide_by_classifier(reg, &req.text, pool, &mut explanation))
}

/// Layer 1: a task bound to a skill stays with it; a pending clarification is resolved by the
/// reply naming a candidate, else by the classifier among the candidates the caller may see.
fn route_continuing(
    reg: &Registry,
    caller: Option<&Principal>,
    req: &RouteRequest,
    continuing: &Continuing,
) -> Decision {
    let candidates = match continuing {
        Continuing::Skill(id) => {
            return Decision::Run {
                skill: id.clone(),
                layer: Layer::ContinuingTask,
                explanation: Explanation::default(),
            };
        }
        Continuing::Clarify(candidates) => candidates,
    };
    let pool: Vec<&Manifest> = candidates
        .iter()
        .filter_map(|id| reg.manifest(id))
        .filter(|m| visible(m, caller))
        .collect();
    let mut explanation = Explanation {
        entitled: ids(&pool),
        fits: ids(&pool),
        ..Default::default()
    };
    if let Some(m) = named_in_reply(&req.text, &pool) {
        return Decision::Run {
            skill: m.id.clone(),
            layer: Layer::Clarified,
            explanation,
        };
    }
    decide_by_classifier(reg, &req.text, pool, &mut explanation)
}

/// Layer 2: a removed capability the caller could have used, named by the hint or by its id.
fn removed_asked_for(
    reg: &Registry,
    caller: Option<&Principal>,
    req: &RouteRequest,
) -> Option<Decision> {
    reg.manifests
        .iter()
        .filter(|m| tombstone_applies(m, caller))
        .find(|m| req.hint.as_deref() == Some(m.id.as_str()) || mentions_id(&req.text, &m.id))
        .map(|m| Decision::Removed {
            skill: m.id.clone(),
            replacement: m.replacement.clone().unwrap_or_default(),
        })
}

/// Layer 3: the entitled capabilities that accept every part's media type and produce one of
/// the accepted output modes.
fn fitting<'r>(
    base: &AgentBase,
    entitled: &[&'r Manifest],
    req: &RouteRequest,
) -> Result<Vec<&'r Manifest>, RouteError> {
    let fits_input: Vec<&Manifest> = entitled
        .iter()
        .copied()
        .filter(|m| accepts_all(m.input_modes(base), &req.media_types))
        .collect();
    if fits_input.is_empty() {
        return Err(RouteError::InputNotSupported(dedup(&req.media_types)));
    }
    let fits: Vec<&Manifest> = fits_input
        .into_iter()
        .filter(|m| produces_any(m, base, &req.accepted_output_modes))
        .collect();
    if fits.is_empty() {
        return Err(RouteError::OutputNotSupported(
            req.accepted_output_modes.clone(),
        ));
    }
    Ok(fits)
}

/// The fitting capabilities without the deprecated ones whose replacement also fits (a
/// deprecated capability stays routable by hint, or when it is the only fit); notes each.
fn without_yielding<'r>(fits: &[&'r Manifest], notes: &mut Vec<String>) -> Vec<&'r Manifest> {
    let fit_ids: BTreeSet<&str> = fits.iter().map(|m| m.id.as_str()).collect();
    fits.iter()
        .copied()
        .filter(|m| {
            let yields = m.state == State::Deprecated
                && m.replacement
                    .as_deref()
                    .is_some_and(|r| fit_ids.contains(r));
            if yields {
                notes.push(format!(
                    "deprecated skill {:?} yields to its replacement {:?}",
                    m.id,
                    m.replacement.as_deref().unwrap_or_default()
                ));
            }
            !yields
        })
        .collect()
}

fn decide_by_classifier(
    reg: &Registry,
    text: &str,
    pool: Vec<&Manifest>,
    explanation: &mut Explanation,
) -> Decision {
    let (scores, confidence) = classify(text, &pool);
    explanation.confidence = Some(confidence);
    explanation.scores = scores.clone();
    let explanation = explanation.clone();
    match scores.first() {
        Some(best) if confidence >= reg.router.confidence_threshold => Decision::Run {
            skill: best.skill.clone(),
            layer: Layer::Classifier,
            explanation,
        },
        _ => Decision::Clarify {
            candidates: ids(&pool),
            explanation,
        },
    }
}

/// Scores each candidate against the message text; returns scores best first (ties in registry
/// order) and the confidence `best / (best + runner_up)` (0 when nothing matched).
pub fn classify(text: &str, candidates: &[&Manifest]) -> (Vec<Scored>, f64) {
    let features: Vec<BTreeMap<String, f64>> = candidates.iter().map(|m| features(m)).collect();
    let terms: BTreeSet<String> = tokens(text).into_iter().collect();
    let mut scores: Vec<Scored> = candidates
        .iter()
        .zip(&features)
        .map(|(m, f)| {
            let mut score = 0.0;
            let mut matched = Vec::new();
            for t in &terms {
                if let Some(w) = f.get(t) {
                    // Terms shared by several candidates discriminate less.
                    let df = features.iter().filter(|g| g.contains_key(t)).count() as f64;
                    score += w / df;
                    matched.push(t.clone());
                }
            }
            Scored {
                skill: m.id.clone(),
                score: (score * 1000.0).round() / 1000.0,
                matched,
            }
        })
        .collect();
    // Stable sort keeps registry order among equal scores: deterministic.
    scores.sort_by(|a, b| b.score.total_cmp(&a.score));
    let best = scores.first().map_or(0.0, |s| s.score);
    let second = scores.get(1).map_or(0.0, |s| s.score);
    let confidence = if best <= 0.0 {
        0.0
    } else {
        ((best / (best + second)) * 1000.0).round() / 1000.0
    };
    (scores, confidence)
}

/// A skill's terms with the highest weight each earns.
fn features(m: &Manifest) -> BTreeMap<String, f64> {
    let mut f = BTreeMap::new();
    let mut add = |text: &str, w: f64| {
        for t in tokens(text) {
            let e = f.entry(t).or_insert(0.0);
            if w > *e {
                *e = w;
            }
        }
    };
    add(&m.id, W_ID_TAG);
    for t in &m.skill.tags {
        add(t, W_ID_TAG);
    }
    add(&m.skill.name, W_NAME);
    for e in &m.skill.examples {
        add(e, W_EXAMPLE);
    }
    f
}

/// Lowercase alphanumeric words, stopwords and one-letter words dropped, a plural `s` stripped.
pub fn tokens(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 2)
        .map(|w| w.to_lowercase())
        .filter(|w| !STOPWORDS.contains(&w.as_str()))
        .map(|w| {
            if w.len() > 3 && w.ends_with('s') && !w.ends_with("ss") {
                w[..w.len() - 1].to_string()
            } else {
                w
            }
        })
        .collect()
}

/// A clarification answer that is exactly a candidate's id or name.
fn named_in_reply<'a>(text: &str, pool: &[&'a Manifest]) -> Option<&'a Manifest> {
    let t = text.trim().trim_end_matches(['.', '!']).trim();
    pool.iter()
        .find(|m| t.eq_ignore_ascii_case(&m.id) || t.eq_ignore_ascii_case(&m.skill.name))
        .copied()
}

/// Whether `id` appears in `text` as a whole word (ids contain '-', so plain `contains` is safe
/// only with boundary checks).
fn mentions_id(text: &str, id: &str) -> bool {
    let lower = text.to_lowercase();
    lower.match_indices(id).any(|(i, _)| {
        let before = lower[..i].chars().next_back();
        let after = lower[i + id.len()..].chars().next();
        let boundary = |c: Option<char>| {
            c.is_none_or(|c| !(c.is_alphanumeric() || "-_.".contains(c)) || c == '.')
        };
        boundary(before) && boundary(after)
    })
}

/// The essence of a media type: lowercase, parameters dropped.
pub fn essence(mt: &str) -> String {
    mt.split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// Whether a declared mode (possibly `type/*` or `*/*`) covers a concrete media type.
pub fn mode_covers(mode: &str, mt: &str) -> bool {
    let (mode, mt) = (essence(mode), essence(mt));
    if mode == "*/*" || mode == mt {
        return true;
    }
    match (mode.strip_suffix("/*"), mt.split_once('/')) {
        (Some(ty), Some((mty, _))) => ty == mty,
        _ => false,
    }
}

fn accepts_all(modes: &[String], media_types: &[String]) -> bool {
    media_types
        .iter()
        .all(|mt| modes.iter().any(|m| mode_covers(m, mt)))
}

fn produces_any(m: &Manifest, base: &AgentBase, accepted: &[String]) -> bool {
    accepted.is_empty()
        || m.output_modes(base)
            .iter()
            .any(|o| accepted.iter().any(|a| mode_covers(a, o)))
}

fn ids(ms: &[&Manifest]) -> Vec<String> {
    ms.iter().map(|m| m.id.clone()).collect()
}

fn dedup(v: &[String]) -> Vec<String> {
    let set: BTreeSet<String> = v.iter().map(|s| essence(s)).collect();
    set.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::tests::sample;

    fn text(t: &str) -> RouteRequest {
        RouteRequest {
            media_types: vec!["text/plain".into()],
            text: t.into(),
            ..Default::default()
        }
    }

    fn who(reg: &Registry, token: &str) -> Principal {
        reg.principals.authenticate(token).unwrap().clone()
    }

    fn run_skill(d: &Decision) -> (&str, Layer) {
        match d {
            Decision::Run { skill, layer, .. } => (skill, *layer),
            other => panic!("expected Run, got {other:?}"),
        }
    }

    #[test]
    fn continuing_task_stays_with_its_handler() {
        let r = sample();
        let d = route(
            &r,
            None,
            &text("echo this please"),
            Some(&Continuing::Skill("lookup-invoice".into())),
        )
        .unwrap();
        assert_eq!(run_skill(&d), ("lookup-invoice", Layer::ContinuingTask));
    }

    #[test]
    fn classifier_picks_a_confident_winner_and_explains() {
        let r = sample();
        let d = route(&r, None, &text("echo hello world"), None).unwrap();
        assert_eq!(run_skill(&d), ("echo", Layer::Classifier));
        let Decision::Run { explanation, .. } = &d else {
            unreachable!()
        };
        assert_eq!(explanation.scores[0].matched, ["echo", "hello", "world"]);
        assert_eq!(explanation.confidence, Some(1.0));
        assert!(
            explanation
                .notes
                .iter()
                .any(|n| n.contains("invoice-status"))
        );

        let d = route(
            &r,
            None,
            &text("What is the status of invoice INV-20931?"),
            None,
        )
        .unwrap();
        assert_eq!(run_skill(&d).0, "lookup-invoice");
        let d = route(&r, None, &text("stream a report in 5 parts"), None).unwrap();
        assert_eq!(run_skill(&d).0, "stream-report");
    }

    #[test]
    fn partner_text_goes_to_reconcile() {
        let r = sample();
        let p = who(&r, "partner-demo-token");
        let d = route(
            &r,
            Some(&p),
            &text("Reconcile invoice INV-20931 against its PO."),
            None,
        )
        .unwrap();
        assert_eq!(run_skill(&d), ("reconcile-invoice", Layer::Classifier));
    }

    #[test]
    fn tie_or_no_signal_asks_for_clarification() {
        let r = sample();
        // no signal at all
        match route(&r, None, &text("please help"), None).unwrap() {
            Decision::Clarify {
                candidates,
                explanation,
            } => {
                assert_eq!(candidates, ["echo", "lookup-invoice", "stream-report"]);
                assert_eq!(explanation.confidence, Some(0.0));
            }
            other => panic!("{other:?}"),
        }
        // an exact tie between two skills
        match route(&r, None, &text("echo the report"), None).unwrap() {
            Decision::Clarify { explanation, .. } => {
                assert_eq!(explanation.confidence, Some(0.5));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn clarification_answer_resolves_among_candidates_only() {
        let r = sample();
        let pending = Continuing::Clarify(vec!["echo".into(), "stream-report".into()]);
        let d = route(&r, None, &text("stream-report"), Some(&pending)).unwrap();
        assert_eq!(run_skill(&d), ("stream-report", Layer::Clarified));
        let d = route(&r, None, &text("Echo"), Some(&pending)).unwrap();
        assert_eq!(run_skill(&d), ("echo", Layer::Clarified));
        // naming a non-candidate does not escape the candidate set
        assert!(matches!(
            route(&r, None, &text("lookup-invoice"), Some(&pending)).unwrap(),
            Decision::Clarify { .. }
        ));
    }

    #[test]
    fn entitlement_is_applied_before_media_types() {
        let r = sample();
        let pdf = RouteRequest {
            media_types: vec!["application/pdf".into()],
            ..Default::default()
        };
        // reconcile-invoice accepts PDFs, but the viewer is not entitled to it: the PDF fits
        // nothing the viewer may use, so the answer is ContentTypeNotSupported, not a route.
        let viewer = who(&r, "viewer-demo-token");
        assert_eq!(
            route(&r, Some(&viewer), &pdf, None),
            Err(RouteError::InputNotSupported(vec![
                "application/pdf".into()
            ]))
        );
        let partner = who(&r, "partner-demo-token");
        assert_eq!(
            run_skill(&route(&r, Some(&partner), &pdf, None).unwrap()),
            ("reconcile-invoice", Layer::OnlyFit)
        );
    }

    #[test]
    fn structured_data_part_routes_by_media_type() {
        let r = sample();
        let partner = who(&r, "partner-demo-token");
        let json = RouteRequest {
            media_types: vec!["application/json".into()],
            ..Default::default()
        };
        assert_eq!(
            run_skill(&route(&r, Some(&partner), &json, None).unwrap()),
            ("reconcile-invoice-v2", Layer::OnlyFit)
        );
        assert!(route(&r, None, &json, None).is_err());
    }

    #[test]
    fn none_fit_is_content_type_not_supported() {
        let r = sample();
        let req = RouteRequest {
            media_types: vec!["image/png".into(), "text/plain".into()],
            ..Default::default()
        };
        assert_eq!(
            route(&r, None, &req, None),
            Err(RouteError::InputNotSupported(vec![
                "image/png".into(),
                "text/plain".into()
            ]))
        );
        let mut req = text("echo hi");
        req.accepted_output_modes = vec!["audio/mpeg".into()];
        assert!(matches!(
            route(&r, None, &req, None),
            Err(RouteError::OutputNotSupported(_))
        ));
        // accepted output modes narrow the candidates
        req.accepted_output_modes = vec!["application/json".into()];
        assert_eq!(
            run_skill(&route(&r, None, &req, None).unwrap()).0,
            "lookup-invoice"
        );
    }

    #[test]
    fn hint_is_honoured_only_if_entitled() {
        let r = sample();
        let mut req = text("anything at all");
        req.hint = Some("stream-report".into());
        assert_eq!(
            run_skill(&route(&r, None, &req, None).unwrap()),
            ("stream-report", Layer::Hint)
        );
        // an extended skill hinted by someone not entitled is ignored, like an unknown one
        let viewer = who(&r, "viewer-demo-token");
        req.text = "echo hi".into();
        req.hint = Some("reconcile-invoice".into());
        let d = route(&r, Some(&viewer), &req, None).unwrap();
        assert_eq!(run_skill(&d), ("echo", Layer::Classifier));
        let Decision::Run { explanation, .. } = &d else {
            unreachable!()
        };
        let note_hidden = explanation
            .notes
            .iter()
            .find(|n| n.contains("hint"))
            .unwrap()
            .clone();
        req.hint = Some("no-such-skill".into());
        let Decision::Run { explanation, .. } = route(&r, Some(&viewer), &req, None).unwrap()
        else {
            panic!()
        };
        let note_unknown = explanation
            .notes
            .iter()
            .find(|n| n.contains("hint"))
            .unwrap();
        assert_eq!(
            note_hidden.replace("reconcile-invoice", "X"),
            note_unknown.replace("no-such-skill", "X")
        );
        // entitled: honoured
        let partner = who(&r, "partner-demo-token");
        req.hint = Some("reconcile-invoice".into());
        assert_eq!(
            run_skill(&route(&r, Some(&partner), &req, None).unwrap()),
            ("reconcile-invoice", Layer::Hint)
        );
    }

    #[test]
    fn deprecated_stays_routable_and_removed_names_replacement() {
        let r = sample();
        let mut req = text("invoice status INV-1001");
        req.hint = Some("invoice-status".into());
        assert_eq!(
            run_skill(&route(&r, None, &req, None).unwrap()),
            ("invoice-status", Layer::Hint)
        );
        // without the hint the deprecated skill yields to its replacement
        req.hint = None;
        assert_eq!(
            run_skill(&route(&r, None, &req, None).unwrap()).0,
            "lookup-invoice"
        );

        let partner = who(&r, "partner-demo-token");
        let mut req = text("reconcile INV-1");
        req.hint = Some("reconcile-invoice-v0".into());
        assert_eq!(
            route(&r, Some(&partner), &req, None).unwrap(),
            Decision::Removed {
                skill: "reconcile-invoice-v0".into(),
                replacement: "reconcile-invoice".into()
            }
        );
        let req = text("please run reconcile-invoice-v0 on INV-1");
        assert!(matches!(
            route(&r, Some(&partner), &req, None).unwrap(),
            Decision::Removed { .. }
        ));
        // for a caller never entitled to it, the removed entry does not exist
        let mut req = text("echo hi");
        req.hint = Some("reconcile-invoice-v0".into());
        assert_eq!(run_skill(&route(&r, None, &req, None).unwrap()).0, "echo");
    }

    #[test]
    fn wildcards_and_parameters_in_modes() {
        assert!(mode_covers("image/*", "image/png"));
        assert!(mode_covers("*/*", "application/pdf"));
        assert!(mode_covers("text/plain", "text/plain; charset=utf-8"));
        assert!(!mode_covers("image/*", "text/plain"));
    }

    #[test]
    fn tokens_are_normalised() {
        assert_eq!(
            tokens("Reconcile the Invoices, please!"),
            ["reconcile", "invoice"]
        );
    }
}
