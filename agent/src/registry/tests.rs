//! Tests of registry parsing and validation, and the shared sample-registry fixture.
use super::*;

/// Test secrets: a fixed map of env vars; files are never read.
pub(crate) struct MapSecrets(pub HashMap<String, String>);

impl Secrets for MapSecrets {
    fn env(&self, name: &str) -> Option<String> {
        self.0.get(name).cloned()
    }
    fn file(&self, path: &Path) -> std::io::Result<String> {
        Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            path.display().to_string(),
        ))
    }
}

pub(crate) fn demo_secrets() -> MapSecrets {
    MapSecrets(HashMap::from([
        (
            "A2A_AGENT_TOKEN_PARTNER".into(),
            "partner-demo-token".into(),
        ),
        ("A2A_AGENT_TOKEN_VIEWER".into(), "viewer-demo-token".into()),
        ("A2A_AGENT_TOKEN_OTHER".into(), "other-demo-token".into()),
    ]))
}

/// The shipped sample registry, parsed with the demo tokens.
pub(crate) fn sample() -> Registry {
    let text = include_str!("../../../config/agent/registry.toml");
    parse(text, Path::new("."), &demo_secrets()).expect("sample registry is valid")
}

fn problems(text: &str) -> Vec<Problem> {
    match parse(text, Path::new("."), &demo_secrets()) {
        Err(RegistryError::Invalid(p)) => p,
        other => panic!("expected Invalid, got {other:?}"),
    }
}

const BASE: &str = r#"
[agent]
name = "A"
description = "d"
version = "1.0.0"
default_input_modes = ["text/plain"]
default_output_modes = ["text/plain"]
[[agent.interfaces]]
binding = "JSONRPC"
path = "/jsonrpc"
protocol_version = "1.0"
"#;

#[test]
fn sample_registry_is_valid_and_complete() {
    let r = sample();
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    assert_eq!(r.principals.len(), 3);
    for state in [State::Ga, State::Preview, State::Deprecated, State::Removed] {
        assert!(
            r.manifests.iter().any(|m| m.state == state),
            "no {state:?} manifest"
        );
    }
    assert!(
        r.extensions
            .iter()
            .any(|e| e.uri == "https://example.com/ext/trace/v1")
    );
    assert_eq!(r.agent.interfaces.len(), 2);
}

#[test]
fn unknown_key_in_a_manifest_names_the_manifest() {
    let text = format!(
        "{BASE}\n[[manifests]]\nid = \"echo\"\nstate = \"ga\"\nvisibility = \"public\"\ntenants = \"*\"\nhandler = \"echo\"\nowner = \"t\"\ncolour = \"red\"\n[manifests.skill]\nname = \"E\"\ndescription = \"e\"\ntags = [\"x\"]\n"
    );
    let err = parse(&text, Path::new("."), &demo_secrets()).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("manifests[0] (id \"echo\")"), "{msg}");
    assert!(msg.contains("colour"), "{msg}");
}

#[test]
fn unknown_top_level_key_is_an_error() {
    let err = parse(
        &format!("{BASE}\n[extras]\nx = 1\n"),
        Path::new("."),
        &demo_secrets(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("extras"), "{err}");
}

#[test]
fn validation_names_manifest_and_field() {
    let text = format!(
        r#"{BASE}
[[manifests]]
id = "old"
state = "deprecated"
visibility = "public"
tenants = "*"
handler = "no-such-handler"
owner = "t"
[manifests.skill]
name = "Old"
description = "o"
tags = []
input_modes = ["textplain"]

[[manifests]]
id = "pub"
state = "ga"
visibility = "public"
requires_scopes = ["x"]
tenants = ["acme"]
handler = "echo"
owner = "t"
replacement = "old"
[manifests.skill]
name = "P"
description = "p"
tags = ["p"]
"#
    );
    let p = problems(&text);
    let has = |at: &str, needle: &str| p.iter().any(|x| x.at == at && x.message.contains(needle));
    assert!(has("manifests[old].replacement", "must name"), "{p:?}");
    assert!(has("manifests[old].handler", "not a built-in"), "{p:?}");
    assert!(has("manifests[old].skill.tags", "at least one"), "{p:?}");
    assert!(
        has("manifests[old].skill.input_modes[0]", "not a media type"),
        "{p:?}"
    );
    assert!(has("manifests[pub].visibility", "public"), "{p:?}");
    assert!(
        has("manifests[pub].replacement", "only deprecated"),
        "{p:?}"
    );
}

#[test]
fn replacement_must_be_a_live_manifest() {
    let text = format!(
        r#"{BASE}
[[manifests]]
id = "gone"
state = "removed"
visibility = "public"
tenants = "*"
handler = "echo"
owner = "t"
replacement = "nowhere"
[manifests.skill]
name = "G"
description = "g"
tags = ["g"]
"#
    );
    let p = problems(&text);
    assert!(
        p.iter()
            .any(|x| x.at == "manifests[gone].replacement" && x.message.contains("not a manifest"))
    );
}

#[test]
fn tokens_never_come_from_the_toml_and_unset_env_disables() {
    let text = format!(
        "{BASE}\n[[principals]]\nname = \"p\"\nscopes = [\"a\"]\n\n[[principals]]\nname = \"q\"\ntoken_env = \"UNSET_VAR_FOR_TEST\"\n"
    );
    let p = problems(&text);
    assert!(
        p.iter()
            .any(|x| x.at == "principals[p]" && x.message.contains("token_env"))
    );
    let text =
        format!("{BASE}\n[[principals]]\nname = \"q\"\ntoken_env = \"UNSET_VAR_FOR_TEST\"\n");
    let r = parse(&text, Path::new("."), &demo_secrets()).unwrap();
    assert!(r.principals.is_empty());
    assert_eq!(r.warnings[0].at, "principals[q].token_env");
    // A `token` key is simply unknown.
    let text = format!("{BASE}\n[[principals]]\nname = \"q\"\ntoken = \"secret-in-toml\"\n");
    let err = parse(&text, Path::new("."), &demo_secrets()).unwrap_err();
    assert!(
        err.to_string().contains("principals[0] (name \"q\")"),
        "{err}"
    );
}

#[test]
fn authenticate_by_token() {
    let r = sample();
    assert_eq!(
        r.principals
            .authenticate("partner-demo-token")
            .map(|p| p.name.as_str()),
        Some("partner")
    );
    assert!(r.principals.authenticate("partner-demo-tokeN").is_none());
}

#[test]
fn interfaces_are_checked() {
    let text = BASE
        .replace("\"1.0\"", "\"0.3\"")
        .replace("JSONRPC", "GRPC");
    let p = problems(&text);
    assert!(p.iter().any(|x| x.at == "agent.interfaces[0].binding"));
}

#[test]
fn media_type_syntax() {
    assert!(is_media_type("text/plain"));
    assert!(is_media_type("image/*"));
    assert!(is_media_type("application/json; charset=utf-8"));
    assert!(!is_media_type("text"));
    assert!(!is_media_type("/plain"));
}

#[test]
fn token_file_is_read_relative_to_the_registry() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("partner.token"), "file-token-123\n").unwrap();
    let text = format!(
        "{BASE}\n[[principals]]\nname = \"p\"\ntoken_file = \"partner.token\"\nscopes = [\"a\"]\n"
    );
    let path = dir.path().join("registry.toml");
    std::fs::write(&path, text).unwrap();
    let r = load(&path).unwrap();
    assert_eq!(
        r.principals
            .authenticate("file-token-123")
            .map(|p| p.name.as_str()),
        Some("p")
    );
    // a missing token file is an error naming the principal
    std::fs::remove_file(dir.path().join("partner.token")).unwrap();
    let err = load(&path).unwrap_err().to_string();
    assert!(err.contains("principals[p].token_file"), "{err}");
}

#[test]
fn registry_and_token_files_over_their_caps_are_refused_unread() {
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("partner.token");
    std::fs::write(&token, "t".repeat(MAX_TOKEN_BYTES as usize + 1)).unwrap();
    let text = format!(
        "{BASE}\n[[principals]]\nname = \"p\"\ntoken_file = \"partner.token\"\nscopes = [\"a\"]\n"
    );
    let path = dir.path().join("registry.toml");
    std::fs::write(&path, &text).unwrap();
    let err = load(&path).unwrap_err().to_string();
    assert!(err.contains("principals[p].token_file"), "{err}");
    assert!(err.contains("larger than its cap"), "{err}");
    // A registry padded past its cap with a comment (valid TOML) is refused before parsing.
    let padded = format!("{text}#{}\n", "x".repeat(MAX_REGISTRY_BYTES as usize));
    std::fs::write(&path, padded).unwrap();
    let err = load(&path).unwrap_err();
    assert!(
        matches!(
            &err,
            RegistryError::Read {
                source: FileError::TooLarge { .. },
                ..
            }
        ),
        "{err}"
    );
}
