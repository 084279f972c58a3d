//! `artifact_schema` against the official Python SDK agent, which answers each data part of a
//! message with a data artifact: recorded (the answer passes, the mismatch is counted and shown
//! as evidence) and enforced (the answer is replaced by `ARTIFACT_SCHEMA_MISMATCH`, unary,
//! GetTask and mid-stream), on both bindings, plus an artifact too large to check (process and
//! loopback I/O).

use serde_json::{Value, json};

use crate::common::SdkAgent;
use crate::common::gateway::{InProcess, config_head, integration, metric, sse_events};

const SCHEMA: &str =
    r#"{"type":"object","required":["price"],"properties":{"price":{"type":"number"}}}"#;

async fn gateway(agent: &SdkAgent, policy: &str) -> InProcess {
    gateway_of(&agent.card_url, policy).await
}

async fn gateway_of(card_url: &str, policy: &str) -> InProcess {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("quote.json"), SCHEMA).unwrap();
    let extra = format!("artifact_schema = \"quote.json\"\nartifact_policy = \"{policy}\"");
    let config = config_head(&[]) + &integration("q", card_url, &extra);
    InProcess::start_in(dir, &config).await
}

fn agent() -> SdkAgent {
    agent_on("jsonrpc")
}

fn agent_on(binding: &str) -> SdkAgent {
    SdkAgent::start(&[
        "--binding",
        binding,
        "--skill",
        "echo:text/plain,application/json",
    ])
}

/// A JSON-RPC send of one text part and one data part.
fn send(id: &str, method: &str, data: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {"message": {
        "messageId": format!("m-{id}"), "role": "ROLE_USER",
        "parts": [{"text": "quote"}, {"data": data, "mediaType": "application/json"}]}}})
}

async fn mismatches(gw: &InProcess) -> f64 {
    metric(
        &gw.metrics().await,
        "a2a_egress_artifact_schema_mismatches_total",
        &[("integration", "q")],
    )
}

/// The mismatch evidence `/readyz` shows for integration `q`.
async fn evidence(gw: &InProcess) -> Vec<Value> {
    let r = gw.readyz().await;
    r["integrations"]["q"]["evidence"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|e| e["kind"] == "artifact_schema_mismatch")
        .collect()
}

fn data_artifact(task: &Value) -> Value {
    task["artifacts"]
        .as_array()
        .and_then(|a| a.iter().find(|a| a["name"] == "data"))
        .cloned()
        .unwrap_or(Value::Null)
}

#[tokio::test]
async fn recorded_mismatches_pass_through_and_are_counted_and_shown_as_evidence() {
    let agent = agent();
    let gw = gateway(&agent, "record").await;
    assert_eq!(mismatches(&gw).await, 0.0, "the series exists at 0");
    let (s, v) = gw
        .rpc("q", &send("ok", "SendMessage", json!({"price": 3})), &[])
        .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(
        data_artifact(&v["result"]["task"])["parts"][0]["data"]["price"],
        3.0
    );
    assert_eq!(mismatches(&gw).await, 0.0);
    assert!(evidence(&gw).await.is_empty());

    let (s, v) = gw
        .rpc("q", &send("bad", "SendMessage", json!({"price": "3"})), &[])
        .await;
    assert_eq!(s, 200);
    assert_eq!(
        data_artifact(&v["result"]["task"])["parts"][0]["data"]["price"],
        "3",
        "recorded only: the answer is unchanged"
    );
    assert_eq!(mismatches(&gw).await, 1.0);
    let ev = evidence(&gw).await;
    assert_eq!(ev.len(), 1, "{ev:?}");
    let detail = ev[0]["detail"].as_str().unwrap();
    assert!(
        detail.contains("artifacts[") && detail.contains("fails `type`"),
        "{detail}"
    );

    // GetTask of that task is checked too.
    let id = v["result"]["task"]["id"].as_str().unwrap().to_owned();
    let get = json!({"jsonrpc": "2.0", "id": "g", "method": "GetTask", "params": {"id": id}});
    let (s, v) = gw.rpc("q", &get, &[]).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(mismatches(&gw).await, 2.0);
}

#[tokio::test]
async fn enforced_mismatches_are_replaced_by_a_protocol_shaped_error() {
    let agent = agent();
    let gw = gateway(&agent, "enforce").await;
    let (s, v) = gw
        .rpc("q", &send("ok", "SendMessage", json!({"price": 3})), &[])
        .await;
    assert_eq!(s, 200);
    assert!(
        v["result"]["task"].is_object(),
        "a matching answer passes: {v}"
    );

    let (s, v) = gw
        .rpc("q", &send("bad", "SendMessage", json!({"cost": 3})), &[])
        .await;
    assert_eq!(s, 200, "a JSON-RPC error travels as HTTP 200");
    assert_eq!(v["id"], "bad");
    assert!(v.get("result").is_none(), "{v}");
    let info = &v["error"]["data"][0];
    assert_eq!(info["reason"], "ARTIFACT_SCHEMA_MISMATCH", "{v}");
    assert_eq!(info["domain"], "a2a-egress");
    assert_eq!(info["metadata"]["keyword"], "required");
    assert_eq!(mismatches(&gw).await, 1.0);
    assert_eq!(evidence(&gw).await.len(), 1);

    // HTTP+JSON: google.rpc.Status with the same reason.
    let agent = agent_on("rest");
    let gw = gateway(&agent, "enforce").await;
    let body = send("r", "SendMessage", json!({"price": "x"}))["params"].clone();
    let resp = crate::common::http()
        .post(gw.url("/agents/q/message:send"))
        .header("content-type", "application/a2a+json")
        .header("a2a-version", "1.0")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let v: Value = resp.json().await.unwrap();
    assert_eq!(status, 502, "{v}");
    assert_eq!(
        v["error"]["details"][0]["reason"], "ARTIFACT_SCHEMA_MISMATCH",
        "{v}"
    );
}

#[tokio::test]
async fn an_enforced_stream_ends_with_an_error_event_before_the_bad_artifact() {
    let agent = agent();
    let gw = gateway(&agent, "enforce").await;
    let (s, h, body) = gw
        .rpc_raw(
            "q",
            &send("st", "SendStreamingMessage", json!({"price": null})),
            &[],
        )
        .await;
    assert_eq!(s, 200);
    assert!(
        h["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let events = sse_events(&body);
    let last = events.last().unwrap();
    assert_eq!(
        last["error"]["data"][0]["reason"], "ARTIFACT_SCHEMA_MISMATCH",
        "{body}"
    );
    assert_eq!(last["id"], "st");
    assert!(body.contains("event: error"), "{body}");
    // The text artifact came before it; the data artifact never reached the caller.
    let names = artifact_names(&events);
    assert_eq!(names, ["echo"], "{body}");
    assert_eq!(mismatches(&gw).await, 1.0);

    // A matching stream passes whole.
    let (_, _, body) = gw
        .rpc_raw(
            "q",
            &send("st2", "SendStreamingMessage", json!({"price": 1})),
            &[],
        )
        .await;
    let events = sse_events(&body);
    assert!(events.iter().all(|e| e.get("error").is_none()), "{body}");
    assert_eq!(artifact_names(&events), ["echo", "data"], "{body}");
}

/// The names of the artifacts a stream's events delivered, in order.
fn artifact_names(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| e["result"]["artifactUpdate"]["artifact"]["name"].as_str())
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn an_artifact_too_large_to_check_is_refused_when_enforced_and_counted_when_recorded() {
    let agent = agent();
    let big = 17 * 1024 * 1024;
    for policy in ["enforce", "record"] {
        let gw = gateway(&agent, policy).await;
        let req = json!({"jsonrpc": "2.0", "id": "big", "method": "SendStreamingMessage", "params": {"message": {
            "messageId": "m-big", "role": "ROLE_USER", "parts": [{"text": format!("data-pad:{big}")}]}}});
        let (s, _, body) = gw.rpc_raw("q", &req, &[]).await;
        assert_eq!(s, 200);
        let events = sse_events(&body);
        let refused = events
            .iter()
            .any(|e| e["error"]["data"][0]["reason"] == "ARTIFACT_SCHEMA_MISMATCH");
        assert_eq!(
            refused,
            policy == "enforce",
            "{policy}: {} bytes",
            body.len()
        );
        assert_eq!(body.len() > big, policy == "record", "{policy}");
        assert_eq!(mismatches(&gw).await, 1.0, "{policy}");
    }
}

/// An answer whose tree would take more than the 64 MiB the gateway holds for one
/// (`json::TREE_BUDGET`): 2^20 + 1 zeros in a data part, 2 MiB of text, from a raw agent (no SDK
/// is needed to send it). It is not parsed: enforced, the caller gets the mismatch error naming
/// the size; the mismatch is counted.
#[tokio::test]
async fn an_answer_over_the_tree_budget_is_refused_naming_its_size() {
    use crate::common::raw_agent::{RawAgent, http};
    let zeros = format!("[{}0]", "0,".repeat(1 << 20));
    let agent = RawAgent::start(false, move |req| {
        let answer = format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":{{"task":{{"id":"t","contextId":"c","status":{{"state":"TASK_STATE_COMPLETED"}},"artifacts":[{{"artifactId":"a","parts":[{{"data":{{"price":{zeros}}}}}]}}]}}}}}}"#,
            req.id()
        );
        http(200, &[("content-type", "application/json")], answer.as_bytes())
    })
    .await;
    let gw = gateway_of(&agent.card_url, "enforce").await;
    let (s, v) = gw
        .rpc(
            "q",
            &crate::common::gateway::send_request("big", "SendMessage", "x"),
            &[],
        )
        .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["id"], "big");
    assert_eq!(
        v["error"]["data"][0]["reason"], "ARTIFACT_SCHEMA_MISMATCH",
        "{v}"
    );
    assert_eq!(
        v["error"]["data"][0]["metadata"]["keyword"], "unreadable",
        "{v}"
    );
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("the agent's answer would take ")
            && message.contains(" MiB to read, over the 64 MiB the gateway holds per answer"),
        "{v}"
    );
    assert_eq!(mismatches(&gw).await, 1.0);
}

#[tokio::test]
async fn a_schema_that_does_not_compile_is_refused_at_reload_and_the_old_one_stays() {
    let agent = agent();
    let gw = gateway(&agent, "enforce").await;
    std::fs::write(gw.dir.path().join("quote.json"), r#"{"type": 12}"#).unwrap();
    // The config is re-read when its own text changes.
    let path = gw.config_path();
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("{text}\n# schema edited\n")).unwrap();
    let mut ready: Value;
    crate::assert_eventually!(
        {
            ready = gw.readyz().await;
            ready["control"]["config_refused"].is_string()
        },
        every = std::time::Duration::from_millis(50),
        "the bad schema was not refused: {ready}"
    );
    let refused = ready["control"]["config_refused"].as_str().unwrap();
    assert!(
        refused.contains("artifact_schema")
            && refused.contains("quote.json is not a usable JSON Schema"),
        "{refused}"
    );
    // The schema compiled at start still holds the answers.
    let (_, v) = gw
        .rpc("q", &send("bad", "SendMessage", json!({"cost": 1})), &[])
        .await;
    assert_eq!(
        v["error"]["data"][0]["reason"], "ARTIFACT_SCHEMA_MISMATCH",
        "{v}"
    );
}
