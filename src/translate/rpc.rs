//! JSON-RPC envelopes between a 1.0 caller and a 0.3 agent (pure, no I/O): the request's method
//! and params toward the agent, the answer's result or error and every stream event back.
//!
//! The envelope's `id` is copied as its exact text both ways, so a 30-digit id stays one.

use super::objects::{
    Wire, message_to03, send_config_to03, task_push_config_to03, task_push_config_to10,
    task_to10_of, wrapped_to10,
};
use super::raw::{Doc, Obj, Out, Val, each, integer, member, object, opt, req, string};
use super::{Op, TranslateError};

/// The 0.3 JSON-RPC method of a 1.0 operation; `None` where 0.3 has none (ListTasks).
pub fn method_03(op: Op) -> Option<&'static str> {
    Some(match op {
        Op::SendMessage => "message/send",
        Op::SendStreamingMessage => "message/stream",
        Op::GetTask => "tasks/get",
        Op::CancelTask => "tasks/cancel",
        Op::SubscribeToTask => "tasks/resubscribe",
        Op::CreatePushConfig => "tasks/pushNotificationConfig/set",
        Op::GetPushConfig => "tasks/pushNotificationConfig/get",
        Op::ListPushConfigs => "tasks/pushNotificationConfig/list",
        Op::DeletePushConfig => "tasks/pushNotificationConfig/delete",
        Op::GetExtendedAgentCard => "agent/getAuthenticatedExtendedCard",
        Op::ListTasks => return None,
    })
}

/// The parsed members of a JSON-RPC envelope the translator reads.
struct Envelope<'a> {
    id: Option<Val<'a>>,
    obj: Obj<'a>,
}

fn envelope_of<'a>(doc: &'a Doc<'a>) -> Result<Envelope<'a>, TranslateError> {
    let obj = Obj::parse(doc.root(), "body")?;
    let id = obj.raw("id");
    Ok(Envelope { id, obj })
}

/// The 1.0 JSON-RPC request `body` for operation `op` as the 0.3 request: method renamed, params
/// rebuilt (`tenant` has no place in 0.3 and is left out; policy has refused any tenant the
/// integration does not have, and a 0.3 integration has none).
pub fn request_to03(op: Op, body: &[u8]) -> Result<Vec<u8>, TranslateError> {
    let method = method_03(op).ok_or(TranslateError::NotInVersion {
        method: op.as_str(),
    })?;
    let text = std::str::from_utf8(body)
        .map_err(|_| TranslateError::untranslatable("body", "is not UTF-8"))?;
    let doc = Doc::parse(text, "body")?;
    let env = envelope_of(&doc)?;
    let params = match env.obj.get("params") {
        Some(p) => Some(params_to03(op, p)?),
        None if op == Op::GetExtendedAgentCard => None,
        None => return Err(TranslateError::untranslatable("params", "is required")),
    };
    let out = Out::Obj(vec![
        ("jsonrpc", Some(Out::Lit("\"2.0\""))),
        ("id", env.id.map(|v| Out::Raw(v.get()))),
        ("method", Some(Out::Lit(quoted(method)))),
        ("params", params),
    ]);
    Ok(out.to_json_sized(body.len() + 64).into_bytes())
}

/// A 0.3 method name as JSON text.
fn quoted(method: &'static str) -> &'static str {
    match method {
        "message/send" => "\"message/send\"",
        "message/stream" => "\"message/stream\"",
        "tasks/get" => "\"tasks/get\"",
        "tasks/cancel" => "\"tasks/cancel\"",
        "tasks/resubscribe" => "\"tasks/resubscribe\"",
        "tasks/pushNotificationConfig/set" => "\"tasks/pushNotificationConfig/set\"",
        "tasks/pushNotificationConfig/get" => "\"tasks/pushNotificationConfig/get\"",
        "tasks/pushNotificationConfig/list" => "\"tasks/pushNotificationConfig/list\"",
        "tasks/pushNotificationConfig/delete" => "\"tasks/pushNotificationConfig/delete\"",
        _ => "\"agent/getAuthenticatedExtendedCard\"",
    }
}

/// The params of `op`, 1.0 → 0.3.
fn params_to03<'a>(op: Op, raw: Val<'a>) -> Result<Out<'a>, TranslateError> {
    let f = "params";
    let p = Obj::parse(raw, f)?;
    Ok(match op {
        Op::SendMessage | Op::SendStreamingMessage => Out::Obj(vec![
            (
                "message",
                req(&p, "message", f, |v, f| message_to03(Wire::Rpc, v, f))?,
            ),
            (
                "configuration",
                opt(&p, "configuration", f, |v, f| {
                    send_config_to03(Wire::Rpc, v, f)
                })?,
            ),
            ("metadata", opt(&p, "metadata", f, object)?),
        ]),
        Op::GetTask => Out::Obj(vec![
            ("id", req(&p, "id", f, string)?),
            ("historyLength", opt(&p, "historyLength", f, integer)?),
        ]),
        Op::CancelTask => Out::Obj(vec![
            ("id", req(&p, "id", f, string)?),
            ("metadata", opt(&p, "metadata", f, object)?),
        ]),
        Op::SubscribeToTask => Out::Obj(vec![("id", req(&p, "id", f, string)?)]),
        Op::CreatePushConfig => task_push_config_to03(raw, f)?,
        Op::GetPushConfig | Op::DeletePushConfig => Out::Obj(vec![
            ("id", req(&p, "taskId", f, string)?),
            ("pushNotificationConfigId", req(&p, "id", f, string)?),
        ]),
        // 0.3 lists every config at once: no page size or token to pass.
        Op::ListPushConfigs => Out::Obj(vec![("id", req(&p, "taskId", f, string)?)]),
        Op::GetExtendedAgentCard => Out::Obj(vec![]),
        Op::ListTasks => {
            return Err(TranslateError::NotInVersion {
                method: op.as_str(),
            });
        }
    })
}

/// A translated answer or event: the 1.0 JSON text, and whether the 0.3 agent said it was the
/// stream's last (`final: true`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Translated {
    /// The 1.0 JSON-RPC response text.
    pub json: Vec<u8>,
    /// Nothing follows it in a stream: a 0.3 status update with `final: true`, a message, or an
    /// error.
    pub last: bool,
    /// The answer is a JSON-RPC error.
    pub error: bool,
}

/// The 0.3 JSON-RPC answer `body` to a request of `op` as the 1.0 answer.
pub fn answer_to10(op: Op, body: &[u8]) -> Result<Translated, TranslateError> {
    translate_answer(op, body, false)
}

/// One 0.3 stream event's data (a JSON-RPC response) for a stream of `op` as the 1.0 event data.
pub fn event_to10(op: Op, data: &[u8]) -> Result<Translated, TranslateError> {
    translate_answer(op, data, true)
}

fn translate_answer(op: Op, body: &[u8], event: bool) -> Result<Translated, TranslateError> {
    let doc = Doc::answer(TranslateError::utf8_text(body, "body")?, "body")?;
    let env = envelope_of(&doc)?;
    // What a 1.0 agent's answer would be refused for is refused here too: the translation writes
    // a fresh 2.0 envelope, so it must not turn a broken one into a valid answer.
    if env.obj.get("jsonrpc").map(|v| v.get()) != Some("\"2.0\"") {
        return Err(TranslateError::untranslatable("jsonrpc", "is not \"2.0\""));
    }
    let (member, value, last, error) = match (env.obj.get("result"), env.obj.get("error")) {
        (Some(_), Some(_)) => {
            return Err(TranslateError::untranslatable(
                "body",
                "has both result and error",
            ));
        }
        // In a stream an error is the last event: 0.3 servers send it and close (Python a2a-sdk
        // 0.3.26), so the caller's stream ends with it instead of waiting on the agent's close.
        (None, Some(e)) => ("error", super::errors::error_to10(op, e)?, event, true),
        (Some(r), None) => {
            let (v, last) = result_to10(op, r, event)?;
            ("result", v, last, false)
        }
        // Deleting a push config answers `result: null`, which Python a2a-sdk 0.3.26 leaves out
        // altogether (`{"id":…,"jsonrpc":"2.0"}`): both mean success.
        (None, None) if op == Op::DeletePushConfig => ("result", Out::Lit("null"), false, false),
        (None, None) => {
            return Err(TranslateError::untranslatable(
                "body",
                "has neither result nor error",
            ));
        }
    };
    let out = Out::Obj(vec![
        ("jsonrpc", Some(Out::Lit("\"2.0\""))),
        (
            "id",
            Some(env.id.map_or(Out::Lit("null"), |v| Out::Raw(v.get()))),
        ),
        (member, Some(value)),
    ]);
    Ok(Translated {
        json: out.to_json_sized(body.len() + 64).into_bytes(),
        last,
        error,
    })
}

/// The result of `op`, 0.3 → 1.0, and whether it ends a stream.
fn result_to10<'a>(op: Op, raw: Val<'a>, event: bool) -> Result<(Out<'a>, bool), TranslateError> {
    let f = "result";
    Ok(match op {
        Op::SendMessage | Op::SendStreamingMessage | Op::SubscribeToTask => {
            wrapped_to10(Wire::Rpc, raw, f, event)?
        }
        // A task, and nothing else: `kind` (required in 0.3) must say so, as in a wrapped answer.
        Op::GetTask | Op::CancelTask => {
            let o = Obj::parse(raw, f)?;
            match super::objects::kind_in(&o, f)? {
                super::objects::Kind::Task => (task_to10_of(Wire::Rpc, &o, f)?, false),
                _ => {
                    return Err(TranslateError::untranslatable(
                        &member(f, "kind"),
                        "is not task",
                    ));
                }
            }
        }
        Op::CreatePushConfig | Op::GetPushConfig => {
            (task_push_config_to10(Wire::Rpc, raw, f)?, false)
        }
        Op::ListPushConfigs => (
            Out::Obj(vec![(
                "configs",
                Some(each(raw, f, |v, f| task_push_config_to10(Wire::Rpc, v, f))?),
            )]),
            false,
        ),
        Op::DeletePushConfig => (Out::Lit("null"), false),
        // A 0.3 card: the control plane converts it with the card's own 0.3 rules.
        Op::GetExtendedAgentCard => (object(raw, f)?, false),
        Op::ListTasks => {
            return Err(TranslateError::NotInVersion {
                method: op.as_str(),
            });
        }
    })
}
