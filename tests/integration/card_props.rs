//! Property tests: `validate` + `compile` never panic, on arbitrary bytes, arbitrary JSON and
//! arbitrary mutations of valid cards; and every card our strict rules accept is also accepted by
//! the typed `a2a-lf` model (no `CardError::Model`), so compile always gets a typed card.

use a2a_egress::card::CardPolicy;
use a2a_egress::card::{self, CardError};
use a2a_egress::profile::{self, Binding, ClientCaps};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

fn policies() -> [CardPolicy; 2] {
    [
        CardPolicy::default(),
        CardPolicy {
            allow_plain_http: true,
            ..CardPolicy::default()
        },
    ]
}

fn caps() -> [ClientCaps; 3] {
    [
        ClientCaps::default(),
        // 0.3 and gRPC allowed: such interfaces may be chosen, and the profile is then unusable.
        ClientCaps {
            bindings: vec![Binding::JsonRpc, Binding::HttpJson, Binding::Grpc],
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

/// Runs the whole pipeline; panics only on a broken invariant.
fn exercise(bytes: &[u8]) -> bool {
    let mut any_ok = false;
    for policy in policies() {
        match card::validate(bytes, &policy, None) {
            Ok(v) => {
                any_ok = true;
                for c in caps() {
                    let p = profile::compile(&v, &c);
                    assert_eq!(p.card_digest, v.digest());
                    assert_eq!(p.is_usable(), p.unusable().is_none());
                    assert_eq!(p.is_usable(), p.reason().is_none());
                    assert_eq!(p.skills.len(), v.card().skills.len());
                    assert_eq!(p.interfaces.len(), v.card().supported_interfaces.len());
                    // Never an untranslatable call: usable means 1.0 or 0.3, on any binding.
                    if let (true, Some(i)) = (p.is_usable(), p.interface.as_ref()) {
                        assert!(i.callable(), "{i:?}");
                        assert!(i.version == "1.0" || i.version == "0.3", "{i:?}");
                    }
                    serde_json::to_vec(&p).unwrap();
                }
            }
            Err(errs) => {
                assert!(!errs.0.is_empty());
                for e in errs.iter() {
                    assert!(
                        !matches!(e, CardError::Model { .. }),
                        "strict rules accepted a card a2a-lf refuses: {e}\ncard: {}",
                        String::from_utf8_lossy(bytes)
                            .chars()
                            .take(4000)
                            .collect::<String>()
                    );
                    // One line per problem, so the CLI output stays one problem per line.
                    assert!(!e.to_string().contains('\n'), "{e}");
                }
            }
        }
    }
    any_ok
}

/// Strings that tend to hit rules: URLs of every kind, versions, media types, hidden characters.
fn interesting_string() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("https://a.example/a2a".to_string()),
        Just("http://127.0.0.1:1/".to_string()),
        Just("https://u:p@a.example/".to_string()),
        Just("a.example:443".to_string()),
        Just("ftp://a.example".to_string()),
        Just("JSONRPC".to_string()),
        Just("HTTP+JSON".to_string()),
        Just("GRPC".to_string()),
        Just("1.0".to_string()),
        Just("0.3.0".to_string()),
        Just("text/plain".to_string()),
        Just("x\u{202e}\u{200b}\u{0}".to_string()),
        Just("https://example.com/ext/trace/v1".to_string()),
        "[a-zA-Z0-9:/._+ -]{0,40}",
        any::<String>(),
        "[a-z]{300,400}",
    ]
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|f| json!(f)),
        interesting_string().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// Keys drawn mostly from the card's own vocabulary, so random objects reach deep rules.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "name",
            "description",
            "version",
            "supportedInterfaces",
            "url",
            "protocolBinding",
            "protocolVersion",
            "tenant",
            "capabilities",
            "streaming",
            "extensions",
            "uri",
            "required",
            "skills",
            "id",
            "tags",
            "inputModes",
            "outputModes",
            "defaultInputModes",
            "defaultOutputModes",
            "securitySchemes",
            "securityRequirements",
            "schemes",
            "list",
            "apiKeySecurityScheme",
            "oauth2SecurityScheme",
            "flows",
            "clientCredentials",
            "tokenUrl",
            "scopes",
            "signatures",
            "protected",
            "signature",
            "provider",
            "organization",
            "preferredTransport",
            "type",
            "security",
        ])
        .prop_map(str::to_string),
        "[a-z]{1,8}",
    ]
}

fn valid_cards() -> Vec<Value> {
    let base = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/cards/valid");
    let mut out = Vec::new();
    // The 1.0 cards and the 0.3 ones (mutated 0.3 cards exercise the 0.3 schema and conversion).
    for dir in [base.to_owned(), format!("{base}/v03")] {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "json") {
                out.push(serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap());
            }
        }
    }
    assert!(!out.is_empty());
    out
}

/// Every JSON pointer in `v` (including the root "").
fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, c) in m {
                pointers(
                    c,
                    format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")),
                    out,
                );
            }
        }
        Value::Array(a) => {
            for (i, c) in a.iter().enumerate() {
                pointers(c, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
    out.push(at);
}

#[derive(Debug, Clone)]
enum Mutation {
    Replace(Value),
    Remove,
    Insert(String, Value),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        arb_json().prop_map(Mutation::Replace),
        Just(Mutation::Remove),
        (key(), arb_json()).prop_map(|(k, v)| Mutation::Insert(k, v)),
    ]
}

fn apply(card: &mut Value, ptr: &str, m: &Mutation) {
    match m {
        Mutation::Replace(v) => {
            if let Some(slot) = card.pointer_mut(ptr) {
                *slot = v.clone();
            }
        }
        Mutation::Remove => {
            let (parent, last) = ptr.rsplit_once('/').unwrap_or(("", ""));
            match card.pointer_mut(parent) {
                Some(Value::Object(o)) => {
                    o.shift_remove(&last.replace("~1", "/").replace("~0", "~"));
                }
                Some(Value::Array(a)) => {
                    if let Ok(i) = last.parse::<usize>()
                        && i < a.len()
                    {
                        a.remove(i);
                    }
                }
                _ => {}
            }
        }
        Mutation::Insert(k, v) => match card.pointer_mut(ptr) {
            Some(Value::Object(o)) => {
                o.insert(k.clone(), v.clone());
            }
            Some(Value::Array(a)) => a.push(v.clone()),
            _ => {}
        },
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn never_panics_on_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        exercise(&bytes);
    }

    #[test]
    fn never_panics_on_arbitrary_json(v in arb_json()) {
        exercise(&serde_json::to_vec(&v).unwrap());
    }

    #[test]
    fn never_panics_on_mutated_valid_cards(
        which in any::<prop::sample::Index>(),
        muts in prop::collection::vec((any::<prop::sample::Index>(), mutation()), 1..4),
    ) {
        let cards = valid_cards();
        let mut card = which.get(&cards).clone();
        for (at, m) in &muts {
            let mut ptrs = Vec::new();
            pointers(&card, String::new(), &mut ptrs);
            let ptr = at.get(&ptrs).clone();
            apply(&mut card, &ptr, m);
        }
        exercise(&serde_json::to_vec(&card).unwrap());
    }

    #[test]
    fn digest_ignores_formatting_and_key_order(which in any::<prop::sample::Index>()) {
        let cards = valid_cards();
        let card = which.get(&cards);
        let compact = serde_json::to_vec(card).unwrap();
        let pretty = serde_json::to_vec_pretty(card).unwrap();
        // Reverse the top-level key order.
        let reversed: Map<String, Value> = card.as_object().unwrap().iter().rev()
            .map(|(k, v)| (k.clone(), v.clone())).collect();
        let reversed = serde_json::to_vec(&reversed).unwrap();
        let p = &policies()[1];
        let digest = |b: &[u8]| card::validate(b, p, None).unwrap().digest().to_owned();
        let d = digest(&compact);
        prop_assert_eq!(&d, &digest(&pretty));
        prop_assert_eq!(&d, &digest(&reversed));
    }
}

#[test]
fn mutation_harness_reaches_valid_cards_too() {
    // Guard against a harness that only ever produces invalid input: the unmutated fixtures pass.
    for c in valid_cards() {
        assert!(exercise(&serde_json::to_vec(&c).unwrap()));
    }
}
