//! Replays the kept fuzz corpora (`fuzz/corpus/<target>/`) on stable, in the normal suite: every
//! input the fuzzers found interesting goes through the same public functions again, so a
//! regression on any of them fails here without a nightly toolchain. The card corpus also runs
//! through the real binary: `validate` and `compile` answer every input with 0 or 65, never an
//! internal error (70) or a panic (101).

use std::path::{Path, PathBuf};
use std::process::Stdio;

use a2a_egress::card;
use a2a_egress::card::CardPolicy;
use a2a_egress::config::Config;
use a2a_egress::profile::Binding;
use a2a_egress::proxy::{body, feedback, route};

fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut out: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| {
            let b = std::fs::read(&p).unwrap();
            (p, b)
        })
        .collect();
    out.sort();
    assert!(!out.is_empty(), "empty corpus {}", dir.display());
    out
}

fn policies() -> [CardPolicy; 3] {
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

#[test]
fn card_corpora_validate_and_compile() {
    let mut accepted = 0;
    for target in ["card", "effective_card"] {
        for (p, bytes) in corpus(target) {
            for policy in policies() {
                if let Ok(v) = card::validate(&bytes, &policy, None) {
                    accepted += 1;
                    let prof = a2a_egress::profile::compile(&v, &Default::default());
                    assert_eq!(prof.card_digest, v.digest(), "{}", p.display());
                }
            }
        }
    }
    assert!(
        accepted > 0,
        "no corpus card is valid: the corpus lost its seeds"
    );
}

#[test]
fn the_cli_answers_every_card_corpus_input_with_0_or_65() {
    let dir = tempfile::tempdir().unwrap();
    for (p, _) in corpus("card") {
        for cmd in ["validate", "compile"] {
            let out = crate::common::gateway_cmd()
                .args([cmd, p.to_str().unwrap()])
                .current_dir(dir.path())
                .stdin(Stdio::null())
                .output()
                .unwrap();
            assert!(
                matches!(out.status.code(), Some(0 | 65)),
                "{cmd} {}: {:?}\n{}",
                p.display(),
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

#[test]
fn config_corpus_parses_or_is_refused() {
    for (_, bytes) in corpus("config") {
        if let Ok(text) = std::str::from_utf8(&bytes) {
            let _ = Config::parse(text, Path::new("/nonexistent/a2a-egress-fuzz/gateway.toml"))
                .map_err(|e| e.to_string());
        }
    }
}

#[test]
fn request_corpus_routes_and_parses() {
    use a2a_egress::json::duplicate_keys;
    use a2a_egress::proxy::body::parse_rest_body;
    use bytes::Bytes;

    for (p, bytes) in corpus("request") {
        let Some((&mode, rest)) = bytes.split_first() else {
            continue;
        };
        match mode % 4 {
            0 => {
                let Ok(r) = body::parse_jsonrpc(&Bytes::copy_from_slice(rest)) else {
                    continue;
                };
                let text = std::str::from_utf8(rest).unwrap();
                assert_eq!(duplicate_keys(text, 1), Ok(vec![]), "{}", p.display());
                if let Some(fwd) = r.forward_body(Some("acme")) {
                    let again = body::parse_jsonrpc(&fwd).unwrap();
                    assert_eq!(again.tenant(), Some("acme"), "{}", p.display());
                    assert_eq!(again.id.get(), r.id.get());
                }
            }
            1 => {
                let path = String::from_utf8_lossy(rest);
                let _ = route::check_path(&path);
                if let route::Route::Rest { path, .. } = route::route(&path) {
                    assert!(path.starts_with('/'), "{}", p.display());
                    for m in ["GET", "POST", "DELETE"] {
                        let _ = route::Method::from_rest(m, &path);
                    }
                }
            }
            2 => {
                let _ = parse_rest_body(rest, true);
            }
            _ => {
                if let Ok(text) = std::str::from_utf8(rest) {
                    let _ = duplicate_keys(text, 4);
                }
            }
        }
    }
}

#[test]
fn feedback_corpus_is_read_and_framed() {
    for (_, bytes) in corpus("feedback") {
        if bytes.len() < 2 {
            continue;
        }
        let status = u16::from_be_bytes([bytes[0], bytes[1]]) % 600;
        let body = &bytes[2..];
        for b in [Binding::JsonRpc, Binding::HttpJson] {
            let _ = feedback::agent_error(b, status, body);
            let _ = feedback::send_succeeded(b, status, body);
        }
        // One `data:` line and the blank line that ends the event: no other CR or LF (a bare CR
        // ends an SSE line too, and used to split a downgraded answer into two events).
        let framed = feedback::sse_event(body);
        assert!(framed.starts_with(b"data: ") && framed.ends_with(b"\n\n"));
        let inner = &framed[..framed.len() - 2];
        assert!(
            !inner.contains(&b'\r') && !inner.contains(&b'\n'),
            "{framed:?}"
        );
    }
}

/// The translate target's invariants, on stable (see `fuzz/fuzz_targets/translate.rs`): what the
/// translator writes for a body without duplicate keys is one JSON object without duplicates,
/// with `jsonrpc: "2.0"` and the id as its exact text.
#[test]
fn translate_corpus_translates_to_one_object_keeping_the_id() {
    use a2a_egress::translate::{Op, answer_to10, event_to10, request_to03};
    use serde_json::value::RawValue;
    use std::collections::HashMap;
    let mut translated = 0;
    for (path, bytes) in corpus("translate") {
        let Some((&pick, body)) = bytes.split_first() else {
            continue;
        };
        let op = Op::ALL[usize::from(pick / 3) % Op::ALL.len()];
        let out = match pick % 3 {
            0 => request_to03(op, body).map(|b| (b, true)),
            1 => answer_to10(op, body).map(|t| (t.json, false)),
            _ => event_to10(op, body).map(|t| (t.json, false)),
        };
        let Ok((out, request)) = out else { continue };
        translated += 1;
        let text = String::from_utf8(out).unwrap();
        assert!(
            a2a_egress::json::duplicate_keys(&text, 4)
                .unwrap()
                .is_empty(),
            "{}: {text}",
            path.display()
        );
        let got: HashMap<String, &RawValue> = serde_json::from_str(&text).unwrap();
        let came: HashMap<String, &RawValue> = serde_json::from_slice(body).unwrap();
        let id = |m: &HashMap<String, &RawValue>| m.get("id").map(|v| v.get().to_owned());
        assert_eq!(got["jsonrpc"].get(), "\"2.0\"");
        if request {
            assert_eq!(id(&got), id(&came), "{}", path.display());
        } else {
            assert_eq!(got.contains_key("result"), !got.contains_key("error"));
            assert_eq!(id(&got), Some(id(&came).unwrap_or_else(|| "null".into())));
        }
    }
    assert!(translated >= 8, "the seeds translate: {translated}");
}

/// The translate_rest target's invariants, on stable (see `fuzz/fuzz_targets/translate_rest.rs`):
/// a translated request leaves below `/v1/` with an empty body or one JSON object; a translated
/// answer or event is one JSON object, an error one with `error` and a status of 400 or more;
/// none has a duplicate key when what came had none.
#[test]
fn translate_rest_corpus_translates_to_one_object() {
    use a2a_egress::translate::{Op, rest_answer_to10, rest_event_to10, rest_request_to03};
    use serde_json::value::RawValue;
    use std::collections::HashMap;
    fn object(b: &[u8]) -> Option<HashMap<String, &RawValue>> {
        serde_json::from_slice(b).ok()
    }
    let dupes = |b: &[u8]| {
        let text = std::str::from_utf8(b).ok()?;
        Some(!a2a_egress::json::duplicate_keys(text, 1).ok()?.is_empty())
    };
    let mut translated = [0; 3];
    for (path, bytes) in corpus("translate_rest") {
        let Some((&pick, rest)) = bytes.split_first() else {
            continue;
        };
        let op = Op::ALL[usize::from(pick / 3) % Op::ALL.len()];
        let at = path.display();
        let (body, out) = match pick % 3 {
            0 => {
                let (line, body) = match rest.iter().position(|&b| b == b'\n') {
                    Some(n) => (&rest[..n], &rest[n + 1..]),
                    None => (rest, &[][..]),
                };
                let Ok(line) = std::str::from_utf8(line) else {
                    continue;
                };
                let (p, q) = line
                    .split_once('?')
                    .map_or((line, None), |(p, q)| (p, Some(q)));
                let Ok(r) = rest_request_to03(op, p, q, body) else {
                    continue;
                };
                assert!(r.path.starts_with("/v1/"), "{at}: {}", r.path);
                translated[0] += 1;
                if r.body.is_empty() {
                    continue;
                }
                (body, r.body)
            }
            1 => {
                let [a, b, body @ ..] = rest else { continue };
                let status = 100 + u16::from_le_bytes([*a, *b]) % 500;
                let Ok(Some(a)) = rest_answer_to10(op, status, body) else {
                    continue;
                };
                translated[1] += 1;
                let o = object(&a.json).unwrap_or_else(|| panic!("{at}: not one object"));
                assert_eq!(a.error, a.status >= 400, "{at}: {}", a.status);
                // A success may copy an object holding `error` (the extended card).
                assert!(!a.error || o.contains_key("error"), "{at}");
                (body, a.json)
            }
            _ => {
                let Ok(t) = rest_event_to10(op, rest) else {
                    continue;
                };
                translated[2] += 1;
                (rest, t.json)
            }
        };
        assert!(object(&out).is_some(), "{at}: not one object");
        if dupes(body) == Some(false) {
            assert_eq!(dupes(&out), Some(false), "{at}");
        }
    }
    assert!(
        translated.iter().all(|&n| n >= 5),
        "the seeds translate: {translated:?}"
    );
}

/// The effective-card harness of the fuzz target, on stable: an accepted card, compiled, in an
/// integration that accepts its skills on its origin, projects to an effective card that is
/// itself a valid card.
#[test]
fn effective_card_corpus_projects_to_valid_cards() {
    use a2a_egress::proxy::card::effective_card;
    use a2a_egress::state::IntegrationState;
    use a2a_egress::state::Upstream;
    use std::sync::Arc;

    crate::common::install_crypto_provider();
    let cfg = Config::parse(
        "[client]\nallow_plain_http = true\n\n[[integrations]]\nname = \"fz\"\n\
         card = \"https://a.example/c\"\norigins = [\"https://a.example\"]\nskills = [\"x\"]\n\
         data_classes = [\"internal\"]\ncredential = { type = \"none\" }\n",
        Path::new("/nonexistent/gateway.toml"),
    )
    .unwrap();
    let mut projected = 0;
    for (p, bytes) in corpus("effective_card") {
        let Ok(v) = card::validate(&bytes, &cfg.card_policy, None) else {
            continue;
        };
        let profile = a2a_egress::profile::compile(&v, &cfg.caps);
        let Some(iface) = profile.interface.clone() else {
            continue;
        };
        let mut i = cfg.integrations[0].clone();
        i.origins = vec![
            url::Url::parse(&iface.url)
                .unwrap()
                .origin()
                .ascii_serialization(),
        ];
        i.skills = profile.skills.keys().cloned().collect();
        let state = IntegrationState::from_profile(
            Arc::new(i),
            profile,
            Ok(Upstream::for_tests(&iface.url)),
        );
        if let Some(c) = effective_card(&state, "http://127.0.0.1:7411") {
            projected += 1;
            if let Err(e) = card::validate(&c.body, &cfg.card_policy, None) {
                panic!("{}: the effective card is invalid: {e}", p.display());
            }
        }
    }
    assert!(projected > 0, "no corpus input reached the projection");
}

/// The guard target's invariants, on stable (see `fuzz/fuzz_targets/guard.rs`): for a JSON body
/// without duplicate keys, redaction under every built-in detector gives JSON without duplicate
/// keys (or refuses to, naming the duplicated key), in both request shapes.
#[test]
fn guard_corpus_redacts_to_json_without_duplicate_keys() {
    use a2a_egress::guard::{self, Action, Detectors, GuardError, OnUnscanned, Policy, Shape};
    let all = Detectors::compile(Vec::new()).unwrap();
    let names: Vec<String> = guard::BUILTIN_NAMES
        .iter()
        .map(|n| (*n).to_owned())
        .collect();
    let policy = Policy::new(
        &all,
        &names,
        Action::Redact,
        &Default::default(),
        None,
        1 << 20,
        OnUnscanned::Allow,
    )
    .unwrap();
    let mut redacted = 0;
    for (path, bytes) in corpus("guard") {
        let Ok(body) = std::str::from_utf8(&bytes) else {
            continue;
        };
        if serde_json::from_str::<serde::de::IgnoredAny>(body).is_err()
            || !a2a_egress::json::duplicate_keys(body, 1).is_ok_and(|d| d.is_empty())
        {
            continue;
        }
        for shape in [Shape::JsonRpc, Shape::Rest] {
            let verdict = guard::scan_request(&all, &policy, body, shape);
            match verdict.redact(body) {
                Ok(out) => {
                    serde_json::from_str::<serde::de::IgnoredAny>(&out)
                        .unwrap_or_else(|e| panic!("{}: {e}: {out}", path.display()));
                    assert!(
                        a2a_egress::json::duplicate_keys(&out, 1)
                            .unwrap()
                            .is_empty()
                    );
                    redacted += usize::from(out != body);
                }
                Err(GuardError::DuplicateKey { .. }) => {}
                Err(e) => panic!("{}: {e}", path.display()),
            }
        }
    }
    assert!(redacted >= 4, "the seeds hold findings: {redacted}");
}

/// The `translate_grpc` corpus (fuzz/fuzz_targets/translate_grpc.rs), replayed on stable: an
/// answer that translates is one JSON-RPC answer with the id and a result, without duplicate
/// keys; a status is always one JSON-RPC error with an integer code; the seeds (real messages
/// written by the Python SDK's generated types) translate.
#[test]
fn translate_grpc_corpus_keeps_its_invariants() {
    use a2a_egress::translate::Op;
    use a2a_egress::translate::grpc::{Status, answer_to_rpc, request_to_pb, status_to_rpc};
    let mut translated = [0; 3];
    for (path, bytes) in corpus("translate_grpc") {
        let Some((&pick, rest)) = bytes.split_first() else {
            continue;
        };
        let op = Op::ALL[usize::from(pick / 3) % Op::ALL.len()];
        let at = path.display();
        match pick % 3 {
            0 => {
                if request_to_pb(op, rest).is_ok() {
                    translated[0] += 1;
                }
            }
            1 => {
                let Ok(json) = answer_to_rpc(op, "\"id-1\"", rest) else {
                    continue;
                };
                let text = std::str::from_utf8(&json).unwrap();
                assert!(
                    a2a_egress::json::duplicate_keys(text, 1)
                        .unwrap()
                        .is_empty(),
                    "{at}: {text}"
                );
                let v: serde_json::Value = serde_json::from_str(text).unwrap();
                assert_eq!(v["id"], "id-1", "{at}: {text}");
                assert!(v.get("result").is_some(), "{at}: {text}");
                translated[1] += 1;
            }
            _ => {
                let [code, details @ ..] = rest else { continue };
                let s = Status {
                    code: i32::from(*code % 17),
                    message: "m",
                    details,
                };
                let v: serde_json::Value =
                    serde_json::from_slice(&status_to_rpc(op, "7", s)).unwrap();
                assert!(v["error"]["code"].is_i64(), "{at}: {v}");
                translated[2] += 1;
            }
        }
    }
    assert!(
        translated.iter().all(|n| *n > 0),
        "every direction translates a seed: {translated:?}"
    );
}

/// The `translate_binding` corpus (fuzz/fuzz_targets/translate_binding.rs), replayed on stable:
/// whatever moves between the bindings is one JSON object without duplicate keys unless the input
/// had one (a copied value comes as it was: `crash-bef3c448…`, an error's `details` holding a
/// repeated `reason`; the data plane refuses it before the move), a JSON-RPC one with the id and
/// one of `result`/`error`, a route is ASCII without spaces; every direction moves a seed.
#[test]
fn translate_binding_corpus_keeps_its_invariants() {
    use a2a_egress::translate::Op;
    use a2a_egress::translate::binding as b;
    const STATUSES: [u16; 8] = [200, 204, 400, 404, 500, 401, 429, 302];
    let dups = |b: &[u8]| {
        let t = String::from_utf8_lossy(b);
        !matches!(a2a_egress::json::duplicate_keys(&t, 1), Ok(d) if d.is_empty())
    };
    let object = |json: &[u8], id: Option<&str>, at: &str, input: &[u8]| {
        let text = std::str::from_utf8(json).unwrap();
        assert!(dups(input) || !dups(json), "{at}: {text}");
        // A number no `f64` holds is copied as written: the input was as unreadable to `Value`.
        let Ok(v) = serde_json::from_str::<serde_json::Value>(text) else {
            assert!(
                serde_json::from_slice::<serde_json::Value>(input).is_err(),
                "{at}"
            );
            return;
        };
        assert!(v.is_object(), "{at}: {text}");
        if let Some(id) = id {
            assert_eq!(v["id"].to_string(), id, "{at}: {text}");
            assert!(
                v.get("result").is_some() != v.get("error").is_some(),
                "{at}"
            );
        }
    };
    let mut moved = [0; 6];
    for (path, bytes) in corpus("translate_binding") {
        let Some((&pick, rest)) = bytes.split_first() else {
            continue;
        };
        let op = Op::ALL[usize::from(pick / 6) % Op::ALL.len()];
        let at = path.display().to_string();
        let status = rest.first().map(|s| STATUSES[usize::from(*s) % 8]);
        let d = usize::from(pick % 6);
        let ok = match d {
            0 => b::rpc_request_to_rest(op, rest)
                .map(|c| {
                    let p = c.path();
                    assert!(p.bytes().all(|c| c.is_ascii_graphic()), "{at}: {p}");
                    if !c.body.is_empty() {
                        object(&c.body, None, &at, rest);
                    }
                })
                .is_ok(),
            1 => b::rest_request_to_rpc(op, "/tasks/x", None, rest, Some("t"), "\"g\"").is_ok(),
            2 => matches!(
                status.map(|s| b::rest_answer_to_rpc(op, "\"c\"", s, &rest[1..])),
                Some(Ok(Some((_, ref json)))) if { object(json, Some("\"c\""), &at, &rest[1..]); true }
            ),
            3 => matches!(
                status.map(|s| b::rpc_answer_to_rest(s, "\"g\"", &rest[1..])),
                Some(Ok((_, ref json))) if { object(json, None, &at, &rest[1..]); true }
            ),
            4 => b::rest_event_to_rpc(op, "\"c\"", rest)
                .map(|t| object(&t.json, Some("\"c\""), &at, rest))
                .is_ok(),
            _ => b::rpc_event_to_rest("\"g\"", rest)
                .map(|t| object(&t.json, None, &at, rest))
                .is_ok(),
        };
        moved[d] += usize::from(ok);
    }
    assert!(
        moved.iter().all(|n| *n > 0),
        "every direction moves a seed: {moved:?}"
    );
}

/// The `translate_grpc03` corpus (fuzz/fuzz_targets/translate_grpc03.rs), replayed on stable:
/// whatever translates is one JSON object without duplicate keys (a JSON-RPC one keeps the id,
/// with exactly one of `result`/`error`); a status always is one; a card that converts is read by
/// the card rules; the seeds (written by the official a2a-sdk 0.3.26 generated types) translate
/// in every direction.
#[test]
fn translate_grpc03_corpus_keeps_its_invariants() {
    use a2a_egress::translate::Op;
    use a2a_egress::translate::grpc03 as g;
    let object = |json: &[u8], rpc: bool, at: &str| {
        let text = std::str::from_utf8(json).unwrap();
        let dup = a2a_egress::json::duplicate_keys(text, 1).unwrap();
        assert!(dup.is_empty(), "{at}: {text}");
        let v: serde_json::Value = serde_json::from_str(text).unwrap();
        assert!(v.is_object(), "{at}: {text}");
        if rpc {
            assert_eq!(v["id"], "id-1", "{at}: {text}");
            assert!(
                v.get("result").is_some() != v.get("error").is_some(),
                "{at}"
            );
        }
    };
    let mut moved = [0; 5];
    for (path, bytes) in corpus("translate_grpc03") {
        let Some((&pick, rest)) = bytes.split_first() else {
            continue;
        };
        let op = Op::ALL[usize::from(pick / 5) % Op::ALL.len()];
        let at = path.display().to_string();
        let d = usize::from(pick % 5);
        let ok = match d {
            0 => std::str::from_utf8(rest).is_ok_and(|text| {
                let (route, body) = text.split_once('\n').unwrap_or((text, ""));
                g::request_to_pb(op, route, body.as_bytes()).is_ok()
            }),
            1 => {
                let rpc = g::answer_to10(op, Some("\"id-1\""), rest);
                let rest_ = g::answer_to10(op, None, rest);
                if let (Ok(a), Ok(b)) = (&rpc, &rest_) {
                    object(a, true, &at);
                    object(b, false, &at);
                }
                rpc.is_ok() && rest_.is_ok()
            }
            2 => {
                let rpc = g::event_to10(op, Some("\"id-1\""), rest);
                let rest_ = g::event_to10(op, None, rest);
                if let (Ok(a), Ok(b)) = (&rpc, &rest_) {
                    object(&a.json, true, &at);
                    object(&b.json, false, &at);
                }
                rpc.is_ok() && rest_.is_ok()
            }
            3 => {
                let Some((code, message)) = rest.split_first() else {
                    continue;
                };
                let message = String::from_utf8_lossy(message);
                let code = i32::from(*code % 17);
                object(
                    &g::status_to10(op, Some("\"id-1\""), code, &message).1,
                    true,
                    &at,
                );
                object(&g::status_to10(op, None, code, &message).1, false, &at);
                true
            }
            _ => g::card_to_json(rest).is_ok_and(|json| {
                object(&json, false, &at);
                a2a_egress::card::validate(&json, &CardPolicy::default(), None).is_ok()
            }),
        };
        moved[d] += usize::from(ok);
    }
    assert!(
        moved.iter().all(|n| *n > 0),
        "every direction translates a seed: {moved:?}"
    );
}
