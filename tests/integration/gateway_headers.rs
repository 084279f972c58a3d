//! Header hygiene asserted from the agent's side (the official SDK agent records every request
//! header): hop-by-hop headers (RFC 9110 §7.6.1 — `Connection` and the names it lists,
//! `Keep-Alive`, `Proxy-Authorization`, `TE`, `Trailer`, `Upgrade`) and every `A2A-Egress-*`
//! header the caller sends never reach the agent, on each forwarding path (pingora for unary
//! calls, the gateway's own client for message sends and streams); an integration with
//! `credential = { type = "pass-through" }` forwards the caller's `Authorization`, `bearer`
//! replaces it and `none` drops it. Beyond those, only an allowlist of caller headers leaves (A2A's
//! own, content negotiation, trace context, `User-Agent`, and the integration's `forward_headers`):
//! `Cookie`, `Forwarded`, `X-Forwarded-*` and the method/URL override headers never do.
//!
//! The other way, by the same allowlist function: of an agent's answer headers (a raw TCP agent
//! sending cookies, `Server`, `X-Powered-By`, a 100 KB header, hundreds of headers) only the
//! allowlisted ones reach the caller, at most 32 lines and 16 KiB, on whole, large and streamed
//! answers.

use crate::common::gateway::{
    GatewayProc, InProcess, config_head, integration, send_request, sse_events,
};
use crate::common::{SdkAgent, Seen};
use serde_json::{Value, json};

/// What a careless or hostile caller sends along with every call.
const CALLER_HEADERS: &[(&str, &str)] = &[
    ("connection", "keep-alive, x-secret-hop"),
    ("x-secret-hop", "must-not-leave"),
    ("keep-alive", "timeout=5, max=100"),
    ("proxy-authorization", "Basic cHJveHk6c2VjcmV0"),
    ("proxy-connection", "keep-alive"),
    ("te", "trailers"),
    ("trailer", "x-checksum"),
    ("upgrade", "websocket"),
    ("a2a-egress-data-class", "public"),
    ("a2a-egress-debug", "1"),
    ("A2A-Egress-Anything-Else", "x"),
    // Listed in the integration's `forward_headers`: forwarded, which proves the agent records
    // what arrives.
    ("x-caller-trace", "trace-1"),
];

/// The integration setting that lets the end-to-end `x-caller-trace` through.
const FORWARD_TRACE: &str = "forward_headers = [\"X-Caller-Trace\"]";

/// Header names that must never reach the agent.
const NEVER: &[&str] = &[
    "x-secret-hop",
    "keep-alive",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "upgrade",
    "a2a-egress-data-class",
    "a2a-egress-debug",
    "a2a-egress-anything-else",
];

fn assert_clean(s: &Seen) {
    assert!(
        !s.headers.is_empty(),
        "the agent records headers (sdk_agent.py `headers`): {s:?}"
    );
    assert_eq!(
        s.headers.get("x-caller-trace").map(String::as_str),
        Some("trace-1"),
        "headers listed in forward_headers pass: {:?}",
        s.headers
    );
    for n in NEVER {
        assert!(
            !s.headers.contains_key(*n),
            "{n} reached the agent on {} {}: {:?}",
            s.http_method,
            s.path,
            s.headers
        );
    }
    for n in s.headers.keys() {
        assert!(!n.starts_with("a2a-egress-"), "{n} reached the agent");
    }
    // `Connection` may exist upstream only as the gateway's own (keep-alive/close), never the
    // caller's list of hop-by-hop names.
    if let Some(c) = s.headers.get("connection") {
        assert!(
            !c.contains("x-secret-hop"),
            "caller's Connection forwarded: {c}"
        );
    }
}

async fn post(url: &str, body: &Value, headers: &[(&str, &str)]) -> (u16, String) {
    let mut req = crate::common::http()
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_string());
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = req.send().await.expect("the gateway answers");
    (resp.status().as_u16(), resp.text().await.unwrap())
}

#[tokio::test]
async fn jsonrpc_hop_by_hop_and_gateway_headers_never_reach_the_agent() {
    let agent = SdkAgent::start(&[]);
    let config = config_head(&[]) + &integration("echo", &agent.card_url, FORWARD_TRACE);
    let gw = InProcess::start(&config).await;
    agent.reset().await;
    let url = gw.agent_url("echo");

    // SendMessage: the gateway's own client (refresh-and-retry path).
    let (status, body) = post(
        &url,
        &send_request("1", "SendMessage", "hi"),
        CALLER_HEADERS,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    let task = v["result"]["task"]["id"]
        .as_str()
        .expect("a task")
        .to_owned();

    // GetTask: pingora's proxy path.
    let get = json!({"jsonrpc": "2.0", "id": "2", "method": "GetTask", "params": {"id": task}});
    let (status, body) = post(&url, &get, CALLER_HEADERS).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"result\""), "{body}");

    // SendStreamingMessage: the own client's SSE pass-through.
    let (status, body) = post(
        &url,
        &send_request("3", "SendStreamingMessage", "stream"),
        CALLER_HEADERS,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(!sse_events(&body).is_empty(), "{body}");

    let seen = agent.seen_calls().await;
    let methods: Vec<_> = seen.iter().map(|s| s.rpc_method.clone()).collect();
    assert_eq!(
        methods,
        [
            Some("SendMessage".into()),
            Some("GetTask".into()),
            Some("SendStreamingMessage".into())
        ],
        "{seen:?}"
    );
    seen.iter().for_each(assert_clean);
}

#[tokio::test]
async fn rest_hop_by_hop_and_gateway_headers_never_reach_the_agent() {
    let agent = SdkAgent::start(&["--binding", "rest"]);
    let config = config_head(&[]) + &integration("rest", &agent.card_url, FORWARD_TRACE);
    let gw = InProcess::start(&config).await;
    agent.reset().await;

    let msg =
        json!({"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}});
    let (status, body) = post(&gw.url("/agents/rest/message:send"), &msg, CALLER_HEADERS).await;
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    let task = v["task"]["id"].as_str().expect("a task").to_owned();

    let mut req = crate::common::http().get(gw.url(&format!("/agents/rest/tasks/{task}")));
    for (k, v) in CALLER_HEADERS {
        req = req.header(*k, *v);
    }
    let resp = req.send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);

    let seen = agent.seen_calls().await;
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(
        seen[1].rest_route.as_deref(),
        Some(&*format!("GET /tasks/{task}"))
    );
    seen.iter().for_each(assert_clean);
}

/// One integration per credential mode in front of one token-checking agent; each is called on
/// both paths (SendMessage: own client, GetTask: pingora) with the caller's own Authorization.
#[tokio::test]
async fn authorization_is_passed_through_replaced_or_dropped_per_integration() {
    let agent = SdkAgent::start(&["--token", "caller-token"]);
    let config = config_head(&[])
        + &integration(
            "pass",
            &agent.card_url,
            "credential = { type = \"pass-through\" }",
        )
        + &integration(
            "bearer",
            &agent.card_url,
            "credential = { type = \"bearer\", env = \"ECHO_TOKEN\" }",
        )
        + &integration("none", &agent.card_url, "");
    let gw = GatewayProc::start(&config, &[("ECHO_TOKEN", "gateway-token")]).await;
    let caller = [("authorization", "Bearer caller-token")];

    for (name, expected) in [
        ("pass", Some("Bearer caller-token")),
        ("bearer", Some("Bearer gateway-token")),
        ("none", None),
    ] {
        agent.reset().await;
        let url = gw.agent_url(name);
        let (status, _) = post(&url, &send_request("s", "SendMessage", "hi"), &caller).await;
        // Only the pass-through integration presents the token the agent wants.
        assert_eq!(status == 200, name == "pass", "{name}: HTTP {status}");
        let get =
            json!({"jsonrpc": "2.0", "id": "g", "method": "GetTask", "params": {"id": "nope"}});
        post(&url, &get, &caller).await;

        let seen = agent.seen_calls().await;
        assert_eq!(seen.len(), 2, "{name}: {seen:?}");
        for s in &seen {
            assert_eq!(
                s.authorization.as_deref(),
                expected,
                "{name}: {} carried {:?}",
                s.rpc_method.as_deref().unwrap_or("?"),
                s.authorization
            );
            assert_eq!(
                s.headers.get("authorization").map(String::as_str),
                expected,
                "exactly one Authorization line: {:?}",
                s.headers
            );
        }
    }
}

/// Headers a caller may send that change what an agent (or a proxy in front of it) believes
/// about the request: never forwarded. Only A2A's, content negotiation, trace context, the user
/// agent and what the integration lists in `forward_headers` leave.
const SMUGGLED: &[(&str, &str)] = &[
    ("cookie", "session=caller-secret"),
    ("forwarded", "for=203.0.113.7;host=evil.example"),
    ("x-forwarded-for", "203.0.113.7"),
    ("x-forwarded-host", "evil.example"),
    ("x-forwarded-proto", "http"),
    ("x-http-method-override", "DELETE"),
    ("x-original-url", "/admin"),
    ("x-rewrite-url", "/admin"),
    ("x-unlisted", "not-in-forward-headers"),
];

/// Headers that do pass (values checked as the agent received them).
const PASSED: &[(&str, &str)] = &[
    (
        "traceparent",
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
    ),
    ("tracestate", "vendor=opaque"),
    ("user-agent", "orchestrator/1.0"),
];

fn assert_allowlisted(s: &Seen) {
    for (n, _) in SMUGGLED {
        assert!(
            !s.headers.contains_key(*n),
            "{n} reached the agent on {} {}: {:?}",
            s.http_method,
            s.path,
            s.headers
        );
    }
    for (n, v) in PASSED {
        assert_eq!(
            s.headers.get(*n).map(String::as_str),
            Some(*v),
            "{n} on {} {}: {:?}",
            s.http_method,
            s.path,
            s.headers
        );
    }
}

#[tokio::test]
async fn only_allowlisted_caller_headers_reach_the_agent_on_every_path() {
    let agent = SdkAgent::start(&[]);
    let config = config_head(&[]) + &integration("echo", &agent.card_url, "");
    let gw = InProcess::start(&config).await;
    agent.reset().await;
    let caller: Vec<(&str, &str)> = SMUGGLED.iter().chain(PASSED).copied().collect();
    let url = gw.agent_url("echo");

    let (status, body) = post(&url, &send_request("1", "SendMessage", "hi"), &caller).await;
    assert_eq!(status, 200, "{body}");
    let get = json!({"jsonrpc": "2.0", "id": "2", "method": "GetTask", "params": {"id": "x"}});
    let (status, body) = post(&url, &get, &caller).await;
    assert_eq!(status, 200, "{body}");
    let stream = send_request("3", "SendStreamingMessage", "stream");
    let (status, body) = post(&url, &stream, &caller).await;
    assert_eq!(status, 200, "{body}");

    let seen = agent.seen_calls().await;
    assert_eq!(seen.len(), 3, "{seen:?}");
    seen.iter().for_each(assert_allowlisted);
}

/// What a careless or hostile agent sends along with every answer: cookies, software names,
/// redirects and policies meant for browsers, hop-by-hop headers, one 100 KB header, 150 more
/// unknown ones and 60 allowlisted ones (past the cap of 32), besides the ones that may pass.
fn agent_headers() -> Vec<(String, String)> {
    let mut h: Vec<(String, String)> = [
        ("a2a-version", "1.0"),
        ("retry-after", "7"),
        ("www-authenticate", "Bearer realm=\"agent\""),
        ("x-caller-trace", "back-1"),
        ("set-cookie", "session=agent-secret; HttpOnly"),
        ("set-cookie", "other=1"),
        ("server", "nginx/1.2.3"),
        ("x-powered-by", "PHP/5.1"),
        ("location", "http://evil.example/"),
        ("alt-svc", "h3=\":443\""),
        (
            "strict-transport-security",
            "max-age=99999999; includeSubDomains",
        ),
        ("keep-alive", "timeout=99"),
        ("x-upstream-secret", "internal-10.0.0.1"),
    ]
    .iter()
    .map(|(n, v)| (n.to_string(), v.to_string()))
    .collect();
    h.push(("x-huge".into(), "h".repeat(100 * 1024)));
    for i in 0..150 {
        h.push((format!("x-many-{i}"), "1".into()));
    }
    for i in 0..60 {
        h.push(("vary".into(), format!("x-vary-{i}")));
    }
    h
}

/// Names no caller may see from the agent.
const AGENT_NEVER: &[&str] = &[
    "set-cookie",
    "server",
    "x-powered-by",
    "location",
    "alt-svc",
    "strict-transport-security",
    "keep-alive",
    "x-upstream-secret",
    "x-huge",
    "x-many-0",
    "x-many-149",
];

fn hostile_answer(req: &crate::common::raw_agent::RawRequest) -> Vec<u8> {
    use crate::common::raw_agent::{http, sse};
    let text = String::from_utf8_lossy(&req.body);
    let id = req.id();
    let owned = agent_headers();
    let mut h: Vec<(&str, &str)> = owned
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    let result = |t: &str| {
        json!({"jsonrpc": "2.0", "id": id, "result": {"message": {
            "messageId": "r", "role": "ROLE_AGENT", "parts": [{"text": t}]}}})
        .to_string()
    };
    if text.contains("SendStreamingMessage") {
        return sse(&h, &format!("data: {}\n\n", result("event")));
    }
    h.insert(0, ("content-type", "application/json"));
    let body = if text.contains("\"large\"") {
        result(&"y".repeat(100 * 1024))
    } else {
        result("ok")
    };
    http(200, &h, body.as_bytes())
}

fn assert_agent_headers_filtered(path: &str, headers: &reqwest::header::HeaderMap) {
    for n in AGENT_NEVER {
        assert!(
            !headers.contains_key(*n),
            "{path}: {n} reached the caller: {headers:?}"
        );
    }
    for (n, v) in [
        ("a2a-version", "1.0"),
        ("retry-after", "7"),
        ("www-authenticate", "Bearer realm=\"agent\""),
        ("x-caller-trace", "back-1"),
    ] {
        assert_eq!(
            headers.get(n).map(|v| v.to_str().unwrap()),
            Some(v),
            "{path}: {n}"
        );
    }
    // Exactly the allowed lines the agent sent, within the cap of 32 lines: the reserved names
    // first, then the others in their order, every `vary` line of a repeated name kept until
    // the cap.
    let agent_lines: Vec<(String, String)> = headers
        .iter()
        .filter(|(n, _)| {
            !matches!(
                n.as_str(),
                "content-length"
                    | "transfer-encoding"
                    | "connection"
                    | "date"
                    | "x-request-id"
                    | "traceparent"
                    | "tracestate"
                    | "a2a-egress-request-id"
            )
        })
        .map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap().to_owned()))
        .collect();
    let ct = if path == "stream" {
        "text/event-stream"
    } else {
        "application/json"
    };
    let mut want: Vec<(String, String)> = [
        ("content-type", ct),
        ("retry-after", "7"),
        ("www-authenticate", "Bearer realm=\"agent\""),
        ("a2a-version", "1.0"),
        ("x-caller-trace", "back-1"),
    ]
    .iter()
    .map(|(n, v)| (n.to_string(), v.to_string()))
    .collect();
    want.extend((0..27).map(|i| ("vary".to_owned(), format!("x-vary-{i}"))));
    if path == "stream" {
        // The gateway's own, on every SSE answer it writes.
        want.push(("cache-control".into(), "no-cache".into()));
    }
    let mut got = agent_lines.clone();
    got.sort();
    want.sort();
    assert_eq!(got, want, "{path}: {headers:?}");
    let size: usize = headers
        .iter()
        .map(|(n, v)| n.as_str().len() + v.len())
        .sum();
    assert!(
        headers.len() <= 40 && size <= 20 * 1024,
        "{path}: {} headers, {size} bytes",
        headers.len()
    );
}

#[tokio::test]
async fn only_allowlisted_agent_headers_reach_the_caller_within_a_cap() {
    let agent = crate::common::raw_agent::RawAgent::start(false, hostile_answer).await;
    let config = config_head(&[]) + &integration("raw", &agent.card_url, FORWARD_TRACE);
    let gw = InProcess::start(&config).await;
    for (path, method, text) in [
        ("whole", "SendMessage", "small"),
        ("large", "SendMessage", "large"),
        ("stream", "SendStreamingMessage", "small"),
    ] {
        let (status, headers, body) = gw
            .rpc_raw("raw", &send_request("h", method, text), &[])
            .await;
        assert_eq!(status, 200, "{path}: {body}");
        assert_agent_headers_filtered(path, &headers);
        if path == "stream" {
            assert_eq!(sse_events(&body).len(), 1, "{body}");
        } else {
            let v: Value = serde_json::from_str(&body).unwrap();
            assert!(v["result"].is_object(), "{path}: {v}");
        }
    }
    let m = gw.metrics().await;
    let dropped = crate::common::gateway::metric(
        &m,
        "a2a_egress_answer_headers_dropped_total",
        &[("integration", "raw")],
    );
    assert!(
        dropped >= 3.0 * 28.0,
        "the vary lines past the cap are counted: {dropped}"
    );
}
