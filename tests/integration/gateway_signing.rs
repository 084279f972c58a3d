//! The gateway's own signature on effective cards, checked by the verifiers orchestrators use:
//! the official Python SDK's (`a2a.utils.signing`, through its card resolver), the official JS
//! SDK's (`verifyAgentCardSignature`), and the gateway's own `validate`. Keys come from the real
//! `a2a-egress keygen`; the JWK Set is fetched from the data plane.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use a2a_egress::card::sign::SigningKey;
use a2a_egress::card::signature::SigAlg;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

use crate::common::SdkAgent;
use crate::common::gateway::{Endpoints, GatewayProc, InProcess, config_head, integration};

const CARD: &str = "/agents/c/.well-known/agent-card.json";
const JWKS: &str = "/.well-known/jwks.json";

/// `a2a-egress keygen --out DIR/NAME --alg ALG --kid KID`; the public JWK it printed.
fn keygen(dir: &Path, name: &str, alg: &str, kid: &str) -> Value {
    let out = crate::common::gateway_cmd()
        .args(["keygen", "--alg", alg, "--kid", kid, "--out"])
        .arg(dir.join(name))
        .output()
        .expect("running keygen");
    assert!(out.status.success(), "keygen: {out:?}");
    serde_json::from_slice(&out.stdout).expect("keygen prints the public JWK")
}

/// A private key written as `keygen` writes it (mode 0600), for tests that need the key itself.
fn key_file(dir: &Path, name: &str, alg: SigAlg, kid: &str) -> SigningKey {
    let (key, text) = SigningKey::generate(alg, Some(kid)).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text.as_bytes()).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    key
}

/// The test head, `[effective_card]` with `effective_card` (none when empty), then the
/// integration `c` of `agent`.
fn config(agent: &SdkAgent, effective_card: &str) -> String {
    let table = if effective_card.is_empty() {
        String::new()
    } else {
        format!("[effective_card]\n{effective_card}\n")
    };
    config_head(&[]) + &table + &integration("c", &agent.card_url, "")
}

async fn get(gw: &Endpoints, path: &str) -> (u16, reqwest::header::HeaderMap, String) {
    let resp = crate::common::http()
        .get(gw.url(path))
        .header("A2A-Version", "1.0")
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    (status, headers, resp.text().await.unwrap())
}

async fn card(gw: &Endpoints) -> Value {
    let (status, _, body) = get(gw, CARD).await;
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).unwrap()
}

fn protected(card: &Value) -> Value {
    let p = card["signatures"][0]["protected"].as_str().unwrap();
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(p).unwrap()).unwrap()
}

/// Runs a verifier peer; its one JSON result line.
fn run_peer(mut cmd: Command, what: &str) -> Value {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    let line = String::from_utf8_lossy(&out.stdout);
    let v: Value = serde_json::from_str(line.trim()).unwrap_or_else(|e| {
        panic!(
            "{what} printed no result ({e}): {line}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert_eq!(v["ok"] == true, out.status.success(), "{what}: {v}");
    v
}

/// The official Python SDK's verifier (`tests/peers/verify_card.py`) with `args`.
fn python_verify(args: &[&str]) -> Value {
    let mut cmd = Command::new(crate::common::python());
    cmd.arg(crate::common::repo_root().join("tests/peers/verify_card.py"))
        .args(args);
    run_peer(cmd, "verify_card.py")
}

/// The official JS SDK's `verifyAgentCardSignature` (`tests/peers/js/verify_card.mjs`).
fn js_verify(args: &[&str]) -> Value {
    let dir = crate::common::repo_root().join("tests/peers/js");
    assert!(
        dir.join("node_modules/@a2a-js/sdk").exists(),
        "the JS SDK peer is not installed — run `bash scripts/test.sh` once (it runs `npm ci` in {})",
        dir.display()
    );
    let mut cmd = Command::new("node");
    cmd.current_dir(&dir).arg("verify_card.mjs").args(args);
    run_peer(cmd, "verify_card.mjs")
}

/// `a2a-egress validate FILE --origin ORIGIN` with `jwks` trusted for that origin.
fn validate(dir: &Path, card: &Value, origin: &str, jwks: &str) -> (bool, String) {
    let card_file = dir.join("validate-card.json");
    std::fs::write(&card_file, card.to_string()).unwrap();
    let jwks_file = dir.join("validate.jwks");
    std::fs::write(&jwks_file, jwks).unwrap();
    let cfg = dir.join("validate.toml");
    std::fs::write(
        &cfg,
        format!(
            "[client]\nallow_plain_http = true\nrequire_signatures = true\n\
             [[client.trusted_keys]]\norigin = \"{origin}\"\njwks = \"validate.jwks\"\n"
        ),
    )
    .unwrap();
    let out = crate::common::gateway_cmd()
        .arg("validate")
        .arg(&card_file)
        .arg("--config")
        .arg(&cfg)
        .args(["--origin", origin])
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

fn write(dir: &Path, name: &str, v: &Value) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, v.to_string()).unwrap();
    p
}

#[tokio::test]
async fn official_sdk_verifiers_accept_the_gateway_card_and_refuse_one_changed_byte() {
    let agent = SdkAgent::start(&["--skill", "echo:text/plain"]);
    for (alg, kid) in [("ES256", "gw-es"), ("EdDSA", "gw-ed")] {
        let dir = tempfile::tempdir().unwrap();
        let public = keygen(dir.path(), "gw.jwk.json", alg, kid);
        let cfg = config(&agent, "signing_key = \"gw.jwk.json\"\nsign = \"always\"");
        let gw = InProcess::start_in(dir, &cfg).await;
        let jku = format!("{}{JWKS}", gw.public_url);

        let (status, headers, body) = get(&gw, CARD).await;
        assert_eq!(status, 200);
        let etag = headers["etag"].to_str().unwrap().to_owned();
        let card: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(card["signatures"].as_array().unwrap().len(), 1, "{card:#}");
        assert_eq!(
            protected(&card),
            json!({"alg": alg, "kid": kid, "jku": jku, "typ": "JOSE"})
        );
        // Signed once: the same bytes and ETag on the next request, and 304 on revalidation.
        let (_, again, body_again) = get(&gw, CARD).await;
        assert_eq!(
            (again["etag"].to_str().unwrap(), body_again.as_str()),
            (etag.as_str(), body.as_str())
        );
        let revalidated = crate::common::http()
            .get(gw.url(CARD))
            .header("if-none-match", &etag)
            .send()
            .await
            .unwrap();
        assert_eq!(revalidated.status().as_u16(), 304);

        // The JWK Set: exactly the key keygen printed, public only.
        let (status, headers, jwks) = get(&gw, JWKS).await;
        assert_eq!(status, 200);
        assert_eq!(headers["content-type"], "application/jwk-set+json");
        assert_eq!(
            serde_json::from_str::<Value>(&jwks).unwrap(),
            json!({"keys": [public]})
        );

        // Python SDK: its card resolver fetches the card and verifies it with the key the
        // signature's jku names (fetched from the gateway), and with the distributed public key.
        let tmp = gw.dir.path();
        let jwks_file = write(tmp, "trusted.jwks", &json!({"keys": [public]}));
        let base = gw.agent_url("c");
        let v = python_verify(&["--url", &base, "--jku-origin", &gw.public_url]);
        assert_eq!(
            (v["ok"].as_bool(), v["kid"].as_str()),
            (Some(true), Some(kid)),
            "{alg}: {v}"
        );
        assert_eq!(v["jku"], jku.as_str());
        let jwks_arg = jwks_file.to_str().unwrap();
        assert_eq!(
            python_verify(&["--url", &base, "--jwks", jwks_arg])["ok"],
            true
        );

        // JS SDK: verifyAgentCardSignature, the same two ways.
        let card_url = gw.url(CARD);
        let v = js_verify(&["--url", &card_url, "--jku-origin", &gw.public_url]);
        assert_eq!(
            (v["ok"].as_bool(), v["kid"].as_str()),
            (Some(true), Some(kid)),
            "{alg}: {v}"
        );
        assert_eq!(
            js_verify(&["--url", &card_url, "--jwks", jwks_arg])["ok"],
            true
        );

        // The gateway's own validator, with the gateway's JWK Set trusted for its origin.
        let (ok, out) = validate(tmp, &card, &gw.public_url, &jwks);
        assert!(ok, "{out}");
        assert!(
            out.contains(&format!(
                "signature: verified (signatures[0], kid {kid:?}, {alg})"
            )),
            "{out}"
        );

        // One byte of a skill description changed: every verifier refuses the card.
        let mut tampered = card.clone();
        let d = tampered["skills"][0]["description"]
            .as_str()
            .unwrap()
            .to_owned();
        let mut bytes = d.into_bytes();
        bytes[0] ^= 0x01;
        tampered["skills"][0]["description"] = json!(String::from_utf8(bytes).unwrap());
        let original_file = write(tmp, "card.json", &card);
        let tampered_file = write(tmp, "tampered.json", &tampered);
        for (file, want) in [(&original_file, true), (&tampered_file, false)] {
            let f = file.to_str().unwrap();
            let py = python_verify(&["--card-file", f, "--jwks", jwks_arg]);
            assert_eq!(py["ok"], want, "python {alg} {f}: {py}");
            let js = js_verify(&["--card-file", f, "--jwks", jwks_arg]);
            assert_eq!(js["ok"], want, "js {alg} {f}: {js}");
        }
        assert_eq!(
            python_verify(&[
                "--card-file",
                tampered_file.to_str().unwrap(),
                "--jwks",
                jwks_arg
            ])["type"],
            "InvalidSignaturesError"
        );
        let (ok, out) = validate(tmp, &tampered, &gw.public_url, &jwks);
        assert!(
            !ok && out.contains("signature does not match the card"),
            "{out}"
        );
    }
}

/// An agent whose card description and only tag are invisible or blank (the upstream card is
/// valid; the sanitised values are empty): the gateway's signed card has no empty value, so the
/// gateway's own `validate`, which refuses empty required values, accepts it.
#[tokio::test]
async fn a_card_with_blank_description_and_tags_is_signed_in_the_form_served() {
    let agent = SdkAgent::start(&[
        "--skill",
        "echo:text/plain",
        "--description",
        "\u{200b}",
        "--tag",
        " ",
    ]);
    let dir = tempfile::tempdir().unwrap();
    keygen(dir.path(), "gw.jwk.json", "ES256", "gw");
    let cfg = config(&agent, "signing_key = \"gw.jwk.json\"\nsign = \"always\"");
    let gw = InProcess::start_in(dir, &cfg).await;
    let c = card(&gw).await;
    assert_eq!(c["signatures"].as_array().map(Vec::len), Some(1), "{c:#}");
    let (_, _, jwks) = get(&gw, JWKS).await;
    let (ok, out) = validate(gw.dir.path(), &c, &gw.public_url, &jwks);
    assert!(ok, "{out}");
    assert!(!out.contains("empty values dropped"), "{out}");
    assert_eq!(c["description"], c["name"], "{c:#}");
    assert_eq!(c["skills"][0]["tags"], json!(["echo"]), "{c:#}");
}

#[tokio::test]
async fn without_a_key_or_with_an_unverified_upstream_the_card_is_unsigned() {
    let agent = SdkAgent::start(&["--skill", "echo:text/plain"]);

    // No [effective_card]: the card is unsigned and the JWK Set is not a route (as before).
    let gw = InProcess::start(&config(&agent, "")).await;
    let unsigned = card(&gw).await;
    assert!(unsigned.get("signatures").is_none(), "{unsigned:#}");
    let (status, _, body) = get(&gw, JWKS).await;
    assert_eq!(status, 404, "{body}");
    drop(gw);

    // A key, the default mode (verified-only) and an unsigned upstream card: unsigned, the same
    // bytes as without a key; the JWK Set is published all the same.
    let dir = tempfile::tempdir().unwrap();
    keygen(dir.path(), "gw.jwk.json", "ES256", "gw");
    let gw = InProcess::start_in(dir, &config(&agent, "signing_key = \"gw.jwk.json\"")).await;
    let c = card(&gw).await;
    assert!(c.get("signatures").is_none(), "{c:#}");
    let mut same = unsigned.clone();
    same["supportedInterfaces"] = c["supportedInterfaces"].clone();
    assert_eq!(c, same, "only the gateway's address differs");
    assert_eq!(get(&gw, JWKS).await.0, 200);
}

/// An SDK agent that signs its own card with a fresh ES256 key, and that key's public JWKS.
fn signing_agent(dir: &Path) -> (SdkAgent, PathBuf) {
    let kp = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let pem = dir.join("agent.pem");
    std::fs::write(&pem, kp.serialize_pem()).unwrap();
    let enc = jsonwebtoken::EncodingKey::from_ec_der(&kp.serialize_der());
    let mut jwk = serde_json::to_value(
        jsonwebtoken::jwk::Jwk::from_encoding_key(&enc, jsonwebtoken::Algorithm::ES256).unwrap(),
    )
    .unwrap();
    jwk["kid"] = json!("agent-key");
    let jwks = write(dir, "agent.jwks", &json!({"keys": [jwk]}));
    let agent = SdkAgent::start(&[
        "--skill",
        "echo:text/plain",
        "--sign-key",
        pem.to_str().unwrap(),
        "--sign-kid",
        "agent-key",
    ]);
    (agent, jwks)
}

#[tokio::test]
async fn verified_only_signs_exactly_the_cards_whose_own_signature_verified() {
    let keys = tempfile::tempdir().unwrap();
    let (agent, agent_jwks) = signing_agent(keys.path());
    let origin = url::Url::parse(&agent.card_url)
        .unwrap()
        .origin()
        .ascii_serialization();
    let trusted = format!(
        "[[client.trusted_keys]]\norigin = \"{origin}\"\njwks = \"{}\"\n",
        agent_jwks.display()
    );
    for (extra, signed) in [("", false), (trusted.as_str(), true)] {
        let dir = tempfile::tempdir().unwrap();
        key_file(dir.path(), "gw.jwk.json", SigAlg::EdDSA, "gw");
        // The trusted keys belong to the [client] table, which config_head ends before [policy].
        let cfg = config(&agent, "signing_key = \"gw.jwk.json\"").replacen(
            "[policy]",
            &format!("{extra}[policy]"),
            1,
        );
        let gw = InProcess::start_in(dir, &cfg).await;
        let c = card(&gw).await;
        match signed {
            false => assert!(
                c.get("signatures").is_none(),
                "unverifiable upstream: {c:#}"
            ),
            true => assert_eq!(protected(&c)["kid"], "gw", "verified upstream: {c:#}"),
        }
    }
}

#[tokio::test]
async fn rotation_a_card_signed_with_the_previous_key_verifies_while_that_key_is_published() {
    let agent = SdkAgent::start(&["--skill", "echo:text/plain"]);
    let always = "sign = \"always\"";

    // Before the rotation: key gw-1.
    let dir = tempfile::tempdir().unwrap();
    let old = key_file(dir.path(), "gw.jwk.json", SigAlg::ES256, "gw-1");
    let cfg = config(&agent, &format!("signing_key = \"gw.jwk.json\"\n{always}"));
    let gw = InProcess::start_in(dir, &cfg).await;
    let before = card(&gw).await;
    let origin = gw.public_url.clone();
    drop(gw);

    // After it: key gw-2 signs, gw-1 stays published (a public JWK file).
    let dir = tempfile::tempdir().unwrap();
    key_file(dir.path(), "gw.jwk.json", SigAlg::ES256, "gw-2");
    write(dir.path(), "gw-1.pub.json", &old.public_jwk());
    let rotated =
        format!("signing_key = \"gw.jwk.json\"\n{always}\nprevious_keys = [\"gw-1.pub.json\"]");
    let gw = InProcess::start_in(dir, &config(&agent, &rotated)).await;
    let after = card(&gw).await;
    assert_eq!(protected(&after)["kid"], "gw-2");
    let (_, _, jwks) = get(&gw, JWKS).await;
    let kids: Vec<Value> = serde_json::from_str::<Value>(&jwks).unwrap()["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["kid"].clone())
        .collect();
    assert_eq!(kids, [json!("gw-2"), json!("gw-1")]);

    let tmp = gw.dir.path();
    let jwks_file = write(tmp, "published.jwks", &serde_json::from_str(&jwks).unwrap());
    let jwks_arg = jwks_file.to_str().unwrap();
    for (name, c, kid) in [("before", &before, "gw-1"), ("after", &after, "gw-2")] {
        let f = write(tmp, &format!("{name}.json"), c);
        let py = python_verify(&["--card-file", f.to_str().unwrap(), "--jwks", jwks_arg]);
        assert_eq!(
            (py["ok"].as_bool(), py["kid"].as_str()),
            (Some(true), Some(kid)),
            "{name}: {py}"
        );
        let js = js_verify(&["--card-file", f.to_str().unwrap(), "--jwks", jwks_arg]);
        assert_eq!(js["ok"], true, "{name}: {js}");
        let (ok, out) = validate(tmp, c, &origin, &jwks);
        assert!(ok, "{name}: {out}");
    }

    // Once gw-1 is no longer published, the old card no longer verifies.
    let only_new = json!({"keys": [serde_json::from_str::<Value>(&jwks).unwrap()["keys"][0]]});
    let f = write(tmp, "before.json", &before);
    let only_new_file = write(tmp, "only-new.jwks", &only_new);
    let py = python_verify(&[
        "--card-file",
        f.to_str().unwrap(),
        "--jwks",
        only_new_file.to_str().unwrap(),
    ]);
    assert_eq!(py["ok"], false, "{py}");
    let (ok, out) = validate(tmp, &before, &origin, &only_new.to_string());
    assert!(!ok && out.contains("\"gw-1\" is not trusted"), "{out}");
}

/// The ways a P-256 private scalar (`d`, base64url) could be written out: as in the JWK, hex,
/// standard base64, and its PKCS#8 DER document in base64, base64url and hex.
fn private_forms(d: &str) -> Vec<(&'static str, String)> {
    use base64::engine::general_purpose::STANDARD;
    use p256::pkcs8::EncodePrivateKey as _;
    let raw = URL_SAFE_NO_PAD.decode(d).unwrap();
    let der = p256::SecretKey::from_slice(&raw)
        .unwrap()
        .to_pkcs8_der()
        .unwrap()
        .as_bytes()
        .to_vec();
    vec![
        ("base64url", d.to_owned()),
        ("hex", hex::encode(&raw)),
        ("HEX", hex::encode_upper(&raw)),
        ("base64", STANDARD.encode(&raw)),
        ("pkcs8 base64", STANDARD.encode(&der)),
        ("pkcs8 base64url", URL_SAFE_NO_PAD.encode(&der)),
        ("pkcs8 hex", hex::encode(&der)),
    ]
}

#[tokio::test]
async fn the_private_key_appears_in_no_response_log_or_metric() {
    let agent = SdkAgent::start(&["--skill", "echo:text/plain"]);
    let dir = tempfile::tempdir().unwrap();
    keygen(dir.path(), "gw.jwk.json", "ES256", "gw");
    let private: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("gw.jwk.json")).unwrap())
            .unwrap();
    let forms = private_forms(private["d"].as_str().unwrap());
    let cfg = config(&agent, "signing_key = \"gw.jwk.json\"\nsign = \"always\"");
    let gw = GatewayProc::start_in(dir, &cfg, &[("A2A_EGRESS_LOG", "trace")]).await;

    let mut seen = Vec::new();
    for path in [
        CARD,
        JWKS,
        CARD,
        "/agents/c/nope",
        "/.well-known/jwks.json?x=1",
        CARD,
    ] {
        seen.push(get(&gw, path).await.2);
    }
    for path in ["/metrics", "/readyz", "/healthz"] {
        let resp = crate::common::http()
            .get(gw.admin_url(path))
            .send()
            .await
            .unwrap();
        seen.push(resp.text().await.unwrap());
    }
    assert!(
        seen[1].contains("\"kid\":\"gw\""),
        "the JWK Set was served: {}",
        seen[1]
    );
    // /metrics counts the one signing; /readyz shows the signing key and no failure.
    assert_eq!(
        crate::common::gateway::metric(
            &seen[6],
            "a2a_egress_card_signatures_total",
            &[("result", "signed")]
        ),
        1.0,
        "{}",
        seen[6]
    );
    let ready: Value = serde_json::from_str(&seen[7]).unwrap();
    assert_eq!(ready["card_signing"]["kid"], "gw", "{ready:#}");
    assert_eq!(ready["card_signing"]["failed"], json!([]), "{ready:#}");
    // Three card requests, one profile: signed once. Lines reach stderr through the log queue
    // a little after the event, so wait for the first.
    let signings = |log: &[String]| {
        log.iter()
            .filter(|l| l.contains("effective card signed"))
            .count()
    };
    crate::assert_eventually!(
        signings(&gw.process.stderr_all().0) >= 1,
        "the signing was never logged"
    );
    let (log, dropped) = gw.process.stderr_all();
    assert_eq!(dropped, 0);
    assert_eq!(signings(&log), 1, "{log:#?}");
    for text in seen.iter().chain(log.iter()) {
        for (form, value) in &forms {
            assert!(
                !text.contains(value.as_str()),
                "the private key leaked ({form}): {text}"
            );
        }
    }
    // No `[listen] public_url` and the default jku: the gateway says at start that the jku it
    // publishes is plain http on the bound address, once each.
    for risk in ["jku_not_https", "public_url_unset"] {
        let n = log
            .iter()
            .filter(|l| l.contains("WARN") && l.contains(risk))
            .count();
        assert_eq!(n, 1, "{risk}: {log:#?}");
    }

    // A key file group or others may read is a config error naming the key and the fix.
    let bad = tempfile::tempdir().unwrap();
    keygen(bad.path(), "gw.jwk.json", "ES256", "gw");
    let key = bad.path().join("gw.jwk.json");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o640)).unwrap();
    let d = serde_json::from_str::<Value>(&std::fs::read_to_string(&key).unwrap()).unwrap()["d"]
        .as_str()
        .unwrap()
        .to_owned();
    let cfg_path = bad.path().join("gateway.toml");
    std::fs::write(&cfg_path, config(&agent, "signing_key = \"gw.jwk.json\"")).unwrap();
    // Bounded: with the check gone the gateway would start and serve with the key.
    let mut serve = crate::common::gateway_cmd()
        .args(["serve", "--config"])
        .arg(&cfg_path)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let status = crate::common::process::wait_exit(&mut serve, Duration::from_secs(30));
    if status.is_none() {
        let _ = serve.kill();
        let _ = serve.wait();
        panic!("the gateway started with a key file group members may read");
    }
    let out = serve.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(status.and_then(|s| s.code()), Some(64), "{err}");
    assert!(
        err.contains("effective_card.signing_key:") && err.contains("chmod 600"),
        "{err}"
    );
    assert!(!err.contains(&d));
}
