//! Fixture-driven tests of `card::validate` and `profile::compile`.
//!
//! - `tests/fixtures/cards/invalid/NAME.json` must fail validation under the default policy with
//!   exactly the problems listed, one per line, in `NAME.expect` (each line starts with the JSON path).
//! - `tests/fixtures/cards/valid/*.json` must validate and compile (files named `loopback*` are read
//!   with `allow_plain_http`, as the demo config does).
//! - `tests/fixtures/sdk/**.json`, real cards captured from the official SDK agents, must validate
//!   (with `allow_plain_http`: they are served on loopback) and compile to a usable profile.

use std::path::{Path, PathBuf};

use a2a_egress::card;
use a2a_egress::card::CardPolicy;
use a2a_egress::profile::{self, ClientCaps};

fn fixtures(sub: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(sub);
    let mut out = Vec::new();
    let mut stack = vec![dir];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "json") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn every_invalid_fixture_fails_with_exactly_its_expected_problems() {
    let files = fixtures("cards/invalid");
    assert!(
        files.len() >= 20,
        "expected the invalid fixture set, found {}",
        files.len()
    );
    let mut failures = Vec::new();
    for f in &files {
        let bytes = std::fs::read(f).unwrap();
        let expect_path = f.with_extension("expect");
        let expected = std::fs::read_to_string(&expect_path)
            .unwrap_or_else(|_| panic!("{} has no .expect file", f.display()));
        let expected: Vec<&str> = expected.lines().filter(|l| !l.is_empty()).collect();
        assert!(!expected.is_empty(), "{} is empty", expect_path.display());
        match card::validate(&bytes, &CardPolicy::default(), None) {
            Ok(_) => failures.push(format!("{}: validated, expected {expected:?}", f.display())),
            Err(errs) => {
                let got: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
                if got != expected {
                    failures.push(format!(
                        "{}:\n  expected: {expected:#?}\n  got: {got:#?}",
                        f.display()
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn policy_for(f: &Path) -> CardPolicy {
    let name = f.file_name().unwrap().to_string_lossy();
    CardPolicy {
        allow_plain_http: name.starts_with("loopback"),
        ..CardPolicy::default()
    }
}

#[test]
fn every_valid_fixture_validates_and_compiles() {
    let files = fixtures("cards/valid");
    assert!(files.len() >= 5);
    for f in &files {
        let bytes = std::fs::read(f).unwrap();
        let v = card::validate(&bytes, &policy_for(f), None)
            .unwrap_or_else(|e| panic!("{}:\n{e}", f.display()));
        let p = profile::compile(&v, &ClientCaps::default());
        assert_eq!(p.card_digest, v.digest());
        assert!(p.card_digest.starts_with("sha256:") && p.card_digest.len() == 7 + 64);
        // Serialises with the seed's field names.
        let j = serde_json::to_value(&p).unwrap();
        for k in [
            "usable",
            "reason",
            "agent_version",
            "interface",
            "streaming",
            "push",
            "extended_card",
            "extensions",
            "skills",
            "card_digest",
        ] {
            assert!(
                j.get(k).is_some(),
                "{}: profile JSON lacks {k}",
                f.display()
            );
        }
    }
}

#[test]
fn loopback_fixture_needs_allow_plain_http() {
    let f =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cards/valid/loopback_http.json");
    let bytes = std::fs::read(&f).unwrap();
    let err = card::validate(&bytes, &CardPolicy::default(), None).unwrap_err();
    assert_eq!(err.0.len(), 1, "{err}");
    assert!(
        err.to_string().starts_with("supportedInterfaces[0].url: "),
        "{err}"
    );
}

#[test]
fn sdk_cards_validate_and_compile() {
    let files = fixtures("sdk");
    assert!(
        files.len() >= 9,
        "expected the captured SDK cards, found {}",
        files.len()
    );
    for f in &files {
        let bytes = std::fs::read(f).unwrap();
        let policy = CardPolicy {
            allow_plain_http: true,
            ..CardPolicy::default()
        };
        let v = card::validate(&bytes, &policy, None)
            .unwrap_or_else(|e| panic!("{}:\n{e}", f.display()));
        // Some captures declare a required extension (tests/fixtures/sdk/README.md): a client that
        // knows it can use them (tests/sdk_fixtures.rs checks the unusable case).
        let caps = ClientCaps {
            extensions: vec![
                "https://example.com/ext/audit/v1".into(),
                "https://example.com/ext/trace/v1".into(),
            ],
            ..ClientCaps::default()
        };
        let p = profile::compile(&v, &caps);
        assert!(p.is_usable(), "{}: {:?}", f.display(), p.reason());
        assert!(!p.skills.is_empty(), "{}", f.display());
    }
}

/// `[client]` allowing everything the profile can record: 1.0 and 0.3, all three bindings.
fn caps_with_03() -> ClientCaps {
    ClientCaps {
        bindings: vec![
            profile::Binding::JsonRpc,
            profile::Binding::HttpJson,
            profile::Binding::Grpc,
        ],
        versions: vec!["1.0".into(), "0.3".into()],
        extensions: Vec::new(),
    }
}

#[test]
fn every_03_fixture_compiles_recording_version_and_binding_and_is_callable_on_every_binding() {
    let files = fixtures("cards/valid/v03");
    assert!(
        files.len() >= 3,
        "expected the 0.3 fixture set, found {}",
        files.len()
    );
    for f in &files {
        let bytes = std::fs::read(f).unwrap();
        let v = card::validate(&bytes, &policy_for(f), None)
            .unwrap_or_else(|e| panic!("{}:\n{e}", f.display()));
        // Today's default [client] (1.0 only): recorded, not chosen, nothing callable.
        let p = profile::compile(&v, &ClientCaps::default());
        assert!(p.interface.is_none(), "{}", f.display());
        assert!(!p.interfaces.is_empty(), "{}", f.display());
        for i in &p.interfaces {
            assert_eq!(i.version, "0.3", "{}", f.display());
            let why = i.not_chosen.as_deref().unwrap_or_default();
            assert!(
                why == "version 0.3 is not in [client] versions"
                    || why == "binding GRPC is not in [client] bindings",
                "{}: {why}",
                f.display()
            );
        }
        // With 0.3 allowed: the card's first interface is chosen, whatever its binding (0.3's
        // gRPC service is called too), and the profile is usable unless it requires an extension.
        let p = profile::compile(&v, &caps_with_03());
        let iface = p.interface.as_ref().expect("an interface is chosen");
        assert_eq!(iface.version, "0.3");
        assert!(
            p.interfaces[0].chosen,
            "{}: {:?}",
            f.display(),
            p.interfaces
        );
        assert_eq!(p.interfaces[0].binding, iface.binding.as_str());
        if p.required_extensions.is_empty() {
            assert!(p.is_usable(), "{}: {:?}", f.display(), p.reason());
        }
    }
}

#[test]
fn the_03_readme_names_every_03_fixture() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cards/valid/v03");
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    for f in fixtures("cards/valid/v03") {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            readme.contains(&format!("`{name}`")),
            "{name} is not in valid/v03/README.md"
        );
    }
}

#[test]
fn a_03_card_without_protocol_version_is_read_as_0_3_0_and_says_so() {
    let f = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/cards/valid/v03/loopback_a2a_mcp_air_ticketing_agent.json");
    let bytes = std::fs::read(&f).unwrap();
    assert!(!String::from_utf8_lossy(&bytes).contains("protocolVersion"));
    let v = card::validate(&bytes, &policy_for(&f), None).unwrap();
    let w: Vec<String> = v.warnings().iter().map(|w| w.to_string()).collect();
    assert!(
        w.iter()
            .any(|w| w.starts_with("protocolVersion: absent from a 0.3 card")),
        "{w:?}"
    );
    let p = profile::compile(&v, &caps_with_03());
    assert_eq!(p.interface.as_ref().unwrap().version, "0.3");
    // A present but wrong protocolVersion is still the schema's to refuse; so is null, which
    // the Python SDK 0.3 would accept (`str | None`) but the pinned schema does not (`string`).
    for wrong_value in ["3", "null"] {
        let wrong = String::from_utf8_lossy(&bytes).replacen(
            "\"version\": \"1.0.0\",",
            &format!("\"version\": \"1.0.0\", \"protocolVersion\": {wrong_value},"),
            1,
        );
        let err = card::validate(wrong.as_bytes(), &policy_for(&f), None).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("protocolVersion: A2A 0.3 card refused by the 0.3 schema"),
            "{wrong_value}: {err}"
        );
    }
}

#[test]
fn a_03_card_maps_interfaces_security_media_types_and_the_extended_card_flag() {
    let f = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/cards/valid/v03/grpc_first.json");
    let v = card::validate(&std::fs::read(&f).unwrap(), &CardPolicy::default(), None).unwrap();
    let p = profile::compile(&v, &caps_with_03());
    let got: Vec<(&str, &str, bool)> = p
        .interfaces
        .iter()
        .map(|i| (i.binding.as_str(), i.url.as_str(), i.chosen))
        .collect();
    assert_eq!(
        got,
        [
            ("GRPC", "grpc.a.example:443", true),
            ("HTTP+JSON", "https://a.example/rest", false),
            ("JSONRPC", "https://a.example/a2a", false),
        ]
    );
    // The preferred 0.3 gRPC interface is called (the a2a.v1 service).
    assert_eq!(
        p.interface.as_ref().unwrap().binding,
        profile::Binding::Grpc
    );
    assert!(p.is_usable(), "{:?}", p.reason());
    assert!(p.extended_card && p.streaming && !p.push);
    let s = &p.skills["summarise"];
    assert_eq!(s.input, ["application/pdf", "text/plain"]);
    assert_eq!(s.output, ["text/plain"]);
    assert_eq!(s.security.len(), 1);
    assert_eq!(s.security[0]["bearer"], ["summaries:write"]);
    // Without GRPC in [client] bindings the next interface in the card's order is chosen.
    let caps = ClientCaps {
        bindings: vec![profile::Binding::JsonRpc, profile::Binding::HttpJson],
        ..caps_with_03()
    };
    let p = profile::compile(&v, &caps);
    assert_eq!(
        p.interface.as_ref().unwrap().binding,
        profile::Binding::HttpJson
    );
    assert_eq!(
        p.interfaces[0].not_chosen.as_deref(),
        Some("binding GRPC is not in [client] bindings")
    );
    assert_eq!(
        p.interfaces[2].not_chosen.as_deref(),
        Some("an interface earlier in the card's order was chosen")
    );
}
