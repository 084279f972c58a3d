//! Real A2A 0.3 peers on their HTTP+JSON binding behind the gateway (issue 20, item 2): the
//! official Python `a2a-sdk` 0.3.26 agent (`tests/peers/sdk_agent_v03.py --transport rest`) and
//! the official JS `@a2a-js/sdk` 0.3.14 agent (`tests/peers/js03/agent.mjs --transport rest`),
//! each driven through the gateway by the official 1.0 SDK clients on HTTP+JSON (Python
//! `tests/peers/sdk_client.py --binding HTTP+JSON`, a2a-sdk 1.3.0, and JS
//! `tests/peers/js/sdk_client.mjs`, `@a2a-js/sdk` 1.3.0) and by raw 1.0 HTTP+JSON where the SDK
//! clients have no call for it: send, stream, get, cancel, resubscribe, push config
//! create/get/list/delete, the extended card, and the errors, all translated between 1.0 and the
//! 0.3 gRPC transcoding the agents speak (`content` parts, `TASK_STATE_*`, `/v1/…` routes).

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::SdkAgent;
use crate::common::gateway::{InProcess, config_head, integration, sse_events};
use crate::common::sdk_client::{SdkRun, drives_tasks, js_client, sdk_client};

const TOKEN: &str = "v03-rest-admin-token-0123456789ab";

/// A gateway whose `[client]` speaks 0.3 (every binding), with one integration `rest` over
/// `agent` (pinned to HTTP+JSON, so the test fails rather than pass on another binding) and
/// `extra` TOML lines.
async fn gateway(agent: &SdkAgent, extra: &str) -> InProcess {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in [("admin.token", TOKEN), ("partner.token", "partner-secret")] {
        let path = dir.path().join(name);
        std::fs::write(&path, format!("{text}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let config = config_head(&[])
        .replace(
            "bindings = [\"JSONRPC\", \"HTTP+JSON\"]",
            "bindings = [\"JSONRPC\", \"HTTP+JSON\", \"GRPC\"]",
        )
        .replace("versions = [\"1.0\"]", "versions = [\"1.0\", \"0.3\"]")
        + "[admin]\ntoken_file = \"admin.token\"\n"
        + &integration(
            "rest",
            &agent.card_url,
            &format!("binding = \"HTTP+JSON\"\n{extra}"),
        );
    InProcess::start_in(dir, &config).await
}

/// The 1.0 Python SDK client on HTTP+JSON against the gateway's `rest` integration.
fn client(gw: &InProcess, args: &[&str]) -> SdkRun {
    let base = gw.agent_url("rest");
    let mut all = vec!["--url", base.as_str(), "--binding", "HTTP+JSON"];
    all.extend_from_slice(args);
    sdk_client(&all)
}

/// The 1.0 JS SDK client on HTTP+JSON against the gateway's `rest` integration.
fn js(gw: &InProcess, args: &[&str]) -> SdkRun {
    let base = gw.agent_url("rest");
    let mut all = vec!["--url", base.as_str(), "--binding", "HTTP+JSON"];
    all.extend_from_slice(args);
    js_client(&all)
}

/// A raw 1.0 HTTP+JSON call to the gateway: status and JSON body.
async fn rest(
    gw: &InProcess,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut req = crate::common::http()
        .request(method, format!("{}{path}", gw.agent_url("rest")))
        .header("a2a-version", "1.0");
    if let Some(b) = body {
        req = req
            .header("content-type", "application/a2a+json")
            .body(b.to_string());
    }
    let r = req.send().await.unwrap();
    let status = r.status().as_u16();
    let text = r.text().await.unwrap();
    let v = serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text:?}"));
    (status, v)
}

/// The usable integration, its chosen interface HTTP+JSON 0.3, and the 1.0 card the caller sees.
async fn usable_on_rest(gw: &InProcess) {
    let ready = gw.readyz().await;
    let e = &ready["integrations"]["rest"];
    assert_eq!(e["status"], "usable", "{e}");
    assert_eq!(
        e["interface"],
        json!({"binding": "HTTP+JSON", "version": "0.3"}),
        "{e}"
    );
    let card: Value = crate::common::http()
        .get(format!(
            "{}/.well-known/agent-card.json",
            gw.agent_url("rest")
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let i = &card["supportedInterfaces"][0];
    assert_eq!(
        (&i["protocolBinding"], &i["protocolVersion"]),
        (&json!("HTTP+JSON"), &json!("1.0")),
        "{card}"
    );
}

/// What [`drives_tasks`] asks, by both 1.0 SDK clients on HTTP+JSON, then ListTasks refused before
/// leaving: the SDK clients' view of a 0.3 HTTP+JSON agent is a 1.0 agent's. (Blocking sends
/// stay blocking although Python 0.3.26 reads an absent `blocking` as false: the gateway says so.)
async fn drives_send_stream_get_cancel(gw: &InProcess) {
    usable_on_rest(gw).await;
    drives_tasks(&|a| client(gw, a));
    drives_tasks(&|a| js(gw, a));
    let listed = js(gw, &["--op", "list-tasks"]);
    assert_eq!(listed.err()["http_status"], 400, "{listed:#?}");
    let (status, body) = rest(gw, reqwest::Method::GET, "/tasks", None).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(
        body["error"]["details"][0]["reason"], "NOT_IN_AGENT_VERSION",
        "{body}"
    );
    let m = gw.metrics().await;
    let n = crate::common::gateway::metric(
        &m,
        "a2a_egress_upstream_duration_seconds_count",
        &[("integration", "rest"), ("protocol", "0.3")],
    );
    assert!(n >= 8.0, "{m}");
}

#[tokio::test]
async fn the_1_0_sdk_clients_drive_the_python_03_agent_over_http_json() {
    let agent = SdkAgent::start_v03(&["--transport", "rest"]);
    let gw = gateway(&agent, "").await;
    drives_send_stream_get_cancel(&gw).await;
}

#[tokio::test]
async fn the_1_0_sdk_clients_drive_the_js_03_agent_over_http_json() {
    let agent = SdkAgent::start_js03(&["--transport", "rest"]);
    let gw = gateway(&agent, "").await;
    drives_send_stream_get_cancel(&gw).await;
}

/// `SubscribeToTask` (the 1.0 caller's `POST …:subscribe`) becomes 0.3's `GET …:subscribe`; the
/// stream carries 1.0 events (Python's spread over several `data:` lines each) until the
/// cancel's `final: true` ends it at the gateway.
async fn resubscribes(gw: &InProcess) {
    use futures::StreamExt;
    let held = client(
        gw,
        &[
            "--op",
            "send",
            "--text",
            "hold for a subscriber",
            "--return-immediately",
        ],
    )
    .ok();
    let id = held.events()[0]["task"]["id"].as_str().unwrap().to_owned();
    let resp = crate::common::http()
        .post(format!("{}/tasks/{id}:subscribe", gw.agent_url("rest")))
        .header("a2a-version", "1.0")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let mut body = resp.bytes_stream();
    let mut text = String::new();
    let mut canceled = false;
    let read = async {
        while let Some(chunk) = body.next().await {
            text.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
            // Attached (JS replays the task first, Python sends the next update): cancel.
            if !canceled && text.contains("\n\n") {
                canceled = true;
                let c = client(gw, &["--op", "cancel", "--task-id", &id]);
                assert_eq!(c.status, 0, "{c:#?}");
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(30), read)
        .await
        .expect("the stream ends after the 0.3 final event");
    let events = sse_events(&text);
    let last = events.last().unwrap();
    assert_eq!(
        last["statusUpdate"]["status"]["state"], "TASK_STATE_CANCELED",
        "{text}"
    );
    assert!(
        !text.contains("TASK_STATE_CANCELLED") && !text.contains("\"final\""),
        "{text}"
    );
}

#[tokio::test]
async fn a_resubscribed_http_json_stream_ends_at_0_3s_final_on_both_sdks() {
    let py = SdkAgent::start_v03(&["--transport", "rest"]);
    resubscribes(&gateway(&py, "").await).await;
    let js = SdkAgent::start_js03(&["--transport", "rest"]);
    resubscribes(&gateway(&js, "").await).await;
}

/// Push configs: created, read, listed and deleted with raw 1.0 HTTP+JSON, and created with the
/// 1.0 SDK client (flat 1.0 → the 0.3 proto's named, nested config and back). The JS agent does all
/// four; Python 0.3.26 fails a list with 500 and has no delete route (405): the caller gets both
/// as 1.0 errors with their ErrorInfo (README of `tests/fixtures/wire/v03`, fact 10).
async fn push_configs(gw: &InProcess, python: bool) {
    let held = client(
        gw,
        &[
            "--op",
            "send",
            "--text",
            "hold for push",
            "--return-immediately",
        ],
    )
    .ok();
    let task = held.events()[0]["task"]["id"].as_str().unwrap().to_owned();
    // A config the caller names first: Python 0.3.26's HTTP+JSON handler names none itself (its
    // answer's resource name ends in `/`, where its JSON-RPC one takes the task's id), and its
    // get answers a task's first config whatever id is asked.
    let cfg_id = "c1";
    let named = json!({"taskId": task, "id": cfg_id, "url": "https://hook.invalid/named"});
    let all = format!("/tasks/{task}/pushNotificationConfigs");
    let (status, made) = rest(gw, reqwest::Method::POST, &all, Some(named.clone())).await;
    assert_eq!((status, &made), (200, &named), "{made}");
    let one = format!("/tasks/{task}/pushNotificationConfigs/{cfg_id}");
    let (status, got) = rest(gw, reqwest::Method::GET, &one, None).await;
    assert_eq!(status, 200, "{got}");
    assert_eq!(got, named, "{got}");
    let (status, listed) = rest(gw, reqwest::Method::GET, &all, None).await;
    let (del_status, deleted) = rest(gw, reqwest::Method::DELETE, &one, None).await;
    if python {
        assert_eq!(status, 500, "{listed}");
        assert_eq!(
            listed["error"]["details"][0]["reason"], "INTERNAL_ERROR",
            "{listed}"
        );
        assert_eq!(del_status, 404, "{deleted}");
        assert_eq!(
            deleted["error"]["details"][0]["reason"], "METHOD_NOT_FOUND",
            "{deleted}"
        );
    } else {
        assert_eq!(status, 200, "{listed}");
        assert!(
            listed["configs"].as_array().unwrap().contains(&named),
            "{listed}"
        );
        assert_eq!((del_status, deleted), (200, json!({})));
        let (_, listed) = rest(gw, reqwest::Method::GET, &all, None).await;
        assert!(
            !listed["configs"].as_array().unwrap().contains(&named),
            "{listed}"
        );
    }
    // The 1.0 SDK client's own create (no id): the flat 1.0 config comes back.
    let created = client(gw, &["--op", "push-config", "--task-id", &task]).ok();
    let cfg = &created.of_kind("push_config")[0]["config"];
    assert_eq!(cfg["taskId"], task.as_str(), "{created:#?}");
    assert_eq!(cfg["url"], "https://hook.invalid/a2a", "{created:#?}");
    client(gw, &["--op", "cancel", "--task-id", &task]).ok();
}

#[tokio::test]
async fn push_configs_cross_both_ways_over_http_json() {
    let py = SdkAgent::start_v03(&["--transport", "rest", "--push"]);
    push_configs(&gateway(&py, "").await, true).await;
    let js = SdkAgent::start_js03(&["--transport", "rest"]);
    push_configs(&gateway(&js, "").await, false).await;
}

/// A 0.3 HTTP+JSON card with `supportsAuthenticatedExtendedCard`: with a credential, the control
/// plane reads `GET /v1/card` (0.3's route, no `A2A-Version`), converts the 0.3 card and
/// compiles it for that credential: its extra skill is in the profile, for both SDKs' agents.
#[tokio::test]
async fn the_extended_card_of_a_03_http_json_agent_is_read_from_v1_card() {
    let credential = "credential = { type = \"bearer\", file = \"partner.token\" }";
    for agent in [
        SdkAgent::start_v03(&["--transport", "rest", "--extended"]),
        SdkAgent::start_js03(&["--transport", "rest", "--secret-skill"]),
    ] {
        let view = |gw: InProcess| async move {
            let r = crate::common::http()
                .get(gw.admin_url("/v1/integrations/rest"))
                .bearer_auth(TOKEN)
                .send()
                .await
                .unwrap();
            r.json::<Value>().await.unwrap()
        };
        let v = view(gateway(&agent, credential).await).await;
        assert_eq!(v["usable"], true, "{v}");
        assert!(
            v.to_string().contains("\"secret\""),
            "the extended card's skill: {v}"
        );
        // Without a credential the public card is all there is.
        let v = view(gateway(&agent, "").await).await;
        assert!(!v.to_string().contains("\"secret\""), "{v}");
    }
}

/// A 0.3 HTTP+JSON agent whose card says it does not stream is never sent `message:stream`: the
/// stream is answered through `/v1/message:send`, as one 1.0 SSE event (the card decides: Python
/// 0.3.26 would refuse the stream with a bare 500 page, JS 0.3.14 with -32004).
#[tokio::test]
async fn a_03_http_json_agent_that_does_not_stream_is_answered_through_message_send() {
    for agent in [
        SdkAgent::start_v03(&["--transport", "rest", "--no-streaming"]),
        SdkAgent::start_js03(&["--transport", "rest", "--no-streaming"]),
    ] {
        let gw = gateway(&agent, "").await;
        let msg = json!({"message": {"messageId": "s1", "role": "ROLE_USER", "parts": [{"text": "task streamed"}]}});
        let r = crate::common::http()
            .post(format!("{}/message:stream", gw.agent_url("rest")))
            .header("content-type", "application/json")
            .body(msg.to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers()["content-type"], "text/event-stream");
        let text = r.text().await.unwrap();
        let events = sse_events(&text);
        assert_eq!(events.len(), 1, "{text}");
        assert_eq!(
            events[0]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
            "{text}"
        );
        let m = gw.metrics().await;
        let n = crate::common::gateway::downgrades(&m, "rest", "declared_off");
        assert_eq!(n, 1.0, "{m}");
    }
}

/// What no SDK agent shows on its own, from a raw 0.3 HTTP+JSON agent
/// (`RawAgent::start_at(true, "0.3", ..)`): the request leaves in 0.3 (its `/v1` route, the
/// subscription as `GET`, an `application/json` body with `content` and `blocking`, no
/// `A2A-Version`); a multi-line event ends the stream at its `final: true`; a stream refused
/// with JS 0.3.14's `400 {"code": -32004}` (on an agent whose card claims streaming) is
/// retried once as `message:send` and answered as one event; the agent's `X-A2A-Extensions`
/// reaches the caller as `A2A-Extensions` (and its 0.3 version header does not); an answer that does not translate is
/// InvalidAgentResponseError, counted as `untranslatable`.
#[tokio::test]
async fn raw_03_http_json_requests_leave_in_0_3_and_a_refused_stream_is_retried_as_send() {
    use crate::common::raw_agent::{RawAgent, RawRequest, http, sse};
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<RawRequest>::new()));
    let log = seen.clone();
    let json = ("content-type", "application/json");
    let agent = RawAgent::start_at(true, "0.3", move |req| {
        log.lock().unwrap().push(req.clone());
        let line = req.line.split(' ').take(2).collect::<Vec<_>>().join(" ");
        match line.as_str() {
            "GET /rest/v1/tasks/t:subscribe" => {
                let fin = "data: {\ndata:   \"statusUpdate\": {\"taskId\": \"t\", \"contextId\": \"c\",\ndata:     \"status\": {\"state\": \"TASK_STATE_CANCELLED\"}, \"final\": true}\ndata: }\n\n";
                let after = "data: {\"statusUpdate\":{\"taskId\":\"t\",\"contextId\":\"c\",\"status\":{\"state\":\"TASK_STATE_WORKING\"}}}\n\n";
                sse(&[], &format!("{fin}{after}"))
            }
            "POST /rest/v1/message:stream" => http(
                400,
                &[json],
                br#"{"code":-32004,"message":"Unsupported operation: Agent does not support streaming"}"#,
            ),
            "POST /rest/v1/message:send" => http(
                201,
                &[json],
                br#"{"task":{"id":"t","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"}}}"#,
            ),
            // The extensions it activated, under 0.3's header name.
            "GET /rest/v1/tasks/ok" => http(
                200,
                &[json, ("x-a2a-extensions", "urn:a"), ("a2a-version", "0.3")],
                br#"{"id":"ok","status":{"state":"TASK_STATE_WORKING"}}"#,
            ),
            // A task state 0.3 does not have.
            _ => http(
                200,
                &[json],
                br#"{"id":"t","status":{"state":"TASK_STATE_PAUSED"}}"#,
            ),
        }
    })
    .await;
    let config = config_head(&[]).replace("versions = [\"1.0\"]", "versions = [\"0.3\"]")
        + "[refresh]\nmin = \"1h\"\n"
        + &integration("raw", &agent.card_url, "");
    let gw = InProcess::start(&config).await;
    let url = gw.agent_url("raw");
    let text = crate::common::http()
        .post(format!("{url}/tasks/t:subscribe"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let events = sse_events(&text);
    assert_eq!(events.len(), 1, "nothing after final: {text}");
    assert_eq!(
        events[0],
        json!({"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_CANCELED"}}}),
        "{text}"
    );
    let msg = json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}]}});
    let r = crate::common::http()
        .post(format!("{url}/message:stream"))
        .header("content-type", "application/a2a+json")
        .body(msg.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let text = r.text().await.unwrap();
    let events = sse_events(&text);
    assert_eq!(events.len(), 1, "{text}");
    assert_eq!(
        events[0]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{text}"
    );
    let m = gw.metrics().await;
    let n = crate::common::gateway::downgrades(&m, "raw", "refused");
    assert_eq!(n, 1.0, "{m}");
    let r = crate::common::http()
        .get(format!("{url}/tasks/ok"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["a2a-extensions"], "urn:a", "{:?}", r.headers());
    assert!(r.headers().get("x-a2a-extensions").is_none());
    assert!(r.headers().get("a2a-version").is_none_or(|v| v != "0.3"));
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        v,
        json!({"id": "ok", "status": {"state": "TASK_STATE_WORKING"}})
    );
    let r = crate::common::http()
        .get(format!("{url}/tasks/t"))
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        v["error"]["details"][0]["reason"], "INVALID_AGENT_RESPONSE",
        "{status} {v}"
    );
    let m = gw.metrics().await;
    let n = crate::common::gateway::metric(
        &m,
        "a2a_egress_invalid_agent_answers_total",
        &[("integration", "raw"), ("reason", "untranslatable")],
    );
    assert_eq!(n, 1.0, "{m}");
    let seen = seen.lock().unwrap();
    let lines: Vec<&str> = seen.iter().map(|r| r.line.as_str()).collect();
    assert_eq!(
        lines,
        [
            "GET /rest/v1/tasks/t:subscribe HTTP/1.1",
            "POST /rest/v1/message:stream HTTP/1.1",
            "POST /rest/v1/message:send HTTP/1.1",
            "GET /rest/v1/tasks/ok HTTP/1.1",
            "GET /rest/v1/tasks/t HTTP/1.1",
        ]
    );
    for r in seen.iter() {
        assert_eq!(r.header("a2a-version"), None, "{}", r.headers);
    }
    let sent: Value = serde_json::from_slice(&seen[1].body).unwrap();
    assert_eq!(
        sent,
        json!({"message": {"messageId": "m", "role": "ROLE_USER", "content": [{"text": "x"}]},
               "configuration": {"blocking": true}})
    );
    assert_eq!(
        seen[1].body, seen[2].body,
        "the retry sends the same 0.3 body"
    );
    assert_eq!(seen[1].header("content-type"), Some("application/json"));
    assert!(seen[0].body.is_empty() && seen[0].header("content-type").is_none());
}

/// Python 0.3.26 on HTTP+JSON refuses a stream its card claims with a bare `500` text page
/// ("Internal Server Error", README of `tests/fixtures/wire/v03`, fact 1), not an A2A error:
/// nothing says the stream was refused, so nothing is downgraded or retried, and the caller gets
/// InvalidAgentResponseError (a server error's page marks nothing stale). Only a card that says
/// `streaming: false` (the card decides first) or an A2A -32004 (JS) downgrades.
#[tokio::test]
async fn a_python_03_http_json_refusal_is_no_a2a_answer_and_is_not_downgraded() {
    let agent = SdkAgent::start_v03(&["--transport", "rest", "--refuse-streams"]);
    let gw = gateway(&agent, "").await;
    let msg = json!({"message": {"messageId": "s2", "role": "ROLE_USER", "parts": [{"text": "task refused"}]}});
    let r = crate::common::http()
        .post(format!("{}/message:stream", gw.agent_url("rest")))
        .header("content-type", "application/json")
        .body(msg.to_string())
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let v: Value = r.json().await.unwrap();
    assert_eq!(status, 500, "{v}");
    assert_eq!(
        v["error"]["details"][0]["reason"], "INVALID_AGENT_RESPONSE",
        "{v}"
    );
    let m = gw.metrics().await;
    let n = crate::common::gateway::downgrades(&m, "rest", "refused");
    assert_eq!(n, 0.0, "{m}");
}
