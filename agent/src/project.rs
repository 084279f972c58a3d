//! The four projections of the capability registry, all from the one [`visible`] function
//! (pure): the public card, an extended card per principal, the router index, and the execution
//! policy every handler re-checks. Because all four read the same records through the same
//! function, they cannot disagree.

use std::collections::HashMap;

use a2a::{
    AgentCapabilities, AgentCard, AgentExtension, AgentInterface, AgentProvider, AgentSkill,
    HttpAuthSecurityScheme, SecurityScheme,
};
use bytes::Bytes;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::registry::{AgentBase, Manifest, Principal, Registry, State, Tenants, Visibility};

/// Errors projecting a card.
#[derive(Debug, thiserror::Error)]
pub enum ProjectError {
    /// The generated card could not be serialised or canonicalised.
    #[error("cannot serialise the generated card: {0}")]
    Serialise(String),
}

/// The execution policy refused a capability to a caller.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("caller {caller} is not entitled to capability {skill:?}")]
pub struct Denied {
    /// The capability id.
    pub skill: String,
    /// The caller's name, or `anonymous`.
    pub caller: String,
}

/// Whether `caller` (None = anonymous) may see and use capability `m`.
///
/// Removed capabilities are visible to no one; public ones to everyone; extended ones to principals
/// holding every required scope and a permitted tenant; internal ones to no one. Preview
/// capabilities additionally need a principal that opted in to previews, so they only ever appear
/// in extended cards.
pub fn visible(m: &Manifest, caller: Option<&Principal>) -> bool {
    m.state != State::Removed && audience(m, caller)
}

/// Whether a removed capability's router entry applies to `caller`: the caller would have been
/// entitled to it had it not been removed, so naming its replacement leaks nothing.
pub fn tombstone_applies(m: &Manifest, caller: Option<&Principal>) -> bool {
    m.state == State::Removed && audience(m, caller)
}

/// Lifecycle-independent audience rule shared by [`visible`] and [`tombstone_applies`].
fn audience(m: &Manifest, caller: Option<&Principal>) -> bool {
    if m.state == State::Preview && !caller.is_some_and(|c| c.preview) {
        return false;
    }
    match m.visibility {
        Visibility::Public => true,
        Visibility::Extended => caller.is_some_and(|c| grants(m, c)),
        Visibility::Internal => false,
    }
}

fn grants(m: &Manifest, c: &Principal) -> bool {
    m.requires_scopes.is_subset(&c.scopes)
        && match &m.tenants {
            Tenants::Any => true,
            Tenants::Only(set) => c.tenant.as_ref().is_some_and(|t| set.contains(t)),
        }
}

/// Execution policy: the check every handler runs before doing work (advertisement is not
/// authorisation). It is [`visible`], deliberately.
pub fn authorize(m: &Manifest, caller: Option<&Principal>) -> Result<(), Denied> {
    if visible(m, caller) {
        Ok(())
    } else {
        Err(Denied {
            skill: m.id.clone(),
            caller: caller.map_or_else(|| "anonymous".into(), |c| c.name.clone()),
        })
    }
}

/// The router index: the capabilities `caller` may reach, in registry order.
pub fn router_index<'a>(reg: &'a Registry, caller: Option<&Principal>) -> Vec<&'a Manifest> {
    reg.manifests
        .iter()
        .filter(|m| visible(m, caller))
        .collect()
}

/// A generated card with its serialised body and cache validators.
#[derive(Debug, Clone)]
pub struct ProjectedCard {
    /// The card as the official types.
    pub card: AgentCard,
    /// The card as JSON with object keys sorted (stable bytes for the same content).
    pub json: Value,
    /// The response body.
    pub body: Bytes,
    /// `sha256:<hex>` of the JCS form (the card digest).
    pub digest: String,
    /// Strong ETag: the quoted digest.
    pub etag: String,
}

/// The public card, served unauthenticated at `/.well-known/agent-card.json`.
pub fn public_card(reg: &Registry, base_url: &str) -> Result<ProjectedCard, ProjectError> {
    build(reg, base_url, None)
}

/// The extended card for an authenticated principal (GetExtendedAgentCard).
pub fn extended_card(
    reg: &Registry,
    base_url: &str,
    caller: &Principal,
) -> Result<ProjectedCard, ProjectError> {
    build(reg, base_url, Some(caller))
}

/// The skill as advertised. Deprecated skills say so and name their replacement, because client
/// agents and registries read descriptions.
fn skill(reg: &Registry, m: &Manifest) -> AgentSkill {
    let mut description = m.skill.description.clone();
    if m.state == State::Deprecated
        && let Some(r) = &m.replacement
    {
        description.push_str(&format!(" Deprecated: use skill '{r}' instead."));
    }
    let security_requirements = match reg.agent.security_schemes.keys().next() {
        Some(scheme) if !m.requires_scopes.is_empty() => Some(vec![HashMap::from([(
            scheme.clone(),
            m.requires_scopes.iter().cloned().collect(),
        )])]),
        _ => None,
    };
    AgentSkill {
        id: m.id.clone(),
        name: m.skill.name.clone(),
        description,
        tags: m.skill.tags.clone(),
        examples: (!m.skill.examples.is_empty()).then(|| m.skill.examples.clone()),
        input_modes: m.skill.input_modes.clone(),
        output_modes: m.skill.output_modes.clone(),
        security_requirements,
    }
}

fn build(
    reg: &Registry,
    base_url: &str,
    caller: Option<&Principal>,
) -> Result<ProjectedCard, ProjectError> {
    let a = &reg.agent;
    let skills: Vec<AgentSkill> = reg
        .manifests
        .iter()
        .filter(|m| visible(m, caller))
        .map(|m| skill(reg, m))
        .collect();
    let skills_json = sorted(to_value(&skills)?);
    let skills_hash = Sha256::digest(
        serde_json_canonicalizer::to_vec(&skills_json)
            .map_err(|e| ProjectError::Serialise(e.to_string()))?,
    );
    // The card version changes whenever the generated skill list does, so caches keyed on it refresh.
    let version = format!("{}+skills.{}", a.version, &hex::encode(skills_hash)[..12]);

    let extensions = card_extensions(reg);
    let (security_schemes, security_requirements) = security(a);
    let card = AgentCard {
        name: a.name.clone(),
        description: a.description.clone(),
        version,
        supported_interfaces: a
            .interfaces
            .iter()
            .map(|i| AgentInterface {
                url: format!("{base_url}{}", i.path),
                protocol_binding: i.binding.as_str().to_string(),
                protocol_version: i.protocol_version.clone(),
                tenant: i.tenant.clone(),
            })
            .collect(),
        capabilities: AgentCapabilities {
            streaming: Some(a.capabilities.streaming),
            push_notifications: Some(false),
            extensions: (!extensions.is_empty()).then_some(extensions),
            extended_agent_card: Some(reg.extended_card_flag()),
        },
        default_input_modes: a.default_input_modes.clone(),
        default_output_modes: a.default_output_modes.clone(),
        skills,
        provider: a.provider.as_ref().map(|p| AgentProvider {
            organization: p.organization.clone(),
            url: p.url.clone(),
        }),
        documentation_url: a.documentation_url.clone(),
        icon_url: a.icon_url.clone(),
        security_schemes: (!security_schemes.is_empty()).then_some(security_schemes),
        security_requirements,
        signatures: None,
    };
    let json = sorted(to_value(&card)?);
    let digest = a2a_egress::card::canonical::digest(&json)
        .map_err(|e| ProjectError::Serialise(e.to_string()))?;
    let body =
        Bytes::from(serde_json::to_vec(&json).map_err(|e| ProjectError::Serialise(e.to_string()))?);
    Ok(ProjectedCard {
        etag: format!("\"{digest}\""),
        card,
        json,
        body,
        digest,
    })
}

/// The card's `capabilities.extensions`: every declared extension, as declared.
fn card_extensions(reg: &Registry) -> Vec<AgentExtension> {
    reg.extensions
        .iter()
        .map(|e| AgentExtension {
            uri: e.uri.clone(),
            description: e.description.clone(),
            required: Some(e.required),
            params: e
                .params
                .as_ref()
                .map(|p| p.iter().map(|(k, v)| (k.clone(), v.clone())).collect()),
        })
        .collect()
}

/// One security requirement: scheme name → required scopes.
type SecurityRequirement = HashMap<String, Vec<String>>;

/// The card's bearer security schemes, and the requirement of one of them unless anonymous
/// callers are allowed.
fn security(
    a: &AgentBase,
) -> (
    HashMap<String, SecurityScheme>,
    Option<Vec<SecurityRequirement>>,
) {
    let security_schemes: HashMap<String, SecurityScheme> = a
        .security_schemes
        .iter()
        .map(|(name, s)| {
            (
                name.clone(),
                SecurityScheme::HttpAuth(HttpAuthSecurityScheme {
                    scheme: "Bearer".into(),
                    description: s.description.clone(),
                    bearer_format: s.bearer_format.clone(),
                }),
            )
        })
        .collect();
    let security_requirements = (!a.allow_anonymous).then(|| {
        a.security_schemes
            .keys()
            .map(|k| HashMap::from([(k.clone(), Vec::new())]))
            .collect()
    });
    (security_schemes, security_requirements)
}

fn to_value<T: serde::Serialize>(v: &T) -> Result<Value, ProjectError> {
    serde_json::to_value(v).map_err(|e| ProjectError::Serialise(e.to_string()))
}

/// Recursively sorts object keys, so a card built from `HashMap`s always has the same bytes.
pub fn sorted(v: Value) -> Value {
    match v {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::tests::sample;

    fn principal(reg: &Registry, token: &str) -> Principal {
        reg.principals.authenticate(token).unwrap().clone()
    }

    fn ids(card: &ProjectedCard) -> Vec<String> {
        card.card.skills.iter().map(|s| s.id.clone()).collect()
    }

    #[test]
    fn visible_follows_state_visibility_scopes_and_tenant() {
        let r = sample();
        let partner = principal(&r, "partner-demo-token");
        let viewer = principal(&r, "viewer-demo-token");
        let other = principal(&r, "other-demo-token");
        let m = |id: &str| r.manifest(id).unwrap();

        // public ga: everyone, anonymous included
        assert!(visible(m("echo"), None));
        assert!(visible(m("echo"), Some(&viewer)));
        // extended: scope AND tenant
        assert!(!visible(m("reconcile-invoice"), None));
        assert!(visible(m("reconcile-invoice"), Some(&partner)));
        assert!(
            !visible(m("reconcile-invoice"), Some(&viewer)),
            "missing scope"
        );
        assert!(
            !visible(m("reconcile-invoice"), Some(&other)),
            "wrong tenant"
        );
        // preview: only opted-in principals
        assert!(visible(m("reconcile-invoice-v2"), Some(&partner)));
        let mut no_preview = partner.clone();
        no_preview.preview = false;
        assert!(!visible(m("reconcile-invoice-v2"), Some(&no_preview)));
        assert!(!visible(m("reconcile-invoice-v2"), None));
        // deprecated stays visible; removed never
        assert!(visible(m("invoice-status"), None));
        assert!(!visible(m("reconcile-invoice-v0"), Some(&partner)));
        assert!(tombstone_applies(m("reconcile-invoice-v0"), Some(&partner)));
        assert!(!tombstone_applies(m("reconcile-invoice-v0"), Some(&viewer)));
        assert!(!tombstone_applies(m("reconcile-invoice-v0"), None));
    }

    #[test]
    fn internal_is_never_visible() {
        let mut r = sample();
        let partner = principal(&r, "partner-demo-token");
        let m = r.manifests.iter_mut().find(|m| m.id == "echo").unwrap();
        m.visibility = Visibility::Internal;
        assert!(!visible(m, None));
        assert!(!visible(m, Some(&partner)));
    }

    #[test]
    fn authorize_is_visible() {
        let r = sample();
        let viewer = principal(&r, "viewer-demo-token");
        let m = r.manifest("reconcile-invoice").unwrap();
        assert_eq!(
            authorize(m, Some(&viewer)),
            Err(Denied {
                skill: "reconcile-invoice".into(),
                caller: "viewer".into()
            })
        );
        for m in &r.manifests {
            for c in [None, Some(&viewer)] {
                assert_eq!(authorize(m, c).is_ok(), visible(m, c));
            }
        }
    }

    #[test]
    fn public_card_has_only_public_live_skills() {
        let r = sample();
        let card = public_card(&r, "http://127.0.0.1:7400").unwrap();
        assert_eq!(
            ids(&card),
            ["echo", "lookup-invoice", "stream-report", "invoice-status"]
        );
        assert_eq!(card.card.capabilities.extended_agent_card, Some(true));
        assert_eq!(
            card.card.supported_interfaces[0].url,
            "http://127.0.0.1:7400/a2a/jsonrpc"
        );
        assert_eq!(
            card.card.supported_interfaces[1].protocol_binding,
            "HTTP+JSON"
        );
        let deprecated = &card.card.skills[3];
        assert!(
            deprecated
                .description
                .contains("Deprecated: use skill 'lookup-invoice' instead."),
            "{}",
            deprecated.description
        );
    }

    /// Seed 004: an extended-only skill must never leak into the public card, not even through a
    /// shared description or example. Search the serialised public card for every extended-only,
    /// preview and removed manifest's id, name, description and examples.
    #[test]
    fn nothing_extended_leaks_into_the_public_card() {
        let r = sample();
        let body = String::from_utf8(
            public_card(&r, "http://127.0.0.1:7400")
                .unwrap()
                .body
                .to_vec(),
        )
        .unwrap();
        let hidden: Vec<&Manifest> = r.manifests.iter().filter(|m| !visible(m, None)).collect();
        assert!(hidden.len() >= 3);
        for m in hidden {
            let mut needles = vec![
                format!("\"{}\"", m.id),
                m.skill.name.clone(),
                m.skill.description.clone(),
            ];
            needles.extend(m.skill.examples.iter().cloned());
            for n in needles {
                assert!(!body.contains(&n), "public card leaks {n:?} of {}", m.id);
            }
        }
        // and the scope that gates them is not advertised either
        assert!(!body.contains("recon.run"));
    }

    #[test]
    fn extended_card_is_per_principal() {
        let r = sample();
        let partner = principal(&r, "partner-demo-token");
        let viewer = principal(&r, "viewer-demo-token");
        let other = principal(&r, "other-demo-token");
        let base = "http://127.0.0.1:7400";
        let pc = extended_card(&r, base, &partner).unwrap();
        assert_eq!(
            ids(&pc),
            [
                "echo",
                "lookup-invoice",
                "stream-report",
                "reconcile-invoice",
                "reconcile-invoice-v2",
                "invoice-status"
            ]
        );
        let rec = pc
            .card
            .skills
            .iter()
            .find(|s| s.id == "reconcile-invoice")
            .unwrap();
        assert_eq!(
            rec.security_requirements,
            Some(vec![HashMap::from([(
                "bearer".to_string(),
                vec!["recon.run".to_string()]
            )])])
        );
        let vc = extended_card(&r, base, &viewer).unwrap();
        assert_eq!(ids(&vc), ids(&public_card(&r, base).unwrap()));
        assert!(
            !ids(&extended_card(&r, base, &other).unwrap())
                .contains(&"reconcile-invoice".to_string())
        );
        // different skill lists → different versions and digests
        assert_ne!(pc.card.version, vc.card.version);
        assert_ne!(pc.digest, vc.digest);
    }

    #[test]
    fn version_changes_with_the_skill_list_and_only_then() {
        let r = sample();
        let base = "http://127.0.0.1:7400";
        let a = public_card(&r, base).unwrap();
        // same registry, another address: same version, different digest
        let b = public_card(&r, "http://127.0.0.1:9999").unwrap();
        assert_eq!(a.card.version, b.card.version);
        assert_ne!(a.digest, b.digest);
        // a skill description change changes the version
        let mut r2 = r.clone();
        r2.manifests[0].skill.description.push_str(" Now faster.");
        let c = public_card(&r2, base).unwrap();
        assert_ne!(a.card.version, c.card.version);
        assert!(c.card.version.starts_with("1.4.0+skills."));
        // an extended-only change does not move the public version
        let mut r3 = r.clone();
        r3.manifests
            .iter_mut()
            .find(|m| m.id == "reconcile-invoice")
            .unwrap()
            .skill
            .description
            .push_str(" v3.");
        assert_eq!(public_card(&r3, base).unwrap().card.version, a.card.version);
    }

    #[test]
    fn card_bytes_are_stable() {
        let r = sample();
        let a = public_card(&r, "http://x.example").unwrap();
        for _ in 0..5 {
            assert_eq!(public_card(&r, "http://x.example").unwrap().body, a.body);
        }
        assert_eq!(a.etag, format!("\"{}\"", a.digest));
    }

    #[test]
    fn router_index_matches_cards() {
        let r = sample();
        let partner = principal(&r, "partner-demo-token");
        let idx: Vec<&str> = router_index(&r, Some(&partner))
            .iter()
            .map(|m| m.id.as_str())
            .collect();
        let card = extended_card(&r, "http://x", &partner).unwrap();
        assert_eq!(
            idx,
            ids(&card).iter().map(String::as_str).collect::<Vec<_>>()
        );
    }
}
