//! `a2a-egress probe` and `lock` against a real A2A 0.3 agent (the official Python `a2a-sdk`
//! 0.3.26, `tests/peers/sdk_agent_v03.py`, JSON-RPC; and both official 0.3 SDKs' agents on
//! HTTP+JSON): each probe goes out as the translated 0.3
//! call and its answer is judged as its 1.0 translation, so a claim the agent serves passes, one
//! it refuses fails with the reason, and the claims 0.3 cannot answer (`version`) are reported
//! as not probed, never as failed (issue 20, item 4; process and loopback I/O).

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

use a2a_egress::testkit::{ConfigToml, IntegrationToml};

use crate::common::SdkAgent;
use crate::common::gateway::{InProcess, metric};

/// A config in `dir` whose client may speak 0.3, with integration `v03` on `agent` and its
/// probe skill `echo` (the agent's one skill).
fn config(dir: &Path, agent: &SdkAgent) -> PathBuf {
    let path = dir.join("gateway.toml");
    std::fs::write(&path, config_text(agent, "")).unwrap();
    path
}

/// The config's text, with `head` lines added after the test head.
fn config_text(agent: &SdkAgent, head: &str) -> String {
    let text = ConfigToml::new(&[]).head(head).text();
    assert!(
        text.contains("versions = [\"1.0\"]"),
        "test head changed shape"
    );
    text.replace("versions = [\"1.0\"]", "versions = [\"1.0\", \"0.3\"]")
        + &IntegrationToml::new("v03", &agent.card_url)
            .extra("[integrations.probe]\nskill = \"echo\"")
            .text()
}

fn a2a_egress(args: &[&str], config: &Path) -> Output {
    crate::common::gateway_cmd()
        .args(args)
        .arg("--config")
        .arg(config)
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// What 0.3 gives no meaning is reported, with why, and fails nothing.
const VERSION_NOT_PROBED: &str = "version: inconclusive (not probed: version has no meaning in A2A 0.3: 0.3 has no A2A-Version header and no VersionNotSupportedError (-32009 is new in 1.0))\n";

#[tokio::test]
async fn a_0_3_agent_passes_the_probes_of_what_it_serves_and_the_lock_records_them() {
    let agent = SdkAgent::start_v03(&[]);
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), &agent);
    let out = a2a_egress(&["probe", "v03"], &cfg);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{stdout}");
    // tasks/get of an unknown id: 0.3's -32001, read as 1.0's TaskNotFoundError.
    assert_eq!(
        lines[0], "interface: ok (answered with error TASK_NOT_FOUND)",
        "{stdout}"
    );
    assert_eq!(format!("{}\n", lines[1]), VERSION_NOT_PROBED, "{stdout}");
    // message/stream to the probe skill: 0.3 events, translated, are a 1.0 event stream.
    assert!(lines[2].starts_with("streaming: ok (streamed "), "{stdout}");
    assert_eq!(
        lines[3], "input:text/plain: ok (a text/plain part was accepted)",
        "{stdout}"
    );

    // `lock` pins the evidence of the claims that held, and only those.
    let out = a2a_egress(&["lock", "v03"], &cfg);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("v03: note: probe version: inconclusive"),
        "{}",
        text(&out)
    );
    let lock: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("locks/v03.json")).unwrap()).unwrap();
    for claim in ["interface", "streaming", "input:text/plain"] {
        let v = lock["verified"][claim].as_str().unwrap_or_default();
        assert!(v.starts_with("probe ok 20"), "{claim}: {lock}");
    }
    assert!(lock["verified"].get("version").is_none(), "{lock}");
}

/// The card claims streaming; the SDK's handler refuses `message/stream` (-32603 "Streaming is
/// not supported by the agent", Python 0.3.26's refusal): the probe says the claim is false.
#[tokio::test]
async fn a_0_3_agent_that_refuses_the_stream_its_card_claims_fails_the_streaming_probe() {
    let agent = SdkAgent::start_v03(&["--refuse-streams"]);
    assert_eq!(
        agent.card().await["capabilities"]["streaming"],
        true,
        "the served card claims streaming"
    );
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), &agent);
    let out = a2a_egress(&["probe", "v03"], &cfg);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        stdout.contains(
            "streaming: failed (the card claims streaming, but SendStreamingMessage was refused with UnsupportedOperationError)\n"
        ),
        "{stdout}"
    );
    // The other claims still hold, and the not-probed one is still no failure.
    assert!(
        stdout.starts_with("interface: ok (answered with error TASK_NOT_FOUND)\n"),
        "{stdout}"
    );
    assert!(stdout.contains(VERSION_NOT_PROBED), "{stdout}");
    assert!(
        stdout.contains("input:text/plain: ok (a text/plain part was accepted)\n"),
        "{stdout}"
    );
    // Nothing is pinned against a card that misstates itself.
    let out = a2a_egress(&["lock", "v03"], &cfg);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("v03: probe failed: streaming: failed"),
        "{}",
        text(&out)
    );
    assert!(!dir.path().join("locks/v03.json").exists());
}

/// The gateway's own scheduled run (the first comes within a tenth of `[probes] every` after
/// start) probes the 0.3 integration the same way: `/readyz` shows the refused stream as a
/// claim contradicted by the probe, with the reason, and the not-probed claim as inconclusive.
#[tokio::test]
async fn the_gateways_scheduled_run_shows_a_0_3_agents_refused_stream_in_readyz() {
    let agent = SdkAgent::start_v03(&["--refuse-streams"]);
    let head = "[probes]\nevery = \"1m\"\nmin_interval = \"0s\"\nspacing = \"0s\"";
    let gw = InProcess::start(&config_text(&agent, head)).await;
    let mut ready: Value;
    crate::assert_eventually!(
        {
            ready = gw.readyz().await;
            ready["integrations"]["v03"]["probes"]["trigger"] == "scheduled"
        },
        within = std::time::Duration::from_secs(30),
        "no scheduled probe run: {ready}"
    );
    let v03 = &ready["integrations"]["v03"];
    let result = |claim: &str| {
        v03["probes"]["results"]
            .as_array()
            .and_then(|r| r.iter().find(|r| r["claim"] == claim))
            .cloned()
            .unwrap_or_else(|| panic!("no result for {claim}: {v03}"))
    };
    assert_eq!(result("interface")["result"], "ok", "{v03}");
    let streaming = result("streaming");
    assert_eq!(streaming["result"], "failed", "{streaming}");
    assert_eq!(
        streaming["detail"],
        "the card claims streaming, but SendStreamingMessage was refused with UnsupportedOperationError"
    );
    let version = result("version");
    assert_eq!(version["result"], "inconclusive", "{version}");
    assert!(
        version["detail"]
            .as_str()
            .is_some_and(|d| d.starts_with("not probed: version has no meaning in A2A 0.3")),
        "{version}"
    );
    let claim = v03["claims"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["claim"] == "streaming"))
        .unwrap_or_else(|| panic!("no streaming claim: {v03}"));
    assert_eq!(claim["source"], "contradicted", "{claim}");
    assert_eq!(claim["by"], "probe", "{claim}");
    assert_eq!(
        metric(
            &gw.metrics().await,
            "a2a_egress_probe_failed_claims",
            &[("integration", "v03")],
        ),
        1.0
    );
}

/// The same probes of a 0.3 agent on HTTP+JSON (both official 0.3 SDKs), sent as the data plane
/// sends its calls (0.3's `/v1` routes and body) and judged as their 1.0 translation: Python's
/// bare `404 {"message"}` for the unknown task is read as TaskNotFoundError too.
#[tokio::test]
async fn a_0_3_http_json_agent_passes_the_same_probes() {
    for agent in [
        SdkAgent::start_v03(&["--transport", "rest"]),
        SdkAgent::start_js03(&["--transport", "rest"]),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let cfg = config(dir.path(), &agent);
        let out = a2a_egress(&["probe", "v03"], &cfg);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let lines: Vec<&str> = stdout.lines().collect();
        assert_eq!(lines.len(), 4, "{stdout}");
        assert_eq!(
            lines[0], "interface: ok (answered with error TASK_NOT_FOUND)",
            "{stdout}"
        );
        assert_eq!(format!("{}\n", lines[1]), VERSION_NOT_PROBED, "{stdout}");
        assert!(lines[2].starts_with("streaming: ok (streamed "), "{stdout}");
        assert_eq!(
            lines[3], "input:text/plain: ok (a text/plain part was accepted)",
            "{stdout}"
        );
    }
}
