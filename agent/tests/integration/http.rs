//! The reference agent over raw HTTP (reqwest), for what a client SDK hides: card cache validators
//! and 304, registry reload (file change, SIGHUP, failed reload), header negotiation, exact error
//! bodies with their ErrorInfo, SSE framing, and the misbehaviour switches.

use std::time::Duration;

use crate::common::RefAgent;
use crate::common::ref_agent::PARTNER_TOKEN;
use futures::StreamExt;
use serde_json::{Value, json};

const TRACE: &str = "https://example.com/ext/trace/v1";

fn variant_text(edits: &[(&str, &str)]) -> String {
    let mut text = RefAgent::sample_registry_text();
    for (from, to) in edits {
        assert!(text.contains(from), "the sample registry has no {from:?}");
        text = text.replacen(from, to, 1);
    }
    text
}

fn variant(edits: &[(&str, &str)]) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = RefAgent::write_registry(dir.path(), "registry.toml", &variant_text(edits));
    (dir, path)
}

fn send(method: &str, text: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": "r1", "method": method, "params": {
        "message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": text}]}}})
}

async fn rpc(agent: &RefAgent, body: &Value, headers: &[(&str, &str)]) -> reqwest::Response {
    let mut req = crate::common::http().post(agent.jsonrpc_url()).json(body);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    req.send().await.unwrap()
}

/// The JSON-RPC error's (code, ErrorInfo) after checking the ErrorInfo shape.
fn rpc_error(v: &Value) -> (i64, &Value) {
    let e = &v["error"];
    let info = &e["data"][0];
    assert_eq!(
        info["@type"], "type.googleapis.com/google.rpc.ErrorInfo",
        "{v}"
    );
    (
        e["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("not an error: {v}")),
        info,
    )
}

/// The REST error's (HTTP status, google.rpc status, ErrorInfo).
async fn rest_error(resp: reqwest::Response) -> (u16, String, Value) {
    let status = resp.status().as_u16();
    let v: Value = resp.json().await.unwrap();
    let info = v["error"]["details"][0].clone();
    assert_eq!(
        info["@type"], "type.googleapis.com/google.rpc.ErrorInfo",
        "{v}"
    );
    assert_eq!(v["error"]["code"], status, "{v}");
    (
        status,
        v["error"]["status"].as_str().unwrap().to_string(),
        info,
    )
}

#[tokio::test]
async fn card_has_etag_cache_control_and_answers_304() {
    let agent = RefAgent::sample();
    let http = crate::common::http();
    let resp = http.get(&agent.card_url).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let etag = resp.headers()["etag"].to_str().unwrap().to_string();
    assert!(etag.starts_with("\"sha256:"), "{etag}");
    assert_eq!(resp.headers()["cache-control"], "public, max-age=300");
    assert_eq!(resp.headers()["content-type"], "application/json");
    let card: Value = resp.json().await.unwrap();
    assert_eq!(card["supportedInterfaces"][0]["url"], agent.jsonrpc_url());

    for inm in [
        etag.clone(),
        format!("W/{etag}"),
        format!("\"other\", {etag}"),
    ] {
        let resp = http
            .get(&agent.card_url)
            .header("If-None-Match", &inm)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 304, "{inm}");
        assert_eq!(resp.headers()["etag"], etag.as_str());
        assert_eq!(resp.headers()["cache-control"], "public, max-age=300");
        assert!(resp.bytes().await.unwrap().is_empty());
    }
    let resp = http
        .get(&agent.card_url)
        .header("If-None-Match", "\"sha256:stale\"")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
}

#[tokio::test]
async fn file_change_reloads_the_card_and_a_bad_registry_keeps_the_old_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = RefAgent::write_registry(dir.path(), "registry.toml", &variant_text(&[]));
    let agent = RefAgent::start(&path, &RefAgent::demo_envs());
    let http = crate::common::http();
    let before = agent.card().await;
    let etag_before = http.get(&agent.card_url).send().await.unwrap().headers()["etag"]
        .to_str()
        .unwrap()
        .to_string();

    // A changed public skill → a new card version and ETag; the old ETag no longer matches.
    let changed = variant_text(&[(
        "Repeats the text it receives, unchanged.",
        "Repeats the text it receives, unchanged, now with a guarantee.",
    )]);
    // Editors replace files by rename; do the same.
    let tmp = RefAgent::write_registry(dir.path(), "registry.toml.tmp", &changed);
    std::fs::rename(&tmp, &path).unwrap();
    let after = agent
        .wait_for_card(|c| c["version"] != before["version"])
        .await;
    assert!(
        after["skills"][0]["description"]
            .as_str()
            .unwrap()
            .contains("guarantee")
    );
    let resp = http
        .get(&agent.card_url)
        .header("If-None-Match", &etag_before)
        .send()
        .await
        .unwrap();
    assert_eq!(
        resp.status(),
        200,
        "the old ETag must not validate the new card"
    );

    // A registry that fails validation is rejected; the running one stays.
    std::fs::write(&path, changed.replace("state = \"ga\"", "state = \"beta\"")).unwrap();
    crate::assert_eventually!(
        agent.process.stderr_tail().contains("reload failed"),
        every = Duration::from_millis(100),
        "no failed reload logged"
    );
    assert_eq!(agent.card().await, after);
    let resp = rpc(
        &agent,
        &send("SendMessage", "echo still here"),
        &[("A2A-Version", "1.0")],
    )
    .await;
    let v: Value = resp.json().await.unwrap();
    assert_eq!(
        v["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{v}"
    );
}

#[tokio::test]
async fn sighup_reloads_the_registry() {
    let dir = tempfile::tempdir().unwrap();
    let path = RefAgent::write_registry(dir.path(), "registry.toml", &variant_text(&[]));
    // Polling off: only SIGHUP can make the agent see the change.
    let agent =
        RefAgent::start_with_args(&path, &RefAgent::demo_envs(), &["--watch-interval-ms", "0"]);
    let before = agent.card().await;
    std::fs::write(
        &path,
        variant_text(&[(
            "id = \"stream-report\"\nstate = \"ga\"",
            "id = \"stream-report\"\nstate = \"removed\"\nreplacement = \"echo\"",
        )]),
    )
    .unwrap();
    agent.sighup();
    let after = agent
        .wait_for_card(|c| c["version"] != before["version"])
        .await;
    let ids: Vec<&str> = after["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["echo", "lookup-invoice", "invoice-status"]);
    assert!(agent.process.stderr_tail().contains("SIGHUP"));
}

#[tokio::test]
async fn version_header_is_negotiated_on_both_bindings() {
    let agent = RefAgent::sample();
    // missing = 0.3 → VersionNotSupportedError
    let v: Value = rpc(&agent, &send("SendMessage", "echo"), &[])
        .await
        .json()
        .await
        .unwrap();
    let (code, info) = rpc_error(&v);
    assert_eq!(code, -32009);
    assert_eq!(info["reason"], "VERSION_NOT_SUPPORTED");
    assert_eq!(info["domain"], "a2a-protocol.org");
    assert_eq!(info["metadata"]["requestedVersion"], "0.3");
    assert_eq!(v["id"], "r1");
    let v: Value = rpc(
        &agent,
        &send("SendMessage", "echo"),
        &[("A2A-Version", "2.0")],
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(rpc_error(&v).0, -32009);
    // patch numbers do not take part
    let v: Value = rpc(
        &agent,
        &send("SendMessage", "echo"),
        &[("A2A-Version", "1.0.9")],
    )
    .await
    .json()
    .await
    .unwrap();
    assert!(v.get("result").is_some(), "{v}");

    let resp = crate::common::http()
        .post(format!("{}/message:send", agent.rest_url()))
        .json(&send("", "echo")["params"])
        .send()
        .await
        .unwrap();
    let (status, rpc_status, info) = rest_error(resp).await;
    assert_eq!((status, rpc_status.as_str()), (400, "FAILED_PRECONDITION"));
    assert_eq!(info["reason"], "VERSION_NOT_SUPPORTED");
}

#[tokio::test]
async fn extensions_header_is_echoed_and_required_ones_enforced() {
    let agent = RefAgent::sample();
    let resp = rpc(
        &agent,
        &send("SendMessage", "echo"),
        &[
            ("A2A-Version", "1.0"),
            (
                "A2A-Extensions",
                &format!("https://x.example/unknown/v1, {TRACE}"),
            ),
        ],
    )
    .await;
    assert_eq!(resp.headers()["a2a-extensions"], TRACE);
    let resp = rpc(
        &agent,
        &send("SendMessage", "echo"),
        &[("A2A-Version", "1.0")],
    )
    .await;
    assert!(resp.headers().get("a2a-extensions").is_none());
    drop(agent);

    let (_dir, path) = variant(&[("required = false", "required = true")]);
    let agent = RefAgent::start(&path, &RefAgent::demo_envs());
    let v: Value = rpc(&agent, &send("GetTask", "x"), &[("A2A-Version", "1.0")])
        .await
        .json()
        .await
        .unwrap();
    let (code, info) = rpc_error(&v);
    assert_eq!(code, -32008);
    assert_eq!(info["reason"], "EXTENSION_SUPPORT_REQUIRED");
    assert_eq!(info["metadata"]["extensions"], TRACE);
    let resp = crate::common::http()
        .get(format!("{}/tasks", agent.rest_url()))
        .header("A2A-Version", "1.0")
        .send()
        .await
        .unwrap();
    let (status, _, info) = rest_error(resp).await;
    assert_eq!(status, 400);
    assert_eq!(info["reason"], "EXTENSION_SUPPORT_REQUIRED");
}

#[tokio::test]
async fn malformed_requests_get_protocol_errors_naming_the_field() {
    let agent = RefAgent::sample();
    let h = [("A2A-Version", "1.0")];
    let bad_part = json!({"jsonrpc": "2.0", "id": 7, "method": "SendMessage", "params": {
        "message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "a", "data": {}}]}}});
    let v: Value = rpc(&agent, &bad_part, &h).await.json().await.unwrap();
    let (code, info) = rpc_error(&v);
    assert_eq!(code, -32602);
    assert_eq!(info["reason"], "INVALID_PARAMS");
    assert_eq!(info["metadata"]["field"], "message.parts[0]");
    assert_eq!(v["id"], 7);

    let resp = crate::common::http()
        .post(agent.jsonrpc_url())
        .header("A2A-Version", "1.0")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(rpc_error(&v).0, -32700);
    assert_eq!(v["id"], Value::Null);

    let v: Value = rpc(&agent, &json!([send("GetTask", "x")]), &h)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(rpc_error(&v).0, -32600);
    let v: Value = rpc(&agent, &send("message/send", "x"), &h)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(rpc_error(&v).0, -32601);

    // REST: query parameter out of range, bad enum, unknown route
    let http = crate::common::http();
    let resp = http
        .get(format!("{}/tasks?pageSize=0", agent.rest_url()))
        .header("A2A-Version", "1.0")
        .send()
        .await
        .unwrap();
    let (status, rpc_status, info) = rest_error(resp).await;
    assert_eq!((status, rpc_status.as_str()), (400, "INVALID_ARGUMENT"));
    assert_eq!(info["metadata"]["field"], "pageSize");
    let resp = http
        .get(format!("{}/v1/card", agent.rest_url()))
        .header("A2A-Version", "1.0")
        .send()
        .await
        .unwrap();
    let (status, _, info) = rest_error(resp).await;
    assert_eq!(status, 404);
    assert_eq!(info["reason"], "METHOD_NOT_FOUND");
    // JSON-RPC takes POST only
    let resp = http.get(agent.jsonrpc_url()).send().await.unwrap();
    assert_eq!(resp.status(), 405);
}

#[tokio::test]
async fn bad_tokens_are_401_and_wrong_tenants_403() {
    let agent = RefAgent::sample();
    let resp = rpc(
        &agent,
        &send("SendMessage", "echo"),
        &[
            ("A2A-Version", "1.0"),
            ("Authorization", "Bearer wrong-token"),
        ],
    )
    .await;
    assert_eq!(resp.status(), 401);
    assert_eq!(resp.headers()["www-authenticate"], "Bearer");
    let v: Value = resp.json().await.unwrap();
    let (code, info) = rpc_error(&v);
    assert_eq!(code, -31001);
    assert_eq!(info["reason"], "UNAUTHENTICATED");

    let auth = format!("Bearer {PARTNER_TOKEN}");
    let resp = crate::common::http()
        .post(format!("{}/globex/message:send", agent.rest_url()))
        .header("A2A-Version", "1.0")
        .header("Authorization", &auth)
        .json(&send("", "echo")["params"])
        .send()
        .await
        .unwrap();
    let (status, rpc_status, info) = rest_error(resp).await;
    assert_eq!((status, rpc_status.as_str()), (403, "PERMISSION_DENIED"));
    assert_eq!(info["reason"], "PERMISSION_DENIED");
}

#[tokio::test]
async fn extended_card_flag_off_is_unsupported_operation_on_both_bindings() {
    let (_dir, path) = variant(&[(
        "# extended_agent_card: omitted",
        "extended_agent_card = false\n# omitted",
    )]);
    // extended manifests with the flag off is a registry error: drop them first
    let text = std::fs::read_to_string(&path).unwrap();
    let start = text
        .find("[[manifests]]\nid = \"reconcile-invoice\"")
        .unwrap();
    let end = text.find("[[manifests]]\nid = \"invoice-status\"").unwrap();
    let mut text = format!("{}{}", &text[..start], &text[end..]);
    text.truncate(
        text.find("[[manifests]]\nid = \"reconcile-invoice-v0\"")
            .unwrap(),
    );
    std::fs::write(&path, text).unwrap();
    let agent = RefAgent::start(&path, &RefAgent::demo_envs());
    let auth = format!("Bearer {PARTNER_TOKEN}");
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "GetExtendedAgentCard"});
    let v: Value = rpc(
        &agent,
        &body,
        &[("A2A-Version", "1.0"), ("Authorization", &auth)],
    )
    .await
    .json()
    .await
    .unwrap();
    let (code, info) = rpc_error(&v);
    assert_eq!(code, -32004);
    assert_eq!(info["reason"], "UNSUPPORTED_OPERATION");
    let resp = crate::common::http()
        .get(format!("{}/extendedAgentCard", agent.rest_url()))
        .header("A2A-Version", "1.0")
        .header("Authorization", &auth)
        .send()
        .await
        .unwrap();
    let (status, _, info) = rest_error(resp).await;
    assert_eq!(status, 400);
    assert_eq!(info["reason"], "UNSUPPORTED_OPERATION");
}

/// Reads an SSE body to its end; returns the `data:` payloads and whether the body ended in an
/// error (a cut connection) rather than cleanly.
async fn read_sse(resp: reqwest::Response) -> (Vec<Value>, bool) {
    let mut stream = resp.bytes_stream();
    let mut buf = String::new();
    let mut cut = false;
    while let Some(chunk) = stream.next().await {
        match chunk {
            Ok(b) => buf.push_str(&String::from_utf8_lossy(&b)),
            Err(_) => {
                cut = true;
                break;
            }
        }
    }
    let events = buf
        .split("\n\n")
        .filter_map(|frame| {
            frame
                .lines()
                .find_map(|l| l.strip_prefix("data: ").or_else(|| l.strip_prefix("data:")))
        })
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    (events, cut)
}

#[tokio::test]
async fn jsonrpc_stream_events_are_full_envelopes_with_the_request_id() {
    let agent = RefAgent::sample();
    let resp = rpc(
        &agent,
        &send("SendStreamingMessage", "stream a report in 2 parts"),
        &[("A2A-Version", "1.0"), ("A2A-Extensions", TRACE)],
    )
    .await;
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    assert_eq!(resp.headers()["a2a-extensions"], TRACE);
    let (events, cut) = read_sse(resp).await;
    assert!(!cut);
    assert_eq!(events.len(), 5, "{events:?}");
    for e in &events {
        assert_eq!(e["jsonrpc"], "2.0");
        assert_eq!(e["id"], "r1");
    }
    assert!(events[0]["result"]["task"].is_object());
    assert_eq!(
        events[4]["result"]["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
}

#[tokio::test]
async fn drop_mid_stream_cuts_the_connection_after_n_events() {
    let (_dir, path) = variant(&[(
        "# drop_stream_after_events = 2",
        "drop_stream_after_events = 2",
    )]);
    let agent = RefAgent::start(&path, &RefAgent::demo_envs());
    let resp = rpc(
        &agent,
        &send("SendStreamingMessage", "stream a report in 5 parts"),
        &[("A2A-Version", "1.0")],
    )
    .await;
    assert_eq!(resp.status(), 200);
    let (events, cut) = read_sse(resp).await;
    assert!(
        cut,
        "the body must end in an error, not cleanly: {events:?}"
    );
    assert_eq!(events.len(), 2, "{events:?}");
    // REST: same
    let resp = crate::common::http()
        .post(format!("{}/message:stream", agent.rest_url()))
        .header("A2A-Version", "1.0")
        .json(&send("", "stream a report in 5 parts")["params"])
        .send()
        .await
        .unwrap();
    let (events, cut) = read_sse(resp).await;
    assert!(cut);
    assert_eq!(events.len(), 2);
    assert!(
        events[0]["task"].is_object(),
        "bare StreamResponse: {events:?}"
    );
}

#[tokio::test]
async fn refused_streaming_before_the_first_event_is_a_plain_error() {
    let (_dir, path) = variant(&[("refuse_streaming = false", "refuse_streaming = true")]);
    let agent = RefAgent::start(&path, &RefAgent::demo_envs());
    let resp = rpc(
        &agent,
        &send("SendStreamingMessage", "echo"),
        &[("A2A-Version", "1.0")],
    )
    .await;
    assert_eq!(resp.headers()["content-type"], "application/json");
    let v: Value = resp.json().await.unwrap();
    let (code, info) = rpc_error(&v);
    assert_eq!(code, -32004);
    assert_eq!(info["reason"], "UNSUPPORTED_OPERATION");
    assert_eq!(agent.card().await["capabilities"]["streaming"], true);
}

#[tokio::test]
async fn oversized_bodies_are_rejected() {
    let (_dir, path) = variant(&[("max_request_bytes = 1048576", "max_request_bytes = 2048")]);
    let agent = RefAgent::start(&path, &RefAgent::demo_envs());
    let big = "x".repeat(4096);
    let resp = rpc(
        &agent,
        &send("SendMessage", &big),
        &[("A2A-Version", "1.0")],
    )
    .await;
    assert_eq!(resp.status(), 413);
}

#[tokio::test]
async fn rest_extended_card_is_privately_cacheable_and_revalidates() {
    let agent = RefAgent::sample();
    let http = crate::common::http();
    let url = format!("{}/extendedAgentCard", agent.rest_url());
    let auth = format!("Bearer {PARTNER_TOKEN}");
    let resp = http
        .get(&url)
        .header("A2A-Version", "1.0")
        .header("Authorization", &auth)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["cache-control"], "private, max-age=300");
    let etag = resp.headers()["etag"].to_str().unwrap().to_string();
    let card: Value = resp.json().await.unwrap();
    assert!(
        card["skills"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["id"] == "reconcile-invoice")
    );
    let resp = http
        .get(&url)
        .header("A2A-Version", "1.0")
        .header("Authorization", &auth)
        .header("If-None-Match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 304);
    // the public card's validator does not match the extended card
    assert_ne!(
        http.get(&agent.card_url).send().await.unwrap().headers()["etag"],
        etag.as_str()
    );
}

#[test]
fn sigterm_shuts_down_cleanly() {
    let mut agent = RefAgent::sample();
    agent.process.terminate();
    let status = agent
        .process
        .wait_timeout(Duration::from_secs(15))
        .expect("the agent exits after SIGTERM");
    assert!(
        status.success(),
        "{status:?}\n{}",
        agent.process.stderr_tail()
    );
}

#[test]
fn exit_on_stdin_eof_stops_an_orphaned_agent() {
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_a2a-agent"))
        .args([
            "--exit-on-stdin-eof",
            "--listen",
            "127.0.0.1:0",
            "--registry",
        ])
        .arg(RefAgent::sample_registry())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let Some(status) = crate::common::process::wait_exit(&mut child, Duration::from_secs(15))
    else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("the agent kept running with stdin at EOF");
    };
    assert!(status.success(), "{status:?}");
}

/// The latency switch delays A2A calls but not the card. One-directional on purpose: a call held
/// for 10 minutes cannot answer within 3 seconds however loaded the machine is.
#[tokio::test]
async fn latency_switch_holds_calls_but_not_the_card() {
    let (_dir, path) = variant(&[("latency_ms = 0", "latency_ms = 600000")]);
    let agent = RefAgent::start(&path, &RefAgent::demo_envs());
    assert_eq!(agent.card().await["name"], "Reference Finance Agent");
    let held = crate::common::http()
        .post(agent.jsonrpc_url())
        .header("A2A-Version", "1.0")
        .json(&send("SendMessage", "echo"))
        .timeout(Duration::from_secs(3))
        .send()
        .await;
    assert!(held.is_err_and(|e| e.is_timeout()));
}
