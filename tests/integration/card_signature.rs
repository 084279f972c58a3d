//! Agent Card JWS verification (`card::signature`) against keys generated at test time for all four
//! allowlisted algorithms, cards signed here over the JCS payload, tampered variants, and cards
//! signed by the official Python SDK signer (`a2a.utils.signing`) served by a real SDK agent.

use std::sync::OnceLock;

use a2a_egress::card::canonical;
use a2a_egress::card::signature::{
    PayloadForm, Rejection, Rule, SigAlg, SignatureError, TrustedKeys, strip_empty, verify,
};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey};
use serde_json::{Value, json};

const ORIGIN: &str = "https://agent.example";
const OTHER_ORIGIN: &str = "https://other.example";

/// A private key able to sign, and its public JWK.
struct TestKey {
    alg: Algorithm,
    kid: String,
    enc: EncodingKey,
    /// Private key as PKCS#8 PEM (for the Python signer).
    pem: String,
    jwk: Value,
}

fn test_key(alg: Algorithm, kid: &str) -> TestKey {
    let (enc, pem) = match alg {
        Algorithm::ES256 => {
            let kp = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
            (
                EncodingKey::from_ec_der(&kp.serialize_der()),
                kp.serialize_pem(),
            )
        }
        Algorithm::EdDSA => {
            let kp = rcgen::KeyPair::generate_for(&rcgen::PKCS_ED25519).unwrap();
            // ring writes Ed25519 keys as PKCS#8 v2 (seed + public key), which neither
            // jsonwebtoken's JWK derivation nor Python's `cryptography` reads. RFC 8410 v1 is a
            // fixed 16-byte prefix and the 32-byte seed, which sits at the same offset in v2.
            const V1_PREFIX: [u8; 16] = [
                0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22,
                0x04, 0x20,
            ];
            let v2 = kp.serialize_der();
            let v1 = [&V1_PREFIX[..], &v2[16..48]].concat();
            let jwk = json!({"kty": "OKP", "crv": "Ed25519", "x": b64(kp.public_key_raw())});
            let pem = format!(
                "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
                base64::engine::general_purpose::STANDARD.encode(&v1)
            );
            return finish(alg, kid, EncodingKey::from_ed_der(&v1), pem, jwk);
        }
        Algorithm::RS256 | Algorithm::PS256 => {
            let (pkcs1_der, pkcs8_pem) = rsa_key();
            (EncodingKey::from_rsa_der(pkcs1_der), pkcs8_pem.clone())
        }
        other => panic!("no test key for {other:?}"),
    };
    let jwk = serde_json::to_value(Jwk::from_encoding_key(&enc, alg).unwrap()).unwrap();
    finish(alg, kid, enc, pem, jwk)
}

fn finish(alg: Algorithm, kid: &str, enc: EncodingKey, pem: String, mut jwk: Value) -> TestKey {
    let obj = jwk.as_object_mut().unwrap();
    obj.insert("kid".into(), json!(kid));
    // Keys in the wild often omit `alg`; the verifier must not need it.
    obj.remove("alg");
    obj.insert("use".into(), json!("sig"));
    TestKey {
        alg,
        kid: kid.to_owned(),
        enc,
        pem,
        jwk,
    }
}

/// One 2048-bit RSA key per test binary (generation is slow in debug builds), as PKCS#1 DER
/// (what jsonwebtoken signs with) and PKCS#8 PEM (for the Python signer).
fn rsa_key() -> &'static (Vec<u8>, String) {
    static KEY: OnceLock<(Vec<u8>, String)> = OnceLock::new();
    KEY.get_or_init(|| {
        use rsa::Generate;
        use rsa::pkcs1::EncodeRsaPrivateKey;
        use rsa::pkcs8::EncodePrivateKey;
        let key = rsa::PrivateKey::generate();
        let der = key.to_pkcs1_der().unwrap().as_bytes().to_vec();
        let pem = key
            .to_pkcs8_pem(rsa::pkcs8::LineEnding::LF)
            .unwrap()
            .to_string();
        (der, pem)
    })
}

fn jwks(keys: &[&TestKey]) -> String {
    json!({"keys": keys.iter().map(|k| k.jwk.clone()).collect::<Vec<_>>()}).to_string()
}

fn trusted(origin: &str, keys: &[&TestKey]) -> TrustedKeys {
    let mut t = TrustedKeys::default();
    t.add_jwks(origin, &jwks(keys), "test").unwrap();
    t
}

fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// A detached-payload JWS over `payload` with the given protected header.
fn jws(header: &Value, payload: &[u8], key: &TestKey) -> Value {
    let protected = b64(header.to_string().as_bytes());
    let input = format!("{protected}.{}", b64(payload));
    let signature = jsonwebtoken::crypto::sign(input.as_bytes(), &key.enc, key.alg).unwrap();
    json!({"protected": protected, "signature": signature})
}

fn header(key: &TestKey) -> Value {
    json!({"alg": alg_name(key.alg), "kid": key.kid, "typ": "JOSE"})
}

fn alg_name(a: Algorithm) -> &'static str {
    match a {
        Algorithm::ES256 => "ES256",
        Algorithm::RS256 => "RS256",
        Algorithm::PS256 => "PS256",
        Algorithm::EdDSA => "EdDSA",
        _ => unreachable!(),
    }
}

/// Signs `card` (over JCS of the card without `signatures`) and appends the signature.
fn signed(card: &Value, key: &TestKey) -> Value {
    signed_with(card, key, &header(key))
}

fn signed_with(card: &Value, key: &TestKey, header: &Value) -> Value {
    let sig = jws(header, &canonical::payload(card).unwrap(), key);
    with_signatures(card, vec![sig])
}

fn with_signatures(card: &Value, sigs: Vec<Value>) -> Value {
    let mut c = card.clone();
    c["signatures"] = Value::Array(sigs);
    c
}

fn base_card() -> Value {
    json!({
        "name": "Echo", "description": "echo agent", "version": "1.0.0",
        "supportedInterfaces": [{"url": "https://agent.example/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "capabilities": {"streaming": true},
        "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "echo", "name": "Echo", "description": "echoes ünïcödé", "tags": ["demo"]}]
    })
}

fn rules(err: SignatureError) -> Vec<Rule> {
    match err {
        SignatureError::NoValidSignature { rejections } => {
            rejections.into_iter().map(|r| r.rule).collect()
        }
        other => panic!("expected NoValidSignature, got {other:?}"),
    }
}

#[test]
fn each_allowlisted_algorithm_verifies() {
    for (alg, expect) in [
        (Algorithm::ES256, SigAlg::ES256),
        (Algorithm::RS256, SigAlg::RS256),
        (Algorithm::PS256, SigAlg::PS256),
        (Algorithm::EdDSA, SigAlg::EdDSA),
    ] {
        let key = test_key(alg, &format!("k-{expect}"));
        let card = signed(&base_card(), &key);
        let v = verify(&card, &trusted(ORIGIN, &[&key]), ORIGIN)
            .unwrap_or_else(|e| panic!("{expect}: {e}"));
        assert_eq!(
            (v.kid.as_str(), v.alg, v.index),
            (key.kid.as_str(), expect, 0)
        );
        assert_eq!(v.form, PayloadForm::AsReceived);
    }
}

#[test]
fn a_tampered_field_fails() {
    let key = test_key(Algorithm::ES256, "k1");
    let mut card = signed(&base_card(), &key);
    card["supportedInterfaces"][0]["url"] = json!("https://evil.example/a2a");
    let err = verify(&card, &trusted(ORIGIN, &[&key]), ORIGIN).unwrap_err();
    assert!(!err.is_unsigned());
    assert_eq!(rules(err), [Rule::BadSignature]);

    // Adding a field is tampering too (a signature covers the whole card but `signatures`).
    let mut added = signed(&base_card(), &key);
    added["capabilities"]["pushNotifications"] = json!(true);
    assert_eq!(
        rules(verify(&added, &trusted(ORIGIN, &[&key]), ORIGIN).unwrap_err()),
        [Rule::BadSignature]
    );
}

#[test]
fn key_order_and_whitespace_do_not_matter() {
    let key = test_key(Algorithm::EdDSA, "k1");
    let signed = signed(&base_card(), &key);
    // Re-serialise with reversed key order and pretty printing: the JCS payload is unchanged.
    let mut reordered = serde_json::Map::new();
    for (k, v) in signed.as_object().unwrap().iter().rev() {
        reordered.insert(k.clone(), v.clone());
    }
    let text = serde_json::to_string_pretty(&Value::Object(reordered)).unwrap();
    let card: Value = serde_json::from_str(&text).unwrap();
    verify(&card, &trusted(ORIGIN, &[&key]), ORIGIN).unwrap();
}

#[test]
fn a_tampered_signature_fails() {
    let key = test_key(Algorithm::ES256, "k1");
    let mut card = signed(&base_card(), &key);
    let sig = card["signatures"][0]["signature"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut bytes = URL_SAFE_NO_PAD.decode(&sig).unwrap();
    bytes[10] ^= 0x01;
    card["signatures"][0]["signature"] = json!(b64(&bytes));
    assert_eq!(
        rules(verify(&card, &trusted(ORIGIN, &[&key]), ORIGIN).unwrap_err()),
        [Rule::BadSignature]
    );
    card["signatures"][0]["signature"] = json!("not base64!");
    assert_eq!(
        rules(verify(&card, &trusted(ORIGIN, &[&key]), ORIGIN).unwrap_err()),
        [Rule::SignatureNotBase64]
    );
}

#[test]
fn an_unknown_kid_fails_naming_kid_and_origin() {
    let key = test_key(Algorithm::ES256, "k1");
    let other = test_key(Algorithm::ES256, "k2");
    let card = signed(&base_card(), &key);
    let err = verify(&card, &trusted(ORIGIN, &[&other]), ORIGIN).unwrap_err();
    assert_eq!(
        err.to_string(),
        "no valid signature: signatures[0]: key id \"k1\" is not trusted for origin https://agent.example"
    );
}

#[test]
fn a_key_trusted_for_another_origin_is_never_used() {
    let key = test_key(Algorithm::ES256, "k1");
    let card = signed(&base_card(), &key);
    // The right key, but configured for another origin only.
    let keys = trusted(OTHER_ORIGIN, &[&key]);
    let err = verify(&card, &keys, ORIGIN).unwrap_err();
    assert!(
        matches!(&err, SignatureError::NoTrustedKeys { origin } if origin == ORIGIN),
        "{err:?}"
    );
    assert!(verify(&card, &keys, OTHER_ORIGIN).is_ok());

    // The same kid exists for this origin but is a different key: the other origin's key is not tried.
    let impostor = test_key(Algorithm::ES256, "k1");
    let mut keys = trusted(OTHER_ORIGIN, &[&key]);
    keys.add_jwks(ORIGIN, &jwks(&[&impostor]), "test").unwrap();
    assert_eq!(
        rules(verify(&card, &keys, ORIGIN).unwrap_err()),
        [Rule::BadSignature]
    );
}

#[test]
fn origins_are_compared_normalised() {
    let key = test_key(Algorithm::EdDSA, "k1");
    let card = signed(&base_card(), &key);
    let keys = trusted("https://AGENT.example:443/", &[&key]);
    verify(&card, &keys, "https://agent.example").unwrap();
    assert!(keys.has_origin("https://agent.example:443"));
    assert_eq!(keys.kids_for_origin(ORIGIN), ["k1"]);
    assert!(verify(&card, &keys, "http://agent.example").is_err());
    assert!(verify(&card, &keys, "https://agent.example:8443").is_err());
}

#[test]
fn alg_none_and_hmac_are_refused_before_any_key_lookup() {
    let key = test_key(Algorithm::ES256, "k1");
    let keys = trusted(ORIGIN, &[&key]);
    let payload = canonical::payload(&base_card()).unwrap();

    let protected = b64(json!({"alg": "none", "kid": "k1"}).to_string().as_bytes());
    let none = with_signatures(
        &base_card(),
        vec![json!({"protected": protected, "signature": ""})],
    );
    assert_eq!(
        rules(verify(&none, &keys, ORIGIN).unwrap_err()),
        [Rule::AlgorithmNotAllowed("none".into())]
    );

    // HS256 with the public JWK's bytes as the "secret" (the classic confusion attack).
    let secret = key.jwk.to_string();
    let protected = b64(json!({"alg": "HS256", "kid": "k1"}).to_string().as_bytes());
    let input = format!("{protected}.{}", b64(&payload));
    let mac = jsonwebtoken::crypto::sign(
        input.as_bytes(),
        &EncodingKey::from_secret(secret.as_bytes()).unwrap(),
        Algorithm::HS256,
    )
    .unwrap();
    let hs = with_signatures(
        &base_card(),
        vec![json!({"protected": protected, "signature": mac})],
    );
    assert_eq!(
        rules(verify(&hs, &keys, ORIGIN).unwrap_err()),
        [Rule::AlgorithmNotAllowed("HS256".into())]
    );

    for alg in ["ES384", "RS512", "es256", ""] {
        let h = json!({"alg": alg, "kid": "k1"});
        let c = signed_with(&base_card(), &key, &h);
        assert_eq!(
            rules(verify(&c, &keys, ORIGIN).unwrap_err()),
            [Rule::AlgorithmNotAllowed(alg.into())]
        );
    }
}

#[test]
fn protected_header_must_carry_alg_and_kid() {
    let key = test_key(Algorithm::ES256, "k1");
    let keys = trusted(ORIGIN, &[&key]);
    let no_kid = signed_with(&base_card(), &key, &json!({"alg": "ES256"}));
    assert_eq!(
        rules(verify(&no_kid, &keys, ORIGIN).unwrap_err()),
        [Rule::MissingKid]
    );
    let no_alg = signed_with(&base_card(), &key, &json!({"kid": "k1"}));
    assert_eq!(
        rules(verify(&no_alg, &keys, ORIGIN).unwrap_err()),
        [Rule::MissingAlg]
    );

    // `alg`/`kid` only in the unprotected header do not count (and may not repeat protected ones).
    let mut c = signed_with(&base_card(), &key, &json!({"alg": "ES256"}));
    c["signatures"][0]["header"] = json!({"kid": "k1"});
    assert_eq!(
        rules(verify(&c, &keys, ORIGIN).unwrap_err()),
        [Rule::MissingKid]
    );
    let mut c = signed(&base_card(), &key);
    c["signatures"][0]["header"] = json!({"kid": "k2"});
    assert_eq!(
        rules(verify(&c, &keys, ORIGIN).unwrap_err()),
        [Rule::DuplicateParameter("kid".into())]
    );
    // An unrelated unprotected parameter is fine.
    let mut c = signed(&base_card(), &key);
    c["signatures"][0]["header"] = json!({"note": "rotation 2026"});
    verify(&c, &keys, ORIGIN).unwrap();
}

#[test]
fn unknown_crit_and_unencoded_payload_are_refused() {
    let key = test_key(Algorithm::ES256, "k1");
    let keys = trusted(ORIGIN, &[&key]);
    let h = json!({"alg": "ES256", "kid": "k1", "crit": ["exp"], "exp": 1});
    let c = signed_with(&base_card(), &key, &h);
    assert_eq!(
        rules(verify(&c, &keys, ORIGIN).unwrap_err()),
        [Rule::UnknownCrit(vec!["exp".into()])]
    );
    let h = json!({"alg": "ES256", "kid": "k1", "crit": []});
    let c = signed_with(&base_card(), &key, &h);
    assert_eq!(
        rules(verify(&c, &keys, ORIGIN).unwrap_err()),
        [Rule::MalformedCrit]
    );
    let h = json!({"alg": "ES256", "kid": "k1", "crit": ["b64"], "b64": false});
    let c = signed_with(&base_card(), &key, &h);
    assert_eq!(
        rules(verify(&c, &keys, ORIGIN).unwrap_err()),
        [Rule::UnencodedPayload]
    );
    let mut c = signed(&base_card(), &key);
    c["signatures"][0]["header"] = json!({"crit": ["exp"]});
    assert_eq!(
        rules(verify(&c, &keys, ORIGIN).unwrap_err()),
        [Rule::UnprotectedCrit]
    );
    // `b64: true` (the default, understood) is accepted.
    let h = json!({"alg": "ES256", "kid": "k1", "crit": ["b64"], "b64": true});
    verify(&signed_with(&base_card(), &key, &h), &keys, ORIGIN).unwrap();
}

#[test]
fn key_must_fit_the_algorithm() {
    let ec = test_key(Algorithm::ES256, "ec");
    let ed = test_key(Algorithm::EdDSA, "ed");
    let keys = trusted(ORIGIN, &[&ec, &ed]);
    // Header claims EdDSA but names the EC key (signed with the Ed key): refused as a mismatch.
    let h = json!({"alg": "EdDSA", "kid": "ec"});
    let c = signed_with(&base_card(), &ed, &h);
    let r = rules(verify(&c, &keys, ORIGIN).unwrap_err());
    assert!(
        matches!(&r[..], [Rule::KeyMismatch { kid, alg: SigAlg::EdDSA, .. }] if kid == "ec"),
        "{r:?}"
    );

    // A JWK restricted to PS256 cannot verify RS256.
    let mut rs = test_key(Algorithm::RS256, "rsa");
    rs.jwk["alg"] = json!("PS256");
    let keys = trusted(ORIGIN, &[&rs]);
    let r = rules(verify(&signed(&base_card(), &rs), &keys, ORIGIN).unwrap_err());
    assert!(matches!(&r[..], [Rule::KeyMismatch { .. }]), "{r:?}");
}

#[test]
fn one_good_signature_among_several_suffices() {
    let old = test_key(Algorithm::ES256, "old");
    let new = test_key(Algorithm::EdDSA, "new");
    let keys = trusted(ORIGIN, &[&new]);
    let payload = canonical::payload(&base_card()).unwrap();
    let sigs = vec![
        json!("not an object"),
        jws(&header(&old), &payload, &old),
        jws(&header(&new), &payload, &new),
    ];
    let c = with_signatures(&base_card(), sigs.clone());
    let v = verify(&c, &keys, ORIGIN).unwrap();
    assert_eq!((v.index, v.kid.as_str(), v.alg), (2, "new", SigAlg::EdDSA));

    // Without the good one, every failure is reported in order.
    let c = with_signatures(&base_card(), sigs[..2].to_vec());
    match verify(&c, &keys, ORIGIN).unwrap_err() {
        SignatureError::NoValidSignature { rejections } => assert_eq!(
            rejections,
            [
                Rejection {
                    index: 0,
                    rule: Rule::NotAnObject
                },
                Rejection {
                    index: 1,
                    rule: Rule::UnknownKid {
                        kid: "old".into(),
                        origin: ORIGIN.into()
                    }
                },
            ]
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn unsigned_is_distinguishable_from_badly_signed() {
    let key = test_key(Algorithm::ES256, "k1");
    let keys = trusted(ORIGIN, &[&key]);
    assert!(
        verify(&base_card(), &keys, ORIGIN)
            .unwrap_err()
            .is_unsigned()
    );
    assert!(
        verify(&with_signatures(&base_card(), vec![]), &keys, ORIGIN)
            .unwrap_err()
            .is_unsigned()
    );
    let mut c = base_card();
    c["signatures"] = json!({"protected": "x"});
    assert!(matches!(
        verify(&c, &keys, ORIGIN).unwrap_err(),
        SignatureError::NotAnArray
    ));
    // Unsigned is reported even when no keys are configured at all.
    assert!(
        verify(&base_card(), &TrustedKeys::default(), ORIGIN)
            .unwrap_err()
            .is_unsigned()
    );
}

#[test]
fn sdk_style_empties_stripped_payload_verifies_and_is_reported() {
    // A scope-less requirement is served as `{"bearer": {}}`, but the SDKs sign the card with it dropped.
    let mut c = base_card();
    c["securitySchemes"] = json!({"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}});
    c["securityRequirements"] = json!([{"schemes": {"bearer": {}}}]);
    c["documentationUrl"] = json!("");
    let key = test_key(Algorithm::ES256, "k1");
    let keys = trusted(ORIGIN, &[&key]);
    let sig = jws(
        &header(&key),
        &canonical::payload(&strip_empty(&c).unwrap()).unwrap(),
        &key,
    );
    let served = with_signatures(&c, vec![sig]);
    let v = verify(&served, &keys, ORIGIN).unwrap();
    assert_eq!(v.form, PayloadForm::EmptiesStripped);

    // Non-empty content is still protected under that form.
    let mut t = served.clone();
    t["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"] = json!("Basic");
    assert_eq!(
        rules(verify(&t, &keys, ORIGIN).unwrap_err()),
        [Rule::BadSignature]
    );
    // `false` is not "empty": flipping a capability off is detected.
    let mut t = served;
    t["capabilities"]["streaming"] = json!(false);
    assert_eq!(
        rules(verify(&t, &keys, ORIGIN).unwrap_err()),
        [Rule::BadSignature]
    );
}

/// A card signed the SDK way (empties stripped) can be tampered by adding empty values that the
/// stripped form cannot see; those that change meaning (a `{}` alternative in
/// `securityRequirements`: "no auth needed") are refused when signatures are required.
#[test]
fn meaningful_empties_added_to_an_sdk_signed_card_are_refused_when_required() {
    use a2a_egress::card::CardPolicy;
    use a2a_egress::card::{self as cardmod, SignatureStatus};
    let mut c = base_card();
    c["securitySchemes"] = json!({"oauth": {"oauth2SecurityScheme": {"flows": {"clientCredentials":
        {"tokenUrl": "https://agent.example/token", "scopes": {"read": "read"}}}}}});
    c["securityRequirements"] = json!([{"schemes": {"oauth": {"list": ["read"]}}}]);
    c["skills"][0]["securityRequirements"] = json!([{"schemes": {"oauth": {"list": ["read"]}}}]);
    // An ordinary empty field, so that only the stripped form verifies (as for SDK cards).
    c["skills"][0]["description"] = json!("");
    let key = test_key(Algorithm::ES256, "k1");
    let keys = trusted(ORIGIN, &[&key]);
    let sig = jws(
        &header(&key),
        &canonical::payload(&strip_empty(&c).unwrap()).unwrap(),
        &key,
    );
    let served = with_signatures(&c, vec![sig]);
    let require = CardPolicy {
        require_signatures: true,
        ..CardPolicy::default()
    };
    let lenient = CardPolicy::default();
    let bytes = |v: &Value| serde_json::to_vec(v).unwrap();

    // Untouched: accepted, verified in the stripped form.
    let v = cardmod::validate_with_keys(&bytes(&served), &require, &keys, Some(ORIGIN)).unwrap();
    let SignatureStatus::Verified(ver) = v.signature() else {
        panic!("{:?}", v.signature())
    };
    assert_eq!(ver.form, PayloadForm::EmptiesStripped);

    // A `{}` alternative injected at card and skill level: the signature still verifies...
    let mut t = served.clone();
    t["securityRequirements"]
        .as_array_mut()
        .unwrap()
        .push(json!({}));
    t["skills"][0]["securityRequirements"]
        .as_array_mut()
        .unwrap()
        .insert(0, json!({"schemes": {}}));
    assert!(verify(&t, &keys, ORIGIN).is_ok());
    // ...but the card is refused, naming each uncovered value.
    let err = cardmod::validate_with_keys(&bytes(&t), &require, &keys, Some(ORIGIN)).unwrap_err();
    let got: Vec<String> = err.0.iter().map(ToString::to_string).collect();
    assert_eq!(
        got,
        [
            // Document order: the card's `skills` come before its `securityRequirements` here.
            "skills[0].securityRequirements[0]: empty value not covered by the signature",
            "securityRequirements[1]: empty value not covered by the signature",
        ]
    );
    // Without require_signatures it is a warning per path.
    let v = cardmod::validate_with_keys(&bytes(&t), &lenient, &keys, Some(ORIGIN)).unwrap();
    for path in [
        "securityRequirements[1]",
        "skills[0].securityRequirements[0]",
    ] {
        assert!(
            v.warnings().iter().any(|w| w.path == path),
            "{:?}",
            v.warnings()
        );
    }

    // A map entry with an empty value (here a scope with no description) is meaningful too.
    let mut t = served.clone();
    t["securitySchemes"]["oauth"]["oauth2SecurityScheme"]["flows"]["clientCredentials"]["scopes"]
        ["write"] = json!("");
    let err = cardmod::validate_with_keys(&bytes(&t), &require, &keys, Some(ORIGIN)).unwrap_err();
    assert_eq!(
        err.to_string().lines().collect::<Vec<_>>(),
        [
            "securitySchemes.oauth.oauth2SecurityScheme.flows.clientCredentials.scopes.write: empty value not covered by the signature"
        ]
    );

    // Empty ordinary fields are not: proto3 reads them as absent.
    let mut t = served;
    t["capabilities"]["extensions"] = json!([]);
    t["skills"][0]["examples"] = json!([]);
    assert!(cardmod::validate_with_keys(&bytes(&t), &require, &keys, Some(ORIGIN)).is_ok());
}

#[test]
fn strip_empty_matches_the_sdk_rule() {
    let v = json!({"a": "", "b": [], "c": {}, "d": {"e": [""], "f": [{}]}, "g": false, "h": 0, "i": ["x", ""], "j": null});
    assert_eq!(
        strip_empty(&v).unwrap(),
        json!({"g": false, "h": 0, "i": ["x"], "j": null})
    );
    assert_eq!(strip_empty(&json!({"a": {"b": ""}})), None);
}

#[test]
fn jwks_files_are_checked_when_loaded() {
    let ec = test_key(Algorithm::ES256, "k1");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.jwks.json");
    std::fs::write(&path, jwks(&[&ec])).unwrap();
    let keys = TrustedKeys::load(&[(ORIGIN.into(), path.clone())]).unwrap();
    verify(&signed(&base_card(), &ec), &keys, ORIGIN).unwrap();

    let missing = TrustedKeys::load(&[(ORIGIN.into(), dir.path().join("nope.json"))]).unwrap_err();
    assert!(
        matches!(missing, SignatureError::JwksRead { .. }),
        "{missing}"
    );

    let bad = |jwk: Value| -> String {
        let mut t = TrustedKeys::default();
        t.add_jwks(ORIGIN, &json!({"keys": [jwk]}).to_string(), "f.json")
            .unwrap_err()
            .to_string()
    };
    let mut private = ec.jwk.clone();
    private["d"] = json!("AAAA");
    assert!(bad(private).contains("keys[0]: contains private key material"));
    assert!(bad(json!({"kty": "oct", "kid": "h", "k": "c2VjcmV0"})).contains("symmetric"));
    let mut no_kid = ec.jwk.clone();
    no_kid.as_object_mut().unwrap().remove("kid");
    assert!(bad(no_kid).contains("no `kid`"));
    let small_rsa = json!({"kty": "RSA", "kid": "r", "n": b64(&[0xff; 128]), "e": "AQAB"});
    assert!(bad(small_rsa).contains("1024 bits"));
    let mut p384 = ec.jwk.clone();
    p384["crv"] = json!("P-384");
    assert!(bad(p384).contains("P-384"));
    let mut verify_only = ec.jwk.clone();
    verify_only["key_ops"] = json!(["sign"]);
    assert!(bad(verify_only).contains("key_ops"));

    let mut t = TrustedKeys::default();
    let dup = t
        .add_jwks(ORIGIN, &jwks(&[&ec, &ec]), "f.json")
        .unwrap_err();
    assert!(dup.to_string().contains("configured twice"), "{dup}");
    // Encryption keys are skipped, not errors.
    let enc = json!({"keys": [{"kty": "RSA", "use": "enc", "n": "AQAB", "e": "AQAB"}, ec.jwk]});
    let mut t = TrustedKeys::default();
    t.add_jwks(ORIGIN, &enc.to_string(), "f.json").unwrap();
    assert_eq!(t.kids_for_origin(ORIGIN), ["k1"]);
}

/// Starts the official-SDK agent signing its own card with `key` (a2a.utils.signing), fetches the
/// card over loopback and verifies it with the public JWK.
async fn python_signed(
    key: &TestKey,
    extra: &[&str],
) -> (
    Value,
    Result<a2a_egress::card::signature::Verified, SignatureError>,
) {
    let dir = tempfile::tempdir().unwrap();
    let pem = dir.path().join("key.pem");
    std::fs::write(&pem, &key.pem).unwrap();
    let mut args = vec![
        "--sign-key",
        pem.to_str().unwrap(),
        "--sign-kid",
        &key.kid,
        "--sign-alg",
        alg_name(key.alg),
    ];
    args.extend_from_slice(extra);
    let agent = crate::common::SdkAgent::start(&args);
    let card = agent.card().await;
    let origin = agent.base_url.clone();
    let keys = trusted(&origin, &[key]);
    let result = verify(&card, &keys, &origin);
    (card, result)
}

#[tokio::test]
async fn cards_signed_by_the_official_python_sdk_verify() {
    for alg in [
        Algorithm::ES256,
        Algorithm::EdDSA,
        Algorithm::RS256,
        Algorithm::PS256,
    ] {
        let key = test_key(alg, &format!("py-{}", alg_name(alg)));
        let (card, v) = python_signed(&key, &[]).await;
        let v = v.unwrap_or_else(|e| panic!("{}: {e}\n{card:#}", alg_name(alg)));
        assert_eq!(v.kid, key.kid);
        assert_eq!(v.alg.as_str(), alg_name(alg));
    }
    // With a bearer requirement the SDK serves `{"bearer": {}}` and signs the empties-stripped form.
    let key = test_key(Algorithm::ES256, "py-token");
    let (card, v) = python_signed(&key, &["--token", "t", "--extended-card"]).await;
    assert_eq!(
        card["securityRequirements"],
        json!([{"schemes": {"bearer": {}}}])
    );
    assert_eq!(v.unwrap().form, PayloadForm::EmptiesStripped);

    // And a tampered SDK-signed card fails.
    let key = test_key(Algorithm::ES256, "py-tamper");
    let (mut card, _) = python_signed(&key, &[]).await;
    card["skills"][0]["id"] = json!("other");
    let origin = "http://127.0.0.1:1";
    let keys = trusted(origin, &[&key]);
    assert_eq!(
        rules(verify(&card, &keys, origin).unwrap_err()),
        [Rule::BadSignature]
    );
}

mod never_panics {
    //! `verify` reads attacker-controlled headers and signature bytes: whatever they hold, it
    //! answers with an error, never a panic (wrong-length signatures for each algorithm included).
    use super::*;
    use proptest::prelude::*;

    fn keys() -> &'static TrustedKeys {
        static KEYS: OnceLock<TrustedKeys> = OnceLock::new();
        KEYS.get_or_init(|| {
            let es = test_key(Algorithm::ES256, "es");
            let rs = test_key(Algorithm::RS256, "rs");
            let ed = test_key(Algorithm::EdDSA, "ed");
            trusted(ORIGIN, &[&es, &rs, &ed])
        })
    }

    fn header() -> impl Strategy<Value = Value> {
        let alg = prop_oneof![
            Just("ES256".to_owned()),
            Just("RS256".to_owned()),
            Just("PS256".to_owned()),
            Just("EdDSA".to_owned()),
            Just("none".to_owned()),
            ".{0,8}",
        ];
        let kid = prop_oneof![
            Just("es".to_owned()),
            Just("rs".to_owned()),
            Just("ed".to_owned()),
            ".{0,4}"
        ];
        let crit = proptest::option::of(proptest::collection::vec(
            prop_oneof![Just("b64".to_owned()), ".{0,4}"],
            0..3,
        ));
        let b64flag = proptest::option::of(prop_oneof![
            any::<bool>().prop_map(Value::from),
            ".{0,3}".prop_map(Value::from)
        ]);
        (alg, kid, crit, b64flag).prop_map(|(alg, kid, crit, b64flag)| {
            let mut h = json!({"alg": alg, "kid": kid});
            if let Some(c) = crit {
                h["crit"] = json!(c);
            }
            if let Some(b) = b64flag {
                h["b64"] = b;
            }
            h
        })
    }

    fn entry() -> impl Strategy<Value = Value> {
        prop_oneof![
            ".{0,16}".prop_map(Value::from),
            (
                header(),
                proptest::collection::vec(any::<u8>(), 0..600),
                proptest::option::of(header())
            )
                .prop_map(|(h, sig, unprotected)| {
                    let mut e = json!({
                        "protected": b64(h.to_string().as_bytes()),
                        "signature": b64(&sig),
                    });
                    if let Some(u) = unprotected {
                        e["header"] = u;
                    }
                    e
                }),
            (".{0,12}", ".{0,12}").prop_map(|(p, s)| json!({"protected": p, "signature": s})),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
        #[test]
        fn verify_answers_every_input_without_panicking(entries in proptest::collection::vec(entry(), 0..4)) {
            let card = with_signatures(&base_card(), entries);
            let result = verify(&card, keys(), ORIGIN);
            // Random bytes never form a valid signature over this card.
            prop_assert!(result.is_err());
        }
    }
}

/// An A2A 0.3 card uses the same JWS/JCS scheme: signed the way the 1.0 cards above are (over
/// JCS of the card as received, without `signatures`; and in the SDKs' empties-dropped form, which
/// the empty `extensions` list tells apart), it
/// verifies with a key trusted for its origin and compiles; a tampered 0.3 field fails.
#[test]
fn a_03_card_signed_like_a_10_card_verifies_and_a_tampered_one_does_not() {
    use a2a_egress::card::CardPolicy;
    use a2a_egress::card::{self as cardmod, SignatureStatus};
    let card = json!({
        "protocolVersion": "0.3.0", "name": "Old", "description": "0.3 agent",
        "url": "https://agent.example/a2a", "preferredTransport": "JSONRPC",
        "additionalInterfaces": [{"url": "https://agent.example/rest", "transport": "HTTP+JSON"}],
        "version": "1.0.0", "capabilities": {"streaming": true, "extensions": []},
        "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "echo", "name": "Echo", "description": "echoes", "tags": ["demo"]}],
        "supportsAuthenticatedExtendedCard": false
    });
    let key = test_key(Algorithm::ES256, "k03");
    let keys = trusted(ORIGIN, &[&key]);
    let require = CardPolicy {
        require_signatures: true,
        ..CardPolicy::default()
    };
    let bytes = |v: &Value| serde_json::to_vec(v).unwrap();
    let sdk_form = with_signatures(
        &card,
        vec![jws(
            &header(&key),
            &canonical::payload(&strip_empty(&card).unwrap()).unwrap(),
            &key,
        )],
    );
    for (served, form) in [
        (signed(&card, &key), PayloadForm::AsReceived),
        (sdk_form, PayloadForm::EmptiesStripped),
    ] {
        let v = cardmod::validate_with_keys(&bytes(&served), &require, &keys, Some(ORIGIN))
            .unwrap_or_else(|e| panic!("{e}"));
        let SignatureStatus::Verified(ver) = v.signature() else {
            panic!("{:?}", v.signature())
        };
        assert_eq!((ver.kid.as_str(), ver.form), ("k03", form));
        let p = a2a_egress::profile::compile(&v, &a2a_egress::profile::ClientCaps::default());
        assert_eq!(p.verified_by.as_deref(), Some("k03"));
        // The tampered card: the 0.3 `url` moved to another path on the same origin.
        let mut t = served.clone();
        t["url"] = json!("https://agent.example/elsewhere");
        let err = cardmod::validate_with_keys(&bytes(&t), &require, &keys, Some(ORIGIN))
            .unwrap_err()
            .to_string();
        assert!(err.contains("signatures[0]"), "{err}");
    }
}
