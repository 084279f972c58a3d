//! `a2a-agent --print-card` prints the card it serves, and the command line fails clearly (exit 65
//! with the registry field, 64 for a bad selector) on bad registries and selectors, whether it
//! prints or serves. That both printed projections pass the gateway's `a2a-egress validate` is
//! checked in the gateway's suite (`tests/integration/agent_cards_validate.rs`).

use std::process::{Command, Output};

use crate::common::RefAgent;
use serde_json::Value;

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_a2a-agent"));
    for (k, v) in RefAgent::demo_envs() {
        c.env(k, v);
    }
    c
}

fn print_card(registry: &std::path::Path, which: &str) -> Output {
    bin()
        .arg("--registry")
        .arg(registry)
        .args(["--print-card", which])
        .output()
        .unwrap()
}

#[tokio::test]
async fn printed_public_card_is_the_served_one() {
    let agent = RefAgent::sample();
    let out = bin()
        .arg("--registry")
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
        .args(["--listen", "127.0.0.1:0", "--registry"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(65));
    assert!(String::from_utf8_lossy(&out.stderr).contains("recon.v3"));
}
