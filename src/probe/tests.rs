//! The probe plan, requests and judgements, without an agent.

use serde_json::{Value, json};

use super::*;
use crate::profile::{Profile, SkillProfile};
use crate::testkit::{ConfigToml, IntegrationToml};

const REQ: &str = "https://example.com/ext/req/v1";

pub(super) fn state(extra: &str, binding: Binding, streaming: bool) -> IntegrationState {
    state_at(extra, binding, streaming, "1.0")
}

/// [`state`] with the chosen interface at protocol `version`.
fn state_at(extra: &str, binding: Binding, streaming: bool, version: &str) -> IntegrationState {
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
    iface.version = version.into();
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
        code: None,
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
    assert_eq!(
        request(&Check::Streaming, &target, 0),
        Err(NotProbed::NoProbeSkill)
    );
    assert_eq!(
        request(&Check::MediaType("text/plain".into()), &target, 0),
        Err(NotProbed::NoProbeSkill)
    );
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

/// The probes of a 0.3 integration (JSON-RPC, translated), with the probe skill.
fn plan_03() -> (Target, Vec<Check>) {
    plan(&state_at(PROBE, Binding::JsonRpc, true, "0.3")).unwrap()
}

#[test]
fn a_0_3_probe_is_the_translated_request_with_0_3s_headers() {
    let (target, checks) = plan_03();
    assert_eq!(target.dialect.protocol, crate::translate::Protocol::V0_3);
    assert_eq!(
        checks[..3],
        [
            Check::Interface,
            Check::RefusesOtherVersion("99.0".into()),
            Check::ExtensionEnforced(REQ.into())
        ]
    );
    let r = request(&Check::Interface, &target, 0).unwrap();
    assert!(r.headers.get("a2a-version").is_none(), "{:?}", r.headers);
    assert!(r.headers.get("a2a-extensions").is_none(), "{:?}", r.headers);
    assert_eq!(r.headers["x-a2a-extensions"], REQ);
    assert_eq!(
        body(&r),
        json!({"jsonrpc": "2.0", "id": "a2a-egress-probe-0", "method": "tasks/get",
            "params": {"id": "a2a-egress-probe-no-such-task"}})
    );
    let r = request(&Check::Streaming, &target, 3).unwrap();
    assert_eq!(r.headers["accept"], "text/event-stream");
    let b = body(&r);
    assert_eq!(b["method"], "message/stream");
    assert_eq!(
        b["params"]["message"],
        json!({"kind": "message", "messageId": "a2a-egress-probe-3", "role": "user",
            "parts": [{"kind": "text", "text": "echo ping"}], "metadata": {"skillId": "echo"}})
    );
    let r = request(&Check::MediaType("application/json".into()), &target, 4).unwrap();
    assert_eq!(body(&r)["method"], "message/send");
    assert_eq!(
        body(&r)["params"]["message"]["parts"][0],
        json!({"kind": "data", "data": {"text": "echo ping"}})
    );
    let r = request(&Check::MediaType("application/pdf".into()), &target, 5).unwrap();
    assert_eq!(
        body(&r)["params"]["message"]["parts"][0]["file"],
        json!({"bytes": "ZWNobyBwaW5n", "mimeType": "application/pdf"})
    );
}

/// The probes of a 0.3 HTTP+JSON integration go out as 0.3's requests (the data plane's
/// translation): its `/v1` routes, the proto's body, no `A2A-Version`; its answers and events
/// are judged in their 1.0 form.
#[test]
fn a_0_3_http_json_probe_is_the_translated_request_and_its_answer_is_read_as_1_0() {
    let (target, _) = plan(&state_at(PROBE, Binding::HttpJson, true, "0.3")).unwrap();
    let r = request(&Check::Interface, &target, 0).unwrap();
    assert_eq!(r.method, http::Method::GET);
    assert_eq!(
        r.url,
        "https://a.example/a2a/v1/tasks/a2a-egress-probe-no-such-task"
    );
    assert!(r.headers.get("a2a-version").is_none(), "{:?}", r.headers);
    assert!(r.body.is_none());
    let r = request(&Check::Streaming, &target, 3).unwrap();
    assert_eq!(r.url, "https://a.example/a2a/v1/message:stream");
    assert_eq!(r.headers["content-type"], "application/json");
    assert_eq!(
        body(&r),
        json!({"message": {"messageId": "a2a-egress-probe-3", "role": "ROLE_USER",
            "content": [{"text": "echo ping"}], "metadata": {"skillId": "echo"}},
            "configuration": {"blocking": true}})
    );
    // JS 0.3.14's 404 for an unknown task, and a stream of 0.3 events, read as 1.0's.
    let missing = Response {
        status: 404,
        content_type: Some("application/json".into()),
        body: Bytes::from_static(br#"{"code":-32001,"message":"Task not found"}"#),
    };
    let t = dialect::answer_to10(target.dialect, crate::translate::Op::GetTask, missing).unwrap();
    let v: Value = serde_json::from_slice(&t.body).unwrap();
    assert_eq!(v["error"]["details"][0]["reason"], "TASK_NOT_FOUND", "{v}");
    let events = Response {
        status: 200,
        content_type: Some("text/event-stream".into()),
        body: Bytes::from_static(
            b"data: {\"statusUpdate\":{\"taskId\":\"t\",\"contextId\":\"c\",\"status\":{\"state\":\"TASK_STATE_COMPLETED\"},\"final\":true}}\n\ndata: {\"x\":1}\n\n",
        ),
    };
    let t = dialect::answer_to10(
        target.dialect,
        crate::translate::Op::SendStreamingMessage,
        events,
    )
    .unwrap();
    assert_eq!(
        String::from_utf8(t.body.to_vec()).unwrap(),
        "data: {\"statusUpdate\":{\"taskId\":\"t\",\"contextId\":\"c\",\"status\":{\"state\":\"TASK_STATE_COMPLETED\"}}}\n\n"
    );
}

#[test]
fn a_check_0_3_gives_no_meaning_is_not_probed_and_says_why() {
    let (target, _) = plan_03();
    for (check, code) in [
        (Check::RefusesOtherVersion("99.0".into()), "-32009"),
        (Check::ExtensionEnforced(REQ.into()), "-32008"),
    ] {
        let why = request(&check, &target, 0).unwrap_err();
        assert!(matches!(why, NotProbed::NoMeaning { .. }), "{why:?}");
        let text = why.to_string();
        assert!(
            text.starts_with(&format!("{} has no meaning in A2A 0.3: ", check.claim()))
                && text.contains(code),
            "{text}"
        );
    }
    // A 1.0 operation 0.3 lacks is refused by the translator the data plane uses, and said so.
    let list = Bytes::from_static(br#"{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}"#);
    let e = dialect::request_body(
        target.dialect,
        crate::translate::Op::ListTasks,
        list.clone(),
    )
    .unwrap_err();
    assert_eq!(
        NotProbed::from(e).to_string(),
        "the probe does not translate to A2A 0.3: ListTasks does not exist in A2A 0.3 over JSON-RPC"
    );
    let (target10, _) = plan(&state(PROBE, Binding::JsonRpc, true)).unwrap();
    assert_eq!(
        dialect::request_body(
            target10.dialect,
            crate::translate::Op::ListTasks,
            list.clone()
        ),
        Ok(list),
        "a 1.0 probe goes as it was built"
    );
}

fn v03_error(code: i64, message: &str) -> Response {
    json_answer(json!({"jsonrpc": "2.0", "id": "a2a-egress-probe-0",
        "error": {"code": code, "message": message}}))
}

fn v03_result(result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": "a2a-egress-probe-3", "result": result})
}

#[test]
fn a_0_3_answer_is_judged_as_its_1_0_translation() {
    let (target, _) = plan_03();
    let d = target.dialect;
    let m = || Check::MediaType("text/plain".into());
    let message = json!({"kind": "message", "messageId": "m1", "role": "agent",
        "parts": [{"kind": "text", "text": "echo ping"}]});
    let refused = "Streaming is not supported by the agent";
    let html = Response {
        status: 502,
        content_type: Some("text/html".into()),
        body: Bytes::from_static(b"<html>"),
    };
    let table: Vec<(Check, Response, Outcome)> = vec![
        // The 0.3 code gains the 1.0 ErrorInfo reason: judged as a 1.0 agent's answer.
        (Check::Interface, v03_error(-32001, "Task not found"), Outcome::Ok("answered with error TASK_NOT_FOUND".into())),
        // -32009 means nothing in 0.3: not VersionNotSupportedError, so no false failure.
        (Check::Interface, v03_error(-32009, "x"), Outcome::Ok("answered with error INTERNAL_ERROR".into())),
        // Python a2a-sdk 0.3.26's refusal of a stream it claims (-32603, not -32004).
        (Check::Streaming, v03_error(-32603, refused), Outcome::Failed("the card claims streaming, but SendStreamingMessage was refused with UnsupportedOperationError".into())),
        (Check::Streaming, v03_error(-32603, "boom"), Outcome::Inconclusive("answered error INTERNAL_ERROR".into())),
        (m(), json_answer(v03_result(message)), Outcome::Ok("a text/plain part was accepted".into())),
        (m(), v03_error(-32005, "no"), Outcome::Failed("a text/plain part was refused with ContentTypeNotSupportedError".into())),
        (m(), json_answer(v03_result(json!({"kind": "nonsense"}))), Outcome::Inconclusive("no A2A answer: the A2A 0.3 answer does not translate: result.kind is not task, message, status-update or artifact-update".into())),
        (m(), html, Outcome::Inconclusive("no A2A answer: HTTP 502 text/html".into())),
    ];
    for (check, resp, want) in table {
        assert_eq!(judge_in(&check, d, resp), want, "{check:?}");
    }
    // A 1.0 agent's answer is judged as it came.
    assert_eq!(
        judge_in(
            &Check::Interface,
            plan(&state("", Binding::JsonRpc, true)).unwrap().0.dialect,
            rpc_error(-32001)
        ),
        Outcome::Ok("answered with error -32001".into())
    );
}

#[test]
fn a_0_3_stream_is_judged_event_by_event_up_to_its_final_event() {
    let (target, _) = plan_03();
    let task =
        json!({"kind": "task", "id": "t1", "contextId": "c1", "status": {"state": "submitted"}});
    let status = |state: &str, fin: bool| {
        json!({"kind": "status-update", "taskId": "t1", "contextId": "c1",
            "status": {"state": state}, "final": fin})
    };
    let stream = sse(&[
        v03_result(task),
        v03_result(status("working", false)),
        v03_result(status("completed", true)),
        // Nothing after 0.3's `final: true` is read, not even what would not translate.
        v03_result(json!({"kind": "nonsense"})),
    ]);
    assert_eq!(
        judge_in(&Check::Streaming, target.dialect, stream),
        Outcome::Ok("streamed 3 events".into())
    );
    let refused = sse(&[json!({"jsonrpc": "2.0", "id": "x",
        "error": {"code": -32603, "message": "Streaming is not supported by the agent"}})]);
    assert_eq!(
        judge_in(&Check::Streaming, target.dialect, refused),
        Outcome::Failed("the card claims streaming, but SendStreamingMessage was refused with UnsupportedOperationError".into())
    );
    let bad = sse(&[v03_result(json!({"kind": "status-update"}))]);
    let got = judge_in(&Check::Streaming, target.dialect, bad);
    let Outcome::Inconclusive(d) = &got else {
        panic!("{got:?}")
    };
    assert!(
        d.starts_with("no A2A answer: the A2A 0.3 answer does not translate: result."),
        "{d}"
    );
}

#[test]
fn event_data_follows_the_sse_format() {
    let body =
        b": keep-alive\r\ndata: {\"a\":\r\ndata:1}\r\n\r\nevent: x\ndata:{}\n\nid: 3\n\ndata: last";
    // The unfinished last event is dropped, as an SSE reader (and the data plane) drops it.
    assert_eq!(sse_data(body), ["{\"a\":\n1}", "{}"]);
    // CR-only line ends, a `data` line without a colon, a BOM, blank data: the data plane's rules.
    let body = b"\xEF\xBB\xBFdata: 1\rdata\rdata: 2\r\rdata:  \n\ndata:3\n\n";
    assert_eq!(sse_data(body), ["1\n\n2", "3"]);
    assert!(is_event_stream(Some("Text/Event-Stream; charset=utf-8")));
    assert!(!is_event_stream(Some("application/json")) && !is_event_stream(None));
}

/// Answers every probe as a 0.3 agent that does not know the task would, and keeps the requests.
struct Agent03(std::sync::Mutex<Vec<Request>>);

#[async_trait::async_trait]
impl Transport for Agent03 {
    async fn send(&self, r: Request) -> Result<Response, TransportError> {
        self.0.lock().unwrap().push(r);
        Ok(v03_error(-32001, "Task not found"))
    }
}

#[tokio::test]
async fn a_0_3_run_sends_only_what_0_3_can_answer_and_reports_the_rest() {
    let (target, checks) = plan(&state_at("", Binding::JsonRpc, true, "0.3")).unwrap();
    let t = Agent03(Default::default());
    let results: Vec<String> = run(&target, &checks, &t)
        .await
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        results,
        [
            "interface: ok (answered with error TASK_NOT_FOUND)".to_owned(),
            "version: inconclusive (not probed: version has no meaning in A2A 0.3: 0.3 has no A2A-Version header and no VersionNotSupportedError (-32009 is new in 1.0))".to_owned(),
            format!("extension:{REQ}: inconclusive (not probed: extension:{REQ} has no meaning in A2A 0.3: 0.3 has no ExtensionSupportRequiredError (-32008 is new in 1.0) to refuse a call without it)"),
        ]
    );
    let sent = t.0.lock().unwrap();
    assert_eq!(sent.len(), 1, "only the interface probe is sent: {sent:?}");
    assert_eq!(body(&sent[0])["method"], "tasks/get");
}

#[test]
fn an_answer_whose_tree_is_over_the_budget_is_not_read_and_says_its_size() {
    let (target, _) = plan_03();
    // 2^20 + 1 zeros: a 2 MiB `result`, a `Vec<Value>` of 2^21 slots.
    let zeros = format!("[{}0]", "0,".repeat(1 << 20));
    let body = format!(r#"{{"jsonrpc":"2.0","id":"x","result":{zeros}}}"#);
    let unary = Response {
        status: 200,
        content_type: Some("application/json".into()),
        body: Bytes::from(body.clone()),
    };
    // Three events of 2^17 + 1 zeros: each is under the budget, together they are not.
    let half = format!("[{}0]", "0,".repeat(1 << 17));
    let event = format!(r#"data: {{"jsonrpc":"2.0","id":"x","result":{half}}}"#);
    let stream = Response {
        status: 200,
        content_type: Some("text/event-stream".into()),
        body: Bytes::from(format!("{event}\n\n{event}\n\n{event}\n\n")),
    };
    for (got, what) in [
        (judge(&Check::Interface, &unary), "1.0 answer"),
        (
            judge_in(&Check::Interface, target.dialect, unary),
            "0.3 answer",
        ),
        (judge(&Check::Streaming, &stream), "1.0 stream"),
    ] {
        let Outcome::Inconclusive(d) = &got else {
            panic!("{what}: {got:?}")
        };
        assert!(
            d.starts_with("no A2A answer: the agent's answer would take ")
                && d.ends_with(" MiB to read, over the 64 MiB the gateway holds per answer"),
            "{what}: {d}"
        );
    }
}
