//! What an SRE reads, checked on a running gateway in front of the reference agent (and the
//! official SDK agent where the agent's view of a request matters):
//! - `/metrics` exports exactly the metric families the README's table documents, once traffic
//!   of every kind (calls, a refusal, a downgrade, a failing integration, an admin refusal) ran;
//! - after hostile traffic (unknown and multibyte integration names, path tricks, hostile
//!   JSON-RPC methods, random and hostile headers) every label value is an integration name from
//!   the config or a member of a known enum set, and no marker of the hostile input appears;
//! - the access log writes one structured line per call (request id, integration, method,
//!   outcome, downgrade, statuses, durations), the caller's valid `X-Request-Id` or `traceparent`
//!   reaches the agent and names the line, an invalid one is replaced, and neither the bearer
//!   credential nor a message body appears in the output at the default level.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::common::gateway::{GatewayProc, InProcess, config_head, integration, send_request};
use crate::common::{RefAgent, SdkAgent};

/// An integration whose card cannot be fetched (nothing listens on port 9 of loopback).
const DOWN: &str = "\n[[integrations]]\nname = \"down\"\ncard = \"http://127.0.0.1:9/card.json\"\n\
                    origins = [\"http://127.0.0.1:9\"]\nskills = [\"echo\"]\ndata_classes = [\"internal\"]\n";

/// The integrations the metric tests configure.
const NAMES: [&str; 3] = ["echo", "nostream", "down"];

/// A gateway in front of the reference agent with a normal integration, one with streaming
/// off (its streams are downgraded), an artifact schema that admits anything and a content guard
/// that records card numbers both ways, and one whose card never loads.
async fn gateway(agent: &RefAgent) -> InProcess {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("any.json"), "{}").unwrap();
    let config = config_head(&[])
        + "[guard]\ninbound = \"record\"\n"
        + &integration("echo", &agent.card_url, "")
        + &integration(
            "nostream",
            &agent.card_url,
            "streaming = \"off\"\nartifact_schema = \"any.json\"\n\
             guard = { detectors = [\"pci\"], action = \"record\" }",
        )
        + DOWN;
    InProcess::start_in(dir, &config).await
}

/// Traffic of every kind the metrics describe: a unary send (held whole), a GetTask (passed on), a
/// downgraded stream, a policy refusal, a card, two forced refreshes in a row (the second is
/// rate-limited).
async fn ordinary_traffic(gw: &InProcess) {
    let (s, body) = gw
        .rpc("echo", &send_request("1", "SendMessage", "echo hi"), &[])
        .await;
    assert_eq!(s, 200, "{body}");
    let get = json!({"jsonrpc": "2.0", "id": "2", "method": "GetTask", "params": {"id": "nope"}});
    gw.rpc("echo", &get, &[]).await;
    let (s, _, sse) = gw
        .rpc_raw(
            "nostream",
            &send_request("3", "SendStreamingMessage", "echo hi"),
            &[],
        )
        .await;
    assert_eq!(s, 200, "{sse}");
    let (s, body) = gw
        .rpc(
            "echo",
            &send_request("4", "SendMessage", "hi"),
            &[("A2A-Egress-Data-Class", "secret")],
        )
        .await;
    assert!(
        s == 200 && body.to_string().contains("POLICY_DENIED"),
        "{body}"
    );
    let card = gw.url("/agents/echo/.well-known/agent-card.json");
    crate::common::http().get(card).send().await.unwrap();
    for _ in 0..2 {
        crate::common::http()
            .post(gw.admin_url("/v1/integrations/echo/refresh"))
            .send()
            .await
            .unwrap();
    }
}

/// The metric families in an exposition text (its `# TYPE` lines).
pub fn families(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

/// The family names a live gateway exports once [`ordinary_traffic`] ran.
pub async fn exported_families() -> BTreeSet<String> {
    families(&live_scrape().await)
}

/// A live gateway's `/metrics` once [`ordinary_traffic`] ran.
pub async fn live_scrape() -> String {
    let agent = RefAgent::sample();
    let gw = gateway(&agent).await;
    ordinary_traffic(&gw).await;
    let text = gw.metrics().await;
    let f = families(&text);
    for want in [
        "a2a_egress_downgrades_total",
        "a2a_egress_gateway_overhead_seconds",
    ] {
        assert!(f.contains(want), "{want} after the traffic:\n{text}");
    }
    text
}

#[tokio::test]
async fn overhead_is_observed_once_per_call_that_went_upstream() {
    let agent = RefAgent::sample();
    let gw = gateway(&agent).await;
    ordinary_traffic(&gw).await;
    let text = gw.metrics().await;
    let count = |name: &str| {
        crate::common::gateway::metric(
            &text,
            "a2a_egress_gateway_overhead_seconds_count",
            &[("integration", name)],
        )
    };
    // echo: SendMessage and GetTask; the refusal and the card never left.
    // nostream: the downgraded stream.
    assert_eq!((count("echo"), count("nostream")), (2.0, 1.0), "{text}");
    let upstream = |name: &str| {
        crate::common::gateway::metric(
            &text,
            "a2a_egress_upstream_duration_seconds_count",
            &[("integration", name)],
        )
    };
    assert_eq!(
        (upstream("echo"), upstream("nostream")),
        (2.0, 1.0),
        "{text}"
    );
}

/// The metric names in the first column of the README's metrics table.
fn readme_metrics() -> BTreeSet<String> {
    let readme = std::fs::read_to_string(crate::common::repo_root().join("README.md")).unwrap();
    let section = readme
        .split("\n## Metrics\n")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("README has a Metrics section");
    section
        .lines()
        .filter_map(|l| l.strip_prefix("| `a2a_egress_"))
        .filter_map(|l| l.split('`').next())
        .map(|n| format!("a2a_egress_{n}"))
        .collect()
}

#[tokio::test]
async fn readme_metrics_table_names_exactly_the_exported_families() {
    let documented = readme_metrics();
    let mut exported = exported_families().await;
    // The standard `process_*` families are the prometheus crate's, named in one README line.
    let process: Vec<_> = exported
        .extract_if(.., |f| f.starts_with("process_"))
        .collect();
    assert!(!process.is_empty(), "no process_* families: {exported:?}");
    let undocumented: Vec<_> = exported.difference(&documented).collect();
    let absent: Vec<_> = documented.difference(&exported).collect();
    assert!(
        undocumented.is_empty() && absent.is_empty(),
        "exported but not in the README: {undocumented:?}\nin the README but not exported: {absent:?}"
    );
}

/// Whether `text` has the series `name{labels…}` (all of `labels`, maybe more) at exactly 0.
fn at_zero(text: &str, name: &str, labels: &[(&str, &str)]) -> bool {
    text.lines().any(|l| {
        l.strip_prefix(name)
            .is_some_and(|rest| rest.starts_with('{'))
            && labels
                .iter()
                .all(|(k, v)| l.contains(&format!("{k}=\"{v}\"")))
            && l.ends_with(" 0")
    })
}

/// The counters alerts read with `rate()`/`increase()` exist at 0 before any traffic — for
/// every integration where they are per integration — because `increase()` over a series born
/// at 1 misses the first event; and the standard `process_*` families are exported.
#[tokio::test]
async fn alerting_counters_exist_at_zero_before_traffic_and_process_metrics_are_exported() {
    use a2a_egress::metrics::{DOWNGRADE_CAUSES, DOWNSTREAM_TIMEOUT_PHASES, OVERLOAD_LIMITS};
    let agent = RefAgent::sample();
    let gw = gateway(&agent).await;
    let text = gw.metrics().await;
    let mut missing = Vec::new();
    let mut want = |name: &str, labels: &[(&str, &str)]| {
        if !at_zero(&text, name, labels) {
            missing.push(format!("{name}{labels:?}"));
        }
    };
    // `down` has failed its fetch by now; the others have not failed at all.
    for name in ["echo", "nostream"] {
        let i = ("integration", name);
        for cause in DOWNGRADE_CAUSES {
            want("a2a_egress_downgrades_total", &[i, ("cause", cause)]);
        }
        for kind in a2a_egress::control::metrics::failure_kinds() {
            want("a2a_egress_refresh_failures_total", &[i, ("kind", kind)]);
        }
        want("a2a_egress_refresh_total", &[i, ("result", "failed")]);
        want("a2a_egress_worker_panics_total", &[i]);
        want(
            "a2a_egress_upstream_timeouts_total",
            &[i, ("phase", "header")],
        );
        want("a2a_egress_stale_marks_total", &[i]);
        want("a2a_egress_invalid_agent_answers_total", &[i]);
        want("a2a_egress_probe_results_total", &[i, ("result", "failed")]);
    }
    want(
        "a2a_egress_refresh_failures_total",
        &[("integration", "down"), ("kind", "invalid_card")],
    );
    for limit in OVERLOAD_LIMITS {
        want("a2a_egress_overload_refusals_total", &[("limit", limit)]);
    }
    for phase in DOWNSTREAM_TIMEOUT_PHASES {
        want("a2a_egress_downstream_timeouts_total", &[("phase", phase)]);
    }
    for reason in ["UNAUTHENTICATED", "REFRESH_RATE_LIMITED"] {
        want("a2a_egress_admin_refusals_total", &[("reason", reason)]);
    }
    assert!(
        missing.is_empty(),
        "not at 0 before traffic: {missing:#?}\n{text}"
    );
    let f = families(&text);
    for p in [
        "process_cpu_seconds_total",
        "process_resident_memory_bytes",
        "process_open_fds",
        "process_max_fds",
        "process_start_time_seconds",
    ] {
        assert!(f.contains(p), "{p} is not exported:\n{text}");
    }
}

/// Every series of an exposition text: name and labels (values unescaped).
fn series(text: &str) -> Vec<(String, BTreeMap<String, String>)> {
    let mut out = Vec::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let Some(open) = line.find('{') else {
            out.push((line.split(' ').next().unwrap().to_owned(), BTreeMap::new()));
            continue;
        };
        let name = line[..open].to_owned();
        let mut labels = BTreeMap::new();
        let mut chars = line[open + 1..].chars();
        loop {
            let key: String = chars.by_ref().take_while(|c| *c != '=').collect();
            assert_eq!(chars.next(), Some('"'), "{line}");
            let mut value = String::new();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => match chars.next() {
                        Some('n') => value.push('\n'),
                        Some(other) => value.push(other),
                        None => panic!("{line}"),
                    },
                    '"' => break,
                    c => value.push(c),
                }
            }
            labels.insert(key.trim_start_matches(',').to_owned(), value);
            match chars.next() {
                Some(',') => continue,
                Some('}') => break,
                other => panic!("unexpected {other:?} in {line}"),
            }
        }
        out.push((name, labels));
    }
    out
}

/// The values each non-integration label may take: the gateway's enum sets.
fn known_values() -> BTreeMap<&'static str, BTreeSet<String>> {
    use a2a_egress::control::reload::ReloadResult;
    use a2a_egress::control::schedule::RefreshResult;
    use a2a_egress::state::{LockVerdict, StaleCause};
    let set = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
    let mut m = BTreeMap::new();
    m.insert(
        "method",
        set(&[
            "SendMessage",
            "SendStreamingMessage",
            "GetTask",
            "ListTasks",
            "CancelTask",
            "SubscribeToTask",
            "CreateTaskPushNotificationConfig",
            "GetTaskPushNotificationConfig",
            "ListTaskPushNotificationConfigs",
            "DeleteTaskPushNotificationConfig",
            "GetExtendedAgentCard",
            "agent-card",
            "unknown",
        ]),
    );
    m.insert(
        "outcome",
        set(&[
            "ok",
            "agent_error",
            "denied",
            "downgraded",
            "upstream_failed",
        ]),
    );
    // The content guard: its detectors are the built-ins (the test config declares no custom
    // one) and the two pseudo-detectors; its actions the three of `guard::Action`.
    m.insert(
        "detector",
        (a2a_egress::guard::BUILTIN_NAMES.iter())
            .chain(&[a2a_egress::guard::UNSCANNED, a2a_egress::guard::URL_ORIGIN])
            .map(|s| s.to_string())
            .collect(),
    );
    m.insert("action", set(&["refuse", "redact", "record"]));
    // Deny reasons (proxy::deny) and the admin listener's.
    m.insert(
        "reason",
        set(&[
            "ROUTE_NOT_FOUND",
            "UNKNOWN_INTEGRATION",
            "NO_USABLE_PROFILE",
            "INTEGRATION_BLOCKED",
            "BINDING_NOT_OFFERED",
            "METHOD_NOT_FOUND",
            "METHOD_NOT_ALLOWED",
            "STREAMING_REQUIRED",
            "BODY_TOO_LARGE",
            "INVALID_PATH",
            "UNSUPPORTED_REQUEST_CONTENT_TYPE",
            "PARSE_ERROR",
            "DUPLICATE_JSON_KEY",
            "INVALID_REQUEST",
            "INVALID_PARAMS",
            "CONTENT_TYPE_NOT_SUPPORTED",
            "INVALID_DATA_CLASS",
            "POLICY_DENIED",
            "DATA_DETECTED",
            "TENANT_MISMATCH",
            "VERSION_NOT_SUPPORTED",
            "UPSTREAM_UNAVAILABLE",
            "UPSTREAM_CERTIFICATE_UNKNOWN",
            "UPSTREAM_CERTIFICATE_NAME_MISMATCH",
            "UPSTREAM_CERTIFICATE_EXPIRED",
            "UPSTREAM_TLS_FAILED",
            "GATEWAY_DRAINING",
            "GATEWAY_BUSY",
            "REQUEST_TIMEOUT",
            "ARTIFACT_SCHEMA_MISMATCH",
            "INVALID_AGENT_RESPONSE",
            "UNAUTHENTICATED",
            "REFRESH_RATE_LIMITED",
        ])
        // And what was wrong with an answer that was not A2A (invalid_agent_answers_total).
        .into_iter()
        .chain(set(&a2a_egress::metrics::INVALID_ANSWER_REASONS))
        // And why a trace span never reached the collector (telemetry_spans_dropped_total).
        .chain(set(&a2a_egress::metrics::SPANS_DROPPED_REASONS))
        .collect(),
    );
    m.insert(
        "cause",
        set(&["declared_off", "config_off", "override", "refused"]),
    );
    m.insert(
        "error",
        StaleCause::ALL
            .iter()
            .map(|c| c.as_str().to_owned())
            .collect(),
    );
    m.insert("status", set(&a2a_egress::metrics::STATUSES));
    m.insert(
        "verdict",
        LockVerdict::ALL
            .iter()
            .map(|v| v.as_str().to_owned())
            .collect(),
    );
    m.insert("check", set(&a2a_egress::metrics::PROBE_CHECKS));
    m.insert(
        "trigger",
        a2a_egress::state::ProbeTrigger::ALL
            .iter()
            .map(|t| t.as_str().to_owned())
            .collect(),
    );
    let mut results: BTreeSet<String> = set(&a2a_egress::metrics::PROBE_RESULTS);
    results.extend(RefreshResult::ALL.iter().map(|r| r.as_str().to_owned()));
    results.extend(ReloadResult::ALL.iter().map(|r| r.as_str().to_owned()));
    results.extend(a2a_egress::metrics::CARD_SIGNATURE_RESULTS.map(str::to_owned));
    m.insert("result", results);
    m.insert(
        "kind",
        (a2a_egress::control::metrics::failure_kinds())
            .map(str::to_owned)
            .collect(),
    );
    m.insert("limit", set(&a2a_egress::metrics::OVERLOAD_LIMITS));
    m.insert(
        "phase",
        set(&a2a_egress::metrics::DOWNSTREAM_TIMEOUT_PHASES),
    );
    m.insert("version", set(&[env!("CARGO_PKG_VERSION")]));
    m.insert("protocol", set(&["1.0"]));
    m.insert("binding", set(&["JSONRPC", "HTTP+JSON", "GRPC"]));
    m
}

/// Markers carried by every piece of hostile input below.
const MARKERS: &[&str] = &["zq", "ü", "\u{202e}", "evil", "<", "%", "/"];

/// Sends raw bytes to the data plane and reads what comes back (the request closes the
/// connection), so paths reach the gateway exactly as written, multibyte and control bytes included.
async fn raw(gw: &InProcess, request: &[u8]) {
    let mut s = tokio::net::TcpStream::connect(gw.proxy).await.unwrap();
    s.write_all(request).await.unwrap();
    let mut sink = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut sink)).await;
}

fn raw_post(path: &[u8], headers: &[u8], body: &str) -> Vec<u8> {
    let mut r = b"POST ".to_vec();
    r.extend_from_slice(path);
    r.extend_from_slice(
        b" HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-type: application/json\r\n",
    );
    r.extend_from_slice(headers);
    r.extend_from_slice(format!("content-length: {}\r\n\r\n{body}", body.len()).as_bytes());
    r
}

/// Hostile traffic: unknown, multibyte and bidi integration names, path tricks, hostile JSON-RPC
/// methods and params, hostile headers.
async fn hostile_traffic(gw: &InProcess) {
    let ok = send_request("h", "SendMessage", "echo zq").to_string();
    let paths: &[&[u8]] = &[
        b"/agents/zq-unknown-evil/",
        "/agents/zq-\u{fc}n\u{ef}c\u{f6}d\u{e9}/".as_bytes(),
        "/agents/zq\u{202e}live/".as_bytes(),
        b"/agents/echo/../zq-evil/",
        b"/agents/echo/%2e%2e/zq",
        b"/agents/%65cho/",
        b"/agents/echo/tasks/zq-evil<script>",
        b"/agents/echo/message:zq-evil",
        b"/zq-evil/agents/echo/",
        b"/agents/echo\x7fzq/",
        b"/agents/ech\xc3o/",
    ];
    for p in paths {
        raw(gw, &raw_post(p, b"", &ok)).await;
    }
    let headers: &[&[u8]] = &[
        b"a2a-egress-data-class: zq-evil\r\n",
        "a2a-egress-data-class: zq-\u{fc}\r\n".as_bytes(),
        b"a2a-version: 9.9-zq\r\n",
        b"x-request-id: zq-evil id\r\n",
        b"traceparent: zq-evil\r\n",
        b"x-zq-random: evil\r\nx-evil-zq: 1\r\n",
        b"a2a-extensions: urn:zq:evil\r\n",
    ];
    for h in headers {
        raw(gw, &raw_post(b"/agents/echo/", h, &ok)).await;
    }
    for method in [
        "zq-evil",
        "SendMessage\u{202e}zq",
        "sEnDmEsSaGe",
        "<zq>",
        "tasks/zq/evil",
    ] {
        let body = json!({"jsonrpc": "2.0", "id": "zq", "method": method, "params": {}});
        gw.rpc_raw("echo", &body, &[]).await;
    }
    let hostile_params = json!({"jsonrpc": "2.0", "id": "zq\u{fc}", "method": "SendMessage",
        "params": {"message": {"messageId": "zq", "role": "ROLE_USER",
        "parts": [{"text": "zq \u{fc}\u{202e}", "mediaType": "zq/evil"}]}}});
    gw.rpc_raw("echo", &hostile_params, &[]).await;
    raw(
        gw,
        &raw_post(
            b"/agents/echo/",
            b"",
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"method\":\"zq\"}",
        ),
    )
    .await;
    raw(
        gw,
        &raw_post(b"/agents/zq-evil/.well-known/agent-card.json", b"", ""),
    )
    .await;
}

#[tokio::test]
async fn hostile_traffic_never_becomes_a_metric_label() {
    let agent = RefAgent::sample();
    let gw = gateway(&agent).await;
    ordinary_traffic(&gw).await;
    hostile_traffic(&gw).await;
    let text = gw.metrics().await;
    let known = known_values();
    let names: BTreeSet<&str> = NAMES.iter().copied().chain([""]).collect();
    let all = series(&text);
    assert!(all.len() > 50, "{text}");
    for (metric, labels) in &all {
        for (k, v) in labels {
            let fine = match k.as_str() {
                "integration" => names.contains(v.as_str()),
                "le" => v == "+Inf" || v.parse::<f64>().is_ok(),
                other => known.get(other).is_some_and(|set| set.contains(v)),
            };
            assert!(
                fine,
                "{metric}: label {k}={v:?} is not from the config or an enum set"
            );
            if !matches!(k.as_str(), "le" | "version") {
                for m in MARKERS {
                    assert!(
                        !v.contains(m),
                        "{metric}: label {k}={v:?} carries request data"
                    );
                }
            }
        }
    }
    // The hostile calls were counted, under bounded labels.
    let denied = crate::common::gateway::metric(&text, "a2a_egress_policy_denials_total", &[]);
    assert!(denied >= 15.0, "{denied}\n{text}");
}

/// An integration removed from the config leaves no series behind: its status gauge would
/// otherwise say `blocked` (or `usable`) forever, and an alert on it never clear.
#[tokio::test]
async fn a_removed_integration_leaves_no_metric_series() {
    let agent = RefAgent::sample();
    let gw = gateway(&agent).await;
    ordinary_traffic(&gw).await;
    let before = gw.metrics().await;
    assert!(before.contains("integration=\"nostream\""), "{before}");
    let config = config_head(&[]) + &integration("echo", &agent.card_url, "") + DOWN;
    std::fs::write(gw.config_path(), config).unwrap();
    let mut text: String;
    crate::assert_eventually!(
        {
            text = gw.metrics().await;
            crate::common::gateway::metric(
                &text,
                "a2a_egress_config_reloads_total",
                &[("result", "ok")],
            ) >= 1.0
        },
        within = Duration::from_secs(10),
        "the reload"
    );
    let left: Vec<&str> = (text.lines())
        .filter(|l| l.contains("integration=\"nostream\""))
        .collect();
    assert!(
        left.is_empty(),
        "series of a removed integration: {left:#?}"
    );
    assert!(text.contains("a2a_egress_integration_status{integration=\"echo\""));
}

/// Access lines (JSON) the gateway wrote to stderr.
fn access_lines(gw: &GatewayProc) -> Vec<Value> {
    let (lines, dropped) = gw.process.stderr_all();
    assert_eq!(dropped, 0);
    lines
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["target"] == "a2a_egress::access")
        .collect()
}

const SECRET: &str = "sre-bearer-secret-5f0c2a91d7";
const MARKER: &str = "body-marker-3c9e71b0";
const TRACEPARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

#[tokio::test]
async fn access_log_one_json_line_per_call_with_propagated_ids_and_no_secrets_or_bodies() {
    let agent = SdkAgent::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("echo.token");
    std::fs::write(&token, SECRET).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
    let config = config_head(&[])
        + "[log]\nformat = \"json\"\n"
        + &integration(
            "echo",
            &agent.card_url,
            "credential = { type = \"bearer\", file = \"echo.token\" }",
        );
    // The default level: no RUST_LOG from the harness or the test's environment.
    let gw = GatewayProc::start_in(dir, &config, &[("RUST_LOG", "")]).await;
    agent.reset().await;
    let msg = send_request("1", "SendMessage", &format!("echo {MARKER}"));
    let (s, _, body) = gw
        .rpc_raw("echo", &msg, &[("X-Request-Id", "caller-req-1")])
        .await;
    assert_eq!(s, 200, "{body}");
    let get = json!({"jsonrpc": "2.0", "id": "2", "method": "GetTask", "params": {"id": MARKER}});
    gw.rpc_raw("echo", &get, &[("traceparent", TRACEPARENT)])
        .await;
    let stream = send_request("3", "SendStreamingMessage", &format!("stream {MARKER}"));
    gw.rpc_raw("echo", &stream, &[("X-Request-Id", "bad id with spaces")])
        .await;
    let denied = send_request("4", "SendMessage", MARKER);
    gw.rpc_raw("echo", &denied, &[("A2A-Egress-Data-Class", "secret")])
        .await;

    let mut lines: Vec<Value>;
    crate::assert_eventually!(
        {
            lines = access_lines(&gw);
            lines.len() >= 4
        },
        within = Duration::from_secs(10),
        "four access lines: {lines:#?}"
    );
    assert_eq!(lines.len(), 4, "one line per call: {lines:#?}");
    for l in &lines {
        for f in [
            "request_id",
            "integration",
            "method",
            "outcome",
            "downgrade",
            "status",
            "upstream_status",
            "total_us",
            "upstream_us",
        ] {
            assert!(!l[f].is_null(), "{f} missing: {l}");
        }
        assert_eq!(l["level"], "INFO", "{l}");
        assert!(l["upstream_us"].as_u64() <= l["total_us"].as_u64(), "{l}");
    }
    let by_method = |m: &str, outcome: &str| {
        lines
            .iter()
            .find(|l| l["method"] == m && l["outcome"] == outcome)
            .unwrap_or_else(|| panic!("no {m} {outcome} line: {lines:#?}"))
    };
    let send = by_method("SendMessage", "ok");
    assert_eq!(send["request_id"], "caller-req-1");
    assert_eq!(send["upstream_status"], 200);
    let get = by_method("GetTask", "agent_error");
    assert_eq!(get["request_id"], "0af7651916cd43dd8448eb211c80319c");
    let stream = lines
        .iter()
        .find(|l| l["method"] == "SendStreamingMessage")
        .unwrap();
    let generated = stream["request_id"].as_str().unwrap().to_owned();
    assert!(
        generated.len() == 32 && generated.bytes().all(|b| b.is_ascii_hexdigit()),
        "{stream}"
    );
    let refused = by_method("SendMessage", "denied");
    assert_eq!(refused["reason"], "POLICY_DENIED");
    assert_eq!(refused["upstream_status"], 0);

    // What the agent received: the same ids, the valid traceparent, never the invalid id.
    let seen = agent.seen_calls().await;
    let ids: Vec<Option<&str>> = seen
        .iter()
        .map(|s| s.headers.get("x-request-id").map(String::as_str))
        .collect();
    assert_eq!(
        ids,
        [
            Some("caller-req-1"),
            Some("0af7651916cd43dd8448eb211c80319c"),
            Some(generated.as_str())
        ],
        "{seen:?}"
    );
    assert_eq!(
        seen[1].headers.get("traceparent").map(String::as_str),
        Some(TRACEPARENT)
    );
    assert!(
        seen[0].authorization.as_deref() == Some(&format!("Bearer {SECRET}")),
        "the credential was used"
    );

    // Nothing secret or private in the whole output.
    let (all, _) = gw.process.stderr_all();
    let out = all
        .iter()
        .chain(gw.process.stdout_lines().iter())
        .cloned()
        .collect::<Vec<_>>();
    for (n, line) in out.iter().enumerate() {
        assert!(
            !line.contains(SECRET),
            "line {n} carries the credential: {line}"
        );
        assert!(
            !line.contains(MARKER),
            "line {n} carries a message body: {line}"
        );
        assert!(
            !line.contains('\u{1b}'),
            "line {n} has colour codes: {line:?}"
        );
    }
}

#[tokio::test]
async fn access_log_off_writes_no_access_lines_and_text_has_no_colour_codes() {
    let agent = RefAgent::sample();
    let config =
        config_head(&[]) + "[log]\naccess = \"off\"\n" + &integration("echo", &agent.card_url, "");
    let gw = GatewayProc::start(&config, &[]).await;
    let (s, body) = gw
        .rpc("echo", &send_request("1", "SendMessage", "echo hi"), &[])
        .await;
    assert_eq!(s, 200, "{body}");
    gw.rpc(
        "echo",
        &send_request("2", "SendMessage", "hi"),
        &[("A2A-Egress-Data-Class", "secret")],
    )
    .await;
    let text = gw.metrics().await;
    assert!(crate::common::gateway::metric(&text, "a2a_egress_requests_total", &[]) >= 2.0);
    let (lines, _) = gw.process.stderr_all();
    assert!(!lines.is_empty(), "the gateway logs its start");
    for l in &lines {
        assert!(
            !l.contains("a2a_egress::access"),
            "access line with access = off: {l}"
        );
        assert!(!l.contains('\u{1b}'), "colour codes on a pipe: {l:?}");
    }
}

/// A gateway whose stderr is a pipe nobody reads keeps answering: log lines are queued and
/// written by a thread of their own, those beyond the queue are lost (and counted), and once
/// stderr is read again the gateway says how many it lost and logs on. Written directly, the
/// lines filled the pipe (64 KiB) after a few hundred calls and every worker then blocked in the
/// write, so calls hung until somebody read.
#[tokio::test]
async fn an_unread_stderr_pipe_never_stalls_calls() {
    use std::io::{BufRead as _, BufReader};
    use std::process::Stdio;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gateway.toml");
    std::fs::write(&path, config_head(&[]) + DOWN).unwrap();
    let mut child = crate::common::gateway_cmd()
        .args(["serve", "--config"])
        .arg(&path)
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let stdout = child.stdout.take().unwrap();
    let stderr = child.stderr.take().unwrap();
    let _child = Kill(child);
    let mut first = String::new();
    BufReader::new(stdout).read_line(&mut first).unwrap();
    let line: Value = serde_json::from_str(&first).unwrap();
    let url = format!("http://{}/agents/nope", line["proxy"].as_str().unwrap());
    // A deadline per call only to turn a hang into a failure; nothing here measures time.
    crate::common::install_crypto_provider();
    let client = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    let call = |n: usize| {
        let (client, url) = (client.clone(), url.clone());
        async move {
            let body = send_request(&n.to_string(), "SendMessage", "hi");
            let r = client.post(&url).json(&body).send().await;
            r.unwrap_or_else(|e| panic!("call {n} was not answered: {e}"))
                .status()
                .as_u16()
        }
    };
    // Each refusal writes an access line of about 250 bytes: 6,000 of them fill the pipe and
    // then the queue (1 MiB) behind it.
    for batch in 0..1_500 {
        let calls = (0..4).map(|i| call(batch * 4 + i));
        for status in futures::future::join_all(calls).await {
            assert_eq!(status, 200, "a JSON-RPC refusal");
        }
    }
    // Now read stderr: the queued lines arrive, then the count of those lost, and the gateway
    // logs on (a later call's line arrives too).
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for l in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    let mut dropped = None;
    let mut later = false;
    let mut seen = 0usize;
    let mut next = 0;
    while dropped.is_none() || !later {
        if dropped.is_some() && next == 0 {
            next = 1;
            client
                .post(&url)
                .header("x-request-id", "after-the-gap")
                .json(&send_request("x", "SendMessage", "hi"))
                .send()
                .await
                .unwrap();
        }
        let l = rx
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|e| panic!("stderr went quiet after {seen} lines: {e}"));
        seen += 1;
        if l.contains("log lines dropped") {
            dropped = Some(l.clone());
        }
        later |= l.contains("after-the-gap");
    }
    let dropped = dropped.unwrap();
    assert!(
        dropped.contains("WARN") && dropped.contains("dropped="),
        "{dropped}"
    );
    assert!(seen > 1_000, "the queued lines were written: {seen}");
}

/// An integration whose first fetch fails has no last good profile, and its WARN line says so
/// instead of promising to keep one (on main: "keeping the last good profile").
#[tokio::test]
async fn a_first_fetch_that_fails_does_not_claim_a_last_good_profile() {
    let config = config_head(&[]) + "[log]\nformat = \"json\"\n" + DOWN;
    let gw = GatewayProc::start(&config, &[]).await;
    let mut failed: Vec<Value>;
    crate::assert_eventually!(
        {
            failed = (gw.process.stderr_all().0.iter())
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .filter(|v| {
                    v["message"]
                        .as_str()
                        .is_some_and(|m| m.starts_with("card refresh failed"))
                })
                .collect();
            !failed.is_empty()
        },
        "no refresh failure logged"
    );
    for line in &failed {
        let message = line["message"].as_str().unwrap_or_default();
        assert!(!message.contains("keeping the last good profile"), "{line}");
        assert!(message.contains("no good profile yet"), "{line}");
        assert_eq!(line["integration"], "down", "{line}");
    }
}
