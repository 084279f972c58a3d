//! The two products agree: both card projections the reference agent prints
//! (`a2a-agent --print-card`) pass the gateway's `a2a-egress validate`. The agent's own
//! command-line tests are in `agent/tests/integration/cli.rs`.

use std::process::{Command, Output};

use crate::common::RefAgent;
use crate::common::ref_agent::agent_bin;
use serde_json::Value;

fn print_card(registry: &std::path::Path, which: &str) -> Output {
    let mut c = Command::new(agent_bin());
    for (k, v) in RefAgent::demo_envs() {
        c.env(k, v);
    }
    c.arg("--registry")
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
        let v = crate::common::gateway_cmd()
            .arg("validate")
            .arg(&file)
            .output()
            .unwrap();
        assert!(
            v.status.success(),
            "{which} card is invalid:\n{}\n{}",
            String::from_utf8_lossy(&v.stdout),
            String::from_utf8_lossy(&v.stderr)
        );
        assert!(String::from_utf8_lossy(&v.stdout).starts_with("valid sha256:"));
    }
}
