//! Hostile requests through real sockets, in front of the official Python SDK agent, asserted from
//! the agent's side (`Seen.raw_body`, the bytes it received): duplicate JSON keys anywhere in a body,
//! non-string tenants, every `A2A-Egress-Data-Class` line, numbers that do not fit a float, path
//! tricks, and a wrong `Content-Type`. Whatever the gateway refuses never reaches the agent; whatever
//! it forwards is the caller's bytes, plus at most the tenant member it spliced in.

use std::net::SocketAddr;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::common::SdkAgent;
use crate::common::gateway::{InProcess, config_head, integration};

/// Posts `body` as it is (no re-serialisation) with `content_type`; returns status and raw answer.
async fn post_raw(
    url: &str,
    content_type: &str,
    body: &str,
    headers: &[(&str, &[u8])],
) -> (u16, String) {
    let mut req = crate::common::http()
        .post(url)
        .header("content-type", content_type)
        .header("a2a-version", "1.0")
        .body(body.to_owned());
    for (k, v) in headers {
        req = req.header(*k, reqwest::header::HeaderValue::from_bytes(v).unwrap());
    }
    let resp = req.send().await.expect("the gateway answers");
    (resp.status().as_u16(), resp.text().await.unwrap())
}

/// Sends one HTTP/1.1 request over a plain socket, so the path reaches the gateway exactly as
/// written (HTTP clients normalise `..` and `.` before sending); returns status and body.
async fn raw_http(addr: SocketAddr, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nA2A-Version: 1.0\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out).await;
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

fn json_of(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("answer is not JSON ({e}): {body:?}"))
}

/// A JSON-RPC refusal by the gateway: envelope, id, code and ErrorInfo reason.
fn assert_rpc_refusal(body: &str, id: &Value, code: i64, reason: &str) {
    let v = json_of(body);
    assert_eq!(v["jsonrpc"], "2.0", "{body}");
    assert_eq!(&v["id"], id, "{body}");
    assert_eq!(v["error"]["code"], code, "{body}");
    assert_eq!(v["error"]["data"][0]["domain"], "a2a-egress", "{body}");
    assert_eq!(v["error"]["data"][0]["reason"], reason, "{body}");
}

/// An HTTP+JSON refusal by the gateway: google.rpc.Status with the ErrorInfo reason.
fn assert_rest_refusal(status: u16, body: &str, want_status: u16, reason: &str) {
    assert_eq!(status, want_status, "{body}");
    let v = json_of(body);
    assert_eq!(v["error"]["code"], want_status, "{body}");
    assert_eq!(v["error"]["details"][0]["domain"], "a2a-egress", "{body}");
    assert_eq!(v["error"]["details"][0]["reason"], reason, "{body}");
}

const MSG: &str = r#""message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}"#;

#[tokio::test]
async fn duplicate_keys_and_non_string_tenants_never_reach_the_agent() {
    let (agent, rest_agent) = (
        SdkAgent::start(&[]),
        SdkAgent::start(&["--binding", "rest"]),
    );
    let config = config_head(&[])
        + &integration("echo", &agent.card_url, "")
        + &integration("rest", &rest_agent.card_url, "");
    let gw = InProcess::start(&config).await;
    agent.reset().await;
    rest_agent.reset().await;
    let url = gw.agent_url("echo");

    let cases: Vec<(String, Value, i64, &str)> = vec![
        // The gateway and a first-wins reader would disagree on the operation.
        (
            r#"{"jsonrpc":"2.0","id":"d1","method":"GetExtendedAgentCard","method":"GetTask","params":{"id":"t"}}"#.into(),
            json!("d1"), -32600, "DUPLICATE_JSON_KEY",
        ),
        // The same key spelled with an escape is the same key.
        (
            r#"{"jsonrpc":"2.0","id":"d2","method":"GetTask","\u006dethod":"GetExtendedAgentCard","params":{"id":"t"}}"#.into(),
            json!("d2"), -32600, "DUPLICATE_JSON_KEY",
        ),
        // A refused media type next to an accepted one.
        (
            r#"{"jsonrpc":"2.0","id":"d3","method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"url":"https://x.example/y.pdf","mediaType":"application/pdf"}],"parts":[{"text":"hi"}]}}}"#.into(),
            json!("d3"), -32600, "DUPLICATE_JSON_KEY",
        ),
        // Two tenants.
        (
            format!(r#"{{"jsonrpc":"2.0","id":"d4","method":"SendMessage","params":{{"tenant":"evil","tenant":"",{MSG}}}}}"#),
            json!("d4"), -32600, "DUPLICATE_JSON_KEY",
        ),
        // Deep inside free-form metadata.
        (
            r#"{"jsonrpc":"2.0","id":"d5","method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi","metadata":{"a":[{"b":{"c":1,"c":2}}]}}]}}}"#.into(),
            json!("d5"), -32600, "DUPLICATE_JSON_KEY",
        ),
        // Two ids: no id can be read unambiguously.
        (
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"GetTask","params":{"id":"t"}}"#.into(),
            Value::Null, -32600, "DUPLICATE_JSON_KEY",
        ),
        // A tenant that is not a string is refused, not ignored.
        (
            format!(r#"{{"jsonrpc":"2.0","id":"n1","method":"SendMessage","params":{{"tenant":5,{MSG}}}}}"#),
            json!("n1"), -32602, "INVALID_PARAMS",
        ),
        (
            r#"{"jsonrpc":"2.0","id":"n2","method":"GetTask","params":{"id":"t","tenant":{"a":"b"}}}"#.into(),
            json!("n2"), -32602, "INVALID_PARAMS",
        ),
    ];
    for (body, id, code, reason) in &cases {
        let (status, answer) = post_raw(&url, "application/json", body, &[]).await;
        assert_eq!(status, 200, "{body} → {answer}");
        assert_rpc_refusal(&answer, id, *code, reason);
    }
    let v = json_of(&post_raw(&url, "application/json", &cases[3].0, &[]).await.1);
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("params.tenant"),
        "the refusal names the key path: {v}"
    );

    // HTTP+JSON bodies: the same rules.
    let rest = gw.url("/agents/rest/message:send");
    for (body, reason) in [
        (
            format!(r#"{{"tenant":"a","tenant":"",{MSG}}}"#),
            "DUPLICATE_JSON_KEY",
        ),
        (format!(r#"{{"tenant":7,{MSG}}}"#), "INVALID_PARAMS"),
    ] {
        let (status, answer) = post_raw(&rest, "application/json", &body, &[]).await;
        assert_rest_refusal(status, &answer, 400, reason);
    }

    let mut seen = agent.seen_calls().await;
    seen.extend(rest_agent.seen_calls().await);
    assert!(
        seen.is_empty(),
        "refused requests reached the agent: {seen:#?}"
    );
}

#[tokio::test]
async fn every_data_class_line_counts_and_an_unreadable_one_is_refused() {
    let agent = SdkAgent::start(&[]);
    let config = config_head(&[]) + &integration("echo", &agent.card_url, "");
    let gw = InProcess::start(&config).await;
    agent.reset().await;
    let url = gw.agent_url("echo");
    let body =
        format!(r#"{{"jsonrpc":"2.0","id":"c1","method":"SendMessage","params":{{{MSG}}}}}"#);
    let h = "a2a-egress-data-class";

    for (lines, reason) in [
        // The second line names a class the integration does not allow.
        (vec![&b"public"[..], b"secret"], "POLICY_DENIED"),
        (vec![&b"internal"[..], b"public, secret"], "POLICY_DENIED"),
        // Not ASCII: unreadable, so not silently the default class.
        (vec!["s\u{e9}cret".as_bytes()], "INVALID_DATA_CLASS"),
        (vec![&b"public"[..], &b"\xff"[..]], "INVALID_DATA_CLASS"),
    ] {
        let headers: Vec<(&str, &[u8])> = lines.iter().map(|l| (h, *l)).collect();
        let (status, answer) = post_raw(&url, "application/json", &body, &headers).await;
        assert_eq!(status, 200, "{answer}");
        let want = if reason == "POLICY_DENIED" {
            -32000
        } else {
            -32600
        };
        assert_rpc_refusal(&answer, &json!("c1"), want, reason);
    }
    assert!(agent.seen_calls().await.is_empty());

    // Every line allowed: forwarded.
    let (status, answer) = post_raw(
        &url,
        "application/json",
        &body,
        &[(h, &b"public"[..]), (h, &b"internal, public"[..])],
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert!(json_of(&answer)["result"].is_object(), "{answer}");
    assert_eq!(agent.seen_calls().await.len(), 1);
}

/// Numbers a float cannot hold, exactly as the caller wrote them.
const NUMBERS: &str = r#"{"d":0.1000000000000000055511151231257827,"big":1e400,"i":123456789012345678901234567890,"neg":-0.0e-0}"#;
const BIG_ID: &str = "123456789012345678901234567890";

#[tokio::test]
async fn tenant_injection_keeps_every_byte_of_the_callers_json() {
    let agent = SdkAgent::start(&["--tenant", "t1", "--streaming", "off"]);
    let config = config_head(&[]) + &integration("echo", &agent.card_url, "");
    let gw = InProcess::start(&config).await;
    agent.reset().await;
    let url = gw.agent_url("echo");
    let splice = r#""tenant":"t1","#;

    // SendMessage (answer held whole), GetTask (answer passed as it arrives), SendStreamingMessage downgraded
    // to SendMessage (own client, method renamed).
    let send = format!(
        r#"{{"jsonrpc":"2.0","id":{BIG_ID},"method":"SendMessage","params":{{"message":{{"messageId":"m1","role":"ROLE_USER","parts":[{{"text":"hi"}}],"metadata":{NUMBERS}}}}}}}"#
    );
    let get = format!(
        r#"{{"jsonrpc":"2.0", "id":{BIG_ID}, "method":"GetTask", "params" : {{ "id":"nope","x":{NUMBERS} }} }}"#
    );
    let stream = send.replacen("\"SendMessage\"", "\"SendStreamingMessage\"", 1);
    for body in [&send, &get, &stream] {
        let (status, answer) = post_raw(&url, "application/json", body, &[]).await;
        assert_eq!(status, 200, "{body} → {answer}");
        assert!(
            !answer.contains("a2a-egress"),
            "the gateway refused: {answer}"
        );
    }
    let seen = agent.seen_calls().await;
    assert_eq!(seen.len(), 3, "{seen:#?}");
    for (s, sent) in seen.iter().zip([&send, &get, &stream]) {
        assert_eq!(s.tenant.as_deref(), Some("t1"), "{s:?}");
        assert_eq!(
            s.raw_body.matches(splice).count(),
            1,
            "one tenant member spliced in: {}",
            s.raw_body
        );
        let without = s.raw_body.replacen(splice, "", 1);
        let expected = sent.replacen("\"SendStreamingMessage\"", "\"SendMessage\"", 1);
        assert_eq!(without, expected, "bytes changed beyond the tenant member");
    }

    // The tenant is already right: no rewrite at all.
    agent.reset().await;
    let right = send.replacen(r#""params":{"#, &format!("\"params\":{{{splice}"), 1);
    let (status, _) = post_raw(&url, "application/json", &right, &[]).await;
    assert_eq!(status, 200);
    let seen = agent.seen_calls().await;
    assert_eq!(seen[0].raw_body, right);

    // The gateway's own errors echo a big id exactly too.
    let (_, answer) = post_raw(
        &url,
        "application/json",
        &send,
        &[("a2a-egress-data-class", &b"secret"[..])],
    )
    .await;
    assert!(
        answer.contains(&format!("\"id\":{BIG_ID}")),
        "id echoed as sent: {answer}"
    );
}

#[tokio::test]
async fn path_tricks_are_refused_before_classification() {
    let (agent, rest_agent) = (
        SdkAgent::start(&[]),
        SdkAgent::start(&["--binding", "rest"]),
    );
    let config = config_head(&[])
        + &integration("echo", &agent.card_url, "")
        + &integration("rest", &rest_agent.card_url, "");
    let gw = InProcess::start(&config).await;
    agent.reset().await;
    rest_agent.reset().await;
    let msg = format!("{{{MSG}}}");

    for (method, path) in [
        ("GET", "/agents/rest/tasks/.."),
        ("GET", "/agents/rest/tasks/abc/.."),
        ("GET", "/agents/rest/./tasks/abc"),
        ("GET", "/agents/rest/tasks/abc%2F..%2F..%2Fjsonrpc"),
        ("GET", "/agents/rest/tasks/abc%2f..%2fx"),
        ("GET", "/agents/rest/tasks/%2e%2e"),
        ("GET", "/agents/rest/tasks/%2E"),
        ("GET", "/agents/rest/tasks/a%5cb"),
        ("GET", "/agents/rest/tasks/a%5Cb"),
        ("GET", "/agents/rest/tasks/a%00b"),
        ("GET", "/agents/rest/tasks/a%0ab"),
        ("GET", "/agents/rest/tasks/a%zzb"),
        ("GET", "/agents/rest//tasks/abc"),
        ("GET", "/agents/rest/tasks//abc"),
        ("POST", "/agents/rest/%2e%2e/message:send"),
        ("POST", "/agents/rest/a%2fb/message:send"),
        ("POST", "/agents/echo/./"),
        ("POST", "/agents/%2e%2e/rest/message:send"),
    ] {
        let body = if method == "POST" { msg.as_str() } else { "" };
        let (status, answer) = raw_http(gw.proxy, method, path, body).await;
        assert_rest_refusal(status, &answer, 400, "INVALID_PATH");
    }
    let mut seen = agent.seen_calls().await;
    seen.extend(rest_agent.seen_calls().await);
    assert!(seen.is_empty(), "path tricks reached the agent: {seen:#?}");

    // A percent-encoded id is not a trick: forwarded as written.
    let (status, answer) = raw_http(gw.proxy, "GET", "/agents/rest/tasks/a%20b", "").await;
    assert_eq!(status, 404, "the agent's TaskNotFound: {answer}");
    let seen = rest_agent.seen_calls().await;
    assert_eq!(seen.len(), 1, "{seen:#?}");
    assert_eq!(seen[0].path, "/rest/tasks/a b");
}

#[tokio::test]
async fn a_wrong_content_type_is_content_type_not_supported() {
    let (agent, rest_agent) = (
        SdkAgent::start(&[]),
        SdkAgent::start(&["--binding", "rest"]),
    );
    let config = config_head(&[])
        + &integration("echo", &agent.card_url, "")
        + &integration("rest", &rest_agent.card_url, "");
    let gw = InProcess::start(&config).await;
    agent.reset().await;
    rest_agent.reset().await;
    let url = gw.agent_url("echo");
    let rpc = format!(r#"{{"jsonrpc":"2.0","id":"c1","method":"SendMessage","params":{{{MSG}}}}}"#);

    for (ct, body) in [
        ("text/plain", "this is not JSON"),
        ("text/plain", rpc.as_str()),
        ("application/x-www-form-urlencoded", rpc.as_str()),
        ("application/jsonx", rpc.as_str()),
    ] {
        let (status, answer) = post_raw(&url, ct, body, &[]).await;
        assert_eq!(status, 200, "{answer}");
        assert_rpc_refusal(
            &answer,
            &Value::Null,
            -32005,
            "UNSUPPORTED_REQUEST_CONTENT_TYPE",
        );
    }
    let rest = gw.url("/agents/rest/message:send");
    let msg = format!("{{{MSG}}}");
    for body in ["not JSON", msg.as_str()] {
        let (status, answer) = post_raw(&rest, "text/plain", body, &[]).await;
        assert_rest_refusal(status, &answer, 400, "UNSUPPORTED_REQUEST_CONTENT_TYPE");
    }
    assert!(agent.seen_calls().await.is_empty());
    assert!(rest_agent.seen_calls().await.is_empty());

    // Parameters and case do not matter; the HTTP+JSON binding also takes application/a2a+json.
    let (status, answer) = post_raw(&url, "Application/JSON; charset=utf-8", &rpc, &[]).await;
    assert_eq!(status, 200);
    assert!(json_of(&answer)["result"].is_object(), "{answer}");
    let (status, answer) = post_raw(&rest, "application/a2a+json", &msg, &[]).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(agent.seen_calls().await.len(), 1);
    assert_eq!(rest_agent.seen_calls().await.len(), 1);
}

/// A body whose chunked framing is broken is the caller's fault: a 400 in the protocol's shape
/// (never a 502 blaming the agent, which is never called), and the connection closes although
/// the caller asked to keep it (what follows the bad chunk is not a request).
#[tokio::test]
async fn a_malformed_chunked_body_is_refused_400_and_closes_the_connection() {
    let agent = crate::common::raw_agent::RawAgent::start(false, |_| {
        crate::common::raw_agent::http(500, &[], b"never called")
    })
    .await;
    let config =
        config_head(&[]) + "[refresh]\nmin = \"1h\"\n" + &integration("raw", &agent.card_url, "");
    let gw = InProcess::start(&config).await;
    let mut s = tokio::net::TcpStream::connect(gw.proxy).await.unwrap();
    s.write_all(
        b"POST /agents/raw/ HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
          Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
    )
    .await
    .unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(std::time::Duration::from_secs(20), s.read_to_end(&mut out))
        .await
        .expect("the gateway closes the connection")
        .unwrap();
    let text = String::from_utf8_lossy(&out);
    assert!(text.starts_with("HTTP/1.1 400 "), "{text}");
    let (_, body) = text.split_once("\r\n\r\n").unwrap();
    let v = json_of(body);
    assert_eq!(v["error"]["code"], -32600, "{v}");
    assert_eq!(
        v["error"]["data"][0]["reason"], "INVALID_BODY_FRAMING",
        "{v}"
    );
    assert_eq!(agent.calls(), 0, "the agent is never called");
}
