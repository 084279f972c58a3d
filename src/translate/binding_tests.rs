//! 1.0 JSON-RPC ⇄ HTTP+JSON: golden requests for every operation, answers, events and errors
//! both ways, and the round trip of a request as a property over hostile strings.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::Op;
use super::binding::{
    gateway_id, rest_answer_to_rpc, rest_event_to_rpc, rest_request_to_rpc, rpc_answer_to_rest,
    rpc_event_to_rest, rpc_request_to_rest,
};

/// The id of the gateway's own JSON-RPC requests in these tests.
const GATEWAY: &str = "\"a2a-egress-r1\"";

fn rpc(method: &str, params: Value) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
        .to_string()
        .into_bytes()
}

fn parsed(b: &[u8]) -> Value {
    serde_json::from_slice(b).unwrap()
}

/// One golden request: the operation, its JSON-RPC params, and the HTTP+JSON method, path and
/// body (`null`: none).
type RouteCase = (Op, Value, &'static str, &'static str, Value);

/// The message and task operations' golden requests.
fn route_cases() -> Vec<RouteCase> {
    let msg = json!({"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]});
    vec![
        (
            Op::SendMessage,
            json!({"tenant": "t 1/x", "message": msg, "metadata": {"n": 1}}),
            "POST",
            "/t%201%2Fx/message:send",
            json!({"message": msg, "metadata": {"n": 1}}),
        ),
        (
            Op::SendStreamingMessage,
            json!({"message": msg}),
            "POST",
            "/message:stream",
            json!({"message": msg}),
        ),
        (
            Op::GetTask,
            json!({"id": "tâsk 1", "historyLength": 3}),
            "GET",
            "/tasks/t%C3%A2sk%201?historyLength=3",
            Value::Null,
        ),
        (
            Op::ListTasks,
            json!({"contextId": "c&1", "status": "TASK_STATE_WORKING", "pageSize": "20",
                   "includeArtifacts": true, "unknown": 1}),
            "GET",
            "/tasks?contextId=c%261&status=TASK_STATE_WORKING&pageSize=20&includeArtifacts=true",
            Value::Null,
        ),
        (
            Op::CancelTask,
            json!({"id": "t1", "metadata": {"why": "done"}}),
            "POST",
            "/tasks/t1:cancel",
            json!({"metadata": {"why": "done"}}),
        ),
        (
            Op::SubscribeToTask,
            json!({"id": "t"}),
            "POST",
            "/tasks/t:subscribe",
            Value::Null,
        ),
    ]
}

/// The push config operations' golden requests, and the extended card's.
fn push_cases() -> Vec<RouteCase> {
    vec![
        (
            Op::CreatePushConfig,
            json!({"taskId": "t1", "id": "c1", "url": "https://h/p"}),
            "POST",
            "/tasks/t1/pushNotificationConfigs",
            json!({"id": "c1", "url": "https://h/p"}),
        ),
        (
            Op::GetPushConfig,
            json!({"taskId": "t1", "id": "c1"}),
            "GET",
            "/tasks/t1/pushNotificationConfigs/c1",
            Value::Null,
        ),
        (
            Op::ListPushConfigs,
            json!({"taskId": "t1", "pageSize": 5, "pageToken": "p"}),
            "GET",
            "/tasks/t1/pushNotificationConfigs?pageSize=5&pageToken=p",
            Value::Null,
        ),
        (
            Op::DeletePushConfig,
            json!({"taskId": "t1", "id": "c1"}),
            "DELETE",
            "/tasks/t1/pushNotificationConfigs/c1",
            Value::Null,
        ),
        (
            Op::GetExtendedAgentCard,
            json!({}),
            "GET",
            "/extendedAgentCard",
            Value::Null,
        ),
    ]
}

/// Every operation's route, method, query and body from its JSON-RPC params.
#[test]
fn every_json_rpc_request_has_its_route() {
    for (op, params, method, path, body) in route_cases().into_iter().chain(push_cases()) {
        let call = rpc_request_to_rest(op, &rpc(op.as_str(), params)).unwrap();
        assert_eq!(
            (call.method, call.path().as_str()),
            (method, path),
            "{op:?}"
        );
        if body.is_null() {
            assert!(call.body.is_empty(), "{op:?}: {:?}", call.body);
        } else {
            assert_eq!(parsed(&call.body), body, "{op:?}");
        }
    }
}

/// What a route needs and cannot be said is refused, naming the member, before anything leaves.
#[test]
fn a_json_rpc_request_missing_what_the_route_needs_is_refused() {
    let missing = rpc_request_to_rest(Op::GetTask, &rpc("GetTask", json!({}))).unwrap_err();
    assert_eq!(missing.to_string(), "params.id is required");
    let bad = rpc_request_to_rest(
        Op::GetTask,
        &rpc("GetTask", json!({"id": "t", "historyLength": 1.5})),
    )
    .unwrap_err();
    assert_eq!(bad.to_string(), "params.historyLength is not an integer");
    let twice =
        br#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{},"message":{}}}"#;
    let e = rpc_request_to_rest(Op::SendMessage, twice).unwrap_err();
    assert_eq!(e.to_string(), "params has a key that appears twice");
    assert!(rpc_request_to_rest(Op::SendMessage, &rpc("SendMessage", json!(null))).is_err());
}

/// Copied values keep their bytes: a number beyond f64 and an escaped string pass as written.
#[test]
fn copied_values_keep_their_bytes() {
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"metadata":{"n":123456789012345678901234567890,"s":"\u00e9\ud83d\ude00"},"message":{"messageId":"m"}}}"#;
    let call = rpc_request_to_rest(Op::SendMessage, body).unwrap();
    let text = String::from_utf8(call.body).unwrap();
    assert!(text.contains("123456789012345678901234567890"), "{text}");
    assert!(text.contains(r#""\u00e9\ud83d\ude00""#), "{text}");
    let rpc = rest_request_to_rpc(
        Op::SendMessage,
        "/message:send",
        None,
        text.as_bytes(),
        None,
        "1",
    )
    .unwrap();
    let back = String::from_utf8(rpc).unwrap();
    assert!(back.contains("123456789012345678901234567890"), "{back}");
}

/// An HTTP+JSON request as the JSON-RPC one: path and query members typed, the tenant set,
/// what the path says winning over the body, the gateway's id.
#[test]
fn every_http_json_request_has_its_json_rpc_params() {
    let cases: Vec<(Op, &str, Option<&str>, &str, Value)> = vec![
        (
            Op::SendMessage,
            "/message:send",
            None,
            r#"{"message":{"messageId":"m"},"tenant":"other"}"#,
            json!({"message": {"messageId": "m"}, "tenant": "t1"}),
        ),
        (
            Op::GetTask,
            "/tasks/t%201",
            Some("historyLength=2&x=1"),
            "",
            json!({"id": "t 1", "historyLength": 2, "tenant": "t1"}),
        ),
        (
            Op::ListTasks,
            "/tasks",
            Some("includeArtifacts=false&status=TASK_STATE_WORKING&pageSize=3"),
            "",
            json!({"includeArtifacts": false, "status": "TASK_STATE_WORKING", "pageSize": 3, "tenant": "t1"}),
        ),
        (
            Op::CancelTask,
            "/tasks/t1:cancel",
            None,
            r#"{"id":"spoofed","metadata":{}}"#,
            json!({"id": "t1", "metadata": {}, "tenant": "t1"}),
        ),
        (
            Op::DeletePushConfig,
            "/tasks/t1/pushNotificationConfigs/c%2F1",
            None,
            "",
            json!({"taskId": "t1", "id": "c/1", "tenant": "t1"}),
        ),
    ];
    for (op, path, query, body, params) in cases {
        let out =
            rest_request_to_rpc(op, path, query, body.as_bytes(), Some("t1"), GATEWAY).unwrap();
        let v = parsed(&out);
        assert_eq!(v["jsonrpc"], "2.0");
        assert_eq!(v["id"], "a2a-egress-r1");
        assert_eq!(v["method"], op.as_str());
        assert_eq!(v["params"], params, "{op:?}");
    }
    let e = rest_request_to_rpc(
        Op::GetTask,
        "/tasks/t",
        Some("historyLength=x"),
        b"",
        None,
        "1",
    )
    .unwrap_err();
    assert_eq!(e.to_string(), "query.historyLength is not an integer");
}

/// Answers and errors from an HTTP+JSON agent, as a JSON-RPC caller's.
#[test]
fn http_json_answers_become_json_rpc_answers() {
    let (status, body) = rest_answer_to_rpc(
        Op::GetTask,
        "\"c-1\"",
        200,
        br#"{"id":"t","n":123456789012345678901234567890}"#,
    )
    .unwrap()
    .unwrap();
    assert_eq!(status, 200);
    assert_eq!(
        String::from_utf8(body).unwrap(),
        r#"{"jsonrpc":"2.0","id":"c-1","result":{"id":"t","n":123456789012345678901234567890}}"#
    );
    let (_, deleted) = rest_answer_to_rpc(Op::DeletePushConfig, "1", 204, b"")
        .unwrap()
        .unwrap();
    assert_eq!(parsed(&deleted)["result"], Value::Null);
    let info = json!([{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                       "reason": "TASK_NOT_CANCELABLE", "domain": "a2a-protocol.org"}]);
    let status_body = json!({"error": {"code": 400, "status": "FAILED_PRECONDITION",
                                       "message": "no", "details": info}});
    let (status, e) =
        rest_answer_to_rpc(Op::CancelTask, "1", 400, status_body.to_string().as_bytes())
            .unwrap()
            .unwrap();
    assert_eq!(status, 200);
    let e = parsed(&e);
    assert_eq!(
        e["error"],
        json!({"code": -32002, "message": "no", "data": info})
    );
    // Without an ErrorInfo, the code name decides.
    let bare = json!({"error": {"code": 404, "status": "NOT_FOUND", "message": "gone"}});
    let (_, e) = rest_answer_to_rpc(Op::GetTask, "1", 404, bare.to_string().as_bytes())
        .unwrap()
        .unwrap();
    assert_eq!(parsed(&e)["error"]["code"], -32001);
    let unimpl = json!({"error": {"code": 501, "status": "UNIMPLEMENTED", "message": "x"}});
    let (_, e) = rest_answer_to_rpc(
        Op::SendStreamingMessage,
        "1",
        501,
        unimpl.to_string().as_bytes(),
    )
    .unwrap()
    .unwrap();
    assert_eq!(parsed(&e)["error"]["code"], -32004);
    // No A2A answer: passes as it came.
    assert_eq!(
        rest_answer_to_rpc(Op::GetTask, "1", 502, b"<html>bad gateway</html>").unwrap(),
        None
    );
    assert_eq!(
        rest_answer_to_rpc(Op::GetTask, "1", 401, b"").unwrap(),
        None
    );
    assert_eq!(
        rest_answer_to_rpc(Op::GetTask, "1", 302, b"").unwrap(),
        None
    );
    // A 2xx body that is no object cannot be a result.
    assert!(rest_answer_to_rpc(Op::GetTask, "1", 200, b"[1]").is_err());
    assert!(rest_answer_to_rpc(Op::GetTask, "1", 200, b"{} {}").is_err());
    assert!(rest_answer_to_rpc(Op::GetTask, "1", 200, br#"{"a":1},"error":{}"#).is_err());
}

/// Answers and errors from a JSON-RPC agent, as an HTTP+JSON caller's.
#[test]
fn json_rpc_answers_become_http_json_answers() {
    let ok = br#"{"jsonrpc":"2.0","id":"a2a-egress-r1","result":{"task":{"id":"t"}}}"#;
    let (status, body) = rpc_answer_to_rest(200, GATEWAY, ok).unwrap();
    assert_eq!((status, &body[..]), (200, &br#"{"task":{"id":"t"}}"#[..]));
    let null = br#"{"jsonrpc":"2.0","id":"a2a-egress-r1","result":null}"#;
    assert_eq!(
        rpc_answer_to_rest(200, GATEWAY, null).unwrap(),
        (200, b"{}".to_vec())
    );
    // An error without ErrorInfo gains the one A2A requires over HTTP+JSON.
    let e =
        br#"{"jsonrpc":"2.0","id":"a2a-egress-r1","error":{"code":-32001,"message":"no task"}}"#;
    let (status, body) = rpc_answer_to_rest(200, GATEWAY, e).unwrap();
    assert_eq!(status, 404);
    assert_eq!(
        parsed(&body),
        json!({"error": {"code": 404, "status": "NOT_FOUND", "message": "no task", "details": [
            {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "TASK_NOT_FOUND",
             "domain": "a2a-protocol.org"}]}})
    );
    let other =
        br#"{"jsonrpc":"2.0","id":"a2a-egress-r1","error":{"code":-32099,"message":"own"}}"#;
    let (status, body) = rpc_answer_to_rest(200, GATEWAY, other).unwrap();
    assert_eq!(status, 500);
    assert_eq!(parsed(&body)["error"]["status"], "INTERNAL");
    assert!(parsed(&body)["error"].get("details").is_none());
    // Another request's answer, both members, neither, no 2.0: refused.
    for bad in [
        &br#"{"jsonrpc":"2.0","id":"x","result":{}}"#[..],
        br#"{"jsonrpc":"2.0","id":"a2a-egress-r1","result":{},"error":{"code":1,"message":""}}"#,
        br#"{"jsonrpc":"2.0","id":"a2a-egress"}"#,
        br#"{"jsonrpc":"1.0","id":"a2a-egress-r1","result":{}}"#,
    ] {
        assert!(
            rpc_answer_to_rest(200, GATEWAY, bad).is_err(),
            "{}",
            String::from_utf8_lossy(bad)
        );
    }
}

/// Stream events both ways; an error event is the last.
#[test]
fn events_move_both_ways() {
    let ev = br#"{"statusUpdate":{"taskId":"t","status":{"state":"TASK_STATE_WORKING"}}}"#;
    let t = rest_event_to_rpc(Op::SendStreamingMessage, "\"s\"", ev).unwrap();
    assert!(!t.last && !t.error);
    let v = parsed(&t.json);
    assert_eq!(v["id"], "s");
    assert_eq!(v["result"]["statusUpdate"]["taskId"], "t");
    let back = rpc_event_to_rest("\"s\"", &t.json).unwrap();
    assert_eq!(back.json, ev.to_vec());

    let err = json!({"error": {"code": 400, "status": "FAILED_PRECONDITION", "message": "m",
        "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                     "reason": "UNSUPPORTED_OPERATION", "domain": "a2a-protocol.org"}]}});
    let t = rest_event_to_rpc(Op::SubscribeToTask, "1", err.to_string().as_bytes()).unwrap();
    assert!(t.last && t.error);
    assert_eq!(parsed(&t.json)["error"]["code"], -32004);
    let back = rpc_event_to_rest("1", &t.json).unwrap();
    assert!(back.last && back.error);
    assert_eq!(parsed(&back.json), err);
    assert!(rpc_event_to_rest("1", br#"{"jsonrpc":"2.0","id":1,"result":"x"}"#).is_err());
    assert!(rest_event_to_rpc(Op::SendStreamingMessage, "1", b"[]").is_err());
}

/// Strings as a hostile caller writes them: multi-byte, control, bidi and quote characters.
fn hostile() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            any::<char>(),
            Just('\u{202E}'),
            Just('\u{0007}'),
            Just('"'),
            Just('/'),
            Just('?'),
            Just('%'),
            Just('é'),
            Just('😀'),
        ],
        1..12,
    )
    .prop_map(|c| c.into_iter().collect())
}

proptest! {
    /// JSON-RPC → HTTP+JSON → JSON-RPC is the identity on the members both bindings carry, for
    /// ids, tenants and query values of any characters.
    #[test]
    fn a_request_survives_the_round_trip(
        id in hostile(),
        tenant in proptest::option::of(hostile()),
        context in hostile(),
        history in proptest::option::of(0i64..1_000_000),
        which in 0usize..4,
    ) {
        let (op, mut params) = match which {
            0 => (Op::GetTask, json!({"id": id})),
            1 => (Op::ListTasks, json!({"contextId": context, "includeArtifacts": true})),
            2 => (Op::CancelTask, json!({"id": id, "metadata": {"k": context}})),
            _ => (Op::DeletePushConfig, json!({"taskId": id, "id": context})),
        };
        if let (Some(h), Op::GetTask | Op::ListTasks) = (history, op) {
            params["historyLength"] = json!(h);
        }
        if let Some(t) = &tenant {
            params["tenant"] = json!(t);
        }
        assert_eq!(gateway_id("r1"), GATEWAY);
        let segments = [&id, &context];
        let one_segment = |s: &String| {
            !(s.contains('/') || s == "." || s == ".." || s.ends_with(":cancel"))
        };
        let in_path = match op {
            Op::GetTask | Op::CancelTask => &segments[..1],
            Op::DeletePushConfig => &segments[..],
            _ => &[],
        };
        let made = rpc_request_to_rest(op, &rpc(op.as_str(), params.clone()));
        if !in_path.iter().all(|s| one_segment(s)) {
            prop_assert!(made.is_err());
            return Ok(());
        }
        let call = made.unwrap();
        let back = rest_request_to_rpc(
            op, &call.route, call.query.as_deref(), &call.body, call.tenant.as_deref(), "1",
        ).unwrap();
        prop_assert_eq!(&parsed(&back)["params"], &params);
    }
}

/// What a path segment cannot carry without naming another route is refused; an empty tenant is
/// none; a route's own verb is taken off once; snake_case members and an absent `params` read as
/// ProtoJSON readers take them.
#[test]
fn route_confusion_is_refused() {
    for id in ["", ".", "..", "a/b", "x:cancel", "x:subscribe"] {
        let e = rpc_request_to_rest(Op::GetTask, &rpc("GetTask", json!({"id": id}))).unwrap_err();
        assert_eq!(
            e.to_string(),
            "params.id cannot be one path segment of the HTTP+JSON route",
            "{id:?}"
        );
    }
    let call = rpc_request_to_rest(
        Op::GetTask,
        &rpc("GetTask", json!({"id": "t", "tenant": ""})),
    )
    .unwrap();
    assert_eq!(call.path(), "/tasks/t");
    let call = rpc_request_to_rest(
        Op::ListPushConfigs,
        &rpc(
            "ListTaskPushNotificationConfigs",
            json!({"task_id": "t", "page_size": 2}),
        ),
    )
    .unwrap();
    assert_eq!(call.path(), "/tasks/t/pushNotificationConfigs?pageSize=2");
    let bare = br#"{"jsonrpc":"2.0","id":1,"method":"ListTasks"}"#;
    assert_eq!(
        rpc_request_to_rest(Op::ListTasks, bare).unwrap().path(),
        "/tasks"
    );
    let out = rest_request_to_rpc(
        Op::CancelTask,
        "/tasks/a:cancel:cancel",
        None,
        b"",
        None,
        "1",
    )
    .unwrap();
    assert_eq!(parsed(&out)["params"]["id"], "a:cancel");
    let e = rest_request_to_rpc(
        Op::GetTask,
        "/tasks/t",
        Some("historyLength=1&historyLength=500"),
        b"",
        None,
        "1",
    )
    .unwrap_err();
    assert_eq!(e.to_string(), "query.historyLength appears twice");
}

/// HTTP-level statuses cross as they came; a JSON-RPC agent's 401 stays one; an error with a
/// null id is the agent's; a framework's `{"detail"}` is MethodNotFound; an empty success is
/// not a result unless the binding lets it be; a `data` that only mentions ErrorInfo gains one.
#[test]
fn edges_of_the_error_mapping() {
    let status = json!({"error": {"code": 401, "status": "UNAUTHENTICATED", "message": "who"}});
    let body = status.to_string();
    assert_eq!(
        rest_answer_to_rpc(Op::GetTask, "1", 401, body.as_bytes()).unwrap(),
        None
    );
    assert_eq!(
        rest_answer_to_rpc(Op::GetTask, "1", 429, b"slow down").unwrap(),
        None
    );
    let auth = br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32099,"message":"who"}}"#;
    let (status, body) = rpc_answer_to_rest(401, GATEWAY, auth).unwrap();
    assert_eq!(status, 401);
    assert_eq!(parsed(&body)["error"]["status"], "UNAUTHENTICATED");
    let (_, e) = rest_answer_to_rpc(Op::GetTask, "1", 404, br#"{"detail":"Not Found"}"#)
        .unwrap()
        .unwrap();
    assert_eq!(
        parsed(&e)["error"],
        json!({"code": -32601, "message": "Not Found"})
    );
    assert!(rest_answer_to_rpc(Op::SendMessage, "1", 200, b"").is_err());
    assert!(
        rest_answer_to_rpc(Op::SendMessage, "1", 204, b"")
            .unwrap()
            .is_some()
    );
    let mention = br#"{"jsonrpc":"2.0","id":"a2a-egress-r1","error":{"code":-32001,"message":"m","data":["google.rpc.ErrorInfo"]}}"#;
    let (_, body) = rpc_answer_to_rest(200, GATEWAY, mention).unwrap();
    assert_eq!(
        parsed(&body)["error"]["details"][0]["reason"],
        "TASK_NOT_FOUND"
    );
    let both = br#"{"jsonrpc":"2.0","id":"a2a-egress-r1","result":{},"error":null}"#;
    assert!(rpc_answer_to_rest(200, GATEWAY, both).is_err());
    let both = br#"{"task":{"id":"t"},"error":{"code":500,"message":"x"}}"#;
    assert!(rest_event_to_rpc(Op::SendStreamingMessage, "1", both).is_err());
}
