//! Answers that are not A2A never reach the caller as if they were: an HTML page, JSON cut
//! short, another request's id, JSON that is not a JSON-RPC response, a redirect — whole, large,
//! downgraded or as one event of a stream — are answered as InvalidAgentResponseError (-32006 /
//! `INVALID_AGENT_RESPONSE`), counted by kind and mark the profile stale. The agent is a raw TCP
//! server that answers by what the request's text asks for.

use serde_json::{Value, json};

use crate::common::gateway::{InProcess, config_head, integration, metric, send_request};
use crate::common::raw_agent::{RawAgent, RawRequest, http, sse};

fn invalid(metrics: &str, reason: &str) -> f64 {
    metric(
        metrics,
        "a2a_egress_invalid_agent_answers_total",
        &[("integration", "raw"), ("reason", reason)],
    )
}

fn stale(metrics: &str) -> f64 {
    metric(
        metrics,
        "a2a_egress_stale_marks_total",
        &[("integration", "raw"), ("error", "INVALID_AGENT_RESPONSE")],
    )
}

const JSON: &[(&str, &str)] = &[("content-type", "application/json")];
const HTML: &[(&str, &str)] = &[("content-type", "text/html")];

fn result(id: &Value) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": id, "result": {"message": {
        "messageId": "r", "role": "ROLE_AGENT", "parts": [{"text": "ok"}]}}})
    .to_string()
    .into_bytes()
}

/// The JSON-RPC answer the request's message text names.
fn rpc_answer(req: &RawRequest) -> Vec<u8> {
    let text = String::from_utf8_lossy(&req.body);
    let kind = [
        "html",
        "truncated",
        "other-id",
        "no-envelope",
        "redirect",
        "html-500",
        "html-502",
        "html-401",
        "big-html",
        "big-other-id",
        "big-json",
    ]
    .into_iter()
    .find(|k| text.contains(&format!("\"{k}\"")))
    .unwrap_or("ok");
    let id = req.id();
    match kind {
        "html" => http(200, HTML, b"<html><body>Welcome to nginx!</body></html>"),
        "truncated" => {
            let full = result(&id);
            http(200, JSON, &full[..full.len() / 2])
        }
        "other-id" => http(200, JSON, &result(&json!("somebody-else"))),
        "no-envelope" => http(
            200,
            JSON,
            br#"{"message":{"messageId":"r","role":"ROLE_AGENT","parts":[]}}"#,
        ),
        "redirect" => http(302, &[("location", "http://elsewhere.example/")], b""),
        "html-500" => http(500, HTML, b"<html>500 Internal Server Error</html>"),
        "html-502" => http(502, HTML, b"<html>502 Bad Gateway</html>"),
        "html-401" => http(
            401,
            &[
                ("content-type", "text/html"),
                ("www-authenticate", "Bearer"),
            ],
            b"<html>who?</html>",
        ),
        "big-html" => http(
            200,
            HTML,
            format!("<html>{}</html>", "x".repeat(100 * 1024)).as_bytes(),
        ),
        "big-other-id" => {
            let big = json!({"jsonrpc": "2.0", "id": "somebody-else", "result": {"message": {
                "messageId": "r", "role": "ROLE_AGENT", "parts": [{"text": "y".repeat(100 * 1024)}]}}});
            http(200, JSON, big.to_string().as_bytes())
        }
        "big-json" => {
            let big = json!({"jsonrpc": "2.0", "id": id, "result": {"message": {
                "messageId": "r", "role": "ROLE_AGENT", "parts": [{"text": "y".repeat(100 * 1024)}]}}});
            http(200, JSON, big.to_string().as_bytes())
        }
        _ => http(200, JSON, &result(&id)),
    }
}

async fn gateway(agent: &RawAgent, extra: &str) -> InProcess {
    let config = config_head(&[])
        + "[refresh]\nmin = \"1h\"\n"
        + &integration("raw", &agent.card_url, extra);
    InProcess::start(&config).await
}

fn assert_invalid_rpc(status: u16, v: &Value, id: &str) {
    assert_eq!(status, 200, "JSON-RPC errors travel as HTTP 200: {v}");
    assert_eq!(v["id"], id, "{v}");
    assert_eq!(v["error"]["code"], -32006, "{v}");
    assert_eq!(
        v["error"]["data"][0]["reason"], "INVALID_AGENT_RESPONSE",
        "{v}"
    );
    assert_eq!(v["error"]["data"][0]["domain"], "a2a-egress", "{v}");
    assert!(v.get("result").is_none(), "{v}");
}

#[tokio::test]
async fn jsonrpc_answers_that_are_not_a2a_are_invalid_agent_response_counted_and_stale() {
    let agent = RawAgent::start(false, rpc_answer).await;
    let gw = gateway(&agent, "").await;

    // The control: a real answer passes as it came.
    let (status, v) = gw
        .rpc("raw", &send_request("c", "SendMessage", "ok"), &[])
        .await;
    assert_eq!(
        (status, &v["result"]["message"]["parts"][0]["text"]),
        (200, &json!("ok")),
        "{v}"
    );

    for (kind, reason) in [
        ("html", "not_json"),
        ("truncated", "truncated"),
        ("other-id", "id_mismatch"),
        ("no-envelope", "not_jsonrpc"),
        ("redirect", "redirect"),
        // Larger than the 64 KiB held for errors, yet not JSON by its header: read whole, judged.
        ("big-html", "not_json"),
        // Larger than 64 KiB and JSON by its header, but JSON-RPC: read whole so that another
        // request's answer does not pass.
        ("big-other-id", "id_mismatch"),
    ] {
        let before = gw.metrics().await;
        let (status, v) = gw
            .rpc("raw", &send_request(kind, "SendMessage", kind), &[])
            .await;
        assert_invalid_rpc(status, &v, kind);
        assert_eq!(v["error"]["data"][0]["metadata"]["answer"], reason, "{v}");
        let after = gw.metrics().await;
        assert_eq!(
            invalid(&after, reason) - invalid(&before, reason),
            1.0,
            "{kind}"
        );
        assert_eq!(
            stale(&after) - stale(&before),
            1.0,
            "{kind} marks the profile stale"
        );
    }

    // A server error's page is the agent failing: refused the same way, not a stale card.
    let before = gw.metrics().await;
    let (status, v) = gw
        .rpc("raw", &send_request("e", "SendMessage", "html-500"), &[])
        .await;
    assert_invalid_rpc(status, &v, "e");
    assert_eq!(
        v["error"]["data"][0]["metadata"]["agentStatus"], "500",
        "{v}"
    );
    let after = gw.metrics().await;
    assert_eq!(
        invalid(&after, "not_json") - invalid(&before, "not_json"),
        1.0
    );
    assert_eq!(
        stale(&after),
        stale(&before),
        "a 5xx page marks nothing stale"
    );

    // An authentication failure is an HTTP-level answer whatever its body: passed on.
    let (status, headers, body) = gw
        .rpc_raw("raw", &send_request("a", "SendMessage", "html-401"), &[])
        .await;
    assert_eq!(status, 401, "{body}");
    assert_eq!(headers["www-authenticate"], "Bearer");

    // A load balancer's 502 page: the status is the answer (callers retry on it), passed on.
    let (status, _, body) = gw
        .rpc_raw("raw", &send_request("g", "SendMessage", "html-502"), &[])
        .await;
    assert_eq!(
        (status, body.as_str()),
        (502, "<html>502 Bad Gateway</html>")
    );

    // A large JSON answer with the request's id passes, whole.
    let (status, v) = gw
        .rpc("raw", &send_request("b", "SendMessage", "big-json"), &[])
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        v["result"]["message"]["parts"][0]["text"]
            .as_str()
            .map(str::len),
        Some(100 * 1024)
    );
}

#[tokio::test]
async fn a_downgraded_answer_that_is_not_a2a_is_refused_not_framed_as_an_event() {
    let agent = RawAgent::start(false, rpc_answer).await;
    let gw = gateway(&agent, "streaming = \"off\"").await;
    let (status, headers, body) = gw
        .rpc_raw(
            "raw",
            &send_request("d", "SendStreamingMessage", "other-id"),
            &[],
        )
        .await;
    assert!(
        !headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream"),
        "refused before any event: {headers:?}"
    );
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_invalid_rpc(status, &v, "d");
    assert_eq!(invalid(&gw.metrics().await, "id_mismatch"), 1.0);
    // The control: a real answer is one event.
    let (_, _, body) = gw
        .rpc_raw(
            "raw",
            &send_request("d2", "SendStreamingMessage", "ok"),
            &[],
        )
        .await;
    let events = crate::common::gateway::sse_events(&body);
    assert_eq!(events.len(), 1, "{body}");
    assert_eq!(events[0]["id"], "d2");
}

/// A stream whose second event is what the request's text names.
fn stream_answer(req: &RawRequest) -> Vec<u8> {
    let text = String::from_utf8_lossy(&req.body);
    let id = req.id();
    let good = |n: u32| {
        let e = json!({"jsonrpc": "2.0", "id": id, "result": {"statusUpdate": {
            "taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}, "n": n}}});
        format!("data: {e}\n\n")
    };
    let second = if text.contains("\"html-event\"") {
        "data: <html>oops</html>\n\n".to_owned()
    } else if text.contains("\"other-id-event\"") {
        let e = json!({"jsonrpc": "2.0", "id": "not-yours", "result": {}});
        format!("data: {e}\n\n")
    } else {
        good(2)
    };
    if text.contains("\"gzip-stream\"") {
        return sse(&[("content-encoding", "gzip")], "not really gzip");
    }
    sse(&[], &format!(": ping\n\n{}{second}{}", good(1), good(3)))
}

/// The `data` of each event of an SSE body, and the event names, without parsing the data.
fn raw_events(body: &str) -> Vec<(Option<String>, String)> {
    body.split("\n\n")
        .filter(|e| e.contains("data:"))
        .map(|e| {
            let name = e
                .lines()
                .find_map(|l| l.strip_prefix("event: "))
                .map(str::to_owned);
            let data = e
                .lines()
                .filter_map(|l| l.strip_prefix("data: "))
                .collect::<Vec<_>>()
                .join("\n");
            (name, data)
        })
        .collect()
}

#[tokio::test]
async fn a_stream_event_that_is_not_a2a_ends_the_stream_with_an_error_event() {
    let agent = RawAgent::start(false, stream_answer).await;
    let gw = gateway(&agent, "").await;

    // The control: every event passes, pings included.
    let (status, _, body) = gw
        .rpc_raw("raw", &send_request("s", "SendStreamingMessage", "ok"), &[])
        .await;
    assert_eq!(status, 200);
    assert_eq!(raw_events(&body).len(), 3, "{body}");
    assert!(body.contains(": ping"), "{body}");

    for (kind, reason) in [
        ("html-event", "not_json"),
        ("other-id-event", "id_mismatch"),
    ] {
        let (status, headers, body) = gw
            .rpc_raw(
                "raw",
                &send_request(kind, "SendStreamingMessage", kind),
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
        let events = raw_events(&body);
        assert_eq!(events.len(), 2, "the good event, then the error: {body}");
        assert_eq!(events[0].0, None);
        assert!(
            !body.contains("<html>") && !body.contains("not-yours"),
            "{body}"
        );
        assert_eq!(events[1].0.as_deref(), Some("error"), "{body}");
        let err: Value = serde_json::from_str(&events[1].1).unwrap();
        assert_eq!(err["id"], kind, "{err}");
        assert_eq!(err["error"]["code"], -32006, "{err}");
        assert_eq!(
            err["error"]["data"][0]["metadata"]["answer"], reason,
            "{err}"
        );
        assert_eq!(invalid(&gw.metrics().await, reason), 1.0, "{kind}");
    }
    assert_eq!(stale(&gw.metrics().await), 2.0);

    // A stream in a coding the gateway did not ask for: refused before it starts.
    let (status, v) = gw
        .rpc(
            "raw",
            &send_request("z", "SendStreamingMessage", "gzip-stream"),
            &[],
        )
        .await;
    assert_invalid_rpc(status, &v, "z");
    assert_eq!(
        v["error"]["data"][0]["metadata"]["answer"], "encoding",
        "{v}"
    );
}

/// The HTTP+JSON answer the request's text names.
fn rest_answer(req: &RawRequest) -> Vec<u8> {
    let text = String::from_utf8_lossy(&req.body);
    let ok =
        json!({"message": {"messageId": "r", "role": "ROLE_AGENT", "parts": [{"text": "ok"}]}})
            .to_string();
    if text.contains("\"html\"") {
        http(200, HTML, b"<!doctype html><title>Sign in</title>")
    } else if text.contains("\"array\"") {
        http(200, JSON, b"[1,2,3]")
    } else if text.contains("\"html-404\"") {
        http(404, HTML, b"<html>Not Found</html>")
    } else if text.contains("\"json-404\"") {
        http(
            404,
            JSON,
            br#"{"error":{"code":404,"status":"NOT_FOUND","message":"no task"}}"#,
        )
    } else if text.contains("\"html-event\"") {
        sse(&[], &format!("data: {ok}\n\ndata: <html>\n\n"))
    } else {
        http(200, JSON, ok.as_bytes())
    }
}

async fn rest_post(gw: &InProcess, path: &str, text: &str) -> (u16, String) {
    let body =
        json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": text}]}});
    let resp = crate::common::http()
        .post(gw.url(&format!("/agents/raw{path}")))
        .header("content-type", "application/a2a+json")
        .header("a2a-version", "1.0")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    (resp.status().as_u16(), resp.text().await.unwrap())
}

#[tokio::test]
async fn rest_answers_that_are_not_a2a_are_a_500_google_rpc_status() {
    let agent = RawAgent::start(true, rest_answer).await;
    let gw = gateway(&agent, "").await;
    let (status, body) = rest_post(&gw, "/message:send", "ok").await;
    assert_eq!(status, 200, "{body}");

    for (text, reason) in [
        ("html", "not_json"),
        ("array", "not_object"),
        ("html-404", "not_json"),
    ] {
        let (status, body) = rest_post(&gw, "/message:send", text).await;
        assert_eq!(status, 500, "{text}: {body}");
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["error"]["status"], "INTERNAL", "{v}");
        assert_eq!(
            v["error"]["details"][0]["reason"], "INVALID_AGENT_RESPONSE",
            "{v}"
        );
        assert_eq!(
            v["error"]["details"][0]["metadata"]["answer"], reason,
            "{v}"
        );
    }
    assert_eq!(invalid(&gw.metrics().await, "not_json"), 2.0);
    assert_eq!(
        stale(&gw.metrics().await),
        3.0,
        "a 404 page says the interface moved"
    );

    // The agent's own JSON error passes as it is.
    let (status, body) = rest_post(&gw, "/message:send", "json-404").await;
    assert_eq!(status, 404, "{body}");
    assert!(body.contains("no task"), "{body}");

    // A stream event that is not JSON ends the stream with {"error": google.rpc.Status}.
    let (status, body) = rest_post(&gw, "/message:stream", "html-event").await;
    assert_eq!(status, 200);
    let events = raw_events(&body);
    assert_eq!(events.len(), 2, "{body}");
    assert_eq!(events[1].0.as_deref(), Some("error"), "{body}");
    let err: Value = serde_json::from_str(&events[1].1).unwrap();
    assert_eq!(
        err["error"]["details"][0]["reason"], "INVALID_AGENT_RESPONSE",
        "{err}"
    );
}
