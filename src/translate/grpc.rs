//! The gateway's JSON-RPC face ⇄ the 1.0 gRPC binding (`lf.a2a.v1.A2AService`), pure, no I/O:
//! a JSON-RPC request's `params` become the rpc's protobuf request, and its protobuf answers,
//! stream messages and `google.rpc.Status` errors become the JSON-RPC answers a 1.0 JSON-RPC
//! agent would have given, so everything the data plane does with an answer (checks, feedback,
//! downgrade, artifact schema) is the same for a gRPC agent.
//!
//! The messages are the official generated types of `a2a-pb` (prost, with `pbjson`'s ProtoJSON
//! serde): nothing here writes protobuf or ProtoJSON by hand. What that costs, stated where it
//! applies:
//! - **ProtoJSON's own rules decide the text**: members the proto does not define are dropped
//!   (pbjson ignores unknown fields, as the spec asks of readers); defaults are left out; int64
//!   values are strings. A number inside `metadata` or a data part is a `google.protobuf.Value`,
//!   a double: the gRPC binding itself cannot carry more than 53 bits of it, unlike JSON-RPC.
//! - **A duplicate member** is refused by the request parser before this runs (the caller's
//!   body), and by pbjson for the agent's messages' own fields.

use prost::Message;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use a2a_pb::protojson as pb;

use super::{Op, TranslateError};

/// The gRPC service of A2A 1.0.
pub const SERVICE: &str = "lf.a2a.v1.A2AService";

/// The ErrorInfo `@type`, in a JSON-RPC error's `data`.
const ERROR_INFO_TYPE: &str = "type.googleapis.com/google.rpc.ErrorInfo";

/// The path of `op`'s rpc (`/lf.a2a.v1.A2AService/SendMessage`, …).
pub fn path(op: Op) -> &'static str {
    match op {
        Op::SendMessage => "/lf.a2a.v1.A2AService/SendMessage",
        Op::SendStreamingMessage => "/lf.a2a.v1.A2AService/SendStreamingMessage",
        Op::GetTask => "/lf.a2a.v1.A2AService/GetTask",
        Op::ListTasks => "/lf.a2a.v1.A2AService/ListTasks",
        Op::CancelTask => "/lf.a2a.v1.A2AService/CancelTask",
        Op::SubscribeToTask => "/lf.a2a.v1.A2AService/SubscribeToTask",
        Op::CreatePushConfig => "/lf.a2a.v1.A2AService/CreateTaskPushNotificationConfig",
        Op::GetPushConfig => "/lf.a2a.v1.A2AService/GetTaskPushNotificationConfig",
        Op::ListPushConfigs => "/lf.a2a.v1.A2AService/ListTaskPushNotificationConfigs",
        Op::DeletePushConfig => "/lf.a2a.v1.A2AService/DeleteTaskPushNotificationConfig",
        Op::GetExtendedAgentCard => "/lf.a2a.v1.A2AService/GetExtendedAgentCard",
    }
}

/// The operation an rpc path names (the inverse of [`path`]).
pub fn op_of_path(p: &str) -> Option<Op> {
    Op::ALL.into_iter().find(|op| path(*op) == p)
}

/// Whether `op`'s rpc is server-streaming.
pub fn streams(op: Op) -> bool {
    matches!(op, Op::SendStreamingMessage | Op::SubscribeToTask)
}

/// The members of a JSON-RPC request this reads (the router checked the rest).
#[derive(serde::Deserialize)]
struct Request<'a> {
    #[serde(borrow)]
    params: Option<&'a RawValue>,
}

/// `op`'s protobuf request from a 1.0 JSON-RPC request `body` (its `params`, ProtoJSON of the
/// rpc's request message: for CreateTaskPushNotificationConfig the config itself).
pub fn request_to_pb(op: Op, body: &[u8]) -> Result<Vec<u8>, TranslateError> {
    let req: Request<'_> =
        serde_json::from_slice(body).map_err(|_| TranslateError::Untranslatable {
            field: "params".into(),
            why: "is not a JSON-RPC request's params",
        })?;
    params_to_pb(op, req.params.map_or("{}", RawValue::get))
}

/// `op`'s protobuf request from its request message in ProtoJSON, `params`.
fn params_to_pb(op: Op, params: &str) -> Result<Vec<u8>, TranslateError> {
    match op {
        Op::SendMessage | Op::SendStreamingMessage => encode::<pb::SendMessageRequest>(params),
        Op::GetTask => encode::<pb::GetTaskRequest>(params),
        Op::ListTasks => encode::<pb::ListTasksRequest>(params),
        Op::CancelTask => encode::<pb::CancelTaskRequest>(params),
        Op::SubscribeToTask => encode::<pb::SubscribeToTaskRequest>(params),
        Op::CreatePushConfig => encode::<pb::TaskPushNotificationConfig>(params),
        Op::GetPushConfig => encode::<pb::GetTaskPushNotificationConfigRequest>(params),
        Op::ListPushConfigs => encode::<pb::ListTaskPushNotificationConfigsRequest>(params),
        Op::DeletePushConfig => encode::<pb::DeleteTaskPushNotificationConfigRequest>(params),
        Op::GetExtendedAgentCard => encode::<pb::GetExtendedAgentCardRequest>(params),
    }
}

fn encode<T: DeserializeOwned + Message>(params: &str) -> Result<Vec<u8>, TranslateError> {
    let m: T = serde_json::from_str(params).map_err(|_| TranslateError::Untranslatable {
        field: "params".into(),
        why: "is not the method's request message in ProtoJSON",
    })?;
    Ok(m.encode_to_vec())
}

/// A protobuf answer that is not the rpc's response message.
fn undecodable() -> TranslateError {
    TranslateError::Untranslatable {
        field: "result".into(),
        why: "is not the rpc's response message",
    }
}

/// Most length-delimited fields (submessages, strings, bytes) an agent's message may hold, at
/// every depth together: decoding builds a struct or an allocation for each (a few hundred
/// bytes for a submessage, where the wire spends two), so the wire size alone does not bound it
/// (8 M empty `history` entries are 16 MiB on the wire and gigabytes decoded). 128 Ki of the
/// largest A2A struct stay under the JSON tree budget. Scalars live inside their struct and are
/// not counted.
pub const MAX_FIELDS: usize = 128 * 1024;

/// Deepest nesting the field count follows (A2A's own messages nest a few levels; a
/// `google.protobuf.Struct` in metadata more, and prost stops at 100).
const MAX_DEPTH: u32 = 32;

/// Why a payload's fields were not counted.
enum Walk {
    /// Not a protobuf message (a string or bytes field, read as one).
    NotAMessage,
    /// More than [`MAX_FIELDS`].
    OverBudget,
}

/// Counts `buf`'s length-delimited fields into `left`, reading every such payload as a message
/// where it is one, as the decoder reads a submessage (conservative: a string that happens to be
/// a well-formed message is counted too). prost's own wire reader (`prost::encoding`, what its
/// generated code decodes with), no hand-made parse of the format.
fn count_fields(mut buf: &[u8], depth: u32, left: &mut usize) -> Result<(), Walk> {
    use prost::encoding::{WireType, decode_key, decode_varint};
    while !buf.is_empty() {
        let (_, wire) = decode_key(&mut buf).map_err(|_| Walk::NotAMessage)?;
        let skip = match wire {
            WireType::Varint => {
                decode_varint(&mut buf).map_err(|_| Walk::NotAMessage)?;
                0
            }
            WireType::SixtyFourBit => 8,
            WireType::ThirtyTwoBit => 4,
            WireType::LengthDelimited => {
                *left = left.checked_sub(1).ok_or(Walk::OverBudget)?;
                let len = decode_varint(&mut buf).map_err(|_| Walk::NotAMessage)?;
                let len = usize::try_from(len).map_err(|_| Walk::NotAMessage)?;
                let payload = buf.get(..len).ok_or(Walk::NotAMessage)?;
                if depth < MAX_DEPTH {
                    let mut inner = *left;
                    match count_fields(payload, depth + 1, &mut inner) {
                        Ok(()) => *left = inner,
                        Err(Walk::NotAMessage) => {}
                        Err(Walk::OverBudget) => return Err(Walk::OverBudget),
                    }
                }
                len
            }
            WireType::StartGroup | WireType::EndGroup => return Err(Walk::NotAMessage),
        };
        buf = buf.get(skip..).ok_or(Walk::NotAMessage)?;
    }
    Ok(())
}

/// `T` decoded from `bytes` within the decode budget (also the 0.3 service's messages).
pub(super) fn decode_within<T: Message + Default>(bytes: &[u8]) -> Result<T, TranslateError> {
    let mut left = MAX_FIELDS;
    if let Err(Walk::OverBudget) = count_fields(bytes, 0, &mut left) {
        return Err(TranslateError::TooLarge {
            mib: crate::json::TREE_BUDGET >> 20,
        });
    }
    T::decode(bytes).map_err(|_| undecodable())
}

/// `T` decoded from `bytes` within the decode budget, as its ProtoJSON (also the 0.3 service's).
pub(super) fn decode_json<T: Message + Default + Serialize>(
    bytes: &[u8],
) -> Result<String, TranslateError> {
    serde_json::to_string(&decode_within::<T>(bytes)?).map_err(|_| undecodable())
}

/// The JSON-RPC result of `op`'s protobuf answer (a stream message for the streaming rpcs).
fn result_of(op: Op, bytes: &[u8]) -> Result<String, TranslateError> {
    match op {
        Op::SendMessage => decode_json::<pb::SendMessageResponse>(bytes),
        Op::SendStreamingMessage | Op::SubscribeToTask => decode_json::<pb::StreamResponse>(bytes),
        Op::GetTask | Op::CancelTask => decode_json::<pb::Task>(bytes),
        Op::ListTasks => decode_json::<pb::ListTasksResponse>(bytes),
        Op::CreatePushConfig | Op::GetPushConfig => {
            decode_json::<pb::TaskPushNotificationConfig>(bytes)
        }
        Op::ListPushConfigs => decode_json::<pb::ListTaskPushNotificationConfigsResponse>(bytes),
        // google.protobuf.Empty: what both SDKs' JSON-RPC servers answer it with.
        Op::DeletePushConfig => {
            empty(bytes)?;
            Ok("null".into())
        }
        Op::GetExtendedAgentCard => decode_json::<pb::AgentCard>(bytes),
    }
}

/// Checks that `bytes` is a google.protobuf.Empty (no field: any well-formed message is one).
fn empty(bytes: &[u8]) -> Result<(), TranslateError> {
    <() as Message>::decode(bytes).map_err(|_| undecodable())
}

/// The JSON-RPC answer (with the request's `id`, as JSON text) of `op`'s protobuf answer.
pub fn answer_to_rpc(op: Op, id: &str, bytes: &[u8]) -> Result<Vec<u8>, TranslateError> {
    Ok(envelope(id, "result", &result_of(op, bytes)?))
}

fn envelope(id: &str, member: &str, value: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(value.len() + id.len() + 40);
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    out.extend_from_slice(id.as_bytes());
    out.extend_from_slice(b",\"");
    out.extend_from_slice(member.as_bytes());
    out.extend_from_slice(b"\":");
    out.extend_from_slice(value.as_bytes());
    out.push(b'}');
    out
}

/// An agent's `google.rpc.Status`: its gRPC code, message and the details (`grpc-status-details-bin`,
/// the whole Status message encoded; empty when the agent sent none).
#[derive(Debug, Clone, Copy)]
pub struct Status<'a> {
    /// The gRPC status code (`tonic::Code` as a number).
    pub code: i32,
    /// The agent's message.
    pub message: &'a str,
    /// The encoded `google.rpc.Status`, when the agent sent one.
    pub details: &'a [u8],
}

/// The JSON-RPC code of a status without an A2A ErrorInfo answering `op`, from its gRPC code
/// alone: NOT_FOUND is TaskNotFoundError (the only A2A error the binding maps to it),
/// INVALID_ARGUMENT InvalidParamsError, UNIMPLEMENTED MethodNotFoundError, except on a
/// streaming rpc, where it is a server without that rpc: UnsupportedOperationError, the refusal
/// the streaming downgrade acts on. Everything else (FAILED_PRECONDITION among them, which
/// stands for six A2A errors) is InternalError.
fn code_of_grpc(op: Op, code: i32) -> i64 {
    match tonic::Code::from_i32(code) {
        tonic::Code::NotFound => -32001,
        tonic::Code::InvalidArgument => -32602,
        tonic::Code::Unimplemented if streams(op) => -32004,
        tonic::Code::Unimplemented => -32601,
        _ => -32603,
    }
}

/// An agent's gRPC error as A2A reads it: the JSON-RPC code its A2A ErrorInfo names (domain
/// `a2a-protocol.org`), else the one of its gRPC code ([`code_of_grpc`]); and every ErrorInfo it
/// sent, as ProtoJSON `Any`. Other details are left out.
fn error_parts(op: Op, status: &Status<'_>) -> (i64, Vec<serde_json::Value>) {
    let infos: Vec<tonic_types::pb::ErrorInfo> = tonic_types::pb::Status::decode(status.details)
        .map(|s| {
            s.details
                .iter()
                .filter(|a| a.type_url == ERROR_INFO_TYPE)
                .filter_map(|a| tonic_types::pb::ErrorInfo::decode(&a.value[..]).ok())
                .collect()
        })
        .unwrap_or_default();
    let code = infos
        .iter()
        .filter(|i| i.domain == "a2a-protocol.org")
        .find_map(|i| super::errors::code_of_reason(&i.reason))
        .unwrap_or_else(|| code_of_grpc(op, status.code));
    let data = infos
        .iter()
        .map(|i| {
            // Sorted: the same error is the same bytes every time.
            let metadata: std::collections::BTreeMap<&str, &str> = (i.metadata.iter())
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            serde_json::json!({
                "@type": ERROR_INFO_TYPE,
                "reason": i.reason,
                "domain": i.domain,
                "metadata": metadata,
            })
        })
        .collect();
    (code, data)
}

/// The JSON-RPC error answer (with the request's `id`) of an agent's gRPC error answering `op`
/// (its A2A ErrorInfo or its gRPC code), with the agent's message.
pub fn status_to_rpc(op: Op, id: &str, status: Status<'_>) -> Vec<u8> {
    let (code, data) = error_parts(op, &status);
    let mut error = serde_json::json!({"code": code, "message": status.message});
    if !data.is_empty() {
        error["data"] = serde_json::Value::Array(data);
    }
    envelope(id, "error", &error.to_string())
}

/// The HTTP+JSON error answer of an agent's gRPC error answering `op`: the HTTP status and
/// `google.rpc.Status` code name of the A2A error it is (as for [`status_to_rpc`]; the table the
/// 0.3 translation uses too), with the agent's message and ErrorInfo.
pub fn status_to_rest(op: Op, status: Status<'_>) -> (u16, Vec<u8>) {
    let (code, details) = error_parts(op, &status);
    // Every code `error_parts` gives is one of the 1.0 table's.
    let (http, name) = super::errors::http_of(code).unwrap_or((500, "INTERNAL"));
    let mut error = serde_json::json!({
        "code": http,
        "status": name,
        "message": status.message,
    });
    if !details.is_empty() {
        error["details"] = serde_json::Value::Array(details);
    }
    (
        http,
        serde_json::json!({ "error": error })
            .to_string()
            .into_bytes(),
    )
}

/// The HTTP+JSON answer body of `op`'s protobuf answer (a stream message's `data` for the
/// streaming rpcs): the response message's ProtoJSON, `{}` for google.protobuf.Empty.
pub fn answer_to_rest(op: Op, bytes: &[u8]) -> Result<Vec<u8>, TranslateError> {
    let json = result_of(op, bytes)?;
    Ok(if json == "null" {
        b"{}".to_vec()
    } else {
        json.into_bytes()
    })
}

/// `op`'s protobuf request from a 1.0 HTTP+JSON request: its route `path` below the interface
/// (without the tenant), `query` and `body`, and the tenant it goes with; the request message is
/// the body with the path's and the query's parameters and the tenant set.
pub fn rest_request_to_pb(
    op: Op,
    path: &str,
    query: Option<&str>,
    body: &[u8],
    tenant: Option<&str>,
) -> Result<Vec<u8>, TranslateError> {
    use serde_json::{Map, Value};
    let mut m: Map<String, Value> = if body.iter().all(u8::is_ascii_whitespace) {
        Map::new()
    } else {
        serde_json::from_slice(body).map_err(|_| TranslateError::Untranslatable {
            field: "body".into(),
            why: "is not a JSON object",
        })?
    };
    for (k, v) in super::binding::path_members(op, path) {
        m.insert(k.to_owned(), Value::String(v));
    }
    for (k, v) in super::binding::query_members(op, query)? {
        m.insert(k, v);
    }
    if let Some(t) = tenant {
        m.insert("tenant".into(), Value::String(t.to_owned()));
    }
    params_to_pb(op, &Value::Object(m).to_string())
}
