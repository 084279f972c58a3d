//! Security properties of the running gateway (`a2a-egress serve` as a child process), each
//! asserted from the side that would see the violation:
//! - an integration's credential goes only to its approved origins: a card (public or extended)
//!   whose interface points at another origin, served by a real recording server, gets that server
//!   nothing at all, and an agent's redirect to another origin is not followed;
//! - credentials never appear in the gateway's output at any log level: the gateway runs with
//!   `RUST_LOG=trace` through card fetches, extended cards, calls on
//!   every forwarding path, agent errors, a refused credential, a forced refresh and a reload, and
//!   its whole stdout and stderr are searched for each secret, plain and base64-encoded;
//! - extended cards never cross identities: two credentials against the reference agent see their
//!   own effective cards, and a rotated credential loses the old identity's extended skills;
//! - raw traffic never reaches the log, whatever `RUST_LOG` asks of pingora: a caller's malformed
//!   chunked body, an agent's answer header and an agent's malformed chunked answer, each holding
//!   a marker, leave no trace of it on stderr.
//!
//! Covered elsewhere and not repeated here: the data-class header (and every `A2A-Egress-*`
//! header) never reaches the agent (`gateway_headers`), and a caller's different tenant is refused
//! before anything leaves (`gateway_shaping`).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use serde_json::{Value, json};

use a2a_egress::testkit::{CardJson, IntegrationToml};

use crate::common::gateway::{
    Endpoints, GatewayProc, InProcess, config_head, metric, send_request, sse_events,
};
use crate::common::raw_agent::{RawAgent, RawRequest, http};
use crate::common::ref_agent::RefAgent;

/// One request as a recording server saw it.
#[derive(Clone)]
struct Hit {
    method: Method,
    path: String,
    authorization: Option<String>,
}

type Hits = Arc<Mutex<Vec<Hit>>>;

/// A server that records every request and answers each with a JSON-RPC result: stands for any
/// host the gateway must never send a credential to.
async fn recorder() -> (SocketAddr, Hits) {
    let hits: Hits = Arc::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = Router::new()
        .fallback(
            |State(hits): State<Hits>, method: Method, uri: Uri, h: HeaderMap| async move {
                hits.lock().unwrap().push(Hit {
                    method,
                    path: uri.path().to_owned(),
                    authorization: h
                        .get(header::AUTHORIZATION)
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_owned),
                });
                axum::Json(json!({"jsonrpc": "2.0", "id": 1, "result": {}}))
            },
        )
        .with_state(hits.clone());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (addr, hits)
}

/// A valid A2A 1.0 card with one JSON-RPC interface at `iface`.
fn card(iface: &str, extended: bool) -> Value {
    CardJson::new(iface)
        .named("Hostile", "points its calls elsewhere")
        .extended(extended)
        .set(
            "securitySchemes",
            json!({"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}}),
        )
        .set(
            "securityRequirements",
            json!([{"schemes": {"bearer": {"list": []}}}]),
        )
        .build()
}

/// What the approved agent does on its own origin.
#[derive(Clone)]
struct Approved {
    /// The public card.
    public: Value,
    /// The answer to `GetExtendedAgentCard`, if any.
    extended: Option<Value>,
    /// Where `POST /hop` redirects (307).
    hop_to: String,
}

async fn approved_agent(
    State(a): State<Arc<Approved>>,
    method: Method,
    uri: Uri,
    body: Bytes,
) -> Response {
    match (method, uri.path()) {
        (Method::GET, "/card.json") => axum::Json(a.public.clone()).into_response(),
        (Method::POST, "/hop") => (
            StatusCode::TEMPORARY_REDIRECT,
            [(header::LOCATION, a.hop_to.clone())],
        )
            .into_response(),
        (Method::POST, "/a2a") => {
            let req: Value = serde_json::from_slice(&body).unwrap_or_default();
            match (req["method"].as_str(), &a.extended) {
                (Some("GetExtendedAgentCard"), Some(ext)) => {
                    axum::Json(json!({"jsonrpc": "2.0", "id": req["id"], "result": ext}))
                        .into_response()
                }
                _ => axum::Json(json!({"jsonrpc": "2.0", "id": req["id"], "result": {}}))
                    .into_response(),
            }
        }
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}

/// Serves `make(own address)` on a fresh loopback port.
async fn serve_approved(make: impl FnOnce(SocketAddr) -> Approved) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = Router::new()
        .fallback(approved_agent)
        .with_state(Arc::new(make(addr)));
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

const SECRET: &str = "sk-egress-test-4f9c2a7e1b";

/// A gateway with one integration `x` whose card is `http://{approved}/card.json`, only that
/// origin approved, and a bearer credential.
async fn gateway_for(approved: SocketAddr) -> GatewayProc {
    let config = config_head(&[])
        + &format!(
            "[refresh]\nmin = \"1h\"\n\n[[integrations]]\nname = \"x\"\ncard = \"http://{approved}/card.json\"\n\
             origins = [\"http://{approved}\"]\nskills = [\"echo\"]\ndata_classes = [\"internal\"]\n\
             credential = {{ type = \"bearer\", env = \"X_TOKEN\" }}\n"
        );
    GatewayProc::start(&config, &[("X_TOKEN", SECRET)]).await
}

/// Every kind of call a caller can make, through the gateway, with a client that follows no
/// redirect (so whatever reaches the recorder came from the gateway).
async fn drive_calls(gw: &Endpoints) {
    let client = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let _ = client
        .get(gw.url("/agents/x/.well-known/agent-card.json"))
        .send()
        .await
        .unwrap();
    for method in ["SendMessage", "SendStreamingMessage"] {
        let _ = client
            .post(gw.agent_url("x"))
            .header("content-type", "application/json")
            .body(send_request("1", method, "hi").to_string())
            .send()
            .await
            .unwrap()
            .bytes()
            .await;
    }
    let get = json!({"jsonrpc": "2.0", "id": "g", "method": "GetTask", "params": {"id": "t"}});
    let _ = client
        .post(gw.agent_url("x"))
        .header("content-type", "application/json")
        .body(get.to_string())
        .send()
        .await
        .unwrap();
    let refresh = client
        .post(format!("http://{}/v1/integrations/x/refresh", gw.admin))
        .send()
        .await
        .unwrap();
    assert_eq!(refresh.status(), 200);
}

fn assert_untouched(hits: &Hits, gw: &GatewayProc) {
    let hits: Vec<String> = hits
        .lock()
        .unwrap()
        .iter()
        .map(|h| {
            format!(
                "{} {} (Authorization: {:?})",
                h.method, h.path, h.authorization
            )
        })
        .collect();
    assert!(
        hits.is_empty(),
        "the unapproved origin was contacted: {hits:?}\n{}",
        gw.process.stderr_tail()
    );
}

#[tokio::test]
async fn a_public_card_pointing_elsewhere_gets_that_origin_nothing() {
    let (elsewhere, hits) = recorder().await;
    let approved = serve_approved(|_| Approved {
        public: card(&format!("http://{elsewhere}/a2a"), true),
        extended: None,
        hop_to: String::new(),
    })
    .await;
    let gw = gateway_for(approved).await;
    let r = gw.readyz().await;
    let why = r["control"]["unusable"][0]["reason"]
        .as_str()
        .unwrap_or_default();
    assert!(why.contains("approved origins"), "{r}");
    drive_calls(&gw).await;
    // Neither the extended-card request nor any call went to the card's interface.
    assert_untouched(&hits, &gw);
}

#[tokio::test]
async fn an_extended_card_pointing_elsewhere_gets_that_origin_nothing() {
    let (elsewhere, hits) = recorder().await;
    let approved = serve_approved(|own| Approved {
        public: card(&format!("http://{own}/a2a"), true),
        extended: Some(card(&format!("http://{elsewhere}/a2a"), false)),
        hop_to: String::new(),
    })
    .await;
    let gw = gateway_for(approved).await;
    drive_calls(&gw).await;
    assert_untouched(&hits, &gw);
    let r = gw.readyz().await;
    let why = r["control"]["unusable"][0]["reason"]
        .as_str()
        .unwrap_or_default();
    assert!(
        why.contains("approved origins"),
        "the extended card's interface is checked like the public one: {r}"
    );
}

#[tokio::test]
async fn an_agent_redirect_to_another_origin_is_not_followed() {
    let (elsewhere, hits) = recorder().await;
    let approved = serve_approved(|own| Approved {
        public: card(&format!("http://{own}/hop"), false),
        extended: None,
        hop_to: format!("http://{elsewhere}/a2a"),
    })
    .await;
    let gw = gateway_for(approved).await;
    let r = gw.readyz().await;
    assert!(
        r["control"]["unusable"]
            .as_array()
            .is_some_and(Vec::is_empty),
        "{r}"
    );
    drive_calls(&gw).await;
    assert_untouched(&hits, &gw);
}

/// Searches the gateway's whole output for `secret`, as text and base64 (standard and URL-safe,
/// with and without the `Bearer ` prefix, which is how a Basic-like encoding would carry it).
fn assert_not_logged(gw: &GatewayProc, secret: &str) {
    let (lines, dropped) = gw.process.stderr_all();
    assert_eq!(dropped, 0, "stderr exceeded what the harness keeps");
    let mut needles = vec![secret.to_owned()];
    for text in [secret.to_owned(), format!("Bearer {secret}")] {
        needles.push(base64::engine::general_purpose::STANDARD.encode(&text));
        needles.push(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&text));
    }
    let stdout = gw.process.stdout_lines();
    for (n, line) in lines.iter().chain(stdout.iter()).enumerate() {
        for needle in &needles {
            assert!(
                !line.contains(needle.as_str()),
                "line {n} of the gateway's output carries a credential ({needle:?}): {line}"
            );
        }
    }
}

const PARTNER_SECRET: &str = "partner-secret-b7d1e09c";
const VIEWER_SECRET: &str = "viewer-secret-53a8f2d6";
const WRONG_SECRET: &str = "wrong-secret-c0ffee42";

fn ref_integration(name: &str, agent: &RefAgent, credential: &str) -> String {
    IntegrationToml::new(name, &agent.card_url)
        .skills(&["echo", "stream-report", "reconcile-invoice"])
        .extra(&format!("credential = {credential}"))
        .text()
}

/// The reference agent with its principals' tokens set to this file's secrets.
fn agent_with_secrets() -> RefAgent {
    RefAgent::start(
        &RefAgent::sample_registry(),
        &[
            ("A2A_AGENT_TOKEN_PARTNER", PARTNER_SECRET),
            ("A2A_AGENT_TOKEN_VIEWER", VIEWER_SECRET),
        ],
    )
}

async fn refresh(gw: &Endpoints, name: &str) -> Value {
    let r = crate::common::http()
        .post(format!(
            "http://{}/v1/integrations/{name}/refresh",
            gw.admin
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    r.json().await.unwrap()
}

#[tokio::test]
async fn credentials_never_appear_in_the_gateway_log_at_trace_level() {
    let agent = agent_with_secrets();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("partner.token"), PARTNER_SECRET).unwrap();
    let config = config_head(&[])
        + "[refresh]\nmin = \"1h\"\nstale_debounce = \"50ms\"\nstale_min_interval = \"100ms\"\n"
        + &ref_integration(
            "partner",
            &agent,
            "{ type = \"bearer\", file = \"partner.token\" }",
        )
        + &ref_integration(
            "viewer",
            &agent,
            "{ type = \"bearer\", env = \"VIEWER_TOKEN\" }",
        )
        + &ref_integration(
            "wrong",
            &agent,
            "{ type = \"bearer\", env = \"WRONG_TOKEN\" }",
        );
    let gw = GatewayProc::start_in(
        dir,
        &config,
        &[
            ("RUST_LOG", "trace"),
            ("VIEWER_TOKEN", VIEWER_SECRET),
            ("WRONG_TOKEN", WRONG_SECRET),
        ],
    )
    .await;
    let (lines, _) = gw.process.stderr_all();
    assert!(
        lines.iter().any(|l| l.contains("TRACE")),
        "the gateway logs at trace level"
    );

    for name in ["partner", "viewer", "wrong"] {
        // Card (the extended card was fetched with the credential at start), unary message send
        // (held whole), stream, a unary call passed on as it arrives, a REST call, a refusal, a refresh.
        let _ = crate::common::http()
            .get(gw.url(&format!("/agents/{name}/.well-known/agent-card.json")))
            .send()
            .await
            .unwrap();
        let (_, body) = gw
            .rpc(name, &send_request("1", "SendMessage", "echo hi"), &[])
            .await;
        if name != "wrong" {
            assert!(body["result"].is_object(), "{name}: {body}");
        }
        let (_, _, sse) = gw
            .rpc_raw(
                name,
                &send_request("2", "SendStreamingMessage", "echo hi"),
                &[],
            )
            .await;
        if name != "wrong" {
            assert!(!sse_events(&sse).is_empty(), "{name}: {sse}");
        }
        let get =
            json!({"jsonrpc": "2.0", "id": "3", "method": "GetTask", "params": {"id": "nope"}});
        gw.rpc(name, &get, &[]).await;
        let _ = crate::common::http()
            .post(gw.url(&format!("/agents/{name}/message:send")))
            .header("content-type", "application/a2a+json")
            .body(json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}).to_string())
            .send()
            .await
            .unwrap();
        gw.rpc(
            name,
            &send_request("4", "SendMessage", "hi"),
            &[("A2A-Egress-Data-Class", "secret")],
        )
        .await;
        refresh(&gw, name).await;
    }
    // A reload (SIGHUP) re-reads every credential source.
    let ok = std::process::Command::new("kill")
        .args(["-HUP", &gw.process.pid().to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok);
    // The reload is done (and so every credential source was read again) before the log is read.
    crate::assert_eventually!(
        metric(
            &gw.metrics().await,
            "a2a_egress_config_reloads_total",
            &[("result", "ok")]
        ) >= 1.0,
        "the SIGHUP reload\n{}",
        gw.process.stderr_tail()
    );

    for secret in [PARTNER_SECRET, VIEWER_SECRET, WRONG_SECRET] {
        assert_not_logged(&gw, secret);
    }
}

async fn effective_skills(gw: &Endpoints, name: &str) -> Vec<String> {
    let card: Value = crate::common::http()
        .get(gw.url(&format!("/agents/{name}/.well-known/agent-card.json")))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    card["skills"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s["id"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn extended_cards_never_cross_identities_through_the_gateway() {
    let agent = agent_with_secrets();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("partner.token"), PARTNER_SECRET).unwrap();
    std::fs::write(dir.path().join("viewer.token"), VIEWER_SECRET).unwrap();
    let config = config_head(&[])
        + "[refresh]\nmin = \"1h\"\n[state]\ndir = \"state\"\n"
        + &ref_integration(
            "partner",
            &agent,
            "{ type = \"bearer\", file = \"partner.token\" }",
        )
        + &ref_integration(
            "viewer",
            &agent,
            "{ type = \"bearer\", file = \"viewer.token\" }",
        );
    let gw = InProcess::start_in(dir, &config).await;
    let partner = effective_skills(&gw, "partner").await;
    let viewer = effective_skills(&gw, "viewer").await;
    assert!(
        partner.iter().any(|s| s == "reconcile-invoice"),
        "partner (scope recon.run) sees its extended skill: {partner:?}"
    );
    assert!(
        !viewer.iter().any(|s| s == "reconcile-invoice"),
        "viewer must not see partner's skill: {viewer:?}"
    );

    // Rotate partner's credential to the viewer's: the next refresh asks again with the new
    // identity; partner's cached (and saved) extended card must not be served for it.
    std::fs::write(gw.dir.path().join("partner.token"), VIEWER_SECRET).unwrap();
    refresh(&gw, "partner").await;
    let rotated = effective_skills(&gw, "partner").await;
    assert!(
        !rotated.iter().any(|s| s == "reconcile-invoice"),
        "after the credential changed, the old identity's extended skill is still served: {rotated:?}"
    );
    assert!(rotated.iter().any(|s| s == "echo"), "{rotated:?}");
}

/// In the caller's malformed chunked body (where a chunk size belongs).
const CALLER_BODY_MARKER: &str = "zq-caller-body-4e1f";
/// In an agent's answer header, on a call that succeeds.
const ANSWER_HEADER_MARKER: &str = "zq-answer-header-9b2c";
/// In an agent's malformed chunked answer (where a chunk size belongs).
const ANSWER_BODY_MARKER: &str = "zq-answer-body-7d3a";

/// The agent: a malformed chunked answer to a message naming `bad-chunks`, else a valid answer
/// with a marked header.
fn marked_answer(req: &RawRequest) -> Vec<u8> {
    if String::from_utf8_lossy(&req.body).contains("broken-stream") {
        // One event, then the connection closes without the last chunk: the stream broke.
        let event = format!(
            "data: {}\n\n",
            json!({"jsonrpc": "2.0", "id": req.id(), "result": {"statusUpdate": {
                "taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}}})
        );
        return format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\
             connection: close\r\n\r\n{:x}\r\n{event}\r\n",
            event.len()
        )
        .into_bytes();
    }
    if String::from_utf8_lossy(&req.body).contains("bad-chunks") {
        return format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\
             connection: close\r\n\r\n{ANSWER_BODY_MARKER}\r\n{{}}\r\n0\r\n\r\n"
        )
        .into_bytes();
    }
    let body = json!({"jsonrpc": "2.0", "id": req.id(), "result": {"message": {
        "messageId": "r", "role": "ROLE_AGENT", "parts": [{"text": "ok"}]}}});
    http(
        200,
        &[
            ("content-type", "application/json"),
            ("x-zq-marker", ANSWER_HEADER_MARKER),
        ],
        body.to_string().as_bytes(),
    )
}

/// A JSON-RPC POST to `raw` whose chunked body is malformed and holds the caller's marker; returns
/// what the gateway answered (read to its close, bounded).
async fn malformed_chunked_post(gw: &Endpoints) -> String {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut s = tokio::net::TcpStream::connect(gw.proxy).await.unwrap();
    let request = format!(
        "POST /agents/raw/ HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\
         content-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n\
         {CALLER_BODY_MARKER}\r\n{{\"jsonrpc\": \"2.0\"}}\r\n0\r\n\r\n"
    );
    s.write_all(request.as_bytes()).await.unwrap();
    let mut got = Vec::new();
    tokio::time::timeout(std::time::Duration::from_secs(20), s.read_to_end(&mut got))
        .await
        .expect("the gateway answers a malformed body")
        .unwrap();
    String::from_utf8_lossy(&got).into_owned()
}

/// Whether `line` holds `marker` as it is, or in a Debug form of its characters (pingora writes
/// `['z', 'q', …]`) or of its bytes (`[122, 113, …]`).
fn carries(line: &str, marker: &str) -> bool {
    let alnum = |s: &str| {
        s.chars()
            .filter(char::is_ascii_alphanumeric)
            .collect::<String>()
    };
    let bytes = format!("{:?}", marker.as_bytes());
    line.contains(marker)
        || alnum(line).contains(&alnum(marker))
        || line.contains(bytes.trim_matches(['[', ']']))
}

#[tokio::test]
async fn raw_traffic_never_reaches_the_log_at_any_level() {
    let agent = RawAgent::start(false, marked_answer).await;
    let config = config_head(&[])
        + "[refresh]\nmin = \"1h\"\n"
        + &IntegrationToml::new("raw", &agent.card_url).text();
    for (n, filter) in [
        "trace",
        "info,pingora_core=debug",
        "trace,pingora_core=trace,pingora_proxy=trace",
    ]
    .into_iter()
    .enumerate()
    {
        let dir = tempfile::tempdir().unwrap();
        let gw = GatewayProc::start_in(dir, &config, &[("RUST_LOG", filter)]).await;
        let (status, body) = gw
            .rpc("raw", &send_request("1", "SendMessage", "ok"), &[])
            .await;
        assert_eq!(status, 200, "{filter}: {body}");
        assert!(body["result"].is_object(), "{filter}: {body}");
        gw.rpc_raw("raw", &send_request("2", "SendMessage", "bad-chunks"), &[])
            .await;
        let answer = malformed_chunked_post(&gw).await;
        assert!(answer.starts_with("HTTP/1.1 "), "{filter}: {answer}");
        // The barrier: this call's access line is queued after every line of the calls above.
        let barrier = format!("zq-barrier-{n}");
        gw.rpc_raw(
            "raw",
            &send_request("3", "SendMessage", "ok"),
            &[("X-Request-Id", &barrier)],
        )
        .await;
        crate::assert_eventually!(
            gw.process
                .stderr_all()
                .0
                .iter()
                .any(|l| l.contains(&barrier)),
            "{filter}: the barrier's access line\n{}",
            gw.process.stderr_tail()
        );
        let (lines, dropped) = gw.process.stderr_all();
        assert_eq!(dropped, 0, "stderr exceeded what the harness keeps");
        // The filter took effect: pingora_core's own lines are there when it is asked for.
        if filter.contains("pingora_core") {
            assert!(
                lines.iter().any(|l| l.contains("pingora_core")),
                "{filter}: no line of pingora_core's"
            );
        }
        for (i, line) in lines.iter().enumerate() {
            assert!(
                !line.contains("log lines dropped"),
                "{filter}: lines were lost: {line}"
            );
            for marker in [CALLER_BODY_MARKER, ANSWER_HEADER_MARKER, ANSWER_BODY_MARKER] {
                assert!(
                    !carries(line, marker),
                    "{filter}: stderr line {i} carries raw traffic ({marker}): {line}"
                );
            }
        }
    }
}

/// A request line and Host the caller wrote, marked, on a stream the agent breaks off (its
/// connection closes mid-stream, after the answer's head went to the caller): pingora's error
/// line for it must name what the gateway decided, not the caller's path, query or Host
/// (`Gateway::request_summary`). (A caller that leaves mid-body is no error and has no line.)
#[tokio::test]
async fn pingora_error_lines_do_not_carry_the_callers_request_line() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    const PATH_MARKER: &str = "zq-caller-path-51c0";
    const HOST_MARKER: &str = "zq-caller-host-a8e2";
    let agent = RawAgent::start(false, marked_answer).await;
    let config = config_head(&[])
        + "[refresh]\nmin = \"1h\"\n"
        + &IntegrationToml::new("raw", &agent.card_url).text();
    let dir = tempfile::tempdir().unwrap();
    let gw = GatewayProc::start_in(dir, &config, &[]).await;
    let mut s = tokio::net::TcpStream::connect(gw.proxy).await.unwrap();
    let body = json!({"jsonrpc": "2.0", "id": "1", "method": "SendStreamingMessage", "params": {
        "message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "broken-stream"}]}}})
    .to_string();
    let head = format!(
        "POST /agents/raw/?token={PATH_MARKER} HTTP/1.1\r\nhost: {HOST_MARKER}\u{202e}\r\n\
         content-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(head.as_bytes()).await.unwrap();
    let mut got = Vec::new();
    let _ = tokio::time::timeout(std::time::Duration::from_secs(20), s.read_to_end(&mut got)).await;
    // Pingora's line for the broken stream comes with the request's own access line; wait for it.
    crate::assert_eventually!(
        gw.process
            .stderr_all()
            .0
            .iter()
            .any(|l| l.contains("Fail to filter request")),
        "pingora's error line for the cut body\n{}",
        gw.process.stderr_tail()
    );
    let (lines, _) = gw.process.stderr_all();
    for line in &lines {
        for marker in [PATH_MARKER, HOST_MARKER] {
            assert!(
                !carries(line, marker),
                "a log line carries the caller's {marker:?}: {line}"
            );
        }
        // `carries` compares alphanumerics, which a bidi mark has none of: look for it as such.
        assert!(
            !line.contains('\u{202e}') && !line.contains("\\u{202e}"),
            "a log line carries the caller's bidi mark: {line:?}"
        );
    }
    let line = lines
        .iter()
        .find(|l| l.contains("Fail to filter request"))
        .unwrap();
    assert!(line.contains("integration: raw"), "{line}");
}
