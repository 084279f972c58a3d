//! The lockfile at runtime, against the bundled reference agent: a breaking change in the agent's
//! registry (a temp copy edited, then SIGHUP) blocks new sends after one refresh while running
//! tasks can still be read, and with `on_breaking = "fallback:<name>"` the fallback integration
//! takes the new sends, and the verdict is logged once per change, not once per refresh (process
//! and loopback I/O).

use std::path::Path;

use serde_json::{Value, json};

use a2a_egress::testkit::IntegrationToml;

use crate::common::RefAgent;
use crate::common::gateway::{GatewayProc, InProcess, config_head, metric, send_request};

const ECHO_OUTPUT: &str =
    "output_modes = [\"text/plain\"]\n\n[[manifests]]\nid = \"lookup-invoice\"";

fn integration(name: &str, agent: &RefAgent, extra: &str) -> String {
    IntegrationToml::new(name, &agent.card_url)
        .origins(&[&agent.base_url])
        .extra(extra)
        .text()
}

/// A registry copy whose `echo` skill can be broken later, and its agent (reloads on SIGHUP only).
fn breakable_agent(dir: &Path) -> (RefAgent, std::path::PathBuf) {
    let text = RefAgent::sample_registry_text();
    assert!(text.contains(ECHO_OUTPUT), "sample registry changed shape");
    let path = RefAgent::write_registry(dir, "registry.toml", &text);
    let agent =
        RefAgent::start_with_args(&path, &RefAgent::demo_envs(), &["--watch-interval-ms", "0"]);
    (agent, path)
}

/// `echo` answers Markdown only: the pinned `text/plain` output is gone.
async fn break_echo(agent: &RefAgent, registry: &Path) {
    let text = std::fs::read_to_string(registry).unwrap().replace(
        ECHO_OUTPUT,
        &ECHO_OUTPUT.replace("text/plain", "text/markdown"),
    );
    std::fs::write(registry, text).unwrap();
    agent.sighup();
    agent
        .wait_for_card(|c| {
            c["skills"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|s| s["id"] == "echo" && s["outputModes"] == json!(["text/markdown"]))
        })
        .await;
}

/// Writes `config` into `dir` and pins `name` with the real `a2a-egress lock`.
fn pin(dir: &Path, config: &str, name: &str) {
    let path = dir.join("gateway.toml");
    std::fs::write(&path, config).unwrap();
    let out = crate::common::gateway_cmd()
        .args(["lock", name, "--config"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "lock {name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

async fn refresh(gw: &InProcess, name: &str) -> Value {
    let resp = crate::common::http()
        .post(gw.admin_url(&format!("/v1/integrations/{name}/refresh")))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    resp.json().await.unwrap()
}

fn task_id(body: &Value) -> String {
    body["result"]["task"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no task in {body}"))
        .to_owned()
}

fn get_task(id: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": "g", "method": "GetTask", "params": {"id": id}})
}

async fn verdict_metric(gw: &InProcess, name: &str, verdict: &str) -> f64 {
    metric(
        &gw.metrics().await,
        "a2a_egress_lock_verdict",
        &[("integration", name), ("verdict", verdict)],
    )
}

#[tokio::test]
async fn a_breaking_registry_change_blocks_new_sends_within_one_refresh() {
    let tmp = tempfile::tempdir().unwrap();
    let (agent, registry) = breakable_agent(tmp.path());
    // Two forced refreshes in a row: no admin rate limit.
    let config = config_head(&[])
        + &integration("finance", &agent, "")
        + "\n[admin]\nrefresh_min_interval = \"0s\"\n";
    let dir = tempfile::tempdir().unwrap();
    pin(dir.path(), &config, "finance");
    let gw = InProcess::start_in(dir, &config).await;

    let ready = gw.readyz().await;
    assert_eq!(
        ready["integrations"]["finance"]["lock"]["verdict"], "compatible",
        "{ready}"
    );
    assert_eq!(verdict_metric(&gw, "finance", "compatible").await, 1.0);
    let (status, body) = gw
        .rpc(
            "finance",
            &send_request("s1", "SendMessage", "echo before"),
            &[],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let running = task_id(&body);

    break_echo(&agent, &registry).await;
    let report = refresh(&gw, "finance").await;
    assert_eq!(report["result"], "changed", "{report}");

    let ready = gw.readyz().await;
    let finance = &ready["integrations"]["finance"];
    assert_eq!(finance["status"], "blocked", "{ready}");
    assert_eq!(finance["lock"]["verdict"], "breaking", "{ready}");
    let findings = finance["lock"]["findings"].to_string();
    assert!(
        findings.contains("breaking: skills.echo.output: [text/plain] -> [text/markdown] (none of the workflow's output modes is offered)"),
        "{findings}"
    );
    assert_eq!(verdict_metric(&gw, "finance", "breaking").await, 1.0);
    assert_eq!(verdict_metric(&gw, "finance", "compatible").await, 0.0);

    let (_, body) = gw
        .rpc(
            "finance",
            &send_request("s2", "SendMessage", "echo after"),
            &[],
        )
        .await;
    assert!(body.to_string().contains("INTEGRATION_BLOCKED"), "{body}");
    let (status, body) = gw
        .rpc(
            "finance",
            &send_request("s3", "SendStreamingMessage", "echo after"),
            &[],
        )
        .await;
    assert!(
        body.to_string().contains("INTEGRATION_BLOCKED"),
        "{status} {body}"
    );
    // The task that ran before the change can still be read.
    let (status, body) = gw.rpc("finance", &get_task(&running), &[]).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["id"], running.as_str(), "{body}");

    // Re-pinned to what the agent now offers: the next refresh (a 304: the card did not change)
    // judges the new lockfile and new sends flow again.
    pin(gw.dir.path(), &config, "finance");
    let report = refresh(&gw, "finance").await;
    let ready = gw.readyz().await;
    let finance = &ready["integrations"]["finance"];
    assert_eq!(finance["status"], "usable", "{report} {ready}");
    assert_eq!(finance["lock"]["verdict"], "compatible", "{ready}");
    let (status, body) = gw
        .rpc(
            "finance",
            &send_request("s4", "SendMessage", "echo re-pinned"),
            &[],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert!(body["result"]["task"]["id"].is_string(), "{body}");
}

#[tokio::test]
async fn a_fallback_integration_takes_new_sends_while_it_satisfies_the_lock() {
    let tmp = tempfile::tempdir().unwrap();
    let (agent, registry) = breakable_agent(tmp.path());
    let spare = RefAgent::sample();
    let config = config_head(&[])
        + &integration("finance", &agent, "on_breaking = \"fallback:spare\"")
        + &integration("spare", &spare, "");
    let dir = tempfile::tempdir().unwrap();
    pin(dir.path(), &config, "finance");
    let gw = InProcess::start_in(dir, &config).await;

    break_echo(&agent, &registry).await;
    refresh(&gw, "finance").await;
    let ready = gw.readyz().await;
    let finance = &ready["integrations"]["finance"];
    assert_eq!(finance["status"], "usable", "{ready}");
    assert_eq!(finance["lock"]["verdict"], "breaking", "{ready}");
    assert_eq!(finance["lock"]["fallback"], "spare", "{ready}");

    let (status, body) = gw
        .rpc(
            "finance",
            &send_request("f1", "SendMessage", "echo via fallback"),
            &[],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert!(body.to_string().contains("via fallback"), "{body}");
    let id = task_id(&body);
    // The spare agent holds the task; the broken one never saw it.
    let (status, body) = gw.rpc("spare", &get_task(&id), &[]).await;
    assert_eq!((status, &body["result"]["id"]), (200, &json!(id)), "{body}");
    let (_, body) = gw.rpc("finance", &get_task(&id), &[]).await;
    assert!(
        body.get("error").is_some(),
        "the broken agent does not know the task: {body}"
    );
}

/// Replaces `from` by `to` in the agent's registry, reloads it and waits until its card says
/// `description` (a change of the card's description tells that the reload took).
async fn edit_registry(agent: &RefAgent, registry: &Path, from: &str, to: &str, description: &str) {
    let text = std::fs::read_to_string(registry).unwrap();
    assert!(text.contains(from), "registry lacks {from:?}");
    let text: Vec<String> = text
        .replace(from, to)
        .lines()
        .map(|l| {
            if l.starts_with("description = ") && l.contains("reference agent of a2a-egress") {
                format!("description = \"{description}: the reference agent of a2a-egress\"")
            } else {
                l.to_owned()
            }
        })
        .collect();
    let text = text.join("\n") + "\n";
    std::fs::write(registry, text).unwrap();
    agent.sighup();
    agent
        .wait_for_card(|c| {
            c["description"]
                .as_str()
                .is_some_and(|d| d.starts_with(description))
        })
        .await;
}

/// The lockfile verdict lines the gateway logged (JSON) for `name`, in order.
fn verdict_lines(gw: &GatewayProc, name: &str) -> Vec<String> {
    let (lines, dropped) = gw.process.stderr_all();
    assert_eq!(dropped, 0);
    lines
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| {
            v["integration"] == name
                && v["message"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("lockfile"))
        })
        .map(|v| v["verdict"].as_str().unwrap_or("?").to_owned())
        .collect()
}

/// Waits until the verdict lines logged for `name` are exactly `expected`. Lines reach stderr
/// through the gateway's log queue a little after the event, in order: so once a later verdict
/// shows up, any extra line logged before it would already be there (and the wait would fail).
async fn assert_verdicts(gw: &GatewayProc, name: &str, expected: &[&str]) {
    let mut seen: Vec<String>;
    crate::assert_eventually!(
        {
            seen = verdict_lines(gw, name);
            seen == expected
        },
        "verdict lines for {name}: {seen:?}, want {expected:?}"
    );
}

async fn admin_refresh(gw: &GatewayProc, name: &str) -> Value {
    let resp = crate::common::http()
        .post(gw.admin_url(&format!("/v1/integrations/{name}/refresh")))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    resp.json().await.unwrap()
}

#[tokio::test]
async fn the_verdict_is_logged_once_per_change_not_once_per_refresh() {
    let tmp = tempfile::tempdir().unwrap();
    let (agent, registry) = breakable_agent(tmp.path());
    let config = config_head(&[])
        + "[log]\nformat = \"json\"\n"
        + &integration("finance", &agent, "")
        + "\n[admin]\nrefresh_min_interval = \"0s\"\n";
    let dir = tempfile::tempdir().unwrap();
    pin(dir.path(), &config, "finance");
    let gw = GatewayProc::start_in(dir, &config, &[]).await;
    assert_verdicts(&gw, "finance", &["compatible"]).await;

    let broken = ECHO_OUTPUT.replace("text/plain", "text/markdown");
    edit_registry(&agent, &registry, ECHO_OUTPUT, &broken, "Broken").await;
    assert_eq!(admin_refresh(&gw, "finance").await["result"], "changed");
    // The same verdict on every later refresh: two new cards (only the agent's description
    // differs, so each is rebuilt and judged again) and an unchanged one.
    for description in ["Still broken", "Broken still"] {
        edit_registry(&agent, &registry, &broken, &broken, description).await;
        assert_eq!(admin_refresh(&gw, "finance").await["result"], "unchanged");
    }
    admin_refresh(&gw, "finance").await;
    let ready = gw.readyz().await;
    assert_eq!(
        ready["integrations"]["finance"]["lock"]["verdict"], "breaking",
        "{ready}"
    );
    assert_verdicts(&gw, "finance", &["compatible", "breaking"]).await;

    edit_registry(&agent, &registry, &broken, ECHO_OUTPUT, "Mended").await;
    assert_eq!(admin_refresh(&gw, "finance").await["result"], "changed");
    admin_refresh(&gw, "finance").await;
    // The last line is the barrier: a repeated "breaking" would sit before it.
    assert_verdicts(&gw, "finance", &["compatible", "breaking", "compatible"]).await;
}

/// A credential file that disappears (a Secret not mounted after a restart, a rotation gone
/// wrong) is reason `CREDENTIAL_MISSING`, not a card change: `/readyz` shows the integration
/// unusable with that reason, the lock verdict stays `compatible` (it is not judged: nothing about
/// the agent was learnt, where it used to turn `breaking` with `usable: true -> false`), and
/// `a2a_egress_credential_missing` is 1 until the file is back.
#[tokio::test]
async fn a_missing_credential_file_is_credential_missing_and_leaves_the_lock_verdict() {
    let (gw, _agent, token) = pinned_with_credential("", true).await;
    assert_eq!(credential_missing_gauge(&gw.metrics().await), 0.0);

    std::fs::remove_file(&token).unwrap();
    refresh(&gw, "finance").await;
    assert_credential_missing(&gw, "compatible").await;
    assert_eq!(verdict_metric(&gw, "finance", "breaking").await, 0.0);
    let (_, body) = gw
        .rpc("finance", &send_request("c1", "SendMessage", "echo"), &[])
        .await;
    assert!(body.to_string().contains("NO_USABLE_PROFILE"), "{body}");

    std::fs::write(&token, crate::common::ref_agent::PARTNER_TOKEN).unwrap();
    refresh(&gw, "finance").await;
    let ready = gw.readyz().await;
    assert_eq!(
        ready["integrations"]["finance"]["status"], "usable",
        "{ready}"
    );
    assert_eq!(credential_missing_gauge(&gw.metrics().await), 0.0);
}

/// `finance` is unusable for its missing credential file (reason, gauge), its lock verdict
/// still `verdict` (in `/readyz` and the metric).
async fn assert_credential_missing(gw: &InProcess, verdict: &str) {
    let ready = gw.readyz().await;
    let finance = &ready["integrations"]["finance"];
    assert_eq!(finance["status"], "unusable", "{ready}");
    let reason = finance["reason"].as_str().unwrap_or_default();
    assert!(
        reason.starts_with("CREDENTIAL_MISSING: cannot read the credential file"),
        "{ready}"
    );
    assert_eq!(finance["lock"]["verdict"], verdict, "{ready}");
    let m = gw.metrics().await;
    assert_eq!(credential_missing_gauge(&m), 1.0, "{m}");
    assert_eq!(verdict_metric(gw, "finance", verdict).await, 1.0);
}

/// A pinned integration whose credential file is at `finance.token` (written for the pin, and
/// still there at the gateway's start when `at_start`), with forced refreshes unlimited and
/// `refresh` appended to the config; the gateway, the agent and the token.
async fn pinned_with_credential(
    refresh: &str,
    at_start: bool,
) -> (InProcess, RefAgent, std::path::PathBuf) {
    let agent = RefAgent::sample();
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("finance.token");
    std::fs::write(&token, crate::common::ref_agent::PARTNER_TOKEN).unwrap();
    let config = config_head(&[])
        + &integration(
            "finance",
            &agent,
            "credential = { type = \"bearer\", file = \"finance.token\" }",
        )
        + "\n[admin]\nrefresh_min_interval = \"0s\"\n"
        + refresh;
    pin(dir.path(), &config, "finance");
    if !at_start {
        std::fs::remove_file(&token).unwrap();
    }
    let gw = InProcess::start_in(dir, &config).await;
    (gw, agent, token)
}

fn credential_missing_gauge(metrics: &str) -> f64 {
    metric(
        metrics,
        "a2a_egress_credential_missing",
        &[("integration", "finance")],
    )
}

/// A missing credential stays the reason while it is missing, whatever the card fetch does: an
/// agent that is down too used to replace it with the fetch's error (no code, the gauge back at
/// 0, the lock verdict reset to `unpinned`), and the credential was only looked at once a card
/// had been fetched.
#[tokio::test]
async fn a_missing_credential_stays_the_reason_when_the_agent_is_down_too() {
    let (gw, agent, token) = pinned_with_credential("", true).await;
    std::fs::remove_file(&token).unwrap();
    refresh(&gw, "finance").await;
    drop(agent);
    let report = refresh(&gw, "finance").await;

    assert_credential_missing(&gw, "compatible").await;
    assert_eq!(verdict_metric(&gw, "finance", "unpinned").await, 0.0);
    // Nothing was fetched, and it is not a failed fetch (that alert is for agents).
    assert_eq!(report["result"], "credential_missing", "{report}");
}

/// A missing credential is retried on the failure backoff, not at the next periodic refresh
/// (an hour here): a credential file that comes back makes the integration usable within the
/// backoff, with no forced refresh. While it is missing, a refresh is not a change (it used to
/// report `changed` and log "profile changed" every time).
#[tokio::test]
async fn a_credential_file_that_comes_back_is_picked_up_within_the_backoff() {
    let refresh_settings = "\n[refresh]\nmin = \"10m\"\ndefault = \"1h\"\n\
                            backoff_initial = \"100ms\"\nbackoff_max = \"300ms\"\n";
    let (gw, _agent, token) = pinned_with_credential(refresh_settings, true).await;
    std::fs::remove_file(&token).unwrap();
    refresh(&gw, "finance").await;
    let again = refresh(&gw, "finance").await;
    let ready = gw.readyz().await;
    assert_eq!(
        ready["integrations"]["finance"]["status"], "unusable",
        "{ready}"
    );

    std::fs::write(&token, crate::common::ref_agent::PARTNER_TOKEN).unwrap();
    let mut ready: Value;
    crate::assert_eventually!(
        {
            ready = gw.readyz().await;
            ready["integrations"]["finance"]["status"] == "usable"
        },
        within = std::time::Duration::from_secs(10),
        "the credential file came back but the integration is still not usable: {ready}"
    );
    assert_eq!(
        ready["integrations"]["finance"]["lock"]["verdict"], "compatible",
        "{ready}"
    );
    assert_eq!(credential_missing_gauge(&gw.metrics().await), 0.0);
    assert_eq!(again["result"], "credential_missing", "{again}");
}

/// A pinned integration whose credential is missing from start was never judged: its verdict is
/// `not_judged` (it showed `unpinned`, a wrong claim about a pinned integration) until the
/// credential is there and the card is judged.
#[tokio::test]
async fn a_pinned_integration_without_its_credential_from_start_is_not_judged() {
    let backoff = "[refresh]\nbackoff_initial = \"100ms\"\nbackoff_max = \"300ms\"\n";
    let (gw, _agent, token) = pinned_with_credential(backoff, false).await;
    let ready = gw.readyz().await;
    let finance = &ready["integrations"]["finance"];
    assert_eq!(finance["lock"]["verdict"], "not_judged", "{ready}");
    assert!(
        (finance["reason"].as_str().unwrap_or_default()).starts_with("CREDENTIAL_MISSING: "),
        "{ready}"
    );
    assert_eq!(verdict_metric(&gw, "finance", "not_judged").await, 1.0);
    assert_eq!(verdict_metric(&gw, "finance", "unpinned").await, 0.0);

    std::fs::write(&token, crate::common::ref_agent::PARTNER_TOKEN).unwrap();
    let mut ready: Value;
    crate::assert_eventually!(
        {
            ready = gw.readyz().await;
            ready["integrations"]["finance"]["lock"]["verdict"] == "compatible"
        },
        within = std::time::Duration::from_secs(10),
        "never judged once the credential came back: {ready}"
    );
    assert_eq!(verdict_metric(&gw, "finance", "not_judged").await, 0.0);
}
