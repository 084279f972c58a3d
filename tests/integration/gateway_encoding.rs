//! Compressed answers cannot hide an agent error: whatever `Accept-Encoding` the caller sends, the
//! gateway asks the agent for `identity`, for answers it holds and answers it passes on, so it can read
//! the errors it must act on (stale marks, retries) and frame a downgraded answer as SSE. The
//! peer is the official SDK agent behind Starlette's `GZipMiddleware`, which compresses every
//! answer whose request accepts gzip.
//!
//! An agent that encodes anyway (a raw TCP agent here) is decoded when it used gzip or deflate,
//! within the answer cap, and refused as InvalidAgentResponseError for any other coding.

use crate::common::SdkAgent;
use crate::common::gateway::{
    InProcess, config_head, integration, metric, send_request, sse_events,
};
use crate::common::raw_agent::{RawAgent, RawRequest, http as raw_http};
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

    // GetTask: an answer passed on as it arrives.
    let get = json!({"jsonrpc": "2.0", "id": "2", "method": "GetTask", "params": {"id": "x"}});
    let (status, _, body) = gw.rpc_raw("gz", &get, GZIP_CALLER).await;
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).expect("an uncompressed JSON answer");
    assert_eq!(v["error"]["code"], -32009, "{v}");
    assert_eq!(
        version_marks(&gw.metrics().await),
        2.0,
        "the passed-on answer's error was seen"
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

fn gzip(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn zlib(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// An agent that encodes its answers whatever it was asked: as the request's text says.
fn encoding_agent(req: &RawRequest) -> Vec<u8> {
    let text = String::from_utf8_lossy(&req.body);
    let id = req.id();
    let ok = json!({"jsonrpc": "2.0", "id": id, "result": {"message": {
        "messageId": "r", "role": "ROLE_AGENT", "parts": [{"text": "decoded"}]}}})
    .to_string();
    let refused = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32004,
        "message": "Streaming is not supported"}})
    .to_string();
    let has = |k: &str| text.contains(&format!("\"{k}\""));
    let json = ("content-type", "application/json");
    let coded =
        |coding: &str, body: &[u8]| raw_http(200, &[json, ("content-encoding", coding)], body);
    if has("deflate") {
        coded("deflate", &zlib(ok.as_bytes()))
    } else if has("refuse-stream") && has("SendStreamingMessage") {
        coded("gzip", &gzip(refused.as_bytes()))
    } else if has("bomb") {
        // 17 MiB of spaces after the JSON: past the 16 MiB answer cap once decoded.
        let mut big = ok.clone().into_bytes();
        big.resize(17 * 1024 * 1024, b' ');
        coded("gzip", &gzip(&big))
    } else if let Some(c) = ["br", "zstd", "compress", "gzip, gzip", "identity, br"]
        .into_iter()
        .find(|c| has(c))
    {
        coded(c, ok.as_bytes())
    } else {
        coded("gzip", &gzip(ok.as_bytes()))
    }
}

#[tokio::test]
async fn an_unasked_for_gzip_or_deflate_answer_is_decoded_so_errors_and_downgrades_still_work() {
    let agent = RawAgent::start(false, encoding_agent).await;
    let config = config_head(&[]) + &integration("enc", &agent.card_url, "");
    let gw = InProcess::start(&config).await;

    for coding in ["gzip", "deflate"] {
        let (status, headers, body) = gw
            .rpc_raw("enc", &send_request(coding, "SendMessage", coding), &[])
            .await;
        assert_eq!(status, 200, "{coding}: {body}");
        assert!(headers.get("content-encoding").is_none(), "{headers:?}");
        assert_eq!(headers["content-length"], body.len().to_string().as_str());
        let v: serde_json::Value = serde_json::from_str(&body).expect("decoded JSON");
        assert_eq!(v["result"]["message"]["parts"][0]["text"], "decoded", "{v}");
    }

    // A gzip'd -32004 on a stream is still a refused stream: retried as SendMessage, whose
    // (gzip'd) answer is framed as one event.
    let (status, _, body) = gw
        .rpc_raw(
            "enc",
            &send_request("s", "SendStreamingMessage", "refuse-stream"),
            &[],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let events = sse_events(&body);
    assert_eq!(events.len(), 1, "{body}");
    assert_eq!(
        events[0]["result"]["message"]["parts"][0]["text"],
        "decoded"
    );
    let m = gw.metrics().await;
    assert_eq!(
        metric(&m, "a2a_egress_downgrades_total", &[("integration", "enc")]),
        1.0,
        "{m}"
    );
}

#[tokio::test]
async fn other_codings_are_refused_and_a_decompression_bomb_stops_at_the_answer_cap() {
    let agent = RawAgent::start(false, encoding_agent).await;
    let config = config_head(&[]) + &integration("enc", &agent.card_url, "");
    let gw = InProcess::start(&config).await;
    for coding in ["br", "zstd", "compress", "gzip, gzip", "identity, br"] {
        let (status, v) = gw
            .rpc("enc", &send_request("x", "SendMessage", coding), &[])
            .await;
        assert_eq!(status, 200, "{coding}: {v}");
        assert_eq!(v["error"]["code"], -32006, "{coding}: {v}");
        assert_eq!(
            v["error"]["data"][0]["metadata"]["answer"], "encoding",
            "{v}"
        );
    }
    let m = gw.metrics().await;
    assert_eq!(
        metric(
            &m,
            "a2a_egress_invalid_agent_answers_total",
            &[("integration", "enc"), ("reason", "encoding")]
        ),
        5.0
    );

    // 17 MiB decoded from about 17 KiB: refused as too large, like a plain answer of that size.
    let (status, v) = gw
        .rpc("enc", &send_request("b", "SendMessage", "bomb"), &[])
        .await;
    assert_eq!(status, 502, "{v}");
    assert_eq!(
        v["error"]["data"][0]["reason"], "UPSTREAM_UNAVAILABLE",
        "{v}"
    );
}
