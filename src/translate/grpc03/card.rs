//! A 0.3 gRPC agent's `AgentCard` (the answer of `GetAgentCard`) as the 0.3 JSON card (pure).
//!
//! The 0.3 client reads its extended card from that rpc; its proto is not the JSON card the card
//! rules validate: security schemes are a oneof instead of a `type` discriminator, requirements
//! are `{schemes: {name: {list}}}` instead of `{name: [scopes]}`, and proto3 leaves out every
//! empty string. The JSON made here is what the official SDK's `FromProto.agent_card` makes of
//! the same message, so the strict 0.3 schema and the rest of validation judge it as they judge a
//! fetched card. Maps are written in sorted key order, so the same message always gives the same
//! bytes (and digest), whatever order the wire had.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Map, Value, json};

use super::pb;
use crate::translate::TranslateError;

/// `bytes`, a protobuf `a2a.v1.AgentCard`, as the 0.3 JSON card, within the decode budget.
pub fn card_to_json(bytes: &[u8]) -> Result<Vec<u8>, TranslateError> {
    let c: pb::AgentCard = crate::translate::grpc::decode_within(bytes)?;
    let mut o = Map::new();
    // What the 0.3 schema requires is always written, an empty string included: proto3 cannot
    // tell it from unset, and the schema, not this conversion, decides whether "" will do.
    o.insert("protocolVersion".into(), c.protocol_version.into());
    o.insert("name".into(), c.name.into());
    o.insert("description".into(), c.description.into());
    o.insert("url".into(), c.url.into());
    o.insert("version".into(), c.version.into());
    optional(&mut o, "preferredTransport", c.preferred_transport);
    optional(&mut o, "documentationUrl", c.documentation_url);
    optional(&mut o, "iconUrl", c.icon_url);
    if !c.additional_interfaces.is_empty() {
        let all = c.additional_interfaces.into_iter();
        let all = all.map(|i| json!({"url": i.url, "transport": i.transport}));
        o.insert("additionalInterfaces".into(), all.collect());
    }
    if let Some(p) = c.provider {
        o.insert(
            "provider".into(),
            json!({"organization": p.organization, "url": p.url}),
        );
    }
    o.insert("capabilities".into(), capabilities(c.capabilities)?);
    if !c.security_schemes.is_empty() {
        let sorted: BTreeMap<_, _> = c.security_schemes.into_iter().collect();
        let mut schemes = Map::new();
        for (name, s) in sorted {
            schemes.insert(name, scheme(s)?);
        }
        o.insert("securitySchemes".into(), Value::Object(schemes));
    }
    if !c.security.is_empty() {
        o.insert("security".into(), security(c.security));
    }
    o.insert("defaultInputModes".into(), c.default_input_modes.into());
    o.insert("defaultOutputModes".into(), c.default_output_modes.into());
    o.insert("skills".into(), c.skills.into_iter().map(skill).collect());
    if c.supports_authenticated_extended_card {
        o.insert("supportsAuthenticatedExtendedCard".into(), true.into());
    }
    if !c.signatures.is_empty() {
        let all = c.signatures.into_iter().map(|s| {
            let mut m = Map::new();
            m.insert("protected".into(), s.protected.into());
            m.insert("signature".into(), s.signature.into());
            if let Some(h) = s.header {
                m.insert("header".into(), structure("signatures.header", h)?);
            }
            Ok(Value::Object(m))
        });
        o.insert(
            "signatures".into(),
            all.collect::<Result<Vec<_>, TranslateError>>()?.into(),
        );
    }
    Ok(serde_json::to_vec(&Value::Object(o)).expect("a JSON value"))
}

/// `value` under `key` unless it is proto3's unset empty string.
fn optional(o: &mut Map<String, Value>, key: &str, value: String) {
    if !value.is_empty() {
        o.insert(key.into(), value.into());
    }
}

fn capabilities(c: Option<pb::AgentCapabilities>) -> Result<Value, TranslateError> {
    let c = c.unwrap_or_default();
    let mut o = Map::new();
    o.insert("streaming".into(), c.streaming.into());
    o.insert("pushNotifications".into(), c.push_notifications.into());
    if !c.extensions.is_empty() {
        let all = c.extensions.into_iter().map(|e| {
            let mut m = Map::new();
            m.insert("uri".into(), e.uri.into());
            optional(&mut m, "description", e.description);
            m.insert("required".into(), e.required.into());
            if let Some(p) = e.params {
                m.insert(
                    "params".into(),
                    structure("capabilities.extensions.params", p)?,
                );
            }
            Ok(Value::Object(m))
        });
        let all = all.collect::<Result<Vec<_>, TranslateError>>()?;
        o.insert("extensions".into(), all.into());
    }
    Ok(Value::Object(o))
}

fn skill(s: pb::AgentSkill) -> Value {
    let mut o = Map::new();
    o.insert("id".into(), s.id.into());
    o.insert("name".into(), s.name.into());
    o.insert("description".into(), s.description.into());
    o.insert("tags".into(), s.tags.into());
    for (key, list) in [
        ("examples", s.examples),
        ("inputModes", s.input_modes),
        ("outputModes", s.output_modes),
    ] {
        if !list.is_empty() {
            o.insert(key.into(), list.into());
        }
    }
    if !s.security.is_empty() {
        o.insert("security".into(), security(s.security));
    }
    Value::Object(o)
}

/// Security requirements: each `{schemes: {name: {list}}}` as `{name: [scopes]}`.
fn security(all: Vec<pb::Security>) -> Value {
    let one = |s: pb::Security| {
        let sorted: BTreeMap<_, _> = s.schemes.into_iter().collect();
        let m: Map<String, Value> = sorted
            .into_iter()
            .map(|(name, scopes)| (name, scopes.list.into()))
            .collect();
        Value::Object(m)
    };
    all.into_iter().map(one).collect()
}

/// A security scheme's oneof as the 0.3 JSON scheme of that `type`; an empty oneof (a newer
/// agent's scheme this proto does not know) cannot be written as any of them.
fn scheme(s: pb::SecurityScheme) -> Result<Value, TranslateError> {
    use pb::security_scheme::Scheme;
    let mut o = Map::new();
    let description = match s.scheme {
        Some(Scheme::ApiKeySecurityScheme(k)) => {
            o.insert("type".into(), "apiKey".into());
            o.insert("in".into(), k.location.into());
            o.insert("name".into(), k.name.into());
            k.description
        }
        Some(Scheme::HttpAuthSecurityScheme(h)) => {
            o.insert("type".into(), "http".into());
            o.insert("scheme".into(), h.scheme.into());
            optional(&mut o, "bearerFormat", h.bearer_format);
            h.description
        }
        Some(Scheme::Oauth2SecurityScheme(a)) => {
            o.insert("type".into(), "oauth2".into());
            o.insert("flows".into(), flows(a.flows.unwrap_or_default()));
            optional(&mut o, "oauth2MetadataUrl", a.oauth2_metadata_url);
            a.description
        }
        Some(Scheme::OpenIdConnectSecurityScheme(c)) => {
            o.insert("type".into(), "openIdConnect".into());
            o.insert("openIdConnectUrl".into(), c.open_id_connect_url.into());
            c.description
        }
        Some(Scheme::MtlsSecurityScheme(m)) => {
            o.insert("type".into(), "mutualTLS".into());
            m.description
        }
        None => {
            return Err(TranslateError::untranslatable(
                "securitySchemes",
                "holds a scheme of no type this 0.3 proto knows",
            ));
        }
    };
    optional(&mut o, "description", description);
    Ok(Value::Object(o))
}

/// OAuth flows: the proto holds one flow (a oneof), written with its URLs (required ones always)
/// and scopes; none is an empty `flows` object.
fn flows(f: pb::OAuthFlows) -> Value {
    use pb::o_auth_flows::Flow;
    let scopes = |s: HashMap<String, String>| -> Value {
        let sorted: BTreeMap<_, _> = s.into_iter().collect();
        Value::Object(sorted.into_iter().map(|(k, v)| (k, v.into())).collect())
    };
    let mut m = Map::new();
    let name = match f.flow {
        Some(Flow::AuthorizationCode(a)) => {
            m.insert("authorizationUrl".into(), a.authorization_url.into());
            m.insert("tokenUrl".into(), a.token_url.into());
            optional(&mut m, "refreshUrl", a.refresh_url);
            m.insert("scopes".into(), scopes(a.scopes));
            "authorizationCode"
        }
        Some(Flow::ClientCredentials(c)) => {
            m.insert("tokenUrl".into(), c.token_url.into());
            optional(&mut m, "refreshUrl", c.refresh_url);
            m.insert("scopes".into(), scopes(c.scopes));
            "clientCredentials"
        }
        Some(Flow::Implicit(i)) => {
            m.insert("authorizationUrl".into(), i.authorization_url.into());
            optional(&mut m, "refreshUrl", i.refresh_url);
            m.insert("scopes".into(), scopes(i.scopes));
            "implicit"
        }
        Some(Flow::Password(p)) => {
            m.insert("tokenUrl".into(), p.token_url.into());
            optional(&mut m, "refreshUrl", p.refresh_url);
            m.insert("scopes".into(), scopes(p.scopes));
            "password"
        }
        None => return Value::Object(Map::new()),
    };
    let mut o = Map::new();
    o.insert(name.into(), Value::Object(m));
    Value::Object(o)
}

/// A `google.protobuf.Struct` as its JSON object, keys sorted at every depth.
fn structure(field: &str, s: pbjson_types::Struct) -> Result<Value, TranslateError> {
    let v = serde_json::to_value(&s).map_err(|_| {
        TranslateError::untranslatable(field, "is not a JSON object (a NaN or infinity in it)")
    })?;
    Ok(sorted(v))
}

fn sorted(v: Value) -> Value {
    match v {
        Value::Object(m) => {
            let all: BTreeMap<String, Value> = m.into_iter().collect();
            Value::Object(all.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(a) => Value::Array(a.into_iter().map(sorted).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pb::security_scheme::Scheme;
    use prost::Message;

    fn scheme(s: Scheme) -> pb::SecurityScheme {
        pb::SecurityScheme { scheme: Some(s) }
    }

    fn requirement(name: &str, scopes: &[&str]) -> pb::Security {
        pb::Security {
            schemes: HashMap::from([(
                name.to_owned(),
                pb::StringList {
                    list: scopes.iter().map(|s| s.to_string()).collect(),
                },
            )]),
        }
    }

    /// One scheme of every kind the 0.3 proto's oneof holds.
    fn schemes() -> HashMap<String, pb::SecurityScheme> {
        let scopes = HashMap::from([
            ("write".to_owned(), "Write".to_owned()),
            ("read".to_owned(), "Read".to_owned()),
        ]);
        HashMap::from([
            (
                "key".to_owned(),
                scheme(Scheme::ApiKeySecurityScheme(pb::ApiKeySecurityScheme {
                    location: "header".into(),
                    name: "X-Key".into(),
                    ..Default::default()
                })),
            ),
            (
                "bearer".to_owned(),
                scheme(Scheme::HttpAuthSecurityScheme(pb::HttpAuthSecurityScheme {
                    scheme: "bearer".into(),
                    bearer_format: "JWT".into(),
                    description: "tokens".into(),
                })),
            ),
            (
                "oauth".to_owned(),
                scheme(Scheme::Oauth2SecurityScheme(pb::OAuth2SecurityScheme {
                    flows: Some(pb::OAuthFlows {
                        flow: Some(pb::o_auth_flows::Flow::ClientCredentials(
                            pb::ClientCredentialsOAuthFlow {
                                token_url: "https://a.example/token".into(),
                                scopes,
                                ..Default::default()
                            },
                        )),
                    }),
                    ..Default::default()
                })),
            ),
            (
                "oidc".to_owned(),
                scheme(Scheme::OpenIdConnectSecurityScheme(
                    pb::OpenIdConnectSecurityScheme {
                        open_id_connect_url: "https://a.example/.well-known/openid".into(),
                        ..Default::default()
                    },
                )),
            ),
            (
                "mtls".to_owned(),
                scheme(Scheme::MtlsSecurityScheme(Default::default())),
            ),
        ])
    }

    /// A 0.3 card with every kind of security scheme, a skill requirement and an extension, as
    /// the official SDK's gRPC server sends it.
    fn card() -> pb::AgentCard {
        pb::AgentCard {
            protocol_version: "0.3.0".into(),
            name: "g".into(),
            description: "a gRPC agent".into(),
            url: "grpc.a.example:443".into(),
            preferred_transport: "GRPC".into(),
            version: "1.0.0".into(),
            capabilities: Some(pb::AgentCapabilities {
                streaming: true,
                extensions: vec![pb::AgentExtension {
                    uri: "https://example.com/ext/v1".into(),
                    params: Some(pbjson_types::Struct {
                        fields: HashMap::from([
                            ("z".to_owned(), pbjson_types::Value::from(1.0)),
                            ("a".to_owned(), pbjson_types::Value::from("é\u{202e}")),
                        ]),
                    }),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            security_schemes: schemes(),
            security: vec![requirement("bearer", &[])],
            default_input_modes: vec!["text/plain".into()],
            default_output_modes: vec!["text/plain".into()],
            skills: vec![pb::AgentSkill {
                id: "secret".into(),
                name: "Secret".into(),
                description: String::new(),
                tags: vec!["extended".into()],
                security: vec![requirement("oauth", &["write", "read"])],
                ..Default::default()
            }],
            supports_authenticated_extended_card: true,
            ..Default::default()
        }
    }

    /// Every scheme is written with its 0.3 `type`, requirements as `{name: [scopes]}`, empty
    /// required strings kept and empty optional ones left out; the strict 0.3 schema and the
    /// card rules accept the result, and compile it to the same skills and security.
    #[test]
    fn a_proto_card_is_the_0_3_json_card_the_rules_accept() {
        let json = card_to_json(&card().encode_to_vec()).unwrap();
        let v: Value = serde_json::from_slice(&json).unwrap();
        let s = &v["securitySchemes"];
        assert_eq!(
            s["key"],
            json!({"type": "apiKey", "in": "header", "name": "X-Key"})
        );
        assert_eq!(
            s["bearer"],
            json!({"type": "http", "scheme": "bearer", "bearerFormat": "JWT", "description": "tokens"})
        );
        assert_eq!(s["oauth"]["type"], "oauth2");
        assert_eq!(
            s["oauth"]["flows"]["clientCredentials"]["scopes"],
            json!({"read": "Read", "write": "Write"})
        );
        assert_eq!(s["oidc"]["type"], "openIdConnect");
        assert_eq!(s["mtls"], json!({"type": "mutualTLS"}));
        assert_eq!(v["security"], json!([{"bearer": []}]));
        assert_eq!(
            v["skills"][0]["security"],
            json!([{"oauth": ["write", "read"]}])
        );
        assert_eq!(v["skills"][0]["description"], "");
        assert!(v.get("documentationUrl").is_none() && v.get("iconUrl").is_none());
        assert_eq!(
            v["capabilities"]["extensions"][0]["params"],
            json!({"a": "é\u{202e}", "z": 1.0})
        );
        let policy = crate::card::CardPolicy::default();
        let valid = crate::card::validate(&json, &policy, None)
            .unwrap_or_else(|e| panic!("{e}\n{}", String::from_utf8_lossy(&json)));
        let caps = crate::profile::ClientCaps {
            bindings: vec![crate::profile::Binding::Grpc],
            versions: vec!["0.3".into()],
            extensions: Vec::new(),
        };
        let p = crate::profile::compile(&valid, &caps);
        assert!(p.is_usable(), "{:?}", p.reason());
        assert_eq!(p.skills["secret"].security[0]["oauth"], ["write", "read"]);
    }

    /// The same message gives the same bytes (maps in sorted key order), so a refresh of an
    /// unchanged card changes no digest.
    #[test]
    fn the_same_card_is_the_same_bytes() {
        let a = card_to_json(&card().encode_to_vec()).unwrap();
        for _ in 0..8 {
            assert_eq!(card_to_json(&card().encode_to_vec()).unwrap(), a);
        }
        let text = String::from_utf8(a).unwrap();
        let at = |k: &str| text.find(k).unwrap();
        assert!(at("\"bearer\":{") < at("\"key\":{") && at("\"key\":{") < at("\"mtls\":{"));
    }

    /// What cannot be written as a 0.3 JSON card is refused, naming the member: a scheme of no
    /// known type, and bytes that are not the message.
    #[test]
    fn what_the_json_card_cannot_hold_is_refused() {
        let mut c = card();
        c.security_schemes
            .insert("new".into(), pb::SecurityScheme { scheme: None });
        let e = card_to_json(&c.encode_to_vec()).unwrap_err();
        assert!(e.to_string().contains("securitySchemes"), "{e}");
        assert!(card_to_json(b"\xff\xff\xff").is_err());
    }

    mod props {
        use proptest::prelude::*;

        use super::*;
        use crate::testkit::hostile::hostile_string;

        proptest! {
            /// Hostile text (multi-byte, control, bidi) in every string and map key is written
            /// unchanged, and a message sent twice over (protobuf merges: repeated fields grow,
            /// a map key seen again replaces the first) still gives one JSON object without
            /// duplicate keys.
            #[test]
            fn hostile_names_and_repeated_map_keys_stay_one_object(
                name in hostile_string(),
                scheme_name in hostile_string(),
                scope in hostile_string(),
            ) {
                let mut c = card();
                c.name = name.clone();
                let bearer = c.security_schemes["bearer"].clone();
                c.security_schemes.insert(scheme_name.clone(), bearer);
                c.security.push(requirement(&scheme_name, &[&scope]));
                let once = c.encode_to_vec();
                let twice = [once.clone(), once.clone()].concat();
                for bytes in [once, twice] {
                    let json = card_to_json(&bytes).unwrap();
                    let text = std::str::from_utf8(&json).unwrap();
                    prop_assert!(crate::json::duplicate_keys(text, 1).unwrap().is_empty(), "{}", text);
                    let v: Value = serde_json::from_str(text).unwrap();
                    prop_assert_eq!(v["name"].as_str(), Some(name.as_str()));
                    prop_assert!(v["securitySchemes"].get(&scheme_name).is_some(), "{}", text);
                    prop_assert_eq!(
                        &v["security"][1][&scheme_name][0],
                        &Value::from(scope.as_str())
                    );
                }
            }
        }
    }
}
