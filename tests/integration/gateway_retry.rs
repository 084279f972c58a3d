//! Refresh-and-retry after errors raised before the agent did any work, through
//! the running gateway in front of the official Python SDK agent, asserted from the agent's side:
//! - the agent starts requiring an extension the gateway knows: the first call gets -32008
//!   upstream, the gateway refreshes, the new profile activates the extension, and exactly one
//!   retry (carrying it) answers the caller (JSON-RPC and HTTP+JSON; a stream is retried as a
//!   stream);
//! - the refreshed profile cannot serve the call (an extension the gateway does not know is now
//!   required): the gateway's refusal, no retry;
//! - the refresh changes nothing (-32009 from a version-gated agent): exactly one refresh, one
//!   upstream call, and the agent's error reaches the caller byte for byte.

use crate::common::SdkAgent;
use crate::common::gateway::{
    Endpoints, InProcess, config_head, integration, metric, send_request, sse_events,
};
use serde_json::{Value, json};

const EXT: &str = "urn:test:ext:late-required";

/// Refresh period of an hour: within a test only the error-driven refresh can fetch the card.
/// `stale_min_interval` is short so the start-up fetch does not rate-limit the retry hook.
fn config(card_url: &str) -> String {
    config_head(&[EXT])
        + "[refresh]\nmin = \"1h\"\nmax = \"2h\"\nstale_debounce = \"50ms\"\nstale_min_interval = \"100ms\"\n"
        + &integration("echo", card_url, "")
}

/// Waits until the start-up fetch is older than `stale_min_interval` (100 ms, with margin), read
/// off the gateway's own profile age, so the error-driven refresh is never rate-limited.
async fn settle(gw: &Endpoints) {
    crate::assert_eventually!(
        metric(
            &gw.metrics().await,
            "a2a_egress_profile_age_seconds",
            &[("integration", "echo")]
        ) >= 0.3,
        "the start-up fetch never aged past stale_min_interval"
    );
}

fn card_fetches(seen: &[crate::common::sdk_agent::Seen]) -> usize {
    seen.iter().filter(|s| s.is_card_fetch()).count()
}

fn refreshes(m: &str) -> f64 {
    metric(m, "a2a_egress_refresh_total", &[("integration", "echo")])
}

fn carries_ext(s: &crate::common::sdk_agent::Seen) -> bool {
    s.a2a_extensions
        .as_deref()
        .is_some_and(|e| e.split(',').any(|x| x.trim() == EXT))
}

#[tokio::test]
async fn jsonrpc_required_extension_at_runtime_refreshes_and_retries_once() {
    let agent = SdkAgent::start(&[]);
    let gw = InProcess::start(&config(&agent.card_url)).await;
    settle(&gw).await;
    let before = refreshes(&gw.metrics().await);
    agent.require_extension(EXT).await;
    agent.reset().await;

    let (status, body) = gw
        .rpc("echo", &send_request("r1", "SendMessage", "hello"), &[])
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["id"], "r1", "{body}");
    assert!(body["result"].is_object(), "the retry's result: {body}");

    let seen = agent.seen().await;
    assert_eq!(card_fetches(&seen), 1, "one refresh: {seen:?}");
    let calls: Vec<_> = seen.iter().filter(|s| !s.is_card_fetch()).collect();
    assert_eq!(calls.len(), 2, "the call and exactly one retry: {calls:?}");
    assert!(
        !carries_ext(calls[0]),
        "first attempt: old profile {calls:?}"
    );
    assert!(carries_ext(calls[1]), "retry: new profile {calls:?}");
    assert_eq!(calls[0].body, calls[1].body, "the same request, re-shaped");
    // The card fetch sits between the two calls.
    let order: Vec<bool> = seen.iter().map(|s| s.is_card_fetch()).collect();
    assert_eq!(order, [false, true, false], "{seen:?}");

    let m = gw.metrics().await;
    assert_eq!(refreshes(&m) - before, 1.0, "{m}");
    assert_eq!(
        metric(
            &m,
            "a2a_egress_refresh_total",
            &[("integration", "echo"), ("result", "changed")]
        ),
        2.0,
        "start-up and the error-driven refresh: {m}"
    );
    assert_eq!(
        metric(
            &m,
            "a2a_egress_stale_marks_total",
            &[
                ("integration", "echo"),
                ("error", "EXTENSION_SUPPORT_REQUIRED")
            ]
        ),
        1.0
    );
    assert_eq!(
        metric(
            &m,
            "a2a_egress_requests_total",
            &[("integration", "echo"), ("outcome", "ok")]
        ),
        1.0,
        "{m}"
    );

    // The next call uses the new profile at once: one upstream call, with the extension.
    agent.reset().await;
    let (status, body) = gw
        .rpc("echo", &send_request("r2", "SendMessage", "again"), &[])
        .await;
    assert_eq!(status, 200, "{body}");
    let seen = agent.seen().await;
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(carries_ext(&seen[0]));
}

#[tokio::test]
async fn rest_required_extension_at_runtime_refreshes_and_retries_once() {
    let agent = SdkAgent::start(&["--binding", "rest"]);
    let gw = InProcess::start(&config(&agent.card_url)).await;
    settle(&gw).await;
    agent.require_extension(EXT).await;
    agent.reset().await;

    let resp = crate::common::http()
        .post(gw.url("/agents/echo/message:send"))
        .header("content-type", "application/a2a+json")
        .body(
            json!({"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}})
                .to_string(),
        )
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let body: Value = resp.json().await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(
        body["task"].is_object() || body["message"].is_object(),
        "{body}"
    );

    let seen = agent.seen().await;
    assert_eq!(card_fetches(&seen), 1, "{seen:?}");
    let calls: Vec<_> = seen.iter().filter(|s| !s.is_card_fetch()).collect();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert!(calls.iter().all(|c| c.path == "/rest/message:send"));
    assert!(!carries_ext(calls[0]) && carries_ext(calls[1]), "{calls:?}");
}

#[tokio::test]
async fn jsonrpc_error_without_profile_change_is_returned_unchanged_after_one_refresh() {
    // The agent speaks only "9.9" while its card says 1.0: a refresh cannot fix that.
    let agent = SdkAgent::start(&["--version-only", "9.9"]);
    let gw = InProcess::start(&config(&agent.card_url)).await;
    settle(&gw).await;
    let req = send_request("v", "SendMessage", "hi");
    // What the agent itself answers to this request, for a byte-for-byte comparison.
    let direct = crate::common::http()
        .post(agent.jsonrpc_url())
        .header("content-type", "application/json")
        .header("a2a-version", "1.0")
        .body(req.to_string())
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let before = refreshes(&gw.metrics().await);
    agent.reset().await;

    let (status, _, body) = gw.rpc_raw("echo", &req, &[]).await;
    assert_eq!(status, 200);
    assert_eq!(body, direct, "the agent's error, unchanged");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["error"]["code"], -32009, "{body}");

    let seen = agent.seen().await;
    assert_eq!(card_fetches(&seen), 1, "exactly one refresh: {seen:?}");
    assert_eq!(seen.len(), 2, "one call, no retry: {seen:?}");
    let m = gw.metrics().await;
    assert_eq!(refreshes(&m) - before, 1.0, "{m}");
    assert_eq!(
        metric(
            &m,
            "a2a_egress_requests_total",
            &[("integration", "echo"), ("outcome", "agent_error")]
        ),
        1.0,
        "{m}"
    );
}

#[tokio::test]
async fn rest_error_without_profile_change_is_returned_unchanged() {
    let agent = SdkAgent::start(&["--binding", "rest", "--version-only", "9.9"]);
    let gw = InProcess::start(&config(&agent.card_url)).await;
    settle(&gw).await;
    let req =
        json!({"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}})
            .to_string();
    let direct = crate::common::http()
        .post(format!("{}/message:send", agent.rest_url()))
        .header("content-type", "application/a2a+json")
        .header("a2a-version", "1.0")
        .body(req.clone())
        .send()
        .await
        .unwrap();
    let (direct_status, direct_body) = (direct.status().as_u16(), direct.text().await.unwrap());
    agent.reset().await;

    let resp = crate::common::http()
        .post(gw.url("/agents/echo/message:send"))
        .header("content-type", "application/a2a+json")
        .body(req)
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let body = resp.text().await.unwrap();
    assert_eq!((status, &body), (direct_status, &direct_body));
    assert!(body.contains("VERSION_NOT_SUPPORTED"), "{body}");
    let seen = agent.seen().await;
    assert_eq!(card_fetches(&seen), 1, "{seen:?}");
    assert_eq!(seen.len(), 2, "{seen:?}");
}

#[tokio::test]
async fn a_refused_stream_is_retried_as_a_stream_from_the_new_profile() {
    let agent = SdkAgent::start(&[]);
    let gw = InProcess::start(&config(&agent.card_url)).await;
    settle(&gw).await;
    agent.require_extension(EXT).await;
    agent.reset().await;

    let (status, headers, body) = gw
        .rpc_raw(
            "echo",
            &send_request("s1", "SendStreamingMessage", "stream me"),
            &[],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert!(
        headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|c| c.starts_with("text/event-stream")),
        "{headers:?} {body}"
    );
    let events = sse_events(&body);
    assert!(!events.is_empty(), "{body}");
    assert!(events.iter().all(|e| e["error"].is_null()), "{body}");

    let seen = agent.seen().await;
    assert_eq!(card_fetches(&seen), 1, "{seen:?}");
    let calls: Vec<_> = seen.iter().filter(|s| !s.is_card_fetch()).collect();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert!(
        calls
            .iter()
            .all(|c| c.rpc_method.as_deref() == Some("SendStreamingMessage")),
        "retried as a stream, not downgraded: {calls:?}"
    );
    assert!(!carries_ext(calls[0]) && carries_ext(calls[1]), "{calls:?}");
}

#[tokio::test]
async fn a_refreshed_profile_that_refuses_the_call_answers_that_refusal() {
    // The agent starts requiring an extension the gateway does not know: the refreshed profile
    // cannot serve it, so the retry is not sent and the caller gets the gateway's refusal.
    let agent = SdkAgent::start(&[]);
    let gw = InProcess::start(&config(&agent.card_url)).await;
    settle(&gw).await;
    agent
        .require_extension("urn:test:ext:unknown-to-gateway")
        .await;
    agent.reset().await;

    let (status, body) = gw
        .rpc("echo", &send_request("b1", "SendMessage", "hi"), &[])
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["id"], "b1", "{body}");
    assert_eq!(
        body["error"]["data"][0]["reason"], "NO_USABLE_PROFILE",
        "the new profile's refusal, not the agent's -32008: {body}"
    );
    assert_eq!(body["error"]["data"][0]["domain"], "a2a-egress", "{body}");
    let seen = agent.seen().await;
    assert_eq!(card_fetches(&seen), 1, "{seen:?}");
    assert_eq!(seen.len(), 2, "one call, no retry: {seen:?}");
}
