//! Every error the agent returns, with its JSON-RPC code, HTTP status and `google.rpc.ErrorInfo`
//! reason per the A2A 1.0 error codes (A2A specification §3.3.2 "Error Handling", §9.5 for
//! JSON-RPC), rendered for both bindings (pure).
//!
//! Authentication and authorisation failures are outside the A2A catalogue (spec §3.3.2): they go
//! out as HTTP 401/403 on both bindings, with a JSON-RPC error body (codes -31001/-31003, outside the
//! JSON-RPC reserved range) or a google.rpc.Status, and an ErrorInfo in this agent's own domain.

use std::collections::BTreeMap;

use a2a::error_code;
use http::StatusCode;
use serde_json::{Value, json};

/// ErrorInfo domain of A2A-defined errors.
pub const A2A_DOMAIN: &str = "a2a-protocol.org";
/// ErrorInfo domain of this agent's own (non-A2A) errors.
pub const AGENT_DOMAIN: &str = "reference-agent.a2a-egress";
/// JSON-RPC code for a missing or invalid credential (not an A2A code).
pub const UNAUTHENTICATED_CODE: i32 = -31001;
/// JSON-RPC code for an authenticated caller acting outside its rights (not an A2A code).
pub const PERMISSION_DENIED_CODE: i32 = -31003;

/// An error answered to the caller.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum A2aError {
    /// TaskNotFoundError (-32001).
    #[error("task {0:?} not found")]
    TaskNotFound(String),
    /// TaskNotCancelableError (-32002).
    #[error("task {id:?} is {state} and cannot be canceled")]
    TaskNotCancelable {
        /// Task id.
        id: String,
        /// Its current state (wire name).
        state: String,
    },
    /// PushNotificationNotSupportedError (-32003).
    #[error("push notifications are not supported by this agent")]
    PushNotificationNotSupported,
    /// UnsupportedOperationError (-32004).
    #[error("{0}")]
    UnsupportedOperation(String),
    /// ContentTypeNotSupportedError (-32005).
    #[error("{0}")]
    ContentTypeNotSupported(String),
    /// InvalidAgentResponseError (-32006).
    #[error("{0}")]
    InvalidAgentResponse(String),
    /// ExtendedAgentCardNotConfiguredError (-32007).
    #[error("the extended agent card is not configured")]
    ExtendedAgentCardNotConfigured,
    /// ExtensionSupportRequiredError (-32008), naming the missing extensions.
    #[error("required extension(s) not activated in A2A-Extensions: {}", .0.join(", "))]
    ExtensionSupportRequired(Vec<String>),
    /// VersionNotSupportedError (-32009).
    #[error(
        "A2A-Version {requested:?} is not supported on this interface (supported: {supported})"
    )]
    VersionNotSupported {
        /// The version asked for (`0.3` when the header was absent).
        requested: String,
        /// The interface's version.
        supported: String,
    },
    /// JSON parse error (-32700).
    #[error("invalid JSON: {0}")]
    Parse(String),
    /// Invalid JSON-RPC request (-32600).
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// Unknown method or route (-32601).
    #[error("method not found: {0}")]
    MethodNotFound(String),
    /// Invalid params (-32602), naming the field.
    #[error("invalid params: {field}: {problem}")]
    InvalidParams {
        /// Dotted path of the offending field, e.g. `message.parts[0]`.
        field: String,
        /// What is wrong with it.
        problem: String,
    },
    /// Internal error (-32603).
    #[error("internal error: {0}")]
    Internal(String),
    /// Missing or invalid bearer token (HTTP 401).
    #[error("{0}")]
    Unauthenticated(String),
    /// Authenticated, but not allowed (HTTP 403).
    #[error("{0}")]
    PermissionDenied(String),
}

impl A2aError {
    /// Shorthand for [`A2aError::InvalidParams`].
    pub fn invalid(field: impl Into<String>, problem: impl Into<String>) -> Self {
        A2aError::InvalidParams {
            field: field.into(),
            problem: problem.into(),
        }
    }

    /// The JSON-RPC error code.
    pub fn code(&self) -> i32 {
        use A2aError::*;
        match self {
            TaskNotFound(_) => error_code::TASK_NOT_FOUND,
            TaskNotCancelable { .. } => error_code::TASK_NOT_CANCELABLE,
            PushNotificationNotSupported => error_code::PUSH_NOTIFICATION_NOT_SUPPORTED,
            UnsupportedOperation(_) => error_code::UNSUPPORTED_OPERATION,
            ContentTypeNotSupported(_) => error_code::CONTENT_TYPE_NOT_SUPPORTED,
            InvalidAgentResponse(_) => error_code::INVALID_AGENT_RESPONSE,
            ExtendedAgentCardNotConfigured => error_code::EXTENDED_CARD_NOT_CONFIGURED,
            ExtensionSupportRequired(_) => error_code::EXTENSION_SUPPORT_REQUIRED,
            VersionNotSupported { .. } => error_code::VERSION_NOT_SUPPORTED,
            Parse(_) => error_code::PARSE_ERROR,
            InvalidRequest(_) => error_code::INVALID_REQUEST,
            MethodNotFound(_) => error_code::METHOD_NOT_FOUND,
            InvalidParams { .. } => error_code::INVALID_PARAMS,
            Internal(_) => error_code::INTERNAL_ERROR,
            Unauthenticated(_) => UNAUTHENTICATED_CODE,
            PermissionDenied(_) => PERMISSION_DENIED_CODE,
        }
    }

    /// The ErrorInfo `reason`: the error name in UPPER_SNAKE_CASE without `Error`.
    pub fn reason(&self) -> &'static str {
        use A2aError::*;
        match self {
            TaskNotFound(_) => "TASK_NOT_FOUND",
            TaskNotCancelable { .. } => "TASK_NOT_CANCELABLE",
            PushNotificationNotSupported => "PUSH_NOTIFICATION_NOT_SUPPORTED",
            UnsupportedOperation(_) => "UNSUPPORTED_OPERATION",
            ContentTypeNotSupported(_) => "CONTENT_TYPE_NOT_SUPPORTED",
            InvalidAgentResponse(_) => "INVALID_AGENT_RESPONSE",
            ExtendedAgentCardNotConfigured => "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
            ExtensionSupportRequired(_) => "EXTENSION_SUPPORT_REQUIRED",
            VersionNotSupported { .. } => "VERSION_NOT_SUPPORTED",
            Parse(_) => "PARSE_ERROR",
            InvalidRequest(_) => "INVALID_REQUEST",
            MethodNotFound(_) => "METHOD_NOT_FOUND",
            InvalidParams { .. } => "INVALID_PARAMS",
            Internal(_) => "INTERNAL_ERROR",
            Unauthenticated(_) => "UNAUTHENTICATED",
            PermissionDenied(_) => "PERMISSION_DENIED",
        }
    }

    /// The ErrorInfo `domain`.
    pub fn domain(&self) -> &'static str {
        match self {
            A2aError::Unauthenticated(_) | A2aError::PermissionDenied(_) => AGENT_DOMAIN,
            _ => A2A_DOMAIN,
        }
    }

    /// HTTP status on the HTTP+JSON binding (and for auth errors on JSON-RPC too).
    pub fn http_status(&self) -> StatusCode {
        use A2aError::*;
        match self {
            TaskNotFound(_) | MethodNotFound(_) => StatusCode::NOT_FOUND,
            InvalidAgentResponse(_) | Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
            Unauthenticated(_) => StatusCode::UNAUTHORIZED,
            PermissionDenied(_) => StatusCode::FORBIDDEN,
            _ => StatusCode::BAD_REQUEST,
        }
    }

    /// The google.rpc.Code name used in the HTTP+JSON error body's `status`.
    pub fn rpc_status(&self) -> &'static str {
        use A2aError::*;
        match self {
            TaskNotFound(_) | MethodNotFound(_) => "NOT_FOUND",
            TaskNotCancelable { .. }
            | PushNotificationNotSupported
            | UnsupportedOperation(_)
            | ExtendedAgentCardNotConfigured
            | ExtensionSupportRequired(_)
            | VersionNotSupported { .. } => "FAILED_PRECONDITION",
            ContentTypeNotSupported(_) | InvalidParams { .. } | Parse(_) | InvalidRequest(_) => {
                "INVALID_ARGUMENT"
            }
            InvalidAgentResponse(_) | Internal(_) => "INTERNAL",
            Unauthenticated(_) => "UNAUTHENTICATED",
            PermissionDenied(_) => "PERMISSION_DENIED",
        }
    }

    /// ErrorInfo metadata: the machine-readable specifics (which task, field, extension...).
    fn metadata(&self) -> BTreeMap<&'static str, String> {
        use A2aError::*;
        let mut m = BTreeMap::new();
        match self {
            TaskNotFound(id) => {
                m.insert("taskId", id.clone());
            }
            TaskNotCancelable { id, state } => {
                m.insert("taskId", id.clone());
                m.insert("state", state.clone());
            }
            ExtensionSupportRequired(uris) => {
                m.insert("extensions", uris.join(","));
            }
            VersionNotSupported {
                requested,
                supported,
            } => {
                m.insert("requestedVersion", requested.clone());
                m.insert("supportedVersions", supported.clone());
            }
            InvalidParams { field, .. } => {
                m.insert("field", field.clone());
            }
            MethodNotFound(method) => {
                m.insert("method", method.clone());
            }
            _ => {}
        }
        m
    }

    /// The `google.rpc.ErrorInfo` detail (ProtoJSON `Any`).
    pub fn error_info(&self) -> Value {
        json!({
            "@type": a2a::ERROR_INFO_TYPE,
            "reason": self.reason(),
            "domain": self.domain(),
            "metadata": self.metadata(),
        })
    }

    /// The JSON-RPC `error` object: `data` is an array of typed details (A2A §9.5).
    pub fn jsonrpc_error(&self) -> a2a::JsonRpcError {
        a2a::JsonRpcError {
            code: self.code(),
            message: self.to_string(),
            data: Some(Value::Array(vec![self.error_info()])),
        }
    }

    /// The HTTP+JSON error body: a google.rpc.Status (A2A §11.6).
    pub fn rest_body(&self) -> Value {
        json!({
            "error": {
                "code": self.http_status().as_u16(),
                "status": self.rpc_status(),
                "message": self.to_string(),
                "details": [self.error_info()],
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all() -> Vec<A2aError> {
        use A2aError::*;
        vec![
            TaskNotFound("t".into()),
            TaskNotCancelable {
                id: "t".into(),
                state: "TASK_STATE_COMPLETED".into(),
            },
            PushNotificationNotSupported,
            UnsupportedOperation("x".into()),
            ContentTypeNotSupported("x".into()),
            InvalidAgentResponse("x".into()),
            ExtendedAgentCardNotConfigured,
            ExtensionSupportRequired(vec!["https://e/x/v1".into()]),
            VersionNotSupported {
                requested: "0.3".into(),
                supported: "1.0".into(),
            },
            Parse("x".into()),
            InvalidRequest("x".into()),
            MethodNotFound("x".into()),
            A2aError::invalid("message", "x"),
            Internal("x".into()),
            Unauthenticated("x".into()),
            PermissionDenied("x".into()),
        ]
    }

    /// The specification's error code table (§3.3.2, §9.5), row by row.
    #[test]
    fn catalogue_codes_reasons_and_statuses() {
        let expect: &[(i32, &str, u16, &str)] = &[
            (-32001, "TASK_NOT_FOUND", 404, "NOT_FOUND"),
            (-32002, "TASK_NOT_CANCELABLE", 400, "FAILED_PRECONDITION"),
            (
                -32003,
                "PUSH_NOTIFICATION_NOT_SUPPORTED",
                400,
                "FAILED_PRECONDITION",
            ),
            (-32004, "UNSUPPORTED_OPERATION", 400, "FAILED_PRECONDITION"),
            (
                -32005,
                "CONTENT_TYPE_NOT_SUPPORTED",
                400,
                "INVALID_ARGUMENT",
            ),
            (-32006, "INVALID_AGENT_RESPONSE", 500, "INTERNAL"),
            (
                -32007,
                "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
                400,
                "FAILED_PRECONDITION",
            ),
            (
                -32008,
                "EXTENSION_SUPPORT_REQUIRED",
                400,
                "FAILED_PRECONDITION",
            ),
            (-32009, "VERSION_NOT_SUPPORTED", 400, "FAILED_PRECONDITION"),
            (-32700, "PARSE_ERROR", 400, "INVALID_ARGUMENT"),
            (-32600, "INVALID_REQUEST", 400, "INVALID_ARGUMENT"),
            (-32601, "METHOD_NOT_FOUND", 404, "NOT_FOUND"),
            (-32602, "INVALID_PARAMS", 400, "INVALID_ARGUMENT"),
            (-32603, "INTERNAL_ERROR", 500, "INTERNAL"),
            (-31001, "UNAUTHENTICATED", 401, "UNAUTHENTICATED"),
            (-31003, "PERMISSION_DENIED", 403, "PERMISSION_DENIED"),
        ];
        for (e, (code, reason, http, status)) in all().iter().zip(expect) {
            assert_eq!(e.code(), *code, "{e:?}");
            assert_eq!(e.reason(), *reason, "{e:?}");
            assert_eq!(e.http_status().as_u16(), *http, "{e:?}");
            assert_eq!(e.rpc_status(), *status, "{e:?}");
        }
    }

    #[test]
    fn jsonrpc_and_rest_shapes_carry_error_info() {
        let e = A2aError::ExtensionSupportRequired(vec!["https://e/x/v1".into()]);
        let rpc = serde_json::to_value(e.jsonrpc_error()).unwrap();
        assert_eq!(rpc["code"], -32008);
        assert_eq!(
            rpc["data"][0]["@type"],
            "type.googleapis.com/google.rpc.ErrorInfo"
        );
        assert_eq!(rpc["data"][0]["reason"], "EXTENSION_SUPPORT_REQUIRED");
        assert_eq!(rpc["data"][0]["domain"], "a2a-protocol.org");
        assert_eq!(rpc["data"][0]["metadata"]["extensions"], "https://e/x/v1");
        assert!(rpc["message"].as_str().unwrap().contains("https://e/x/v1"));
        let rest = e.rest_body();
        assert_eq!(rest["error"]["code"], 400);
        assert_eq!(rest["error"]["status"], "FAILED_PRECONDITION");
        assert_eq!(
            rest["error"]["details"][0]["reason"],
            "EXTENSION_SUPPORT_REQUIRED"
        );
    }
}
