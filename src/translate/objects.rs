//! The A2A objects both versions have, translated member by member (pure, no I/O): messages,
//! parts, tasks and their status, artifacts, stream events and push configs, with their enums.
//!
//! Each function names the object's members it knows and writes only those: a member the other
//! version has no place for is left out, never passed on half-translated (an unknown 0.3 member
//! reaching a 1.0 SDK client would be read as something else, or refused). Direction names say
//! where the object goes: `*_to03` toward a 0.3 agent, `*_to10` toward the 1.0 caller.
//!
//! A 0.3 agent spells the same objects two ways ([`Wire`]): its JSON-RPC binding writes the 0.3
//! JSON schema's objects, its HTTP+JSON binding the ProtoJSON of the 0.3 gRPC transcoding. Each
//! conversion is written once and asks the wire only where the two spellings part (a role, a
//! state, a part, a discriminator, a member name), so a fix to one object is a fix on both
//! bindings (`tests/fixtures/wire/v03/` holds both SDKs' recordings of either).

use std::borrow::Cow;

use super::TranslateError;
use super::raw::{
    Obj, Out, Val, boolean, each, index, integer, member, object, opt, req, string, strings, text,
};

type R<'a> = Result<Option<Out<'a>>, TranslateError>;

/// How a 0.3 agent spells its objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Wire {
    /// The JSON-RPC binding: `kind` discriminators, `user`/`completed`, parts under `parts`,
    /// files as `{bytes|uri, mimeType, name}`.
    Rpc,
    /// The HTTP+JSON binding (the 0.3 proto's ProtoJSON): no `kind`, `ROLE_*`/`TASK_STATE_*`
    /// (with the proto's `TASK_STATE_CANCELLED`), a message's parts under `content`, files as
    /// `{fileWithBytes|fileWithUri, mimeType, name}`, data as `{data: {...}}`, results and
    /// events wrapped (`{task}`, `{message}`, `{statusUpdate}`, `{artifactUpdate}`).
    Rest,
}

/// 1.0 `Role` (name or ProtoJSON number) → 0.3 role (the proto's own name on HTTP+JSON).
fn role_to03<'a>(w: Wire, raw: Val<'_>, field: &str) -> Result<Out<'a>, TranslateError> {
    let user = match raw.get() {
        "\"ROLE_USER\"" | "1" => true,
        "\"ROLE_AGENT\"" | "2" => false,
        _ => {
            return Err(TranslateError::untranslatable(
                field,
                "is not ROLE_USER or ROLE_AGENT",
            ));
        }
    };
    Ok(Out::Lit(match (w, user) {
        (Wire::Rpc, true) => "\"user\"",
        (Wire::Rpc, false) => "\"agent\"",
        (Wire::Rest, true) => "\"ROLE_USER\"",
        (Wire::Rest, false) => "\"ROLE_AGENT\"",
    }))
}

/// 0.3 role → 1.0 `Role`.
fn role_to10<'a>(w: Wire, raw: Val<'_>, field: &str) -> Result<Out<'a>, TranslateError> {
    match (w, raw.get()) {
        (Wire::Rpc, _) => match &*text(raw, field)? {
            "user" => Ok(Out::Lit("\"ROLE_USER\"")),
            "agent" => Ok(Out::Lit("\"ROLE_AGENT\"")),
            _ => Err(TranslateError::untranslatable(
                field,
                "is not user or agent",
            )),
        },
        // ProtoJSON: the enum's name, or its number.
        (Wire::Rest, "\"ROLE_USER\"" | "1") => Ok(Out::Lit("\"ROLE_USER\"")),
        (Wire::Rest, "\"ROLE_AGENT\"" | "2") => Ok(Out::Lit("\"ROLE_AGENT\"")),
        (Wire::Rest, _) => Err(TranslateError::untranslatable(
            field,
            "is not ROLE_USER or ROLE_AGENT",
        )),
    }
}

/// The task states of both versions, in 1.0's (and the 0.3 proto's) numbering, ProtoJSON may
/// send the number: 1.0's name, the 0.3 JSON-RPC name, the 0.3 proto's name (HTTP+JSON), which
/// spells one state `TASK_STATE_CANCELLED` where 1.0 writes `TASK_STATE_CANCELED`.
const STATES: [(&str, &str, &str); 9] = [
    (
        "\"TASK_STATE_UNSPECIFIED\"",
        "\"unknown\"",
        "\"TASK_STATE_UNSPECIFIED\"",
    ),
    (
        "\"TASK_STATE_SUBMITTED\"",
        "\"submitted\"",
        "\"TASK_STATE_SUBMITTED\"",
    ),
    (
        "\"TASK_STATE_WORKING\"",
        "\"working\"",
        "\"TASK_STATE_WORKING\"",
    ),
    (
        "\"TASK_STATE_COMPLETED\"",
        "\"completed\"",
        "\"TASK_STATE_COMPLETED\"",
    ),
    (
        "\"TASK_STATE_FAILED\"",
        "\"failed\"",
        "\"TASK_STATE_FAILED\"",
    ),
    (
        "\"TASK_STATE_CANCELED\"",
        "\"canceled\"",
        "\"TASK_STATE_CANCELLED\"",
    ),
    (
        "\"TASK_STATE_INPUT_REQUIRED\"",
        "\"input-required\"",
        "\"TASK_STATE_INPUT_REQUIRED\"",
    ),
    (
        "\"TASK_STATE_REJECTED\"",
        "\"rejected\"",
        "\"TASK_STATE_REJECTED\"",
    ),
    (
        "\"TASK_STATE_AUTH_REQUIRED\"",
        "\"auth-required\"",
        "\"TASK_STATE_AUTH_REQUIRED\"",
    ),
];

/// 0.3 `TaskState` → 1.0 (`unknown` is `TASK_STATE_UNSPECIFIED`).
pub(super) fn state_to10<'a>(
    w: Wire,
    raw: Val<'_>,
    field: &str,
) -> Result<Out<'a>, TranslateError> {
    let found = match w {
        Wire::Rpc => {
            let name = text(raw, field)?;
            // The table holds JSON text: the name between its quotes.
            STATES
                .iter()
                .find(|(_, v03, _)| v03.get(1..v03.len() - 1) == Some(&*name))
        }
        Wire::Rest => {
            let t = raw.get();
            STATES
                .iter()
                .enumerate()
                .find(|(i, (_, _, rest))| *rest == t || i.to_string() == t)
                .map(|(_, s)| s)
        }
    };
    found
        .map(|(v10, _, _)| Out::Lit(v10))
        .ok_or_else(|| TranslateError::untranslatable(field, "is not an A2A 0.3 task state"))
}

/// 1.0 `TaskState` (name or number) → 0.3.
#[cfg(test)]
pub(super) fn state_to03(
    w: Wire,
    raw: Val<'_>,
    field: &str,
) -> Result<Out<'static>, TranslateError> {
    let t = raw.get();
    STATES
        .iter()
        .enumerate()
        .find(|(i, (v10, _, _))| *v10 == t || i.to_string() == t)
        .map(|(_, (_, rpc, rest))| Out::Lit(if w == Wire::Rpc { rpc } else { rest }))
        .ok_or_else(|| TranslateError::untranslatable(field, "is not an A2A 1.0 task state"))
}

/// 1.0 `Part` (one of `text`/`raw`/`url`/`data`) → 0.3 `TextPart`/`FilePart`/`DataPart`.
/// `mediaType` and `filename` have a place only on a file; 0.3 data must be an object.
pub(super) fn part_to03<'a>(w: Wire, raw: Val<'a>, field: &str) -> Result<Out<'a>, TranslateError> {
    let p = Obj::parse(raw, field)?;
    let meta = opt(&p, "metadata", field, object)?;
    let which: Vec<&str> = ["text", "raw", "url", "data"]
        .into_iter()
        .filter(|k| p.has(k))
        .collect();
    // The discriminator the JSON-RPC binding writes; the proto's oneof needs none.
    let kind = |k: &'static str| (w == Wire::Rpc).then_some(Out::Lit(k));
    match which.as_slice() {
        ["text"] => Ok(Out::Obj(vec![
            ("kind", kind("\"text\"")),
            ("text", opt(&p, "text", field, string)?),
            ("metadata", meta),
        ])),
        [k @ ("raw" | "url")] => {
            let content = match (w, *k) {
                (Wire::Rpc, "raw") => "bytes",
                (Wire::Rpc, _) => "uri",
                (Wire::Rest, "raw") => "fileWithBytes",
                (Wire::Rest, _) => "fileWithUri",
            };
            let file = Out::Obj(vec![
                (content, opt(&p, k, field, string)?),
                ("mimeType", opt(&p, "mediaType", field, string)?),
                ("name", opt(&p, "filename", field, string)?),
            ]);
            Ok(Out::Obj(vec![
                ("kind", kind("\"file\"")),
                ("file", Some(file)),
                ("metadata", meta),
            ]))
        }
        ["data"] => data_part_to03(w, &p, field, meta),
        [] => Err(TranslateError::untranslatable(
            field,
            "has none of text, raw, url, data",
        )),
        _ => Err(TranslateError::untranslatable(
            field,
            "has more than one of text, raw, url, data",
        )),
    }
}

/// The member of 0.3 part metadata that says its data is a wrapped non-object value (the official
/// SDKs' convention: Python a2a-sdk 1.3's `compat.v0_3.conversions`).
const DATA_PART_COMPAT: &str = "data_part_compat";

/// A 0.3 `DataPart` with object data `data`: `{kind: "data", data}` on JSON-RPC, the proto's
/// `{data: {data}}` (a `DataPart` message holding a `Struct`) on HTTP+JSON.
fn data_part<'a>(w: Wire, data: Out<'a>, metadata: Option<Out<'a>>) -> Out<'a> {
    match w {
        Wire::Rpc => Out::Obj(vec![
            ("kind", Some(Out::Lit("\"data\""))),
            ("data", Some(data)),
            ("metadata", metadata),
        ]),
        Wire::Rest => Out::Obj(vec![
            ("data", Some(Out::Obj(vec![("data", Some(data))]))),
            ("metadata", metadata),
        ]),
    }
}

/// A 1.0 data part → 0.3 `DataPart`. 0.3 data is an object; any other JSON value (a 1.0 data part
/// holds any) goes as `{"value": X}` with `metadata.data_part_compat: true`, as the SDKs send it,
/// and [`data_part_to10`] unwraps it on the way back.
fn data_part_to03<'a>(
    w: Wire,
    p: &Obj<'a>,
    field: &str,
    meta: Option<Out<'a>>,
) -> Result<Out<'a>, TranslateError> {
    let df = member(field, "data");
    let data = p
        .get("data")
        .ok_or_else(|| TranslateError::untranslatable(&df, "is required"))?;
    // Whatever the data, the caller's metadata may not carry the marker: a 0.3 reader would
    // take `{"value": X}` object data beside it for a wrapped X and unwrap it.
    let members = match p.get("metadata") {
        Some(m) => {
            let mf = member(field, "metadata");
            let members = Obj::parse(m, &mf)?;
            if members.has_key(DATA_PART_COMPAT) {
                return Err(TranslateError::untranslatable(
                    &member(&mf, DATA_PART_COMPAT),
                    "is the marker A2A 0.3 uses for wrapped data, so it cannot also be metadata",
                ));
            }
            Some((m, members))
        }
        None => None,
    };
    if let Ok(obj) = object(data, &df) {
        return Ok(data_part(w, obj, meta));
    }
    // The marker goes first, the caller's metadata after it byte for byte.
    let marker = format!("\"{DATA_PART_COMPAT}\":true");
    let metadata = match members {
        // `m` is an object's text: `{`, then its members (if any), then `}`.
        Some((m, members)) if !members.is_empty() => {
            format!("{{{marker},{}", m.get().get(1..).unwrap_or_default())
        }
        _ => format!("{{{marker}}}"),
    };
    let wrapped = Out::Obj(vec![("value", Some(Out::Raw(data.get())))]);
    Ok(data_part(w, wrapped, Some(Out::Owned(metadata))))
}

/// Whether a JSON value is true as Python reads it (the SDKs' `if data_part_compat:`): not
/// `false`, `null`, `0`, `""`, `[]` or `{}`.
fn truthy(raw: Val<'_>) -> bool {
    match raw.get() {
        "true" => true,
        "false" | "null" | "\"\"" => false,
        t if t.starts_with('[') => !matches!(super::raw::array(raw, "").as_deref(), Ok([])),
        t if t.starts_with('{') => Obj::parse(raw, "").is_ok_and(|o| !o.is_empty()),
        t if t.starts_with('"') => true,
        t => t.parse::<f64>() != Ok(0.0),
    }
}

/// A 0.3 `DataPart` (its object data `data`, at `df`, and the part `p` for its metadata) → the
/// 1.0 part's `data` and `metadata`: with `metadata.data_part_compat` true (as Python reads it)
/// and data `{"value": X, …}` (the SDKs' wrapping of a non-object value), `X` and the metadata
/// without the marker (its other members' values as they came; their names written anew, so an
/// escaped name may come back escaped differently).
fn data_part_to10<'a>(
    p: &Obj<'a>,
    data: Val<'a>,
    df: &str,
    field: &str,
) -> Result<Out<'a>, TranslateError> {
    let meta = opt(p, "metadata", field, object)?;
    let obj = object(data, df)?;
    let wrapped = match p.get("metadata") {
        Some(m) => {
            let members = Obj::parse(m, &member(field, "metadata"))?;
            let marked = members.get(DATA_PART_COMPAT).is_some_and(truthy);
            marked.then_some(members)
        }
        None => None,
    };
    let Some(members) = wrapped else {
        return Ok(Out::Obj(vec![("data", Some(obj)), ("metadata", meta)]));
    };
    // As the SDKs read it: `data["value"]`, other members of `data` ignored.
    let inner = Obj::parse(data, df)?;
    let value = inner.raw("value").ok_or_else(|| {
        TranslateError::untranslatable(df, "has no value member, which data_part_compat says")
    })?;
    let rest: Vec<_> = members
        .entries()
        .filter(|(k, _)| k != DATA_PART_COMPAT)
        .collect();
    Ok(Out::Obj(vec![
        ("data", Some(Out::Raw(value.get()))),
        ("metadata", (!rest.is_empty()).then_some(Out::Map(rest))),
    ]))
}

/// What a 0.3 part is: JSON-RPC says so in `kind`; on HTTP+JSON the one member of the proto's
/// oneof that is present does.
fn part_kind(w: Wire, p: &Obj<'_>, field: &str) -> Result<String, TranslateError> {
    let kf = member(field, "kind");
    match w {
        Wire::Rpc => {
            let kind = p
                .get("kind")
                .ok_or_else(|| TranslateError::untranslatable(&kf, "is required"))?;
            text(kind, &kf).map(Cow::into_owned)
        }
        Wire::Rest => {
            let which: Vec<&str> = ["text", "file", "data"]
                .into_iter()
                .filter(|k| p.has(k))
                .collect();
            match which.as_slice() {
                [one] => Ok((*one).to_owned()),
                _ => Err(TranslateError::untranslatable(
                    field,
                    "has not exactly one of text, file, data",
                )),
            }
        }
    }
}

/// 0.3 part → 1.0 `Part`.
pub(super) fn part_to10<'a>(w: Wire, raw: Val<'a>, field: &str) -> Result<Out<'a>, TranslateError> {
    let p = Obj::parse(raw, field)?;
    let kind = part_kind(w, &p, field)?;
    let meta = opt(&p, "metadata", field, object)?;
    match kind.as_str() {
        "text" => Ok(Out::Obj(vec![
            ("text", req(&p, "text", field, string)?),
            ("metadata", meta),
        ])),
        "data" => {
            let df = member(field, "data");
            let data = p
                .get("data")
                .ok_or_else(|| TranslateError::untranslatable(&df, "is required"))?;
            match w {
                Wire::Rpc => data_part_to10(&p, data, &df, field),
                // The proto's `DataPart` message around the `Struct`.
                Wire::Rest => {
                    let holder = Obj::parse(data, &df)?;
                    let inner = member(&df, "data");
                    let data = holder
                        .get("data")
                        .ok_or_else(|| TranslateError::untranslatable(&inner, "is required"))?;
                    data_part_to10(&p, data, &inner, field)
                }
            }
        }
        "file" => {
            let ff = member(field, "file");
            let file = p
                .get("file")
                .ok_or_else(|| TranslateError::untranslatable(&ff, "is required"))?;
            let f = Obj::parse(file, &ff)?;
            let (bytes, uri) = match w {
                Wire::Rpc => ("bytes", "uri"),
                Wire::Rest => ("fileWithBytes", "fileWithUri"),
            };
            let (key, content) = match (f.has(bytes), f.has(uri)) {
                (true, false) => ("raw", opt(&f, bytes, &ff, string)?),
                (false, true) => ("url", opt(&f, uri, &ff, string)?),
                _ => {
                    return Err(TranslateError::untranslatable(
                        &ff,
                        "has not exactly one of bytes, uri",
                    ));
                }
            };
            Ok(Out::Obj(vec![
                (key, content),
                ("mediaType", opt(&f, "mimeType", &ff, string)?),
                ("filename", opt(&f, "name", &ff, string)?),
                ("metadata", meta),
            ]))
        }
        _ => Err(TranslateError::untranslatable(
            &member(field, "kind"),
            "is not text, file or data",
        )),
    }
}

/// The member holding a message's parts: `parts`, or the 0.3 proto's `content`.
fn parts_member(w: Wire) -> &'static str {
    match w {
        Wire::Rpc => "parts",
        Wire::Rest => "content",
    }
}

/// Each part of the 0.3 parts list `key` of `o`, as 1.0 parts. Required on JSON-RPC; on
/// HTTP+JSON an absent list is the proto3 empty one (ProtoJSON leaves empty repeated fields out).
fn parts_to10<'a>(w: Wire, o: &Obj<'a>, key: &str, field: &str) -> R<'a> {
    let f = |v, f: &str| each(v, f, |v, f| part_to10(w, v, f));
    match (w, o.get(key)) {
        (Wire::Rest, None) => Ok(Some(Out::Lit("[]"))),
        _ => req(o, key, field, f),
    }
}

/// 1.0 `Message` → 0.3 `Message` (`kind: "message"` on JSON-RPC). The 0.3 proto has no
/// `referenceTaskIds`: over HTTP+JSON they have no place and are left out.
pub(super) fn message_to03<'a>(
    w: Wire,
    raw: Val<'a>,
    field: &str,
) -> Result<Out<'a>, TranslateError> {
    let m = Obj::parse(raw, field)?;
    let rpc = w == Wire::Rpc;
    Ok(Out::Obj(vec![
        ("kind", rpc.then_some(Out::Lit("\"message\""))),
        ("messageId", req(&m, "messageId", field, string)?),
        ("contextId", opt(&m, "contextId", field, string)?),
        ("taskId", opt(&m, "taskId", field, string)?),
        ("role", req(&m, "role", field, |v, f| role_to03(w, v, f))?),
        (
            parts_member(w),
            req(&m, "parts", field, |v, f| {
                each(v, f, |v, f| part_to03(w, v, f))
            })?,
        ),
        ("metadata", opt(&m, "metadata", field, object)?),
        ("extensions", opt(&m, "extensions", field, strings)?),
        (
            "referenceTaskIds",
            if rpc {
                opt(&m, "referenceTaskIds", field, strings)?
            } else {
                None
            },
        ),
    ]))
}

/// 0.3 `Message` → 1.0 `Message`.
pub(super) fn message_to10<'a>(
    w: Wire,
    raw: Val<'a>,
    field: &str,
) -> Result<Out<'a>, TranslateError> {
    message_to10_of(w, &Obj::parse(raw, field)?, field)
}

/// [`message_to10`] of the object already read.
fn message_to10_of<'a>(w: Wire, m: &Obj<'a>, field: &str) -> Result<Out<'a>, TranslateError> {
    Ok(Out::Obj(vec![
        ("messageId", req(m, "messageId", field, string)?),
        ("contextId", opt(m, "contextId", field, string)?),
        ("taskId", opt(m, "taskId", field, string)?),
        ("role", req(m, "role", field, |v, f| role_to10(w, v, f))?),
        ("parts", parts_to10(w, m, parts_member(w), field)?),
        ("metadata", opt(m, "metadata", field, object)?),
        ("extensions", opt(m, "extensions", field, strings)?),
        // Not a member of the 0.3 proto's message: an HTTP+JSON agent's is not read.
        (
            "referenceTaskIds",
            match w {
                Wire::Rpc => opt(m, "referenceTaskIds", field, strings)?,
                Wire::Rest => None,
            },
        ),
    ]))
}

/// 0.3 `TaskStatus` → 1.0.
fn status_to10<'a>(w: Wire, raw: Val<'a>, field: &str) -> Result<Out<'a>, TranslateError> {
    let s = Obj::parse(raw, field)?;
    Ok(Out::Obj(vec![
        (
            "state",
            req(&s, "state", field, |v, f| state_to10(w, v, f))?,
        ),
        (
            "message",
            opt(&s, "message", field, |v, f| message_to10(w, v, f))?,
        ),
        ("timestamp", opt(&s, "timestamp", field, string)?),
    ]))
}

/// 0.3 `Artifact` → 1.0 (the same members; its parts translated).
fn artifact_to10<'a>(w: Wire, raw: Val<'a>, field: &str) -> Result<Out<'a>, TranslateError> {
    let a = Obj::parse(raw, field)?;
    Ok(Out::Obj(vec![
        ("artifactId", req(&a, "artifactId", field, string)?),
        ("name", opt(&a, "name", field, string)?),
        ("description", opt(&a, "description", field, string)?),
        // An artifact's parts stay `parts` on both bindings (the proto names only a message's
        // `content`).
        ("parts", parts_to10(w, &a, "parts", field)?),
        ("metadata", opt(&a, "metadata", field, object)?),
        ("extensions", opt(&a, "extensions", field, strings)?),
    ]))
}

/// 0.3 `Task` → 1.0 `Task`.
pub(super) fn task_to10<'a>(w: Wire, raw: Val<'a>, field: &str) -> Result<Out<'a>, TranslateError> {
    task_to10_of(w, &Obj::parse(raw, field)?, field)
}

/// [`task_to10`] of the object already read.
pub(super) fn task_to10_of<'a>(
    w: Wire,
    t: &Obj<'a>,
    field: &str,
) -> Result<Out<'a>, TranslateError> {
    Ok(Out::Obj(vec![
        ("id", req(t, "id", field, string)?),
        ("contextId", opt(t, "contextId", field, string)?),
        (
            "status",
            req(t, "status", field, |v, f| status_to10(w, v, f))?,
        ),
        (
            "artifacts",
            opt(t, "artifacts", field, |v, f| {
                each(v, f, |v, f| artifact_to10(w, v, f))
            })?,
        ),
        (
            "history",
            opt(t, "history", field, |v, f| {
                each(v, f, |v, f| message_to10(w, v, f))
            })?,
        ),
        ("metadata", opt(t, "metadata", field, object)?),
    ]))
}

/// 0.3 `TaskStatusUpdateEvent` → 1.0 (without `final`, which the caller reads from the stream's
/// end; see [`super::rpc`]).
fn status_update_to10<'a>(w: Wire, e: &Obj<'a>, field: &str) -> Result<Out<'a>, TranslateError> {
    Ok(Out::Obj(vec![
        ("taskId", req(e, "taskId", field, string)?),
        ("contextId", req(e, "contextId", field, string)?),
        (
            "status",
            req(e, "status", field, |v, f| status_to10(w, v, f))?,
        ),
        ("metadata", opt(e, "metadata", field, object)?),
    ]))
}

/// 0.3 `TaskArtifactUpdateEvent` → 1.0.
fn artifact_update_to10<'a>(w: Wire, e: &Obj<'a>, field: &str) -> Result<Out<'a>, TranslateError> {
    let flag = |k: &str| -> R<'a> {
        opt(e, k, field, |v, f| {
            boolean(v, f).map(|b| Out::Lit(if b { "true" } else { "false" }))
        })
    };
    Ok(Out::Obj(vec![
        ("taskId", req(e, "taskId", field, string)?),
        ("contextId", req(e, "contextId", field, string)?),
        (
            "artifact",
            req(e, "artifact", field, |v, f| artifact_to10(w, v, f))?,
        ),
        ("append", flag("append")?),
        ("lastChunk", flag("lastChunk")?),
        ("metadata", opt(e, "metadata", field, object)?),
    ]))
}

/// What a 0.3 result object is, by its `kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Task,
    Message,
    StatusUpdate,
    ArtifactUpdate,
}

/// The `kind` of the 0.3 result object `o`, already read (the same read is then translated).
pub(super) fn kind_in(o: &Obj<'_>, field: &str) -> Result<Kind, TranslateError> {
    let kf = member(field, "kind");
    let k = o
        .get("kind")
        .ok_or_else(|| TranslateError::untranslatable(&kf, "is required"))?;
    match &*text(k, &kf)? {
        "task" => Ok(Kind::Task),
        "message" => Ok(Kind::Message),
        "status-update" => Ok(Kind::StatusUpdate),
        "artifact-update" => Ok(Kind::ArtifactUpdate),
        _ => Err(TranslateError::untranslatable(
            &kf,
            "is not task, message, status-update or artifact-update",
        )),
    }
}

/// The wrapped object of a 0.3 HTTP+JSON result or event (`{task}`, `{message}`,
/// `{statusUpdate}`, `{artifactUpdate}`: the proto's oneof), its kind and its path.
fn unwrap_rest<'a>(raw: Val<'a>, field: &str) -> Result<(Kind, Val<'a>, String), TranslateError> {
    let o = Obj::parse(raw, field)?;
    let found: Vec<(Kind, &str)> = [
        (Kind::Task, "task"),
        (Kind::Message, "message"),
        (Kind::StatusUpdate, "statusUpdate"),
        (Kind::ArtifactUpdate, "artifactUpdate"),
    ]
    .into_iter()
    .filter(|(_, k)| o.has(k))
    .collect();
    match found.as_slice() {
        [(kind, key)] => Ok((*kind, o.get(key).unwrap_or(raw), member(field, key))),
        _ => Err(TranslateError::untranslatable(
            field,
            "has not exactly one of task, message, statusUpdate, artifactUpdate",
        )),
    }
}

/// A 0.3 result object (JSON-RPC: `kind` says which; HTTP+JSON: its wrapper does) → the 1.0
/// `StreamResponse`/`SendMessageResponse` wrapper, and whether it is a status update with
/// `final: true`.
pub(super) fn wrapped_to10<'a>(
    w: Wire,
    raw: Val<'a>,
    field: &str,
    allow_events: bool,
) -> Result<(Out<'a>, bool), TranslateError> {
    // The object is read once: its kind, then its members (every read scans all it holds).
    let (kind, o, path) = match w {
        Wire::Rpc => {
            let o = Obj::parse(raw, field)?;
            (kind_in(&o, field)?, o, field.to_owned())
        }
        Wire::Rest => {
            let (kind, inner, path) = unwrap_rest(raw, field)?;
            (kind, Obj::parse(inner, &path)?, path)
        }
    };
    let field = path.as_str();
    let (key, inner, fin) = match kind {
        Kind::Task => ("task", task_to10_of(w, &o, field)?, false),
        // In a stream a message is the whole answer (no task follows it, and 0.3 marks it with
        // no `final`): it ends the stream, so the caller's stream and the agent's connection are
        // not held open waiting for the agent to close.
        Kind::Message => ("message", message_to10_of(w, &o, field)?, allow_events),
        Kind::StatusUpdate if allow_events => {
            let fin = match o.get("final") {
                Some(v) => boolean(v, &member(field, "final"))?,
                None => false,
            };
            ("statusUpdate", status_update_to10(w, &o, field)?, fin)
        }
        Kind::ArtifactUpdate if allow_events => {
            ("artifactUpdate", artifact_update_to10(w, &o, field)?, false)
        }
        Kind::StatusUpdate | Kind::ArtifactUpdate => {
            return Err(TranslateError::untranslatable(
                &member(field, "kind"),
                "is an event, which only a stream carries",
            ));
        }
    };
    Ok((Out::Obj(vec![(key, Some(inner))]), fin))
}

/// 1.0 `AuthenticationInfo{scheme, credentials}` → 0.3 `{schemes: [scheme], credentials}`.
fn auth_to03<'a>(raw: Val<'a>, field: &str) -> Result<Out<'a>, TranslateError> {
    let a = Obj::parse(raw, field)?;
    Ok(Out::Obj(vec![
        (
            "schemes",
            req(&a, "scheme", field, |v, f| {
                string(v, f).map(|s| Out::Arr(vec![s]))
            })?,
        ),
        ("credentials", opt(&a, "credentials", field, string)?),
    ]))
}

/// 0.3 `{schemes, credentials}` → 1.0 `{scheme, credentials}`: 1.0 holds one scheme, so the
/// first is kept (the one a client tries first); none left means no authentication member.
fn auth_to10<'a>(raw: Val<'a>, field: &str) -> R<'a> {
    let a = Obj::parse(raw, field)?;
    let sf = member(field, "schemes");
    let schemes = match a.get("schemes") {
        Some(s) => super::raw::array(s, &sf)?,
        None => Vec::new(),
    };
    let Some(first) = schemes.first() else {
        return Ok(None);
    };
    Ok(Some(Out::Obj(vec![
        ("scheme", Some(string(*first, &index(&sf, 0))?)),
        ("credentials", opt(&a, "credentials", field, string)?),
    ])))
}

/// The members of a 1.0 `TaskPushNotificationConfig` that 0.3's `PushNotificationConfig` holds.
pub(super) fn push_config_to03<'a>(raw: Val<'a>, field: &str) -> Result<Out<'a>, TranslateError> {
    let c = Obj::parse(raw, field)?;
    Ok(Out::Obj(vec![
        ("id", opt(&c, "id", field, string)?),
        ("url", req(&c, "url", field, string)?),
        ("token", opt(&c, "token", field, string)?),
        (
            "authentication",
            opt(&c, "authentication", field, auth_to03)?,
        ),
    ]))
}

/// A 1.0 `TaskPushNotificationConfig` (flat) → 0.3 `{taskId, pushNotificationConfig}` (the
/// JSON-RPC params; the HTTP+JSON request names the task in its path and body: see `rest`).
pub(super) fn task_push_config_to03<'a>(
    raw: Val<'a>,
    field: &str,
) -> Result<Out<'a>, TranslateError> {
    let c = Obj::parse(raw, field)?;
    Ok(Out::Obj(vec![
        ("taskId", req(&c, "taskId", field, string)?),
        (
            "pushNotificationConfig",
            Some(push_config_to03(raw, field)?),
        ),
    ]))
}

/// The task id in a 0.3 proto resource name `tasks/{task}/pushNotificationConfigs/{id}`, as a
/// JSON string (the name's bytes between the separators, escaped as they came).
fn task_of_name<'a>(raw: Val<'a>, field: &str) -> Result<Out<'a>, TranslateError> {
    let name = text(raw, field)?;
    let task = name
        .strip_prefix("tasks/")
        .and_then(|r| r.split_once("/pushNotificationConfigs/"))
        .map(|(t, _)| t)
        .filter(|t| !t.is_empty() && !t.contains('/'))
        .ok_or_else(|| {
            TranslateError::untranslatable(field, "is not tasks/{id}/pushNotificationConfigs/{id}")
        })?;
    serde_json::to_string(task)
        .map(Out::Owned)
        .map_err(|_| TranslateError::untranslatable(field, "is not a string"))
}

/// A 0.3 `TaskPushNotificationConfig` (nested; JSON-RPC names its task in `taskId`, the proto
/// in its resource `name`) → the flat 1.0 one.
pub(super) fn task_push_config_to10<'a>(
    w: Wire,
    raw: Val<'a>,
    field: &str,
) -> Result<Out<'a>, TranslateError> {
    let c = Obj::parse(raw, field)?;
    let pf = member(field, "pushNotificationConfig");
    let inner = c
        .get("pushNotificationConfig")
        .ok_or_else(|| TranslateError::untranslatable(&pf, "is required"))?;
    let p = Obj::parse(inner, &pf)?;
    let auth = match p.get("authentication") {
        Some(a) => auth_to10(a, &member(&pf, "authentication"))?,
        None => None,
    };
    let task = match w {
        Wire::Rpc => req(&c, "taskId", field, string)?,
        Wire::Rest => req(&c, "name", field, task_of_name)?,
    };
    Ok(Out::Obj(vec![
        ("id", opt(&p, "id", &pf, string)?),
        ("taskId", task),
        ("url", req(&p, "url", &pf, string)?),
        ("token", opt(&p, "token", &pf, string)?),
        ("authentication", auth),
    ]))
}

/// 1.0 `SendMessageConfiguration` → 0.3 `MessageSendConfiguration`: `returnImmediately` is the
/// inverse of `blocking`. On JSON-RPC a left-out one is left out (both SDKs then block, as 1.0
/// does); on HTTP+JSON `blocking` is always written, because Python a2a-sdk 0.3.26 reads an
/// absent proto3 bool as `false` and would answer at once (README of `tests/fixtures/wire/v03`,
/// fact 8). The proto names the push config `pushNotification`.
pub(super) fn send_config_to03<'a>(
    w: Wire,
    raw: Val<'a>,
    field: &str,
) -> Result<Out<'a>, TranslateError> {
    let c = Obj::parse(raw, field)?;
    let mut blocking = opt(&c, "returnImmediately", field, |v, f| {
        boolean(v, f).map(|ri| Out::Lit(if ri { "false" } else { "true" }))
    })?;
    if w == Wire::Rest && blocking.is_none() {
        blocking = Some(Out::Lit("true"));
    }
    let push = match w {
        Wire::Rpc => "pushNotificationConfig",
        Wire::Rest => "pushNotification",
    };
    Ok(Out::Obj(vec![
        (
            "acceptedOutputModes",
            opt(&c, "acceptedOutputModes", field, strings)?,
        ),
        ("blocking", blocking),
        ("historyLength", opt(&c, "historyLength", field, integer)?),
        (
            push,
            opt(&c, "taskPushNotificationConfig", field, push_config_to03)?,
        ),
    ]))
}
