//! Golden and property tests of the JSON-RPC ⇄ gRPC translation (`grpc`), with the generated
//! types as the oracle: what the translator encodes is decoded with them, and what it answers is
//! built from them.

use a2a_pb::protojson as pb;
use prost::Message;
use serde_json::{Value, json};

use super::Op;
use super::TranslateError;
use super::grpc::{
    Status, answer_to_rest, answer_to_rpc, op_of_path, path, request_to_pb, rest_request_to_pb,
    status_to_rest, status_to_rpc, streams,
};

fn rpc(method: &str, params: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
        .unwrap()
}

fn answer(op: Op, id: &str, m: &impl Message) -> Value {
    serde_json::from_slice(&answer_to_rpc(op, id, &m.encode_to_vec()).unwrap()).unwrap()
}

#[test]
fn every_operation_has_its_rpc_path_and_back() {
    for op in Op::ALL {
        assert!(path(op).starts_with("/lf.a2a.v1.A2AService/"), "{op:?}");
        // The rpc is named as the JSON-RPC method is.
        assert_eq!(path(op).rsplit('/').next(), Some(op.as_str()));
        assert_eq!(op_of_path(path(op)), Some(op));
    }
    assert_eq!(op_of_path("/lf.a2a.v1.A2AService/Nope"), None);
    assert!(streams(Op::SendStreamingMessage) && streams(Op::SubscribeToTask));
    assert!(!streams(Op::SendMessage) && !streams(Op::GetTask));
}

#[test]
fn a_send_message_request_becomes_its_protobuf_message() {
    let body = rpc(
        "SendMessage",
        json!({"tenant": "t1", "message": {"messageId": "m-1", "role": "ROLE_USER",
            "parts": [{"text": "héllo \u{202e}"}, {"data": {"k": [1, "two"]}, "mediaType": "application/json"}],
            "metadata": {"trace": "x"}},
            "configuration": {"acceptedOutputModes": ["text/plain"], "returnImmediately": true}}),
    );
    let req = pb::SendMessageRequest::decode(&request_to_pb(Op::SendMessage, &body).unwrap()[..])
        .unwrap();
    assert_eq!(req.tenant, "t1");
    let m = req.message.unwrap();
    assert_eq!(m.message_id, "m-1");
    assert_eq!(m.role, pb::Role::User as i32);
    assert_eq!(m.parts.len(), 2);
    let back: Value = serde_json::to_value(&m.parts[0]).unwrap();
    assert_eq!(back, json!({"text": "héllo \u{202e}"}));
    let data: Value = serde_json::to_value(&m.parts[1]).unwrap();
    assert_eq!(data["data"], json!({"k": [1.0, "two"]}));
    let c = req.configuration.unwrap();
    assert!(c.return_immediately);
    assert_eq!(c.accepted_output_modes, ["text/plain"]);
}

#[test]
fn members_the_proto_does_not_define_are_dropped_and_wrong_types_refused() {
    let body = rpc(
        "GetTask",
        json!({"id": "t-1", "historyLength": 3, "notInProto": true}),
    );
    let req = pb::GetTaskRequest::decode(&request_to_pb(Op::GetTask, &body).unwrap()[..]).unwrap();
    assert_eq!(req.id, "t-1");
    assert_eq!(req.history_length, Some(3));
    for params in [
        json!({"id": {"x": 1}}),
        json!({"historyLength": "many"}),
        json!([1]),
    ] {
        let e = request_to_pb(Op::GetTask, &rpc("GetTask", params.clone())).unwrap_err();
        assert!(
            matches!(e, TranslateError::Untranslatable { ref field, .. } if field == "params"),
            "{params}: {e:?}"
        );
    }
    assert!(request_to_pb(Op::GetTask, b"not json").is_err());
    // A request without params is the empty message.
    let none = br#"{"jsonrpc":"2.0","id":1,"method":"GetExtendedAgentCard"}"#;
    assert_eq!(request_to_pb(Op::GetExtendedAgentCard, none).unwrap(), b"");
}

#[test]
fn answers_are_json_rpc_answers_with_the_callers_id() {
    let task = crate::testkit::pb::completed_task(None);
    let sent = crate::testkit::pb::send_response(task.clone());
    let v = answer(Op::SendMessage, "\"abc\"", &sent);
    assert_eq!(v["jsonrpc"], "2.0");
    assert_eq!(v["id"], "abc");
    assert_eq!(v["result"]["task"]["id"], "t-1");
    assert_eq!(
        v["result"]["task"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    let v = answer(Op::GetTask, "7", &task);
    assert_eq!(v["id"], 7);
    assert_eq!(v["result"]["contextId"], "c-1");
    let event = pb::StreamResponse {
        payload: Some(pb::stream_response::Payload::StatusUpdate(
            pb::TaskStatusUpdateEvent {
                task_id: "t-1".into(),
                ..Default::default()
            },
        )),
    };
    let v = answer(Op::SubscribeToTask, "null", &event);
    assert_eq!(v["result"]["statusUpdate"]["taskId"], "t-1");
    let deleted = answer_to_rpc(Op::DeletePushConfig, "1", b"").unwrap();
    assert_eq!(deleted, br#"{"jsonrpc":"2.0","id":1,"result":null}"#);
    // Bytes that are not the response message are refused, never passed on.
    let e = answer_to_rpc(Op::GetTask, "1", &[0xff, 0xff, 0xff]).unwrap_err();
    assert!(matches!(e, TranslateError::Untranslatable { ref field, .. } if field == "result"));
}

/// A message whose decoded form would be far larger than its bytes (many empty submessages) is
/// refused before it is decoded; one large text field is not.
#[test]
fn an_answer_that_would_decode_into_too_many_structs_is_refused_unbuilt() {
    let many = pb::Task {
        history: vec![pb::Message::default(); super::grpc::MAX_FIELDS + 1],
        ..Default::default()
    }
    .encode_to_vec();
    assert!(many.len() < 1 << 20, "{} bytes on the wire", many.len());
    let e = answer_to_rpc(Op::GetTask, "1", &many).unwrap_err();
    assert!(matches!(e, TranslateError::TooLarge { .. }), "{e:?}");
    let text = pb::Task {
        id: "t".into(),
        artifacts: vec![pb::Artifact {
            parts: vec![pb::Part {
                content: Some(pb::part::Content::Text("y".repeat(4 << 20))),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
    .encode_to_vec();
    assert!(answer_to_rpc(Op::GetTask, "1", &text).is_ok());
}

fn status_with(reason: &str, domain: &str) -> Vec<u8> {
    let info = tonic_types::pb::ErrorInfo {
        reason: reason.into(),
        domain: domain.into(),
        metadata: [("taskId".to_owned(), "t-9".to_owned())].into(),
    };
    tonic_types::pb::Status {
        code: 9,
        message: "m".into(),
        details: vec![prost_types::Any {
            type_url: "type.googleapis.com/google.rpc.ErrorInfo".into(),
            value: info.encode_to_vec(),
        }],
    }
    .encode_to_vec()
}

fn error(code: i32, details: &[u8]) -> Value {
    let s = Status {
        code,
        message: "the agent's words \"quoted\"",
        details,
    };
    serde_json::from_slice::<Value>(&status_to_rpc(Op::GetTask, "\"r\"", s)).unwrap()
}

#[test]
fn grpc_errors_become_the_json_rpc_errors_of_their_error_info() {
    for (reason, code) in [
        ("TASK_NOT_FOUND", -32001),
        ("TASK_NOT_CANCELABLE", -32002),
        ("UNSUPPORTED_OPERATION", -32004),
        ("EXTENSION_SUPPORT_REQUIRED", -32008),
        ("VERSION_NOT_SUPPORTED", -32009),
        ("INVALID_PARAMS", -32602),
    ] {
        let v = error(9, &status_with(reason, "a2a-protocol.org"));
        assert_eq!(v["id"], "r");
        assert_eq!(v["error"]["code"], code, "{reason}");
        assert_eq!(v["error"]["message"], "the agent's words \"quoted\"");
        assert_eq!(
            v["error"]["data"],
            json!([{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason,
                "domain": "a2a-protocol.org", "metadata": {"taskId": "t-9"}}])
        );
    }
    // Another domain's reason does not name an A2A error: the gRPC code decides (it is kept).
    let v = error(5, &status_with("TASK_NOT_CANCELABLE", "example.com"));
    assert_eq!(v["error"]["code"], -32001);
    assert_eq!(v["error"]["data"][0]["domain"], "example.com");
    // Without details, the code alone.
    for (grpc, code) in [
        (5, -32001),
        (3, -32602),
        (12, -32601),
        (13, -32603),
        (2, -32603),
    ] {
        let v = error(grpc, b"");
        assert_eq!(v["error"]["code"], code, "gRPC {grpc}");
        assert!(v["error"].get("data").is_none());
    }
    // A server without a streaming rpc refuses it as UnsupportedOperationError (downgraded).
    let s = Status {
        code: 12,
        message: "Method not implemented!",
        details: b"",
    };
    let v: Value =
        serde_json::from_slice(&status_to_rpc(Op::SendStreamingMessage, "1", s)).unwrap();
    assert_eq!(v["error"]["code"], -32004);
    // The other name a2a-lf reads for a reason.
    assert_eq!(
        error(
            9,
            &status_with("UNSUPPORTED_CONTENT_TYPE", "a2a-protocol.org")
        )["error"]["code"],
        -32005
    );
    // Details that are not a Status are left out, the code still answers.
    assert_eq!(error(5, &[0xff, 0x01])["error"]["code"], -32001);
}

#[test]
fn http_json_requests_take_their_route_query_and_tenant_into_the_message() {
    let b = rest_request_to_pb(
        Op::GetTask,
        "/tasks/t%2F1",
        Some("historyLength=2&x=1"),
        b"",
        Some("acme"),
    )
    .unwrap();
    let r = pb::GetTaskRequest::decode(&b[..]).unwrap();
    assert_eq!(
        (r.id.as_str(), r.history_length, r.tenant.as_str()),
        ("t/1", Some(2), "acme")
    );
    let b = rest_request_to_pb(
        Op::CancelTask,
        "/tasks/t-2:cancel",
        None,
        br#"{"metadata":{"k":"v"}}"#,
        None,
    )
    .unwrap();
    assert_eq!(pb::CancelTaskRequest::decode(&b[..]).unwrap().id, "t-2");
    let b = rest_request_to_pb(
        Op::GetPushConfig,
        "/tasks/t-3/pushNotificationConfigs/p-1",
        None,
        b"",
        None,
    )
    .unwrap();
    let r = pb::GetTaskPushNotificationConfigRequest::decode(&b[..]).unwrap();
    assert_eq!((r.task_id.as_str(), r.id.as_str()), ("t-3", "p-1"));
    let b = rest_request_to_pb(
        Op::ListTasks,
        "/tasks",
        Some("pageSize=5&includeArtifacts=true&status=TASK_STATE_WORKING"),
        b"",
        None,
    )
    .unwrap();
    let r = pb::ListTasksRequest::decode(&b[..]).unwrap();
    assert_eq!(r.page_size, Some(5));
    assert_eq!(r.include_artifacts, Some(true));
    assert_eq!(r.status, pb::TaskState::Working as i32);
    for q in ["pageSize=five", "includeArtifacts=yes"] {
        let e = rest_request_to_pb(Op::ListTasks, "/tasks", Some(q), b"", None).unwrap_err();
        assert!(
            matches!(e, TranslateError::Untranslatable { .. }),
            "{q}: {e:?}"
        );
    }
    assert!(rest_request_to_pb(Op::SendMessage, "/message:send", None, b"[1]", None).is_err());
}

#[test]
fn http_json_answers_are_the_messages_and_errors_the_status_of_their_a2a_error() {
    let task = pb::Task {
        id: "t".into(),
        ..Default::default()
    };
    let v: Value =
        serde_json::from_slice(&answer_to_rest(Op::GetTask, &task.encode_to_vec()).unwrap())
            .unwrap();
    assert_eq!(v, json!({"id": "t"}));
    assert_eq!(answer_to_rest(Op::DeletePushConfig, b"").unwrap(), b"{}");
    for (reason, grpc, http, name) in [
        ("TASK_NOT_FOUND", 5, 404, "NOT_FOUND"),
        ("TASK_NOT_CANCELABLE", 9, 400, "FAILED_PRECONDITION"),
        ("INVALID_AGENT_RESPONSE", 13, 500, "INTERNAL"),
    ] {
        let details = status_with(reason, "a2a-protocol.org");
        let s = Status {
            code: grpc,
            message: "m",
            details: &details,
        };
        let (status, body) = status_to_rest(Op::GetTask, s);
        assert_eq!(status, http, "{reason}");
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["error"]["code"], http);
        assert_eq!(v["error"]["status"], name);
        assert_eq!(v["error"]["details"][0]["reason"], reason);
    }
}

mod props {
    use proptest::prelude::*;

    use super::*;
    use crate::testkit::hostile::hostile_string;

    proptest! {
        /// Hostile text (multi-byte, control, bidi) crosses to protobuf and back unchanged, and a
        /// second pass changes nothing: the translation is the identity on what both can say.
        #[test]
        fn text_and_ids_cross_unchanged(text in hostile_string(), id in hostile_string()) {
            let body = rpc("SendMessage", json!({"message": {"messageId": id, "role": "ROLE_USER",
                "parts": [{"text": text}]}}));
            let pb_bytes = request_to_pb(Op::SendMessage, &body).unwrap();
            let req = pb::SendMessageRequest::decode(&pb_bytes[..]).unwrap();
            let m = req.message.clone().unwrap();
            prop_assert_eq!(&m.message_id, &id);
            let again = rpc("SendMessage", serde_json::to_value(&req).unwrap());
            prop_assert_eq!(request_to_pb(Op::SendMessage, &again).unwrap(), pb_bytes);
            let echoed = pb::SendMessageResponse {
                payload: Some(pb::send_message_response::Payload::Message(m)),
            };
            let v = answer(Op::SendMessage, "1", &echoed);
            prop_assert_eq!(v["result"]["message"]["parts"][0]["text"].as_str(), Some(text.as_str()));
        }
    }
}
