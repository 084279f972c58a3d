//! `a2a-egress agent --print-card`: both projections of the sample registry pass
//! `a2a-egress validate`, and the CLI fails clearly on bad registries and selectors.

use std::process::{Command, Output};

use crate::common::RefAgent;
use serde_json::Value;

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_a2a-egress"));
    for (k, v) in RefAgent::demo_envs() {
        c.env(k, v);
    }
    c
}

fn print_card(registry: &std::path::Path, which: &str) -> Output {
    bin()
        .args(["agent", "--registry"])
        .arg(registry)
        .args(["--print-card", which])
        .output()
        .unwrap()
}

#[test]
fn both_sample_cards_pass_validate() {
    let dir = tempfile::tempdir().unwrap();
    for (which, has_reconcile) in [("public", false), ("extended:partner", true)] {
        let out = print_card(&RefAgent::sample_registry(), which);
        assert!(
            out.status.success(),
            "{which}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let card: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            card["supportedInterfaces"][0]["url"], "http://127.0.0.1:7400/a2a/jsonrpc",
            "the default listen address"
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            text.contains("\"reconcile-invoice\""),
            has_reconcile,
            "{which}"
        );
        let file = dir.path().join(format!("{}.json", which.replace(':', "-")));
        std::fs::write(&file, &out.stdout).unwrap();
        let v = bin().arg("validate").arg(&file).output().unwrap();
        assert!(
            v.status.success(),
            "{which} card is invalid:\n{}\n{}",
            String::from_utf8_lossy(&v.stdout),
            String::from_utf8_lossy(&v.stderr)
        );
        assert!(String::from_utf8_lossy(&v.stdout).starts_with("valid sha256:"));
    }
}

#[tokio::test]
async fn printed_public_card_is_the_served_one() {
    let agent = RefAgent::sample();
    let out = bin()
        .args(["agent", "--registry"])
        .arg(RefAgent::sample_registry())
        .args([
            "--listen",
            &agent.addr.to_string(),
            "--print-card",
            "public",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed, agent.card().await);
}

#[test]
fn bad_registries_and_selectors_fail_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let bad = RefAgent::write_registry(
        dir.path(),
        "bad.toml",
        &RefAgent::sample_registry_text().replacen(
            "handler = \"reconcile-invoice\"",
            "handler = \"recon.v3\"",
            1,
        ),
    );
    let out = print_card(&bad, "public");
    assert_eq!(out.status.code(), Some(65));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("manifests[reconcile-invoice].handler"),
        "{err}"
    );

    let out = print_card(&RefAgent::sample_registry(), "extended:nobody");
    assert_eq!(out.status.code(), Some(64));
    let out = print_card(&RefAgent::sample_registry(), "private");
    assert_eq!(out.status.code(), Some(64));

    // the agent refuses to start on an invalid registry, with the same message
    let out = bin()
        .args(["agent", "--listen", "127.0.0.1:0", "--registry"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(65));
    assert!(String::from_utf8_lossy(&out.stderr).contains("recon.v3"));
}
