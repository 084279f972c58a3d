//! Criterion bench of the data plane's pure per-request work, and of the state it reads (no I/O):
//!
//! - `request/{1k,10k}`: what the gateway does for one JSON-RPC `SendMessage` between reading
//!   the body and writing the upstream request — path check, routing, Content-Type, the one
//!   borrowing body parse, admission, lock routing, policy (`decide`), trace context and header
//!   shaping — for a
//!   1 KB and a 10 KB body (goal: at most 5 µs at 1 KB); `…_tenant` does the same with the
//!   tenant spliced in; `1k_v03` is the 1 KB call to an A2A 0.3 agent (the request translated
//!   into 0.3 JSON-RPC: issue 20's "at most +15% CPU per request" is read against `1k`);
//! - `translate/answer_1k`: the other half of a 0.3 call, a 1 KB 0.3 `message/send` answer (a
//!   completed Task) translated into the 1.0 `SendMessageResponse`; `request/1k_grpc` and
//!   `translate/grpc_answer_1k` the two halves of a call to a 1.0 gRPC agent (the JSON-RPC
//!   params made the protobuf request, the protobuf answer made the JSON-RPC answer);
//!   `request/1k_cross` and `translate/cross_answer_1k` those of a JSON-RPC caller's call to a
//!   1.0 HTTP+JSON agent (the request moved to the agent's route, the answer into the caller's
//!   JSON-RPC envelope);
//! - `body/…`: the body parse alone (`parse_jsonrpc`, `parse_rest_body`) on the 1 KB and 10 KB
//!   bodies above and on a 64 KB one whose metadata holds many small objects and numbers (what
//!   a parse that visits every value pays for);
//! - `snapshot/{1,100,1000}`: the per-request snapshot load and lookup, and installing one
//!   integration's new state (what a refresh does), at 1, 100 and 1,000 integrations;
//! - `lock/diff`: judging a compiled profile against its lockfile, and two profiles against
//!   each other;
//! - `effective_card_10k_skills`: one GET's card work for an agent of 10,000 accepted skills:
//!   `render` is what every GET did before the card was kept with its state (project, sanitise,
//!   serialise, hash), `served` what a GET does now (the kept card: a pointer copy).
//!
//! The integration state is built the way the control plane builds it: a config parsed from
//! TOML, a card validated and compiled, the upstream prepared for tests (no DNS).
use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;

use a2a_egress::card;
use a2a_egress::config::{Config, Integration};
use a2a_egress::lock;
use a2a_egress::profile::{self, Profile};
use a2a_egress::proxy::body::{parse_jsonrpc, parse_rest_body};
use a2a_egress::proxy::card::{effective_card, served_card};
use a2a_egress::proxy::policy::{self, DataClasses, Facts};
use a2a_egress::proxy::route::{check_path, route};
use a2a_egress::proxy::shape::upstream_headers;
use a2a_egress::proxy::trace::Trace;
use a2a_egress::state::Upstream;
use a2a_egress::state::manifest_of;
use a2a_egress::state::{IntegrationState, Snapshot, Store};
use a2a_egress::translate::{self, Op};
use bytes::Bytes;
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};

// What the binary pays: the gateway runs on mimalloc (`src/main.rs`), and the translations'
// small allocations cost several times as much on glibc malloc (as `benches/compile.rs` found).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use http::{HeaderMap, HeaderValue};
use serde_json::json;

const ORIGIN: &str = "http://127.0.0.1:9";

fn config(n: usize, tenant: bool) -> Config {
    config_at(n, tenant, false)
}

/// `config`, where `v03` makes the client choose the card's A2A 0.3 interface.
fn config_at(n: usize, tenant: bool, v03: bool) -> Config {
    config_with(n, tenant, if v03 { "versions = [\"0.3\"]\n" } else { "" })
}

/// `config` with `client` lines added to `[client]` (which interface of the card is chosen).
fn config_with(n: usize, tenant: bool, client: &str) -> Config {
    config_full(n, tenant, client, "")
}

/// `config_with`, each integration with the `extra` lines.
fn config_full(n: usize, tenant: bool, client: &str, extra: &str) -> Config {
    let mut text = format!(
        "[client]\nallow_plain_http = true\n{client}[listen]\nproxy = \"127.0.0.1:0\"\nadmin = \"127.0.0.1:0\"\n",
    );
    for i in 0..n {
        text.push_str(&format!(
            "[[integrations]]\nname = \"agent{i}\"\ncard = \"{ORIGIN}/.well-known/agent-card.json\"\n\
             origins = [\"{ORIGIN}\"]\nskills = [\"echo\"]\ndata_classes = [\"internal\"]\n\
             credential = {{ type = \"none\" }}\n{extra}"
        ));
        if tenant {
            text.push_str("tenant = \"acme\"\n");
        }
    }
    Config::parse(&text, Path::new("bench.toml")).expect("bench config")
}

fn card_bytes() -> Vec<u8> {
    json!({
        "name": "Bench Agent", "description": "bench", "version": "1.0.0",
        "supportedInterfaces": [{"url": format!("{ORIGIN}/a2a/jsonrpc"),
            "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": format!("{ORIGIN}/a2a/v03"),
            "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
            {"url": ORIGIN, "protocolBinding": "GRPC", "protocolVersion": "1.0"},
            {"url": format!("{ORIGIN}/a2a/rest"),
            "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}],
        "capabilities": {"streaming": true},
        "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "echo", "name": "Echo", "description": "echo", "tags": ["echo"],
            "inputModes": ["text/plain"], "outputModes": ["text/plain"]}]
    })
    .to_string()
    .into_bytes()
}

fn compiled(config: &Config) -> Profile {
    let v = card::validate(&card_bytes(), &config.card_policy, Some(ORIGIN)).expect("bench card");
    profile::compile(&v, &config.caps)
}

fn state(config: &Config, i: &Integration) -> IntegrationState {
    let p = compiled(config);
    let up = Upstream::for_tests(&format!("{ORIGIN}/a2a/jsonrpc"));
    IntegrationState::from_profile(Arc::new(i.clone()), p, Ok(up))
}

/// A `SendMessage` body of about `size` bytes (one text part).
fn send_message(size: usize) -> Bytes {
    let pad = "x".repeat(size.saturating_sub(170));
    Bytes::from(
        json!({"jsonrpc": "2.0", "id": 7, "method": "SendMessage", "params": {"message": {
            "messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": pad}]}}})
        .to_string(),
    )
}

fn caller_headers() -> HeaderMap {
    let mut h = HeaderMap::new();
    for (n, v) in [
        ("host", "127.0.0.1:7411"),
        ("content-type", "application/json"),
        ("accept", "*/*"),
        ("a2a-version", "1.0"),
        ("user-agent", "bench/1"),
        ("content-length", "1024"),
    ] {
        h.insert(n, HeaderValue::from_static(v));
    }
    h
}

/// Everything the gateway decides for one request, from the path and the body bytes to the
/// upstream header list; returns the header count and the bytes that would be sent.
fn per_request(snapshot: &Snapshot, headers: &HeaderMap, body: &Bytes) -> (usize, usize) {
    let path = "/agents/agent0";
    check_path(path).expect("clean path");
    let r = route(path);
    let name = r.name().expect("named route");
    let state = snapshot.get(name).expect("configured");
    let ct = headers.get("content-type").map(|v| v.as_bytes());
    policy::check_content_type(&r, ct, true).expect("json");
    let rpc = parse_jsonrpc(body).expect("valid body");
    policy::check_admission(state).expect("usable");
    let data_class = DataClasses::from_lines(
        headers
            .get_all("a2a-egress-data-class")
            .iter()
            .map(|v| v.as_bytes()),
    );
    let facts = Facts {
        route: &r,
        http_method: "POST",
        query: None,
        data_class: &data_class,
        a2a_version: headers.get("a2a-version").and_then(|v| v.to_str().ok()),
        rpc: Some(&rpc),
        rest_body: None,
        default_data_class: "internal",
        body,
        request_id: "bench",
    };
    let state = policy::lock_route(snapshot, state, policy::method_of(&facts)).expect("route");
    let plan = policy::decide(&state, &facts).expect("allowed");
    let sent = plan.rewritten_body.clone().unwrap_or_else(|| body.clone());
    let (_, up) = state.serving().expect("usable");
    // The request id and trace context are read from the caller's headers as on the data plane.
    let trace = Trace::of(headers);
    let shaped = upstream_headers(headers, &state, up, &plan, sent.len(), &trace);
    (shaped.len(), sent.len())
}

fn snapshot_of(config: &Config) -> Snapshot {
    let mut s = Snapshot::pending(&config.integrations);
    for i in &config.integrations {
        s = s.with(state(config, i));
    }
    s
}

fn bench_request(c: &mut Criterion) {
    let headers = caller_headers();
    let mut g = c.benchmark_group("request");
    for tenant in [false, true] {
        let config = config(1, tenant);
        let snapshot = snapshot_of(&config);
        for (label, size) in [("1k", 1024), ("10k", 10 * 1024)] {
            let body = send_message(size);
            let id = if tenant {
                format!("{label}_tenant")
            } else {
                label.to_owned()
            };
            g.bench_function(id, |b| {
                b.iter(|| per_request(black_box(&snapshot), &headers, black_box(&body)))
            });
        }
    }
    let v03 = snapshot_of(&config_at(1, false, true));
    let body = send_message(1024);
    let (_, sent) = per_request(&v03, &headers, &body);
    assert!(sent > 0, "the 0.3 request is translated");
    g.bench_function("1k_v03", |b| {
        b.iter(|| per_request(black_box(&v03), &headers, black_box(&body)))
    });
    let grpc = snapshot_of(&config_with(1, false, "bindings = [\"GRPC\"]\n"));
    let (_, sent) = per_request(&grpc, &headers, &body);
    assert!(sent > 0, "the gRPC request is made");
    g.bench_function("1k_grpc", |b| {
        b.iter(|| per_request(black_box(&grpc), &headers, black_box(&body)))
    });
    let cross = config_full(
        1,
        false,
        "bindings = [\"HTTP+JSON\"]\n",
        "offer = [\"JSONRPC\"]\n",
    );
    let cross = snapshot_of(&cross);
    let (_, sent) = per_request(&cross, &headers, &body);
    assert!(sent > 0, "the JSON-RPC request is moved to HTTP+JSON");
    g.bench_function("1k_cross", |b| {
        b.iter(|| per_request(black_box(&cross), &headers, black_box(&body)))
    });
    g.finish();
    let mut g = c.benchmark_group("translate");
    let answer = v03_answer(1024);
    assert!(translate::answer_to10(Op::SendMessage, &answer).is_ok());
    g.bench_function("answer_1k", |b| {
        b.iter(|| translate::answer_to10(Op::SendMessage, black_box(&answer)))
    });
    let answer = grpc_answer(1024);
    assert!(translate::grpc::answer_to_rpc(Op::SendMessage, "7", &answer).is_ok());
    g.bench_function("grpc_answer_1k", |b| {
        b.iter(|| translate::grpc::answer_to_rpc(Op::SendMessage, "7", black_box(&answer)))
    });
    let answer = rest_answer(1024);
    let moved = translate::binding::rest_answer_to_rpc(Op::SendMessage, "7", 200, &answer);
    assert!(matches!(moved, Ok(Some(_))));
    g.bench_function("cross_answer_1k", |b| {
        b.iter(|| {
            translate::binding::rest_answer_to_rpc(Op::SendMessage, "7", 200, black_box(&answer))
        })
    });
    g.finish();
    // The bound computed before a tree of an answer is built (artifact schema, 0.3 translation,
    // probes), beside the parse into a `Value` it guards, on 1 MiB answers: mostly text, and
    // small objects with numbers (the shape whose tree costs most).
    let mut g = c.benchmark_group("answer_tree");
    let data = {
        let item = r#"{"k":"abc","n":12345,"f":0.5}"#;
        let items = vec![item; (1 << 20) / (item.len() + 1)].join(",");
        format!(
            r#"{{"jsonrpc":"2.0","id":7,"result":{{"task":{{"id":"t","artifacts":[{{"artifactId":"a","parts":[{{"data":{{"items":[{items}]}}}}]}}]}}}}}}"#
        )
    };
    let text = String::from_utf8(v03_answer(1 << 20)).unwrap();
    for (label, answer) in [("text_1m", &text), ("data_1m", &data)] {
        assert!(a2a_egress::json::check_tree(answer.as_bytes()).is_ok());
        g.bench_function(format!("tree_bound_{label}"), |b| {
            b.iter(|| a2a_egress::json::tree_bound(black_box(answer)))
        });
        g.bench_function(format!("parse_value_{label}"), |b| {
            b.iter(|| serde_json::from_str::<serde_json::Value>(black_box(answer)))
        });
    }
    g.finish();
}

/// A 0.3 `message/send` answer of about `size` bytes: a completed Task with one text artifact,
/// as a2a-sdk 0.3.26 writes it.
fn v03_answer(size: usize) -> Vec<u8> {
    let pad = "x".repeat(size.saturating_sub(330));
    json!({"id": 7, "jsonrpc": "2.0", "result": {"kind": "task", "id": "t-1", "contextId": "c-1",
        "status": {"state": "completed", "timestamp": "2026-12-02T14:12:26.833925+00:00"},
        "artifacts": [{"artifactId": "a-1", "name": "echo", "parts": [{"kind": "text", "text": pad}]}],
        "history": [{"kind": "message", "messageId": "m-1", "role": "user", "contextId": "c-1",
            "taskId": "t-1", "parts": [{"kind": "text", "text": "hi"}]}]}})
    .to_string()
    .into_bytes()
}

/// An HTTP+JSON `SendMessage` answer of about `size` bytes: the same completed Task as
/// [`v03_answer`], as a 1.0 HTTP+JSON agent sends it.
fn rest_answer(size: usize) -> Vec<u8> {
    let pad = "x".repeat(size.saturating_sub(300));
    json!({"task": {"id": "t-1", "contextId": "c-1",
        "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-12-02T14:12:26.833925Z"},
        "artifacts": [{"artifactId": "a-1", "name": "echo", "parts": [{"text": pad}]}],
        "history": [{"messageId": "m-1", "role": "ROLE_USER", "contextId": "c-1",
            "taskId": "t-1", "parts": [{"text": "hi"}]}]}})
    .to_string()
    .into_bytes()
}

/// A gRPC `SendMessage` answer of about `size` bytes: the same completed Task as [`v03_answer`],
/// as the protobuf `SendMessageResponse` a 1.0 gRPC agent sends.
fn grpc_answer(size: usize) -> Vec<u8> {
    use a2a_egress::testkit::pb;
    use prost::Message;
    let task = pb::completed_task(Some(&"x".repeat(size.saturating_sub(120))));
    pb::send_response(task).encode_to_vec()
}

/// A `SendMessage` of about 64 KB whose metadata holds many small objects with numbers.
fn metadata_heavy() -> Bytes {
    let item = r#"{"k":"abc","n":12345,"f":0.5,"e":"\u00e9"}"#;
    let items = vec![item; 64 * 1024 / (item.len() + 1)].join(",");
    Bytes::from(format!(
        r#"{{"jsonrpc":"2.0","id":"m","method":"SendMessage","params":{{"message":{{"messageId":"m","role":"ROLE_USER","parts":[{{"text":"hi"}}],"metadata":{{"items":[{items}]}}}}}}}}"#
    ))
}

fn bench_body(c: &mut Criterion) {
    let mut g = c.benchmark_group("body");
    let bodies = [
        ("1k", send_message(1024)),
        ("10k", send_message(10 * 1024)),
        ("64k_objects", metadata_heavy()),
    ];
    for (label, body) in &bodies {
        assert!(parse_jsonrpc(body).is_ok());
        g.bench_function(format!("jsonrpc_{label}"), |b| {
            b.iter(|| parse_jsonrpc(black_box(body)))
        });
    }
    let rest = Bytes::from(
        json!({"tenant": "t", "message": {"messageId": "m-1", "role": "ROLE_USER",
            "parts": [{"text": "x".repeat(900)}, {"data": {"a": [1, 2.5, null]}}]}})
        .to_string(),
    );
    g.bench_function("rest_1k", |b| {
        b.iter(|| parse_rest_body(black_box(&rest), true))
    });
    g.finish();
}

fn bench_snapshot(c: &mut Criterion) {
    let mut g = c.benchmark_group("snapshot");
    for n in [1, 100, 1000] {
        let config = config(n, false);
        let store = Store::new(snapshot_of(&config));
        let last = format!("agent{}", n - 1);
        g.bench_with_input(BenchmarkId::new("load_get", n), &n, |b, _| {
            b.iter(|| store.load().get(black_box(&last)).is_some())
        });
        let next = state(&config, &config.integrations[n - 1]);
        let current = store.load();
        g.bench_with_input(BenchmarkId::new("install_one", n), &n, |b, _| {
            b.iter(|| current.with(black_box(next.clone())))
        });
    }
    g.finish();
}

fn bench_lock(c: &mut Criterion) {
    let config = config(1, false);
    let s = state(&config, &config.integrations[0]);
    let p = s.serving().expect("usable").0.clone();
    let manifest = manifest_of(&config.integrations[0]);
    let lock = lock::derive::pin(&manifest, &p, chrono::Utc::now(), Default::default())
        .expect("pin a lock")
        .lock;
    let mut g = c.benchmark_group("lock");
    g.bench_function("check_against_lock", |b| {
        b.iter(|| lock::diff::check_against_lock(black_box(&p), black_box(&lock)))
    });
    g.bench_function("diff_profiles", |b| {
        b.iter(|| lock::diff::diff_profiles(black_box(&p), black_box(&p), Some(&lock)))
    });
    g.finish();
}

/// A usable state of one integration accepting all `n` skills of its agent's card.
fn many_skills_state(n: usize) -> IntegrationState {
    let ids: Vec<String> = (0..n).map(|i| format!("s{i}")).collect();
    let text = format!(
        "[client]\nallow_plain_http = true\nmax_card_bytes = 8388608\n[listen]\nproxy = \"127.0.0.1:0\"\n\
         admin = \"127.0.0.1:0\"\n[[integrations]]\nname = \"bulk\"\n\
         card = \"{ORIGIN}/.well-known/agent-card.json\"\norigins = [\"{ORIGIN}\"]\nskills = {}\n\
         data_classes = [\"internal\"]\ncredential = {{ type = \"none\" }}\n",
        serde_json::to_string(&ids).unwrap()
    );
    let config = Config::parse(&text, Path::new("bench.toml")).expect("bench config");
    let skills: Vec<_> = (0..n)
        .map(|i| {
            json!({"id": format!("s{i}"), "name": format!("Skill {i}"),
                "description": format!("Does task {i} with inputs of several kinds."),
                "tags": ["bulk", format!("group-{}", i % 7)], "examples": [format!("Run task {i}")],
                "inputModes": ["text/plain"]})
        })
        .collect();
    let card = json!({
        "name": "Bulk agent", "description": "An agent with very many skills.", "version": "1.0.0",
        "supportedInterfaces": [{"url": format!("{ORIGIN}/a2a/jsonrpc"),
            "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "capabilities": {"streaming": false},
        "defaultInputModes": ["text/plain"], "defaultOutputModes": ["application/json"],
        "skills": skills,
    });
    let v = card::validate(
        card.to_string().as_bytes(),
        &config.card_policy,
        Some(ORIGIN),
    )
    .expect("bench card");
    let p = profile::compile(&v, &config.caps);
    let up = Upstream::for_tests(&format!("{ORIGIN}/a2a/jsonrpc"));
    IntegrationState::from_profile(Arc::new(config.integrations[0].clone()), p, Ok(up))
}

fn bench_card(c: &mut Criterion) {
    let s = many_skills_state(10_000);
    let url = "http://127.0.0.1:7411";
    let kept = served_card(&s, url, None).expect("a card");
    assert_eq!(Some(&kept), effective_card(&s, url).as_ref());
    let mut g = c.benchmark_group("effective_card_10k_skills");
    g.sample_size(10);
    g.bench_function("render", |b| b.iter(|| effective_card(black_box(&s), url)));
    g.bench_function("served", |b| {
        b.iter(|| served_card(black_box(&s), url, None))
    });
    g.finish();
}

criterion_group!(
    benches,
    bench_request,
    bench_body,
    bench_snapshot,
    bench_lock,
    bench_card
);
criterion_main!(benches);
