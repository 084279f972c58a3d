//! Configuration that cannot silently go wrong, run as the real binary: `config schema` (the
//! committed schema is the generated one, and every config the repository ships matches it),
//! `config check` (offline: notes for what it cannot read, 64 for what is wrong), the `[log]
//! level` and `RUST_LOG` rule, the example Secret's placeholder token refused at start, and the
//! exit code of a missing file, the same in every command (process and file I/O).

use std::io::Read as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::common::schema::{assert_matches_schema, schema_errors};
use crate::common::{gateway_cmd, process::wait_exit, repo_root};

/// Runs the binary in `dir` with `RUST_LOG` and the sample's credential variable unset (a CI
/// machine without the deployment's secrets).
fn run_in(dir: &Path, args: &[&str]) -> Output {
    gateway_cmd()
        .args(args)
        .current_dir(dir)
        .env_remove("RUST_LOG")
        .env_remove("A2A_EGRESS_FINANCE_TOKEN")
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `serve` with `config` (and `env`): its exit code and stderr, or `None` when it is still
/// running after the deadline (then it is killed): a refused start ends at once.
fn serve_exit(dir: &Path, config: &str, env: &[(&str, &str)]) -> (Option<i32>, String) {
    std::fs::write(dir.join("gateway.toml"), config).unwrap();
    let mut child = gateway_cmd()
        .args(["serve", "--config", "gateway.toml"])
        .current_dir(dir)
        .env_remove("RUST_LOG")
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = wait_exit(&mut child, Duration::from_secs(30));
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    let mut err = String::new();
    let _ = child.stderr.take().unwrap().read_to_string(&mut err);
    (status.and_then(|s| s.code()), err)
}

/// Loopback port-0 listeners: `serve` can start anywhere.
const HEAD: &str = "[listen]\nproxy = \"127.0.0.1:0\"\nadmin = \"127.0.0.1:0\"\n";

fn kube_docs() -> Vec<Value> {
    use serde::Deserialize as _;
    let text = std::fs::read_to_string(repo_root().join("deploy/kubernetes/sidecar.yaml")).unwrap();
    serde_yaml_ng::Deserializer::from_str(&text)
        .map(|d| Value::deserialize(d).unwrap())
        .collect()
}

/// The `toml` code blocks of the README.
fn readme_toml_blocks() -> Vec<String> {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in readme.lines() {
        match (&mut current, line.trim_start()) {
            (None, "```toml") => current = Some(String::new()),
            (Some(b), "```") => {
                blocks.push(std::mem::take(b));
                current = None;
            }
            (Some(b), _) => {
                b.push_str(line);
                b.push('\n');
            }
            (None, _) => {}
        }
    }
    blocks
}

#[test]
fn the_committed_schema_is_the_generated_one_and_every_shipped_config_matches_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_in(dir.path(), &["config", "schema"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let committed =
        std::fs::read_to_string(repo_root().join("schemas/config.schema.json")).unwrap();
    assert!(
        text(&out.stdout) == committed,
        "schemas/config.schema.json is stale: regenerate it with `a2a-egress config schema > schemas/config.schema.json`"
    );

    let sample = std::fs::read_to_string(repo_root().join("config/gateway.toml")).unwrap();
    assert!(
        sample.starts_with("#:schema ../schemas/config.schema.json\n"),
        "config/gateway.toml names its schema for editors (taplo)"
    );
    assert_matches_schema(&sample, "config/gateway.toml");
    let docs = kube_docs();
    let map = docs.iter().find(|d| d["kind"] == "ConfigMap").unwrap();
    let kube = map["data"]["gateway.toml"].as_str().unwrap();
    assert_matches_schema(kube, "the Kubernetes example's gateway.toml");
    let blocks = readme_toml_blocks();
    assert!(!blocks.is_empty(), "the README shows config snippets");
    for b in &blocks {
        assert_matches_schema(b, "a README toml block");
    }

    // The schema refuses what the parser refuses: unknown keys and values outside a closed set.
    for (bad, at) in [
        ("[client]\nbogus = 1\n", "/client"),
        ("[nonsense]\n", ""),
        ("[log]\nformat = \"xml\"\n", "/log/format"),
        (
            "[[integrations]]\nname = \"a\"\ncard = \"https://a.example/c\"\norigins = []\n\
             skills = []\ndata_classes = []\nstreaming = \"sometimes\"\n",
            "/integrations/0/streaming",
        ),
        (
            "[listen]\nallow_non_loopback = \"yes\"\n",
            "/listen/allow_non_loopback",
        ),
    ] {
        let errors = schema_errors(bad);
        assert!(
            errors.iter().any(|e| e.starts_with(&format!("{at}: "))),
            "{bad}: {errors:?}"
        );
    }
}

#[test]
fn config_check_validates_offline_and_notes_what_it_cannot_read() {
    let dir = tempfile::tempdir().unwrap();
    let sample = std::fs::read_to_string(repo_root().join("config/gateway.toml")).unwrap();
    let with_token = sample.replace(
        "# token_file = \"secrets/admin.token\"",
        "token_file = \"secrets/admin.token\"",
    );
    assert_ne!(with_token, sample, "the sample's token_file line moved");
    std::fs::write(dir.path().join("gateway.toml"), &with_token).unwrap();
    let out = run_in(dir.path(), &["config", "check", "--config", "gateway.toml"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(text(&out.stdout), "valid gateway.toml\n");
    for note in [
        "note: admin.token_file: not read (",
        "note: integrations[0] (\"finance\").credential: not read here (credential environment variable A2A_EGRESS_FINANCE_TOKEN is not set)",
        "note: integrations[0] (\"finance\"): no lockfile ",
    ] {
        assert!(err.contains(note), "{note}\n{err}");
    }
    // The default file when --config is not given.
    std::fs::create_dir_all(dir.path().join("config")).unwrap();
    std::fs::write(dir.path().join("config/gateway.toml"), &sample).unwrap();
    let out = run_in(dir.path(), &["config", "check"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "valid config/gateway.toml\n");

    // A secret that is there is checked as at start: the example Secret's placeholder is refused.
    std::fs::create_dir_all(dir.path().join("secrets")).unwrap();
    let token = dir.path().join("secrets/admin.token");
    std::fs::write(
        &token,
        "replace-with-at-least-16-visible-ascii-characters\n",
    )
    .unwrap();
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = run_in(dir.path(), &["config", "check", "--config", "gateway.toml"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(64), "{err}");
    assert!(
        err.contains("placeholder") && err.contains("replace it"),
        "{err}"
    );

    // A bad value, and a lockfile that is there and broken: 64, every problem listed.
    let bad = sample.replace("\nlevel = \"info\"\n", "\nlevel = \"warning\"\n");
    assert_ne!(bad, sample, "the sample sets [log] level");
    std::fs::write(dir.path().join("bad.toml"), bad).unwrap();
    let out = run_in(dir.path(), &["config", "check", "--config", "bad.toml"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(64), "{err}");
    assert!(err.contains("log.level: \"warning\""), "{err}");
    std::fs::remove_file(&token).unwrap();
    std::fs::create_dir_all(dir.path().join("locks")).unwrap();
    std::fs::write(dir.path().join("locks/finance.json"), "{}").unwrap();
    let out = run_in(dir.path(), &["config", "check", "--config", "gateway.toml"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(64), "{err}");
    assert!(err.contains("finance.json"), "{err}");
}

/// A lockfile or CA file that is there is read as the gateway reads it: a folder in the
/// lockfile's place and a CA file that is not PEM are problems (64), where `config check` used
/// to say `valid` for both (the lockfile was only a note, the CA file only looked at).
#[test]
fn config_check_reads_a_lockfile_and_a_ca_file_that_are_there() {
    let dir = tempfile::tempdir().unwrap();
    let config = crate::common::gateway::config_head(&[])
        + &a2a_egress::testkit::IntegrationToml::new("finance", "http://127.0.0.1:9/card.json")
            .extra("ca_file = \"ca.pem\"")
            .text();
    std::fs::write(dir.path().join("gateway.toml"), config).unwrap();
    let args = ["config", "check", "--config", "gateway.toml"];
    // Neither there: notes only.
    let out = run_in(dir.path(), &args);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("ca_file: not read here") && err.contains("no lockfile"),
        "{err}"
    );

    std::fs::create_dir_all(dir.path().join("locks/finance.json")).unwrap();
    std::fs::write(dir.path().join("ca.pem"), "not a certificate\n").unwrap();
    let out = run_in(dir.path(), &args);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(64), "{err}");
    assert_eq!(text(&out.stdout), "", "{err}");
    assert!(
        err.contains("  - integrations[0] (\"finance\"): the lockfile ")
            && err.contains("finance.json is not a regular file"),
        "{err}"
    );
    assert!(
        err.contains("  - integrations[0] (\"finance\").ca_file: ca_file ")
            && err.contains("holds no certificate"),
        "{err}"
    );
}

#[test]
fn a_bare_word_log_level_a_bad_rust_log_and_the_placeholder_token_are_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    for level in ["warning", "verbose"] {
        let (code, err) = serve_exit(
            dir.path(),
            &format!("{HEAD}[log]\nlevel = \"{level}\"\n"),
            &[],
        );
        assert_eq!(code, Some(64), "level {level}: {err}");
        assert!(
            err.contains(&format!("log.level: \"{level}\""))
                && err.contains("trace, debug, info, warn, error, off"),
            "{err}"
        );
    }
    let (code, err) = serve_exit(dir.path(), HEAD, &[("RUST_LOG", "warning")]);
    assert_eq!(code, Some(64), "{err}");
    assert!(
        err.contains("RUST_LOG: \"warning\": \"warning\" is not a log level"),
        "{err}"
    );
    // A thread count that is not one is bad configuration too (it exited 1: restarted in a loop).
    for threads in ["lots", "0"] {
        let (code, err) = serve_exit(dir.path(), HEAD, &[("TOKIO_WORKER_THREADS", threads)]);
        assert_eq!(code, Some(64), "TOKIO_WORKER_THREADS={threads}: {err}");
        assert!(
            err.contains("TOKIO_WORKER_THREADS") && err.contains("from 1 to 1024"),
            "{err}"
        );
    }

    std::fs::write(
        dir.path().join("admin.token"),
        "replace-with-at-least-16-visible-ascii-characters\n",
    )
    .unwrap();
    std::fs::set_permissions(
        dir.path().join("admin.token"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    let (code, err) = serve_exit(
        dir.path(),
        &format!("{HEAD}[admin]\ntoken_file = \"admin.token\"\n"),
        &[],
    );
    assert_eq!(code, Some(64), "{err}");
    assert!(err.contains("placeholder; replace it"), "{err}");
}

/// Valid directives start, bare targets and numeric levels among them (`RUST_LOG=a2a_egress`,
/// the crate at every level, and `RUST_LOG=3` used to exit 64).
#[tokio::test]
async fn a_valid_directive_with_targets_still_starts() {
    let config = format!("{HEAD}[log]\nlevel = \"warn,a2a_egress=debug\"\n");
    for rust_log in ["info,a2a_egress::access=off", "a2a_egress", "3"] {
        let gw =
            crate::common::gateway::GatewayProc::start(&config, &[("RUST_LOG", rust_log)]).await;
        assert_eq!(gw.readyz().await["ready"], true, "RUST_LOG={rust_log}");
    }
}

/// Every command that reads a file named on its command line (or the default config) exits 66
/// (EX_NOINPUT) when it is missing, whatever the file: the README's command table says so.
#[test]
fn a_missing_file_exits_66_in_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let card = repo_root().join("tests/fixtures/lock/pricing-0.json");
    let card = card.to_str().unwrap();
    std::fs::write(dir.path().join("need.json"), r#"{"skill": "x"}"#).unwrap();
    let admin = "http://127.0.0.1:9";
    let cases: &[&[&str]] = &[
        &["serve"],
        &["serve", "--config", "missing.toml"],
        &["validate", "missing.json"],
        &["validate", card, "--config", "missing.toml"],
        &["compile", "missing.json"],
        &["diff", "missing.json", card],
        &["diff", card, card, "--lock", "missing.lock.json"],
        &["diff", card, card, "--config", "missing.toml"],
        &["lock", "finance", "--config", "missing.toml"],
        &["check"],
        &["check", "--config", "missing.toml"],
        &["probe", "finance", "--config", "missing.toml"],
        &["select", "--need", "missing.json", "--admin", admin],
        &[
            "select",
            "--need",
            "need.json",
            "--admin",
            admin,
            "--token-file",
            "missing.token",
        ],
        &["select", "--need", "need.json", "--config", "missing.toml"],
        &["status", "--admin", admin, "--token-file", "missing.token"],
        &["status", "--config", "missing.toml"],
        &["config", "check"],
        &["config", "check", "--config", "missing.toml"],
    ];
    let mut wrong = Vec::new();
    for args in cases {
        let out = run_in(dir.path(), args);
        if out.status.code() != Some(66) {
            wrong.push(format!(
                "{}: {:?} {}",
                args.join(" "),
                out.status.code(),
                text(&out.stderr).trim()
            ));
        }
    }
    assert!(wrong.is_empty(), "not 66:\n{}", wrong.join("\n"));
}
