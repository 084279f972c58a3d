//! Shared invariants and fixtures of the fuzz targets (pure, no I/O).

use a2a_egress::card::{self, CardError, CardPolicy, ValidatedCard};
use a2a_egress::profile::{self, ClientCaps, Profile};

/// Whether `c` must never reach a display string, a header or a log line: a control character,
/// a line/paragraph separator, a bidi control or an invisible formatting character.
pub fn is_control_or_bidi(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{2028}' | '\u{2029}' | '\u{061C}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2069}' | '\u{FEFF}' | '\u{E0000}'..='\u{E007F}')
}

/// The card policies the targets run every input under: the default, plain http allowed, and
/// signatures required (no keys: every signed card is refused, through the JWS checks).
pub fn policies() -> [CardPolicy; 3] {
    [
        CardPolicy::default(),
        CardPolicy {
            allow_plain_http: true,
            ..CardPolicy::default()
        },
        CardPolicy {
            allow_plain_http: true,
            require_signatures: true,
            ..CardPolicy::default()
        },
    ]
}

/// Client capabilities: the defaults, and one that knows the fixtures' extensions.
pub fn caps() -> [ClientCaps; 3] {
    [
        ClientCaps::default(),
        // Everything a profile can record: 0.3 and gRPC interfaces may then be chosen (and the
        // profile must then be unusable until translation exists).
        ClientCaps {
            bindings: vec![
                profile::Binding::JsonRpc,
                profile::Binding::HttpJson,
                profile::Binding::Grpc,
            ],
            versions: vec!["1.0".into(), "0.3".into()],
            ..ClientCaps::default()
        },
        ClientCaps {
            extensions: vec![
                "https://example.com/ext/cost-estimate/v1".into(),
                "https://example.com/ext/trace/v1".into(),
            ],
            ..ClientCaps::default()
        },
    ]
}

/// Every problem message is one line of text without control or bidi characters.
pub fn check_errors<'e>(errors: impl IntoIterator<Item = &'e CardError>) {
    for e in errors {
        let m = e.to_string();
        assert!(!m.chars().any(is_control_or_bidi), "message {m:?}");
    }
}

/// The invariants of a compiled profile.
pub fn check_profile(v: &ValidatedCard, p: &Profile) {
    assert_eq!(p.card_digest, v.digest());
    assert_eq!(p.is_usable(), p.unusable().is_none());
    assert_eq!(p.is_usable(), p.reason().is_none());
    assert_eq!(p.skills.len(), v.card().skills.len());
    let d = &p.display;
    let mut strings = vec![d.name.as_str(), d.description.as_str()];
    for s in d.skills.values() {
        strings.push(&s.name);
        strings.push(&s.description);
        strings.extend(s.examples.iter().map(String::as_str));
    }
    for s in p.skills.values() {
        strings.extend(s.tags.iter().map(String::as_str));
    }
    for s in strings {
        assert!(!s.chars().any(is_control_or_bidi), "display string {s:?}");
    }
    if let Some(t) = p.interface.as_ref().and_then(|i| i.tenant.as_deref()) {
        assert!(
            !t.is_empty() && t != "." && t != ".." && !t.contains(['/', '\\', '%', '?', '#']),
            "tenant {t:?}"
        );
    }
    // Every interface of the card is recorded, the chosen one (if any) first among the chosen.
    assert_eq!(p.interfaces.len(), v.card().supported_interfaces.len());
    assert_eq!(
        p.interfaces.iter().filter(|i| i.chosen).count(),
        usize::from(p.interface.is_some())
    );
    // No untranslated call: a usable profile speaks 1.0 over JSON-RPC or HTTP+JSON.
    if let (true, Some(i)) = (p.is_usable(), p.interface.as_ref()) {
        assert_eq!(i.version, "1.0");
        assert_ne!(i.binding, profile::Binding::Grpc);
    }
    serde_json::to_vec(p).expect("a profile serialises");
}

/// Validates under every policy and compiles under every capability set, checking invariants.
pub fn validate_and_compile(data: &[u8]) -> Option<(ValidatedCard, Profile)> {
    let mut first = None;
    for policy in policies() {
        match card::validate(data, &policy, None) {
            Ok(v) => {
                for c in caps() {
                    let p = profile::compile(&v, &c);
                    check_profile(&v, &p);
                    if first.is_none() && policy.allow_plain_http {
                        first = Some((v.clone(), p));
                    }
                }
            }
            Err(errs) => {
                assert!(!errs.0.is_empty());
                check_errors(errs.iter());
            }
        }
    }
    first
}

/// Whether JSON text has a duplicated object key anywhere (keys compared after unescaping, numbers
/// never interpreted), read through serde_json's `RawValue` independently of the gateway's own
/// scanner; `None` when serde_json refuses the text (not JSON, or nested too deeply).
pub fn has_duplicate_key(text: &[u8]) -> Option<bool> {
    let raw: &serde_json::value::RawValue = serde_json::from_slice(text).ok()?;
    dup_in(raw).ok()
}

fn dup_in(raw: &serde_json::value::RawValue) -> Result<bool, serde_json::Error> {
    use serde::de::{Deserializer, MapAccess, Visitor};
    use serde_json::value::RawValue;

    struct Members<'a>(Vec<(String, &'a RawValue)>);
    impl<'de> serde::Deserialize<'de> for Members<'de> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl<'de> Visitor<'de> for V {
                type Value = Members<'de>;
                fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str("an object")
                }
                fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Members<'de>, A::Error> {
                    let mut out = Vec::new();
                    while let Some(kv) = m.next_entry::<String, &'de RawValue>()? {
                        out.push(kv);
                    }
                    Ok(Members(out))
                }
            }
            d.deserialize_map(V)
        }
    }

    let t = raw.get();
    match t.as_bytes().first() {
        Some(b'{') => {
            let Members(members) = serde_json::from_str(t)?;
            let mut seen = std::collections::HashSet::new();
            let mut dup = false;
            for (k, v) in members {
                dup |= !seen.insert(k);
                dup |= dup_in(v)?;
            }
            Ok(dup)
        }
        Some(b'[') => {
            let items: Vec<&RawValue> = serde_json::from_str(t)?;
            let mut dup = false;
            for v in items {
                dup |= dup_in(v)?;
            }
            Ok(dup)
        }
        _ => Ok(false),
    }
}
