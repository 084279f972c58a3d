//! Streaming through the gateway with the official Python SDK agent: real SSE pass-through, and
//! every downgrade path (declared-off, refused-then-retried, retry-also-fails, required), asserted
//! from the agent's side and from the caller's.

use crate::common::SdkAgent;
use crate::common::gateway::{
    InProcess, config_head, integration, metric, send_request, sse_events,
};

fn methods(seen: &[crate::common::Seen]) -> Vec<String> {
    seen.iter()
        .map(|s| s.rpc_method.clone().unwrap_or_default())
        .collect()
}

#[tokio::test]
async fn a_real_stream_passes_through_event_by_event() {
    let agent = SdkAgent::start(&["--slow-stream", "8"]);
    let config = config_head(&[]) + &integration("s", &agent.card_url, "");
    let gw = InProcess::start(&config).await;
    agent.reset().await;

    let resp = crate::common::http()
        .post(gw.agent_url("s"))
        .header("content-type", "application/json")
        .body(send_request("st", "SendStreamingMessage", "stream me").to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    assert!(
        resp.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    // Read chunk by chunk: events must arrive as the agent emits them (50 ms apart), so the
    // gateway delivers the stream in several pieces rather than one buffered body.
    let mut resp = resp;
    let mut chunks = 0;
    let mut body = String::new();
    while let Some(c) = resp.chunk().await.unwrap() {
        chunks += 1;
        body.push_str(&String::from_utf8_lossy(&c));
    }
    let events = sse_events(&body);
    assert!(
        events.len() >= 9,
        "task + 8 artifact updates + status: {body}"
    );
    assert!(
        chunks >= 2,
        "the agent spends >= 400 ms emitting; {chunks} chunk means the gateway buffered"
    );
    for e in &events {
        assert_eq!(e["id"], "st");
        assert!(e["result"].is_object(), "{e}");
    }
    assert!(
        events
            .iter()
            .filter(|e| e["result"]["artifactUpdate"].is_object())
            .count()
            >= 8
    );
    let seen = agent.seen_calls().await;
    assert_eq!(methods(&seen), vec!["SendStreamingMessage"]);
}

#[tokio::test]
async fn declared_off_is_sent_as_send_message_and_answered_as_one_sse_event() {
    let agent = SdkAgent::start(&["--streaming", "off"]);
    let config = config_head(&[]) + &integration("off", &agent.card_url, "");
    let gw = InProcess::start(&config).await;
    agent.reset().await;

    let (status, headers, body) = gw
        .rpc_raw(
            "off",
            &send_request("d1", "SendStreamingMessage", "hi"),
            &[],
        )
        .await;
    assert_eq!(status, 200);
    assert!(
        headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let events = sse_events(&body);
    assert_eq!(events.len(), 1, "{body}");
    assert_eq!(events[0]["id"], "d1");
    assert!(events[0]["result"]["task"].is_object(), "{body}");
    assert_eq!(methods(&agent.seen_calls().await), vec!["SendMessage"]);
    let m = gw.metrics().await;
    assert_eq!(
        crate::common::gateway::downgrades(&m, "off", "declared_off"),
        1.0
    );
}

#[tokio::test]
async fn refused_stream_is_retried_once_as_send_message_then_streaming_stays_off() {
    // The card claims streaming, but the agent answers SendStreamingMessage with -32004.
    let agent = SdkAgent::start(&["--refuse-streaming"]);
    let config = config_head(&[]) + &integration("liar", &agent.card_url, "");
    let gw = InProcess::start(&config).await;
    agent.reset().await;

    let (status, _, body) = gw
        .rpc_raw(
            "liar",
            &send_request("r1", "SendStreamingMessage", "hi"),
            &[],
        )
        .await;
    assert_eq!(status, 200);
    let events = sse_events(&body);
    assert_eq!(events.len(), 1, "{body}");
    assert!(events[0]["result"]["task"].is_object(), "{body}");
    assert_eq!(
        methods(&agent.seen_calls().await),
        vec!["SendStreamingMessage", "SendMessage"]
    );

    // Overridden until the next refresh: the next stream goes straight to SendMessage.
    agent.reset().await;
    let (_, _, body) = gw
        .rpc_raw(
            "liar",
            &send_request("r2", "SendStreamingMessage", "again"),
            &[],
        )
        .await;
    assert_eq!(sse_events(&body).len(), 1);
    assert_eq!(methods(&agent.seen_calls().await), vec!["SendMessage"]);

    let m = gw.metrics().await;
    assert_eq!(
        crate::common::gateway::downgrades(&m, "liar", "refused"),
        1.0,
        "{m}"
    );
    assert_eq!(
        crate::common::gateway::downgrades(&m, "liar", "override"),
        1.0
    );
    assert!(
        metric(
            &m,
            "a2a_egress_stale_marks_total",
            &[("integration", "liar"), ("error", "UNSUPPORTED_OPERATION")]
        ) >= 1.0
    );
}

#[tokio::test]
async fn when_the_retry_fails_too_the_original_error_comes_back_unchanged() {
    let agent = SdkAgent::start(&["--refuse-streaming"]);
    let config = config_head(&[]) + &integration("liar", &agent.card_url, "");
    let gw = InProcess::start(&config).await;

    // A completed task: a new message to it fails (terminal state), so the retry cannot succeed.
    let (_, body) = gw
        .rpc("liar", &send_request("c", "SendMessage", "first"), &[])
        .await;
    let task = body["result"]["task"].clone();
    let task_id = task["id"].as_str().expect("task id").to_owned();
    let context_id = task["contextId"].as_str().unwrap_or_default().to_owned();
    agent.reset().await;

    let mut req = send_request("f1", "SendStreamingMessage", "to a finished task");
    req["params"]["message"]["taskId"] = serde_json::json!(task_id);
    req["params"]["message"]["contextId"] = serde_json::json!(context_id);
    let (status, headers, body) = gw.rpc_raw("liar", &req, &[]).await;
    assert_eq!(status, 200);
    assert!(
        headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json"),
        "the agent's error, not an SSE stream"
    );
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["id"], "f1");
    assert_eq!(v["error"]["code"], -32004);
    assert_eq!(
        v["error"]["message"], "Streaming is not supported by the agent",
        "the first (original) error, not the retry's: {v}"
    );
    assert_eq!(
        methods(&agent.seen_calls().await),
        vec!["SendStreamingMessage", "SendMessage"]
    );

    // No override was installed: the next stream is tried as a stream again.
    agent.reset().await;
    gw.rpc_raw(
        "liar",
        &send_request("f2", "SendStreamingMessage", "new"),
        &[],
    )
    .await;
    assert_eq!(
        methods(&agent.seen_calls().await)[0],
        "SendStreamingMessage"
    );
}

#[tokio::test]
async fn streaming_required_is_never_downgraded() {
    // Declared off + required: refused by the gateway, nothing reaches the agent.
    let off = SdkAgent::start(&["--streaming", "off"]);
    // Claimed but refused + required: the agent's error, no retry.
    let liar = SdkAgent::start(&["--refuse-streaming"]);
    let config = config_head(&[])
        + &integration("off", &off.card_url, "streaming = \"required\"")
        + &integration("liar", &liar.card_url, "streaming = \"required\"");
    let gw = InProcess::start(&config).await;
    off.reset().await;
    liar.reset().await;

    let (status, body) = gw
        .rpc(
            "off",
            &send_request("q1", "SendStreamingMessage", "hi"),
            &[],
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(body["id"], "q1");
    assert_eq!(body["error"]["data"][0]["reason"], "STREAMING_REQUIRED");
    assert!(off.seen_calls().await.is_empty());

    // The effective card does not promise streaming it cannot give.
    let card: serde_json::Value = crate::common::http()
        .get(gw.url("/agents/off/.well-known/agent-card.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(card["capabilities"]["streaming"], false);

    let (status, headers, body) = gw
        .rpc_raw(
            "liar",
            &send_request("q2", "SendStreamingMessage", "hi"),
            &[],
        )
        .await;
    assert_eq!(status, 200);
    assert!(
        headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json")
    );
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["error"]["code"], -32004);
    assert_eq!(
        methods(&liar.seen_calls().await),
        vec!["SendStreamingMessage"],
        "no retry"
    );
    let m = gw.metrics().await;
    assert_eq!(
        metric(
            &m,
            "a2a_egress_stale_marks_total",
            &[("integration", "liar"), ("error", "UNSUPPORTED_OPERATION")]
        ),
        1.0,
        "marked for review"
    );
    assert_eq!(
        metric(
            &m,
            "a2a_egress_downgrades_total",
            &[("integration", "liar")]
        ),
        0.0
    );
}
