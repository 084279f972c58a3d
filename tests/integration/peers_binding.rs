//! An orchestrator on one HTTP binding in front of an agent on the other (issue 20, item 5): the
//! integration's `offer` says which bindings the effective card offers, and the gateway moves
//! every call between JSON-RPC and HTTP+JSON (`a2a_egress::translate::binding`). Real peers: the
//! official Python `a2a-sdk` 1.3.0 agent on one binding only (`tests/peers/sdk_agent.py`) and the
//! 0.3.26 one on HTTP+JSON, each driven through the gateway by both official 1.0 SDK clients on
//! the other binding, and by raw requests for the errors and the downgrade.

use serde_json::Value;

use crate::common::SdkAgent;
use crate::common::gateway::{InProcess, config_head, integration, send_request, sse_events};
use crate::common::sdk_client::{SdkRun, drives_tasks, js_client, sdk_client};

/// A gateway with one integration `x` over `agent` offering `offer` (and 0.3 in `[client]`).
async fn gateway(agent: &SdkAgent, offer: &str) -> InProcess {
    let config = config_head(&[]).replace("versions = [\"1.0\"]", "versions = [\"1.0\", \"0.3\"]")
        + &integration("x", &agent.card_url, &format!("offer = {offer}"));
    InProcess::start(&config).await
}

/// One SDK client driver with its URL and binding set: it takes the rest of the arguments.
type Client = Box<dyn Fn(&[&str]) -> SdkRun>;

/// Both 1.0 SDK clients, preferring `binding`, against integration `x`.
fn clients(gw: &InProcess, binding: &'static str) -> [Client; 2] {
    let base = gw.agent_url("x");
    let with = |run: fn(&[&str]) -> SdkRun| -> Client {
        let base = base.clone();
        Box::new(move |args: &[&str]| {
            let mut all = vec!["--url", base.as_str(), "--binding", binding];
            all.extend_from_slice(args);
            run(&all)
        })
    };
    [with(sdk_client), with(js_client)]
}

/// The bindings the effective card offers, in order, each at the integration's URL.
async fn offered(gw: &InProcess) -> Vec<String> {
    let card = gw.effective_card("x").await;
    let url = gw.agent_url("x");
    (card["supportedInterfaces"].as_array().unwrap().iter())
        .map(|i| {
            assert_eq!(i["url"], url.as_str(), "{card:#}");
            i["protocolBinding"].as_str().unwrap().to_owned()
        })
        .collect()
}

/// A raw request to integration `x`: a JSON-RPC `POST` (`path` empty) or an HTTP+JSON route.
async fn raw(
    gw: &InProcess,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> (u16, String) {
    let mut r = crate::common::http()
        .request(method, format!("{}{path}", gw.agent_url("x")))
        .header("a2a-version", "1.0");
    if let Some(b) = body {
        r = r.json(&b);
    }
    let r = r.send().await.unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

/// At least `min` calls went to integration `x`'s agent with `labels` (the agent's protocol and
/// binding on `a2a_egress_upstream_duration_seconds`).
async fn assert_upstream_calls(gw: &InProcess, labels: &[(&str, &str)], min: f64) {
    let m = gw.metrics().await;
    let mut all = vec![("integration", "x")];
    all.extend_from_slice(labels);
    let n = crate::common::gateway::metric(&m, "a2a_egress_upstream_duration_seconds_count", &all);
    assert!(n >= min, "{labels:?}: {n} calls\n{m}");
}

/// JSON-RPC orchestrators reach an agent that serves only HTTP+JSON (under a tenant): every call
/// leaves as the agent's route with the tenant as its prefix, answers and errors come back as
/// JSON-RPC with the caller's id, and a route the card does not offer is refused.
#[tokio::test]
async fn json_rpc_orchestrators_drive_an_http_json_agent() {
    let agent = SdkAgent::start(&["--binding", "rest", "--drive-modes", "--tenant", "t1"]);
    let gw = gateway(&agent, "[\"JSONRPC\"]").await;
    assert_eq!(offered(&gw).await, ["JSONRPC"]);
    for run in clients(&gw, "JSONRPC") {
        drives_tasks(&*run);
    }
    let seen = agent.seen().await;
    let calls: Vec<_> = (seen.iter())
        .filter(|s| s.rest_route.is_some() || s.rpc_method.is_some())
        .collect();
    assert!(calls.len() >= 16, "{calls:#?}");
    assert!(
        calls
            .iter()
            .all(|s| s.rpc_method.is_none() && s.tenant.as_deref() == Some("t1")),
        "{calls:#?}"
    );
    assert!(
        calls
            .iter()
            .any(|s| s.rest_route.as_deref() == Some("POST /message:stream")),
        "{calls:#?}"
    );

    let ask = r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"GetTask","params":{"id":"no such task"}}"#;
    let r = (crate::common::http().post(gw.agent_url("x")))
        .header("content-type", "application/json")
        .body(ask)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let text = r.text().await.unwrap();
    // The caller's id keeps its digits.
    assert!(
        text.contains("\"id\":123456789012345678901234567890"),
        "{text}"
    );
    let v: Value =
        serde_json::from_str(&text.replace("123456789012345678901234567890", "1")).unwrap();
    assert_eq!(v["error"]["code"], -32001, "{v:#}");
    assert_eq!(v["error"]["data"][0]["reason"], "TASK_NOT_FOUND", "{v:#}");
    let (status, text) = raw(&gw, reqwest::Method::GET, "/tasks/x", None).await;
    assert_eq!(status, 404, "{text}");
    assert!(text.contains("BINDING_NOT_OFFERED"), "{text}");
}

/// HTTP+JSON orchestrators reach an agent that serves only JSON-RPC: every call leaves as a
/// JSON-RPC request posted to its interface, and answers and errors come back as HTTP+JSON with
/// the status of the 1.0 error table and the ErrorInfo.
#[tokio::test]
async fn http_json_orchestrators_drive_a_json_rpc_agent() {
    let agent = SdkAgent::start(&["--binding", "jsonrpc", "--drive-modes"]);
    let gw = gateway(&agent, "[\"HTTP+JSON\", \"JSONRPC\"]").await;
    assert_eq!(offered(&gw).await, ["HTTP+JSON", "JSONRPC"]);
    for run in clients(&gw, "HTTP+JSON") {
        drives_tasks(&*run);
    }
    let seen = agent.seen().await;
    let calls: Vec<_> = (seen.iter())
        .filter(|s| s.rest_route.is_some() || s.rpc_method.is_some())
        .collect();
    assert!(calls.len() >= 16, "{calls:#?}");
    assert!(calls.iter().all(|s| s.rest_route.is_none()), "{calls:#?}");
    assert!(
        calls
            .iter()
            .any(|s| s.rpc_method.as_deref() == Some("SendStreamingMessage")),
        "{calls:#?}"
    );

    let (status, text) = raw(
        &gw,
        reqwest::Method::GET,
        "/tasks/no-such-task?historyLength=2",
        None,
    )
    .await;
    assert_eq!(status, 404, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["error"]["status"], "NOT_FOUND", "{v:#}");
    assert_eq!(
        v["error"]["details"][0]["reason"], "TASK_NOT_FOUND",
        "{v:#}"
    );
    let (status, text) = raw(&gw, reqwest::Method::GET, "/tasks?pageSize=2", None).await;
    assert_eq!(status, 200, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert!(
        v["tasks"].as_array().is_some_and(|t| !t.is_empty()),
        "{v:#}"
    );
    // A query value that is not the member's type is refused before anything leaves.
    let before = agent.seen().await.len();
    let (status, text) = raw(&gw, reqwest::Method::GET, "/tasks?pageSize=two", None).await;
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("query.pageSize"), "{text}");
    assert_eq!(agent.seen().await.len(), before);
    // Both offered: a JSON-RPC caller's request is not moved.
    let (status, _) = raw(
        &gw,
        reqwest::Method::POST,
        "",
        Some(send_request("9", "SendMessage", "task plain")),
    )
    .await;
    assert_eq!(status, 200);
    let last = agent.seen().await.pop().unwrap();
    assert_eq!(last.rpc_method.as_deref(), Some("SendMessage"), "{last:#?}");
}

/// The streaming downgrade works across the move: an HTTP+JSON caller's stream to a JSON-RPC
/// agent that does not stream is one SSE event of the `SendMessage` answer; a JSON-RPC caller's
/// stream an HTTP+JSON agent refuses is retried as `message:send`.
#[tokio::test]
async fn streams_are_downgraded_across_the_bindings() {
    let quiet = SdkAgent::start(&["--binding", "jsonrpc", "--streaming", "off"]);
    let gw = gateway(&quiet, "[\"HTTP+JSON\"]").await;
    let msg = send_request("1", "SendStreamingMessage", "task streamed")["params"].clone();
    let (status, text) = raw(&gw, reqwest::Method::POST, "/message:stream", Some(msg)).await;
    assert_eq!(status, 200, "{text}");
    let events = sse_events(&text);
    assert_eq!(events.len(), 1, "{text}");
    assert_eq!(
        events[0]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{text}"
    );
    let sent = quiet.seen().await;
    assert_eq!(
        sent.last().unwrap().rpc_method.as_deref(),
        Some("SendMessage")
    );

    let refusing = SdkAgent::start(&["--binding", "rest", "--refuse-streaming"]);
    let gw = gateway(&refusing, "[\"JSONRPC\"]").await;
    let req = send_request("s-1", "SendStreamingMessage", "task refused");
    let (status, text) = raw(&gw, reqwest::Method::POST, "", Some(req)).await;
    assert_eq!(status, 200, "{text}");
    let events = sse_events(&text);
    assert_eq!(events.len(), 1, "{text}");
    assert_eq!(events[0]["id"], "s-1", "{text}");
    assert!(events[0]["result"]["task"].is_object(), "{text}");
    let routes: Vec<_> = (refusing.seen().await.into_iter())
        .filter_map(|s| s.rest_route)
        .collect();
    assert_eq!(
        routes,
        ["POST /message:stream", "POST /message:send"],
        "{routes:?}"
    );

    // An HTTP+JSON caller's stream that a JSON-RPC agent refuses (its card says it streams).
    let refusing = SdkAgent::start(&["--binding", "jsonrpc", "--refuse-streaming"]);
    let gw = gateway(&refusing, "[\"HTTP+JSON\"]").await;
    let msg = send_request("1", "SendStreamingMessage", "task refused")["params"].clone();
    let (status, text) = raw(&gw, reqwest::Method::POST, "/message:stream", Some(msg)).await;
    assert_eq!(status, 200, "{text}");
    let events = sse_events(&text);
    assert_eq!(events.len(), 1, "{text}");
    assert!(events[0]["task"].is_object(), "{text}");
    let methods: Vec<_> = (refusing.seen().await.into_iter())
        .filter_map(|s| s.rpc_method)
        .collect();
    assert_eq!(
        methods,
        ["SendStreamingMessage", "SendMessage"],
        "{methods:?}"
    );
}

/// The downgrade across the bindings toward A2A 0.3 agents (Python a2a-sdk 0.3.26): a card
/// without streaming is sent `message/send` (JSON-RPC agent, HTTP+JSON caller) or
/// `/v1/message:send` (HTTP+JSON agent, JSON-RPC caller), answered as one SSE event.
#[tokio::test]
async fn streams_to_0_3_agents_are_downgraded_across_the_bindings() {
    let rpc = SdkAgent::start_v03(&["--transport", "jsonrpc", "--no-streaming"]);
    let gw = gateway(&rpc, "[\"HTTP+JSON\"]").await;
    let msg = send_request("1", "SendStreamingMessage", "task streamed")["params"].clone();
    let (status, text) = raw(&gw, reqwest::Method::POST, "/message:stream", Some(msg)).await;
    assert_eq!(status, 200, "{text}");
    let events = sse_events(&text);
    assert_eq!(events.len(), 1, "{text}");
    assert!(
        events[0]["task"].is_object() || events[0]["message"].is_object(),
        "{text}"
    );

    let rest = SdkAgent::start_v03(&["--transport", "rest", "--no-streaming"]);
    let gw = gateway(&rest, "[\"JSONRPC\"]").await;
    let req = send_request("s-9", "SendStreamingMessage", "task streamed");
    let (status, text) = raw(&gw, reqwest::Method::POST, "", Some(req)).await;
    assert_eq!(status, 200, "{text}");
    let events = sse_events(&text);
    assert_eq!(events.len(), 1, "{text}");
    assert_eq!(events[0]["id"], "s-9", "{text}");
    assert!(events[0]["result"].is_object(), "{text}");
    let m = gw.metrics().await;
    let downgrades = crate::common::gateway::metric(
        &m,
        "a2a_egress_downgrades_total",
        &[("integration", "x"), ("cause", "declared_off")],
    );
    assert_eq!(downgrades, 1.0, "{m}");
}

/// Both 1.0 SDK clients on `face` drive an A2A 0.3 agent (the official Python a2a-sdk 0.3.26)
/// serving only `transport` (its binding `agent`): each call is moved to the agent's binding,
/// then made 0.3, and back (the 0.3 agent records no requests: the gateway's metrics say where
/// every call went).
async fn drive_a_0_3_agent(transport: &str, face: &'static str, agent: &str) {
    let peer = SdkAgent::start_v03(&["--transport", transport]);
    let gw = gateway(&peer, &format!("[\"{face}\"]")).await;
    assert_eq!(offered(&gw).await, [face]);
    for run in clients(&gw, face) {
        drives_tasks(&*run);
    }
    assert_upstream_calls(&gw, &[("protocol", "0.3"), ("binding", agent)], 16.0).await;
}

/// A JSON-RPC orchestrator reaches a 0.3 agent that serves only HTTP+JSON.
#[tokio::test]
async fn json_rpc_orchestrators_drive_a_0_3_http_json_agent() {
    drive_a_0_3_agent("rest", "JSONRPC", "HTTP+JSON").await;
}

/// An HTTP+JSON orchestrator reaches a 0.3 agent that serves only JSON-RPC.
#[tokio::test]
async fn http_json_orchestrators_drive_a_0_3_json_rpc_agent() {
    drive_a_0_3_agent("jsonrpc", "HTTP+JSON", "JSONRPC").await;
}
