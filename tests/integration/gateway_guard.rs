//! The content guard through real sockets, in front of the official Python SDK agents (1.0 and
//! 0.3): refusals are protocol-shaped `DATA_DETECTED` naming the detector and the part's path and
//! leave nothing; redactions reach the agent as `[REDACTED:<detector>]` with every other byte
//! kept; recorded findings leave and their data classes meet the integration's `data_classes`;
//! `[guard] inbound = "record"` counts what answers and stream events carry back; the access line,
//! `/readyz` and the planner view name what the guard does.

use std::time::Duration;

use crate::common::SdkAgent;
use crate::common::gateway::{
    GatewayProc, InProcess, config_head, integration, metric, send_request, sse_events,
};
use a2a_egress::testkit::IntegrationToml;
use serde_json::{Value, json};

const CARD: &str = "4111 1111 1111 1111";
const AWS: &str = "AKIAABCDEFGHIJKLMNOP";

/// The skills' input modes every test message uses (text and data parts).
const SKILL: &str = "echo:text/plain,application/json";

fn guard_line(detectors: &[&str], action: &str, extra: &str) -> String {
    format!(
        "guard = {{ detectors = {}, action = \"{action}\"{extra} }}",
        serde_json::to_string(detectors).unwrap()
    )
}

async fn start(agent: &SdkAgent, head: &str, guard: &str, classes: &[&str]) -> InProcess {
    let config = config_head(&[])
        + head
        + &IntegrationToml::new("echo", &agent.card_url)
            .data_classes(classes)
            .extra(guard)
            .text();
    let gw = InProcess::start(&config).await;
    agent.reset().await;
    gw
}

fn info(b: &Value) -> &Value {
    &b["error"]["data"][0]
}

#[tokio::test]
async fn a_refused_finding_is_data_detected_names_detector_and_path_and_leaves_nothing() {
    let agent = SdkAgent::start(&["--skill", SKILL]);
    let gw = start(
        &agent,
        "",
        &guard_line(&["pci", "private_key"], "refuse", ""),
        &["internal"],
    )
    .await;
    // Full-width digits with dashes, split across two text parts: still one card number.
    let mut req = send_request("r1", "SendMessage", "pay with ４１１１-１１１１-");
    req["params"]["message"]["parts"] = json!([{"text": "pay with ４１１１-１１１１-"},
        {"text": "1111-1111 please"}]);
    let (_, b) = gw.rpc("echo", &req, &[]).await;
    assert_eq!(b["id"], "r1", "{b}");
    assert_eq!(b["error"]["code"], -32000, "{b}");
    assert_eq!(info(&b)["reason"], "DATA_DETECTED", "{b}");
    assert_eq!(info(&b)["metadata"]["detector"], "pci", "{b}");
    assert_eq!(
        info(&b)["metadata"]["path"],
        "params.message.parts[0].text",
        "{b}"
    );
    assert!(
        !b.to_string().contains("１１１１"),
        "never the matched text: {b}"
    );

    // HTTP+JSON: a 403 PERMISSION_DENIED google.rpc.Status with the same ErrorInfo; the key
    // of the data part is the caller's content, so the path does not show it.
    let rest = SdkAgent::start(&["--binding", "rest", "--skill", SKILL]);
    let rest_gw = start(
        &rest,
        "",
        &guard_line(&["pci"], "refuse", ""),
        &["internal"],
    )
    .await;
    let body = json!({"message": {"messageId": "m", "role": "ROLE_USER",
        "parts": [{"data": {"note": format!("card {CARD}")}, "mediaType": "application/json"}]}});
    let resp = crate::common::http()
        .post(rest_gw.url("/agents/echo/message:send"))
        .header("content-type", "application/a2a+json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 403);
    let b: Value = resp.json().await.unwrap();
    assert_eq!(b["error"]["status"], "PERMISSION_DENIED", "{b}");
    let i = &b["error"]["details"][0];
    assert_eq!(i["reason"], "DATA_DETECTED", "{b}");
    assert_eq!(i["metadata"]["path"], "message.parts[0].data.*", "{b}");
    assert!(rest.seen_calls().await.is_empty(), "nothing left");

    assert!(agent.seen_calls().await.is_empty(), "nothing left");
    let m = gw.metrics().await;
    let refused = &[
        ("integration", "echo"),
        ("detector", "pci"),
        ("action", "refuse"),
    ];
    assert!(
        metric(&m, "a2a_egress_guard_findings_total", refused) >= 1.0,
        "{m}"
    );
    // Every finding the policy can make exists from the start, at 0.
    let unused = &[
        ("integration", "echo"),
        ("detector", "private_key"),
        ("action", "refuse"),
    ];
    assert_eq!(metric(&m, "a2a_egress_guard_findings_total", unused), 0.0);
}

#[tokio::test]
async fn a_redaction_reaches_the_agent_with_every_other_byte_kept() {
    let agent = SdkAgent::start(&["--skill", SKILL]);
    let gw = start(
        &agent,
        "",
        &guard_line(&["aws_key", "pci"], "redact", ""),
        &["internal"],
    )
    .await;
    let mut req = send_request("d1", "SendMessage", "");
    req["params"]["message"]["parts"] = json!([
        {"text": format!("key {AWS} here")},
        {"data": {"amount": 12.50, "n": 123456789012345678901234567890u128.to_string(),
            "card": CARD}, "mediaType": "application/json"}
    ]);
    req["params"]["message"]["messageId"] = json!("msg-4111111111111111");
    let (s, b) = gw.rpc("echo", &req, &[]).await;
    assert_eq!(s, 200, "{b}");
    assert!(b.get("result").is_some(), "{b}");
    let seen = agent.seen_calls().await;
    assert_eq!(seen.len(), 1, "{seen:#?}");
    let sent = &seen[0].body;
    let parts = &sent["params"]["message"]["parts"];
    assert_eq!(parts[0]["text"], "key [REDACTED:aws_key] here", "{sent}");
    assert_eq!(parts[1]["data"]["card"], "[REDACTED:pci]", "{sent}");
    assert_eq!(parts[1]["data"]["amount"], json!(12.50), "{sent}");
    // Ids are not content: the message id leaves as the caller wrote it.
    assert_eq!(
        sent["params"]["message"]["messageId"],
        "msg-4111111111111111"
    );
    let m = gw.metrics().await;
    for d in ["aws_key", "pci"] {
        let l = &[
            ("integration", "echo"),
            ("detector", d),
            ("action", "redact"),
        ];
        assert_eq!(metric(&m, "a2a_egress_guard_findings_total", l), 1.0, "{m}");
    }
}

#[tokio::test]
async fn a_stream_and_a_03_agent_get_the_redacted_message() {
    let agent = SdkAgent::start(&["--skill", SKILL]);
    let gw = start(
        &agent,
        "",
        &guard_line(&["jwt"], "redact", ""),
        &["internal"],
    )
    .await;
    let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
    let req = send_request("s1", "SendStreamingMessage", &format!("token {jwt}"));
    let (_, _, body) = gw.rpc_raw("echo", &req, &[]).await;
    let events = sse_events(&body);
    assert!(!events.is_empty(), "{body}");
    assert!(
        !body.contains(jwt),
        "the agent echoed the redacted text: {body}"
    );
    let seen = agent.seen_calls().await;
    assert_eq!(
        seen[0].body["params"]["message"]["parts"][0]["text"],
        "token [REDACTED:jwt]"
    );

    // A 0.3 agent: redacted first, then translated (`kind: text` parts).
    let v03 = SdkAgent::start_v03(&[]);
    let config = config_head(&[]).replace("versions = [\"1.0\"]", "versions = [\"1.0\", \"0.3\"]")
        + &integration("old", &v03.card_url, &guard_line(&["jwt"], "redact", ""));
    let gw = InProcess::start(&config).await;
    let (s, b) = gw
        .rpc(
            "old",
            &send_request("o1", "SendMessage", &format!("t {jwt}")),
            &[],
        )
        .await;
    assert_eq!(s, 200, "{b}");
    // The 0.3 agent echoes the text it got: the redacted one, translated both ways.
    let answer = b.to_string();
    assert!(answer.contains("t [REDACTED:jwt]"), "{b}");
    assert!(!answer.contains(jwt), "{b}");
}

#[tokio::test]
async fn recorded_classes_join_the_declared_ones_and_answers_are_recorded_inbound() {
    let agent = SdkAgent::start(&["--skill", SKILL]);
    let head = "[guard]\ninbound = \"record\"\n";
    // `pii` allowed: an e-mail address is recorded and leaves; so does the echo coming back.
    let gw = start(
        &agent,
        head,
        &guard_line(&["email", "pci"], "record", ""),
        &["internal", "pii"],
    )
    .await;
    let text = "write to ann@example.com";
    let (s, b) = gw
        .rpc("echo", &send_request("e1", "SendMessage", text), &[])
        .await;
    assert_eq!(s, 200, "{b}");
    assert!(
        b.to_string().contains("ann@example.com"),
        "forwarded unchanged: {b}"
    );
    let req = send_request("e2", "SendStreamingMessage", text);
    let (_, _, body) = gw.rpc_raw("echo", &req, &[]).await;
    assert!(!sse_events(&body).is_empty(), "{body}");
    let m = gw.metrics().await;
    let rec = &[
        ("integration", "echo"),
        ("detector", "email"),
        ("action", "record"),
    ];
    assert_eq!(
        metric(&m, "a2a_egress_guard_findings_total", rec),
        2.0,
        "{m}"
    );
    let inbound = &[("integration", "echo"), ("detector", "email")];
    // The unary answer, and at least one event of the stream, echo the address.
    assert!(
        metric(&m, "a2a_egress_guard_inbound_findings_total", inbound) >= 2.0,
        "{m}"
    );

    // A card number is class `pci`, which this integration does not allow: refused as any
    // undeclared class would be, before anything leaves.
    agent.reset().await;
    let (_, b) = gw
        .rpc(
            "echo",
            &send_request("e3", "SendMessage", &format!("card {CARD}")),
            &[],
        )
        .await;
    assert_eq!(info(&b)["reason"], "POLICY_DENIED", "{b}");
    assert!(
        b["error"]["message"].as_str().unwrap().contains("pci"),
        "{b}"
    );
    assert!(agent.seen_calls().await.is_empty());
}

#[tokio::test]
async fn readyz_and_the_planner_view_show_the_policy() {
    let agent = SdkAgent::start(&["--skill", SKILL]);
    let gw = start(
        &agent,
        "[guard]\nbudget_bytes = 4096\non_unscanned = \"allow\"\n",
        &guard_line(
            &["pci", "email"],
            "refuse",
            ", actions = { pii = \"redact\" }, url_origins = [\"https://files.example\"]",
        ),
        &["internal"],
    )
    .await;
    let r = gw.readyz().await;
    let g = &r["integrations"]["echo"]["guard"];
    // The config's table order (built-ins first), then the URL check.
    assert_eq!(g["detectors"], json!(["pci", "email", "url_origin"]), "{r}");
    assert_eq!(g["action"], "refuse");
    assert_eq!(g["actions"], json!({"pii": "redact"}));
    assert_eq!(g["url_origins"], json!(["https://files.example"]));
    assert_eq!(g["budget_bytes"], 4096);
    assert_eq!(g["on_unscanned"], "allow");
    assert_eq!(g["inbound"], "off");
    let view: Value = crate::common::http()
        .get(gw.admin_url("/v1/integrations/echo"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(view["guard"], *g, "{view}");
    // What `on_unscanned = "allow"` lets leave past the budget is counted, from 0.
    let series = &[("integration", "echo")];
    let m = gw.metrics().await;
    assert_eq!(
        metric(&m, "a2a_egress_guard_unscanned_bytes_total", series),
        0.0,
        "{m}"
    );
    let long = "x".repeat(6000);
    let (s, _, body) = gw
        .rpc_raw("echo", &send_request("u1", "SendMessage", &long), &[])
        .await;
    assert_eq!(s, 200, "{body}");
    let m = gw.metrics().await;
    let unscanned = metric(&m, "a2a_egress_guard_unscanned_bytes_total", series);
    assert!((1000.0..=6000.0).contains(&unscanned), "{unscanned}: {m}");
}

#[tokio::test]
async fn the_access_line_names_the_detectors() {
    let agent = SdkAgent::start(&["--skill", SKILL]);
    let config = config_head(&[])
        + "[log]\nformat = \"json\"\n"
        + &integration(
            "echo",
            &agent.card_url,
            &guard_line(&["aws_key", "email"], "redact", ""),
        );
    let gw = GatewayProc::start(&config, &[("RUST_LOG", "")]).await;
    agent.reset().await;
    let text = format!("{AWS} to ann@example.com and bob@example.com");
    gw.rpc_raw("echo", &send_request("a1", "SendMessage", &text), &[])
        .await;
    gw.rpc_raw("echo", &send_request("a2", "SendMessage", "nothing"), &[])
        .await;
    let mut lines: Vec<Value>;
    crate::assert_eventually!(
        {
            let (all, _) = gw.process.stderr_all();
            lines = all
                .iter()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .filter(|v| v["target"] == "a2a_egress::access")
                .collect();
            lines.len() >= 2
        },
        within = Duration::from_secs(10),
        "two access lines: {lines:#?}"
    );
    assert_eq!(lines[0]["guard"], "aws_key,email", "{lines:#?}");
    assert_eq!(lines[1]["guard"], "", "{lines:#?}");
    let (all, _) = gw.process.stderr_all();
    let text = all.join("\n");
    for secret in [AWS, "ann@example.com"] {
        assert!(!text.contains(secret), "no log line holds a match: {text}");
    }
}
