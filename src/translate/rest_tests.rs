//! Golden translations of the 0.3 HTTP+JSON binding against what both 0.3 SDKs put on the wire
//! (`tests/fixtures/wire/v03/*-rest-*.json`, recorded from Python a2a-sdk 0.3.26 and JS
//! @a2a-js/sdk 0.3.14, read from disk): every request shape the gateway sends, and every answer,
//! event and error it reads, both directions.

use serde_json::{Value, json};

use super::*;

const PEERS: [&str; 2] = ["python", "js"];

/// The recorded exchange `<peer>-rest-<exchange>.json`.
fn fixture(peer: &str, exchange: &str) -> Value {
    let path = format!(
        "{}/tests/fixtures/wire/v03/{peer}-rest-{exchange}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap()
}

/// The recorded request's path below the interface (the capture mounted the agents at `/rest`,
/// the non-streaming twin at `/nostream/rest`).
fn agent_path(f: &Value) -> String {
    let p = f["request"]["path"].as_str().unwrap();
    let p = p.strip_prefix("/nostream").unwrap_or(p);
    p.strip_prefix("/rest").unwrap().to_owned()
}

fn to03(op: Op, path: &str, query: Option<&str>, body: Value) -> RestRequest {
    let body = if body.is_null() {
        Vec::new()
    } else {
        body.to_string().into_bytes()
    };
    rest_request_to03(op, path, query, &body).unwrap()
}

fn body_of(r: &RestRequest) -> Value {
    serde_json::from_slice(&r.body).unwrap()
}

/// The 1.0 message a 1.0 caller sends for the recorded one (same ids, `parts` for `content`).
fn message10(recorded: &Value) -> Value {
    let m = &recorded["request"]["body"]["message"];
    json!({"messageId": m["messageId"], "role": "ROLE_USER", "parts": m["content"]})
}

/// The 1.0 form of a recorded 0.3 object, written independently of the translator: a message's
/// `content` is its `parts`, the proto's `TASK_STATE_CANCELLED` is 1.0's `TASK_STATE_CANCELED`,
/// a status update's `final` is the stream's end (not a member), and a push config is flat.
fn v10(v: &Value) -> Value {
    match v {
        Value::Object(o) => {
            if let (Some(name), Some(cfg)) = (o.get("name"), o.get("pushNotificationConfig")) {
                let task = name.as_str().unwrap().split('/').nth(1).unwrap();
                let mut flat = cfg.as_object().unwrap().clone();
                flat.insert("taskId".into(), json!(task));
                return Value::Object(flat);
            }
            let mut out = serde_json::Map::new();
            for (k, v) in o {
                match k.as_str() {
                    "content" => out.insert("parts".into(), v10(v)),
                    "final" => None,
                    _ => out.insert(k.clone(), v10(v)),
                };
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(v10).collect()),
        Value::String(s) if s == "TASK_STATE_CANCELLED" => json!("TASK_STATE_CANCELED"),
        other => other.clone(),
    }
}

fn answer(op: Op, f: &Value) -> RestAnswer {
    let r = &f["response"];
    let status = r["status"].as_u64().unwrap() as u16;
    let body = match (&r["body"], &r["text"]) {
        (Value::Null, Value::String(t)) => t.clone().into_bytes(),
        (Value::Null, _) => Vec::new(),
        (b, _) => b.to_string().into_bytes(),
    };
    rest_answer_to10(op, status, &body)
        .unwrap()
        .unwrap_or_else(|| panic!("{op:?}: no A2A answer in {f}"))
}

fn json_of(a: &RestAnswer) -> Value {
    serde_json::from_slice(&a.json).unwrap()
}

/// Sends as the 0.3 SDK client sends them: `content`, `ROLE_USER`, `blocking` from
/// `returnImmediately`, and always a `blocking` (Python 0.3.26 reads an absent one as false).
#[test]
fn message_sends_are_the_recorded_requests() {
    for peer in PEERS {
        for (exchange, config10) in [
            ("send", json!({"returnImmediately": false})),
            ("send-non-blocking", json!({"returnImmediately": true})),
        ] {
            let f = fixture(peer, exchange);
            let body = json!({"message": message10(&f), "configuration": config10});
            let r = to03(Op::SendMessage, "/message:send", None, body);
            assert_eq!(r.method, "POST");
            assert_eq!(r.path, agent_path(&f), "{peer} {exchange}");
            assert_eq!(body_of(&r), f["request"]["body"], "{peer} {exchange}");
        }
        for (exchange, op, route) in [
            ("send-no-blocking-field", Op::SendMessage, "/message:send"),
            ("send-message-result", Op::SendMessage, "/message:send"),
            ("stream", Op::SendStreamingMessage, "/message:stream"),
        ] {
            let f = fixture(peer, exchange);
            let r = to03(op, route, None, json!({"message": message10(&f)}));
            assert_eq!(r.path, agent_path(&f), "{peer} {exchange}");
            let mut want = f["request"]["body"].clone();
            want["configuration"] = json!({"blocking": true});
            assert_eq!(body_of(&r), want, "{peer} {exchange}");
        }
    }
}

/// Every other route: the recorded method and path; a cancel names its task as the 0.3 SDK
/// client does; a push config is created under its `parent`, exactly as recorded.
#[test]
fn task_and_push_config_requests_are_the_recorded_ones() {
    for peer in PEERS {
        let get = fixture(peer, "get");
        let task = agent_path(&get).rsplit('/').next().unwrap().to_owned();
        let held = fixture(peer, "cancel");
        let held_task = agent_path(&held)
            .trim_start_matches("/v1/tasks/")
            .trim_end_matches(":cancel")
            .to_owned();
        let cases = [
            (Op::GetTask, "get", format!("/tasks/{task}"), Value::Null),
            (
                Op::CancelTask,
                "cancel",
                format!("/tasks/{held_task}:cancel"),
                json!({"metadata": {"dropped": true}}),
            ),
            (
                Op::SubscribeToTask,
                "resubscribe",
                format!("/tasks/{held_task}:subscribe"),
                Value::Null,
            ),
            (
                Op::CreatePushConfig,
                "push-set",
                format!("/tasks/{held_task}/pushNotificationConfigs"),
                json!({"taskId": held_task, "id": "c1", "url": "http://127.0.0.1:9/push"}),
            ),
            (
                Op::GetPushConfig,
                "push-get",
                format!("/tasks/{held_task}/pushNotificationConfigs/c1"),
                Value::Null,
            ),
            (
                Op::ListPushConfigs,
                "push-list",
                format!("/tasks/{held_task}/pushNotificationConfigs"),
                Value::Null,
            ),
            (
                Op::DeletePushConfig,
                "push-delete",
                format!("/tasks/{held_task}/pushNotificationConfigs/c1"),
                Value::Null,
            ),
            (
                Op::GetExtendedAgentCard,
                "extended-card",
                "/extendedAgentCard".to_owned(),
                Value::Null,
            ),
        ];
        for (op, exchange, path, body) in cases {
            let f = fixture(peer, exchange);
            let r = to03(op, &path, None, body);
            assert_eq!(r.method, f["request"]["method"], "{peer} {exchange}");
            assert_eq!(r.path, agent_path(&f), "{peer} {exchange}");
            match &f["request"]["body"] {
                Value::Null if op == Op::CancelTask => {
                    assert_eq!(body_of(&r), json!({"name": format!("tasks/{held_task}")}));
                }
                Value::Null => assert!(r.body.is_empty(), "{peer} {exchange}"),
                want => assert_eq!(&body_of(&r), want, "{peer} {exchange}"),
            }
        }
    }
}

/// `historyLength` is the one query member 0.3 reads, held to being an integer; a body's task
/// that is not the path's is refused, not sent with one of the two; ListTasks has no 0.3 route.
#[test]
fn queries_are_cut_to_0_3s_and_a_second_task_is_refused() {
    let r = to03(
        Op::GetTask,
        "/tasks/t",
        Some("historyLength=2&x=y"),
        Value::Null,
    );
    assert_eq!(r.path, "/v1/tasks/t?historyLength=2");
    assert!(rest_request_to03(Op::GetTask, "/tasks/t", Some("historyLength=2x"), b"").is_err());
    let e = rest_request_to03(
        Op::CreatePushConfig,
        "/tasks/a/pushNotificationConfigs",
        None,
        br#"{"taskId":"b","url":"https://h.example/"}"#,
    )
    .unwrap_err();
    assert!(e.to_string().contains("body.taskId"), "{e}");
    assert_eq!(
        rest_request_to03(Op::ListTasks, "/tasks", None, b"").unwrap_err(),
        TranslateError::NotInVersion {
            method: "ListTasks"
        }
    );
}

/// Every recorded success answer becomes its 1.0 form with status 200 (JS sends 201, 202 and
/// 204), whatever the peer.
#[test]
fn recorded_answers_are_1_0_answers() {
    for peer in PEERS {
        for (op, exchange) in [
            (Op::SendMessage, "send"),
            (Op::SendMessage, "send-message-result"),
            (Op::SendMessage, "send-no-blocking-field"),
            (Op::SendMessage, "send-non-blocking"),
            (Op::GetTask, "get"),
            (Op::CancelTask, "cancel"),
            (Op::CreatePushConfig, "push-set"),
            (Op::GetPushConfig, "push-get"),
            (Op::GetExtendedAgentCard, "extended-card"),
        ] {
            let f = fixture(peer, exchange);
            let a = answer(op, &f);
            assert_eq!((a.status, a.error), (200, false), "{peer} {exchange}");
            let want = match op {
                Op::GetExtendedAgentCard => f["response"]["body"].clone(),
                _ => v10(&f["response"]["body"]),
            };
            assert_eq!(json_of(&a), want, "{peer} {exchange}");
        }
    }
    let js = fixture("js", "push-list");
    assert_eq!(
        json_of(&answer(Op::ListPushConfigs, &js)),
        v10(&js["response"]["body"])
    );
    let deleted = answer(Op::DeletePushConfig, &fixture("js", "push-delete"));
    assert_eq!((deleted.status, json_of(&deleted)), (200, json!({})));
    // A task state, a role and a message in both shapes of the proto's JSON.
    let t = json!({"id":"t","status":{"state":5,"message":{"messageId":"m","role":2,
        "content":[{"file":{"fileWithUri":"https://x.example/a.pdf","mimeType":"application/pdf","name":"a"}},
                   {"data":{"data":{"n":1}}}]}}});
    let a = rest_answer_to10(Op::GetTask, 200, t.to_string().as_bytes())
        .unwrap()
        .unwrap();
    assert_eq!(
        json_of(&a),
        json!({"id":"t","status":{"state":"TASK_STATE_CANCELED","message":{"messageId":"m",
            "role":"ROLE_AGENT","parts":[
                {"url":"https://x.example/a.pdf","mediaType":"application/pdf","filename":"a"},
                {"data":{"n":1}}]}}})
    );
}

/// Every recorded stream event, Python's spread over several `data:` lines included, becomes a
/// 1.0 `StreamResponse`; the status update the agent marks `final` is the last.
#[test]
fn recorded_stream_events_are_1_0_events_and_final_ends_them() {
    for peer in PEERS {
        for (op, exchange) in [
            (Op::SendStreamingMessage, "stream"),
            (Op::SubscribeToTask, "resubscribe"),
        ] {
            let f = fixture(peer, exchange);
            let events = f["response"]["events"].as_array().unwrap();
            for (i, lines) in events.iter().enumerate() {
                let text: Vec<String> = lines
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|l| format!("{}\n", l.as_str().unwrap()))
                    .collect();
                let event = text.concat() + "\n";
                let data = crate::types::sse::data_of(event.as_bytes()).unwrap();
                let t = rest_event_to10(op, &data).unwrap();
                let recorded: Value = serde_json::from_slice(&data).unwrap();
                let fin = recorded["statusUpdate"]["final"] == json!(true);
                assert_eq!(t.last, fin, "{peer} {exchange} event {i}");
                assert!(!t.error);
                let got: Value = serde_json::from_slice(&t.json).unwrap();
                assert_eq!(got, v10(&recorded), "{peer} {exchange} event {i}");
            }
        }
    }
    // JS 0.3.14 sends an error after the stream started as its `{code, message}`.
    let t = rest_event_to10(
        Op::SendStreamingMessage,
        br#"{"code":-32603,"message":"boom"}"#,
    )
    .unwrap();
    assert!(t.error && t.last);
    let got: Value = serde_json::from_slice(&t.json).unwrap();
    assert_eq!(got["error"]["code"], 500);
    assert_eq!(got["error"]["details"][0]["reason"], "INTERNAL_ERROR");
}

/// Each recorded error answer and the 1.0 error it is: peer, operation, exchange, HTTP status,
/// `google.rpc.Status` code, ErrorInfo reason, the agent's message.
type RecordedError = (
    &'static str,
    Op,
    &'static str,
    u16,
    &'static str,
    &'static str,
    &'static str,
);

const RECORDED_ERRORS: [RecordedError; 5] = [
    (
        "python",
        Op::GetTask,
        "get-unknown-task",
        404,
        "NOT_FOUND",
        "TASK_NOT_FOUND",
        "Task not found",
    ),
    (
        "js",
        Op::GetTask,
        "get-unknown-task",
        404,
        "NOT_FOUND",
        "TASK_NOT_FOUND",
        "Task not found: no-such-task",
    ),
    (
        "python",
        Op::ListPushConfigs,
        "push-list",
        500,
        "INTERNAL",
        "INTERNAL_ERROR",
        "unknown exception",
    ),
    (
        "python",
        Op::DeletePushConfig,
        "push-delete",
        404,
        "NOT_FOUND",
        "METHOD_NOT_FOUND",
        "Method Not Allowed",
    ),
    (
        "js",
        Op::SendStreamingMessage,
        "stream-refused",
        400,
        "FAILED_PRECONDITION",
        "UNSUPPORTED_OPERATION",
        "Unsupported operation: Agent does not support streaming",
    ),
];

/// What a 0.3 agent's error without a recording means: operation, HTTP status, body, reason.
const INFERRED_ERRORS: [(Op, u16, &str, &str); 4] = [
    (
        Op::GetExtendedAgentCard,
        404,
        r#"{"message":"x"}"#,
        "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
    ),
    (
        Op::CreatePushConfig,
        501,
        r#"{"message":"x"}"#,
        "PUSH_NOTIFICATION_NOT_SUPPORTED",
    ),
    (
        Op::SendMessage,
        400,
        r#"{"code":-32008,"message":"x"}"#,
        "INTERNAL_ERROR",
    ),
    (
        Op::SendStreamingMessage,
        500,
        r#"{"message":"Streaming is not supported by the agent"}"#,
        "UNSUPPORTED_OPERATION",
    ),
];

/// The 0.3 SDKs' error shapes become 1.0 `google.rpc.Status` errors with their ErrorInfo: JS's
/// JSON-RPC code, Python's bare message by its HTTP status, FastAPI's missing route; a page in
/// none of these shapes is no A2A error and passes as it came.
#[test]
fn recorded_errors_are_1_0_errors_with_error_info() {
    let info = |reason: &str| json!([{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":reason,"domain":"a2a-protocol.org"}]);
    for (peer, op, exchange, status, grpc, reason, message) in RECORDED_ERRORS {
        let a = answer(op, &fixture(peer, exchange));
        assert!(a.error, "{peer} {exchange}");
        assert_eq!(a.status, status, "{peer} {exchange}");
        assert_eq!(
            json_of(&a),
            json!({"error":{"code":status,"status":grpc,"message":message,"details":info(reason)}}),
            "{peer} {exchange}"
        );
    }
    // Python's stream refusal is a bare 500 text page: nothing to translate, judged as it came.
    let f = fixture("python", "stream-refused");
    assert_eq!(
        rest_answer_to10(
            Op::SendStreamingMessage,
            500,
            f["response"]["text"].as_str().unwrap().as_bytes()
        ),
        Ok(None)
    );
    // Python's 404 for the extended card is its "not configured"; 501 on a push config is
    // PushNotificationNotSupported; -32008 from a 0.3 agent is not 1.0's, and stays internal.
    for (op, status, body, reason) in INFERRED_ERRORS {
        let a = rest_answer_to10(op, status, body.as_bytes())
            .unwrap()
            .unwrap();
        assert_eq!(
            json_of(&a)["error"]["details"][0]["reason"],
            reason,
            "{op:?} {body}"
        );
    }
}

/// What the proto cannot say does not leave, and what it does not define does not come back:
/// `referenceTaskIds` has no place in the 0.3 proto's message, an unknown member of an answer is
/// dropped, ids and numbers keep their bytes.
#[test]
fn unknown_members_are_dropped_and_copied_values_keep_their_bytes() {
    let body = br#"{"message":{"messageId":"m","role":"ROLE_USER","referenceTaskIds":["t0"],
        "parts":[{"text":"\u00e9","metadata":{"n":123456789012345678901234567890}}]},"tenant":""}"#;
    let r = rest_request_to03(Op::SendMessage, "/message:send", None, body).unwrap();
    let text = String::from_utf8(r.body).unwrap();
    assert!(
        !text.contains("referenceTaskIds") && !text.contains("tenant"),
        "{text}"
    );
    assert!(text.contains(r#""text":"\u00e9""#), "{text}");
    assert!(text.contains("123456789012345678901234567890"), "{text}");
    let answer = br#"{"task":{"id":"t","status":{"state":"TASK_STATE_WORKING"},"surprise":1,
        "history":[{"messageId":"m","role":"ROLE_USER","kind":"message","content":[{"text":"x"}]}]}}"#;
    let a = rest_answer_to10(Op::SendMessage, 201, answer)
        .unwrap()
        .unwrap();
    let text = String::from_utf8(a.json).unwrap();
    assert!(
        !text.contains("surprise") && !text.contains("kind"),
        "{text}"
    );
    assert_eq!(a.status, 200);
    // A JSON-RPC 0.3 object is no HTTP+JSON answer.
    let rpc = br#"{"kind":"task","id":"t","status":{"state":"working"}}"#;
    assert!(rest_answer_to10(Op::SendMessage, 200, rpc).is_err());
}

#[test]
fn an_error_body_over_the_tree_budget_is_not_parsed_and_passes_as_it_came() {
    // Read up to the answer cap like any answer: parsing it would build the tree the budget
    // refuses everywhere else.
    let huge = format!(r#"{{"message":"boom","pad":[{}0]}}"#, "0,".repeat(1 << 20));
    assert!(
        rest_answer_to10(Op::SendMessage, 500, huge.as_bytes())
            .unwrap()
            .is_none()
    );
    let small = rest_answer_to10(Op::SendMessage, 500, br#"{"message":"boom"}"#).unwrap();
    assert!(small.is_some_and(|a| a.error));
}

#[test]
fn whitespace_of_any_kind_around_an_answer_or_event_is_not_the_answer() {
    let task = r#"{"task":{"id":"t","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"}}}"#;
    for pad in ["\u{c}", "\n\u{a0}", "\u{2028} "] {
        let body = format!("{pad}{task}{pad}");
        let a = rest_answer_to10(Op::SendMessage, 200, body.as_bytes())
            .unwrap()
            .unwrap();
        let v: Value = serde_json::from_slice(&a.json).unwrap();
        assert_eq!(v["task"]["id"], "t", "{pad:?}");
        let e = rest_event_to10(Op::SendStreamingMessage, body.as_bytes()).unwrap();
        assert!(!e.error, "{pad:?}");
    }
}
