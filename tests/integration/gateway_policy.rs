//! Every gateway refusal, through real sockets, in front of the official Python SDK agent: each is
//! protocol-shaped (JSON-RPC envelope with the caller's id, or google.rpc.Status), carries
//! `ErrorInfo{domain: "a2a-egress", reason}`, is counted, and nothing reaches the agent.

use crate::common::SdkAgent;
use crate::common::gateway::{InProcess, config_head, integration, metric, send_request};
use serde_json::{Value, json};

struct Setup {
    agent: SdkAgent,
    gw: InProcess,
}

async fn setup() -> Setup {
    let agent = SdkAgent::start(&["--binding", "jsonrpc"]);
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_card = format!(
        "http://{}/.well-known/agent-card.json",
        dead.local_addr().unwrap()
    );
    drop(dead);
    let config = config_head(&[])
        + &integration("echo", &agent.card_url, "max_body_bytes = 2048")
        + &integration("gone", &dead_card, "");
    let gw = InProcess::start(&config).await;
    agent.reset().await;
    Setup { agent, gw }
}

fn assert_refused(body: &Value, id: Value, reason: &str) {
    assert_eq!(body["jsonrpc"], "2.0", "{body}");
    assert_eq!(body["id"], id, "{body}");
    let info = &body["error"]["data"][0];
    assert_eq!(
        info["@type"], "type.googleapis.com/google.rpc.ErrorInfo",
        "{body}"
    );
    assert_eq!(info["domain"], "a2a-egress", "{body}");
    assert_eq!(info["reason"], reason, "{body}");
}

#[tokio::test]
async fn every_refusal_is_protocol_shaped_counted_and_leaves_nothing() {
    let Setup { agent, gw } = setup().await;

    // Unknown integration: the id is kept.
    let (_, b) = gw
        .rpc("nope", &send_request("u1", "SendMessage", "hi"), &[])
        .await;
    assert_refused(&b, json!("u1"), "UNKNOWN_INTEGRATION");

    // Unusable (the card could not be fetched).
    let mut req = send_request("x", "SendMessage", "hi");
    req["id"] = json!(7);
    let (_, b) = gw.rpc("gone", &req, &[]).await;
    assert_refused(&b, json!(7), "NO_USABLE_PROFILE");

    // Data class not allowed.
    let (_, b) = gw
        .rpc(
            "echo",
            &send_request("p1", "SendMessage", "hi"),
            &[("a2a-egress-data-class", "public, secret")],
        )
        .await;
    assert_refused(&b, json!("p1"), "POLICY_DENIED");
    assert_eq!(b["error"]["code"], -32000);

    // A version the effective card does not offer: VersionNotSupportedError from the gateway.
    let (_, b) = gw
        .rpc(
            "echo",
            &send_request("v1", "SendMessage", "hi"),
            &[("a2a-version", "0.3")],
        )
        .await;
    assert_refused(&b, json!("v1"), "VERSION_NOT_SUPPORTED");
    assert_eq!(b["error"]["code"], -32009);

    // A part whose media type no accepted skill takes: ContentTypeNotSupportedError.
    let mut req = send_request("c1", "SendMessage", "hi");
    req["params"]["message"]["parts"] =
        json!([{"data": {"k": 1}, "mediaType": "application/json"}]);
    let (_, b) = gw.rpc("echo", &req, &[]).await;
    assert_refused(&b, json!("c1"), "CONTENT_TYPE_NOT_SUPPORTED");
    assert_eq!(b["error"]["code"], -32005);

    // An operation the profile does not allow (the card declares no push notifications).
    let req = json!({"jsonrpc": "2.0", "id": "n1", "method": "CreateTaskPushNotificationConfig",
        "params": {"taskId": "t", "url": "https://hook.example/x"}});
    let (_, b) = gw.rpc("echo", &req, &[]).await;
    assert_refused(&b, json!("n1"), "METHOD_NOT_ALLOWED");
    // A2A's own error for push configs on an agent without push.
    assert_eq!(b["error"]["code"], -32003);

    // A send without message parts: InvalidParams, nothing forwarded.
    let req = json!({"jsonrpc": "2.0", "id": "p1", "method": "SendMessage", "params": {}});
    let (_, b) = gw.rpc("echo", &req, &[]).await;
    assert_refused(&b, json!("p1"), "INVALID_PARAMS");
    assert_eq!(b["error"]["code"], -32602);

    // Unknown method: -32601.
    let req = json!({"jsonrpc": "2.0", "id": "m1", "method": "message/send", "params": {}});
    let (_, b) = gw.rpc("echo", &req, &[]).await;
    assert_refused(&b, json!("m1"), "METHOD_NOT_FOUND");
    assert_eq!(b["error"]["code"], -32601);

    // Malformed JSON: -32700 (no id can be read).
    let resp = crate::common::http()
        .post(gw.agent_url("echo"))
        .header("content-type", "application/json")
        .body("{\"jsonrpc\": \"2.0\", \"id\": ")
        .send()
        .await
        .unwrap();
    let b: Value = resp.json().await.unwrap();
    assert_refused(&b, Value::Null, "PARSE_ERROR");
    assert_eq!(b["error"]["code"], -32700);

    // Not a JSON-RPC 2.0 request: -32600 with the id kept.
    let req = json!({"jsonrpc": "1.0", "id": "i1", "method": "SendMessage"});
    let (_, b) = gw.rpc("echo", &req, &[]).await;
    assert_refused(&b, json!("i1"), "INVALID_REQUEST");
    assert_eq!(b["error"]["code"], -32600);

    // The binding the effective card does not offer.
    let resp = crate::common::http()
        .post(gw.url("/agents/echo/message:send"))
        .header("content-type", "application/json")
        .body(json!({"message": {"parts": [{"text": "x"}]}}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 404);
    let b: Value = resp.json().await.unwrap();
    assert_eq!(b["error"]["details"][0]["reason"], "BINDING_NOT_OFFERED");

    // Not under /agents/: a protocol-shaped 404, not HTML.
    let resp = crate::common::http().get(gw.url("/")).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 404);
    let b: Value = resp.json().await.unwrap();
    assert_eq!(b["error"]["details"][0]["reason"], "ROUTE_NOT_FOUND");

    assert!(
        agent.seen_calls().await.is_empty(),
        "no refused request reached the agent"
    );

    let m = gw.metrics().await;
    for (integration, reason) in [
        ("", "UNKNOWN_INTEGRATION"),
        ("gone", "NO_USABLE_PROFILE"),
        ("echo", "POLICY_DENIED"),
        ("echo", "VERSION_NOT_SUPPORTED"),
        ("echo", "CONTENT_TYPE_NOT_SUPPORTED"),
        ("echo", "METHOD_NOT_ALLOWED"),
        ("echo", "METHOD_NOT_FOUND"),
        ("echo", "PARSE_ERROR"),
        ("echo", "INVALID_REQUEST"),
        ("echo", "INVALID_PARAMS"),
        ("echo", "BINDING_NOT_OFFERED"),
    ] {
        assert_eq!(
            metric(
                &m,
                "a2a_egress_policy_denials_total",
                &[("integration", integration), ("reason", reason)]
            ),
            1.0,
            "{integration} {reason}\n{m}"
        );
    }
}

#[tokio::test]
async fn bodies_over_the_limit_are_refused_before_being_read() {
    let Setup { agent, gw } = setup().await;
    let big = send_request("b1", "SendMessage", &"x".repeat(4096));

    // Declared length over the limit: refused at once with 413.
    let (status, _, body) = gw.rpc_raw("echo", &big, &[]).await;
    assert_eq!(status, 413);
    let b: Value = serde_json::from_str(&body).unwrap();
    assert_refused(&b, Value::Null, "BODY_TOO_LARGE");

    // Chunked (no Content-Length): refused while counting.
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> = big
        .to_string()
        .into_bytes()
        .chunks(512)
        .map(|c| Ok(c.to_vec()))
        .collect();
    let resp = crate::common::http()
        .post(gw.agent_url("echo"))
        .header("content-type", "application/json")
        .body(reqwest::Body::wrap_stream(futures::stream::iter(chunks)))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 413);
    let b: Value = resp.json().await.unwrap();
    assert_eq!(b["error"]["data"][0]["reason"], "BODY_TOO_LARGE");
    assert!(agent.seen_calls().await.is_empty());
}

#[tokio::test]
async fn an_unreachable_agent_is_a_protocol_shaped_502_not_html() {
    let agent = SdkAgent::start(&["--binding", "jsonrpc"]);
    let rest = SdkAgent::start(&["--binding", "rest"]);
    let config = config_head(&[])
        + &integration("echo", &agent.card_url, "")
        + &integration("rest", &rest.card_url, "");
    let gw = InProcess::start(&config).await;
    drop(agent);
    drop(rest);

    for method in ["SendMessage", "SendStreamingMessage"] {
        let (status, headers, body) = gw
            .rpc_raw("echo", &send_request("x1", method, "hi"), &[])
            .await;
        assert_eq!(status, 502, "{method}: {body}");
        assert!(
            headers["content-type"]
                .to_str()
                .unwrap()
                .starts_with("application/json")
        );
        let b: Value = serde_json::from_str(&body).unwrap();
        assert_refused(&b, json!("x1"), "UPSTREAM_UNAVAILABLE");
    }
    let resp = crate::common::http()
        .post(gw.url("/agents/rest/message:send"))
        .header("content-type", "application/json")
        .body(
            json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}]}})
                .to_string(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 502);
    let b: Value = resp.json().await.unwrap();
    assert_eq!(b["error"]["status"], "UNAVAILABLE");
    assert_eq!(b["error"]["details"][0]["reason"], "UPSTREAM_UNAVAILABLE");
    let m = gw.metrics().await;
    assert_eq!(
        metric(
            &m,
            "a2a_egress_requests_total",
            &[("integration", "echo"), ("outcome", "upstream_failed")]
        ),
        2.0,
        "{m}"
    );
}
