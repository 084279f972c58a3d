//! OpenTelemetry traces, checked against real OTLP receivers run in the test (the collector's own
//! gRPC service from `opentelemetry-proto`, and an HTTP/protobuf endpoint decoding the same
//! messages with prost), with the gateway binary in front of the official SDK agent (which records
//! the headers it received) or the reference agent:
//! - with `[telemetry]` on, a call with a caller `traceparent` and one without each arrive as a
//!   SERVER span (parent: the caller's span, or none) and a CLIENT span (parent: the SERVER span)
//!   with their attributes (the SERVER span's `a2a.task.id` / `a2a.context.id`: the SDK agent's
//!   Task's); the agent's `traceparent` names the CLIENT span, `tracestate` and `baggage` reach
//!   it; a refusal is a SERVER span with its reason;
//! - the same over OTLP/HTTP, where a downgraded stream's request to the agent is a
//!   `send_message` CLIENT span marked downgraded;
//! - with `[telemetry]` absent, `OTEL_EXPORTER_OTLP_ENDPOINT` alone sends nothing, even at the
//!   shutdown flush, and the agent gets today's headers;
//! - a collector that accepts connections and never answers delays and fails no call.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::trace::v1::Span;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use prost::Message as _;
use serde_json::json;

use crate::common::gateway::{GatewayProc, config_head, integration, send_request};
use crate::common::tls::TestPki;
use crate::common::{RefAgent, SdkAgent};

/// The caller's trace context of the tests.
const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN: &str = "00f067aa0ba902b7";

/// Export batches every 50 ms, so a test waits for its spans briefly.
const FAST_BATCHES: (&str, &str) = ("OTEL_BSP_SCHEDULE_DELAY", "50");

/// One span as a receiver got it, with its resource's `service.name`.
#[derive(Debug, Clone)]
struct Got {
    service: String,
    span: Span,
}

/// What a receiver has collected.
#[derive(Debug, Clone, Default)]
struct Collected(Arc<Mutex<Vec<Got>>>);

impl Collected {
    fn add(&self, req: ExportTraceServiceRequest) {
        let mut all = self.0.lock().unwrap();
        for rs in req.resource_spans {
            let service = rs
                .resource
                .iter()
                .flat_map(|r| &r.attributes)
                .find(|kv| kv.key == "service.name")
                .and_then(|kv| string(kv.value.as_ref()?.value.as_ref()?))
                .unwrap_or_default()
                .to_owned();
            for ss in rs.scope_spans {
                for span in ss.spans {
                    all.push(Got {
                        service: service.clone(),
                        span,
                    });
                }
            }
        }
    }

    fn spans(&self) -> Vec<Got> {
        self.0.lock().unwrap().clone()
    }
}

struct Grpc(Collected);

#[tonic::async_trait]
impl TraceService for Grpc {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        self.0.add(request.into_inner());
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

/// An OTLP/gRPC receiver on a loopback port: `(http://addr, what it collects)`.
async fn grpc_receiver() -> (String, Collected) {
    grpc_receiver_on(None).await
}

/// [`grpc_receiver`], over TLS with `pki`'s server certificate when given (`https://addr`).
async fn grpc_receiver_on(pki: Option<&TestPki>) -> (String, Collected) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let got = Collected::default();
    let service = TraceServiceServer::new(Grpc(got.clone()));
    let mut server = tonic::transport::Server::builder();
    if let Some(pki) = pki {
        let identity = tonic::transport::Identity::from_pem(
            std::fs::read(&pki.cert_path).unwrap(),
            std::fs::read(&pki.key_path).unwrap(),
        );
        server = server
            .tls_config(tonic::transport::ServerTlsConfig::new().identity(identity))
            .expect("the receiver's TLS settings");
    }
    tokio::spawn(async move {
        server
            .add_service(service)
            .serve_with_incoming(incoming(listener))
            .await
            .expect("OTLP/gRPC receiver");
    });
    let scheme = if pki.is_some() { "https" } else { "http" };
    (format!("{scheme}://{addr}"), got)
}

/// The connections `listener` accepts, as the stream tonic serves.
fn incoming(
    listener: tokio::net::TcpListener,
) -> impl futures::Stream<Item = std::io::Result<tokio::net::TcpStream>> {
    futures::stream::unfold(listener, |l| async move {
        let next = l.accept().await.map(|(sock, _)| sock);
        Some((next, l))
    })
}

/// An OTLP/HTTP (protobuf) receiver of `POST /v1/traces`: `(http://addr, what it collects)`.
async fn http_receiver() -> (String, Collected) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (app, got) = http_app();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}"), got)
}

/// [`http_receiver`] over TLS with `pki`'s server certificate (`https://addr`).
async fn https_receiver(pki: &TestPki) -> (String, Collected) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (app, got) = http_app();
    let tls = TlsIncoming {
        tcp: listener,
        tls: tokio_rustls::TlsAcceptor::from(pki.server_config()),
    };
    tokio::spawn(async move { axum::serve(tls, app).await.unwrap() });
    (format!("https://{addr}"), got)
}

/// Accepted connections after their TLS handshake (a failed handshake is skipped).
struct TlsIncoming {
    tcp: tokio::net::TcpListener,
    tls: tokio_rustls::TlsAcceptor,
}

impl axum::serve::Listener for TlsIncoming {
    type Io = tokio_rustls::server::TlsStream<tokio::net::TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let Ok((tcp, from)) = self.tcp.accept().await else {
                continue;
            };
            if let Ok(Ok(tls)) =
                tokio::time::timeout(Duration::from_secs(5), self.tls.accept(tcp)).await
            {
                return (tls, from);
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.tcp.local_addr()
    }
}

/// The OTLP/HTTP receiver's routes and what they collect.
fn http_app() -> (axum::Router, Collected) {
    let got = Collected::default();
    let sink = got.clone();
    let app = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(move |body: bytes::Bytes| {
            let sink = sink.clone();
            async move {
                let req = ExportTraceServiceRequest::decode(body).expect("an OTLP protobuf body");
                sink.add(req);
                (
                    [("content-type", "application/x-protobuf")],
                    ExportTraceServiceResponse::default().encode_to_vec(),
                )
            }
        }),
    );
    (app, got)
}

fn string(v: &Any) -> Option<&str> {
    match v {
        Any::StringValue(s) => Some(s),
        _ => None,
    }
}

/// The value of attribute `key` of `span`.
fn attr<'a>(span: &'a Span, key: &str) -> Option<&'a Any> {
    span.attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref()?.value.as_ref())
}

fn str_attr<'a>(span: &'a Span, key: &str) -> &'a str {
    attr(span, key).and_then(string).unwrap_or_default()
}

fn int_attr(span: &Span, key: &str) -> Option<i64> {
    match attr(span, key) {
        Some(Any::IntValue(i)) => Some(*i),
        _ => None,
    }
}

fn kind(span: &Span) -> SpanKind {
    SpanKind::try_from(span.kind).unwrap_or(SpanKind::Unspecified)
}

/// Waits until `got` holds at least `n` spans; returns them.
async fn wait_spans(got: &Collected, n: usize) -> Vec<Got> {
    let mut all: Vec<Got>;
    crate::assert_eventually!(
        {
            all = got.spans();
            all.len() >= n
        },
        within = Duration::from_secs(20),
        "{n} spans expected, got {}: {all:#?}",
        all.len()
    );
    all
}

/// The SERVER span of trace `trace` (hex) and its CLIENT spans.
fn call_spans(all: &[Got], trace: &str) -> (Span, Vec<Span>) {
    let of_trace: Vec<&Span> = all
        .iter()
        .map(|g| &g.span)
        .filter(|s| hex::encode(&s.trace_id) == trace)
        .collect();
    let servers: Vec<&&Span> = of_trace
        .iter()
        .filter(|s| kind(s) == SpanKind::Server)
        .collect();
    assert_eq!(servers.len(), 1, "one SERVER span per call: {of_trace:#?}");
    let clients = of_trace
        .iter()
        .filter(|s| kind(s) == SpanKind::Client)
        .map(|s| (*s).clone())
        .collect();
    ((**servers[0]).clone(), clients)
}

fn telemetry(endpoint: &str, protocol: &str) -> String {
    format!(
        "[telemetry]\notlp_endpoint = \"{endpoint}\"\nprotocol = \"{protocol}\"\n\
         service_name = \"gw-under-test\"\nsampling = 1.0\n"
    )
}

#[tokio::test]
async fn calls_become_a_server_span_and_a_client_span_whose_id_the_agent_receives() {
    let (endpoint, got) = grpc_receiver().await;
    let agent = SdkAgent::start(&[]);
    let config = config_head(&[])
        + &telemetry(&endpoint, "grpc")
        + &integration("echo", &agent.card_url, "");
    let gw = GatewayProc::start(&config, &[FAST_BATCHES]).await;
    agent.reset().await;

    let caller = format!("00-{TRACE_ID}-{CALLER_SPAN}-01");
    let headers = [
        ("traceparent", caller.as_str()),
        ("tracestate", "vendor=abc"),
        ("baggage", "tenant=blue,tier=gold"),
    ];
    let (s, _, body) = gw
        .rpc_raw("echo", &send_request("1", "SendMessage", "hi"), &headers)
        .await;
    assert_eq!(s, 200, "{body}");
    // The official SDK agent answers a Task: its ids are what the SERVER span must name.
    let answer: serde_json::Value = serde_json::from_str(&body).unwrap();
    let (task, context) = answer_ids(&answer["result"]);
    assert!(!task.is_empty() && !context.is_empty(), "{body}");
    let (s, _, body) = gw
        .rpc_raw("echo", &send_request("2", "SendMessage", "hi"), &[])
        .await;
    assert_eq!(s, 200, "{body}");
    let secret = [("A2A-Egress-Data-Class", "secret")];
    let (_, _, body) = gw
        .rpc_raw("echo", &send_request("3", "SendMessage", "hi"), &secret)
        .await;
    assert!(body.contains("POLICY_DENIED"), "{body}");

    let all = wait_spans(&got, 5).await;
    assert!(all.iter().all(|g| g.service == "gw-under-test"), "{all:#?}");
    let seen = agent.seen_calls().await;
    assert_eq!(
        seen.len(),
        2,
        "the refusal never reached the agent: {seen:#?}"
    );

    // With the caller's trace: SERVER under the caller's span, CLIENT under the SERVER span,
    // and the agent's traceparent names the CLIENT span.
    let (server, clients) = call_spans(&all, TRACE_ID);
    assert_eq!(hex::encode(&server.parent_span_id), CALLER_SPAN);
    assert_eq!(server.name, "send_message");
    assert_eq!(server.trace_state, "vendor=abc");
    assert_eq!(str_attr(&server, "a2a.method.name"), "send_message");
    assert_eq!(str_attr(&server, "a2a_egress.integration"), "echo");
    assert_eq!(str_attr(&server, "a2a_egress.binding"), "JSONRPC");
    assert_eq!(str_attr(&server, "a2a.protocol.version"), "1.0");
    assert_eq!(str_attr(&server, "a2a_egress.outcome"), "ok");
    assert_eq!(int_attr(&server, "http.response.status_code"), Some(200));
    assert_eq!(str_attr(&server, "a2a.task.id"), task);
    assert_eq!(str_attr(&server, "a2a.context.id"), context);
    assert_eq!(clients.len(), 1, "{clients:#?}");
    let client = &clients[0];
    assert_eq!(client.parent_span_id, server.span_id);
    assert_eq!(str_attr(client, "server.address"), "127.0.0.1");
    assert_eq!(int_attr(client, "a2a_egress.attempt"), Some(1));
    assert_eq!(int_attr(client, "http.response.status_code"), Some(200));
    let client_id = hex::encode(&client.span_id);
    let first = &seen[0].headers;
    assert_eq!(
        first.get("traceparent").map(String::as_str),
        Some(format!("00-{TRACE_ID}-{client_id}-01").as_str()),
        "{first:?}"
    );
    assert_eq!(
        first.get("tracestate").map(String::as_str),
        Some("vendor=abc")
    );
    assert_eq!(
        first.get("baggage").map(String::as_str),
        Some("tenant=blue,tier=gold")
    );

    // Without one: a new trace rooted at the gateway, and the agent still gets its traceparent.
    let second = &seen[1].headers;
    let tp = second
        .get("traceparent")
        .expect("a traceparent is generated");
    let (trace, rest) = tp
        .strip_prefix("00-")
        .and_then(|t| t.split_once('-'))
        .unwrap();
    assert_ne!(trace, TRACE_ID);
    let (server, clients) = call_spans(&all, trace);
    assert!(server.parent_span_id.is_empty(), "a root span: {server:#?}");
    assert_eq!(clients.len(), 1);
    assert_eq!(clients[0].parent_span_id, server.span_id);
    assert_eq!(rest, format!("{}-01", hex::encode(&clients[0].span_id)));
    assert!(!second.contains_key("baggage") && !second.contains_key("tracestate"));

    // The refusal: a SERVER span with its reason, no CLIENT span.
    let denied: Vec<&Span> = all
        .iter()
        .map(|g| &g.span)
        .filter(|s| str_attr(s, "a2a_egress.outcome") == "denied")
        .collect();
    assert_eq!(denied.len(), 1, "{all:#?}");
    assert_eq!(kind(denied[0]), SpanKind::Server);
    assert_eq!(
        str_attr(denied[0], "a2a_egress.deny.reason"),
        "POLICY_DENIED"
    );
    assert_eq!(str_attr(denied[0], "error.type"), "POLICY_DENIED");
    let (_, clients) = call_spans(&all, &hex::encode(&denied[0].trace_id));
    assert!(clients.is_empty(), "{clients:#?}");
}

#[tokio::test]
async fn spans_are_exported_over_otlp_http_too() {
    let (endpoint, got) = http_receiver().await;
    let agent = RefAgent::sample();
    let config = config_head(&[])
        + &telemetry(&endpoint, "http")
        + &integration("echo", &agent.card_url, "")
        + &integration("nostream", &agent.card_url, "streaming = \"off\"");
    let gw = GatewayProc::start(&config, &[FAST_BATCHES]).await;
    let caller = format!("00-{TRACE_ID}-{CALLER_SPAN}-01");
    let stream = send_request("1", "SendStreamingMessage", "hi");
    let (s, _, body) = gw
        .rpc_raw("echo", &stream, &[("traceparent", caller.as_str())])
        .await;
    assert_eq!(s, 200, "{body}");
    // A downgraded stream: its one request to the agent is a SendMessage CLIENT span.
    let (s, _, body) = gw.rpc_raw("nostream", &stream, &[]).await;
    assert_eq!(s, 200, "{body}");
    let all = wait_spans(&got, 4).await;
    let down = all
        .iter()
        .map(|g| &g.span)
        .find(|s| {
            kind(s) == SpanKind::Server && str_attr(s, "a2a_egress.integration") == "nostream"
        })
        .expect("the downgraded call's SERVER span");
    assert_eq!(str_attr(down, "a2a_egress.outcome"), "downgraded");
    assert_eq!(str_attr(down, "a2a_egress.downgrade"), "config_off");
    let (_, clients) = call_spans(&all, &hex::encode(&down.trace_id));
    assert_eq!(clients.len(), 1, "{clients:#?}");
    assert_eq!(clients[0].name, "send_message");
    assert_eq!(
        attr(&clients[0], "a2a_egress.downgraded"),
        Some(&Any::BoolValue(true))
    );
    let (server, clients) = call_spans(&all, TRACE_ID);
    assert_eq!(hex::encode(&server.parent_span_id), CALLER_SPAN);
    assert_eq!(server.name, "send_streaming_message");
    assert_eq!(clients.len(), 1, "{clients:#?}");
    assert_eq!(clients[0].parent_span_id, server.span_id);
    assert_eq!(
        str_attr(&clients[0], "a2a.method.name"),
        "send_streaming_message"
    );
}

#[tokio::test]
async fn an_https_collector_is_reached_over_both_protocols_when_its_ca_is_trusted() {
    let pki = TestPki::new(&["127.0.0.1"]);
    let agent = RefAgent::sample();
    for protocol in ["grpc", "http"] {
        let (endpoint, got) = match protocol {
            "grpc" => grpc_receiver_on(Some(&pki)).await,
            _ => https_receiver(&pki).await,
        };
        let config = config_head(&[])
            + &telemetry(&endpoint, protocol)
            + &format!("ca_file = {:?}\n", pki.ca_path.to_str().unwrap())
            + &integration("echo", &agent.card_url, "");
        let gw = GatewayProc::start(&config, &[FAST_BATCHES]).await;
        let (s, _, body) = gw
            .rpc_raw("echo", &send_request("1", "SendMessage", "hi"), &[])
            .await;
        assert_eq!(s, 200, "{body}");
        let all = wait_spans(&got, 2).await;
        assert!(
            all.iter().any(|g| kind(&g.span) == SpanKind::Server),
            "{protocol}: {all:#?}"
        );
    }

    // Without the CA the collector's certificate is not trusted: nothing arrives, every span
    // is counted as failed to export, and calls go on.
    let (endpoint, got) = https_receiver(&pki).await;
    let config = config_head(&[])
        + &telemetry(&endpoint, "http")
        + &integration("echo", &agent.card_url, "");
    let gw = GatewayProc::start(&config, &[FAST_BATCHES]).await;
    let (s, _, body) = gw
        .rpc_raw("echo", &send_request("2", "SendMessage", "hi"), &[])
        .await;
    assert_eq!(s, 200, "{body}");
    let mut failed: f64;
    crate::assert_eventually!(
        {
            let m = gw.metrics().await;
            failed = crate::common::gateway::metric(
                &m,
                "a2a_egress_telemetry_spans_dropped_total",
                &[("reason", "export_failed")],
            );
            failed >= 2.0
        },
        within = Duration::from_secs(30),
        "spans counted as failed: {failed}"
    );
    assert!(got.spans().is_empty(), "an untrusted collector got spans");
}

/// The task and context ids one JSON-RPC `result` names: a message send's task or message, a
/// stream event's wrapper, or the task itself (GetTask, CancelTask).
fn answer_ids(result: &serde_json::Value) -> (String, String) {
    let inner = ["task", "message", "statusUpdate", "artifactUpdate"]
        .iter()
        .find_map(|k| result.get(*k))
        .unwrap_or(result);
    let task = inner.get("taskId").or_else(|| inner.get("id"));
    let text = |v: Option<&serde_json::Value>| v.and_then(|v| v.as_str()).unwrap_or("").to_owned();
    (text(task), text(inner.get("contextId")))
}

/// The SERVER span of the call whose CLIENT span's id the agent's `traceparent` named.
fn server_span_of_trace<'a>(all: &'a [Got], method: &str) -> Vec<&'a Span> {
    all.iter()
        .map(|g| &g.span)
        .filter(|s| kind(s) == SpanKind::Server && s.name == method)
        .collect()
}

#[tokio::test]
async fn the_server_span_carries_the_task_and_context_ids_the_agent_answered() {
    let (endpoint, got) = grpc_receiver().await;
    let agent = RefAgent::sample();
    let config = config_head(&[])
        + &telemetry(&endpoint, "grpc")
        + &integration("echo", &agent.card_url, "");
    let gw = GatewayProc::start(&config, &[FAST_BATCHES]).await;

    let (s, _, body) = gw
        .rpc_raw("echo", &send_request("1", "SendMessage", "hi"), &[])
        .await;
    assert_eq!(s, 200, "{body}");
    let answer: serde_json::Value = serde_json::from_str(&body).unwrap();
    let (task, context) = answer_ids(&answer["result"]);
    assert!(!task.is_empty() && !context.is_empty(), "{body}");
    let get = json!({"jsonrpc": "2.0", "id": "2", "method": "GetTask", "params": {"id": task}});
    let (s, _, body) = gw.rpc_raw("echo", &get, &[]).await;
    assert_eq!(s, 200, "{body}");
    let read: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answer_ids(&read["result"]), (task.clone(), context.clone()));
    let (s, _, sse) = gw
        .rpc_raw(
            "echo",
            &send_request("3", "SendStreamingMessage", "hi"),
            &[],
        )
        .await;
    assert_eq!(s, 200, "{sse}");
    // The first event that names both ids.
    let streamed = sse
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<serde_json::Value>(d.trim()).ok())
        .map(|v| answer_ids(&v["result"]))
        .find(|(t, c)| !t.is_empty() && !c.is_empty())
        .expect("an event names the stream's task");

    let all = wait_spans(&got, 6).await;
    for (method, want) in [
        ("send_message", (task.clone(), context.clone())),
        ("get_task", (task, context)),
        ("send_streaming_message", streamed),
    ] {
        let servers = server_span_of_trace(&all, method);
        assert_eq!(servers.len(), 1, "{method}: {all:#?}");
        let got = (
            str_attr(servers[0], "a2a.task.id").to_owned(),
            str_attr(servers[0], "a2a.context.id").to_owned(),
        );
        assert_eq!(got, want, "{method}: {:#?}", servers[0]);
    }
    // The ids are the call's: its CLIENT span does not repeat them.
    let (_, clients) = call_spans(
        &all,
        &hex::encode(&server_span_of_trace(&all, "get_task")[0].trace_id),
    );
    assert_eq!(clients.len(), 1);
    assert!(attr(&clients[0], "a2a.task.id").is_none(), "{clients:#?}");
}

#[tokio::test]
async fn without_the_table_otel_variables_alone_send_nothing() {
    let (endpoint, got) = grpc_receiver().await;
    let agent = SdkAgent::start(&[]);
    let config = config_head(&[]) + &integration("echo", &agent.card_url, "");
    let env = [
        FAST_BATCHES,
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
        ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", endpoint.as_str()),
    ];
    let mut gw = GatewayProc::start(&config, &env).await;
    agent.reset().await;
    let (s, _, body) = gw
        .rpc_raw("echo", &send_request("1", "SendMessage", "hi"), &[])
        .await;
    assert_eq!(s, 200, "{body}");
    // A gateway that traced would send its spans by the time it exits (the shutdown flush).
    gw.process.terminate();
    let exit = gw.process.wait_timeout(Duration::from_secs(20));
    assert!(exit.is_some_and(|e| e.success()), "{exit:?}");
    assert!(got.spans().is_empty(), "{:#?}", got.spans());
    let seen = agent.seen_calls().await;
    assert_eq!(seen.len(), 1);
    assert!(
        !seen[0].headers.contains_key("traceparent"),
        "no trace context is made up with tracing off: {:?}",
        seen[0].headers
    );
}

/// A collector that accepts connections and never answers: counts them.
async fn black_hole() -> (SocketAddr, Arc<std::sync::atomic::AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((sock, _)) = listener.accept().await {
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            held.push(sock);
        }
    });
    (addr, accepted)
}

#[tokio::test]
async fn a_collector_that_never_answers_delays_and_fails_no_call() {
    let (addr, accepted) = black_hole().await;
    let agent = RefAgent::sample();
    let config = config_head(&[])
        + &telemetry(&format!("http://{addr}"), "http")
        + &integration("echo", &agent.card_url, "");
    // Exports hang for a minute, and the queue holds 8 spans: most spans are dropped.
    let env = [
        FAST_BATCHES,
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "60000"),
        ("OTEL_BSP_MAX_QUEUE_SIZE", "8"),
        ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "4"),
    ];
    let gw = GatewayProc::start(&config, &env).await;
    let msg = send_request("1", "SendMessage", "hi");
    for n in 0..40 {
        let started = Instant::now();
        let (s, _, body) = gw.rpc_raw("echo", &msg, &[]).await;
        assert_eq!(s, 200, "call {n}: {body}");
        let took = started.elapsed();
        // An export is stuck for 60 s from the first batch on: a call that waited on it would
        // take that long.
        assert!(took < Duration::from_secs(5), "call {n} took {took:?}");
        if n == 0 {
            // The exporter really is stuck on the collector before the rest are sent.
            crate::assert_eventually!(
                accepted.load(std::sync::atomic::Ordering::SeqCst) > 0,
                within = Duration::from_secs(20),
                "the exporter never connected"
            );
        }
    }
    let (s, body) = gw
        .rpc(
            "echo",
            &json!({"jsonrpc": "2.0", "id": "g", "method": "GetTask", "params": {"id": "none"}}),
            &[],
        )
        .await;
    assert_eq!(s, 200, "{body}");
}

/// A `[telemetry]` table, the environment beside it, and what the refusal says.
type Refused = (
    &'static str,
    &'static [(&'static str, &'static str)],
    &'static str,
);

#[tokio::test]
async fn a_bad_telemetry_value_in_the_file_or_the_environment_stops_the_start_with_64() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [Refused; 2] = [
        (
            "[telemetry]\nsampling = 2.0\n",
            &[],
            "telemetry.sampling: 2 is not between 0.0 and 1.0",
        ),
        (
            "[telemetry]\n",
            &[("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")],
            "OTEL_EXPORTER_OTLP_PROTOCOL: \"http/json\" is not a supported OTLP protocol",
        ),
    ];
    for (table, env, says) in cases {
        let path = dir.path().join("gateway.toml");
        std::fs::write(&path, config_head(&[]) + table).unwrap();
        let mut cmd = crate::common::gateway_cmd();
        cmd.args(["serve", "--config"])
            .arg(&path)
            .envs(env.iter().copied())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped());
        let mut serve = cmd.spawn().unwrap();
        // Bounded: with the check gone the gateway would start and serve.
        let status = crate::common::process::wait_exit(&mut serve, Duration::from_secs(30));
        if status.is_none() {
            let _ = serve.kill();
            let _ = serve.wait();
            panic!("the gateway started with {table:?} {env:?}");
        }
        let out = serve.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(status.and_then(|s| s.code()), Some(64), "{err}");
        assert!(err.contains(says), "{err}");
    }
}
