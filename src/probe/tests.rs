//! The probe plan, requests and judgements, without an agent.

use serde_json::{Value, json};

use super::*;
use crate::profile::{Profile, SkillProfile};
use crate::testkit::{ConfigToml, IntegrationToml};

const REQ: &str = "https://example.com/ext/req/v1";

pub(super) fn state(extra: &str, binding: Binding, streaming: bool) -> IntegrationState {
    let c = ConfigToml::bare()
        .integration(
            IntegrationToml::new("p", "https://a.example/c")
                .skills(&["echo", "book"])
                .data_classes(&["internal"])
                .extra(extra),
        )
        .parse(std::path::Path::new("g.toml"))
        .unwrap();
    let mut p: Profile = crate::lock::diff::tests::pricing_profile();
    let iface = p.interface.as_mut().unwrap();
    iface.binding = binding;
    iface.url = "https://a.example/a2a".into();
    p.streaming = streaming;
    p.extensions = vec![REQ.into()];
    p.required_extensions = vec![REQ.into()];
    let skill = |input: &[&str]| SkillProfile::builder().input(input).build();
    p.skills = [
        (
            "echo".to_string(),
            skill(&["text/plain", "application/json", "image/*"]),
        ),
        ("book".to_string(), skill(&["text/plain"])),
    ]
    .into();
    crate::state::IntegrationState::for_tests(c.integrations[0].clone(), p)
}

const PROBE: &str = "[integrations.probe]\nskill = \"echo\"\ntext = \"echo ping\"";

#[test]
fn without_a_probe_skill_only_side_effect_free_calls_are_planned() {
    let (_, checks) = plan(&state("", Binding::JsonRpc, true)).unwrap();
    assert_eq!(
        checks,
        [
            Check::Interface,
            Check::RefusesOtherVersion("0.3".into()),
            Check::ExtensionEnforced(REQ.into())
        ]
    );
    assert!(checks.iter().all(|c| !c.sends_message()));
}

#[test]
fn a_probe_skill_adds_streaming_and_the_media_types_it_accepts() {
    let (target, checks) = plan(&state(PROBE, Binding::JsonRpc, true)).unwrap();
    assert_eq!(target.probe.as_ref().unwrap().skill, "echo");
    assert_eq!(
        &checks[3..],
        [
            Check::Streaming,
            Check::MediaType("text/plain".into()),
            Check::MediaType("application/json".into())
        ]
    );
    // The workflow's own input_modes narrow what is probed; no streaming when not claimed.
    let (_, checks) = plan(&state(
        &format!("input_modes = [\"application/json\", \"application/pdf\"]\n{PROBE}"),
        Binding::JsonRpc,
        false,
    ))
    .unwrap();
    assert_eq!(&checks[3..], [Check::MediaType("application/json".into())]);
    let (_, checks) = plan(&state(
        &format!("streaming = \"off\"\n{PROBE}"),
        Binding::JsonRpc,
        true,
    ))
    .unwrap();
    assert!(!checks.contains(&Check::Streaming));
}

#[test]
fn no_interface_no_plan() {
    let mut s = state("", Binding::JsonRpc, true);
    s.status = crate::state::Status::Unusable {
        reason: "x".into(),
        profile: s.profile().cloned(),
    };
    assert!(plan(&s).is_none());
}

fn body(r: &Request) -> Value {
    serde_json::from_slice(r.body.as_ref().unwrap()).unwrap()
}

#[test]
fn jsonrpc_requests() {
    let (target, _) = plan(&state(PROBE, Binding::JsonRpc, true)).unwrap();
    let r = request(&Check::Interface, &target, 0).unwrap();
    assert_eq!(
        (r.method.as_str(), r.url.as_str()),
        ("POST", "https://a.example/a2a")
    );
    assert_eq!(r.headers["a2a-version"], "1.0");
    assert_eq!(r.headers["a2a-extensions"], REQ);
    assert_eq!(body(&r)["method"], "GetTask");
    assert_eq!(body(&r)["params"]["id"], "a2a-egress-probe-no-such-task");
    let r = request(&Check::RefusesOtherVersion("0.3".into()), &target, 1).unwrap();
    assert_eq!(r.headers["a2a-version"], "0.3");
    // The extension probe leaves out exactly the extension it checks.
    let r = request(&Check::ExtensionEnforced(REQ.into()), &target, 2).unwrap();
    assert!(r.headers.get("a2a-extensions").is_none());
    let r = request(&Check::Streaming, &target, 3).unwrap();
    let b = body(&r);
    assert_eq!(b["method"], "SendStreamingMessage");
    assert_eq!(r.headers["accept"], "text/event-stream");
    assert_eq!(b["params"]["message"]["metadata"]["skillId"], "echo");
    assert_eq!(b["params"]["message"]["parts"][0]["text"], "echo ping");
    let r = request(&Check::MediaType("application/json".into()), &target, 4).unwrap();
    assert_eq!(
        body(&r)["params"]["message"]["parts"][0],
        json!({"data": {"text": "echo ping"}, "mediaType": "application/json"})
    );
    let r = request(&Check::MediaType("application/pdf".into()), &target, 5).unwrap();
    assert_eq!(
        body(&r)["params"]["message"]["parts"][0]["raw"],
        "ZWNobyBwaW5n"
    );
}

#[test]
fn rest_requests_carry_the_tenant_as_the_first_path_segment() {
    let (target, _) = plan(&state(
        &format!("tenant = \"acme\"\n{PROBE}"),
        Binding::HttpJson,
        true,
    ))
    .unwrap();
    let r = request(&Check::Interface, &target, 0).unwrap();
    assert_eq!(r.method, http::Method::GET);
    assert_eq!(
        r.url,
        "https://a.example/a2a/acme/tasks/a2a-egress-probe-no-such-task"
    );
    assert!(r.body.is_none());
    let r = request(&Check::Streaming, &target, 1).unwrap();
    assert_eq!(r.url, "https://a.example/a2a/acme/message:stream");
    assert!(body(&r)["message"].is_object());
}

#[test]
fn message_probes_need_the_probe_skill() {
    let (target, _) = plan(&state("", Binding::JsonRpc, true)).unwrap();
    assert!(request(&Check::Streaming, &target, 0).is_none());
    assert!(request(&Check::MediaType("text/plain".into()), &target, 0).is_none());
}

fn json_answer(v: Value) -> Response {
    Response {
        status: 200,
        content_type: Some("application/json".into()),
        body: Bytes::from(v.to_string()),
    }
}

fn rpc_error(code: i64) -> Response {
    json_answer(json!({"jsonrpc": "2.0", "id": "x", "error": {"code": code, "message": "m"}}))
}

fn rest_error(status: u16, reason: &str) -> Response {
    Response {
        status,
        content_type: Some("application/json".into()),
        body: Bytes::from(
            json!({"error": {"code": status, "status": "X", "message": "m",
                "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason}]}})
            .to_string(),
        ),
    }
}

fn sse(events: &[Value]) -> Response {
    let body: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
    Response {
        status: 200,
        content_type: Some("text/event-stream".into()),
        body: Bytes::from(body),
    }
}

#[test]
fn every_judgement() {
    let result = json_answer(json!({"jsonrpc": "2.0", "id": "x", "result": {"task": {}}}));
    let v = || Check::RefusesOtherVersion("0.3".into());
    let e = || Check::ExtensionEnforced(REQ.into());
    let m = || Check::MediaType("application/json".into());
    let html = Response {
        status: 502,
        content_type: Some("text/html".into()),
        body: Bytes::from_static(b"<html>"),
    };
    let table: Vec<(Check, Response, Outcome)> = vec![
        (Check::Interface, rpc_error(-32001), Outcome::Ok("answered with error -32001".into())),
        (Check::Interface, rest_error(404, "TASK_NOT_FOUND"), Outcome::Ok("answered with error TASK_NOT_FOUND".into())),
        (Check::Interface, rpc_error(-32009), Outcome::Failed("the interface refuses its own protocol version with VersionNotSupportedError".into())),
        (Check::Interface, html.clone(), Outcome::Inconclusive("no A2A answer: HTTP 502 text/html".into())),
        (v(), rpc_error(-32009), Outcome::Ok("A2A-Version 0.3 refused with VersionNotSupportedError".into())),
        (v(), rest_error(400, "VERSION_NOT_SUPPORTED"), Outcome::Ok("A2A-Version 0.3 refused with VersionNotSupportedError".into())),
        (v(), rpc_error(-32001), Outcome::Failed("took A2A-Version 0.3, which the card does not offer (error -32001)".into())),
        (e(), rpc_error(-32008), Outcome::Ok(format!("a call without {REQ} was refused with ExtensionSupportRequiredError"))),
        (e(), rpc_error(-32001), Outcome::Failed(format!("declared required, but a call without {REQ} was answered with error -32001"))),
        (Check::Streaming, sse(&[json!({"result": {"task": {}}}), json!({"result": {}})]), Outcome::Ok("streamed 2 events".into())),
        (Check::Streaming, rpc_error(-32004), Outcome::Failed("the card claims streaming, but SendStreamingMessage was refused with UnsupportedOperationError".into())),
        (Check::Streaming, sse(&[json!({"error": {"code": -32004, "message": "m"}})]), Outcome::Failed("the card claims streaming, but SendStreamingMessage was refused with UnsupportedOperationError".into())),
        (Check::Streaming, result.clone(), Outcome::Failed("the card claims streaming, but SendStreamingMessage answered a result".into())),
        (Check::Streaming, sse(&[json!({"error": {"code": -32603, "message": "m"}})]), Outcome::Inconclusive("answered a stream ending in error -32603".into())),
        (m(), result, Outcome::Ok("a application/json part was accepted".into())),
        (m(), rpc_error(-32005), Outcome::Failed("a application/json part was refused with ContentTypeNotSupportedError".into())),
        (m(), rest_error(415, "CONTENT_TYPE_NOT_SUPPORTED"), Outcome::Failed("a application/json part was refused with ContentTypeNotSupportedError".into())),
        (m(), rpc_error(-32602), Outcome::Inconclusive("answered error -32602".into())),
        (m(), html, Outcome::Inconclusive("no A2A answer: HTTP 502 text/html".into())),
    ];
    for (check, resp, want) in table {
        assert_eq!(judge(&check, &resp), want, "{check:?}");
    }
}

struct Scripted(std::sync::Mutex<Vec<Request>>);

#[async_trait::async_trait]
impl Transport for Scripted {
    async fn send(&self, r: Request) -> Result<Response, TransportError> {
        self.0.lock().unwrap().push(r);
        Err(TransportError {
            kind: "connect",
            detail: "connection refused".into(),
        })
    }
}

#[tokio::test]
async fn run_calls_in_plan_order_and_a_transport_failure_is_inconclusive() {
    let (target, checks) = plan(&state(PROBE, Binding::JsonRpc, true)).unwrap();
    let t = Scripted(Default::default());
    let results = run(&target, &checks, &t).await;
    assert_eq!(results.len(), checks.len());
    assert_eq!(t.0.lock().unwrap().len(), checks.len());
    assert_eq!(
        results[0].to_string(),
        "interface: inconclusive (no answer: connection refused)"
    );
    // Without a probe skill, message probes are not even sent.
    let (target, _) = plan(&state("", Binding::JsonRpc, true)).unwrap();
    let t = Scripted(Default::default());
    let results = run(&target, &[Check::Streaming], &t).await;
    assert!(t.0.lock().unwrap().is_empty());
    assert_eq!(
        results[0].outcome,
        Outcome::Inconclusive("not probed: no probe skill".into())
    );
}
