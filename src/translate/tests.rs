//! Golden translations for every method, object, part kind, enum and error, both directions.

use serde_json::{Value, json};

use super::*;

fn to03(op: Op, body: Value) -> Value {
    let out = request_to03(op, body.to_string().as_bytes()).unwrap();
    serde_json::from_slice(&out).unwrap()
}

fn req(method: &str, params: Value) -> Value {
    json!({"jsonrpc":"2.0","id":7,"method":method,"params":params})
}

fn answer(op: Op, result: Value) -> Value {
    let body = json!({"jsonrpc":"2.0","id":7,"result":result}).to_string();
    let t = answer_to10(op, body.as_bytes()).unwrap();
    assert!(!t.error && !t.last);
    serde_json::from_slice::<Value>(&t.json).unwrap()["result"].clone()
}

fn error(op: Op, error: Value) -> Value {
    let body = json!({"jsonrpc":"2.0","id":"x","error":error}).to_string();
    let t = answer_to10(op, body.as_bytes()).unwrap();
    assert!(t.error);
    serde_json::from_slice::<Value>(&t.json).unwrap()["error"].clone()
}

fn message10() -> Value {
    json!({"messageId":"m1","contextId":"c1","taskId":"t1","role":"ROLE_USER",
        "parts":[
            {"text":"hi","metadata":{"k":1}},
            {"raw":"aGk=","mediaType":"image/png","filename":"a.png"},
            {"url":"https://x.example/a.pdf","mediaType":"application/pdf"},
            {"data":{"n":1},"metadata":{}}
        ],
        "metadata":{"m":true},"extensions":["urn:e"],"referenceTaskIds":["t0"]})
}

fn message03() -> Value {
    json!({"kind":"message","messageId":"m1","contextId":"c1","taskId":"t1","role":"user",
        "parts":[
            {"kind":"text","text":"hi","metadata":{"k":1}},
            {"kind":"file","file":{"bytes":"aGk=","mimeType":"image/png","name":"a.png"}},
            {"kind":"file","file":{"uri":"https://x.example/a.pdf","mimeType":"application/pdf"}},
            {"kind":"data","data":{"n":1},"metadata":{}}
        ],
        "metadata":{"m":true},"extensions":["urn:e"],"referenceTaskIds":["t0"]})
}

#[test]
fn send_message_request() {
    let got = to03(
        Op::SendMessage,
        req(
            "SendMessage",
            json!({"tenant":"","message":message10(),
                "configuration":{"acceptedOutputModes":["text/plain"],"historyLength":3,
                    "returnImmediately":true,
                    "taskPushNotificationConfig":{"url":"https://hook.example/","token":"tk",
                        "authentication":{"scheme":"Bearer","credentials":"c"}}},
                "metadata":{"z":null}}),
        ),
    );
    assert_eq!(
        got,
        json!({"jsonrpc":"2.0","id":7,"method":"message/send","params":{
            "message":message03(),
            "configuration":{"acceptedOutputModes":["text/plain"],"blocking":false,"historyLength":3,
                "pushNotificationConfig":{"url":"https://hook.example/","token":"tk",
                    "authentication":{"schemes":["Bearer"],"credentials":"c"}}},
            "metadata":{"z":null}}})
    );
    // returnImmediately false is blocking true; absent is absent (both versions block).
    let p = |c: Value| {
        to03(
            Op::SendStreamingMessage,
            req(
                "SendStreamingMessage",
                json!({"message":message10(),"configuration":c}),
            ),
        )
    };
    let got = p(json!({"returnImmediately":false}));
    assert_eq!(got["method"], "message/stream");
    assert_eq!(got["params"]["configuration"], json!({"blocking":true}));
    assert_eq!(p(json!({}))["params"]["configuration"], json!({}));
}

#[test]
fn every_other_request() {
    let cases = [
        (
            Op::GetTask,
            json!({"tenant":"t","id":"t1","historyLength":2}),
            "tasks/get",
            json!({"id":"t1","historyLength":2}),
        ),
        // ProtoJSON's quoted int32 is an integer too, written as the number.
        (
            Op::GetTask,
            json!({"id":"t1","historyLength":"2"}),
            "tasks/get",
            json!({"id":"t1","historyLength":2}),
        ),
        (
            Op::CancelTask,
            json!({"id":"t1","metadata":{"a":1}}),
            "tasks/cancel",
            json!({"id":"t1","metadata":{"a":1}}),
        ),
        (
            Op::SubscribeToTask,
            json!({"id":"t1"}),
            "tasks/resubscribe",
            json!({"id":"t1"}),
        ),
        (
            Op::CreatePushConfig,
            json!({"tenant":"","taskId":"t1","id":"p1","url":"https://h.example/","token":"k"}),
            "tasks/pushNotificationConfig/set",
            json!({"taskId":"t1","pushNotificationConfig":{"id":"p1","url":"https://h.example/","token":"k"}}),
        ),
        (
            Op::GetPushConfig,
            json!({"taskId":"t1","id":"p1"}),
            "tasks/pushNotificationConfig/get",
            json!({"id":"t1","pushNotificationConfigId":"p1"}),
        ),
        (
            Op::DeletePushConfig,
            json!({"taskId":"t1","id":"p1"}),
            "tasks/pushNotificationConfig/delete",
            json!({"id":"t1","pushNotificationConfigId":"p1"}),
        ),
        (
            Op::ListPushConfigs,
            json!({"taskId":"t1","pageSize":5,"pageToken":""}),
            "tasks/pushNotificationConfig/list",
            json!({"id":"t1"}),
        ),
        (
            Op::GetExtendedAgentCard,
            json!({"tenant":""}),
            "agent/getAuthenticatedExtendedCard",
            json!({}),
        ),
    ];
    for (op, params, method, want) in cases {
        let got = to03(op, req(op.as_str(), params));
        assert_eq!(got["method"], method, "{op:?}");
        assert_eq!(got["params"], want, "{op:?}");
        assert_eq!(got["id"], 7);
    }
    let bare = json!({"jsonrpc":"2.0","id":1,"method":"GetExtendedAgentCard"});
    assert_eq!(
        to03(Op::GetExtendedAgentCard, bare),
        json!({"jsonrpc":"2.0","id":1,"method":"agent/getAuthenticatedExtendedCard"})
    );
}

#[test]
fn list_tasks_is_not_in_0_3() {
    let e = request_to03(
        Op::ListTasks,
        br#"{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}"#,
    )
    .unwrap_err();
    assert_eq!(
        e,
        TranslateError::NotInVersion {
            method: "ListTasks"
        }
    );
    assert_eq!(method_03(Op::ListTasks), None);
    assert!(e.to_string().contains("A2A 0.3"), "{e}");
}

/// 1.0 data that is not an object travels to 0.3 as the official SDKs send it (`{"value": X}`
/// with `metadata.data_part_compat: true`) and comes back unwrapped, other metadata kept (on
/// main it was refused: "is not an object, which A2A 0.3 requires").
#[test]
fn non_object_data_is_wrapped_as_the_sdks_wrap_it() {
    let m = |parts: Value| json!({"message":{"messageId":"m","role":"ROLE_USER","parts":parts}});
    let sent = to03(
        Op::SendMessage,
        req(
            "SendMessage",
            m(json!([{"data":[1,"x"]},{"data":7,"metadata":{"a":{"b":1}}},{"data":{"k":1}}])),
        ),
    );
    assert_eq!(
        sent["params"]["message"]["parts"],
        json!([
            {"kind":"data","data":{"value":[1,"x"]},"metadata":{"data_part_compat":true}},
            {"kind":"data","data":{"value":7},"metadata":{"a":{"b":1},"data_part_compat":true}},
            {"kind":"data","data":{"k":1}},
        ])
    );
    let back = |part: Value| {
        let msg = json!({"kind":"message","messageId":"r","role":"agent","parts":[part]});
        answer(Op::SendMessage, msg)["message"]["parts"][0].clone()
    };
    assert_eq!(
        back(json!({"kind":"data","data":{"value":[1,"x"]},"metadata":{"data_part_compat":true}})),
        json!({"data":[1,"x"]})
    );
    assert_eq!(
        back(json!({"kind":"data","data":{"value":7},"metadata":{"a":1,"data_part_compat":true}})),
        json!({"data":7,"metadata":{"a":1}})
    );
    // Metadata left empty by the marker's removal is none, as the SDKs read it.
    assert_eq!(
        back(json!({"kind":"data","data":{"value":[]},"metadata":{"data_part_compat":true}})),
        json!({"data":[]})
    );
    // Without the marker (or with it false) the object is the data, `value` member or not.
    for meta in [json!(null), json!({"data_part_compat":false})] {
        let mut p = json!({"kind":"data","data":{"value":1}});
        if !meta.is_null() {
            p["metadata"] = meta.clone();
        }
        assert_eq!(back(p)["data"], json!({"value":1}), "{meta}");
    }
    // As the SDKs read it: any true value marks it, other members of the data are ignored.
    for marker in [json!(1), json!("yes"), json!([0]), json!({"a":1})] {
        let p = json!({"kind":"data","data":{"value":5,"more":2},"metadata":{"data_part_compat":marker}});
        assert_eq!(back(p), json!({"data":5}), "{marker}");
    }
    for marker in [
        json!(0),
        json!(""),
        json!([]),
        json!({}),
        json!(false),
        json!(null),
    ] {
        let p = json!({"kind":"data","data":{"value":5},"metadata":{"data_part_compat":marker}});
        assert_eq!(back(p)["data"], json!({"value":5}), "{marker}");
    }
    // Caller metadata may not carry the marker, whatever the data (a 0.3 reader would unwrap
    // object data `{"value": X}` beside it).
    for data in [json!({"value":5}), json!(5)] {
        let body = req(
            "SendMessage",
            json!({"message":{"messageId":"m","role":"ROLE_USER",
            "parts":[{"data":data,"metadata":{"data_part_compat":true}}]}}),
        );
        let e = request_to03(Op::SendMessage, body.to_string().as_bytes()).unwrap_err();
        assert!(e.to_string().contains("metadata.data_part_compat"), "{e}");
    }
    // The marker with data that has no `value` member is refused, naming the field.
    for data in [json!({}), json!({"v":1})] {
        let part = json!({"kind":"data","data":data,"metadata":{"data_part_compat":true}});
        let msg = json!({"kind":"message","messageId":"r","role":"agent","parts":[part]});
        let body = json!({"jsonrpc":"2.0","id":1,"result":msg}).to_string();
        let e = answer_to10(Op::SendMessage, body.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(e.contains("result.parts[0].data"), "{e}");
    }
}

#[test]
fn what_0_3_cannot_say_is_refused_by_field() {
    let bad = |params: Value| {
        request_to03(
            Op::SendMessage,
            req("SendMessage", params).to_string().as_bytes(),
        )
        .unwrap_err()
        .to_string()
    };
    let m = |parts: Value| json!({"message":{"messageId":"m","role":"ROLE_USER","parts":parts}});
    assert_eq!(
        bad(m(
            json!([{"data":[1],"metadata":{"data_part_compat":false}}])
        )),
        "params.message.parts[0].metadata.data_part_compat is the marker A2A 0.3 uses for wrapped data, so it cannot also be metadata"
    );
    assert_eq!(
        bad(m(json!([{"text":"a"},{"text":"b","url":"u"}]))),
        "params.message.parts[1] has more than one of text, raw, url, data"
    );
    assert_eq!(
        bad(m(json!([{"mediaType":"a/b"}]))),
        "params.message.parts[0] has none of text, raw, url, data"
    );
    assert_eq!(
        bad(json!({"message":{"messageId":"m","role":"ROLE_UNSPECIFIED","parts":[]}})),
        "params.message.role is not ROLE_USER or ROLE_AGENT"
    );
    assert_eq!(
        bad(json!({"message":{"role":"ROLE_USER","parts":[]}})),
        "params.message.messageId is required"
    );
    assert_eq!(bad(json!({})), "params.message is required");
    assert_eq!(
        bad(json!({"message":{"messageId":5,"role":"ROLE_USER","parts":[]}})),
        "params.message.messageId is not a string"
    );
    let dup = br#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"a","id":"b"}}"#;
    assert_eq!(
        request_to03(Op::GetTask, dup).unwrap_err().to_string(),
        "params has a key that appears twice"
    );
}

#[test]
fn a_null_id_stays_null_and_a_missing_one_missing() {
    let b = br#"{"jsonrpc":"2.0","id":null,"method":"GetTask","params":{"id":"t"}}"#;
    let out = request_to03(Op::GetTask, b).unwrap();
    assert!(String::from_utf8(out).unwrap().contains(r#""id":null"#));
    let b = br#"{"jsonrpc":"2.0","method":"GetTask","params":{"id":"t"}}"#;
    let out: Value = serde_json::from_slice(&request_to03(Op::GetTask, b).unwrap()).unwrap();
    assert!(out.get("id").is_none(), "{out}");
}

#[test]
fn numeric_enums_and_agent_role() {
    let got = to03(
        Op::SendMessage,
        req(
            "SendMessage",
            json!({"message":{"messageId":"m","role":2,"parts":[{"text":"x"}]}}),
        ),
    );
    assert_eq!(got["params"]["message"]["role"], "agent");
}

#[test]
fn ids_numbers_and_strings_keep_their_bytes() {
    let body = r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"SendMessage","params":{"message":{"messageId":"\u00e9\ud83d\ude00","role":"ROLE_USER","parts":[{"data":{"n":1.000000000000000000001,"big":98765432109876543210987654321}}]}}}"#;
    let out = String::from_utf8(request_to03(Op::SendMessage, body.as_bytes()).unwrap()).unwrap();
    assert!(
        out.contains(r#""id":123456789012345678901234567890"#),
        "{out}"
    );
    assert!(out.contains(r#""messageId":"\u00e9\ud83d\ude00""#), "{out}");
    assert!(
        out.contains(r#"{"n":1.000000000000000000001,"big":98765432109876543210987654321}"#),
        "{out}"
    );
    let ans = r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"result":{"kind":"task","id":"t","status":{"state":"working"},"metadata":{"x":1e400}}}"#;
    let t = String::from_utf8(answer_to10(Op::GetTask, ans.as_bytes()).unwrap().json).unwrap();
    assert_eq!(
        t,
        r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"result":{"id":"t","status":{"state":"TASK_STATE_WORKING"},"metadata":{"x":1e400}}}"#
    );
}

fn task03() -> Value {
    json!({"kind":"task","id":"t1","contextId":"c1",
        "status":{"state":"input-required","timestamp":"2026-01-01T00:00:00Z",
            "message":{"kind":"message","messageId":"s","role":"agent","parts":[{"kind":"text","text":"more?"}]}},
        "artifacts":[{"artifactId":"a1","name":"n","description":"d","parts":[{"kind":"data","data":{"k":"v"}}],
            "metadata":{},"extensions":["urn:x"]}],
        "history":[message03()],
        "metadata":{"q":1},
        "unknownMember":{"dropped":true}})
}

fn task10() -> Value {
    json!({"id":"t1","contextId":"c1",
        "status":{"state":"TASK_STATE_INPUT_REQUIRED",
            "message":{"messageId":"s","role":"ROLE_AGENT","parts":[{"text":"more?"}]},
            "timestamp":"2026-01-01T00:00:00Z"},
        "artifacts":[{"artifactId":"a1","name":"n","description":"d","parts":[{"data":{"k":"v"}}],
            "metadata":{},"extensions":["urn:x"]}],
        "history":[message10()],
        "metadata":{"q":1}})
}

#[test]
fn results_of_every_method() {
    assert_eq!(answer(Op::SendMessage, task03()), json!({"task":task10()}));
    assert_eq!(
        answer(Op::SendMessage, message03()),
        json!({"message":message10()})
    );
    assert_eq!(answer(Op::GetTask, task03()), task10());
    assert_eq!(answer(Op::CancelTask, task03()), task10());
    let cfg03 = json!({"taskId":"t1","pushNotificationConfig":{"id":"p1","url":"https://h.example/",
        "token":"k","authentication":{"schemes":["Bearer","Basic"],"credentials":"c"}}});
    let cfg10 = json!({"id":"p1","taskId":"t1","url":"https://h.example/","token":"k",
        "authentication":{"scheme":"Bearer","credentials":"c"}});
    assert_eq!(answer(Op::CreatePushConfig, cfg03.clone()), cfg10);
    assert_eq!(answer(Op::GetPushConfig, cfg03.clone()), cfg10);
    assert_eq!(
        answer(Op::ListPushConfigs, json!([cfg03])),
        json!({"configs":[cfg10]})
    );
    assert_eq!(
        answer(Op::ListPushConfigs, json!([])),
        json!({"configs":[]})
    );
    assert_eq!(answer(Op::DeletePushConfig, Value::Null), Value::Null);
    // Python a2a-sdk 0.3.26 leaves the null result out.
    let t = answer_to10(Op::DeletePushConfig, br#"{"id":7,"jsonrpc":"2.0"}"#).unwrap();
    assert_eq!(t.json, br#"{"jsonrpc":"2.0","id":7,"result":null}"#);
    assert!(answer_to10(Op::GetTask, br#"{"id":7,"jsonrpc":"2.0"}"#).is_err());
    // GetTask and CancelTask answer a task: a message (or an event) is refused by its kind.
    for op in [Op::GetTask, Op::CancelTask] {
        for wrong in [
            message03(),
            json!({"kind":"status-update","taskId":"t","contextId":"c",
            "status":{"state":"working"}}),
            json!({"id":"t1","contextId":"c1","status":{"state":"completed"}}),
        ] {
            let body = json!({"jsonrpc":"2.0","id":7,"result":wrong}).to_string();
            let e = answer_to10(op, body.as_bytes()).unwrap_err().to_string();
            assert!(e.contains("result.kind"), "{op:?}: {e}");
        }
    }
    let card = json!({"name":"x","protocolVersion":"0.3.0"});
    assert_eq!(answer(Op::GetExtendedAgentCard, card.clone()), card);
    // An event is not a send result.
    let ev = json!({"jsonrpc":"2.0","id":7,"result":{"kind":"status-update","taskId":"t","contextId":"c","status":{"state":"working"},"final":false}});
    assert!(answer_to10(Op::SendMessage, ev.to_string().as_bytes()).is_err());
}

#[test]
fn every_task_state() {
    let states = [
        ("submitted", "TASK_STATE_SUBMITTED"),
        ("working", "TASK_STATE_WORKING"),
        ("input-required", "TASK_STATE_INPUT_REQUIRED"),
        ("completed", "TASK_STATE_COMPLETED"),
        ("canceled", "TASK_STATE_CANCELED"),
        ("failed", "TASK_STATE_FAILED"),
        ("rejected", "TASK_STATE_REJECTED"),
        ("auth-required", "TASK_STATE_AUTH_REQUIRED"),
        ("unknown", "TASK_STATE_UNSPECIFIED"),
    ];
    for (v03, v10) in states {
        let t = json!({"kind":"task","id":"t","contextId":"c","status":{"state":v03}});
        assert_eq!(answer(Op::GetTask, t)["status"]["state"], v10);
        let quoted = format!("\"{v10}\"");
        let doc = super::raw::Doc::parse(&quoted, "s").unwrap();
        assert_eq!(
            objects::state_to03(objects::Wire::Rpc, doc.root(), "s")
                .unwrap()
                .to_json(),
            format!("\"{v03}\"")
        );
    }
    let t = json!({"kind":"task","id":"t","status":{"state":"paused"}});
    let body = json!({"jsonrpc":"2.0","id":1,"result":t}).to_string();
    assert_eq!(
        answer_to10(Op::GetTask, body.as_bytes())
            .unwrap_err()
            .to_string(),
        "result.status.state is not an A2A 0.3 task state"
    );
}

#[test]
fn stream_events_and_final() {
    let ev = |r: Value| {
        let d = json!({"jsonrpc":"2.0","id":7,"result":r}).to_string();
        let t = event_to10(Op::SendStreamingMessage, d.as_bytes()).unwrap();
        (
            serde_json::from_slice::<Value>(&t.json).unwrap()["result"].clone(),
            t.last,
        )
    };
    assert_eq!(ev(task03()), (json!({"task":task10()}), false));
    // A message answers the whole stream: nothing follows it (0.3 sends no final flag with it).
    assert_eq!(ev(message03()), (json!({"message":message10()}), true));
    let su = json!({"kind":"status-update","taskId":"t","contextId":"c",
        "status":{"state":"completed"},"final":true,"metadata":{}});
    assert_eq!(
        ev(su),
        (
            json!({"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"},"metadata":{}}}),
            true
        )
    );
    let au = json!({"kind":"artifact-update","taskId":"t","contextId":"c","append":true,"lastChunk":false,
        "artifact":{"artifactId":"a","parts":[{"kind":"file","file":{"uri":"https://f.example/x"}}]}});
    assert_eq!(
        ev(au),
        (
            json!({"artifactUpdate":{"taskId":"t","contextId":"c",
                "artifact":{"artifactId":"a","parts":[{"url":"https://f.example/x"}]},
                "append":true,"lastChunk":false}}),
            false
        )
    );
    let d = json!({"jsonrpc":"2.0","id":7,"result":{"kind":"status-update","taskId":"t","contextId":"c","status":{"state":"working"},"final":"yes"}}).to_string();
    assert!(event_to10(Op::SubscribeToTask, d.as_bytes()).is_err());
}

#[test]
fn every_error() {
    let codes = [
        (-32001, "TASK_NOT_FOUND"),
        (-32002, "TASK_NOT_CANCELABLE"),
        (-32003, "PUSH_NOTIFICATION_NOT_SUPPORTED"),
        (-32004, "UNSUPPORTED_OPERATION"),
        (-32005, "CONTENT_TYPE_NOT_SUPPORTED"),
        (-32006, "INVALID_AGENT_RESPONSE"),
        (-32007, "EXTENDED_AGENT_CARD_NOT_CONFIGURED"),
        (-32700, "PARSE_ERROR"),
        (-32600, "INVALID_REQUEST"),
        (-32601, "METHOD_NOT_FOUND"),
        (-32602, "INVALID_PARAMS"),
        (-32603, "INTERNAL_ERROR"),
    ];
    for (code, reason) in codes {
        let got = error(
            Op::GetTask,
            json!({"code":code,"message":"m","data":{"free":"form"}}),
        );
        assert_eq!(
            got,
            json!({"code":code,"message":"m","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo",
                "reason":reason,"domain":"a2a-protocol.org"}]}),
            "{code}"
        );
    }
    for code in [-32008, -32009] {
        let got = error(Op::SendMessage, json!({"code":code,"message":"custom"}));
        assert_eq!(got["code"], -32603);
        assert_eq!(got["data"][0]["reason"], "INTERNAL_ERROR");
        assert_eq!(got["data"][0]["metadata"]["agentCode"], code.to_string());
    }
    // A server's own code passes with its number, without ErrorInfo.
    assert_eq!(
        error(Op::GetTask, json!({"code":-32050,"message":"auth"})),
        json!({"code":-32050,"message":"auth"})
    );
    // Python a2a-sdk 0.3.26's refusal of a stream is read as UnsupportedOperationError, on
    // SendStreamingMessage only, and only that sentence.
    let py = json!({"code":-32603,"message":"Streaming is not supported by the agent"});
    assert_eq!(error(Op::SendStreamingMessage, py.clone())["code"], -32004);
    assert_eq!(error(Op::SubscribeToTask, py.clone())["code"], -32603);
    assert_eq!(error(Op::SendMessage, py)["code"], -32603);
    for said in [
        "boom",
        "upstream model not supported",
        "stream unsupported here",
    ] {
        let other = json!({"code":-32603,"message":said});
        assert_eq!(
            error(Op::SendStreamingMessage, other)["code"],
            -32603,
            "{said}"
        );
    }
    // A broken envelope is refused, never repaired into a valid 1.0 answer.
    for body in [
        &br#"{"id":1,"result":{"kind":"task","id":"t","contextId":"c","status":{"state":"completed"}}}"#[..],
        br#"{"jsonrpc":"1.0","id":1,"error":{"code":-32001,"message":"gone"}}"#,
        br#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":-32001,"message":"gone"}}"#,
    ] {
        assert!(answer_to10(Op::GetTask, body).is_err(), "{}", String::from_utf8_lossy(body));
        assert!(event_to10(Op::SubscribeToTask, body).is_err());
    }
    let body = br#"{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":"m"}}"#;
    assert!(answer_to10(Op::GetTask, body).is_err());
    // An error event in a stream is its last (0.3 servers close after it); as a whole answer it
    // is no stream's end.
    let d = br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"gone"}}"#;
    let t = event_to10(Op::SubscribeToTask, d).unwrap();
    assert!(t.error && t.last);
    let t = answer_to10(Op::GetTask, d).unwrap();
    assert!(t.error && !t.last);
}

#[test]
fn dialects() {
    let iface = |b, v: &str| Interface {
        url: "https://a.example/".into(),
        binding: b,
        version: v.into(),
        tenant: None,
    };
    let d = Dialect::of(&iface(Binding::JsonRpc, "0.3")).unwrap();
    assert!(d.translates());
    assert_eq!(d.protocol.as_str(), "0.3");
    assert_eq!(d.caller_version(), "1.0");
    assert!(
        !Dialect::of(&iface(Binding::JsonRpc, "1.0"))
            .unwrap()
            .translates()
    );
    assert!(
        !Dialect::of(&iface(Binding::HttpJson, "1.0"))
            .unwrap()
            .translates()
    );
    assert!(
        Dialect::of(&iface(Binding::HttpJson, "0.3"))
            .unwrap()
            .translates()
    );
    let grpc = Dialect::of(&iface(Binding::Grpc, "1.0")).unwrap();
    assert!(grpc.grpc() && !grpc.translates());
    let grpc03 = Dialect::of(&iface(Binding::Grpc, "0.3")).unwrap();
    assert!(grpc03.grpc() && grpc03.translates());
    assert_eq!(Dialect::of(&iface(Binding::JsonRpc, "1.1")), None);
    for op in Op::ALL {
        assert_eq!(Op::from_v10(op.as_str()), Some(op));
    }
}

mod props {
    use super::super::raw::Doc;
    use proptest::prelude::*;

    use super::super::objects::{
        Wire, message_to03, message_to10, task_push_config_to03, task_push_config_to10,
    };
    use super::*;
    use crate::testkit::hostile::{
        Raw, Style, hostile_id, hostile_string, hostile_url, huge_number, raw_json,
        with_duplicate_key,
    };

    /// A hostile JSON object (metadata, a data part's data): any keys, any leaves.
    fn object() -> impl Strategy<Value = Raw> {
        prop::collection::vec(
            (hostile_string(), raw_json(vec!["a", "kind", "text"], 2)),
            0..4,
        )
        .prop_map(|m| {
            // Duplicates are another property's business: keep the first of each key. The
            // SDKs' wrapped-data marker is refused as metadata (its own test).
            let mut seen = std::collections::HashSet::new();
            Raw::Obj(
                m.into_iter()
                    .filter(|(k, _)| k != "data_part_compat" && seen.insert(k.clone()))
                    .collect(),
            )
        })
    }

    fn s(v: String) -> Raw {
        Raw::Str(v)
    }

    /// A 1.0 part of every kind, with every member both versions can say.
    fn part() -> impl Strategy<Value = Raw> {
        let meta = || prop::option::of(object());
        let named = |k: &str, v: Raw| (k.to_owned(), v);
        prop_oneof![
            (hostile_string(), meta()).prop_map(move |(t, m)| {
                let mut o = vec![named("text", s(t))];
                o.extend(m.map(|m| named("metadata", m)));
                Raw::Obj(o)
            }),
            (
                any::<bool>(),
                hostile_url(),
                prop::option::of(hostile_string()),
                prop::option::of(hostile_string()),
                meta()
            )
                .prop_map(move |(raw, c, mt, f, m)| {
                    let mut o = vec![named(if raw { "raw" } else { "url" }, s(c))];
                    o.extend(mt.map(|v| named("mediaType", s(v))));
                    o.extend(f.map(|v| named("filename", s(v))));
                    o.extend(m.map(|m| named("metadata", m)));
                    Raw::Obj(o)
                }),
            // 1.0 data is any JSON value; 0.3 wraps a non-object one (`data_part_compat`).
            // (`null` data reads as no data, as ProtoJSON reads `null`: another test's case.)
            (
                prop_oneof![object(), raw_json(vec!["value"], 2)]
                    .prop_filter("data is not null", |d| !matches!(d, Raw::Null)),
                meta(),
            )
                .prop_map(move |(d, m)| {
                    // Empty metadata beside wrapped data comes back as none, as the SDKs
                    // return it (`non_object_data_is_wrapped_as_the_sdks_wrap_it`).
                    let wrapped = !matches!(d, Raw::Obj(_));
                    let m = m.filter(|m| !(wrapped && matches!(m, Raw::Obj(o) if o.is_empty())));
                    let mut o = vec![named("data", d)];
                    o.extend(m.map(|m| named("metadata", m)));
                    Raw::Obj(o)
                }),
        ]
    }

    fn message() -> impl Strategy<Value = Raw> {
        (
            hostile_id(),
            prop::option::of(hostile_id()),
            any::<bool>(),
            prop::collection::vec(part(), 0..4),
            prop::option::of(object()),
            prop::option::of(prop::collection::vec(hostile_string(), 0..3)),
        )
            .prop_map(|(id, ctx, user, parts, meta, exts)| {
                let mut o = vec![("messageId".to_owned(), s(id))];
                o.extend(ctx.map(|c| ("contextId".to_owned(), s(c))));
                o.push((
                    "role".into(),
                    s(if user { "ROLE_USER" } else { "ROLE_AGENT" }.into()),
                ));
                o.push(("parts".into(), Raw::Arr(parts)));
                o.extend(meta.map(|m| ("metadata".to_owned(), m)));
                o.extend(exts.map(|e| {
                    (
                        "extensions".to_owned(),
                        Raw::Arr(e.into_iter().map(s).collect()),
                    )
                }));
                Raw::Obj(o)
            })
    }

    fn style() -> impl Strategy<Value = Style> {
        prop_oneof![
            Just(Style::Compact),
            Just(Style::Spaced),
            Just(Style::Escaped)
        ]
    }

    /// Whether a generated message has a part whose metadata sits beside non-object data (its
    /// names are written anew on the way back from 0.3).
    fn rewraps(m: &Raw) -> bool {
        fn member<'r>(o: &'r [(String, Raw)], k: &str) -> Option<&'r Raw> {
            o.iter().find(|(n, _)| n == k).map(|(_, v)| v)
        }
        let Raw::Obj(msg) = m else { return false };
        let Some(Raw::Arr(parts)) = member(msg, "parts") else {
            return false;
        };
        parts.iter().any(|p| match p {
            Raw::Obj(p) => {
                member(p, "metadata").is_some()
                    && member(p, "data").is_some_and(|d| !matches!(d, Raw::Obj(_)))
            }
            _ => false,
        })
    }

    /// `text` as a JSON value, when serde_json can hold it (it refuses `1e400`).
    fn value(text: &str) -> Option<Value> {
        serde_json::from_str(text).ok()
    }

    proptest! {
        /// 1.0 → 0.3 → 1.0 is the identity on a message (every part kind, hostile text, huge
        /// numbers in metadata), and every copied value keeps its bytes.
        #[test]
        fn message_round_trip(m in message(), st in style()) {
            let text = m.render(st);
            let doc = Doc::parse(&text, "m").unwrap();
            let v03 = message_to03(Wire::Rpc, doc.root(), "m").unwrap().to_json();
            let doc03 = Doc::parse(&v03, "m").unwrap();
            let back = message_to10(Wire::Rpc, doc03.root(), "m").unwrap().to_json();
            // Same members, same order, same bytes of every leaf: compact text comes back as it
            // was, but for the metadata names beside wrapped (non-object) data, which are
            // written anew on the way back (same names, maybe escaped differently).
            // Read from the generated message, not a parse of its text: serde_json refuses a
            // text holding `1e400`, which would hide a rewrapped part.
            let rewrapped = rewraps(&m);
            if st == Style::Compact && !rewrapped {
                prop_assert_eq!(&back, &text);
            }
            if let (Some(a), Some(b)) = (value(&text), value(&back)) {
                prop_assert_eq!(a, b);
            }
        }

        /// The same on the HTTP+JSON binding's spelling (`content`, the proto's file and data
        /// parts, `ROLE_*`): one conversion, two spellings, the same identity.
        #[test]
        fn message_round_trip_over_http_json(m in message(), st in style()) {
            let text = m.render(st);
            let doc = Doc::parse(&text, "m").unwrap();
            let v03 = message_to03(Wire::Rest, doc.root(), "m").unwrap().to_json();
            let doc03 = Doc::parse(&v03, "m").unwrap();
            let back = message_to10(Wire::Rest, doc03.root(), "m").unwrap().to_json();
            if st == Style::Compact && !rewraps(&m) {
                prop_assert_eq!(&back, &text);
            }
            if let (Some(a), Some(b)) = (value(&text), value(&back)) {
                prop_assert_eq!(a, b);
            }
        }

        /// Hostile bodies never panic the HTTP+JSON translator either, and a valid message
        /// under any metadata translates.
        #[test]
        fn hostile_http_json_requests_and_answers(
            m in message(), n in huge_number(), op in prop::sample::select(Op::ALL.to_vec()),
        ) {
            let body = format!(
                r#"{{"message":{},"metadata":{{"n":{n}}}}}"#,
                m.render(Style::Compact)
            );
            let out = rest_request_to03(Op::SendMessage, "/message:send", None, body.as_bytes());
            prop_assert!(out.is_ok(), "{:?}: {}", out.err(), body);
            let sent = String::from_utf8(out.map(|r| r.body).unwrap_or_default()).unwrap();
            prop_assert!(sent.contains(&format!(r#""n":{n}"#)), "{}", sent);
            let _ = rest_request_to03(op, "/tasks/x", Some("historyLength=1"), body.as_bytes());
            for status in [200, 201, 400, 404, 500] {
                let _ = rest_answer_to10(op, status, body.as_bytes());
            }
            let _ = rest_event_to10(op, body.as_bytes());
        }

        /// The same for a push config (the flat 1.0 shape through 0.3's nested one).
        #[test]
        fn push_config_round_trip(
            task in hostile_id(), id in prop::option::of(hostile_id()), url in hostile_url(),
            token in prop::option::of(hostile_string()), scheme in hostile_string(),
            cred in prop::option::of(hostile_string()),
        ) {
            let mut c = json!({"taskId": task, "url": url});
            if let Some(i) = id { c["id"] = json!(i); }
            if let Some(t) = token { c["token"] = json!(t); }
            let mut auth = json!({"scheme": scheme});
            if let Some(cr) = cred { auth["credentials"] = json!(cr); }
            c["authentication"] = auth;
            let text = c.to_string();
            let doc = Doc::parse(&text, "c").unwrap();
            let v03 = task_push_config_to03(doc.root(), "c").unwrap().to_json();
            let doc03 = Doc::parse(&v03, "c").unwrap();
            let back = task_push_config_to10(Wire::Rpc, doc03.root(), "c").unwrap().to_json();
            prop_assert_eq!(serde_json::from_str::<Value>(&back).unwrap(), c);
        }

        /// Hostile bodies never panic the translator, and a duplicate key anywhere it reads is
        /// refused rather than translated with one of the two values.
        #[test]
        fn hostile_requests_and_answers(
            m in message(), n in huge_number(), op in prop::sample::select(Op::ALL.to_vec()),
        ) {
            let body = format!(
                r#"{{"jsonrpc":"2.0","id":{n},"method":"SendMessage","params":{{"message":{}}}}}"#,
                m.render(Style::Compact)
            );
            // A valid message under any JSON number as id translates, and the id keeps its bytes
            // (on main this asserted only when it translated, so a refusal passed unseen).
            let out = request_to03(Op::SendMessage, body.as_bytes());
            prop_assert!(out.is_ok(), "{:?}: {}", out.err(), body);
            let text = String::from_utf8(out.unwrap_or_default()).unwrap();
            prop_assert!(text.contains(&format!(r#""id":{n}"#)), "{}", text);
            let _ = request_to03(op, body.as_bytes());
            let _ = answer_to10(op, body.as_bytes());
            let _ = event_to10(op, body.as_bytes());
        }

        #[test]
        fn duplicate_keys_are_refused(m in message().prop_flat_map(with_duplicate_key)) {
            let text = m.render(Style::Compact);
            // A duplicate in an object the translator reads is refused; one inside copied
            // metadata or data is copied with the rest of that value (the request parser refuses
            // it before). Either way the translator never keeps one of the two values silently.
            let doc = Doc::parse(&text, "m").unwrap();
            match message_to03(Wire::Rpc, doc.root(), "m") {
                // Copied inside metadata or data: the duplicate is still there, both values.
                Ok(out) => {
                    let out = out.to_json();
                    let dups = crate::json::duplicate_keys(&out, 16).unwrap();
                    prop_assert!(!dups.is_empty(), "{}", out);
                }
                // Read by the translator: refused, naming the duplicate.
                Err(e) => prop_assert!(e.to_string().contains("twice"), "{}", e),
            }
        }
    }
}

#[test]
fn an_integer_is_a_json_integer_or_its_quoted_protojson_form_only() {
    let get = |h: &str| {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{{"id":"t","historyLength":{h}}}}}"#
        );
        request_to03(Op::GetTask, body.as_bytes())
    };
    for ok in ["2", "-1", "\"2\"", "\"-1\""] {
        assert!(get(ok).is_ok(), "{ok}");
    }
    // (`null` is absent, as ProtoJSON reads it.)
    for bad in ["2.5", "\"2x\"", "\"\"", "\"2.0\"", "true"] {
        let e = get(bad).unwrap_err().to_string();
        assert!(e.contains("historyLength"), "{bad}: {e}");
    }
}

#[test]
fn an_answer_whose_tree_is_over_the_budget_is_refused_on_both_bindings_naming_its_size() {
    let zeros = format!("[{}0]", "0,".repeat(1 << 20));
    let rpc = format!(
        r#"{{"jsonrpc":"2.0","id":1,"result":{{"kind":"task","id":"t","contextId":"c","status":{{"state":"completed"}},"metadata":{{"z":{zeros}}}}}}}"#
    );
    let rest = format!(
        r#"{{"id":"t","contextId":"c","status":{{"state":"TASK_STATE_COMPLETED"}},"metadata":{{"z":{zeros}}}}}"#
    );
    let got = [
        super::answer_to10(Op::GetTask, rpc.as_bytes()).err(),
        super::event_to10(Op::SubscribeToTask, rpc.as_bytes()).err(),
        super::rest_answer_to10(Op::GetTask, 200, rest.as_bytes()).err(),
        super::rest_event_to10(Op::SubscribeToTask, rest.as_bytes()).err(),
    ];
    for e in got {
        let Some(e @ TranslateError::TooLarge { mib }) = e else {
            panic!("{e:?}")
        };
        assert!(mib > 64, "{mib}");
        assert_eq!(
            e.to_string(),
            format!(
                "the agent's answer would take {mib} MiB to read, over the 64 MiB the gateway holds per answer"
            )
        );
    }
}
