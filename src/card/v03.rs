//! A2A 0.3 Agent Cards: detection as the official SDKs do it, strict validation against the
//! pinned 0.3 JSON Schema, and the one conversion into the 1.0 card model that the rest of
//! validation and `profile::compile` read (pure; the schema is compiled once, from the copy in the
//! repository, never fetched).
//!
//! The schema is `schemas/a2a-v0.3.0.schema.json`, a verbatim copy of the A2A project's pinned
//! `a2a-v0.3.0.schema.json` (the JSON Schema published with specification 0.3.0; its root holds
//! only `definitions`, so the card is checked against `#/definitions/AgentCard`).
//!
//! The conversion (FACTS §11): `url` + `preferredTransport` (default `JSONRPC`) is the first
//! interface, then each `additionalInterfaces` entry (an entry repeating an earlier URL and
//! transport is dropped: 0.3 asks cards to list the main one there too), each with the card's
//! `protocolVersion` cut to `Major.Minor`; `supportsAuthenticatedExtendedCard` becomes
//! `capabilities.extendedAgentCard`; `security` / `securitySchemes` take their 1.0 shapes
//! (`{name:[scopes]}` → `{schemes:{name:{list:[…]}}}`, the `type` discriminator → the oneof key);
//! skills keep `inputModes`/`outputModes` (the media types) and their own `security`. Members
//! 1.0 has no place for (`kind`, `stateTransitionHistory`, …) are dropped, never carried half
//! translated. The signatures are verified over the card as received, not over this form.

use std::sync::LazyLock;

use serde_json::{Map, Value, json};

use super::problem::{CardError, CardWarning};
use crate::json::push_key;

/// The pinned 0.3 schema, as shipped in the repository.
const SCHEMA_TEXT: &str = include_str!("../../schemas/a2a-v0.3.0.schema.json");

/// Most schema violations reported for one card.
const MAX_SCHEMA_PROBLEMS: usize = 32;

/// Longest schema message kept, in characters (messages never quote the card's values).
const MAX_SCHEMA_MESSAGE_CHARS: usize = 300;

/// The compiled schema, or why the shipped copy did not compile (a test holds that it does).
static SCHEMA: LazyLock<Result<jsonschema::Validator, String>> = LazyLock::new(|| {
    let mut root: Value = serde_json::from_str(SCHEMA_TEXT).map_err(|e| e.to_string())?;
    if let Some(m) = root.as_object_mut() {
        m.insert("$ref".into(), json!("#/definitions/AgentCard"));
    }
    jsonschema::options()
        .offline()
        .build(&root)
        .map_err(|e| e.to_string())
});

/// Whether a card is an A2A 0.3 card, as both SDKs decide: no non-empty `supportedInterfaces`,
/// but a top-level `url`, `preferredTransport`, `additionalInterfaces` or `protocolVersion`.
/// A card with both shapes is read as 1.0 (`card::rules` warns about its 0.3 members).
pub(crate) fn is_03(m: &Map<String, Value>) -> bool {
    let has_interfaces =
        matches!(m.get("supportedInterfaces"), Some(Value::Array(a)) if !a.is_empty());
    !has_interfaces
        && [
            "url",
            "preferredTransport",
            "additionalInterfaces",
            "protocolVersion",
        ]
        .iter()
        .any(|k| m.contains_key(*k))
}

/// The `protocolVersion` the official Python `a2a-sdk` 0.3 gives a card that leaves it out.
const SDK_DEFAULT_PROTOCOL_VERSION: &str = "0.3.0";

/// The card as the official 0.3 SDKs read it: a card without `protocolVersion` is a 0.3.0 card
/// to the Python `a2a-sdk` 0.3 (its model's default; the JS SDK does not check), and the pinned
/// schema itself gives the property `"default": "0.3.0"` while listing it as `required`, so it is
/// read as one, with a warning, instead of failing `required` (issue 20: callable wherever an
/// official SDK would say yes). Returns the filled-in card, `None` when nothing was filled in
/// (the card is then read as received, without a copy).
///
/// Nothing else is filled in: the schema stays strict otherwise. In particular
/// `"protocolVersion": null` is present, so it is left to the schema, which refuses it (`type:
/// string`), although the Python SDK 0.3 accepts it (`protocol_version: str | None`): a card that
/// says null says something no 0.3 schema allows, and guessing "0.3.0" for it would hide that.
pub(crate) fn with_sdk_defaults(m: &Map<String, Value>) -> (Option<Value>, Vec<CardWarning>) {
    if m.contains_key("protocolVersion") {
        return (None, Vec::new());
    }
    let mut out = m.clone();
    out.insert(
        "protocolVersion".into(),
        Value::String(SDK_DEFAULT_PROTOCOL_VERSION.into()),
    );
    let warning = CardWarning {
        path: "protocolVersion".into(),
        message: format!(
            "absent from a 0.3 card: read as \"{SDK_DEFAULT_PROTOCOL_VERSION}\", the \
             `\"default\"` the pinned 0.3 schema gives it (it also lists it as required) and the \
             value the official Python a2a-sdk 0.3 reads"
        ),
    };
    (Some(Value::Object(out)), vec![warning])
}

/// Every violation of the pinned 0.3 schema (at most [`MAX_SCHEMA_PROBLEMS`]), each naming the
/// JSON path of the field; the messages are masked, so no card value is quoted.
pub(crate) fn schema_problems(card: &Value) -> Vec<CardError> {
    let validator = match &*SCHEMA {
        Ok(v) => v,
        Err(e) => {
            return vec![CardError::Schema03 {
                path: "$".into(),
                message: format!("the pinned 0.3 schema does not compile: {e}"),
            }];
        }
    };
    validator
        .iter_errors(card)
        .take(MAX_SCHEMA_PROBLEMS)
        .map(|e| CardError::Schema03 {
            path: pointer_to_path(&e.instance_path().to_string()),
            message: super::sanitize::sanitize(&e.masked().to_string(), MAX_SCHEMA_MESSAGE_CHARS),
        })
        .collect()
}

/// A JSON pointer (`/skills/0/id`) in the path form of every card message (`skills[0].id`).
fn pointer_to_path(pointer: &str) -> String {
    let mut out = String::new();
    for seg in pointer.split('/').skip(1) {
        let seg = seg.replace("~1", "/").replace("~0", "~");
        match seg.parse::<usize>() {
            Ok(i) if !seg.starts_with('+') => out.push_str(&format!("[{i}]")),
            _ => push_key(&mut out, &seg),
        }
    }
    if out.is_empty() { "$".into() } else { out }
}

/// The 0.3 card (already valid against the schema) in the 1.0 card shape, and the warnings the
/// conversion leaves (an OAuth flow 1.0's oneof cannot keep).
pub(crate) fn to_10(card: &Map<String, Value>) -> (Value, Vec<CardWarning>) {
    let mut warnings = Vec::new();
    let mut out = Map::new();
    for k in [
        "name",
        "description",
        "version",
        "provider",
        "documentationUrl",
        "iconUrl",
        "defaultInputModes",
        "defaultOutputModes",
        "signatures",
    ] {
        if let Some(v) = card.get(k) {
            out.insert(k.into(), v.clone());
        }
    }
    out.insert("supportedInterfaces".into(), Value::Array(interfaces(card)));
    out.insert("capabilities".into(), capabilities(card));
    if let Some(Value::Object(schemes)) = card.get("securitySchemes") {
        let converted = schemes
            .iter()
            .map(|(name, s)| (name.clone(), scheme(name, s, &mut warnings)))
            .collect();
        out.insert("securitySchemes".into(), Value::Object(converted));
    }
    if let Some(sec) = card.get("security") {
        out.insert("securityRequirements".into(), requirements(sec));
    }
    if let Some(Value::Array(skills)) = card.get("skills") {
        out.insert(
            "skills".into(),
            Value::Array(skills.iter().map(skill).collect()),
        );
    }
    (Value::Object(out), warnings)
}

/// `protocolVersion` as `Major.Minor` (`0.3.0` → `0.3`; the schema's default when absent).
fn major_minor(card: &Map<String, Value>) -> String {
    let full = card
        .get("protocolVersion")
        .and_then(Value::as_str)
        .unwrap_or("0.3.0");
    let mut it = full.splitn(3, '.');
    match (it.next(), it.next()) {
        (Some(a), Some(b)) => format!("{a}.{b}"),
        _ => full.to_owned(),
    }
}

/// `url` + `preferredTransport` first, then `additionalInterfaces`, without repeats.
fn interfaces(card: &Map<String, Value>) -> Vec<Value> {
    let version = major_minor(card);
    let mut seen: Vec<(String, String)> = Vec::new();
    let mut push = |url: Option<&Value>, transport: Option<&Value>, out: &mut Vec<Value>| {
        let (Some(Value::String(url)), transport) = (url, transport) else {
            return;
        };
        let transport = transport.and_then(Value::as_str).unwrap_or("JSONRPC");
        let key = (url.clone(), transport.to_owned());
        if seen.contains(&key) {
            return;
        }
        seen.push(key);
        out.push(json!({"url": url, "protocolBinding": transport, "protocolVersion": version}));
    };
    let mut out = Vec::new();
    push(card.get("url"), card.get("preferredTransport"), &mut out);
    if let Some(Value::Array(more)) = card.get("additionalInterfaces") {
        for i in more {
            push(i.get("url"), i.get("transport"), &mut out);
        }
    }
    out
}

/// 0.3 capabilities in the 1.0 shape; the extended-card flag moves in from the top level.
fn capabilities(card: &Map<String, Value>) -> Value {
    let mut caps = Map::new();
    if let Some(Value::Object(c)) = card.get("capabilities") {
        for k in ["streaming", "pushNotifications", "extensions"] {
            if let Some(v) = c.get(k) {
                caps.insert(k.into(), v.clone());
            }
        }
    }
    if let Some(v) = card.get("supportsAuthenticatedExtendedCard") {
        caps.insert("extendedAgentCard".into(), v.clone());
    }
    Value::Object(caps)
}

/// 0.3 `security` (`[{name: [scopes]}]`) as 1.0 `securityRequirements`.
fn requirements(sec: &Value) -> Value {
    let Value::Array(alts) = sec else {
        return sec.clone();
    };
    Value::Array(
        alts.iter()
            .map(|alt| {
                let schemes: Map<String, Value> = alt
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(name, scopes)| (name.clone(), json!({ "list": scopes })))
                    .collect();
                json!({ "schemes": schemes })
            })
            .collect(),
    )
}

/// Copies the members `keys` of `from` that are present (renaming `(from_key, to_key)`).
fn pick(from: &Value, keys: &[(&str, &str)]) -> Map<String, Value> {
    keys.iter()
        .filter_map(|(k, to)| from.get(*k).map(|v| ((*to).to_owned(), v.clone())))
        .collect()
}

/// One 0.3 security scheme (`type` discriminator) as the 1.0 oneof.
fn scheme(name: &str, s: &Value, warnings: &mut Vec<CardWarning>) -> Value {
    let d = ("description", "description");
    let (key, body) = match s.get("type").and_then(Value::as_str) {
        Some("apiKey") => (
            "apiKeySecurityScheme",
            pick(s, &[d, ("name", "name"), ("in", "location")]),
        ),
        Some("http") => (
            "httpAuthSecurityScheme",
            pick(
                s,
                &[d, ("scheme", "scheme"), ("bearerFormat", "bearerFormat")],
            ),
        ),
        Some("oauth2") => {
            let mut body = pick(s, &[d, ("oauth2MetadataUrl", "oauth2MetadataUrl")]);
            body.insert("flows".into(), flows(name, s.get("flows"), warnings));
            ("oauth2SecurityScheme", body)
        }
        Some("openIdConnect") => (
            "openIdConnectSecurityScheme",
            pick(s, &[d, ("openIdConnectUrl", "openIdConnectUrl")]),
        ),
        // The schema admits only these five types; `mutualTLS` is the last.
        _ => ("mtlsSecurityScheme", pick(s, &[d])),
    };
    json!({ key: body })
}

/// 0.3 OAuth flows (any number) as 1.0's oneof: the first present in the order
/// authorizationCode, clientCredentials, implicit, password is kept, and a warning names each
/// flow dropped.
fn flows(name: &str, flows: Option<&Value>, warnings: &mut Vec<CardWarning>) -> Value {
    let order = [
        "authorizationCode",
        "clientCredentials",
        "implicit",
        "password",
    ];
    let mut kept: Option<(&str, &Value)> = None;
    for k in order {
        if let Some(f) = flows.and_then(|f| f.get(k)) {
            if kept.is_none() {
                kept = Some((k, f));
            } else {
                let mut path = String::new();
                push_key(&mut path, "securitySchemes");
                push_key(&mut path, name);
                push_key(&mut path, "flows");
                push_key(&mut path, k);
                warnings.push(CardWarning {
                    path,
                    message: "0.3 OAuth flow dropped: an A2A 1.0 scheme carries one flow, \
                              the first in the order authorizationCode, clientCredentials, \
                              implicit, password"
                        .into(),
                });
            }
        }
    }
    match kept {
        Some((k, f)) => json!({ k: f }),
        None => json!({}),
    }
}

/// One 0.3 skill in the 1.0 shape.
fn skill(s: &Value) -> Value {
    let mut out = pick(
        s,
        &[
            ("id", "id"),
            ("name", "name"),
            ("description", "description"),
            ("tags", "tags"),
            ("examples", "examples"),
            ("inputModes", "inputModes"),
            ("outputModes", "outputModes"),
        ],
    );
    if let Some(sec) = s.get("security") {
        out.insert("securityRequirements".into(), requirements(sec));
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pinned_schema_compiles() {
        assert!(SCHEMA.is_ok(), "{:?}", SCHEMA.as_ref().err());
    }

    #[test]
    fn pointers_render_as_card_paths() {
        assert_eq!(pointer_to_path(""), "$");
        assert_eq!(pointer_to_path("/skills/0/id"), "skills[0].id");
        assert_eq!(pointer_to_path("/a~1b/x y"), r#"["a/b"]["x y"]"#);
    }

    #[test]
    fn detection_follows_the_sdks() {
        let m = |v: Value| v.as_object().unwrap().clone();
        assert!(is_03(&m(json!({"url": "https://a"}))));
        assert!(is_03(&m(
            json!({"protocolVersion": "0.3.0", "supportedInterfaces": []})
        )));
        assert!(!is_03(&m(
            json!({"url": "https://a", "supportedInterfaces": [{}]})
        )));
        assert!(!is_03(&m(json!({"name": "x"}))));
    }

    #[test]
    fn a_missing_protocol_version_is_the_python_sdks_default_with_a_warning() {
        let m = |v: Value| v.as_object().unwrap().clone();
        let (card, warnings) = with_sdk_defaults(&m(json!({"url": "https://a"})));
        assert_eq!(card.unwrap()["protocolVersion"], "0.3.0");
        assert_eq!(warnings.len(), 1);
        assert_eq!(warnings[0].path, "protocolVersion");
        for cited in ["a2a-sdk 0.3", "`\"default\"` the pinned 0.3 schema"] {
            assert!(
                warnings[0].message.contains(cited),
                "{cited}: {}",
                warnings[0]
            );
        }
        // Present (even with a wrong type, or null): left as received for the schema to judge,
        // no copy, no warning.
        for v in [json!("0.3.0"), json!(3), Value::Null] {
            let (card, warnings) =
                with_sdk_defaults(&m(json!({"url": "https://a", "protocolVersion": v})));
            assert!(card.is_none());
            assert!(warnings.is_empty());
        }
    }

    #[test]
    fn interfaces_keep_preference_order_without_repeats() {
        let card = json!({"url": "https://a/rpc", "protocolVersion": "0.3.0",
            "preferredTransport": "GRPC",
            "additionalInterfaces": [{"url": "https://a/rpc", "transport": "GRPC"},
                {"url": "https://a/rest", "transport": "HTTP+JSON"}],
            "supportsAuthenticatedExtendedCard": true,
            "securitySchemes": {"o": {"type": "oauth2", "flows": {
                "clientCredentials": {"tokenUrl": "https://t", "scopes": {}},
                "authorizationCode": {"authorizationUrl": "https://a", "tokenUrl": "https://t", "scopes": {}}}}},
            "security": [{"o": ["read"]}]});
        let (v, warnings) = to_10(card.as_object().unwrap());
        assert_eq!(
            v["supportedInterfaces"],
            json!([{"url": "https://a/rpc", "protocolBinding": "GRPC", "protocolVersion": "0.3"},
                {"url": "https://a/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "0.3"}])
        );
        assert_eq!(v["capabilities"]["extendedAgentCard"], json!(true));
        assert_eq!(
            v["securityRequirements"],
            json!([{"schemes": {"o": {"list": ["read"]}}}])
        );
        let flows = &v["securitySchemes"]["o"]["oauth2SecurityScheme"]["flows"];
        assert!(
            flows.get("authorizationCode").is_some() && flows.get("clientCredentials").is_none()
        );
        assert_eq!(warnings.len(), 1);
        assert_eq!(
            warnings[0].path,
            "securitySchemes.o.flows.clientCredentials"
        );
    }
}
