//! One 1.0 call moved between the two HTTP bindings (pure, no I/O): a JSON-RPC request as the
//! HTTP+JSON request of the same operation and back, and every answer, stream event and error the
//! other way, so an orchestrator on either binding reaches an agent on the other (issue 20 item 5).
//!
//! The request and response messages are the same ProtoJSON objects on both bindings (FACTS §5,
//! §6): what moves is the envelope, the route with its path and query parameters, the tenant (a
//! `params` member ⇄ a path prefix) and the error's shape (a JSON-RPC error object ⇄ an HTTP
//! status with a `google.rpc.Status` body). Every value copied keeps its bytes (`raw`),
//! a key that appears twice is refused, and a member the route or the envelope has no place for is
//! left out. An agent's 0.3 answer is made 1.0 first (`rpc`, `rest`); this module sees 1.0 only.

use super::raw::{Doc, Obj, Out, Val, boolean, integer, member, text};
use super::{Op, TranslateError, Translated};

/// The `id` (JSON text) of the JSON-RPC request the gateway makes from an HTTP+JSON caller's
/// request, from `request_id`, an id the gateway made for that request alone: the agent's answer
/// must carry it back, so an answer meant for another request (one left on a
/// pooled connection) is refused as for any JSON-RPC caller.
pub fn gateway_id(request_id: &str) -> String {
    serde_json::Value::String(format!("a2a-egress-{request_id}")).to_string()
}

/// An HTTP+JSON request made from a JSON-RPC one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestCall {
    /// The HTTP method of the operation's route.
    pub method: &'static str,
    /// The tenant the request named (`params.tenant`), the route's prefix.
    pub tenant: Option<String>,
    /// The route below the interface URL and the tenant (`/tasks/t%201:cancel`).
    pub route: String,
    /// The query, when the request has parameters for it.
    pub query: Option<String>,
    /// The body (empty for a route that takes none).
    pub body: Vec<u8>,
}

impl RestCall {
    /// The path below the interface URL: the tenant's prefix, the route and the query.
    pub fn path(&self) -> String {
        let mut p = match &self.tenant {
            Some(t) => format!("/{}", segment(t)),
            None => String::new(),
        };
        p.push_str(&self.route);
        if let Some(q) = &self.query {
            p.push('?');
            p.push_str(q);
        }
        p
    }
}

/// A path segment (a tenant, a task or config id) percent-encoded, a space as `%20`.
pub fn segment(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes())
        .collect::<String>()
        .replace('+', "%20")
}

/// The JSON type a query parameter has in its request message.
#[derive(Clone, Copy)]
enum Kind {
    Str,
    Int,
    Bool,
}

/// The query parameters of `op`'s route (FACTS §6), with their types.
fn query_params(op: Op) -> &'static [(&'static str, Kind)] {
    match op {
        Op::GetTask => &[("historyLength", Kind::Int)],
        Op::ListTasks => &[
            ("contextId", Kind::Str),
            ("status", Kind::Str),
            ("pageSize", Kind::Int),
            ("pageToken", Kind::Str),
            ("historyLength", Kind::Int),
            ("statusTimestampAfter", Kind::Str),
            ("includeArtifacts", Kind::Bool),
        ],
        Op::ListPushConfigs => &[("pageSize", Kind::Int), ("pageToken", Kind::Str)],
        _ => &[],
    }
}

/// Whether `op`'s route takes the request message (less its path parameters) as its body.
fn has_body(op: Op) -> bool {
    matches!(
        op,
        Op::SendMessage | Op::SendStreamingMessage | Op::CancelTask | Op::CreatePushConfig
    )
}

/// The 1.0 JSON-RPC request `body` for `op` as its HTTP+JSON request: the route with the params'
/// path members, the tenant as the path's prefix, the query members, and the rest as the body.
pub fn rpc_request_to_rest(op: Op, body: &[u8]) -> Result<RestCall, TranslateError> {
    let text_ = std::str::from_utf8(body)
        .map_err(|_| TranslateError::untranslatable("body", "is not UTF-8"))?;
    let doc = Doc::parse(text_, "body")?;
    let env = Obj::parse(doc.root(), "body")?;
    let params = match env.get("params") {
        Some(p) => Obj::parse(p, "params")?,
        // Every member of these requests is optional.
        None if matches!(op, Op::GetExtendedAgentCard | Op::ListTasks) => Obj::empty(),
        None => return Err(TranslateError::untranslatable("params", "is required")),
    };
    let (method, route) = route_of(op, &params)?;
    // An empty tenant is none (as the request parser reads it): no empty path segment.
    let tenant = match params.get("tenant") {
        Some(t) => Some(text(t, "params.tenant")?.into_owned()).filter(|t| !t.is_empty()),
        None => None,
    };
    let mut query = url::form_urlencoded::Serializer::new(String::new());
    let mut any = false;
    for (key, kind) in query_params(op) {
        let Some(v) = get_either(&params, key) else {
            continue;
        };
        let f = member("params", key);
        let value = match kind {
            Kind::Str => text(v, &f)?.into_owned(),
            Kind::Int => integer(v, &f)?.to_json(),
            Kind::Bool => boolean(v, &f)?.to_string(),
        };
        query.append_pair(key, &value);
        any = true;
    }
    let query = any.then(|| query.finish());
    // What the route's path carries is not repeated in the body: the tenant, the task's id.
    let in_path: &[&str] = match op {
        Op::CancelTask => &["tenant", "id"],
        Op::CreatePushConfig => &["tenant", "taskId", "task_id"],
        _ => &["tenant"],
    };
    let body = if has_body(op) {
        let kept = params
            .entries()
            .filter(|(k, _)| !in_path.contains(&k.as_str()));
        Out::Map(kept.collect()).to_json().into_bytes()
    } else {
        Vec::new()
    };
    Ok(RestCall {
        method,
        tenant,
        route,
        query,
        body,
    })
}

/// The value of member `key` of `params`, or of its proto field name (`task_id` for `taskId`:
/// ProtoJSON readers take both).
fn get_either<'a>(params: &Obj<'a>, key: &str) -> Option<Val<'a>> {
    params.get(key).or_else(|| {
        let snake = crate::types::proto_name::proto_field_name(key);
        (snake != key).then(|| params.get(&snake)).flatten()
    })
}

/// Whether an id can be one path segment of a route without changing which route it is: not
/// empty, no dot-segment, no `/` (servers decode `%2F` before routing, FACTS §6), and not ending
/// in a custom verb (`x:cancel` would be read as CancelTask of `x`).
fn is_segment(id: &str) -> bool {
    !(id.is_empty()
        || id == "."
        || id == ".."
        || id.contains('/')
        || id.ends_with(":cancel")
        || id.ends_with(":subscribe"))
}

/// `op`'s HTTP method and route (below the tenant), with the path members of its request `params`.
fn route_of(op: Op, params: &Obj<'_>) -> Result<(&'static str, String), TranslateError> {
    let seg = |key: &str| -> Result<String, TranslateError> {
        let f = member("params", key);
        let v = get_either(params, key)
            .ok_or_else(|| TranslateError::untranslatable(&f, "is required"))?;
        let id = text(v, &f)?;
        if !is_segment(&id) {
            return Err(TranslateError::untranslatable(
                &f,
                "cannot be one path segment of the HTTP+JSON route",
            ));
        }
        Ok(segment(&id))
    };
    let configs = |id: bool| -> Result<String, TranslateError> {
        let mut p = format!("/tasks/{}/pushNotificationConfigs", seg("taskId")?);
        if id {
            p.push('/');
            p.push_str(&seg("id")?);
        }
        Ok(p)
    };
    Ok(match op {
        Op::SendMessage => ("POST", "/message:send".to_owned()),
        Op::SendStreamingMessage => ("POST", "/message:stream".to_owned()),
        Op::GetTask => ("GET", format!("/tasks/{}", seg("id")?)),
        Op::ListTasks => ("GET", "/tasks".to_owned()),
        Op::CancelTask => ("POST", format!("/tasks/{}:cancel", seg("id")?)),
        // The route SPEC §11.3 and both SDK clients use (PROTO says GET; both servers take both).
        Op::SubscribeToTask => ("POST", format!("/tasks/{}:subscribe", seg("id")?)),
        Op::CreatePushConfig => ("POST", configs(false)?),
        Op::GetPushConfig => ("GET", configs(true)?),
        Op::ListPushConfigs => ("GET", configs(false)?),
        Op::DeletePushConfig => ("DELETE", configs(true)?),
        Op::GetExtendedAgentCard => ("GET", "/extendedAgentCard".to_owned()),
    })
}

/// The path parameters of an HTTP+JSON route below the interface (`/tasks/{id}:cancel`,
/// `/tasks/{taskId}/pushNotificationConfigs/{id}`, …), percent-decoded, as request members.
pub(super) fn path_members(op: Op, path: &str) -> Vec<(&'static str, String)> {
    let segs: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let decoded = |s: &str| {
        percent_encoding::percent_decode_str(s)
            .decode_utf8_lossy()
            .into_owned()
    };
    // The route's own verb, once: `a:cancel:cancel` cancels the task `a:cancel`.
    let strip = |s: &'_ str| match op {
        Op::CancelTask => s.strip_suffix(":cancel").unwrap_or(s).to_owned(),
        Op::SubscribeToTask => s.strip_suffix(":subscribe").unwrap_or(s).to_owned(),
        _ => s.to_owned(),
    };
    match (op, segs.as_slice()) {
        (Op::GetTask | Op::CancelTask | Op::SubscribeToTask, ["tasks", id]) => {
            vec![("id", decoded(&strip(id)))]
        }
        (Op::CreatePushConfig | Op::ListPushConfigs, ["tasks", task, ..]) => {
            vec![("taskId", decoded(task))]
        }
        (Op::GetPushConfig | Op::DeletePushConfig, ["tasks", task, _, id]) => {
            vec![("taskId", decoded(task)), ("id", decoded(id))]
        }
        _ => Vec::new(),
    }
}

/// The query parameters `op` reads (FACTS §6), as request members with their ProtoJSON types; a
/// parameter the route does not define is left out, as an unknown member is.
pub(super) fn query_members(
    op: Op,
    query: Option<&str>,
) -> Result<Vec<(String, serde_json::Value)>, TranslateError> {
    use serde_json::Value;
    let mut out = Vec::new();
    for (k, v) in url::form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        let Some((_, kind)) = query_params(op).iter().find(|(name, _)| *name == k) else {
            continue;
        };
        let field = || format!("query.{k}");
        // Which of two values a reader takes is not agreed on, as for a key twice in JSON.
        if out.iter().any(|(seen, _): &(String, _)| *seen == k) {
            return Err(TranslateError::Untranslatable {
                field: field(),
                why: "appears twice",
            });
        }
        let value =
            match kind {
                Kind::Int => v.parse::<i64>().map(Value::from).map_err(|_| {
                    TranslateError::Untranslatable {
                        field: field(),
                        why: "is not an integer",
                    }
                })?,
                Kind::Bool => Value::Bool(match v.as_ref() {
                    "true" => true,
                    "false" => false,
                    _ => {
                        return Err(TranslateError::Untranslatable {
                            field: field(),
                            why: "is not true or false",
                        });
                    }
                }),
                Kind::Str => Value::String(v.into_owned()),
            };
        out.push((k.into_owned(), value));
    }
    Ok(out)
}

/// `op`'s 1.0 HTTP+JSON request (its route `path` below the interface, without the tenant, its
/// `query` and `body`; `tenant` the one it goes with) as the JSON-RPC request of id `id` (JSON
/// text): `params` is the body with the path's and the query's parameters and the tenant set.
pub fn rest_request_to_rpc(
    op: Op,
    path: &str,
    query: Option<&str>,
    body: &[u8],
    tenant: Option<&str>,
    id: &str,
) -> Result<Vec<u8>, TranslateError> {
    let json = |v: &serde_json::Value| Out::Owned(v.to_string());
    let mut set: Vec<(String, Out<'_>)> = Vec::new();
    for (k, v) in path_members(op, path) {
        set.push((k.to_owned(), json(&serde_json::Value::String(v))));
    }
    for (k, v) in query_members(op, query)? {
        set.push((k, json(&v)));
    }
    if let Some(t) = tenant {
        set.push(("tenant".into(), json(&serde_json::Value::from(t))));
    }
    let read = has_body(op) && !body.trim_ascii().is_empty();
    let text_ = if read {
        std::str::from_utf8(body)
            .map_err(|_| TranslateError::untranslatable("body", "is not UTF-8"))?
    } else {
        "{}"
    };
    let doc = Doc::parse(text_, "body")?;
    let obj = Obj::parse(doc.root(), "body")?;
    let mut params: Vec<(String, Out<'_>)> = obj
        .entries()
        .filter(|(k, _)| !set.iter().any(|(s, _)| s == k))
        .collect();
    params.extend(set);
    let envelope = Out::Obj(vec![
        ("jsonrpc", Some(Out::Lit("\"2.0\""))),
        ("id", Some(Out::Owned(id.to_owned()))),
        ("method", Some(Out::Owned(format!("\"{}\"", op.as_str())))),
        ("params", Some(Out::Map(params))),
    ]);
    Ok(envelope.to_json().into_bytes())
}

/// A JSON-RPC response of id `id` (JSON text) with `member` (`result` or `error`) `value`.
fn envelope(id: &str, member: &'static str, value: Out<'_>) -> Vec<u8> {
    Out::Obj(vec![
        ("jsonrpc", Some(Out::Lit("\"2.0\""))),
        ("id", Some(Out::Owned(id.to_owned()))),
        (member, Some(value)),
    ])
    .to_json()
    .into_bytes()
}

/// The one JSON value an HTTP+JSON 2xx body or event is, which must be an object.
fn object_body<'a>(doc: &'a Doc<'a>, field: &str) -> Result<Val<'a>, TranslateError> {
    let v = doc.root();
    if !v.get().starts_with('{') {
        return Err(TranslateError::untranslatable(field, "is not an object"));
    }
    Ok(v)
}

/// Statuses that say something about the HTTP exchange (authentication, a proxy, a rate limit)
/// rather than the A2A call: they cross as they came, on either binding (FACTS §7: auth
/// failures are outside the error table).
fn http_level(status: u16) -> Option<&'static str> {
    Some(match status {
        401 | 407 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        429 => "RESOURCE_EXHAUSTED",
        _ => return None,
    })
}

/// Whether `details` (a JSON array) holds an A2A ErrorInfo, and the JSON-RPC code its reason
/// names.
fn a2a_info(details: Option<Val<'_>>) -> (bool, Option<i64>) {
    let infos: Vec<Val<'_>> = details
        .and_then(|d| super::raw::array(d, "details").ok())
        .unwrap_or_default();
    let mut any = false;
    for i in infos {
        let Ok(o) = Obj::parse(i, "details") else {
            continue;
        };
        if o.get("@type").map(Val::get) != Some("\"type.googleapis.com/google.rpc.ErrorInfo\"") {
            continue;
        }
        any = true;
        let is_a2a = o.get("domain").map(Val::get) == Some("\"a2a-protocol.org\"");
        let reason = o.get("reason").and_then(|r| text(r, "reason").ok());
        if let (true, Some(r)) = (is_a2a, reason)
            && let Some(c) = super::errors::code_of_reason(&r)
        {
            return (true, Some(c));
        }
    }
    (any, None)
}

/// The JSON-RPC code of a `google.rpc.Status` of HTTP `http` answering `op`: the one its A2A
/// ErrorInfo names (domain `a2a-protocol.org`), else the one of its code name or HTTP status, as
/// for a gRPC status: NOT_FOUND (404) is TaskNotFoundError, INVALID_ARGUMENT InvalidParamsError,
/// UNIMPLEMENTED (501) MethodNotFoundError or, on a streaming operation, UnsupportedOperationError;
/// anything else InternalError.
fn code_of_status(op: Op, http: u16, status: &Obj<'_>, details: Option<Val<'_>>) -> i64 {
    if let (_, Some(c)) = a2a_info(details) {
        return c;
    }
    let name = status.get("status").and_then(|s| text(s, "status").ok());
    let streams = matches!(op, Op::SendStreamingMessage | Op::SubscribeToTask);
    match (name.as_deref(), http) {
        (Some("NOT_FOUND"), _) | (None, 404) => -32001,
        (Some("INVALID_ARGUMENT"), _) => -32602,
        (Some("UNIMPLEMENTED"), _) | (None, 501) if streams => -32004,
        (Some("UNIMPLEMENTED"), _) | (None, 501) => -32601,
        _ => -32603,
    }
}

/// An HTTP+JSON error body of HTTP `http` as the JSON-RPC error object: a `google.rpc.Status`
/// (`{"error": …}`), or the `{"detail"}` of a web framework whose routes did not take the call
/// (FastAPI: no A2A handler ran), read as the 0.3 translation reads it; `None` when it is
/// neither.
fn status_to_error<'a>(op: Op, http: u16, body: &'a Doc<'a>) -> Option<Out<'a>> {
    let outer = Obj::parse(body.root(), "body").ok()?;
    let string = |v: Option<Val<'a>>| v.filter(|m| m.get().starts_with('"'));
    let (code, message, data) = match outer.get("error") {
        Some(e) => {
            let status = Obj::parse(e, "error").ok()?;
            let details = status.get("details").filter(|d| d.get().starts_with('['));
            let code = code_of_status(op, http, &status, details);
            (code, string(status.get("message")), details)
        }
        None => {
            let detail = string(outer.get("detail"));
            let code = match http {
                404 | 405 => -32601,
                422 => -32602,
                _ if outer.has_key("detail") => -32603,
                _ => return None,
            };
            (code, detail, None)
        }
    };
    Some(Out::Obj(vec![
        ("code", Some(Out::Owned(code.to_string()))),
        (
            "message",
            Some(message.map_or(Out::Lit("\"\""), |m| Out::Raw(m.get()))),
        ),
        ("data", data.map(|d| Out::Raw(d.get()))),
    ]))
}

/// A 1.0 HTTP+JSON whole answer of `status` to `op` as the JSON-RPC answer to the request of id
/// `id` (JSON text), with its HTTP status: a 2xx body as `result` (a 204's empty one, JS's to a
/// delete, as `null`), an A2A error as the JSON-RPC error, on HTTP 200 as JSON-RPC agents answer.
/// `None` for what is no A2A answer (a redirect, a proxy's page) and for the HTTP-level statuses
/// (401, 403, 407, 429): it passes as it came, and is judged as any agent's.
pub fn rest_answer_to_rpc(
    op: Op,
    id: &str,
    status: u16,
    body: &[u8],
) -> Result<Option<(u16, Vec<u8>)>, TranslateError> {
    match status {
        200..=299 if body.trim_ascii().is_empty() => {
            // Only where the binding lets a success say nothing (`answer::check_whole`'s rule).
            if status == 204 || op == Op::DeletePushConfig {
                Ok(Some((200, envelope(id, "result", Out::Lit("null")))))
            } else {
                Err(TranslateError::untranslatable("body", "is empty"))
            }
        }
        200..=299 => {
            let doc = Doc::answer(TranslateError::utf8_text(body, "body")?, "body")?;
            let result = Out::Raw(object_body(&doc, "body")?.get());
            Ok(Some((200, envelope(id, "result", result))))
        }
        _ if http_level(status).is_some() => Ok(None),
        400..=599 => {
            let read = TranslateError::utf8_text(body, "body").and_then(|t| Doc::answer(t, "body"));
            let Ok(doc) = read else {
                return Ok(None);
            };
            Ok(status_to_error(op, status, &doc).map(|e| (200, envelope(id, "error", e))))
        }
        _ => Ok(None),
    }
}

/// One event of a 1.0 HTTP+JSON stream (a `StreamResponse`, or `{"error": …}` after `event:
/// error`) as the JSON-RPC stream's event for the request of id `id`; an error is the last.
pub fn rest_event_to_rpc(op: Op, id: &str, data: &[u8]) -> Result<Translated, TranslateError> {
    let doc = Doc::answer(TranslateError::utf8_text(data, "data")?, "data")?;
    let v = object_body(&doc, "data")?;
    let o = Obj::parse(v, "data")?;
    let answer = ["task", "message", "statusUpdate", "artifactUpdate"];
    let answers = answer.iter().any(|k| o.has(k));
    if o.has("error") && answers {
        return Err(TranslateError::untranslatable(
            "data",
            "is both an error and an answer",
        ));
    }
    if o.has("error") {
        let e = status_to_error(op, 500, &doc)
            .ok_or_else(|| TranslateError::untranslatable("data.error", "is not a Status"))?;
        return Ok(Translated {
            json: envelope(id, "error", e),
            last: true,
            error: true,
        });
    }
    Ok(Translated {
        json: envelope(id, "result", Out::Raw(v.get())),
        last: false,
        error: false,
    })
}

/// A JSON-RPC error object that came with HTTP `agent` as an HTTP+JSON error: the HTTP status
/// and the `google.rpc.Status` body of the 1.0 error table (a code outside it is a 500; an
/// HTTP-level status the agent answered with, such as 401, is kept), with the agent's message and
/// ErrorInfo (the one A2A requires, from the code, when the agent sent none).
fn error_to_status(agent: u16, raw: Val<'_>) -> Result<(u16, Out<'_>), TranslateError> {
    let e = Obj::parse(raw, "error")?;
    let code: i64 = (e.get("code"))
        .and_then(|c| c.get().parse().ok())
        .ok_or_else(|| TranslateError::untranslatable("error.code", "is not an integer"))?;
    let message = e.get("message").filter(|m| m.get().starts_with('"'));
    let data = e.get("data").filter(|d| d.get().starts_with('['));
    let (http, name) = match (http_level(agent), super::errors::http_of(code)) {
        (Some(name), _) => (agent, name),
        (None, Some(table)) => table,
        (None, None) => (500, "INTERNAL"),
    };
    let details = match data {
        Some(d) if a2a_info(Some(d)).0 => Some(Out::Raw(d.get())),
        _ => super::errors::info_of(code),
    };
    let status = Out::Obj(vec![
        ("code", Some(Out::Owned(http.to_string()))),
        ("status", Some(Out::Owned(format!("\"{name}\"")))),
        (
            "message",
            Some(message.map_or(Out::Lit("\"\""), |m| Out::Raw(m.get()))),
        ),
        ("details", details),
    ]);
    Ok((http, Out::Obj(vec![("error", Some(status))])))
}

/// The parsed JSON-RPC response `text_`, held to answering the request of id `id` (an error may
/// carry `null`: JSON-RPC's id of a request the server could not read), with its `result` (which
/// may be `null`, a delete's) or its `error`.
fn response<'a>(doc: &'a Doc<'a>, id: &str) -> Result<(Obj<'a>, Member<'a>), TranslateError> {
    let o = Obj::parse(doc.root(), "body")?;
    if o.get("jsonrpc").map(Val::get) != Some("\"2.0\"") {
        return Err(TranslateError::untranslatable("jsonrpc", "is not \"2.0\""));
    }
    let member = match (o.raw("result"), o.raw("error")) {
        (Some(_), Some(_)) => {
            return Err(TranslateError::untranslatable(
                "body",
                "has both result and error",
            ));
        }
        (Some(r), None) => Member::Result(r),
        (None, Some(e)) if e.get().starts_with('{') => Member::Error(e),
        (None, Some(_)) => return Err(TranslateError::untranslatable("error", "is not an object")),
        (None, None) => {
            return Err(TranslateError::untranslatable(
                "body",
                "has neither result nor error",
            ));
        }
    };
    let said = o.raw("id").map(Val::get);
    let null_error = matches!(member, Member::Error(_)) && said == Some("null");
    if said != Some(id) && !null_error {
        return Err(TranslateError::untranslatable("id", "is not the request's"));
    }
    Ok((o, member))
}

/// What a JSON-RPC response carries.
enum Member<'a> {
    Result(Val<'a>),
    Error(Val<'a>),
}

/// A 1.0 JSON-RPC whole answer of HTTP `status` (to the request of id `id`) as the HTTP+JSON
/// answer: the `result` on 200 (`{}` for a `null` one, a delete's), or the error's HTTP status
/// and body.
pub fn rpc_answer_to_rest(
    status: u16,
    id: &str,
    body: &[u8],
) -> Result<(u16, Vec<u8>), TranslateError> {
    let doc = Doc::answer(TranslateError::utf8_text(body, "body")?, "body")?;
    let (_, member) = response(&doc, id)?;
    match member {
        Member::Result(r) if r.get() == "null" => Ok((200, b"{}".to_vec())),
        Member::Result(r) => Ok((200, r.get().as_bytes().to_vec())),
        Member::Error(e) => {
            let (http, out) = error_to_status(status, e)?;
            Ok((http, out.to_json().into_bytes()))
        }
    }
}

/// One event of a 1.0 JSON-RPC stream (a response to the request of id `id`) as the HTTP+JSON
/// stream's: the `StreamResponse`, or an error's `{"error": …}` (the last, sent after `event:
/// error`).
pub fn rpc_event_to_rest(id: &str, data: &[u8]) -> Result<Translated, TranslateError> {
    let doc = Doc::answer(TranslateError::utf8_text(data, "data")?, "data")?;
    let (_, member) = response(&doc, id)?;
    match member {
        Member::Result(r) if r.get().starts_with('{') => Ok(Translated {
            json: r.get().as_bytes().to_vec(),
            last: false,
            error: false,
        }),
        Member::Error(e) => Ok(Translated {
            json: error_to_status(200, e)?.1.to_json().into_bytes(),
            last: true,
            error: true,
        }),
        Member::Result(_) => Err(TranslateError::untranslatable("result", "is not an object")),
    }
}
