//! Data-plane routing and request facts: path → route, JSON-RPC/HTTP+JSON method identification,
//! and the facts policy needs from a request body (pure, no I/O).

use serde_json::Value;

/// Where a data-plane path leads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `GET /agents/{name}/.well-known/agent-card.json`.
    Card {
        /// Integration name.
        name: String,
    },
    /// `POST /agents/{name}` or `/agents/{name}/`: the JSON-RPC endpoint.
    JsonRpc {
        /// Integration name.
        name: String,
    },
    /// `/agents/{name}/…` HTTP+JSON routes.
    Rest {
        /// Integration name.
        name: String,
        /// The caller's tenant path prefix, if its first segment is not a known route.
        tenant: Option<String>,
        /// The route path, starting with `/` (e.g. `/message:send`, `/tasks/abc:cancel`).
        path: String,
    },
    /// Anything else.
    NotFound,
}

impl Route {
    /// The integration name, when the path names one.
    pub fn name(&self) -> Option<&str> {
        match self {
            Route::Card { name } | Route::JsonRpc { name } | Route::Rest { name, .. } => Some(name),
            Route::NotFound => None,
        }
    }
}

const CARD_PATH: &str = "/.well-known/agent-card.json";

/// First path segments of the HTTP+JSON routes (anything else in first position is a tenant).
fn is_rest_root(seg: &str) -> bool {
    matches!(
        seg,
        "message:send" | "message:stream" | "tasks" | "extendedAgentCard"
    )
}

/// Routes a request path (without query).
pub fn route(path: &str) -> Route {
    let Some(rest) = path.strip_prefix("/agents/") else {
        return Route::NotFound;
    };
    let (name, tail) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    if name.is_empty() {
        return Route::NotFound;
    }
    let name = name.to_owned();
    if tail.is_empty() || tail == "/" {
        return Route::JsonRpc { name };
    }
    if tail == CARD_PATH {
        return Route::Card { name };
    }
    // tail starts with '/'
    let after = &tail[1..];
    let first = after.split('/').next().unwrap_or("");
    if is_rest_root(first) {
        return Route::Rest {
            name,
            tenant: None,
            path: tail.to_owned(),
        };
    }
    // `/{tenant}/route…`
    match after.find('/') {
        Some(i) if !first.is_empty() => Route::Rest {
            name,
            tenant: Some(percent_decode(first)),
            path: after[i..].to_owned(),
        },
        _ => Route::Rest {
            name,
            tenant: None,
            path: tail.to_owned(),
        },
    }
}

fn percent_decode(s: &str) -> String {
    url::form_urlencoded::parse(s.replace('+', "%2B").as_bytes())
        .next()
        .map(|(k, _)| k.into_owned())
        .unwrap_or_default()
}

/// The A2A operation of a request. Every label value is one of these names, so metric
/// cardinality stays bounded whatever callers send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// `SendMessage` / `POST /message:send`.
    SendMessage,
    /// `SendStreamingMessage` / `POST /message:stream`.
    SendStreamingMessage,
    /// `GetTask`.
    GetTask,
    /// `ListTasks`.
    ListTasks,
    /// `CancelTask`.
    CancelTask,
    /// `SubscribeToTask`.
    SubscribeToTask,
    /// `CreateTaskPushNotificationConfig`.
    CreatePushConfig,
    /// `GetTaskPushNotificationConfig`.
    GetPushConfig,
    /// `ListTaskPushNotificationConfigs`.
    ListPushConfigs,
    /// `DeleteTaskPushNotificationConfig`.
    DeletePushConfig,
    /// `GetExtendedAgentCard`.
    GetExtendedAgentCard,
    /// The effective card (served by the gateway).
    Card,
    /// Not an A2A operation (or not identified yet).
    Unknown,
}

impl Method {
    /// Bounded label (the JSON-RPC method name).
    pub fn as_str(self) -> &'static str {
        match self {
            Method::SendMessage => "SendMessage",
            Method::SendStreamingMessage => "SendStreamingMessage",
            Method::GetTask => "GetTask",
            Method::ListTasks => "ListTasks",
            Method::CancelTask => "CancelTask",
            Method::SubscribeToTask => "SubscribeToTask",
            Method::CreatePushConfig => "CreateTaskPushNotificationConfig",
            Method::GetPushConfig => "GetTaskPushNotificationConfig",
            Method::ListPushConfigs => "ListTaskPushNotificationConfigs",
            Method::DeletePushConfig => "DeleteTaskPushNotificationConfig",
            Method::GetExtendedAgentCard => "GetExtendedAgentCard",
            Method::Card => "agent-card",
            Method::Unknown => "unknown",
        }
    }

    /// Parses a JSON-RPC method name (1.0 names only).
    pub fn from_jsonrpc(m: &str) -> Method {
        match m {
            "SendMessage" => Method::SendMessage,
            "SendStreamingMessage" => Method::SendStreamingMessage,
            "GetTask" => Method::GetTask,
            "ListTasks" => Method::ListTasks,
            "CancelTask" => Method::CancelTask,
            "SubscribeToTask" => Method::SubscribeToTask,
            "CreateTaskPushNotificationConfig" => Method::CreatePushConfig,
            "GetTaskPushNotificationConfig" => Method::GetPushConfig,
            "ListTaskPushNotificationConfigs" => Method::ListPushConfigs,
            "DeleteTaskPushNotificationConfig" => Method::DeletePushConfig,
            "GetExtendedAgentCard" => Method::GetExtendedAgentCard,
            _ => Method::Unknown,
        }
    }

    /// Identifies an HTTP+JSON route (SPEC §11 / FACTS §6), tenant prefix already removed.
    pub fn from_rest(http_method: &str, path: &str) -> Method {
        let segs: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        match (http_method, segs.as_slice()) {
            ("POST", ["message:send"]) => Method::SendMessage,
            ("POST", ["message:stream"]) => Method::SendStreamingMessage,
            ("GET", ["tasks"]) => Method::ListTasks,
            ("GET", ["extendedAgentCard"]) => Method::GetExtendedAgentCard,
            ("POST", ["tasks", id]) if id.ends_with(":cancel") => Method::CancelTask,
            ("GET" | "POST", ["tasks", id]) if id.ends_with(":subscribe") => {
                Method::SubscribeToTask
            }
            ("GET", ["tasks", _]) => Method::GetTask,
            ("POST", ["tasks", _, "pushNotificationConfigs"]) => Method::CreatePushConfig,
            ("GET", ["tasks", _, "pushNotificationConfigs"]) => Method::ListPushConfigs,
            ("GET", ["tasks", _, "pushNotificationConfigs", _]) => Method::GetPushConfig,
            ("DELETE", ["tasks", _, "pushNotificationConfigs", _]) => Method::DeletePushConfig,
            _ => Method::Unknown,
        }
    }

    /// Whether the operation manages push notification configs.
    pub fn is_push(self) -> bool {
        matches!(
            self,
            Method::CreatePushConfig
                | Method::GetPushConfig
                | Method::ListPushConfigs
                | Method::DeletePushConfig
        )
    }

    /// Whether the operation carries a message whose parts policy must check.
    pub fn sends_message(self) -> bool {
        matches!(self, Method::SendMessage | Method::SendStreamingMessage)
    }
}

/// Why a JSON-RPC body is not a request we can forward.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RpcParseError {
    /// Not JSON at all (-32700).
    Parse,
    /// JSON, but not a single JSON-RPC 2.0 request object (-32600); the id if one was readable.
    Invalid {
        /// The request's `id`, when present and valid.
        id: Option<Value>,
        /// What is wrong (gateway-written).
        detail: &'static str,
    },
}

/// The facts of a JSON-RPC request the gateway needs (the original bytes are forwarded, not these).
#[derive(Debug, Clone, PartialEq)]
pub struct RpcRequest {
    /// `id` (string, number or null), echoed in every gateway error.
    pub id: Value,
    /// The method as sent.
    pub method_name: String,
    /// Identified method.
    pub method: Method,
    /// `params.tenant`, when present.
    pub tenant: Option<String>,
    /// The parsed body (kept for downgrade and tenant rewriting).
    pub body: Value,
}

/// Parses a JSON-RPC 2.0 request body.
pub fn parse_jsonrpc(bytes: &[u8]) -> Result<RpcRequest, RpcParseError> {
    let body: Value = serde_json::from_slice(bytes).map_err(|_| RpcParseError::Parse)?;
    let Some(obj) = body.as_object() else {
        return Err(RpcParseError::Invalid {
            id: None,
            detail: if body.is_array() {
                "batch requests are not supported"
            } else {
                "the request is not a JSON object"
            },
        });
    };
    let id = match obj.get("id") {
        None => None,
        Some(v @ (Value::String(_) | Value::Number(_) | Value::Null)) => Some(v.clone()),
        Some(_) => {
            return Err(RpcParseError::Invalid {
                id: None,
                detail: "id must be a string, a number or null",
            });
        }
    };
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(RpcParseError::Invalid {
            id,
            detail: "jsonrpc must be \"2.0\"",
        });
    }
    let Some(method_name) = obj.get("method").and_then(Value::as_str) else {
        return Err(RpcParseError::Invalid {
            id,
            detail: "method must be a string",
        });
    };
    let Some(id) = id else {
        // A notification expects no answer; A2A has no notifications.
        return Err(RpcParseError::Invalid {
            id: None,
            detail: "notifications (requests without id) are not supported",
        });
    };
    if let Some(p) = obj.get("params")
        && !p.is_object()
    {
        return Err(RpcParseError::Invalid {
            id: Some(id),
            detail: "params must be an object",
        });
    }
    let tenant = obj
        .get("params")
        .and_then(|p| p.get("tenant"))
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .map(str::to_owned);
    Ok(RpcRequest {
        id,
        method_name: method_name.to_owned(),
        method: Method::from_jsonrpc(method_name),
        tenant,
        body,
    })
}

/// The media type of each part of `message.parts` in a SendMessage request (`params` for JSON-RPC,
/// the body for HTTP+JSON). Text parts without `mediaType` are `text/plain`, data parts
/// `application/json`, raw/url parts `application/octet-stream` (FACTS §4).
pub fn part_media_types(send_request: &Value) -> Vec<String> {
    let parts = send_request
        .pointer("/message/parts")
        .and_then(Value::as_array);
    let mut out = Vec::new();
    for p in parts.into_iter().flatten() {
        let declared = p
            .get("mediaType")
            .or_else(|| p.get("media_type"))
            .and_then(Value::as_str)
            .filter(|m| !m.is_empty());
        let mt = match declared {
            Some(m) => m.to_owned(),
            None if p.get("text").is_some() => "text/plain".into(),
            None if p.get("data").is_some() => "application/json".into(),
            None => "application/octet-stream".into(),
        };
        out.push(mt);
    }
    out
}

/// Whether media type `mt` is accepted by a mode list entry (`type/subtype`, `type/*`, `*/*`;
/// parameters ignored; case-insensitive).
pub fn media_type_accepted(mt: &str, modes: &[String]) -> bool {
    let essence = |s: &str| {
        s.split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase()
    };
    let mt = essence(mt);
    let (t, _) = mt.split_once('/').unwrap_or((mt.as_str(), ""));
    modes.iter().any(|m| {
        let m = essence(m);
        m == mt || m == "*/*" || m.strip_suffix("/*").is_some_and(|mt_t| mt_t == t)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn routes() {
        assert_eq!(
            route("/agents/echo"),
            Route::JsonRpc {
                name: "echo".into()
            }
        );
        assert_eq!(
            route("/agents/echo/"),
            Route::JsonRpc {
                name: "echo".into()
            }
        );
        assert_eq!(
            route("/agents/echo/.well-known/agent-card.json"),
            Route::Card {
                name: "echo".into()
            }
        );
        assert_eq!(
            route("/agents/echo/message:send"),
            Route::Rest {
                name: "echo".into(),
                tenant: None,
                path: "/message:send".into()
            }
        );
        assert_eq!(
            route("/agents/echo/t1/tasks/abc:cancel"),
            Route::Rest {
                name: "echo".into(),
                tenant: Some("t1".into()),
                path: "/tasks/abc:cancel".into()
            }
        );
        assert_eq!(
            route("/agents/echo/tasks/abc"),
            Route::Rest {
                name: "echo".into(),
                tenant: None,
                path: "/tasks/abc".into()
            }
        );
        assert_eq!(route("/other"), Route::NotFound);
        assert_eq!(route("/agents/"), Route::NotFound);
    }

    #[test]
    fn rest_methods() {
        assert_eq!(
            Method::from_rest("POST", "/message:send"),
            Method::SendMessage
        );
        assert_eq!(
            Method::from_rest("POST", "/message:stream"),
            Method::SendStreamingMessage
        );
        assert_eq!(Method::from_rest("GET", "/tasks/a"), Method::GetTask);
        assert_eq!(Method::from_rest("GET", "/tasks"), Method::ListTasks);
        assert_eq!(
            Method::from_rest("POST", "/tasks/a:cancel"),
            Method::CancelTask
        );
        assert_eq!(
            Method::from_rest("POST", "/tasks/a:subscribe"),
            Method::SubscribeToTask
        );
        assert_eq!(
            Method::from_rest("POST", "/tasks/a/pushNotificationConfigs"),
            Method::CreatePushConfig
        );
        assert_eq!(
            Method::from_rest("DELETE", "/tasks/a/pushNotificationConfigs/b"),
            Method::DeletePushConfig
        );
        assert_eq!(
            Method::from_rest("GET", "/extendedAgentCard"),
            Method::GetExtendedAgentCard
        );
        assert_eq!(Method::from_rest("PUT", "/message:send"), Method::Unknown);
    }

    #[test]
    fn jsonrpc_parsing() {
        let r = parse_jsonrpc(
            br#"{"jsonrpc":"2.0","id":7,"method":"SendMessage","params":{"tenant":"t"}}"#,
        )
        .unwrap();
        assert_eq!(r.id, json!(7));
        assert_eq!(r.method, Method::SendMessage);
        assert_eq!(r.tenant.as_deref(), Some("t"));
        assert_eq!(parse_jsonrpc(b"{nope"), Err(RpcParseError::Parse));
        assert!(matches!(
            parse_jsonrpc(br#"[{"jsonrpc":"2.0","id":1,"method":"GetTask"}]"#),
            Err(RpcParseError::Invalid { id: None, .. })
        ));
        assert_eq!(
            parse_jsonrpc(br#"{"jsonrpc":"1.0","id":"a","method":"GetTask"}"#),
            Err(RpcParseError::Invalid {
                id: Some(json!("a")),
                detail: "jsonrpc must be \"2.0\""
            })
        );
        assert!(matches!(
            parse_jsonrpc(br#"{"jsonrpc":"2.0","id":"a","method":5}"#),
            Err(RpcParseError::Invalid { id: Some(_), .. })
        ));
        assert_eq!(
            parse_jsonrpc(br#"{"jsonrpc":"2.0","id":1,"method":"message/send"}"#)
                .unwrap()
                .method,
            Method::Unknown
        );
    }

    #[test]
    fn media_types_of_parts() {
        let req = json!({"message": {"parts": [
            {"text": "hi"}, {"data": {"a": 1}}, {"raw": "AA==", "mediaType": "image/png"}, {"url": "https://x"}]}});
        assert_eq!(
            part_media_types(&req),
            vec![
                "text/plain",
                "application/json",
                "image/png",
                "application/octet-stream"
            ]
        );
        let modes = vec!["text/plain".to_string(), "image/*".to_string()];
        assert!(media_type_accepted("text/plain; charset=utf-8", &modes));
        assert!(media_type_accepted("image/png", &modes));
        assert!(!media_type_accepted("application/pdf", &modes));
        assert!(media_type_accepted("application/pdf", &["*/*".to_string()]));
    }
}
