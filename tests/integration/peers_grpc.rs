//! A real gRPC-only A2A 1.0 peer (the official Python `a2a-sdk[grpc]` 1.3.0 server,
//! `tests/peers/sdk_agent.py --binding grpc`) behind the gateway (issue 20, items 3 and 5): its
//! card offers only `GRPC`, the effective card offers the gateway's JSON-RPC, and every call the
//! official 1.0 SDK clients (Python and JS) make on it goes out as the rpc of
//! `lf.a2a.v1.A2AService`, with the shaped metadata, and comes back as JSON-RPC answers and
//! events, errors with their ErrorInfo.

use serde_json::{Value, json};

use crate::common::SdkAgent;
use a2a_egress::testkit::IntegrationToml;

use crate::common::gateway::{InProcess, config_head, send_request, sse_events, write_secret};
use crate::common::sdk_client::{drives_tasks, js_client, sdk_client};

const TOKEN: &str = "grpc-admin-token-0123456789abcdef";

/// A gateway whose `[client]` may speak gRPC, with one integration `g` over `agent` (`extra`
/// TOML lines added to it).
async fn gateway(agent: &SdkAgent, extra: &str) -> InProcess {
    let dir = tempfile::tempdir().unwrap();
    write_secret(dir.path(), "admin.token", TOKEN);
    write_secret(dir.path(), "partner.token", "partner-secret");
    let mut config = config_head(&[]).replace(
        "bindings = [\"JSONRPC\", \"HTTP+JSON\"]",
        "bindings = [\"JSONRPC\", \"HTTP+JSON\", \"GRPC\"]",
    );
    config += "[admin]\ntoken_file = \"admin.token\"\n";
    config += &integration_over(agent, extra).await;
    InProcess::start_in(dir, &config).await
}

/// Integration `g` over `agent`, whose approved origins are its card's and its gRPC interface's
/// (another port: an origin of its own).
async fn integration_over(agent: &SdkAgent, extra: &str) -> String {
    let card = agent.card().await;
    let grpc = card["supportedInterfaces"][0]["url"].as_str().unwrap();
    // A bare `host:port` is an https origin (the gateway calls it with TLS).
    let grpc = if grpc.contains("://") {
        grpc.to_owned()
    } else {
        format!("https://{grpc}")
    };
    let origin = |u: &str| url::Url::parse(u).unwrap().origin().ascii_serialization();
    IntegrationToml::new("g", &agent.card_url)
        .origins(&[&origin(&agent.card_url), &origin(&grpc)])
        .extra(extra)
        .text()
}

/// A 1.0 request to integration `g` of `gw`, `path` below its URL (`""`: JSON-RPC): a `POST` of
/// `body`, or a `GET` without one.
async fn a2a(gw: &InProcess, path: &str, body: Option<&Value>) -> reqwest::Response {
    let url = format!("{}{path}", gw.agent_url("g"));
    let http = crate::common::http();
    let r = match body {
        Some(b) => http.post(url).json(b),
        None => http.get(url),
    };
    r.header("a2a-version", "1.0").send().await.unwrap()
}

async fn view(gw: &InProcess) -> Value {
    gw.admin_json("/v1/integrations/g", TOKEN).await
}

/// The profile chooses the agent's one gRPC interface; the card the orchestrator gets offers the
/// gateway's JSON-RPC and HTTP+JSON; and with the default `[client]` (no "GRPC") the agent is recorded but
/// never chosen.
#[tokio::test]
async fn a_grpc_only_agent_is_offered_on_the_gateways_json_rpc_face() {
    let agent = SdkAgent::start(&["--binding", "grpc"]);
    let gw = gateway(&agent, "").await;
    let v = view(&gw).await;
    assert_eq!(
        v["interface"],
        json!({"binding": "GRPC", "version": "1.0"}),
        "{v:#}"
    );
    let card = gw.effective_card("g").await;
    let ifaces = card["supportedInterfaces"].as_array().unwrap();
    let offered: Vec<(&str, &str, &str)> = (ifaces.iter())
        .map(|i| {
            (
                i["protocolBinding"].as_str().unwrap(),
                i["protocolVersion"].as_str().unwrap(),
                i["url"].as_str().unwrap(),
            )
        })
        .collect();
    let url = gw.agent_url("g");
    assert_eq!(
        offered,
        [
            ("JSONRPC", "1.0", url.as_str()),
            ("HTTP+JSON", "1.0", url.as_str())
        ],
        "{card:#}"
    );

    let dir = tempfile::tempdir().unwrap();
    let config = config_head(&[]) + &integration_over(&agent, "").await;
    let plain = InProcess::start_in(dir, &config).await;
    let r = crate::common::http()
        .post(plain.agent_url("g"))
        .json(&send_request("1", "SendMessage", "plain, no gRPC"))
        .send()
        .await
        .unwrap();
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        v["error"]["data"][0]["reason"], "NO_USABLE_PROFILE",
        "{v:#}"
    );
}

/// Both official 1.0 SDK clients drive the gRPC agent through the gateway's JSON-RPC: a message,
/// tasks, a stream, reads, a cancel and the errors (by their ErrorInfo reasons).
#[tokio::test]
async fn the_1_0_sdk_clients_drive_a_grpc_agent() {
    let agent = SdkAgent::start(&["--binding", "grpc", "--drive-modes"]);
    let gw = gateway(&agent, "").await;
    let base = gw.agent_url("g");
    for client in [sdk_client as fn(&[&str]) -> _, js_client] {
        let run = |args: &[&str]| {
            let mut all = vec!["--url", base.as_str()];
            all.extend_from_slice(args);
            client(&all)
        };
        drives_tasks(&run);
    }
    // Every call went out as an rpc of the 1.0 service, with the 1.0 version as metadata.
    let seen = agent.seen().await;
    let rpcs: Vec<_> = seen.iter().filter(|s| s.grpc_method.is_some()).collect();
    assert!(
        rpcs.iter()
            .any(|s| s.grpc_method.as_deref() == Some("SendStreamingMessage")),
        "{rpcs:#?}"
    );
    assert!(
        rpcs.iter().all(|s| s.a2a_version.as_deref() == Some("1.0")),
        "{rpcs:#?}"
    );
    assert!(
        rpcs.iter()
            .all(|s| s.path.starts_with("/lf.a2a.v1.A2AService/")),
        "{rpcs:#?}"
    );
}

/// Raw JSON-RPC toward the gRPC agent: the metadata carries the integration's credential and
/// none of the caller's own headers that are not forwarded; the answer carries the caller's id, a stream's events are
/// JSON-RPC answers, a gRPC error is the JSON-RPC error with the agent's ErrorInfo, and a request
/// whose params are not the method's message is refused before anything leaves.
#[tokio::test]
async fn json_rpc_answers_events_and_errors_come_from_the_rpcs() {
    let agent = SdkAgent::start(&["--binding", "grpc"]);
    let gw = gateway(
        &agent,
        "credential = { type = \"bearer\", file = \"partner.token\" }",
    )
    .await;
    let url = gw.agent_url("g");
    let http = crate::common::http();
    let call = |body: Value| {
        http.post(&url)
            .header("content-type", "application/json")
            .header("a2a-version", "1.0")
            .header("cookie", "session=caller-secret")
            .header("authorization", "Bearer caller-own")
            .json(&body)
            .send()
    };
    let sent = call(
        json!({"jsonrpc":"2.0","id":"abc-1","method":"SendMessage","params":{
        "message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}}}),
    )
    .await
    .unwrap();
    assert_eq!(sent.status(), 200);
    let v: Value = sent.json().await.unwrap();
    assert_eq!(v["id"], "abc-1", "{v:#}");
    let task = &v["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{v:#}");
    assert_eq!(
        task["artifacts"][0]["parts"][0]["text"], "echo: hi",
        "{v:#}"
    );

    // The metadata: the integration's credential (never the caller's), the version, no cookie.
    let seen = agent.seen().await;
    let rpc = (seen.iter())
        .find(|s| s.grpc_method.as_deref() == Some("SendMessage"))
        .expect("the SendMessage rpc");
    assert_eq!(
        rpc.authorization.as_deref(),
        Some("Bearer partner-secret"),
        "{rpc:#?}"
    );
    assert!(!rpc.headers.contains_key("cookie"), "{rpc:#?}");
    assert!(
        !rpc.headers.values().any(|v| v.contains("caller")),
        "{rpc:#?}"
    );

    let missing = call(json!({"jsonrpc":"2.0","id":7,"method":"GetTask","params":{"id":"nope"}}))
        .await
        .unwrap();
    let v: Value = missing.json().await.unwrap();
    assert_eq!(v["id"], 7, "{v:#}");
    assert_eq!(v["error"]["code"], -32001, "{v:#}");
    assert_eq!(v["error"]["data"][0]["reason"], "TASK_NOT_FOUND", "{v:#}");
    assert_eq!(v["error"]["data"][0]["domain"], "a2a-protocol.org", "{v:#}");

    let streamed = call(
        json!({"jsonrpc":"2.0","id":"s","method":"SendStreamingMessage","params":{
        "message":{"messageId":"m2","role":"ROLE_USER","parts":[{"text":"go"}]}}}),
    )
    .await
    .unwrap();
    assert_eq!(streamed.status(), 200);
    assert!(
        streamed.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let events = sse_events(&streamed.text().await.unwrap());
    assert!(events.len() >= 3, "{events:#?}");
    assert!(events.iter().all(|e| e["id"] == "s"), "{events:#?}");
    assert!(events[0]["result"]["task"].is_object(), "{events:#?}");
    assert_eq!(
        events.last().unwrap()["result"]["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED",
        "{events:#?}"
    );

    let before = agent.seen().await.len();
    let bad =
        call(json!({"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":{"not":"a string"}}}))
            .await
            .unwrap();
    let v: Value = bad.json().await.unwrap();
    assert_eq!(v["error"]["code"], -32602, "{v:#}");
    assert_eq!(
        agent.seen().await.len(),
        before,
        "nothing left for the refused request"
    );
}

/// A stream to a gRPC agent that does not stream is answered through the SendMessage rpc, as one
/// SSE event (the profile's downgrade); one whose card claims streaming but whose server refuses
/// it (UNSUPPORTED_OPERATION) is retried once the same way, and streaming stays off.
#[tokio::test]
async fn streams_the_grpc_agent_cannot_serve_are_answered_through_send_message() {
    let stream = json!({"jsonrpc":"2.0","id":"d","method":"SendStreamingMessage","params":{
        "message":{"messageId":"m3","role":"ROLE_USER","parts":[{"text":"once"}]}}});
    for args in [&["--streaming", "off"][..], &["--refuse-streaming"][..]] {
        let mut all = vec!["--binding", "grpc"];
        all.extend_from_slice(args);
        let agent = SdkAgent::start(&all);
        let gw = gateway(&agent, "").await;
        let r = a2a(&gw, "", Some(&stream)).await;
        assert_eq!(r.status(), 200, "{args:?}");
        let events = sse_events(&r.text().await.unwrap());
        assert_eq!(events.len(), 1, "{args:?}: {events:#?}");
        assert_eq!(events[0]["id"], "d");
        assert_eq!(
            events[0]["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
            "{args:?}: {events:#?}"
        );
        let rpcs: Vec<String> = (agent.seen().await.into_iter())
            .filter_map(|s| s.grpc_method)
            .collect();
        let want: &[&str] = if args[0] == "--streaming" {
            &["SendMessage"]
        } else {
            &["SendStreamingMessage", "SendMessage"]
        };
        assert_eq!(rpcs, want, "{args:?}");
        assert!(
            gw.metrics()
                .await
                .lines()
                .any(|l| l.starts_with("a2a_egress_downgrades_total{")
                    && l.contains("integration=\"g\"")),
            "{args:?}: the downgrade is counted"
        );
    }
}

/// A card that writes its gRPC interface `host:port` (the SDK samples' form) is called with TLS,
/// trusting the integration's `ca_file` as every other call does (the agent serves only TLS, so
/// a plaintext call could not succeed).
#[tokio::test]
async fn a_bare_host_port_grpc_interface_is_called_with_tls() {
    let pki = crate::common::tls::TestPki::new(&["127.0.0.1", "localhost"]);
    let agent = SdkAgent::start_tls(&["--binding", "grpc", "--grpc-url", "bare"], &pki);
    let card = agent.card().await;
    let url = card["supportedInterfaces"][0]["url"].as_str().unwrap();
    assert!(!url.contains("://"), "{url}");
    let ca = format!("ca_file = \"{}\"", pki.ca_path.display());
    let gw = gateway(&agent, &ca).await;
    let send = |gw: &InProcess| {
        crate::common::http()
            .post(gw.agent_url("g"))
            .header("a2a-version", "1.0")
            .json(&send_request("1", "SendMessage", "over tls"))
            .send()
    };
    let v: Value = send(&gw).await.unwrap().json().await.unwrap();
    assert_eq!(
        v["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{v:#}"
    );
    assert!(
        (agent.seen().await.iter()).any(|s| s.grpc_method.as_deref() == Some("SendMessage")),
        "the call went out over gRPC"
    );
}

/// A gRPC agent is probed over gRPC: each probe is the rpc of the JSON-RPC request it would be,
/// with the metadata, judged as the JSON-RPC answer it is made into. The Python 1.3.0 gRPC
/// server does not read `a2a-version` (FACTS), so the version claim fails honestly; the
/// interface, streaming and media-type claims hold, and the probe messages reach only the
/// probe skill.
#[tokio::test]
async fn a_grpc_agent_is_probed_over_grpc() {
    let agent = SdkAgent::start(&["--binding", "grpc"]);
    let dir = tempfile::tempdir().unwrap();
    let config = config_head(&[]).replace(
        "bindings = [\"JSONRPC\", \"HTTP+JSON\"]",
        "bindings = [\"JSONRPC\", \"HTTP+JSON\", \"GRPC\"]",
    ) + &integration_over(&agent, "").await
        + "[integrations.probe]\nskill = \"echo\"\ntext = \"probe hello\"\n";
    let path = dir.path().join("gateway.toml");
    std::fs::write(&path, config).unwrap();
    agent.reset().await;
    let out = crate::common::gateway_cmd()
        .args(["probe", "g", "--config"])
        .arg(&path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let all = format!("{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        text.contains("interface: ok (answered with error TASK_NOT_FOUND)"),
        "{all}"
    );
    assert!(text.contains("version: failed (took A2A-Version"), "{all}");
    assert!(text.contains("streaming: ok"), "{all}");
    assert!(text.contains("input:text/plain: ok"), "{all}");
    let rpcs: Vec<_> = (agent.seen().await.into_iter())
        .filter_map(|s| s.grpc_method.map(|m| (m, s.a2a_version)))
        .collect();
    assert!(
        rpcs.contains(&("GetTask".into(), Some("1.0".into())))
            && rpcs.contains(&("SendStreamingMessage".into(), Some("1.0".into())))
            && rpcs.contains(&("SendMessage".into(), Some("1.0".into()))),
        "{rpcs:?}"
    );
    assert!(
        rpcs.iter()
            .any(|(m, v)| m == "GetTask" && v.as_deref() != Some("1.0")),
        "the version probe sends another version: {rpcs:?}"
    );
}

/// No gRPC call outlives its caller or its deadlines: a caller that hangs up mid-stream ends the
/// rpc at the agent (its stream handler is cancelled), and an agent slower than
/// `upstream_header_timeout` is answered 504 `UPSTREAM_TIMEOUT`, counted by phase.
#[tokio::test]
async fn a_grpc_call_ends_with_its_caller_and_at_its_deadline() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let agent = SdkAgent::start(&["--binding", "grpc", "--drive-modes"]);
    let gw = gateway(&agent, "").await;
    let body = json!({"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{
        "message":{"messageId":"m4","role":"ROLE_USER","parts":[{"text":"hold the line"}]}}})
    .to_string();
    let mut s = tokio::net::TcpStream::connect(gw.proxy).await.unwrap();
    let req = format!(
        "POST /agents/g HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n\
         A2A-Version: 1.0\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains("TASK_STATE_WORKING") {
        let n = s.read(&mut buf).await.unwrap();
        assert!(n > 0, "{}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&seen).into_owned();
    let task = text
        .split("\"taskId\":\"")
        .nth(1)
        .and_then(|t| t.split('"').next())
        .expect("the first events name the task")
        .to_owned();
    assert!(agent.ended().await.is_empty());
    drop(s);
    crate::assert_eventually!(
        agent
            .ended()
            .await
            .contains(&"on_message_send_stream".to_owned()),
        "the agent's stream did not end after the caller left"
    );
    // It ended because the caller left: the task itself is still held working.
    let v: Value = a2a(
        &gw,
        "",
        Some(&json!({"jsonrpc":"2.0","id":2,"method":"GetTask","params":{"id": task}})),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(
        v["result"]["status"]["state"], "TASK_STATE_WORKING",
        "{v:#}"
    );

    let slow = SdkAgent::start(&["--binding", "grpc", "--grpc-hang"]);
    let limits =
        "[limits]\nupstream_header_timeout = \"300ms\"\nupstream_body_timeout = \"300ms\"\n";
    let dir = tempfile::tempdir().unwrap();
    let config = config_head(&[]).replace(
        "bindings = [\"JSONRPC\", \"HTTP+JSON\"]",
        "bindings = [\"JSONRPC\", \"HTTP+JSON\", \"GRPC\"]",
    ) + limits
        + &integration_over(&slow, "").await;
    let gw = InProcess::start_in(dir, &config).await;
    let r = a2a(&gw, "", Some(&send_request("1", "SendMessage", "too slow"))).await;
    assert_eq!(r.status(), 504);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["data"][0]["reason"], "UPSTREAM_TIMEOUT", "{v:#}");
    assert_eq!(
        crate::common::gateway::metric(
            &gw.metrics().await,
            "a2a_egress_upstream_timeouts_total",
            &[("integration", "g"), ("phase", "header")]
        ),
        1.0
    );
}

/// The extended card of a gRPC agent comes from its `GetExtendedAgentCard` rpc, with the
/// integration's credential as metadata: its extra skill reaches the profile; without a
/// credential no extended card is asked for.
#[tokio::test]
async fn the_extended_card_of_a_grpc_agent_comes_from_its_rpc() {
    let agent = SdkAgent::start(&["--binding", "grpc", "--extended-card"]);
    let gw = gateway(
        &agent,
        "credential = { type = \"bearer\", file = \"partner.token\" }",
    )
    .await;
    let v = view(&gw).await;
    assert_eq!(v["usable"], true, "{v:#}");
    assert!(v.to_string().contains("extended-echo"), "{v:#}");
    let asked: Vec<_> = (agent.seen().await.into_iter())
        .filter(|s| s.grpc_method.as_deref() == Some("GetExtendedAgentCard"))
        .collect();
    assert_eq!(asked.len(), 1, "{asked:#?}");
    assert_eq!(
        asked[0].authorization.as_deref(),
        Some("Bearer partner-secret")
    );
    assert_eq!(asked[0].a2a_version.as_deref(), Some("1.0"));

    let plain = SdkAgent::start(&["--binding", "grpc", "--extended-card"]);
    let gw = gateway(&plain, "").await;
    let v = view(&gw).await;
    assert!(!v.to_string().contains("extended-echo"), "{v:#}");
    assert!(
        !(plain.seen().await.iter())
            .any(|s| s.grpc_method.as_deref() == Some("GetExtendedAgentCard"))
    );
}

/// An HTTP+JSON caller reaches the gRPC agent too: the route's and the query's parameters and the
/// body make the rpc's request, answers are the response messages' ProtoJSON, errors the 1.0
/// `google.rpc.Status` with the HTTP status of their A2A error, a stream's events the
/// `StreamResponse`s; a query parameter of the wrong type is refused before anything leaves.
#[tokio::test]
async fn an_http_json_caller_reaches_a_grpc_agent() {
    let agent = SdkAgent::start(&["--binding", "grpc"]);
    let gw = gateway(&agent, "").await;
    let sent = a2a(
        &gw,
        "/message:send",
        Some(&json!({"message":{"messageId":"r1","role":"ROLE_USER","parts":[{"text":"rest"}]}})),
    )
    .await;
    assert_eq!(sent.status(), 200);
    let v: Value = sent.json().await.unwrap();
    let task = &v["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{v:#}");
    let id = task["id"].as_str().unwrap().to_owned();

    let got: Value = a2a(&gw, &format!("/tasks/{id}?historyLength=1"), None)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(got["id"], id.as_str(), "{got:#}");
    assert_eq!(got["history"].as_array().map(Vec::len), Some(1), "{got:#}");

    let missing = a2a(&gw, "/tasks/no-such-task", None).await;
    assert_eq!(missing.status(), 404);
    let v: Value = missing.json().await.unwrap();
    assert_eq!(v["error"]["status"], "NOT_FOUND", "{v:#}");
    assert_eq!(
        v["error"]["details"][0]["reason"], "TASK_NOT_FOUND",
        "{v:#}"
    );

    let streamed = a2a(
        &gw,
        "/message:stream",
        Some(&json!({"message":{"messageId":"r2","role":"ROLE_USER","parts":[{"text":"flow"}]}})),
    )
    .await;
    assert_eq!(streamed.status(), 200);
    let events = sse_events(&streamed.text().await.unwrap());
    assert!(events[0]["task"].is_object(), "{events:#?}");
    assert_eq!(
        events.last().unwrap()["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED",
        "{events:#?}"
    );

    let listed: Value = a2a(&gw, "/tasks?pageSize=1", None)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        listed["tasks"].as_array().map(Vec::len),
        Some(1),
        "{listed:#}"
    );

    let before = agent.seen().await.len();
    let bad = a2a(&gw, "/tasks?pageSize=many", None).await;
    assert_eq!(bad.status(), 400);
    assert_eq!(
        agent.seen().await.len(),
        before,
        "nothing left for the refused request"
    );
}
