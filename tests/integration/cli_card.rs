//! The `validate` and `compile` commands, run as the real binary: exit codes, stdin `-`, one
//! problem per line on stderr, profile JSON on stdout.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/cards")
        .join(rel)
}

/// Runs the binary in an empty temporary folder (so no `config/gateway.toml` is picked up
/// unless the test passes `--config`), feeding `stdin`.
fn run(args: &[&str], stdin: &[u8]) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let mut child = crate::common::gateway_cmd()
        .args(args)
        .current_dir(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A refused card may close stdin early; a broken pipe here is fine.
    let _ = child.stdin.take().unwrap().write_all(stdin);
    child.wait_with_output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8(b.to_vec()).unwrap()
}

#[test]
fn validate_valid_file_exits_0_and_prints_the_digest() {
    let out = run(
        &["validate", fixture("valid/minimal.json").to_str().unwrap()],
        b"",
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines[0].starts_with("valid sha256:"), "{stdout}");
    assert_eq!(lines[0].len(), "valid sha256:".len() + 64);
    assert_eq!(lines[1], "signature: none");
}

#[test]
fn validate_verifies_a_signed_sdk_card_with_configured_keys() {
    let sdk = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sdk");
    let card = sdk.join("python-signed.json");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&card).unwrap()).unwrap();
    let url = url::Url::parse(v["supportedInterfaces"][0]["url"].as_str().unwrap()).unwrap();
    let origin = url.origin().ascii_serialization();
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("g.toml");
    std::fs::write(
        &cfg,
        format!(
            "[client]\nallow_plain_http = true\nrequire_signatures = true\n\n[[client.trusted_keys]]\norigin = \"{origin}\"\njwks = {:?}\n",
            sdk.join("python-signed.jwks").to_str().unwrap()
        ),
    )
    .unwrap();
    let (cfg, card) = (cfg.to_str().unwrap(), card.to_str().unwrap());
    let out = run(
        &["validate", "--config", cfg, "--origin", &origin, card],
        b"",
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("signature: verified (signatures[0]"),
        "{}",
        text(&out.stdout)
    );
    // Without --origin no key applies, and signatures are required: invalid.
    let out = run(&["validate", "--config", cfg, card], b"");
    assert_eq!(out.status.code(), Some(65));
    assert!(
        text(&out.stderr).starts_with("signatures: "),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn validate_invalid_file_exits_65_with_one_problem_per_line() {
    let f = fixture("invalid/missing_everything.json");
    let out = run(&["validate", f.to_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(65));
    let expected = std::fs::read_to_string(f.with_extension("expect")).unwrap();
    assert_eq!(text(&out.stderr), expected);
    assert!(out.stdout.is_empty());
}

#[test]
fn validate_reads_stdin_with_dash() {
    let card = std::fs::read(fixture("valid/minimal.json")).unwrap();
    let out = run(&["validate", "-"], &card);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = run(&["validate", "-"], b"{\"name\": 1}");
    assert_eq!(out.status.code(), Some(65));
    let err = text(&out.stderr);
    assert!(
        err.lines()
            .any(|l| l == "name: expected string, found number"),
        "{err}"
    );
    assert!(
        err.lines().count() > 1,
        "every problem, not just the first: {err}"
    );
}

#[test]
fn v03_card_refused_by_the_03_schema_says_so() {
    let out = run(
        &[
            "validate",
            fixture("invalid/v03_schema_types.json").to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(65));
    assert!(
        text(&out.stderr).contains("A2A 0.3 card refused by the 0.3 schema"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn v03_card_without_protocol_version_validates_as_0_3_0_with_a_warning() {
    // The a2a-samples card (valid/v03/README.md) on https, so the default policy reads it.
    let card = std::fs::read_to_string(fixture(
        "valid/v03/loopback_a2a_mcp_air_ticketing_agent.json",
    ))
    .unwrap()
    .replace("http://localhost:10103/", "https://air.example/");
    let out = run(&["validate", "-"], card.as_bytes());
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("warning: protocolVersion: absent from a 0.3 card: read as \"0.3.0\""),
        "{err}"
    );
}

#[test]
fn compile_prints_the_profile_json() {
    let card = std::fs::read(fixture("valid/full.json")).unwrap();
    let out = run(&["compile", "-"], &card);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let p: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(p["usable"], true);
    assert_eq!(p["interface"]["binding"], "HTTP+JSON");
    assert_eq!(
        p["skills"]["itinerary-pricing"]["input"],
        serde_json::json!(["application/pdf"])
    );
    // The unverifiable test signature is reported as a warning, not an error.
    assert!(text(&out.stderr).contains("warning: signatures: "));
}

#[test]
fn compile_invalid_card_exits_65_and_prints_no_profile() {
    let f = fixture("invalid/duplicate_skill_ids.json");
    let out = run(&["compile", f.to_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(65));
    assert!(out.stdout.is_empty());
    assert_eq!(
        text(&out.stderr),
        std::fs::read_to_string(f.with_extension("expect")).unwrap()
    );
}

#[test]
fn config_drives_client_capabilities_and_policy() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("g.toml");
    std::fs::write(
        &cfg,
        "[client]\nbindings = [\"JSONRPC\"]\nallow_plain_http = true\nmax_card_bytes = 4096\n",
    )
    .unwrap();
    let cfg = cfg.to_str().unwrap();
    // allow_plain_http admits the loopback card; HTTP+JSON is its only interface, and this
    // client speaks JSONRPC only: valid card, unusable profile, exit 0.
    let out = run(
        &[
            "compile",
            "--config",
            cfg,
            fixture("valid/loopback_http.json").to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let p: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(p["usable"], false);
    assert_eq!(p["unusable"]["kind"], "no_supported_interface");
    // max_card_bytes: refused before parsing.
    let big = vec![b' '; 5000];
    let out = run(&["validate", "--config", cfg, "-"], &big);
    assert_eq!(out.status.code(), Some(65));
    assert!(text(&out.stderr).starts_with("$: card is larger than the 4096-byte limit"));
}

#[test]
fn an_implicit_default_config_is_named_on_stderr() {
    let card = fixture("valid/loopback_http.json");
    let card = card.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("config")).unwrap();
    std::fs::write(
        dir.path().join("config/gateway.toml"),
        "[client]\nallow_plain_http = true\n",
    )
    .unwrap();
    let out = crate::common::gateway_cmd()
        .args(["validate", card])
        .current_dir(dir.path())
        .output()
        .unwrap();
    // The default file allows plain http, so the loopback card is valid: and says why.
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stderr).lines().next(),
        Some("using config config/gateway.toml")
    );
    // Without a default file nothing is announced (and the http card is refused).
    let out = run(&["validate", card], b"");
    assert_eq!(out.status.code(), Some(65));
    assert!(!text(&out.stderr).contains("using config"));
    // An explicit --config is not announced either: the caller named it.
    let out = crate::common::gateway_cmd()
        .args(["validate", "--config", "config/gateway.toml", card])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(!text(&out.stderr).contains("using config"));
}

#[test]
fn bad_config_exits_64_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("g.toml");
    std::fs::write(&cfg, "[client]\nbindings = [\"JSONRPC\"]\nbogus = 1\n").unwrap();
    let out = run(
        &[
            "validate",
            "--config",
            cfg.to_str().unwrap(),
            fixture("valid/minimal.json").to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(64));
    let err = text(&out.stderr);
    assert!(err.contains("bogus") && err.contains("line 3"), "{err}");
}

#[test]
fn missing_card_file_is_a_missing_input_not_invalid() {
    let out = run(&["validate", "/nonexistent/card.json"], b"");
    assert_eq!(out.status.code(), Some(66));
    assert!(text(&out.stderr).contains("/nonexistent/card.json"));
}

#[test]
fn bad_origin_is_a_usage_error() {
    let out = run(
        &[
            "validate",
            "--origin",
            "not an origin",
            fixture("valid/minimal.json").to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(64));
}

/// A multi-byte character where `scheme://` would end used to panic the validator (exit 101):
/// it is an invalid card like any other, for both commands.
#[test]
fn multibyte_url_boundaries_are_invalid_not_a_crash() {
    let f = fixture("invalid/multibyte_url_boundaries.json");
    let expected = std::fs::read_to_string(f.with_extension("expect")).unwrap();
    for cmd in ["validate", "compile"] {
        let out = run(&[cmd, f.to_str().unwrap()], b"");
        assert_eq!(out.status.code(), Some(65), "{cmd}: {}", text(&out.stderr));
        assert_eq!(text(&out.stderr), expected, "{cmd}");
        assert!(out.stdout.is_empty());
    }
}
