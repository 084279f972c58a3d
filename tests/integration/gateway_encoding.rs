//! Compressed answers cannot hide an agent error: whatever `Accept-Encoding` the caller sends, the
//! gateway asks the agent for `identity`, on pingora's path and on its own client, so it can read
//! the errors it must act on (stale marks, retries) and frame a downgraded answer as SSE. The
//! peer is the official SDK agent behind Starlette's `GZipMiddleware`, which compresses every
//! answer whose request accepts gzip.

use crate::common::SdkAgent;
use crate::common::gateway::{
    InProcess, config_head, integration, metric, send_request, sse_events,
};
use serde_json::json;

const GZIP_CALLER: &[(&str, &str)] = &[("accept-encoding", "gzip, deflate, br")];

fn version_marks(metrics: &str) -> f64 {
    metric(
        metrics,
        "a2a_egress_stale_marks_total",
        &[("integration", "gz"), ("error", "VERSION_NOT_SUPPORTED")],
    )
}

#[tokio::test]
async fn a_gzip_accepting_caller_still_lets_the_gateway_see_agent_errors() {
    // Every call gets VersionNotSupportedError (-32009): an error the gateway must notice.
    let agent = SdkAgent::start(&["--gzip", "--version-only", "9.9"]);
    let config = config_head(&[]) + &integration("gz", &agent.card_url, "");
    let gw = InProcess::start(&config).await;
    agent.reset().await;

    // SendMessage: the gateway's own client (refresh-and-retry path).
    let (status, headers, body) = gw
        .rpc_raw("gz", &send_request("1", "SendMessage", "hi"), GZIP_CALLER)
        .await;
    assert_eq!(status, 200, "{body}");
    assert!(headers.get("content-encoding").is_none(), "{headers:?}");
    let v: serde_json::Value = serde_json::from_str(&body).expect("an uncompressed JSON answer");
    assert_eq!(v["error"]["code"], -32009, "{v}");
    assert_eq!(
        version_marks(&gw.metrics().await),
        1.0,
        "own client saw the error"
    );

    // GetTask: pingora's path.
    let get = json!({"jsonrpc": "2.0", "id": "2", "method": "GetTask", "params": {"id": "x"}});
    let (status, _, body) = gw.rpc_raw("gz", &get, GZIP_CALLER).await;
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).expect("an uncompressed JSON answer");
    assert_eq!(v["error"]["code"], -32009, "{v}");
    assert_eq!(
        version_marks(&gw.metrics().await),
        2.0,
        "pingora's path saw the error"
    );

    let seen = agent.seen_calls().await;
    assert_eq!(seen.len(), 2, "{seen:?}");
    for s in &seen {
        assert_eq!(
            s.headers.get("accept-encoding").map(String::as_str),
            Some("identity"),
            "{s:?}"
        );
    }
}

#[tokio::test]
async fn a_downgraded_answer_is_framed_as_sse_for_a_gzip_accepting_caller() {
    let agent = SdkAgent::start(&["--gzip", "--streaming", "off"]);
    let config = config_head(&[]) + &integration("gz", &agent.card_url, "");
    let gw = InProcess::start(&config).await;

    let (status, headers, body) = gw
        .rpc_raw(
            "gz",
            &send_request("d", "SendStreamingMessage", "hi"),
            GZIP_CALLER,
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert!(
        headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream"),
        "{headers:?} {body:?}"
    );
    let events = sse_events(&body);
    assert_eq!(events.len(), 1, "{body}");
    assert!(events[0]["result"]["task"].is_object(), "{body}");
}
