//! Translation between the A2A 1.0 the orchestrator speaks to the gateway and the A2A 0.3 an
//! agent speaks, on the binding the two share (pure, no I/O): requests toward the agent, answers,
//! stream events and errors back (issue 20 item 2; FACTS §11 is the table of differences).
//! JSON-RPC in `rpc`, HTTP+JSON (the 0.3 gRPC transcoding) in `rest`, both through the one set of
//! object conversions in `objects`.
//!
//! The rules every function here keeps:
//! - **Only what both versions say crosses.** Each object is rebuilt from the members its
//!   version defines; a member the other version has no place for is left out, never passed on
//!   half-translated. What cannot be said at all (a 1.0 data part that is not an object, a role
//!   that is neither user nor agent) is a [`TranslateError::Untranslatable`] naming the field, and
//!   a 1.0 method 0.3 lacks (ListTasks) is [`TranslateError::NotInVersion`]: the data plane
//!   refuses both before anything leaves.
//! - **Copied values keep their bytes.** Ids, numbers, strings, metadata and a data part's data
//!   are copied as the exact JSON text that came (see `raw`): no float rounding, no re-escaping.
//! - **A duplicate key anywhere the translator reads is refused**, as the request parser does.
//!
//! Between the two HTTP bindings of 1.0 (`binding`): a JSON-RPC caller in front of an HTTP+JSON
//! agent and the other way; a 0.3 agent's call is made 0.3 after that, and its answers 1.0
//! before it.
//!
//! The 1.0 gRPC binding is the other translation here (`grpc`): the gateway's JSON-RPC face ⇄
//! the agent's protobuf messages, through the official generated types; 0.3's (`grpc03`) is the
//! 0.3 HTTP+JSON request made into its protobuf request and its answers read back as 0.3
//! HTTP+JSON, both with types generated from the official 0.3 SDK's schema.

pub mod binding;
mod errors;
pub mod grpc;
pub mod grpc03;
mod objects;
mod raw;
mod rest;
mod rpc;

#[cfg(test)]
mod binding_tests;
#[cfg(test)]
mod grpc_tests;
#[cfg(test)]
mod rest_tests;
#[cfg(test)]
mod tests;

use std::borrow::Borrow;

use http::{HeaderName, HeaderValue};

use crate::profile::{Binding, Interface};

pub use errors::says_streaming_unsupported;
pub use rest::{RestAnswer, RestRequest, rest_answer_to10, rest_event_to10, rest_request_to03};
pub use rpc::{Translated, answer_to10, event_to10, method_03, request_to03};

/// The A2A protocol version a call goes out in: the bounded `protocol` label of upstream metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Protocol {
    /// A2A 1.0: sent as it came.
    V1_0,
    /// A2A 0.3: translated both ways.
    V0_3,
}

impl Protocol {
    /// Every value (for pre-registering metric series).
    pub const ALL: [Protocol; 2] = [Protocol::V1_0, Protocol::V0_3];

    /// The label value (`1.0`, `0.3`).
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::V1_0 => "1.0",
            Protocol::V0_3 => "0.3",
        }
    }
}

/// What the agent behind an interface speaks, as far as translation is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Dialect {
    /// The protocol version.
    pub protocol: Protocol,
    /// The binding.
    pub binding: Binding,
}

impl Dialect {
    /// The dialect of a chosen interface, when the gateway can call it: 1.0 over JSON-RPC or
    /// HTTP+JSON as it comes, 0.3 over either translated, 1.0 gRPC from JSON-RPC; `None` for
    /// a version the gateway does not speak.
    pub fn of(iface: &Interface) -> Option<Dialect> {
        // Which interfaces can be called at all is the profile's rule; this only names the dialect.
        if !iface.callable() {
            return None;
        }
        let protocol = if iface.version == "0.3" {
            Protocol::V0_3
        } else {
            Protocol::V1_0
        };
        Some(Dialect {
            protocol,
            binding: iface.binding,
        })
    }

    /// The dialect's index among the six protocol × binding pairs (per-integration metric cells).
    pub fn slot(self) -> usize {
        let p = match self.protocol {
            Protocol::V1_0 => 0,
            Protocol::V0_3 => 1,
        };
        let b = match self.binding {
            Binding::JsonRpc => 0,
            Binding::HttpJson => 1,
            Binding::Grpc => 2,
        };
        p * 3 + b
    }

    /// Whether calls in this dialect are translated between the versions (1.0 ⇄ 0.3).
    pub fn translates(self) -> bool {
        self.protocol == Protocol::V0_3
    }

    /// Whether calls go out over gRPC ([`grpc`]): made from the caller's JSON-RPC request, and
    /// answered as a JSON-RPC agent would.
    pub fn grpc(self) -> bool {
        self.binding == Binding::Grpc
    }

    /// The `A2A-Version` the orchestrator speaks to the gateway for this dialect (the effective
    /// card's `protocolVersion`): always 1.0, whatever the agent speaks.
    pub fn caller_version(self) -> &'static str {
        "1.0"
    }

    /// The `A2A-Version` header of a request to the agent at `version`: none toward a 0.3 agent
    /// (an absent header is what means 0.3, FACTS §3), nor for a `version` that is no header
    /// value. The data plane's calls and the probes take it from here.
    pub fn version_header(self, version: &str) -> Option<(HeaderName, HeaderValue)> {
        if self.translates() {
            return None;
        }
        let v = HeaderValue::from_str(version).ok()?;
        Some((HeaderName::from_static("a2a-version"), v))
    }

    /// The header activating extensions `uris` on a request to the agent: `A2A-Extensions`, or
    /// 0.3's name for it, `X-A2A-Extensions`; none when `uris` is empty (or no header value).
    pub fn extensions_header<S: Borrow<str>>(
        self,
        uris: &[S],
    ) -> Option<(HeaderName, HeaderValue)> {
        if uris.is_empty() {
            return None;
        }
        let v = HeaderValue::from_str(&uris.join(",")).ok()?;
        let name = if self.translates() {
            "x-a2a-extensions"
        } else {
            "a2a-extensions"
        };
        Some((HeaderName::from_static(name), v))
    }
}

/// A 1.0 JSON-RPC operation, as the translator knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// `SendMessage` ⇄ `message/send`.
    SendMessage,
    /// `SendStreamingMessage` ⇄ `message/stream`.
    SendStreamingMessage,
    /// `GetTask` ⇄ `tasks/get`.
    GetTask,
    /// `ListTasks`: no 0.3 JSON-RPC method.
    ListTasks,
    /// `CancelTask` ⇄ `tasks/cancel`.
    CancelTask,
    /// `SubscribeToTask` ⇄ `tasks/resubscribe`.
    SubscribeToTask,
    /// `CreateTaskPushNotificationConfig` ⇄ `tasks/pushNotificationConfig/set`.
    CreatePushConfig,
    /// `GetTaskPushNotificationConfig` ⇄ `tasks/pushNotificationConfig/get`.
    GetPushConfig,
    /// `ListTaskPushNotificationConfigs` ⇄ `tasks/pushNotificationConfig/list`.
    ListPushConfigs,
    /// `DeleteTaskPushNotificationConfig` ⇄ `tasks/pushNotificationConfig/delete`.
    DeletePushConfig,
    /// `GetExtendedAgentCard` ⇄ `agent/getAuthenticatedExtendedCard`.
    GetExtendedAgentCard,
}

impl Op {
    /// Every operation.
    pub const ALL: [Op; 11] = [
        Op::SendMessage,
        Op::SendStreamingMessage,
        Op::GetTask,
        Op::ListTasks,
        Op::CancelTask,
        Op::SubscribeToTask,
        Op::CreatePushConfig,
        Op::GetPushConfig,
        Op::ListPushConfigs,
        Op::DeletePushConfig,
        Op::GetExtendedAgentCard,
    ];

    /// The 1.0 method name.
    pub fn as_str(self) -> &'static str {
        match self {
            Op::SendMessage => "SendMessage",
            Op::SendStreamingMessage => "SendStreamingMessage",
            Op::GetTask => "GetTask",
            Op::ListTasks => "ListTasks",
            Op::CancelTask => "CancelTask",
            Op::SubscribeToTask => "SubscribeToTask",
            Op::CreatePushConfig => "CreateTaskPushNotificationConfig",
            Op::GetPushConfig => "GetTaskPushNotificationConfig",
            Op::ListPushConfigs => "ListTaskPushNotificationConfigs",
            Op::DeletePushConfig => "DeleteTaskPushNotificationConfig",
            Op::GetExtendedAgentCard => "GetExtendedAgentCard",
        }
    }

    /// The operation of a 1.0 method name.
    pub fn from_v10(name: &str) -> Option<Op> {
        Op::ALL.into_iter().find(|o| o.as_str() == name)
    }
}

/// Why a call cannot be translated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TranslateError {
    /// The 1.0 operation has no 0.3 JSON-RPC method.
    #[error("{method} does not exist in A2A 0.3 over JSON-RPC")]
    NotInVersion {
        /// The 1.0 method name.
        method: &'static str,
    },
    /// A field cannot be said in the other version (or is not what its version requires).
    #[error("{field} {why}")]
    Untranslatable {
        /// The field's path, built from the protocol's member names and array indices only
        /// (`params.message.parts[2].data`): no caller or agent text.
        field: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// The agent's answer would take more memory to read than the gateway holds for one
    /// ([`crate::json::TREE_BUDGET`]): the translator's tree is never larger than a
    /// `serde_json::Value` of the same text, which `tests/tree_memory.rs` checks.
    #[error("{}", crate::json::ScanError::TooLarge { mib: *mib })]
    TooLarge {
        /// The bound of [`crate::json::tree_bound`], in MiB.
        mib: usize,
    },
}

impl TranslateError {
    /// The text of an agent's answer (or event) `body`, its member name `field` in errors:
    /// refused when not UTF-8. Its memory bound and depth are judged where it is read, by the one
    /// walk that indexes it (`raw::Doc::answer`), not by a walk of their own.
    pub(crate) fn utf8_text<'b>(body: &'b [u8], field: &str) -> Result<&'b str, TranslateError> {
        std::str::from_utf8(body).map_err(|_| TranslateError::untranslatable(field, "is not UTF-8"))
    }

    pub(crate) fn untranslatable(field: &str, why: &'static str) -> TranslateError {
        TranslateError::Untranslatable {
            field: field.to_owned(),
            why,
        }
    }
}
