//! Calls that must not outlive their callers or their deadlines, through real sockets: agents
//! that drip their answer one byte at a time ([`DripAgent`]) and callers that hang up. A caller
//! that leaves cancels its call at once (the agent sees its connection close, the outcome is
//! `client_closed`, the in-flight slot comes back); an agent that passes `[limits]
//! upstream_header_timeout` / `upstream_body_timeout` is answered 504 `UPSTREAM_TIMEOUT` (or cut,
//! once the answer's head went out) and counted; a stream silent past `upstream_idle_timeout` is
//! cut and counted. And HTTP/1.0 callers get streams close-delimited, never chunked.
//!
//! The deadline under test is configured small (300 ms), the others long; the only assertions about time are "it happened"
//! (waited for with `assert_eventually!`) and, for shutdown, "before the drain deadline".

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use crate::common::SdkAgent;
use crate::common::drip::{Binding, Drip, DripAgent};
use crate::common::gateway::{
    Endpoints, GatewayProc, InProcess, config_head, integration, metric, send_request, sse_events,
};

/// Small header and body deadlines for their tests. The idle timeout is long so only the deadline
/// under test can fire: the agent drips a byte per tick, and under load a late tick would let a
/// short idle timeout cut the call first and count phase `idle`.
const SHORT: &str = "[limits]\nupstream_header_timeout = \"300ms\"\nupstream_body_timeout = \"300ms\"\n\
                     upstream_idle_timeout = \"30s\"\n";
/// A small idle timeout for the stream test, the header and body deadlines long for the same reason.
const SHORT_IDLE: &str = "[limits]\nupstream_header_timeout = \"30s\"\nupstream_body_timeout = \"30s\"\n\
                          upstream_idle_timeout = \"300ms\"\n";

/// Sends `body` as a JSON-RPC POST to integration `name` on a fresh connection, as HTTP/`version`,
/// and returns the connection without reading the answer.
async fn post(proxy: SocketAddr, path: &str, body: &Value, version: &str) -> TcpStream {
    let body = body.to_string();
    let mut s = TcpStream::connect(proxy)
        .await
        .expect("connecting to the gateway");
    let req = format!(
        "POST {path} HTTP/{version}\r\nHost: gw\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.expect("sending");
    s
}

/// Reads until the gateway closes the connection (at most 30 s).
async fn read_to_close(s: &mut TcpStream) -> Vec<u8> {
    let mut raw = Vec::new();
    let r = tokio::time::timeout(Duration::from_secs(30), s.read_to_end(&mut raw)).await;
    assert!(
        r.is_ok(),
        "the gateway did not close the connection: {:?}",
        String::from_utf8_lossy(&raw)
    );
    raw
}

/// Reads until `needle` has arrived (at most 30 s).
async fn read_until(s: &mut TcpStream, needle: &str) -> String {
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    let found = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let n = s.read(&mut buf).await.unwrap_or(0);
            if n == 0 {
                return false;
            }
            raw.extend_from_slice(&buf[..n]);
            if String::from_utf8_lossy(&raw).contains(needle) {
                return true;
            }
        }
    })
    .await;
    let text = String::from_utf8_lossy(&raw).into_owned();
    assert!(matches!(found, Ok(true)), "never got {needle:?}: {text:?}");
    text
}

fn head_and_body(raw: &[u8]) -> (String, Vec<u8>) {
    let at = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no header end: {:?}", String::from_utf8_lossy(raw)));
    (
        String::from_utf8_lossy(&raw[..at]).to_ascii_lowercase(),
        raw[at + 4..].to_vec(),
    )
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == name).then(|| v.trim())
    })
}

async fn wait_metric(gw: &Endpoints, name: &str, labels: &[(&str, &str)], want: f64) {
    let mut got: f64;
    crate::assert_eventually!(
        {
            got = metric(&gw.metrics().await, name, labels);
            got == want
        },
        "{name}{labels:?} stayed {got}, want {want}"
    );
}

async fn wait_agent_closed(agent: &DripAgent, want: usize) {
    crate::assert_eventually!(
        agent.closed() == want,
        "the agent saw {} of {want} connections closed ({} calls)",
        agent.closed(),
        agent.calls()
    );
}

async fn wait_calls(agents: &[DripAgent], want: usize) {
    crate::assert_eventually!(
        agents.iter().map(DripAgent::calls).sum::<usize>() == want,
        "the agents got {} of {want} calls",
        agents.iter().map(DripAgent::calls).sum::<usize>()
    );
}

fn assert_timeout_error(body: &Value, id: &str) {
    assert_eq!(body["id"], id, "{body}");
    assert_eq!(body["error"]["code"], -32603, "{body}");
    let info = &body["error"]["data"][0];
    assert_eq!(info["domain"], "a2a-egress", "{body}");
    assert_eq!(info["reason"], "UPSTREAM_TIMEOUT", "{body}");
}

#[tokio::test]
async fn an_answer_head_past_its_deadline_is_answered_504_and_counted() {
    let agent = DripAgent::start(Drip::Head, Binding::JsonRpc).await;
    let gw = InProcess::start(&(config_head(&[]) + SHORT + &agent.integration("drip"))).await;
    let (status, body) = gw
        .rpc("drip", &send_request("h-1", "SendMessage", "hi"), &[])
        .await;
    assert_eq!(status, 504, "{body}");
    assert_timeout_error(&body, "h-1");
    let labels = [("integration", "drip"), ("phase", "header")];
    wait_metric(&gw, "a2a_egress_upstream_timeouts_total", &labels, 1.0).await;
    let m = gw.metrics().await;
    let body_phase = [("integration", "drip"), ("phase", "body")];
    assert_eq!(
        metric(&m, "a2a_egress_upstream_timeouts_total", &body_phase),
        0.0,
        "{m}"
    );
    assert!(
        m.contains("a2a_egress_upstream_timeouts_total{integration=\"drip\",phase=\"idle\"} 0"),
        "every phase's series exists from the start: {m}"
    );
    wait_agent_closed(&agent, 1).await;
}

#[tokio::test]
async fn a_unary_body_past_its_deadline_is_answered_504_and_counted() {
    let agent = DripAgent::start(Drip::Body { len: 1000 }, Binding::JsonRpc).await;
    let gw = InProcess::start(&(config_head(&[]) + SHORT + &agent.integration("drip"))).await;
    let (status, body) = gw
        .rpc("drip", &send_request("b-1", "SendMessage", "hi"), &[])
        .await;
    assert_eq!(status, 504, "{body}");
    assert_timeout_error(&body, "b-1");
    let labels = [("integration", "drip"), ("phase", "body")];
    wait_metric(&gw, "a2a_egress_upstream_timeouts_total", &labels, 1.0).await;
    wait_agent_closed(&agent, 1).await;
}

#[tokio::test]
async fn an_http_json_call_past_its_deadline_is_a_504_deadline_exceeded() {
    let agent = DripAgent::start(Drip::Head, Binding::Rest).await;
    let gw = InProcess::start(&(config_head(&[]) + SHORT + &agent.integration("drip"))).await;
    let req = send_request("r-1", "SendMessage", "hi")["params"].clone();
    let resp = crate::common::http()
        .post(gw.url("/agents/drip/message:send"))
        .header("content-type", "application/json")
        .body(req.to_string())
        .send()
        .await
        .expect("calling the gateway");
    assert_eq!(resp.status().as_u16(), 504);
    let body: Value = resp.json().await.expect("a JSON error");
    assert_eq!(body["error"]["code"], 504, "{body}");
    assert_eq!(body["error"]["status"], "DEADLINE_EXCEEDED", "{body}");
    assert_eq!(
        body["error"]["details"][0]["reason"], "UPSTREAM_TIMEOUT",
        "{body}"
    );
    let labels = [("integration", "drip"), ("phase", "header")];
    wait_metric(&gw, "a2a_egress_upstream_timeouts_total", &labels, 1.0).await;
}

#[tokio::test]
async fn a_large_answer_past_its_body_deadline_is_cut_and_counted() {
    // Larger than the gateway holds back, over HTTP+JSON: its head goes to the caller before the
    // body is read (a JSON-RPC answer is read whole, for its id: the next test).
    let len = 200_000;
    let agent = DripAgent::start(Drip::Body { len }, Binding::Rest).await;
    let gw = InProcess::start(&(config_head(&[]) + SHORT + &agent.integration("drip"))).await;
    let req = &send_request("r-1", "SendMessage", "hi")["params"];
    let mut s = post(gw.proxy, "/agents/drip/message:send", req, "1.1").await;
    let raw = read_to_close(&mut s).await;
    let (head, body) = head_and_body(&raw);
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert_eq!(header(&head, "content-length"), Some("200000"), "{head}");
    assert!(
        body.len() < len,
        "the body was cut: {} of {len} bytes",
        body.len()
    );
    let labels = [("integration", "drip"), ("phase", "body")];
    wait_metric(&gw, "a2a_egress_upstream_timeouts_total", &labels, 1.0).await;
    wait_agent_closed(&agent, 1).await;
}

#[tokio::test]
async fn a_large_jsonrpc_answer_past_its_body_deadline_is_a_504() {
    // Read whole (its id is checked), so nothing went to the caller yet: a whole 504.
    let len = 200_000;
    let agent = DripAgent::start(Drip::Body { len }, Binding::JsonRpc).await;
    let gw = InProcess::start(&(config_head(&[]) + SHORT + &agent.integration("drip"))).await;
    let req = json!({"jsonrpc": "2.0", "id": "g-1", "method": "GetTask", "params": {"id": "t"}});
    let (status, body) = gw.rpc("drip", &req, &[]).await;
    assert_eq!(status, 504, "{body}");
    assert_timeout_error(&body, "g-1");
    let labels = [("integration", "drip"), ("phase", "body")];
    wait_metric(&gw, "a2a_egress_upstream_timeouts_total", &labels, 1.0).await;
    wait_agent_closed(&agent, 1).await;
}

#[tokio::test]
async fn a_stream_silent_past_the_idle_timeout_is_cut_and_counted() {
    let agent = DripAgent::start(Drip::Stream, Binding::JsonRpc).await;
    let gw = InProcess::start(&(config_head(&[]) + SHORT_IDLE + &agent.integration("drip"))).await;
    let req = send_request("s-1", "SendStreamingMessage", "hi");
    let mut s = post(gw.proxy, "/agents/drip", &req, "1.1").await;
    let raw = read_to_close(&mut s).await;
    let (head, body) = head_and_body(&raw);
    assert_eq!(
        header(&head, "transfer-encoding"),
        Some("chunked"),
        "{head}"
    );
    let body = String::from_utf8_lossy(&body).into_owned();
    assert!(
        body.contains("statusUpdate"),
        "the first event went on: {body:?}"
    );
    assert!(
        !body.ends_with("0\r\n\r\n"),
        "the stream was cut, not ended: {body:?}"
    );
    let labels = [("integration", "drip"), ("phase", "idle")];
    wait_metric(&gw, "a2a_egress_upstream_timeouts_total", &labels, 1.0).await;
    wait_agent_closed(&agent, 1).await;
}

#[tokio::test]
async fn a_caller_that_hangs_up_cancels_its_unary_call() {
    // One agent drips the head, the other the body: the caller leaves during each wait.
    let head = DripAgent::start(Drip::Head, Binding::JsonRpc).await;
    let body = DripAgent::start(Drip::Body { len: 1000 }, Binding::JsonRpc).await;
    let config = config_head(&[]) + &head.integration("head") + &body.integration("body");
    let gw = InProcess::start(&config).await;
    for (name, agent) in [("head", &head), ("body", &body)] {
        let req = send_request(name, "SendMessage", "hi");
        let s = post(gw.proxy, &format!("/agents/{name}"), &req, "1.1").await;
        crate::assert_eventually!(
            agent.calls() == 1,
            "{name}: the call never reached the agent"
        );
        wait_metric(&gw, "a2a_egress_inflight_requests", &[], 1.0).await;
        drop(s);
        wait_agent_closed(agent, 1).await;
        wait_metric(&gw, "a2a_egress_inflight_requests", &[], 0.0).await;
        let outcome = [("integration", name), ("outcome", "client_closed")];
        wait_metric(&gw, "a2a_egress_requests_total", &outcome, 1.0).await;
    }
    let m = gw.metrics().await;
    assert_eq!(
        metric(&m, "a2a_egress_upstream_timeouts_total", &[]),
        0.0,
        "{m}"
    );
}

/// The WARN and ERROR lines `gw` wrote to stderr (its log is JSON), once every line written
/// before the access line of a card read with request id `marker` is out (the writer keeps
/// their order).
async fn warnings_before(gw: &GatewayProc, marker: &str) -> Vec<String> {
    // A card read: answered by the gateway itself, so no agent can hold it up.
    let card = gw.url("/agents/head/.well-known/agent-card.json");
    let read = crate::common::http()
        .get(card)
        .header("x-request-id", marker);
    read.send().await.expect("reading the effective card");
    let mut lines: Vec<String>;
    crate::assert_eventually!(
        {
            lines = gw.process.stderr_all().0;
            lines.iter().any(|l| l.contains(marker))
        },
        "no access line for {marker} in the log"
    );
    lines
        .into_iter()
        .filter(|l| {
            let v: Value = serde_json::from_str(l).unwrap_or_default();
            matches!(v["level"].as_str(), Some("WARN" | "ERROR"))
                || (v.is_null() && (l.contains("WARN") || l.contains("ERROR")))
        })
        .collect()
}

/// A caller that leaves at any point of its call — before its body is complete, while the agent
/// has not answered, in the middle of a stream — is `client_closed` and makes no WARN or ERROR
/// line: leaving is the caller's right, and a line at that level would page someone for it (on
/// main, the mid-body case was `upstream_failed`, answered 502 and logged at ERROR by pingora).
#[tokio::test]
async fn a_caller_that_hangs_up_mid_body_is_client_closed_and_logs_no_warning() {
    let head = DripAgent::start(Drip::Head, Binding::JsonRpc).await;
    let stream = DripAgent::start(Drip::Stream, Binding::JsonRpc).await;
    let config = config_head(&[])
        + "[log]\nformat = \"json\"\n"
        + &head.integration("head")
        + &stream.integration("drip");
    let gw = GatewayProc::start(&config, &[]).await;
    // Mid-body: the head and a third of the body, then the caller leaves.
    let mut s = TcpStream::connect(gw.proxy).await.expect("connecting");
    let part = b"POST /agents/head HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n\
                 Content-Length: 300\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":\"1\"";
    s.write_all(part).await.expect("sending");
    wait_metric(&gw, "a2a_egress_inflight_requests", &[], 1.0).await;
    drop(s);
    let gone = [("integration", "head"), ("outcome", "client_closed")];
    wait_metric(&gw, "a2a_egress_requests_total", &gone, 1.0).await;
    // Waiting for the answer's head.
    let s = post(
        gw.proxy,
        "/agents/head",
        &send_request("2", "SendMessage", "hi"),
        "1.1",
    )
    .await;
    crate::assert_eventually!(head.calls() == 1, "the call never reached the agent");
    drop(s);
    wait_metric(&gw, "a2a_egress_requests_total", &gone, 2.0).await;
    // Mid-stream.
    let req = send_request("3", "SendStreamingMessage", "hi");
    let mut s = post(gw.proxy, "/agents/drip", &req, "1.1").await;
    read_until(&mut s, "statusUpdate").await;
    drop(s);
    let gone = [("integration", "drip"), ("outcome", "client_closed")];
    wait_metric(&gw, "a2a_egress_requests_total", &gone, 1.0).await;
    let m = gw.metrics().await;
    let failed = [("outcome", "upstream_failed")];
    assert_eq!(metric(&m, "a2a_egress_requests_total", &failed), 0.0, "{m}");
    let noisy = warnings_before(&gw, "after-hang-ups").await;
    assert!(
        noisy.is_empty(),
        "hang-ups were logged as problems: {noisy:#?}"
    );
}

/// A call's lines besides its access line name its request id: the deadline's WARN line of a
/// call whose agent never answered carries the caller's `X-Request-Id` (in JSON as the `call`
/// span's field, in text in the line's prefix), so an SRE can join it to the access line (on
/// main, nothing but the integration named the call).
#[tokio::test]
async fn a_calls_warning_lines_carry_its_request_id() {
    let agent = DripAgent::start(Drip::Head, Binding::JsonRpc).await;
    // JSON at the default level, text at `warn`: the lines this is for are WARN lines, and a
    // filter that shows only those must keep the id too.
    for (format, level) in [("json", "info"), ("text", "warn")] {
        let config = config_head(&[])
            + SHORT
            + &format!("[log]\nformat = \"{format}\"\n")
            + &agent.integration("head");
        let gw = GatewayProc::start(&config, &[("RUST_LOG", level)]).await;
        let id = format!("rid-{format}-7f3a");
        let req = send_request("1", "SendMessage", "hi");
        let (status, _, body) = gw.rpc_raw("head", &req, &[("x-request-id", &id)]).await;
        assert_eq!(status, 504, "{body}");
        let mut line: Option<String>;
        crate::assert_eventually!(
            {
                line = (gw.process.stderr_all().0.into_iter())
                    .find(|l| l.contains("the agent did not answer in time"));
                line.is_some()
            },
            "{format}: no deadline line"
        );
        let line = line.unwrap_or_default();
        if format == "json" {
            let v: Value = serde_json::from_str(&line).expect("a JSON line");
            assert_eq!(v["span"]["request_id"], id.as_str(), "{line}");
        } else {
            assert!(line.contains(&format!("request_id={id}")), "{line}");
        }
    }
}

#[tokio::test]
async fn a_caller_that_hangs_up_cancels_its_stream() {
    let agent = DripAgent::start(Drip::Stream, Binding::JsonRpc).await;
    let gw = InProcess::start(&(config_head(&[]) + &agent.integration("drip"))).await;
    let req = send_request("s-1", "SendStreamingMessage", "hi");
    let mut s = post(gw.proxy, "/agents/drip", &req, "1.1").await;
    // The stream is open and the agent is silent between events when the caller leaves.
    read_until(&mut s, "statusUpdate").await;
    drop(s);
    wait_agent_closed(&agent, 1).await;
    wait_metric(&gw, "a2a_egress_inflight_requests", &[], 0.0).await;
    let outcome = [("integration", "drip"), ("outcome", "client_closed")];
    wait_metric(&gw, "a2a_egress_requests_total", &outcome, 1.0).await;
}

/// A caller that stays connected but never reads its stream holds the call no longer than
/// `[limits] write_timeout`: the agent keeps sending, the gateway's writes stop moving, and the
/// call ends (agent connection closed, slot freed, counted) while the caller's socket is open.
#[tokio::test]
async fn a_caller_that_stops_reading_is_cut_at_the_write_timeout() {
    let agent = DripAgent::start(Drip::Flood, Binding::JsonRpc).await;
    let limits = "[limits]\nwrite_timeout = \"1s\"\nupstream_idle_timeout = \"1h\"\n";
    let config = config_head(&[]) + limits + &agent.integration("drip");
    let gw = InProcess::start(&config).await;
    let req = send_request("w-1", "SendStreamingMessage", "hi");
    let s = post(gw.proxy, "/agents/drip", &req, "1.1").await;
    wait_metric(&gw, "a2a_egress_inflight_requests", &[], 1.0).await;
    // The caller never reads: the loopback buffers fill, then each write waits.
    wait_agent_closed(&agent, 1).await;
    wait_metric(&gw, "a2a_egress_inflight_requests", &[], 0.0).await;
    let write = [("phase", "write")];
    wait_metric(&gw, "a2a_egress_downstream_timeouts_total", &write, 1.0).await;
    let outcome = [("integration", "drip"), ("outcome", "client_closed")];
    wait_metric(&gw, "a2a_egress_requests_total", &outcome, 1.0).await;
    drop(s);
}

/// The open file descriptors of process `pid`.
fn fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("/proc/PID/fd")
        .count()
}

/// The fd count of `pid` once it has not moved for ten polls in a row (connections of the
/// readiness and metrics polls close shortly after their answer).
async fn settled_fds(pid: u32) -> usize {
    let (mut last, mut same) = (fds(pid), 0);
    crate::assert_eventually!(
        {
            let now = fds(pid);
            same = if now == last { same + 1 } else { 0 };
            last = now;
            same >= 10
        },
        "the gateway's fd count never settled (last {last})"
    );
    last
}

/// Integrations of the fault test: every kind of drip, several of each.
const AGENTS: usize = 9;
/// Callers per agent.
const CALLERS: usize = 4;

/// Starts the dripping agents (heads, bodies, streams in turn) and the config naming them.
async fn dripping_agents(limits: &str) -> (Vec<DripAgent>, String) {
    let mut agents = Vec::new();
    let mut config = config_head(&[]) + limits;
    for i in 0..AGENTS {
        let drip = [Drip::Head, Drip::Body { len: 5000 }, Drip::Stream][i % 3];
        let agent = DripAgent::start(drip, Binding::JsonRpc).await;
        config += &agent.integration(&format!("drip{i}"));
        agents.push(agent);
    }
    (agents, config)
}

/// Every caller sends its call (a stream to the streaming agents), and the calls reach the agents.
async fn callers(proxy: SocketAddr, agents: &[DripAgent]) -> Vec<TcpStream> {
    let before: usize = agents.iter().map(DripAgent::calls).sum();
    let mut conns = Vec::new();
    for i in 0..AGENTS {
        let method = if i % 3 == 2 {
            "SendStreamingMessage"
        } else {
            "SendMessage"
        };
        for c in 0..CALLERS {
            let req = send_request(&format!("c{i}-{c}"), method, "hi");
            conns.push(post(proxy, &format!("/agents/drip{i}"), &req, "1.1").await);
        }
    }
    wait_calls(agents, before + AGENTS * CALLERS).await;
    conns
}

#[tokio::test]
async fn dripping_agents_and_callers_that_hang_up_leave_no_call_slot_or_fd_behind() {
    // Long deadlines: only the callers' leaving can end these calls, and the in-flight cap is
    // exactly what they take, so calls left behind would refuse every new caller.
    let limits = format!(
        "[limits]\nmax_inflight = {}\nupstream_header_timeout = \"1h\"\n\
         upstream_body_timeout = \"1h\"\nupstream_idle_timeout = \"1h\"\n",
        AGENTS * CALLERS
    );
    let (agents, config) = dripping_agents(&limits).await;
    let gw = GatewayProc::start(&config, &[]).await;
    let pid = gw.process.pid();
    let start_inflight = metric(&gw.metrics().await, "a2a_egress_inflight_requests", &[]);
    let start_fds = settled_fds(pid).await;

    for round in 0..2 {
        let conns = callers(gw.proxy, &agents).await;
        wait_metric(
            &gw,
            "a2a_egress_inflight_requests",
            &[],
            (AGENTS * CALLERS) as f64,
        )
        .await;
        drop(conns);
        wait_metric(&gw, "a2a_egress_inflight_requests", &[], start_inflight).await;
        let mut open: Vec<usize>;
        crate::assert_eventually!(
            {
                open = agents.iter().map(DripAgent::open).collect();
                open.iter().all(|n| *n == 0)
            },
            "round {round}: calls still open upstream, per agent: {open:?}"
        );
        let mut now: usize;
        crate::assert_eventually!(
            {
                now = fds(pid);
                now == start_fds
            },
            "round {round}: the gateway holds {now} fds, {start_fds} at the start"
        );
    }
    let m = gw.metrics().await;
    let gone = metric(
        &m,
        "a2a_egress_requests_total",
        &[("outcome", "client_closed")],
    );
    assert_eq!(gone, (2 * AGENTS * CALLERS) as f64, "{m}");
    assert_eq!(
        metric(&m, "a2a_egress_upstream_timeouts_total", &[]),
        0.0,
        "{m}"
    );
    assert_eq!(
        metric(&m, "a2a_egress_overload_refusals_total", &[]),
        0.0,
        "{m}"
    );
}

#[tokio::test]
async fn a_gateway_with_abandoned_drips_shuts_down_without_waiting_out_the_drain() {
    let limits = "[limits]\nupstream_header_timeout = \"1h\"\nupstream_body_timeout = \"1h\"\n\
                  upstream_idle_timeout = \"1h\"\n";
    let (agents, config) = dripping_agents(limits).await;
    let mut gw = GatewayProc::start(&config, &[]).await;
    let conns = callers(gw.proxy, &agents).await;
    drop(conns);
    // At once: the drain must find the abandoned calls gone, not wait for them.
    gw.process.terminate();
    let bound = a2a_egress::server::DRAIN_DEADLINE / 2;
    let status = gw.process.wait_timeout(bound);
    assert!(
        status.is_some_and(|s| s.success()),
        "the gateway did not exit cleanly within {bound:?} (the drain deadline is {:?}): {status:?}\n{}",
        a2a_egress::server::DRAIN_DEADLINE,
        gw.process.stderr_tail()
    );
    crate::assert_eventually!(
        agents.iter().all(|a| a.open() == 0),
        "calls still open upstream after the gateway exited"
    );
}

/// The framing of an answer to an HTTP/1.0 caller: a status line, no `Transfer-Encoding`,
/// `Connection: close`, and a body that is SSE text as it is (no chunk sizes), ended by the close.
fn assert_close_delimited(raw: &[u8]) -> Vec<Value> {
    let (head, body) = head_and_body(raw);
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert_eq!(header(&head, "transfer-encoding"), None, "{head}");
    assert_eq!(header(&head, "content-length"), None, "{head}");
    assert_eq!(header(&head, "connection"), Some("close"), "{head}");
    assert_eq!(
        header(&head, "content-type"),
        Some("text/event-stream"),
        "{head}"
    );
    let body = String::from_utf8(body).expect("UTF-8 SSE");
    assert!(
        body.starts_with("data:") || body.starts_with("event:") || body.starts_with(':'),
        "the body is SSE as it is, not chunked: {body:?}"
    );
    let events = sse_events(&body);
    assert!(!events.is_empty(), "{body:?}");
    events
}

#[tokio::test]
async fn http_1_0_callers_get_streams_close_delimited() {
    let agent = SdkAgent::start(&["--binding", "jsonrpc", "--slow-stream", "60"]);
    let off = SdkAgent::start(&["--binding", "jsonrpc", "--streaming", "off"]);
    let config = config_head(&[])
        + &integration("echo", &agent.card_url, "")
        + &integration("off", &off.card_url, "");
    let gw = InProcess::start(&config).await;

    // A stream, and one whose caller asked to keep the connection alive: still closed.
    for keep in [false, true] {
        let body = send_request("s-10", "SendStreamingMessage", "hi").to_string();
        let mut s = TcpStream::connect(gw.proxy).await.unwrap();
        let alive = if keep {
            "Connection: keep-alive\r\n"
        } else {
            ""
        };
        let req = format!(
            "POST /agents/echo HTTP/1.0\r\nHost: gw\r\n{alive}Content-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        );
        s.write_all(req.as_bytes()).await.unwrap();
        let events = assert_close_delimited(&read_to_close(&mut s).await);
        assert!(events.len() >= 2, "{events:?}");
        assert_eq!(events[0]["id"], "s-10", "{events:?}");
    }

    // SubscribeToTask to a task still streaming (60 updates, 50 ms apart), started over HTTP/1.1.
    let mut first = crate::common::http()
        .post(gw.agent_url("echo"))
        .header("content-type", "application/json")
        .body(send_request("s-11", "SendStreamingMessage", "hi").to_string())
        .send()
        .await
        .expect("starting a stream");
    let mut text = String::new();
    while !text.contains("\n\n") && !text.contains("\r\n\r\n") {
        let chunk = first.chunk().await.expect("reading the stream");
        text += &String::from_utf8_lossy(&chunk.expect("the stream ended before an event"));
    }
    let event = sse_events(&text).remove(0);
    let result = &event["result"];
    let task = (result["task"]["id"].as_str())
        .or(result["statusUpdate"]["taskId"].as_str())
        .or(result["artifactUpdate"]["taskId"].as_str())
        .unwrap_or_else(|| panic!("no task id in {event}"))
        .to_owned();
    let sub = json!({"jsonrpc": "2.0", "id": "sub-1", "method": "SubscribeToTask",
                     "params": {"id": task}});
    let mut s = post(gw.proxy, "/agents/echo", &sub, "1.0").await;
    let events = assert_close_delimited(&read_to_close(&mut s).await);
    assert_eq!(events[0]["id"], "sub-1", "{events:?}");

    // A stream the profile answers through SendMessage, as one event.
    let req = send_request("d-1", "SendStreamingMessage", "hi");
    let mut s = post(gw.proxy, "/agents/off", &req, "1.0").await;
    let events = assert_close_delimited(&read_to_close(&mut s).await);
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["id"], "d-1", "{events:?}");
    assert!(events[0]["result"].is_object(), "{events:?}");
}

#[tokio::test]
async fn bytes_after_the_request_do_not_cancel_the_call() {
    // The agent answers after 500 ms: the gateway is watching the caller when the bytes of a
    // pipelined request arrive. pingora takes a byte of them, so the connection closes after
    // the answer (the gateway serves no pipelined request), but the call itself goes through.
    let agent = SdkAgent::start(&["--binding", "jsonrpc", "--delay-ms", "500"]);
    let gw =
        InProcess::start(&(config_head(&[]) + &integration("echo", &agent.card_url, ""))).await;
    let mut s = post(
        gw.proxy,
        "/agents/echo",
        &send_request("p-1", "SendMessage", "hi"),
        "1.1",
    )
    .await;
    crate::assert_eventually!(
        !agent.seen_calls().await.is_empty(),
        "the call never reached the agent"
    );
    s.write_all(b"GET /agents/echo/.well-known/agent-card.json HTTP/1.1\r\nHost: gw\r\n\r\n")
        .await
        .unwrap();
    let raw = read_to_close(&mut s).await;
    let (head, body) = head_and_body(&raw);
    assert!(head.starts_with("http/1.1 200"), "{head}");
    let body: Value = serde_json::from_slice(&body).expect("one JSON answer");
    assert_eq!(body["id"], "p-1", "{body}");
    assert!(body["result"].is_object(), "{body}");
    let outcome = [("integration", "echo"), ("outcome", "ok")];
    wait_metric(&gw, "a2a_egress_requests_total", &outcome, 1.0).await;
}
