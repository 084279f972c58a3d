//! `a2a-egress probe` (and the probes `lock` runs) against the bundled reference agent, honest and
//! misbehaving: a card that claims streaming but refuses it, a required extension that is not
//! enforced, and no probe message ever reaching a skill the integration did not name as safe
//! (process and loopback I/O).

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};

use crate::common::{self, RefAgent, ref_agent::PARTNER_TOKEN};

const TRACE: &str = "https://example.com/ext/trace/v1";
/// The sample config pointed at `agent`; `probe_skill`: keep its `[integrations.probe]` table
/// (skill `echo`), else cut it so only side-effect-free probes run.
fn config(dir: &Path, agent: &RefAgent, probe_skill: bool) -> PathBuf {
    let text = std::fs::read_to_string(common::repo_root().join("config/gateway.toml")).unwrap();
    let (head, table) = text
        .split_once("\n[integrations.probe]\n")
        .expect("the sample config names a probe skill, last");
    assert!(table.starts_with("skill = \"echo\""), "{table}");
    let text = if probe_skill {
        text.clone()
    } else {
        head.to_owned() + "\n"
    };
    let path = dir.join("gateway.toml");
    std::fs::write(
        &path,
        text.replace("127.0.0.1:7400", &agent.addr.to_string()),
    )
    .unwrap();
    path
}

fn a2a_egress(args: &[&str], config: &Path) -> Output {
    crate::common::gateway_cmd()
        .args(args)
        .arg("--config")
        .arg(config)
        .env("A2A_EGRESS_FINANCE_TOKEN", PARTNER_TOKEN)
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// An agent on a copy of the sample registry with `edit` applied.
fn agent_with(dir: &Path, edit: impl Fn(String) -> String) -> RefAgent {
    let text = edit(RefAgent::sample_registry_text());
    let path = RefAgent::write_registry(dir, "registry.toml", &text);
    RefAgent::start(&path, &RefAgent::demo_envs())
}

/// The partner's tasks on the agent, straight from it (not through the gateway).
async fn tasks(agent: &RefAgent) -> Vec<Value> {
    let resp = common::http()
        .post(agent.jsonrpc_url())
        .header("a2a-version", "1.0")
        .header("authorization", format!("Bearer {PARTNER_TOKEN}"))
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}}))
        .send()
        .await
        .unwrap();
    let v: Value = resp.json().await.unwrap();
    v["result"]["tasks"]
        .as_array()
        .unwrap_or_else(|| panic!("ListTasks: {v}"))
        .clone()
}

#[tokio::test]
async fn an_honest_agent_passes_every_probe_and_they_reach_only_the_probe_skill() {
    let agent = RefAgent::sample();
    let dir = tempfile::tempdir().unwrap();
    // Side-effect-free probes only: no task is created on the agent.
    let cfg = config(dir.path(), &agent, false);
    let out = a2a_egress(&["probe", "finance"], &cfg);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert_eq!(
        stdout(&out),
        "interface: ok (answered with error TASK_NOT_FOUND)\n\
         version: ok (A2A-Version 0.3 refused with VersionNotSupportedError)\n"
    );
    assert!(
        tasks(&agent).await.is_empty(),
        "a side-effect-free probe created a task"
    );

    // With a probe skill: streaming and each media type the workflow sends, to that skill only.
    let cfg = config(dir.path(), &agent, true);
    let out = a2a_egress(&["probe", "finance"], &cfg);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let text = stdout(&out);
    assert!(text.contains("streaming: ok (streamed "), "{text}");
    assert!(
        text.contains("input:text/plain: ok (a text/plain part was accepted)"),
        "{text}"
    );
    let made = tasks(&agent).await;
    assert_eq!(
        made.len(),
        2,
        "one streaming and one media-type probe: {made:#?}"
    );
    for t in &made {
        // The trace extension (activated by the integration) names the skill that ran.
        assert_eq!(t["metadata"][TRACE]["skill"], "echo", "{t}");
    }

    // `lock` records the evidence in `verified`.
    let out = a2a_egress(&["lock", "finance"], &cfg);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lock: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("locks/finance.json")).unwrap())
            .unwrap();
    for claim in ["interface", "version", "streaming", "input:text/plain"] {
        let v = lock["verified"][claim].as_str().unwrap_or_default();
        assert!(v.starts_with("probe ok 20"), "{claim}: {lock}");
    }
}

#[tokio::test]
async fn probes_detect_a_card_that_claims_streaming_but_refuses_it() {
    let tmp = tempfile::tempdir().unwrap();
    let agent = agent_with(tmp.path(), |t| {
        t.replace("refuse_streaming = false", "refuse_streaming = true")
    });
    let cfg = config(tmp.path(), &agent, true);
    let out = a2a_egress(&["probe", "finance"], &cfg);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        stdout(&out).contains(
            "streaming: failed (the card claims streaming, but SendStreamingMessage was refused with UnsupportedOperationError)\n"
        ),
        "{}",
        stdout(&out)
    );
    // Nothing is pinned against a card that misstates itself.
    let out = a2a_egress(&["lock", "finance"], &cfg);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("finance: probe failed: streaming: failed"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!tmp.path().join("locks/finance.json").exists());
}

#[tokio::test]
async fn probes_detect_a_required_extension_that_is_not_enforced() {
    let required = |t: String| {
        t.replace(
            &format!("uri = \"{TRACE}\"\ndescription = \"When activated, the task's metadata carries the router's explanation under this URI.\"\nrequired = false"),
            &format!("uri = \"{TRACE}\"\ndescription = \"When activated, the task's metadata carries the router's explanation under this URI.\"\nrequired = true"),
        )
    };
    let tmp = tempfile::tempdir().unwrap();
    let enforced = agent_with(tmp.path(), required);
    assert!(
        enforced.card().await["capabilities"]["extensions"][0]["required"] == true,
        "the registry edit did not apply"
    );
    let cfg = config(tmp.path(), &enforced, false);
    let out = a2a_egress(&["probe", "finance"], &cfg);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(
        stdout(&out).contains(&format!(
            "extension:{TRACE}: ok (a call without {TRACE} was refused with ExtensionSupportRequiredError)"
        )),
        "{}",
        stdout(&out)
    );

    let tmp = tempfile::tempdir().unwrap();
    let lax = agent_with(tmp.path(), |t| {
        required(t).replace(
            "ignore_required_extensions = false",
            "ignore_required_extensions = true",
        )
    });
    let cfg = config(tmp.path(), &lax, false);
    let out = a2a_egress(&["probe", "finance"], &cfg);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        stdout(&out).contains(&format!(
            "extension:{TRACE}: failed (declared required, but a call without {TRACE} was answered with error TASK_NOT_FOUND)"
        )),
        "{}",
        stdout(&out)
    );
}
