//! A real A2A 0.3 peer (the official Python `a2a-sdk` 0.3.26, `tests/peers/sdk_agent_v03.py`)
//! behind the gateway: its card is fetched, checked against the pinned 0.3 schema and compiled
//! (issue 20, item 1), and every call is translated between the orchestrator's 1.0 JSON-RPC and
//! the agent's 0.3 JSON-RPC (item 2), driven by the official 1.0 SDK clients (Python
//! `tests/peers/sdk_client.py`, a2a-sdk 1.3.0, and JS `tests/peers/js/sdk_client.mjs`,
//! `@a2a-js/sdk` 1.3.0) and by raw JSON-RPC where the SDK clients have no call for it. The pins and the tenant rule still say why an integration is unusable.

use serde_json::{Value, json};

use crate::common::SdkAgent;
use crate::common::gateway::{
    InProcess, config_head, integration, send_request, sse_events, write_secret,
};
use crate::common::sdk_client::{drives_tasks, js_client, sdk_client};

const TOKEN: &str = "v03-admin-token-0123456789abcdef";

/// A gateway over `agent` with `[client]` as `client` (the test head's lines replaced) and the
/// admin token set, one integration per `(name, extra TOML lines)`.
async fn gateway(
    agent: &SdkAgent,
    client: Option<(&str, &str)>,
    ints: &[(&str, &str)],
) -> InProcess {
    let dir = tempfile::tempdir().unwrap();
    write_secret(dir.path(), "admin.token", TOKEN);
    write_secret(dir.path(), "partner.token", "partner-secret");
    let mut config = config_head(&[]);
    if let Some((bindings, versions)) = client {
        config = config
            .replace(
                "bindings = [\"JSONRPC\", \"HTTP+JSON\"]",
                &format!("bindings = {bindings}"),
            )
            .replace("versions = [\"1.0\"]", &format!("versions = {versions}"));
    }
    config += "[admin]\ntoken_file = \"admin.token\"\n";
    for (name, extra) in ints {
        config += &integration(name, &agent.card_url, extra);
    }
    InProcess::start_in(dir, &config).await
}

async fn view(gw: &InProcess, name: &str) -> Value {
    gw.admin_json(&format!("/v1/integrations/{name}"), TOKEN)
        .await
}

/// `[client]` that may speak 0.3 (and every binding).
const ALL: Option<(&str, &str)> = Some((
    "[\"JSONRPC\", \"HTTP+JSON\", \"GRPC\"]",
    "[\"1.0\", \"0.3\"]",
));

#[tokio::test]
async fn a_03_sdk_agent_compiles_with_its_binding_and_is_called_through_translation() {
    let agent = SdkAgent::start_v03(&["--both"]);
    let gw = gateway(
        &agent,
        ALL,
        &[
            ("v03", ""),
            ("pin10", "version = \"1.0\""),
            ("pin03", "version = \"0.3\"\nbinding = \"JSONRPC\""),
            ("tenant", "tenant = \"t1\""),
        ],
    )
    .await;
    let ready = gw.readyz().await;
    let entry = |n: &str| ready["integrations"][n].clone();
    // Compiled: the chosen interface is the card's `url` + `preferredTransport`, at 0.3, and
    // usable now that JSON-RPC 0.3 is translated.
    let v03 = entry("v03");
    assert_eq!(v03["status"], "usable", "{v03}");
    assert_eq!(
        v03["interface"],
        json!({"binding": "JSONRPC", "version": "0.3"}),
        "{v03}"
    );
    assert_eq!(entry("pin03")["status"], "usable", "{}", entry("pin03"));
    assert_eq!(
        entry("pin10")["reason"],
        "protocol version pinned to 1.0 but the profile chose 0.3"
    );
    assert!(
        entry("tenant")["reason"]
            .as_str()
            .unwrap()
            .contains("0.3, which has no tenant"),
        "{}",
        entry("tenant")
    );
    // The planner view shows the same interface.
    let v = view(&gw, "v03").await;
    assert_eq!(
        v["interface"],
        json!({"binding": "JSONRPC", "version": "0.3"}),
        "{v}"
    );
    assert_eq!(v["usable"], true, "{v}");
    // The orchestrator sees a 1.0 card: one JSON-RPC interface, the gateway, at 1.0.
    let card = gw.effective_card("v03").await;
    assert_eq!(
        card["supportedInterfaces"][0]["protocolVersion"], "1.0",
        "{card}"
    );
    // A 1.0 SendMessage comes back as the 1.0 answer to it, with the caller's id.
    let (status, body) = gw
        .rpc(
            "v03",
            &send_request("r1", "SendMessage", "hi"),
            &[("a2a-version", "1.0")],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["id"], "r1", "{body}");
    let m = &body["result"]["message"];
    assert_eq!(m["role"], "ROLE_AGENT", "{body}");
    assert_eq!(m["parts"], json!([{"text": "hi"}]), "{body}");
    assert!(m.get("kind").is_none(), "no 0.3 member crosses: {body}");
    // ListTasks has no 0.3 JSON-RPC method: refused before leaving.
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "ListTasks", "params": {}});
    let (_, body) = gw.rpc("v03", &list, &[]).await;
    assert_eq!(body["error"]["code"], -32004, "{body}");
    assert_eq!(
        body["error"]["data"][0]["reason"], "NOT_IN_AGENT_VERSION",
        "{body}"
    );
    // The upstream time is labelled with the version the call went out in.
    let m = gw.metrics().await;
    let n = crate::common::gateway::metric(
        &m,
        "a2a_egress_upstream_duration_seconds_count",
        &[("integration", "v03"), ("protocol", "0.3")],
    );
    assert!(n >= 1.0, "{m}");
}

/// The 1.0 Python SDK client (then the JS one, [`js_drives`]) drives a 0.3 agent through the
/// gateway as it would a 1.0 one: a
/// message, a task (blocking), a stream of a task (0.3's `final: true` ends it), reads, cancels
/// and the 0.3 errors as the 1.0 errors the SDK knows.
#[tokio::test]
async fn the_1_0_sdk_clients_send_stream_get_and_cancel_on_a_03_agent() {
    let agent = SdkAgent::start_v03(&[]);
    let gw = gateway(&agent, ALL, &[("v03", "")]).await;
    let base = gw.agent_url("v03");
    let run = |args: &[&str]| {
        let mut all = vec!["--url", base.as_str()];
        all.extend_from_slice(args);
        sdk_client(&all)
    };
    let sent = run(&["--op", "send", "--text", "hello"]).ok();
    let ev = sent.events();
    assert_eq!(ev.len(), 1, "{sent:#?}");
    assert_eq!(ev[0]["message"]["parts"], json!([{"text": "hello"}]));
    assert_eq!(ev[0]["message"]["role"], "ROLE_AGENT");
    // A task, blocking until it completed: its artifact and history come back in 1.0 shapes.
    let sent = run(&["--op", "send", "--text", "task one"]).ok();
    let task = &sent.events()[0]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{sent:#?}");
    assert_eq!(
        task["artifacts"][0]["parts"],
        json!([{"text": "task one"}]),
        "{sent:#?}"
    );
    assert_eq!(task["history"][0]["role"], "ROLE_USER", "{sent:#?}");
    let id = task["id"].as_str().unwrap().to_owned();
    // A stream: the task, working, the artifact, completed; the 0.3 `final` ends it.
    let streamed = run(&["--op", "stream", "--text", "task two"]).ok();
    let kinds: Vec<String> = streamed
        .events()
        .iter()
        .map(|e| e.as_object().unwrap().keys().next().unwrap().clone())
        .collect();
    assert_eq!(
        kinds,
        ["task", "statusUpdate", "artifactUpdate", "statusUpdate"],
        "{streamed:#?}"
    );
    let last = streamed.events()[3];
    assert_eq!(
        last["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{streamed:#?}"
    );
    assert!(last["statusUpdate"].get("final").is_none());
    // Reads and their errors.
    let got = run(&["--op", "get-task", "--task-id", &id]).ok();
    assert_eq!(got.of_kind("task")[0]["task"]["id"], id.as_str());
    let missing = run(&["--op", "get-task", "--task-id", "no-such-task"]);
    let e = missing.error().expect("an error line");
    assert_eq!(e["code"], -32001, "{missing:#?}");
    assert_eq!(e["type"], "TaskNotFoundError", "{missing:#?}");
    let listed = run(&["--op", "list-tasks"]);
    let e = listed.error().expect("an error line");
    assert_eq!(e["code"], -32004, "{listed:#?}");
    // A task held working: returned at once, then canceled; a second cancel is refused.
    let held = run(&["--op", "send", "--text", "hold on", "--return-immediately"]).ok();
    let task = &held.events()[0]["task"];
    let held_id = task["id"].as_str().unwrap().to_owned();
    assert!(
        ["TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"]
            .contains(&task["status"]["state"].as_str().unwrap()),
        "{held:#?}"
    );
    let canceled = run(&["--op", "cancel", "--task-id", &held_id]).ok();
    assert_eq!(
        canceled.of_kind("task")[0]["task"]["status"]["state"],
        "TASK_STATE_CANCELED"
    );
    let again = run(&["--op", "cancel", "--task-id", &held_id]);
    let e = again.error().expect("an error line");
    assert_eq!(e["code"], -32002, "{again:#?}");
    assert_eq!(e["type"], "TaskNotCancelableError", "{again:#?}");
    js_drives(&gw, "v03");
}

/// The 1.0 JS SDK client (`@a2a-js/sdk` 1.3.0) drives the 0.3 agent behind integration `name`
/// as it would a 1.0 one: [`drives_tasks`], the JSON-RPC codes of an unknown task and of
/// ListTasks (refused before it leaves), and a resubscription to a held task that the client
/// cancels after the first event (the stream ends at the cancel's 0.3 `final: true`).
fn js_drives(gw: &InProcess, name: &str) {
    let base = gw.agent_url(name);
    let run = |args: &[&str]| {
        let mut all = vec!["--url", base.as_str()];
        all.extend_from_slice(args);
        js_client(&all)
    };
    drives_tasks(&run);
    let missing = run(&["--op", "get-task", "--task-id", "no-such-task"]);
    assert_eq!(missing.err()["code"], -32001, "{missing:#?}");
    let listed = run(&["--op", "list-tasks"]);
    assert_eq!(listed.err()["code"], -32004, "{listed:#?}");
    // A resubscription to a held task: the client cancels it after the first event, and the
    // stream ends at the cancel's 0.3 `final: true`.
    let held = run(&[
        "--op",
        "send",
        "--text",
        "hold for js",
        "--return-immediately",
    ])
    .ok();
    let held_id = held.events()[0]["task"]["id"].as_str().unwrap().to_owned();
    let sub = run(&[
        "--op",
        "subscribe",
        "--task-id",
        &held_id,
        "--cancel-after",
        "1",
    ])
    .ok();
    assert_eq!(
        sub.of_kind("task")[0]["task"]["status"]["state"],
        "TASK_STATE_CANCELED",
        "{sub:#?}"
    );
    let last = *sub.events().last().unwrap();
    assert_eq!(
        last["statusUpdate"]["status"]["state"], "TASK_STATE_CANCELED",
        "{sub:#?}"
    );
}

/// `SubscribeToTask` becomes 0.3's `tasks/resubscribe`: the stream carries the held task's 1.0
/// status updates, and the cancel's `final: true` ends it at the gateway.
#[tokio::test]
async fn a_resubscribed_stream_carries_1_0_events_until_0_3s_final() {
    use futures::StreamExt;
    let agent = SdkAgent::start_v03(&[]);
    let gw = gateway(&agent, ALL, &[("v03", "")]).await;
    let base = gw.agent_url("v03");
    let held = sdk_client(&[
        "--url",
        &base,
        "--op",
        "send",
        "--text",
        "hold for a subscriber",
        "--return-immediately",
    ])
    .ok();
    let id = held.events()[0]["task"]["id"].as_str().unwrap().to_owned();
    let sub =
        json!({"jsonrpc": "2.0", "id": "sub-1", "method": "SubscribeToTask", "params": {"id": id}});
    let resp = crate::common::http()
        .post(&base)
        .header("content-type", "application/json")
        .header("a2a-version", "1.0")
        .body(sub.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let mut body = resp.bytes_stream();
    let mut text = String::new();
    let read = async {
        // Attached once a tick arrived; then cancel, and read to the end of the stream.
        let mut canceled = false;
        while let Some(chunk) = body.next().await {
            text.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
            if !canceled && text.contains("TASK_STATE_WORKING") {
                canceled = true;
                let c = sdk_client(&["--url", &base, "--op", "cancel", "--task-id", &id]);
                assert_eq!(c.status, 0, "{c:#?}");
            }
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(30), read)
        .await
        .expect("the stream ends after the 0.3 final event");
    let events = sse_events(&text);
    assert!(events.iter().all(|e| e["id"] == "sub-1"), "{text}");
    let last = events.last().unwrap();
    assert_eq!(
        last["result"]["statusUpdate"]["status"]["state"], "TASK_STATE_CANCELED",
        "{text}"
    );
    assert!(
        events[..events.len() - 1]
            .iter()
            .all(|e| e["result"]["statusUpdate"]["status"]["state"] == "TASK_STATE_WORKING"),
        "{text}"
    );
}

/// Push configs: created with the 1.0 SDK client (flat 1.0 shape → 0.3's nested one and back),
/// read, listed and deleted with raw 1.0 JSON-RPC.
#[tokio::test]
async fn push_configs_cross_both_ways() {
    let agent = SdkAgent::start_v03(&["--push"]);
    let gw = gateway(&agent, ALL, &[("v03", "")]).await;
    let base = gw.agent_url("v03");
    let held = sdk_client(&[
        "--url",
        &base,
        "--op",
        "send",
        "--text",
        "hold for push",
        "--return-immediately",
    ])
    .ok();
    let task = held.events()[0]["task"]["id"].as_str().unwrap().to_owned();
    // The JS 1.0 client's CreateTaskPushNotificationConfig crosses too.
    let js = js_client(&["--url", &base, "--op", "push-config", "--task-id", &task]).ok();
    let cfg = &js.of_kind("push_config")[0]["config"];
    assert_eq!(cfg["taskId"], task.as_str(), "{js:#?}");
    assert_eq!(cfg["url"], "https://hook.invalid/a2a", "{js:#?}");
    let created = sdk_client(&["--url", &base, "--op", "push-config", "--task-id", &task]).ok();
    let cfg = &created.of_kind("push_config")[0]["config"];
    assert_eq!(cfg["taskId"], task.as_str(), "{created:#?}");
    assert_eq!(cfg["url"], "https://hook.invalid/a2a", "{created:#?}");
    let cfg_id = cfg["id"]
        .as_str()
        .expect("the agent names the config")
        .to_owned();
    let call = |method: &str, params: Value| json!({"jsonrpc": "2.0", "id": 9, "method": method, "params": params});
    let ids = json!({"taskId": task, "id": cfg_id});
    let (_, got) = gw
        .rpc(
            "v03",
            &call("GetTaskPushNotificationConfig", ids.clone()),
            &[],
        )
        .await;
    assert_eq!(got["result"]["url"], "https://hook.invalid/a2a", "{got}");
    assert_eq!(got["result"]["id"], cfg_id.as_str(), "{got}");
    let (_, listed) = gw
        .rpc(
            "v03",
            &call("ListTaskPushNotificationConfigs", json!({"taskId": task})),
            &[],
        )
        .await;
    assert_eq!(
        listed["result"]["configs"][0]["id"],
        cfg_id.as_str(),
        "{listed}"
    );
    // Python 0.3.26 answers a delete without any `result`: the caller gets 1.0's `null`.
    let (_, deleted) = gw
        .rpc("v03", &call("DeleteTaskPushNotificationConfig", ids), &[])
        .await;
    assert_eq!(deleted, json!({"jsonrpc": "2.0", "id": 9, "result": null}));
    let (_, listed) = gw
        .rpc(
            "v03",
            &call("ListTaskPushNotificationConfigs", json!({"taskId": task})),
            &[],
        )
        .await;
    assert_eq!(listed["result"], json!({"configs": []}), "{listed}");
    sdk_client(&["--url", &base, "--op", "cancel", "--task-id", &task]).ok();
}

/// A 0.3 agent whose card says it does not stream is never sent `message/stream`: the stream
/// is answered through `message/send`, as one 1.0 SSE event (the card decides; Python 0.3.26
/// would refuse the stream with -32603, not -32004).
#[tokio::test]
async fn a_03_agent_that_does_not_stream_is_answered_through_message_send() {
    let agent = SdkAgent::start_v03(&["--no-streaming"]);
    let gw = gateway(&agent, ALL, &[("v03", "")]).await;
    let (status, headers, body) = gw
        .rpc_raw(
            "v03",
            &send_request("s1", "SendStreamingMessage", "task streamed"),
            &[],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(headers["content-type"], "text/event-stream", "{body}");
    let events = sse_events(&body);
    assert_eq!(events.len(), 1, "{body}");
    assert_eq!(events[0]["id"], "s1", "{body}");
    assert_eq!(
        events[0]["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{body}"
    );
    let m = gw.metrics().await;
    let n = crate::common::gateway::downgrades(&m, "v03", "declared_off");
    assert_eq!(n, 1.0, "{m}");
}

/// A 0.3 agent whose card claims streaming but whose server refuses it: Python a2a-sdk 0.3.26
/// answers `message/stream` with -32603 "Streaming is not supported by the agent" (not 0.3's
/// -32004). The translation reads that, on a stream call only, as UnsupportedOperationError, so
/// the gateway's refused-stream rule applies: one retry as `message/send`, answered as one SSE
/// event, and streaming overridden off until the next refresh.
#[tokio::test]
async fn a_python_03_refusal_of_a_stream_it_claims_is_retried_as_message_send() {
    let agent = SdkAgent::start_v03(&["--refuse-streams"]);
    let gw = gateway(&agent, ALL, &[("v03", "")]).await;
    let (status, headers, body) = gw
        .rpc_raw(
            "v03",
            &send_request("s2", "SendStreamingMessage", "task refused"),
            &[],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(headers["content-type"], "text/event-stream", "{body}");
    let events = sse_events(&body);
    assert_eq!(events.len(), 1, "{body}");
    assert_eq!(
        events[0]["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{body}"
    );
    let m = gw.metrics().await;
    let n = crate::common::gateway::downgrades(&m, "v03", "refused");
    assert_eq!(n, 1.0, "{m}");
}

/// A 0.3 card with `supportsAuthenticatedExtendedCard`: with a credential, the control plane
/// asks `agent/getAuthenticatedExtendedCard` (0.3's name, no `A2A-Version`), converts the 0.3
/// extended card and compiles it for that credential: its extra skill is in the profile.
#[tokio::test]
async fn the_extended_card_of_a_03_agent_is_fetched_with_0_3s_method() {
    let agent = SdkAgent::start_v03(&["--extended"]);
    let gw = gateway(
        &agent,
        ALL,
        &[(
            "v03",
            "credential = { type = \"bearer\", file = \"partner.token\" }",
        )],
    )
    .await;
    let v = view(&gw, "v03").await;
    assert_eq!(v["usable"], true, "{v}");
    assert!(
        v.to_string().contains("\"secret\""),
        "the extended card's skill: {v}"
    );
    let plain = SdkAgent::start_v03(&[]);
    let gw = gateway(&plain, ALL, &[("v03", "")]).await;
    let v = view(&gw, "v03").await;
    assert!(!v.to_string().contains("\"secret\""), "{v}");
}

#[tokio::test]
async fn with_the_default_client_a_03_agent_is_recorded_but_never_chosen() {
    let agent = SdkAgent::start_v03(&["--transport", "rest", "--both"]);
    let gw = gateway(&agent, None, &[("v03", "")]).await;
    let ready = gw.readyz().await;
    let e = &ready["integrations"]["v03"];
    assert_eq!(e["status"], "unusable", "{e}");
    assert_eq!(e["interface"], Value::Null, "{e}");
    assert_eq!(
        e["reason"], "no mutually supported interface (card offers HTTP+JSON 0.3, JSONRPC 0.3)",
        "{e}"
    );
}

/// What no SDK sends, from a raw 0.3 agent (`RawAgent::start_at(.., "0.3", ..)`): the request it
/// gets is 0.3; events after 0.3's `final: true` never reach the caller (the gateway ends the
/// stream there); its `X-A2A-Extensions` echo reaches the caller as `A2A-Extensions`; a 0.3 answer that does not translate is InvalidAgentResponseError, counted as
/// `untranslatable`.
#[tokio::test]
async fn raw_03_answers_final_ends_the_stream_and_untranslatable_is_refused() {
    use crate::common::raw_agent::{RawAgent, http, sse};
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    let agent = RawAgent::start_at(false, "0.3", move |req| {
        log.lock().unwrap().push(String::from_utf8_lossy(&req.body).into_owned());
        let v: Value = serde_json::from_slice(&req.body).unwrap();
        let id = v["id"].to_string();
        match v["method"].as_str() {
            Some("message/stream") => {
                let ev = |r: &str| format!("data: {{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{r}}}\n\n");
                let fin = r#"{"kind":"status-update","taskId":"t","contextId":"c","status":{"state":"completed"},"final":true}"#;
                let after = r#"{"kind":"status-update","taskId":"t","contextId":"c","status":{"state":"working"},"final":false}"#;
                sse(&[], &(ev(fin) + &ev(after)))
            }
            // The extensions it activated, under 0.3's header name.
            Some("tasks/get") => http(
                200,
                &[
                    ("content-type", "application/json"),
                    ("x-a2a-extensions", "urn:a"),
                    ("a2a-version", "0.3"),
                ],
                format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"kind":"task","id":"t","status":{{"state":"working"}}}}}}"#)
                    .as_bytes(),
            ),
            // A task state 0.3 does not have.
            _ => http(
                200,
                &[("content-type", "application/json")],
                format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"kind":"task","id":"t","status":{{"state":"paused"}}}}}}"#)
                    .as_bytes(),
            ),
        }
    })
    .await;
    let config = config_head(&[]).replace("versions = [\"1.0\"]", "versions = [\"0.3\"]")
        + "[refresh]\nmin = \"1h\"\n"
        + &integration("raw", &agent.card_url, "");
    let gw = InProcess::start(&config).await;
    let (status, _, body) = gw
        .rpc_raw("raw", &send_request("e1", "SendStreamingMessage", "x"), &[])
        .await;
    assert_eq!(status, 200, "{body}");
    let events = sse_events(&body);
    assert_eq!(events.len(), 1, "nothing after final: {body}");
    assert_eq!(
        events[0]["result"]["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{body}"
    );
    let sent: Value = serde_json::from_str(&seen.lock().unwrap()[0]).unwrap();
    assert_eq!(sent["method"], "message/stream", "{sent}");
    assert_eq!(sent["params"]["message"]["role"], "user", "{sent}");
    assert_eq!(sent["params"]["message"]["kind"], "message", "{sent}");
    let get = json!({"jsonrpc": "2.0", "id": 3, "method": "GetTask", "params": {"id": "t"}});
    let (_, headers, body) = gw.rpc_raw("raw", &get, &[]).await;
    assert_eq!(headers["a2a-extensions"], "urn:a", "{headers:?}");
    assert!(headers.get("x-a2a-extensions").is_none(), "{headers:?}");
    assert!(
        headers.get("a2a-version").is_none_or(|v| v != "0.3"),
        "the agent's 0.3 version header on a 1.0 answer: {headers:?}"
    );
    let task: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        task["result"]["status"]["state"], "TASK_STATE_WORKING",
        "{body}"
    );
    let (_, v) = gw
        .rpc("raw", &send_request("e2", "SendMessage", "x"), &[])
        .await;
    assert_eq!(v["error"]["code"], -32006, "{v}");
    assert_eq!(v["id"], "e2", "{v}");
    let m = gw.metrics().await;
    let n = crate::common::gateway::metric(
        &m,
        "a2a_egress_invalid_agent_answers_total",
        &[("integration", "raw"), ("reason", "untranslatable")],
    );
    assert_eq!(n, 1.0, "{m}");
}

/// A raw 0.3 agent whose answer would take more memory to read than the gateway holds for one
/// (`json::TREE_BUDGET`, 64 MiB: 2^20 + 1 zeros in the task's metadata, 2 MiB of text): the
/// translator refuses it before building anything; the caller gets InvalidAgentResponseError
/// saying why, counted as `too_large`, and the integration is not marked stale (a new card would
/// not make the answer smaller).
#[tokio::test]
async fn a_03_answer_over_the_tree_budget_is_refused_saying_why() {
    use crate::common::raw_agent::{RawAgent, http};
    let zeros = format!("[{}0]", "0,".repeat(1 << 20));
    let agent = RawAgent::start_at(false, "0.3", move |req| {
        let answer = format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":{{"kind":"task","id":"t","contextId":"c","status":{{"state":"completed"}},"metadata":{{"z":{zeros}}}}}}}"#,
            req.id()
        );
        http(200, &[("content-type", "application/json")], answer.as_bytes())
    })
    .await;
    let config = config_head(&[]).replace("versions = [\"1.0\"]", "versions = [\"0.3\"]")
        + "[refresh]\nmin = \"1h\"\n"
        + &integration("raw", &agent.card_url, "");
    let gw = InProcess::start(&config).await;
    let (_, v) = gw
        .rpc("raw", &send_request("big", "SendMessage", "x"), &[])
        .await;
    assert_eq!(v["id"], "big", "{v}");
    assert_eq!(v["error"]["code"], -32006, "{v}");
    assert_eq!(
        v["error"]["data"][0]["metadata"]["answer"], "too_large",
        "{v}"
    );
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("the agent's answer (HTTP 200) would take ")
            && message.ends_with(
                " MiB to read, over the 64 MiB the gateway holds per answer; it was not passed on"
            ),
        "{v}"
    );
    let m = gw.metrics().await;
    let count = |reason| {
        crate::common::gateway::metric(
            &m,
            "a2a_egress_invalid_agent_answers_total",
            &[("integration", "raw"), ("reason", reason)],
        )
    };
    assert_eq!(
        (count("too_large"), count("untranslatable")),
        (1.0, 0.0),
        "{m}"
    );
    let stale = crate::common::gateway::metric(
        &m,
        "a2a_egress_stale_marks_total",
        &[("integration", "raw"), ("error", "INVALID_AGENT_RESPONSE")],
    );
    assert_eq!(stale, 0.0, "{m}");
}

/// The JS `@a2a-js/sdk` 0.3.14 agent (`tests/peers/js03`) through the gateway, driven by the
/// 1.0 Python SDK client (a message, a streamed task, a read, a cancel, an unknown task), then
/// by the JS one ([`js_drives`]).
#[tokio::test]
async fn the_1_0_sdk_clients_drive_the_js_03_agent() {
    let agent = SdkAgent::start_js03(&[]);
    let gw = gateway(&agent, ALL, &[("js03", "")]).await;
    let ready = gw.readyz().await;
    let e = &ready["integrations"]["js03"];
    assert_eq!(e["status"], "usable", "{e}");
    assert_eq!(
        e["interface"],
        json!({"binding": "JSONRPC", "version": "0.3"}),
        "{e}"
    );
    let base = gw.agent_url("js03");
    let run = |args: &[&str]| {
        let mut all = vec!["--url", base.as_str()];
        all.extend_from_slice(args);
        sdk_client(&all)
    };
    let sent = run(&["--op", "send", "--text", "message hi"]).ok();
    assert_eq!(
        sent.events()[0]["message"]["role"],
        "ROLE_AGENT",
        "{sent:#?}"
    );
    let streamed = run(&["--op", "stream", "--text", "task js"]).ok();
    let ev = streamed.events();
    assert!(ev[0].get("task").is_some(), "{streamed:#?}");
    let last = ev.last().unwrap();
    assert_eq!(
        last["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{streamed:#?}"
    );
    assert!(
        ev.iter()
            .any(|e| e["artifactUpdate"]["artifact"]["parts"][0]["text"].is_string()),
        "{streamed:#?}"
    );
    let id = ev[0]["task"]["id"].as_str().unwrap().to_owned();
    let got = run(&["--op", "get-task", "--task-id", &id]).ok();
    assert_eq!(
        got.of_kind("task")[0]["task"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    let missing = run(&["--op", "get-task", "--task-id", "no-such-task"]);
    assert_eq!(
        missing.error().expect("an error")["code"],
        -32001,
        "{missing:#?}"
    );
    let held = run(&["--op", "send", "--text", "hold js", "--return-immediately"]).ok();
    let held_id = held.events()[0]["task"]["id"].as_str().unwrap().to_owned();
    let canceled = run(&["--op", "cancel", "--task-id", &held_id]).ok();
    assert_eq!(
        canceled.of_kind("task")[0]["task"]["status"]["state"],
        "TASK_STATE_CANCELED",
        "{canceled:#?}"
    );
    js_drives(&gw, "js03");
}
