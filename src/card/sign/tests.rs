//! Round trips of the gateway's signatures through the gateway's own verifier, known-answer
//! vectors, and key-file refusals.

use super::*;
use crate::card::signature::{self, PayloadForm, Rule, SignatureError, TrustedKeys};

const ORIGIN: &str = "http://127.0.0.1:7411";
const JKU: &str = "http://127.0.0.1:7411/.well-known/jwks.json";

fn card() -> Value {
    json!({
        "name": "Echo",
        "description": "echo agent",
        "version": "1.0.0",
        "supportedInterfaces": [{"url": "http://127.0.0.1:7411/agents/echo", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "capabilities": {"streaming": true, "pushNotifications": false, "extendedAgentCard": false},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "echo", "name": "Echo", "description": "echoes é \u{2028}", "tags": ["demo"]}]
    })
}

fn trusted(keys: &[Value]) -> TrustedKeys {
    let mut t = TrustedKeys::default();
    t.add_jwks(ORIGIN, &jwks(keys).to_string(), "test").unwrap();
    t
}

#[test]
fn generated_keys_sign_cards_the_gateway_verifier_accepts() {
    for alg in [SigAlg::ES256, SigAlg::EdDSA] {
        let (key, _) = SigningKey::generate(alg, Some("gw-1")).unwrap();
        let signed = sign(&card(), &key, JKU).unwrap();
        let v = signature::verify(&signed, &trusted(&[key.public_jwk()]), ORIGIN).unwrap();
        assert_eq!((v.kid.as_str(), v.alg, v.index), ("gw-1", alg, 0));
        assert_eq!(
            v.form,
            PayloadForm::AsReceived,
            "{alg}: no empties, both forms agree"
        );

        let header: Value = serde_json::from_slice(
            &URL_SAFE_NO_PAD
                .decode(signed["signatures"][0]["protected"].as_str().unwrap())
                .unwrap(),
        )
        .unwrap();
        assert_eq!(
            header,
            json!({"alg": alg.as_str(), "kid": "gw-1", "jku": JKU, "typ": "JOSE"})
        );
        assert_eq!(signed["signatures"].as_array().unwrap().len(), 1);
    }
}

#[test]
fn one_changed_byte_of_a_skill_description_fails_verification() {
    let (key, _) = SigningKey::generate(SigAlg::ES256, Some("gw-1")).unwrap();
    let mut signed = sign(&card(), &key, JKU).unwrap();
    signed["skills"][0]["description"] = json!("echoes è \u{2028}");
    let err = signature::verify(&signed, &trusted(&[key.public_jwk()]), ORIGIN).unwrap_err();
    let SignatureError::NoValidSignature { rejections } = err else {
        panic!("{err}")
    };
    assert_eq!(rejections[0].rule, Rule::BadSignature);
}

#[test]
fn a_key_file_round_trips_and_signs_the_same_bytes() {
    for alg in [SigAlg::ES256, SigAlg::EdDSA] {
        let (key, text) = SigningKey::generate(alg, None).unwrap();
        let loaded = SigningKey::from_jwk(&text, None).unwrap();
        assert_eq!(loaded, key);
        assert_eq!(
            loaded.kid(),
            thumbprint(&key.public),
            "kid defaults to the thumbprint"
        );
        // Both algorithms are deterministic (RFC 6979 nonces, Ed25519), so a card signed again
        // after a restart has the same bytes and the same ETag.
        assert_eq!(
            signature(&card(), &key, JKU).unwrap(),
            signature(&card(), &loaded, JKU).unwrap()
        );
        let renamed = SigningKey::from_jwk(&text, Some("other")).unwrap();
        assert_eq!(renamed.kid(), "other");
        assert_eq!(renamed.public_jwk()["kid"], "other");
    }
}

#[test]
fn rfc_8037_ed25519_vector() {
    // RFC 8037 appendix A.1 (key), A.3 (thumbprint) and A.4 (signature).
    let jwk = r#"{"kty":"OKP","crv":"Ed25519","d":"nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}"#;
    let key = SigningKey::from_jwk(jwk, Some("rfc")).unwrap();
    assert_eq!(
        thumbprint(&key.public),
        "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k"
    );
    let sig = jsonwebtoken::crypto::sign(
        b"eyJhbGciOiJFZERTQSJ9.RXhhbXBsZSBvZiBFZDI1NTE5IHNpZ25pbmc",
        &key.encoding,
        jsonwebtoken::Algorithm::EdDSA,
    )
    .unwrap();
    assert_eq!(
        sig,
        "hgyY0il_MGCjP0JzlnLWG1PPOt7-09PGcvMg3AIbQR6dWbhijcNR4ki4iylGjg5BhVsPt9g7sVvpAr_MuM0KAg"
    );
}

#[test]
fn empty_values_are_signed_as_the_sdks_canonicalise_them() {
    let (key, _) = SigningKey::generate(SigAlg::ES256, Some("gw-1")).unwrap();
    let mut c = card();
    c["skills"][0]["tags"] = json!([]);
    c["skills"][0]["examples"] = json!([""]);
    let signed = sign(&c, &key, JKU).unwrap();
    let v = signature::verify(&signed, &trusted(&[key.public_jwk()]), ORIGIN).unwrap();
    assert_eq!(v.form, PayloadForm::EmptiesStripped);
}

#[test]
fn existing_signatures_are_replaced_and_not_covered() {
    let (key, _) = SigningKey::generate(SigAlg::EdDSA, Some("gw-1")).unwrap();
    let mut c = card();
    c["signatures"] = json!([{"protected": "e30", "signature": "AA"}]);
    let signed = sign(&c, &key, JKU).unwrap();
    assert_eq!(signed["signatures"].as_array().unwrap().len(), 1);
    assert_eq!(payload(&signed).unwrap(), payload(&card()).unwrap());
}

#[test]
fn rotation_a_previous_key_still_verifies_while_published() {
    let (old, _) = SigningKey::generate(SigAlg::ES256, Some("gw-1")).unwrap();
    let (new, _) = SigningKey::generate(SigAlg::ES256, Some("gw-2")).unwrap();
    let by_old = sign(&card(), &old, JKU).unwrap();
    let published = trusted(&[new.public_jwk(), public_jwk(&old.public_jwk()).unwrap()]);
    assert_eq!(
        signature::verify(&by_old, &published, ORIGIN).unwrap().kid,
        "gw-1"
    );
    let err = signature::verify(&by_old, &trusted(&[new.public_jwk()]), ORIGIN).unwrap_err();
    assert!(err.to_string().contains("\"gw-1\" is not trusted"), "{err}");
}

#[test]
fn unusable_key_files_are_refused_by_rule() {
    let (_, text) = SigningKey::generate(SigAlg::ES256, Some("k")).unwrap();
    let good: Value = serde_json::from_str(&text).unwrap();
    let with = |f: &dyn Fn(&mut Map<String, Value>)| {
        let mut v = good.clone();
        f(v.as_object_mut().unwrap());
        SigningKey::from_jwk(&v.to_string(), None)
            .unwrap_err()
            .kind()
    };
    assert_eq!(with(&|m| drop(m.remove("d"))), "not_private");
    assert_eq!(with(&|m| drop(m.remove("kid"))), "missing_kid");
    assert_eq!(
        with(&|m| drop(m.insert("x".into(), json!(URL_SAFE_NO_PAD.encode([7u8; 32]))))),
        "public_mismatch"
    );
    assert_eq!(
        with(&|m| drop(m.insert("alg".into(), json!("EdDSA")))),
        "member"
    );
    assert_eq!(
        with(&|m| drop(m.insert("use".into(), json!("enc")))),
        "member"
    );
    assert_eq!(
        with(&|m| drop(m.insert("crv".into(), json!("P-384")))),
        "unsupported"
    );
    assert_eq!(
        with(&|m| drop(m.insert("kty".into(), json!("RSA")))),
        "unsupported"
    );
    assert_eq!(
        with(&|m| drop(m.insert("d".into(), json!("AAAA")))),
        "member"
    );
    assert_eq!(
        SigningKey::from_jwk("[1]", None).unwrap_err().kind(),
        "not_an_object"
    );
    assert_eq!(
        SigningKey::from_jwk("{", None).unwrap_err().kind(),
        "not_json"
    );
}

#[test]
fn the_private_part_never_shows() {
    let (key, text) = SigningKey::generate(SigAlg::ES256, Some("k")).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    let d = v["d"].as_str().unwrap().to_owned();
    assert!(!format!("{key:?}").contains(&d));
    assert!(!key.public_jwk().to_string().contains(&d));
    assert!(key.public_jwk().get("d").is_none());
    let mut wrong = v.clone();
    wrong["y"] = json!(URL_SAFE_NO_PAD.encode([1u8; 32]));
    let err = SigningKey::from_jwk(&wrong.to_string(), None).unwrap_err();
    assert!(!err.to_string().contains(&d), "{err}");
    assert_eq!(public_jwk(&v).unwrap_err().kind(), "not_public");
}

#[test]
fn published_keys_need_a_kid_and_a_usable_kind() {
    let (key, _) = SigningKey::generate(SigAlg::EdDSA, Some("k")).unwrap();
    assert!(public_jwk(&key.public_jwk()).is_ok());
    let mut no_kid = key.public_jwk();
    no_kid.as_object_mut().unwrap().remove("kid");
    assert_eq!(public_jwk(&no_kid).unwrap_err().kind(), "missing_kid");
    let mut bad = key.public_jwk();
    bad["x"] = json!("AAAA");
    assert_eq!(public_jwk(&bad).unwrap_err().kind(), "unsupported");
}
