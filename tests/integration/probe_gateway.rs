//! The gateway's own probe runs against the bundled reference agent: a card change judged
//! `review` against the lockfile is probed within one refresh, by the running gateway (not the
//! CLI), the run is stored as evidence (`/readyz`: `probes`, `claims`) and counted, its message
//! probes reach only the probe skill, and a card that claims streaming but refuses it is shown
//! as contradicted; calls on the data plane that contradict the card (a refused stream, a
//! refused version, with the official Python SDK agent) are shown as contradicted at runtime
//! (process and loopback I/O).

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use a2a_egress::testkit::{ConfigToml, IntegrationToml};

use crate::common::gateway::{InProcess, config_head, integration, metric, send_request};
use crate::common::{RefAgent, SdkAgent};

const TRACE: &str = "https://example.com/ext/trace/v1";
const VERSION: &str = "version = \"1.4.0\"";

fn config(agent: &RefAgent) -> String {
    let finance = IntegrationToml::new("finance", &agent.card_url)
        .origins(&[&agent.base_url])
        .extra(&format!("extensions = [\"{TRACE}\"]"))
        .extra("[integrations.probe]\nskill = \"echo\"")
        .extra("[admin]\nrefresh_min_interval = \"0s\"")
        .extra("[probes]\nmin_interval = \"0s\"\nspacing = \"0s\"");
    ConfigToml::new(&[TRACE]).integration(finance).text()
}

/// The agent on a registry copy it re-reads on SIGHUP.
fn agent(dir: &Path, edit: impl Fn(String) -> String) -> (RefAgent, std::path::PathBuf) {
    let text = edit(RefAgent::sample_registry_text());
    assert!(text.contains(VERSION), "sample registry changed shape");
    let path = RefAgent::write_registry(dir, "registry.toml", &text);
    let agent =
        RefAgent::start_with_args(&path, &RefAgent::demo_envs(), &["--watch-interval-ms", "0"]);
    (agent, path)
}

fn pin(dir: &Path, config: &str) {
    let path = dir.join("gateway.toml");
    std::fs::write(&path, config).unwrap();
    let out = crate::common::gateway_cmd()
        .args(["lock", "finance", "--config"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "lock: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

async fn refresh(gw: &InProcess) {
    let resp = crate::common::http()
        .post(gw.admin_url("/v1/integrations/finance/refresh"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
}

async fn review_runs(gw: &InProcess) -> f64 {
    metric(
        &gw.metrics().await,
        "a2a_egress_probe_runs_total",
        &[("integration", "finance"), ("trigger", "review")],
    )
}

/// Tasks the agent holds, straight from it (each probe message makes one).
async fn tasks(agent: &RefAgent) -> Vec<Value> {
    let resp = crate::common::http()
        .post(agent.jsonrpc_url())
        .header("a2a-version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}}))
        .send()
        .await
        .unwrap();
    let v: Value = resp.json().await.unwrap();
    v["result"]["tasks"].as_array().cloned().unwrap_or_default()
}

/// The claim `name` of `finance` on `/readyz`.
fn claim<'a>(ready: &'a Value, name: &str) -> &'a Value {
    ready["integrations"]["finance"]["claims"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["claim"] == name))
        .unwrap_or_else(|| panic!("no claim {name}: {ready}"))
}

/// Waits (bounded) until the gateway has run probes after a review.
async fn probed_after_review(gw: &InProcess) -> Value {
    let mut ready: Value;
    crate::assert_eventually!(
        {
            ready = gw.readyz().await;
            ready["integrations"]["finance"]["probes"]["trigger"] == "review"
        },
        within = Duration::from_secs(30),
        "no probe run after the review verdict: {ready}"
    );
    ready
}

#[tokio::test]
async fn a_review_change_is_probed_by_the_gateway_and_stored_as_evidence() {
    let tmp = tempfile::tempdir().unwrap();
    let (agent, registry) = agent(tmp.path(), |t| t);
    let cfg = config(&agent);
    let dir = tempfile::tempdir().unwrap();
    pin(dir.path(), &cfg);
    let gw = InProcess::start_in(dir, &cfg).await;
    let ready = gw.readyz().await;
    assert_eq!(
        ready["integrations"]["finance"]["lock"]["verdict"], "compatible",
        "{ready}"
    );
    assert!(
        ready["integrations"]["finance"]["probes"].is_null(),
        "no run yet: {ready}"
    );
    assert_eq!(claim(&ready, "streaming")["source"], "declared", "{ready}");
    let before = tasks(&agent).await.len();

    // The agent's version changes: review. One refresh, then the gateway probes by itself.
    let text = std::fs::read_to_string(&registry)
        .unwrap()
        .replace(VERSION, "version = \"1.5.0\"");
    std::fs::write(&registry, text).unwrap();
    agent.sighup();
    agent
        .wait_for_card(|c| {
            c["version"]
                .as_str()
                .is_some_and(|v| v.starts_with("1.5.0"))
        })
        .await;
    refresh(&gw).await;
    let ready = probed_after_review(&gw).await;
    assert_eq!(
        ready["integrations"]["finance"]["lock"]["verdict"], "review",
        "{ready}"
    );
    let results = ready["integrations"]["finance"]["probes"]["results"]
        .as_array()
        .unwrap()
        .clone();
    let claims: Vec<&str> = results.iter().filter_map(|r| r["claim"].as_str()).collect();
    assert!(
        claims.contains(&"interface") && claims.contains(&"streaming"),
        "{results:?}"
    );
    assert!(results.iter().all(|r| r["result"] == "ok"), "{results:?}");
    assert_eq!(claim(&ready, "streaming")["source"], "verified", "{ready}");
    assert_eq!(claim(&ready, "interface")["source"], "verified", "{ready}");
    assert_eq!(review_runs(&gw).await, 1.0);
    assert_eq!(
        metric(
            &gw.metrics().await,
            "a2a_egress_probe_results_total",
            &[
                ("integration", "finance"),
                ("check", "streaming"),
                ("result", "ok")
            ],
        ),
        1.0
    );
    // Its message probes went to the probe skill only.
    let made = tasks(&agent).await;
    assert!(made.len() > before, "the probe skill was probed");
    for t in &made[before..] {
        assert_eq!(t["metadata"][TRACE]["skill"], "echo", "{t}");
    }

    // The same verdict again is not probed again: proven on paused time, where the runner's
    // polls can be let pass, by `src/probe/runner.rs::the_runner_probes_on_schedule_and_after_a_review_and_stores_the_evidence`.
    // Here: the refresh itself runs no probe.
    refresh(&gw).await;
    assert_eq!(review_runs(&gw).await, 1.0);
}

#[tokio::test]
async fn a_card_that_claims_streaming_but_refuses_it_is_shown_contradicted_by_the_probe() {
    let tmp = tempfile::tempdir().unwrap();
    let (agent, registry) = agent(tmp.path(), |t| t);
    let cfg = config(&agent);
    let dir = tempfile::tempdir().unwrap();
    pin(dir.path(), &cfg);
    let gw = InProcess::start_in(dir, &cfg).await;

    // A redeploy: a new version (review), and streaming still claimed but refused.
    let text = std::fs::read_to_string(&registry)
        .unwrap()
        .replace(VERSION, "version = \"1.5.0\"")
        .replace("refuse_streaming = false", "refuse_streaming = true");
    std::fs::write(&registry, text).unwrap();
    agent.sighup();
    agent
        .wait_for_card(|c| {
            c["version"]
                .as_str()
                .is_some_and(|v| v.starts_with("1.5.0"))
        })
        .await;
    refresh(&gw).await;
    let ready = probed_after_review(&gw).await;
    let streaming = claim(&ready, "streaming");
    assert_eq!(streaming["declared"], "true", "{streaming}");
    assert_eq!(streaming["source"], "contradicted", "{streaming}");
    assert_eq!(streaming["by"], "probe", "{streaming}");
    assert_eq!(
        metric(
            &gw.metrics().await,
            "a2a_egress_probe_failed_claims",
            &[("integration", "finance")],
        ),
        1.0
    );
}

/// The claim `name` of integration `i` on `/readyz`.
fn claim_of<'a>(ready: &'a Value, i: &str, name: &str) -> &'a Value {
    ready["integrations"][i]["claims"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["claim"] == name))
        .unwrap_or_else(|| panic!("no claim {name}: {ready}"))
}

#[tokio::test]
async fn calls_that_contradict_the_card_are_shown_as_contradicted_at_runtime() {
    let liar = SdkAgent::start(&["--refuse-streaming"]);
    let picky = SdkAgent::start(&["--version-only", "9.9"]);
    let config = config_head(&[])
        + &integration("liar", &liar.card_url, "")
        + &integration("picky", &picky.card_url, "");
    let gw = InProcess::start(&config).await;
    let ready = gw.readyz().await;
    assert_eq!(claim_of(&ready, "liar", "streaming")["source"], "declared");
    assert_eq!(claim_of(&ready, "picky", "interface")["source"], "declared");

    let (status, _, _) = gw
        .rpc_raw(
            "liar",
            &send_request("r", "SendStreamingMessage", "hi"),
            &[],
        )
        .await;
    assert_eq!(status, 200);
    let (_, body) = gw
        .rpc("picky", &send_request("v", "SendMessage", "hi"), &[])
        .await;
    assert_eq!(body["error"]["code"], -32009, "{body}");

    let ready = gw.readyz().await;
    let streaming = claim_of(&ready, "liar", "streaming");
    assert_eq!(streaming["source"], "contradicted", "{streaming}");
    assert_eq!(streaming["by"], "runtime", "{streaming}");
    let interface = claim_of(&ready, "picky", "interface");
    assert_eq!(interface["source"], "contradicted", "{interface}");
    assert_eq!(interface["by"], "runtime", "{interface}");
    let evidence = ready["integrations"]["picky"]["evidence"].to_string();
    assert!(evidence.contains("VERSION_NOT_SUPPORTED"), "{evidence}");
}
