//! Cards captured from the official SDKs (`tests/fixtures/sdk/`, see its README) go through the
//! real pipeline: every one validates and compiles; the compiled profiles say what the capture flags
//! put in; signed ones verify with their committed public JWKS and fail once tampered with.

use std::path::{Path, PathBuf};

use a2a_egress::card::CardPolicy;
use a2a_egress::card::signature::{self, PayloadForm, Rule, SignatureError, TrustedKeys};
use a2a_egress::card::validate;
use a2a_egress::profile::ClientCaps;
use a2a_egress::profile::compile;
use a2a_egress::profile::{Binding, Profile, Unusable};
use serde_json::Value;

const TRACE: &str = "https://example.com/ext/trace/v1";
const AUDIT: &str = "https://example.com/ext/audit/v1";

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sdk")
}

/// Every captured card (`*.json`; the public keys are `*.jwks`), sorted by name.
fn cards() -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| {
            let name = p.file_stem().unwrap().to_str().unwrap().to_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect();
    out.sort();
    out
}

fn card(name: &str) -> Vec<u8> {
    std::fs::read(dir().join(format!("{name}.json"))).unwrap()
}

/// The card's origin: where it was served from (all captures serve card and interfaces together).
fn origin(bytes: &[u8]) -> String {
    let v: Value = serde_json::from_slice(bytes).unwrap();
    let url = url::Url::parse(v["supportedInterfaces"][0]["url"].as_str().unwrap()).unwrap();
    url.origin().ascii_serialization()
}

fn loopback_policy() -> CardPolicy {
    CardPolicy {
        allow_plain_http: true,
        ..CardPolicy::default()
    }
}

fn profile(name: &str, caps: &ClientCaps) -> Profile {
    let bytes = card(name);
    let validated = validate(&bytes, &loopback_policy(), Some(&origin(&bytes)))
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    compile(&validated, caps)
}

#[test]
fn every_captured_sdk_card_validates_and_compiles() {
    let all = cards();
    let names: Vec<&str> = all.iter().map(|(n, _)| n.as_str()).collect();
    assert!(
        names.iter().filter(|n| n.starts_with("python-")).count() >= 5
            && names.iter().filter(|n| n.starts_with("js-")).count() >= 4,
        "missing captures: {names:?}"
    );
    let caps = ClientCaps {
        extensions: vec![AUDIT.into(), TRACE.into()],
        ..ClientCaps::default()
    };
    for (name, bytes) in &all {
        let validated = validate(bytes, &loopback_policy(), Some(&origin(bytes)))
            .unwrap_or_else(|e| panic!("{name} does not validate: {e}"));
        let p = compile(&validated, &caps);
        assert!(p.is_usable(), "{name}: {:?}", p.reason());
        assert!(p.card_digest.starts_with("sha256:"), "{name}");
        assert!(
            p.skills.contains_key("echo"),
            "{name}: {:?}",
            p.skills.keys()
        );
        // Plain http is refused unless the policy allows it (these are loopback captures).
        assert!(
            validate(bytes, &CardPolicy::default(), Some(&origin(bytes))).is_err(),
            "{name} validated with http:// URLs under the default policy"
        );
    }
}

#[test]
fn compiled_profiles_reflect_the_capture_flags() {
    let caps = ClientCaps::default();
    for name in ["python-rest-tenant", "js-rest-tenant"] {
        let p = profile(name, &caps);
        let i = p.interface.as_ref().unwrap();
        assert_eq!(
            (i.binding, i.tenant.as_deref()),
            (Binding::HttpJson, Some("acme")),
            "{name}"
        );
        assert!(!p.streaming, "{name}");
    }
    // The JS SDK writes `"tenant": ""` for "no tenant", which is no tenant.
    let p = profile("js-basic", &caps);
    let i = p.interface.as_ref().unwrap();
    assert_eq!((i.binding, i.tenant.as_deref()), (Binding::JsonRpc, None));
    assert!(p.streaming);

    let p = profile("python-both-bindings", &caps);
    assert_eq!(p.interface.as_ref().unwrap().binding, Binding::JsonRpc);
    assert_eq!(
        p.skills["reconcile"].input,
        ["application/json", "text/plain"]
    );
    assert_eq!(p.skills["reconcile"].output, ["text/plain"]);

    let p = profile("python-secured-extended", &caps);
    assert!(p.extended_card);
    assert_eq!(p.agent_version, "2.1.0");

    // A required extension the client does not know makes the agent unusable, naming the URI.
    for name in ["python-extensions", "js-extensions"] {
        let p = profile(name, &caps);
        assert!(!p.is_usable(), "{name}");
        assert_eq!(
            p.unusable().cloned(),
            Some(Unusable::RequiredExtensions {
                uris: vec![TRACE.into()]
            }),
            "{name}"
        );
        let knows = ClientCaps {
            extensions: vec![AUDIT.into(), TRACE.into()],
            ..ClientCaps::default()
        };
        assert_eq!(profile(name, &knows).extensions, [AUDIT, TRACE], "{name}");
    }
}

fn keys_for(name: &str, origin: &str) -> TrustedKeys {
    TrustedKeys::load(&[(origin.to_owned(), dir().join(format!("{name}.jwks")))]).unwrap()
}

#[test]
fn sdk_signed_cards_verify_with_their_published_keys() {
    for (name, kid, form) in [
        ("python-signed", "python-es256", PayloadForm::AsReceived),
        // `{"bearer": {}}` is served but the SDK signed the card without it.
        (
            "python-signed-secured",
            "python-es256",
            PayloadForm::EmptiesStripped,
        ),
        // The JS SDK serves `"tenant": ""`, `"extensions": []`, … and signs without them.
        ("js-signed", "js-es256", PayloadForm::EmptiesStripped),
    ] {
        let bytes = card(name);
        let origin = origin(&bytes);
        let v: Value = serde_json::from_slice(&bytes).unwrap();
        let keys = keys_for(name, &origin);
        let ok = signature::verify(&v, &keys, &origin).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            (ok.kid.as_str(), ok.index, ok.form),
            (kid, 0, form),
            "{name}"
        );

        // Any change to signed content breaks it.
        let mut tampered = v.clone();
        tampered["supportedInterfaces"][0]["url"] = Value::from("https://evil.example/a2a");
        match signature::verify(&tampered, &keys, &origin) {
            Err(SignatureError::NoValidSignature { rejections }) => {
                assert_eq!(rejections[0].rule, Rule::BadSignature, "{name}")
            }
            other => panic!("{name}: tampered card gave {other:?}"),
        }
        // The same keys trusted for another origin do not vouch for it.
        let elsewhere = keys_for(name, "https://elsewhere.example");
        assert!(matches!(
            signature::verify(&v, &elsewhere, &origin),
            Err(SignatureError::NoTrustedKeys { .. })
        ));
    }
}

#[test]
fn require_signatures_accepts_sdk_signed_cards_only_with_the_origins_keys() {
    use a2a_egress::card::SignatureStatus;
    let require = |origin: &str, jwks: &str| CardPolicy {
        allow_plain_http: true,
        require_signatures: true,
        trusted_keys: vec![(origin.to_owned(), dir().join(jwks))],
        ..CardPolicy::default()
    };
    for (name, kid) in [("python-signed", "python-es256"), ("js-signed", "js-es256")] {
        let bytes = card(name);
        let at = origin(&bytes);
        let jwks = format!("{name}.jwks");
        let v = validate(&bytes, &require(&at, &jwks), Some(&at))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        match v.signature() {
            SignatureStatus::Verified(ok) => assert_eq!(ok.kid, kid, "{name}"),
            other => panic!("{name}: {other:?}"),
        }
        assert!(compile(&v, &ClientCaps::default()).is_usable(), "{name}");
        // The right keys, but trusted for another origin: refused.
        let err = validate(
            &bytes,
            &require("https://elsewhere.example", &jwks),
            Some(&at),
        )
        .unwrap_err();
        assert!(err.to_string().contains("no trusted keys"), "{name}: {err}");
    }
    // The Python SDK serves a scope-less `{"bearer":{}}` requirement but signs the card with it
    // dropped, so the signature does not cover it: refused when signatures are required.
    let bytes = card("python-signed-secured");
    let at = origin(&bytes);
    let err = validate(
        &bytes,
        &require(&at, "python-signed-secured.jwks"),
        Some(&at),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "securityRequirements[0]: empty value not covered by the signature"
    );
    // An unsigned SDK card is refused when signatures are required.
    let bytes = card("python-basic");
    let at = origin(&bytes);
    let err = validate(&bytes, &require(&at, "python-signed.jwks"), Some(&at)).unwrap_err();
    assert!(err.to_string().contains("unsigned"), "{err}");
    // A signed card whose keys belong to another signer is refused too.
    let bytes = card("js-signed");
    let at = origin(&bytes);
    let err = validate(&bytes, &require(&at, "python-signed.jwks"), Some(&at)).unwrap_err();
    assert!(err.to_string().contains("js-es256"), "{err}");
}
