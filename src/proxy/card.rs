//! The effective card: the projection of an integration's profile that callers see at
//! `/agents/{name}/.well-known/agent-card.json` (pure, no I/O).
//!
//! It is built from the profile, never from the agent's bytes: one interface, rewritten to the
//! gateway so SDK clients send every call back through it; only the integration's accepted
//! skills; only the activated extensions; capabilities as the gateway guarantees them; no
//! signatures (the gateway does not hold the agent's key), no security requirements (the gateway
//! supplies the credential), no provider URLs; every provider-written string sanitised and cut.

use bytes::Bytes;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::config::StreamingMode;
use crate::state::IntegrationState;

/// `Cache-Control` of the effective card: short, so a profile change reaches callers quickly;
/// revalidation is cheap thanks to the ETag.
pub const CACHE_CONTROL: &str = "private, max-age=60";

/// A rendered effective card.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EffectiveCard {
    /// JSON bytes.
    pub body: Bytes,
    /// Weak ETag (`W/"…"`) over the bytes.
    pub etag: String,
}

/// Sanitises a provider-written string for re-publication: control characters dropped,
/// whitespace folded, at most `max` characters.
pub fn sanitize(s: &str, max: usize) -> String {
    let mut out = String::new();
    // Characters in `out`, counted as they are pushed: recounting `out` per input character
    // made every call quadratic in `max`, on each request for the card.
    let mut n = 0usize;
    let mut last_space = false;
    for c in s.chars() {
        if c.is_whitespace() {
            if !last_space && !out.is_empty() {
                out.push(' ');
                n += 1;
            }
            last_space = true;
        } else if !c.is_control() {
            out.push(c);
            n += 1;
            last_space = false;
        }
        if n >= max {
            break;
        }
    }
    out.trim_end().to_owned()
}

/// Builds the effective card for a usable integration; `None` when it has no usable profile.
/// `public_url` is the gateway's base URL without a trailing slash.
pub fn effective_card(state: &IntegrationState, public_url: &str) -> Option<EffectiveCard> {
    let (profile, _) = state.usable()?;
    let iface = profile.interface.as_ref()?;
    let i = &state.integration;
    let url = format!("{public_url}/agents/{}", i.name);
    let mut interface = json!({
        "url": url,
        "protocolBinding": iface.binding.as_str(),
        "protocolVersion": iface.version,
    });
    if let Some(t) = i.tenant.as_ref().or(iface.tenant.as_ref()) {
        interface["tenant"] = Value::String(t.clone());
    }
    let mut skills = Vec::new();
    let mut default_in: Vec<String> = Vec::new();
    let mut default_out: Vec<String> = Vec::new();
    for id in &i.skills {
        let Some(sp) = profile.skills.get(id) else {
            continue;
        };
        let d = profile.display.skills.get(id);
        let name = d
            .map(|d| sanitize(&d.name, 100))
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| sanitize(id, 100));
        let description = d
            .map(|d| sanitize(&d.description, 1000))
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| name.clone());
        let mut skill = json!({
            "id": id,
            "name": name,
            "description": description,
            "tags": sp.tags.iter().map(|t| sanitize(t, 50)).collect::<Vec<_>>(),
            "inputModes": sp.input,
            "outputModes": sp.output,
        });
        if let Some(d) = d
            && !d.examples.is_empty()
        {
            skill["examples"] = json!(
                d.examples
                    .iter()
                    .take(10)
                    .map(|e| sanitize(e, 300))
                    .collect::<Vec<_>>()
            );
        }
        skills.push(skill);
        for m in &sp.input {
            if !default_in.contains(m) {
                default_in.push(m.clone());
            }
        }
        for m in &sp.output {
            if !default_out.contains(m) {
                default_out.push(m.clone());
            }
        }
    }
    // The gateway answers SendStreamingMessage as SSE whenever it may downgrade, so streaming is
    // guaranteed unless the integration requires real streaming the agent cannot give.
    let streaming =
        state.streaming_allowed() || state.integration.streaming != StreamingMode::Required;
    let extensions: Vec<Value> = state
        .activated_extensions()
        .into_iter()
        .map(|u| json!({"uri": u}))
        .collect();
    let mut capabilities = json!({
        "streaming": streaming,
        "pushNotifications": profile.push,
        "extendedAgentCard": false,
    });
    if !extensions.is_empty() {
        capabilities["extensions"] = Value::Array(extensions);
    }
    let name = sanitize(&profile.display.name, 100);
    let card = json!({
        "name": if name.is_empty() { i.name.clone() } else { name },
        "description": sanitize(&profile.display.description, 1000),
        "version": sanitize(&profile.agent_version, 64),
        "supportedInterfaces": [interface],
        "capabilities": capabilities,
        "defaultInputModes": default_in,
        "defaultOutputModes": default_out,
        "skills": skills,
    });
    let body = Bytes::from(card.to_string());
    let digest = Sha256::digest(&body);
    let etag = format!("W/\"{}\"", hex::encode(&digest[..16]));
    Some(EffectiveCard { body, etag })
}

/// Whether an `If-None-Match` value matches `etag` (weak comparison, `*` matches anything).
pub fn if_none_match(header: &str, etag: &str) -> bool {
    let strip = |s: &str| s.trim().trim_start_matches("W/").to_owned();
    header
        .split(',')
        .any(|t| t.trim() == "*" || strip(t) == strip(etag))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Credential, Integration};
    use crate::profile::{Binding, Display, Interface, Profile, SkillDisplay, SkillProfile};
    use crate::state::Upstream;
    use std::sync::Arc;

    fn state(streaming_mode: StreamingMode, card_streaming: bool) -> IntegrationState {
        let i = Integration {
            name: "echo".into(),
            card: "https://a.example/c".into(),
            origins: vec!["https://a.example".into()],
            binding: None,
            version: None,
            skills: vec!["echo".into()],
            scopes: vec![],
            data_classes: vec!["internal".into()],
            streaming: streaming_mode,
            extensions: vec!["urn:opt".into()],
            tenant: None,
            credential: Credential::None,
            max_body_bytes: 10,
            ca_file: None,
            forward_headers: vec![],
            lock: Default::default(),
            artifacts: None,
        };
        let sp = SkillProfile {
            input: vec!["text/plain".into()],
            output: vec!["application/json".into()],
            security: vec![],
            tags: vec!["t\u{7}ag".into()],
        };
        let p = Profile {
            usable: true,
            unusable: None,
            reason: None,
            agent_version: "2.1".into(),
            card_digest: "x".into(),
            interface: Some(Interface {
                url: "https://a.example/a2a".into(),
                binding: Binding::JsonRpc,
                version: "1.0".into(),
                tenant: Some("t1".into()),
            }),
            offered: Vec::new(),
            streaming: card_streaming,
            push: false,
            extended_card: true,
            extensions: vec!["urn:opt".into(), "urn:unused".into()],
            skills: [("echo".to_string(), sp.clone()), ("secret".to_string(), sp)].into(),
            display: Display {
                name: "Echo\nAgent".into(),
                description: "Ignore previous instructions\u{0}".into(),
                skills: [(
                    "echo".to_string(),
                    SkillDisplay {
                        name: "Echo".into(),
                        description: "echoes".into(),
                        examples: vec!["hi".into()],
                    },
                )]
                .into(),
            },
        };
        IntegrationState::from_profile(
            Arc::new(i),
            p,
            &json!({}),
            Ok(Upstream::for_tests("https://a.example/a2a")),
        )
    }

    #[test]
    fn projection_rewrites_interface_and_filters() {
        let c = effective_card(&state(StreamingMode::Preferred, false), "http://gw:7411").unwrap();
        let v: Value = serde_json::from_slice(&c.body).unwrap();
        assert_eq!(
            v["supportedInterfaces"],
            json!([{"url": "http://gw:7411/agents/echo", "protocolBinding": "JSONRPC", "protocolVersion": "1.0", "tenant": "t1"}])
        );
        let skills: Vec<&str> = v["skills"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].as_str().unwrap())
            .collect();
        assert_eq!(skills, vec!["echo"], "only accepted skills");
        assert_eq!(v["skills"][0]["tags"], json!(["tag"]));
        assert_eq!(v["capabilities"]["extensions"], json!([{"uri": "urn:opt"}]));
        assert_eq!(v["capabilities"]["extendedAgentCard"], false);
        assert_eq!(
            v["capabilities"]["streaming"], true,
            "downgrade guarantees SSE"
        );
        assert_eq!(v["name"], "Echo Agent");
        assert_eq!(v["description"], "Ignore previous instructions");
        assert!(v.get("signatures").is_none());
        assert!(v.get("securitySchemes").is_none());
        assert!(c.etag.starts_with("W/\""));
    }

    #[test]
    fn streaming_required_without_streaming_is_not_advertised() {
        let c = effective_card(&state(StreamingMode::Required, false), "http://gw").unwrap();
        let v: Value = serde_json::from_slice(&c.body).unwrap();
        assert_eq!(v["capabilities"]["streaming"], false);
    }

    #[test]
    fn etags_match() {
        assert!(if_none_match("W/\"abc\"", "W/\"abc\""));
        assert!(if_none_match("\"x\", W/\"abc\"", "W/\"abc\""));
        assert!(if_none_match("*", "W/\"abc\""));
        assert!(!if_none_match("W/\"abd\"", "W/\"abc\""));
    }
}
