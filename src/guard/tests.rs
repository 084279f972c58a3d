//! Tests of the guard: each evasion the scan must see through, the validators, the budget, URL
//! origins and the properties of redaction.

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use proptest::prelude::*;

use super::*;

const CARD: &str = "4111111111111111";

fn detectors() -> Detectors {
    detectors_and(&[])
}

fn policy_with(all: &Detectors, action: Action, budget: usize, on: OnUnscanned) -> Policy {
    let names: Vec<String> = all.names().map(str::to_owned).collect();
    Policy::new(all, &names, action, &BTreeMap::new(), None, budget, on).unwrap()
}

fn policy(all: &Detectors, action: Action) -> Policy {
    policy_with(all, action, 1 << 24, OnUnscanned::Refuse)
}

/// A JSON-RPC SendMessage with these parts (JSON text of the array's members).
fn send(parts: &[&str]) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":12345678901234567890,"method":"SendMessage","params":{{"message":{{"messageId":"m-1","role":"ROLE_USER","parts":[{}]}}}}}}"#,
        parts.join(",")
    )
}

fn text(t: &str) -> String {
    format!(r#"{{"text":{}}}"#, serde_json::to_string(t).unwrap())
}

fn scan(body: &str, action: Action) -> Verdict {
    let all = detectors();
    scan_request(&all, &policy(&all, action), body, Shape::JsonRpc)
}

fn detected(body: &str) -> Vec<(String, String)> {
    scan(body, Action::Record)
        .findings
        .into_iter()
        .map(|f| (f.detector, f.path))
        .collect()
}

/// The text parts' values after redaction.
fn redacted_texts(body: &str) -> Vec<String> {
    let out = scan(body, Action::Redact).redact(body).unwrap();
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    v["params"]["message"]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["text"].as_str().unwrap_or("").to_owned())
        .collect()
}

#[test]
fn json_escapes_are_decoded_and_redaction_replaces_the_escape() {
    let body = send(&[r#"{"text":"card \u0034111111111111111 ok"}"#]);
    assert_eq!(
        detected(&body),
        vec![("pci".into(), "params.message.parts[0].text".into())]
    );
    let out = scan(&body, Action::Redact).redact(&body).unwrap();
    assert!(out.contains(r#""card [REDACTED:pci] ok""#), "{out}");
}

#[test]
fn spaces_and_dashes_inside_card_numbers() {
    for t in ["pay 4111 1111 1111 1111 now", "pay 4111-1111-1111-1111 now"] {
        assert_eq!(
            redacted_texts(&send(&[&text(t)])),
            vec!["pay [REDACTED:pci] now"],
            "{t}"
        );
    }
}

#[test]
fn full_width_digits_and_invisible_characters_are_normalised() {
    let full: String = CARD
        .chars()
        .map(|c| char::from_u32(c as u32 - 0x30 + 0xff10).unwrap())
        .collect();
    let body = send(&[&text(&format!("card {full}!"))]);
    assert_eq!(redacted_texts(&body), vec!["card [REDACTED:pci]!"]);
    let zw = "card 4111\u{200b}1111\u{200b}1111\u{200b}1111!";
    assert_eq!(
        redacted_texts(&send(&[&text(zw)])),
        vec!["card [REDACTED:pci]!"]
    );
}

#[test]
fn a_match_split_over_two_text_parts_is_found_and_both_pieces_redacted() {
    let body = send(&[
        &text("card 41111111"),
        r#"{"data":{"x":1}}"#,
        &text("11111111 end"),
    ]);
    assert_eq!(
        detected(&body),
        vec![("pci".into(), "params.message.parts[0].text".into())]
    );
    assert_eq!(
        redacted_texts(&body),
        vec!["card [REDACTED:pci]", "", "[REDACTED:pci] end"]
    );
}

#[test]
fn keys_and_nested_values_of_data_parts() {
    let body = send(&[&format!(
        r#"{{"data":{{"{CARD}":{{"deep":["x","SSN 123-45-6789"]}}}}}}"#
    )]);
    let found = detected(&body);
    assert_eq!(
        found,
        vec![
            ("pci".into(), "params.message.parts[0].data".into()),
            ("ssn".into(), "params.message.parts[0].data.*.*[1]".into()),
        ]
    );
    // No path holds a key of the caller's content: the card number above the SSN is one.
    assert!(found.iter().all(|(_, p)| !p.contains(CARD)), "{found:?}");
}

#[test]
fn base64_inside_text_is_decoded_and_the_whole_run_redacted() {
    let run = STANDARD.encode(format!("the card is {CARD}, thanks"));
    let body = send(&[&text(&format!("see {run} here"))]);
    assert_eq!(detected(&body).len(), 1);
    assert_eq!(redacted_texts(&body), vec!["see [REDACTED:pci] here"]);
}

#[test]
fn textual_raw_parts_are_decoded_and_re_encoded_after_redaction() {
    let raw = STANDARD.encode(format!("name,card\nann,{CARD}\n"));
    let body = send(&[&format!(
        r#"{{"raw":"{raw}","mediaType":"text/csv","filename":"a.csv"}}"#
    )]);
    let out = scan(&body, Action::Redact).redact(&body).unwrap();
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let bytes = STANDARD
        .decode(v["params"]["message"]["parts"][0]["raw"].as_str().unwrap())
        .unwrap();
    assert_eq!(
        String::from_utf8(bytes).unwrap(),
        "name,card\nann,[REDACTED:pci]\n"
    );
    let image = send(&[&format!(r#"{{"mediaType":"image/png","raw":"{raw}"}}"#)]);
    assert!(detected(&image).is_empty());
}

#[test]
fn file_names_and_metadata_are_scanned_ids_are_not() {
    let body = format!(
        r#"{{"message":{{"messageId":"{CARD}","role":"ROLE_USER","parts":[{{"url":"https://x.example/a","filename":"ann@example.com.txt","metadata":{{"k":"AKIAABCDEFGHIJKLMNOP"}}}}],"metadata":{{"who":"+44 20 7946 0958"}}}},"metadata":{{"iban":"GB82 WEST 1234 5698 7654 32"}}}}"#
    );
    let all = detectors();
    let v = scan_request(&all, &policy(&all, Action::Record), &body, Shape::Rest);
    let got: Vec<(&str, &str)> = v
        .findings
        .iter()
        .map(|f| (f.detector.as_str(), f.path.as_str()))
        .collect();
    assert_eq!(
        got,
        vec![
            ("email", "message.parts[0].filename"),
            ("aws_key", "message.parts[0].metadata.*"),
            ("phone", "message.metadata.*"),
            ("iban", "metadata.*"),
        ]
    );
}

#[test]
fn azure_keys_and_bearer_tokens_are_secrets() {
    let account = format!(
        "DefaultEndpointsProtocol=https;AccountName=a;AccountKey={}==",
        "Zm9v".repeat(21) + "Zm"
    );
    let sas = "https://a.blob.core.windows.net/c?sv=2024-01-01&sig=Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6%3D";
    let bearer = "use Bearer eyJ0eXAiOiJKV1QifQ-not-a-jwt-but-a-token_123";
    for (t, want) in [
        (account.as_str(), "azure_key"),
        (sas, "azure_key"),
        (bearer, "bearer_token"),
    ] {
        let found = detected(&send(&[&text(t)]));
        assert!(found.iter().any(|(d, _)| d == want), "{t}: {found:?}");
    }
    // The word alone, or a short value, is not a credential.
    for t in ["the bearer of this letter", "Bearer abc", "sig=short"] {
        let found = detected(&send(&[&text(t)]));
        assert!(
            !found
                .iter()
                .any(|(d, _)| d == "bearer_token" || d == "azure_key"),
            "{t}: {found:?}"
        );
    }
}

#[test]
fn validators_reject_what_only_looks_right() {
    for t in [
        "4111111111111112",
        "666-12-3456",
        "123-00-4567",
        "DE89370400440532013001",
        "eyJub3QiOiJqd3QifQ.eyJzdWIiOiIxIn0.c2ln",
    ] {
        assert!(detected(&send(&[&text(t)])).is_empty(), "{t}");
    }
    for (t, d) in [
        ("4242424242424242", "pci"),
        ("123-45-6789", "ssn"),
        ("DE89 3704 0044 0532 0130 00", "iban"),
        ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl", "jwt"),
        ("ghp_abcdefghijklmnopqrstuvwxyz0123456789", "github_token"),
        (
            "-----BEGIN RSA PRIVATE KEY-----\nMIIBOgIBAAJBAK\n-----END RSA PRIVATE KEY-----",
            "private_key",
        ),
        ("our bluebird launch", "codename"),
        ("ref CUST-123456", "customer_id"),
    ] {
        let got = detected(&send(&[&text(t)]));
        assert_eq!(got.first().map(|f| f.0.as_str()), Some(d), "{t}: {got:?}");
    }
    assert!(detected(&send(&[&text("bluebirds")])).is_empty());
}

const JWT: &str = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl";

#[test]
fn a_rejected_jwt_candidate_hides_nothing_after_it_and_a_decoy_hides_no_jwt() {
    // The header decodes to no JSON: not a JWT, and the key and card in its last segment are
    // still found (in the combined regex the rejected candidate was skipped whole).
    for (t, d) in [
        ("eyJhYWFhYWFhYWE.eyJhYQ.AKIAIOSFODNN7EXAMPLE", "aws_key"),
        (&format!("eyJhYWFhYWFhYWE.eyJhYQ.{CARD}") as &str, "pci"),
    ] {
        let got = detected(&send(&[&text(t)]));
        assert!(got.iter().any(|f| f.0 == d), "{t}: {got:?}");
        assert!(!got.iter().any(|f| f.0 == "jwt"), "{t}: {got:?}");
    }
    // A glued `eyJ…-` before a real token: the nearest header start is tried first.
    let decoy = format!("eyJhYWFhYWFhYWEtYWFh-{JWT}");
    let got = detected(&send(&[&text(&decoy)]));
    assert!(got.iter().any(|f| f.0 == "jwt"), "{got:?}");
    assert_eq!(
        redacted_texts(&send(&[&text(&format!("x {JWT} y"))])),
        vec!["x [REDACTED:jwt] y"]
    );
}

#[test]
fn long_non_ascii_text_and_unfinished_jwts_are_scanned_in_linear_time() {
    // Each of these took time quadratic in the text (a megabyte: minutes): a backslash searched
    // for again at every non-ASCII character, and a JWT candidate that never ends keeping every
    // search of the combined regex alive to the end of the text.
    let accents = format!("{}{CARD}", "é".repeat(1 << 19));
    assert_eq!(detected(&send(&[&text(&accents)])).len(), 1);
    let escaped = format!("{}\\u0034{}", "日本".repeat(1 << 17), &CARD[1..]);
    let body = send(&[&format!(r#"{{"text":"{escaped}"}}"#)]);
    assert_eq!(detected(&body).len(), 1, "{:?}", detected(&body));
    let unfinished = "eyJ-AKIAIOSFODNN7EXAMPLE-".repeat(40_000);
    let got = detected(&send(&[&text(&unfinished)]));
    assert!(got.iter().all(|f| f.0 == "aws_key"), "{:?}", got.first());
    assert!(!got.is_empty());
}

#[test]
fn a_textual_raw_part_the_gateway_cannot_decode_is_unscanned_and_bad_utf8_hides_nothing() {
    // Line breaks in the base64: lenient decoders read the key, the gateway's strict one does
    // not, so the part counts as unscanned and `on_unscanned = refuse` refuses it.
    let b64 = STANDARD.encode("key AKIAIOSFODNN7EXAMPLE");
    let broken = format!("{}\\r\\n{}", &b64[..8], &b64[8..]);
    let body = send(&[&format!(r#"{{"raw":"{broken}","mediaType":"text/plain"}}"#)]);
    let v = scan(&body, Action::Record);
    assert!(v.unscanned_bytes > 0);
    assert_eq!(
        v.refusal().map(|r| r.detector.clone()).as_deref(),
        Some("unscanned")
    );
    // An invalid UTF-8 byte before the card: the text after it is scanned, and the redaction
    // replaces exactly the card's bytes (the invalid byte is kept).
    let mut bytes = b"hello \xff ".to_vec();
    bytes.extend_from_slice(CARD.as_bytes());
    bytes.extend_from_slice(b" end");
    let raw = STANDARD.encode(&bytes);
    let body = send(&[&format!(r#"{{"raw":"{raw}","media_type":"text/plain"}}"#)]);
    let out = scan(&body, Action::Redact).redact(&body).unwrap();
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let got = STANDARD
        .decode(v["params"]["message"]["parts"][0]["raw"].as_str().unwrap())
        .unwrap();
    assert_eq!(got, b"hello \xff [REDACTED:pci] end");
}

#[test]
fn messages_and_parts_written_by_field_position_are_scanned() {
    // The data plane (like serde's derive, so a Rust SDK agent) reads these; they must not
    // carry a key past the guard.
    let key = "AKIAIOSFODNN7EXAMPLE";
    for params in [
        format!(r#"{{"message":[[["text/plain","key {key}"]]]}}"#),
        format!(r#"{{"message":[[[null,null,{{"k":"{key}"}}]]]}}"#),
        format!(r#"{{"message":{{"parts":[["text/plain","key {key}"]]}}}}"#),
    ] {
        let body =
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{params}}}"#);
        let got = detected(&body);
        assert!(got.iter().any(|f| f.0 == "aws_key"), "{params}: {got:?}");
    }
}

#[test]
fn a_rejected_or_harmless_candidate_hides_no_other_match() {
    // A token run (letters, dash, digits) around a card, an IBAN-shaped prefix failing mod-97.
    for t in [format!("bluebird-{CARD}"), format!("DE12 {CARD}")] {
        let got = detected(&send(&[&text(&t)]));
        assert!(got.iter().any(|f| f.0 == "pci"), "{t}: {got:?}");
    }
}

#[test]
fn redaction_rescans_until_nothing_it_exposed_is_left() {
    // Cutting `le123-45-6789…` out of the glued parts would leave `a.b@c.examp` + marker, an
    // address again: the next round redacts it.
    let body = send(&[
        &text("a.b@c.example123-45-6789"),
        &text("ghp_abcdefghijklmnopqrstuvwxyz0123456789bluebird"),
        &text("a.b@c.example"),
    ]);
    let out = scan(&body, Action::Redact).redact(&body).unwrap();
    assert!(scan(&out, Action::Redact).findings.is_empty(), "{out}");
}

#[test]
fn a_recorded_class_a_redaction_exposes_is_refused_not_left_unjudged() {
    // `gcp_key` is 35 characters after `AIza` with no boundary after them, so `bluebird` glued
    // to it is no word until the marker's `]` stands before it: a recorded finding of class
    // `internal` the caller's scan never had, which the data classes would not judge.
    let all = detectors();
    let actions = BTreeMap::from([("internal".to_owned(), Action::Record)]);
    let names = ["gcp_key".to_owned(), "codename".to_owned()];
    let p = Policy::new(
        &all,
        &names,
        Action::Redact,
        &actions,
        None,
        1 << 20,
        OnUnscanned::Refuse,
    )
    .unwrap();
    let body = send(&[&text(&format!("key AIza{}bluebird end", "A".repeat(35)))]);
    let v = scan_request(&all, &p, &body, Shape::JsonRpc);
    assert_eq!(v.classes_leaving(), Vec::<&str>::new());
    let err = v.redact(&body).unwrap_err();
    assert!(
        matches!(err, GuardError::RedactionExposed { ref detector, .. } if detector == "codename"),
        "{err:?}"
    );
    // A recorded class the caller's scan already had is judged already: the redaction goes on.
    let known = send(&[&text(&format!(
        "bluebird key AIza{}bluebird end",
        "A".repeat(35)
    ))]);
    let v = scan_request(&all, &p, &known, Shape::JsonRpc);
    assert_eq!(v.classes_leaving(), vec!["internal"]);
    assert!(v.redact(&known).is_ok());
}

#[test]
fn high_entropy_finds_secrets_but_not_uuids_or_ids() {
    let all = detectors();
    let p = Policy::new(
        &all,
        &["high_entropy".into()],
        Action::Refuse,
        &BTreeMap::new(),
        None,
        1 << 20,
        OnUnscanned::Refuse,
    )
    .unwrap();
    let ordinary = "task 550e8400-e29b-41d4-a716-446655440000 sha e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 order_2024_11_30_customer_000123";
    assert!(
        scan_request(&all, &p, &send(&[&text(ordinary)]), Shape::JsonRpc)
            .findings
            .is_empty()
    );
    let secret = "key wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq8Lw3vT2 end";
    let v = scan_request(&all, &p, &send(&[&text(secret)]), Shape::JsonRpc);
    assert_eq!(
        v.refusal().map(|f| f.detector.as_str()),
        Some("high_entropy")
    );
}

#[test]
fn a_megabyte_of_near_matches_is_scanned_whole() {
    // Every group fails Luhn; one real card at the end.
    let near = "4111 1111 1111 1112 ".repeat(50_000);
    let body = send(&[&text(&format!("{near}x {CARD}"))]);
    let v = scan(&body, Action::Record);
    assert_eq!(v.unscanned_bytes, 0);
    assert_eq!(v.findings.len(), 1, "{:?}", v.findings.first());
    // Rejected bounded candidates (serial 0000) are searched again one character on: still linear.
    let ssn = format!("{}123-45-6789", "123-45-0000 ".repeat(90_000));
    assert_eq!(
        scan(&send(&[&text(&ssn)]), Action::Record).findings.len(),
        1
    );
    let tokens = "a".repeat(1 << 20);
    assert!(
        scan(&send(&[&text(&tokens)]), Action::Record)
            .findings
            .is_empty()
    );
}

#[test]
fn the_budget_bounds_the_scan_and_on_unscanned_decides() {
    let all = detectors();
    let body = send(&[&text(&format!("{} {CARD}", "x".repeat(100)))]);
    let refuse = policy_with(&all, Action::Record, 50, OnUnscanned::Refuse);
    let v = scan_request(&all, &refuse, &body, Shape::JsonRpc);
    assert_eq!(v.unscanned_bytes, 101 + CARD.len() - 50);
    let r = v.refusal().unwrap();
    assert_eq!((r.detector.as_str(), r.path.as_str()), ("unscanned", "$"));
    let allow = policy_with(&all, Action::Record, 50, OnUnscanned::Allow);
    let v = scan_request(&all, &allow, &body, Shape::JsonRpc);
    assert_eq!(v.action(), None);
    assert!(v.unscanned_bytes > 0);
}

#[test]
fn url_parts_outside_the_allowed_origins_refuse() {
    let all = detectors();
    let p = Policy::new(
        &all,
        &[],
        Action::Record,
        &BTreeMap::new(),
        Some(vec!["https://files.example".into()]),
        1 << 20,
        OnUnscanned::Refuse,
    )
    .unwrap();
    let bad = send(&[r#"{"url":"https://internal.corp/bucket/x"}"#]);
    let v = scan_request(&all, &p, &bad, Shape::JsonRpc);
    let r = v.refusal().unwrap();
    assert_eq!(
        (r.detector.as_str(), r.class.as_str()),
        ("url_origin", "url")
    );
    let good = send(&[r#"{"url":"https://files.example:443/x"}"#]);
    assert_eq!(scan_request(&all, &p, &good, Shape::JsonRpc).action(), None);
    assert_eq!(p.detector_names(), vec!["url_origin"]);
    // The WHATWG parser reads this as files.example, Python's urlsplit as internal.corp.
    let split = send(&[r#"{"url":"https://files.example\\@internal.corp/x"}"#]);
    let v = scan_request(&all, &p, &split, Shape::JsonRpc);
    assert_eq!(v.refusal().map(|r| r.detector.as_str()), Some("url_origin"));
}

#[test]
fn actions_per_class_and_the_verdict() {
    let all = detectors();
    let actions = BTreeMap::from([
        ("secret".to_owned(), Action::Refuse),
        ("pci".to_owned(), Action::Redact),
    ]);
    let names = vec!["pci".to_owned(), "email".to_owned(), "aws_key".to_owned()];
    let p = Policy::new(
        &all,
        &names,
        Action::Record,
        &actions,
        None,
        1 << 20,
        OnUnscanned::Refuse,
    )
    .unwrap();
    let body = send(&[&text(&format!("{CARD} a@b.example"))]);
    let v = scan_request(&all, &p, &body, Shape::JsonRpc);
    assert_eq!(v.action(), Some(Action::Redact));
    assert_eq!(v.classes_leaving(), vec!["pii"]);
    let body = send(&[&text("AKIAABCDEFGHIJKLMNOP a@b.example")]);
    assert_eq!(
        scan_request(&all, &p, &body, Shape::JsonRpc)
            .refusal()
            .map(|f| f.path.as_str()),
        Some("params.message.parts[0].text")
    );
    assert!(Action::Record < Action::Redact && Action::Redact < Action::Refuse);
}

#[test]
fn redaction_that_would_duplicate_a_key_errs() {
    let body = send(&[r#"{"data":{"4111111111111111":1,"4242424242424242":2}}"#]);
    let err = scan(&body, Action::Redact).redact(&body).unwrap_err();
    assert!(matches!(err, GuardError::DuplicateKey { .. }), "{err}");
}

#[test]
fn answers_are_scanned_record_only() {
    let all = detectors();
    let p = policy(&all, Action::Refuse);
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"result":{{"task":{{"id":"t","artifacts":[{{"parts":[{{"text":"{CARD}"}}]}}]}}}}}}"#
    );
    let f = scan_answer(&all, &p, &body, Shape::JsonRpc);
    assert_eq!(f.len(), 1);
    assert_eq!(
        (f[0].action, f[0].path.as_str()),
        (Action::Record, "result.task.artifacts[0].parts[0].text")
    );
}

#[test]
fn policies_running_the_same_detectors_share_one_matcher() {
    let all = detectors();
    let names = |n: &[&str]| n.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let p = |n: &[&str], a| {
        Policy::new(
            &all,
            &names(n),
            a,
            &BTreeMap::new(),
            None,
            1024,
            OnUnscanned::Refuse,
        )
        .unwrap()
    };
    let a = p(&["pci", "jwt"], Action::Refuse);
    let b = p(&["jwt", "pci"], Action::Redact);
    let c = p(&["pci"], Action::Refuse);
    assert!(std::sync::Arc::ptr_eq(&a.matcher, &b.matcher));
    assert!(!std::sync::Arc::ptr_eq(&a.matcher, &c.matcher));
}

#[test]
fn detectors_and_policies_are_shared_across_threads() {
    fn shared<T: Send + Sync + Clone>() {}
    shared::<Detectors>();
    shared::<Policy>();
    shared::<Verdict>();
}

#[test]
fn a_redaction_longer_than_its_match_is_not_refused_by_the_budget() {
    let all = detectors();
    let body = send(&[&text("mail a@b.co")]);
    // Exactly the body's content: the redacted copy ("[REDACTED:email]") is longer.
    let p = policy_with(
        &all,
        Action::Redact,
        "mail a@b.co".len(),
        OnUnscanned::Refuse,
    );
    let v = scan_request(&all, &p, &body, Shape::JsonRpc);
    assert_eq!(v.action(), Some(Action::Redact));
    assert!(v.redact(&body).unwrap().contains("mail [REDACTED:email]"));
}

#[test]
fn compile_names_what_is_wrong() {
    let spec = |name: &str, class: &str, source: Source| DetectorSpec {
        name: name.into(),
        class: class.into(),
        source,
    };
    let bad = [
        (spec("x", "pii", Source::Regex("(".into())), "regex"),
        (spec("pci", "pii", Source::Regex("a".into())), "taken"),
        (spec("w", "pii", Source::Words(vec![])), "word list"),
        (spec("w", "PII", Source::Words(vec!["a".into()])), "class"),
        (spec("b", "pii", Source::Builtin), "built-in"),
    ];
    for (s, why) in bad {
        let e = Detectors::compile(vec![s]).unwrap_err().to_string();
        assert!(e.contains(why), "{e}");
    }
    let all = detectors();
    let e = Policy::new(
        &all,
        &["nope".into()],
        Action::Record,
        &BTreeMap::new(),
        None,
        1,
        OnUnscanned::Allow,
    )
    .unwrap_err();
    assert_eq!(
        e,
        GuardError::UnknownDetector {
            name: "nope".into()
        }
    );
    assert_eq!(all.class_of("pci"), Some("pci"));
    assert_eq!(
        all.names().take(BUILTIN_NAMES.len()).collect::<Vec<_>>(),
        BUILTIN_NAMES
    );
}

/// The test detectors plus `extra` custom regexes (class `internal`), named `extra0`, `extra1`…
fn detectors_and(extra: &[&str]) -> Detectors {
    let mut specs = vec![
        DetectorSpec {
            name: "codename".into(),
            class: "internal".into(),
            source: Source::Words(vec!["bluebird".into(), "Project Nightjar".into()]),
        },
        DetectorSpec {
            name: "customer_id".into(),
            class: "pii".into(),
            source: Source::Regex(r"\bCUST-[0-9]{6}\b".into()),
        },
    ];
    for (i, p) in extra.iter().enumerate() {
        specs.push(DetectorSpec {
            name: format!("extra{i}"),
            class: "internal".into(),
            source: Source::Regex((*p).into()),
        });
    }
    Detectors::compile(specs).unwrap()
}

/// A data part's keys and values are matched as one text with a separator no built-in match
/// crosses; a custom pattern that can cross it (or is anchored) is matched literal by literal.
#[test]
fn joined_data_literals_find_what_each_literal_alone_holds() {
    let body = send(&[r#"{"data":{"a":"foo","b":"bar","c":"xo-by","d":"123456"}}"#]);
    let found = |extra: &[&str]| -> Vec<(String, String)> {
        let all = detectors_and(extra);
        scan_request(&all, &policy(&all, Action::Record), &body, Shape::JsonRpc)
            .findings
            .into_iter()
            .map(|f| (f.detector, f.path))
            .collect()
    };
    // `o.b` joined would match `o`, the separator, `b` ("foo", then key "b"): not a finding in
    // any literal, so the literals are matched one by one and only "xo-by" holds one.
    assert_eq!(
        found(&["o.b"]),
        vec![(
            "extra0".to_owned(),
            "params.message.parts[0].data.*".to_owned()
        )]
    );
    // Anchored: it holds at each literal's ends, which joined text does not have.
    assert_eq!(
        found(&["^[0-9]{6}$"]),
        vec![(
            "extra0".to_owned(),
            "params.message.parts[0].data.*".to_owned()
        )]
    );
    // Built-ins (and unanchored customs) over joined literals: each finding names its literal.
    let two = send(&[&format!(
        r#"{{"data":{{"n":"CUST-123456","m":"{CARD}"}}}},{{"data":{{"k":"a.b@c.example"}}}}"#
    )]);
    let all = detectors();
    let v = scan_request(&all, &policy(&all, Action::Redact), &two, Shape::JsonRpc);
    let names: Vec<&str> = v.findings.iter().map(|f| f.detector.as_str()).collect();
    assert_eq!(names, ["customer_id", "pci", "email"]);
    let out = v.redact(&two).unwrap();
    assert!(
        out.contains(r#""n":"[REDACTED:customer_id]","m":"[REDACTED:pci]""#),
        "{out}"
    );
    assert!(out.contains(r#""k":"[REDACTED:email]""#), "{out}");
}

/// A card number that is also an address's local part is both: the digit detectors and the
/// e-mail one are separate regexes, so one's match hides nothing of the other's (in one
/// combined regex the card, the leftmost-first pattern, hid the address).
#[test]
fn a_match_of_one_detector_group_hides_nothing_of_another() {
    let body = send(&[&text(&format!("write to {CARD}@billing.example today"))]);
    let found: Vec<String> = detected(&body).into_iter().map(|f| f.0).collect();
    assert_eq!(found, ["email", "pci"], "{body}");
    // Overlapping redactions merge; the longer one's marker covers both.
    let out = redacted_texts(&body);
    assert_eq!(out, ["write to [REDACTED:email] today"]);
}

/// Text fragments: secrets (plain, grouped, full-width, escaped by serde), and hostile noise.
fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(CARD.to_owned()),
        Just("4111 1111 1111 1111".to_owned()),
        Just("４１１１１１１１１１１１１１１１".to_owned()),
        Just("123-45-6789".to_owned()),
        Just("ghp_abcdefghijklmnopqrstuvwxyz0123456789".to_owned()),
        Just("a.b@c.example".to_owned()),
        Just("bluebird".to_owned()),
        Just(STANDARD.encode(format!("x {CARD} y"))),
        Just("\u{202e}\u{200b}\u{0}\u{1f}\"\\".to_owned()),
        "[0-9 -]{0,8}",
        any::<String>().prop_map(|s| s.chars().take(12).collect()),
        "[\\u{ff10}-\\u{ff5a}\\u{0300}-\\u{036f}]{0,6}",
    ]
}

fn message() -> impl Strategy<Value = String> {
    let texts = prop::collection::vec(
        prop::collection::vec(fragment(), 0..5).prop_map(|f| f.concat()),
        1..4,
    );
    let keys = prop::collection::vec((fragment(), fragment()), 0..4);
    (texts, keys).prop_map(|(texts, keys)| {
        let mut parts: Vec<String> = texts.iter().map(|t| text(t)).collect();
        let data: serde_json::Map<String, serde_json::Value> = keys
            .into_iter()
            .map(|(k, v)| (k, serde_json::Value::String(v)))
            .collect();
        parts.push(format!(r#"{{"data":{}}}"#, serde_json::Value::Object(data)));
        send(&parts.iter().map(String::as_str).collect::<Vec<_>>())
    })
}

/// The literals (quote to quote) of `body` and the bytes between them.
fn literals(body: &str) -> (Vec<(usize, usize)>, Vec<String>) {
    let mut lits = Vec::new();
    crate::json::walk(body, |t| {
        if let crate::json::Token::Key { open, close } | crate::json::Token::Str { open, close } = t
        {
            lits.push((open, close + 1));
        }
        Ok(())
    })
    .unwrap();
    let mut gaps = Vec::new();
    let mut at = 0;
    for &(a, b) in &lits {
        gaps.push(body[at..a].to_owned());
        at = b;
    }
    gaps.push(body[at..].to_owned());
    (lits, gaps)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Matching a data part's literals joined gives what matching them one by one gives (an
    /// anchored custom pattern that never matches turns joining off): the same findings, paths,
    /// spans and order, and the same bytes left unscanned at any budget.
    #[test]
    fn joined_literals_scan_as_one_by_one(body in message(), budget in 0usize..400) {
        let joined = detectors();
        let alone = detectors_and(&["^never\u{1}$"]);
        let scan = |all: &Detectors| {
            let p = policy_with(all, Action::Redact, budget, OnUnscanned::Allow);
            scan_request(all, &p, &body, Shape::JsonRpc)
        };
        let (a, b) = (scan(&joined), scan(&alone));
        prop_assert_eq!(a.unscanned_bytes, b.unscanned_bytes);
        prop_assert_eq!(a.findings, b.findings);
    }

    #[test]
    fn redaction_leaves_nothing_behind_and_touches_only_findings(body in message()) {
        let all = detectors();
        let p = policy(&all, Action::Redact);
        let v = scan_request(&all, &p, &body, Shape::JsonRpc);
        let out = match v.redact(&body) {
            Ok(out) => out,
            Err(GuardError::DuplicateKey { .. }) => return Ok(()),
            Err(e) => return Err(TestCaseError::fail(e.to_string())),
        };
        let parsed: serde_json::Value = serde_json::from_str(&out).unwrap();
        prop_assert_eq!(&parsed["id"], &serde_json::json!(12345678901234567890u64));
        prop_assert!(crate::json::duplicate_keys(&out, 1).unwrap().is_empty());
        let again = scan_request(&all, &p, &out, Shape::JsonRpc);
        prop_assert!(again.findings.is_empty(), "left behind: {:?} in {}", again.findings, out);
        let (lits, gaps) = literals(&body);
        let (out_lits, out_gaps) = literals(&out);
        prop_assert_eq!(gaps, out_gaps);
        prop_assert_eq!(lits.len(), out_lits.len());
        // A literal changes only where a marker went in (the first round's findings, or what
        // a rescan round exposed); bytes between literals never change.
        for (&(a, b), &(x, y)) in lits.iter().zip(&out_lits) {
            if body[a..b] != out[x..y] {
                prop_assert!(out[x..y].contains("[REDACTED:"), "{} became {}", &body[a..b], &out[x..y]);
            }
        }
        prop_assert!(v.action() != Some(Action::Redact) || out != body);
    }
}

#[test]
fn an_answer_is_scanned_as_it_is_read_up_to_the_budget() {
    let all = detectors();
    let at = |budget| policy_with(&all, Action::Refuse, budget, OnUnscanned::Refuse);
    let filler = vec![r#""""#; 10_000].join(",");
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"result":{{"a":[{filler}],"b":"{CARD}","c":["x","{CARD}"]}}}}"#
    );
    let found = |budget| -> Vec<String> {
        (scan_answer(&all, &at(budget), &body, Shape::JsonRpc).into_iter())
            .map(|f| f.path)
            .collect()
    };
    assert_eq!(found(1 << 20), vec!["result.b", "result.c[1]"]);
    // Keys count: "a", "b" (2) and the first card (16) fill 18; "c" and "x" take 2 more.
    assert_eq!(found(18), vec!["result.b"]);
    assert_eq!(found(20 + CARD.len()), vec!["result.b", "result.c[1]"]);
    assert!(found(10).is_empty());
}
