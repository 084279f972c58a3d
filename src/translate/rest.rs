//! HTTP+JSON between a 1.0 caller and a 0.3 agent (pure, no I/O): the 1.0 route, query and body
//! as the 0.3 request (its HTTP method, its `/v1/…` path, the 0.3 proto's ProtoJSON body), and
//! the 0.3 answer, error and every stream event back as 1.0.
//!
//! The 0.3 binding is the 0.3 gRPC service's HTTP transcoding (its `google.api.http` rules, as
//! the 0.3 SDKs serve them): `POST /v1/message:send`, `POST /v1/message:stream`,
//! `GET /v1/tasks/{id}`, `POST /v1/tasks/{id}:cancel`, `GET /v1/tasks/{id}:subscribe`,
//! `POST|GET /v1/tasks/{id}/pushNotificationConfigs`, `GET|DELETE
//! /v1/tasks/{id}/pushNotificationConfigs/{config}`, `GET /v1/card`. Request bodies are what the
//! 0.3 Python SDK client sends (a cancel names its task, a push config is created under its
//! `parent`), which both SDK servers read. Path segments are copied as the caller wrote them
//! (the data plane refused every path trick before); where a 0.3 body names a resource
//! (`tasks/{id}`) the segment is decoded and written as a JSON string.
//!
//! The objects are translated by `objects` with [`Wire::Rest`]: one conversion per object for
//! both 0.3 bindings.

use super::objects::{
    Wire, message_to03, push_config_to03, send_config_to03, task_push_config_to10, task_to10,
    wrapped_to10,
};
use super::raw::{Doc, Obj, Out, Val, each, member, object, opt, req, string, text};
use super::rpc::Translated;
use super::{Op, TranslateError};

/// A request to a 0.3 HTTP+JSON agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestRequest {
    /// The HTTP method (0.3 reads a subscription with `GET`, where a 1.0 caller may `POST`).
    pub method: &'static str,
    /// The path below the interface URL, with its query (`/v1/tasks/abc?historyLength=2`).
    pub path: String,
    /// The body; empty for a `GET` or `DELETE`.
    pub body: Vec<u8>,
}

/// A 0.3 HTTP+JSON answer as the 1.0 one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestAnswer {
    /// The 1.0 HTTP status: 200 for every success (JS 0.3.14 answers 201, 202 and 204), the
    /// 1.0 error table's for an error.
    pub status: u16,
    /// The 1.0 JSON body.
    pub json: Vec<u8>,
    /// The answer is an error (`google.rpc.Status`).
    pub error: bool,
}

/// The segments of a 1.0 route path below the interface (`/tasks/abc:cancel` → `tasks`,
/// `abc:cancel`).
fn segments(path: &str) -> Vec<&str> {
    path.trim_start_matches('/').split('/').collect()
}

/// A path segment's decoded text (a task id in a 0.3 resource name).
fn decoded(segment: &str) -> Result<String, TranslateError> {
    percent_encoding::percent_decode_str(segment)
        .decode_utf8()
        .map(|t| t.into_owned())
        .map_err(|_| TranslateError::untranslatable("path", "is not UTF-8 once decoded"))
}

/// `text` as a JSON string.
fn quoted(text: &str) -> Result<String, TranslateError> {
    serde_json::to_string(text).map_err(|_| TranslateError::untranslatable("path", "is not text"))
}

/// The task segment (and for a push config, the config segment) of the 1.0 route of `op`.
fn ids<'p>(op: Op, path: &'p str) -> Result<(&'p str, Option<&'p str>), TranslateError> {
    let bad = || TranslateError::untranslatable("path", "is not the operation's route");
    let segs = segments(path);
    let task = |s: &'p str, suffix: &str| s.strip_suffix(suffix).filter(|t| !t.is_empty());
    match (op, segs.as_slice()) {
        (Op::GetTask, ["tasks", id]) => task(id, "").map(|t| (t, None)).ok_or_else(bad),
        (Op::CancelTask, ["tasks", id]) => task(id, ":cancel").map(|t| (t, None)).ok_or_else(bad),
        (Op::SubscribeToTask, ["tasks", id]) => {
            task(id, ":subscribe").map(|t| (t, None)).ok_or_else(bad)
        }
        (Op::CreatePushConfig | Op::ListPushConfigs, ["tasks", id, "pushNotificationConfigs"]) => {
            Ok((id, None))
        }
        (
            Op::GetPushConfig | Op::DeletePushConfig,
            ["tasks", id, "pushNotificationConfigs", cfg],
        ) => Ok((id, Some(cfg))),
        _ => Err(bad()),
    }
}

/// `historyLength` of a 1.0 GetTask query, the one query parameter 0.3 reads (others have no
/// place in 0.3 and are left out), held to being an integer.
fn history_query(query: Option<&str>) -> Result<String, TranslateError> {
    let Some(q) = query else {
        return Ok(String::new());
    };
    let mut out = String::new();
    for (k, v) in url::form_urlencoded::parse(q.as_bytes()) {
        if k == "historyLength" {
            let digits = v.strip_prefix('-').unwrap_or(&v);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return Err(TranslateError::untranslatable(
                    "historyLength",
                    "is not an integer",
                ));
            }
            out = format!("?historyLength={v}");
        }
    }
    Ok(out)
}

/// The 1.0 HTTP+JSON request of `op` (its route `path` below the interface, tenant prefix
/// removed; its `query`; its `body`, empty when it has none) as the 0.3 agent's.
pub fn rest_request_to03(
    op: Op,
    path: &str,
    query: Option<&str>,
    body: &[u8],
) -> Result<RestRequest, TranslateError> {
    let get = |path: String| RestRequest {
        method: "GET",
        path,
        body: Vec::new(),
    };
    Ok(match op {
        Op::SendMessage | Op::SendStreamingMessage => {
            let route = if op == Op::SendMessage {
                "/v1/message:send"
            } else {
                "/v1/message:stream"
            };
            RestRequest {
                method: "POST",
                path: route.to_owned(),
                body: send_body(body)?.into_bytes(),
            }
        }
        Op::GetTask => {
            let (task, _) = ids(op, path)?;
            get(format!("/v1/tasks/{task}{}", history_query(query)?))
        }
        Op::CancelTask => {
            let (task, _) = ids(op, path)?;
            RestRequest {
                method: "POST",
                path: format!("/v1/tasks/{task}:cancel"),
                // What the 0.3 SDK client sends; the 1.0 cancel's metadata has no place in 0.3.
                body: format!(r#"{{"name":{}}}"#, resource(task, None)?).into_bytes(),
            }
        }
        Op::SubscribeToTask => {
            let (task, _) = ids(op, path)?;
            get(format!("/v1/tasks/{task}:subscribe"))
        }
        Op::CreatePushConfig => {
            let (task, _) = ids(op, path)?;
            RestRequest {
                method: "POST",
                path: format!("/v1/tasks/{task}/pushNotificationConfigs"),
                body: create_push_body(task, body)?.into_bytes(),
            }
        }
        // 0.3 lists every config at once: no page size or token to pass.
        Op::ListPushConfigs => {
            let (task, _) = ids(op, path)?;
            get(format!("/v1/tasks/{task}/pushNotificationConfigs"))
        }
        Op::GetPushConfig | Op::DeletePushConfig => {
            let (task, cfg) = ids(op, path)?;
            let path = format!(
                "/v1/tasks/{task}/pushNotificationConfigs/{}",
                cfg.unwrap_or_default()
            );
            RestRequest {
                method: if op == Op::GetPushConfig {
                    "GET"
                } else {
                    "DELETE"
                },
                path,
                body: Vec::new(),
            }
        }
        Op::GetExtendedAgentCard => get("/v1/card".to_owned()),
        Op::ListTasks => {
            return Err(TranslateError::NotInVersion {
                method: op.as_str(),
            });
        }
    })
}

/// The 0.3 resource name `tasks/{task}` (or `tasks/{task}/pushNotificationConfigs/{config}`)
/// of path segments, as a JSON string.
fn resource(task: &str, config: Option<&str>) -> Result<String, TranslateError> {
    let t = decoded(task)?;
    quoted(&match config {
        Some(c) => format!("tasks/{t}/pushNotificationConfigs/{c}"),
        None => format!("tasks/{t}"),
    })
}

/// A 1.0 `SendMessageRequest` body → the 0.3 proto's: the message, the configuration (always
/// with `blocking`, see `send_config_to03`; 1.0 blocks when it says nothing), the metadata.
/// `tenant` has no place in 0.3 (policy refused any the integration does not have).
fn send_body(body: &[u8]) -> Result<String, TranslateError> {
    let f = "body";
    let text =
        std::str::from_utf8(body).map_err(|_| TranslateError::untranslatable(f, "is not UTF-8"))?;
    let doc = Doc::parse(text, f)?;
    let p = Obj::parse(doc.root(), f)?;
    let config = match opt(&p, "configuration", f, |v, f| {
        send_config_to03(Wire::Rest, v, f)
    })? {
        Some(c) => c,
        None => Out::Obj(vec![("blocking", Some(Out::Lit("true")))]),
    };
    Ok(Out::Obj(vec![
        (
            "message",
            req(&p, "message", f, |v, f| message_to03(Wire::Rest, v, f))?,
        ),
        ("configuration", Some(config)),
        ("metadata", opt(&p, "metadata", f, object)?),
    ])
    .to_json())
}

/// A 1.0 `TaskPushNotificationConfig` body for the task of path segment `task` → the 0.3
/// `CreateTaskPushNotificationConfigRequest` (`parent`, `configId`, `config` with its resource
/// name and the nested `pushNotificationConfig`). A `taskId` in the body that is not the
/// path's is refused: which of the two the agent would read is not agreed on.
fn create_push_body(task: &str, body: &[u8]) -> Result<String, TranslateError> {
    let f = "body";
    let text_body =
        std::str::from_utf8(body).map_err(|_| TranslateError::untranslatable(f, "is not UTF-8"))?;
    let doc = Doc::parse(text_body, f)?;
    let raw = doc.root();
    let c = Obj::parse(raw, f)?;
    if let Some(t) = c.get("taskId")
        && text(t, "body.taskId")? != decoded(task)?
    {
        return Err(TranslateError::untranslatable(
            "body.taskId",
            "is not the task of the path",
        ));
    }
    let id = c.get("id").map(|v| string(v, "body.id")).transpose()?;
    let name = match c.get("id") {
        Some(v) => Some(Out::Owned(resource(task, Some(&text(v, "body.id")?))?)),
        None => None,
    };
    Ok(Out::Obj(vec![
        ("parent", Some(Out::Owned(resource(task, None)?))),
        ("configId", id),
        (
            "config",
            Some(Out::Obj(vec![
                ("name", name),
                ("pushNotificationConfig", Some(push_config_to03(raw, f)?)),
            ])),
        ),
    ])
    .to_json())
}

/// The 0.3 HTTP+JSON answer of `status` to a request of `op` as the 1.0 answer; `None` for an
/// answer that is not the agent's A2A answer (a redirect, or an error page in none of the 0.3
/// SDKs' error shapes), which passes as it came and is judged as any answer is.
pub fn rest_answer_to10(
    op: Op,
    status: u16,
    body: &[u8],
) -> Result<Option<RestAnswer>, TranslateError> {
    if status >= 400 {
        return Ok(
            super::errors::rest_error_to10(op, status, body).map(|(status, json)| RestAnswer {
                status,
                json: json.into_bytes(),
                error: true,
            }),
        );
    }
    if !(200..300).contains(&status) {
        return Ok(None);
    }
    // A deleted config: JS 0.3.14 answers 204 without a body; 1.0's `google.protobuf.Empty`.
    if op == Op::DeletePushConfig {
        return Ok(Some(RestAnswer {
            status: 200,
            json: b"{}".to_vec(),
            error: false,
        }));
    }
    let f = "body";
    let text = TranslateError::utf8_text(body, f)?;
    // As read before the index: surrounding whitespace of any kind is not the answer's.
    let doc = Doc::answer(text.trim(), f)?;
    let raw = doc.root();
    let out = result_to10(op, raw, f)?;
    Ok(Some(RestAnswer {
        status: 200,
        json: out.to_json_sized(text.len() + 64).into_bytes(),
        error: false,
    }))
}

/// The 0.3 HTTP+JSON result of `op` → 1.0.
fn result_to10<'a>(op: Op, raw: Val<'a>, f: &str) -> Result<Out<'a>, TranslateError> {
    Ok(match op {
        Op::SendMessage | Op::SendStreamingMessage | Op::SubscribeToTask => {
            wrapped_to10(Wire::Rest, raw, f, false)?.0
        }
        Op::GetTask | Op::CancelTask => task_to10(Wire::Rest, raw, f)?,
        Op::CreatePushConfig | Op::GetPushConfig => task_push_config_to10(Wire::Rest, raw, f)?,
        Op::ListPushConfigs => {
            let l = Obj::parse(raw, f)?;
            let configs = match l.get("configs") {
                Some(c) => each(c, &member(f, "configs"), |v, f| {
                    task_push_config_to10(Wire::Rest, v, f)
                })?,
                // ProtoJSON leaves an empty list out.
                None => Out::Lit("[]"),
            };
            Out::Obj(vec![
                ("configs", Some(configs)),
                ("nextPageToken", opt(&l, "nextPageToken", f, string)?),
            ])
        }
        Op::DeletePushConfig => Out::Lit("{}"),
        // A 0.3 card: the control plane converts it with the card's own 0.3 rules.
        Op::GetExtendedAgentCard => object(raw, f)?,
        Op::ListTasks => {
            return Err(TranslateError::NotInVersion {
                method: op.as_str(),
            });
        }
    })
}

/// One 0.3 HTTP+JSON stream event's data (a `StreamResponse`, or an error object JS 0.3.14
/// sends once the stream started) for a stream of `op` as the 1.0 event data: the wrapper with
/// its object translated, or `{"error": google.rpc.Status}` (the last event).
pub fn rest_event_to10(op: Op, data: &[u8]) -> Result<Translated, TranslateError> {
    let f = "data";
    let text = TranslateError::utf8_text(data, f)?;
    // As read before the index: surrounding whitespace of any kind is not the answer's.
    let doc = Doc::answer(text.trim(), f)?;
    let raw = doc.root();
    let o = Obj::parse(raw, f)?;
    if o.has_key("code") {
        // An error after the stream started carries no HTTP status: the 1.0 code's is written.
        let (_, json) = super::errors::rest_error_to10(op, 500, text.as_bytes())
            .ok_or_else(|| TranslateError::untranslatable(f, "is not an error object"))?;
        return Ok(Translated {
            json: json.into_bytes(),
            last: true,
            error: true,
        });
    }
    let (out, last) = wrapped_to10(Wire::Rest, raw, f, true)?;
    Ok(Translated {
        json: out.to_json_sized(text.len() + 64).into_bytes(),
        last,
        error: false,
    })
}
