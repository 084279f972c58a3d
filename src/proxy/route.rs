//! Data-plane routing: path checks, path → route, JSON-RPC/HTTP+JSON method identification, and
//! media-type matching (pure, no I/O). Request bodies are read by [`super::body`].

/// Media type matching lives with the shared value types (the lockfile uses it too).
pub use crate::types::media_type::media_type_accepted;

/// Why a request path is refused before it is classified: each is a way to make one path mean
/// different things to the gateway and to the agent (or to two HTTP stacks on the way), so none is
/// normalised and every one is refused, the same on every forwarding path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// A byte outside visible ASCII: control, space, DEL or a raw non-ASCII byte (RFC 3986 allows
    /// none of them unencoded).
    #[error("the path contains a control, space or non-ASCII byte")]
    Character,
    /// A raw backslash (some servers treat it as a separator).
    #[error("the path contains a backslash")]
    Backslash,
    /// A `%` not followed by two hex digits.
    #[error("the path contains a '%' not followed by two hex digits")]
    BadEscape,
    /// A percent-encoded `/`, `\`, `.`, `%` or control character: decoded once or twice further
    /// on, each turns into a separator, a dot segment or a different escape.
    #[error("the path percent-encodes a separator, a dot, a '%' or a control character")]
    EncodedSpecial,
    /// A `.` or `..` segment.
    #[error("the path contains a '.' or '..' segment")]
    DotSegment,
    /// An empty segment (`//`) other than a trailing slash.
    #[error("the path contains an empty segment")]
    EmptySegment,
}

impl PathError {
    /// Bounded label of the rule that failed.
    pub fn kind(&self) -> &'static str {
        match self {
            PathError::Character => "character",
            PathError::Backslash => "backslash",
            PathError::BadEscape => "bad_escape",
            PathError::EncodedSpecial => "encoded_special",
            PathError::DotSegment => "dot_segment",
            PathError::EmptySegment => "empty_segment",
        }
    }
}

/// Refuses path tricks (see [`PathError`]); `path` is the request path without the query.
pub fn check_path(path: &str) -> Result<(), PathError> {
    let bytes = path.as_bytes();
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'\\' => return Err(PathError::Backslash),
            b'%' => {
                let hex = |k: usize| {
                    bytes
                        .get(k)
                        .and_then(|d| (*d as char).to_digit(16))
                        .ok_or(PathError::BadEscape)
                };
                let decoded = hex(i + 1)? * 16 + hex(i + 2)?;
                if matches!(decoded, 0x00..=0x1f | 0x7f | 0x25 | 0x2e | 0x2f | 0x5c) {
                    return Err(PathError::EncodedSpecial);
                }
                i += 3;
            }
            0x21..=0x7e => i += 1,
            _ => return Err(PathError::Character),
        }
    }
    let mut segments = path
        .split('/')
        .skip(usize::from(path.starts_with('/')))
        .peekable();
    while let Some(seg) = segments.next() {
        if seg == "." || seg == ".." {
            return Err(PathError::DotSegment);
        }
        if seg.is_empty() && segments.peek().is_some() {
            return Err(PathError::EmptySegment);
        }
    }
    Ok(())
}

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
    /// `GET /.well-known/jwks.json`: the gateway's own public signing keys.
    Jwks,
    /// Anything else.
    NotFound,
}

impl Route {
    /// The integration name, when the path names one.
    pub fn name(&self) -> Option<&str> {
        match self {
            Route::Card { name } | Route::JsonRpc { name } | Route::Rest { name, .. } => Some(name),
            Route::Jwks | Route::NotFound => None,
        }
    }
}

const CARD_PATH: &str = "/.well-known/agent-card.json";

/// Where the data plane publishes the gateway's JWK Set (RFC 8615 well-known location).
pub const JWKS_PATH: &str = "/.well-known/jwks.json";

/// First path segments of the HTTP+JSON routes (anything else in first position is a tenant).
fn is_rest_root(seg: &str) -> bool {
    matches!(
        seg,
        "message:send" | "message:stream" | "tasks" | "extendedAgentCard"
    )
}

/// Routes a request path (without query).
pub fn route(path: &str) -> Route {
    if path == JWKS_PATH {
        return Route::Jwks;
    }
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

/// Percent-decodes one path segment (RFC 3986 §2.1): `+`, `=` and `&` are literal in a path.
fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
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
    /// The gateway's JWK Set (served by the gateway).
    Jwks,
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
            Method::Jwks => "jwks",
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

    /// Whether the operation's answer can carry artifacts (a Task, a Message, task lists, or a
    /// stream of them): the answers an `artifact_schema` is checked on.
    pub fn answers_with_artifacts(self) -> bool {
        matches!(
            self,
            Method::SendMessage
                | Method::SendStreamingMessage
                | Method::GetTask
                | Method::ListTasks
                | Method::CancelTask
                | Method::SubscribeToTask
        )
    }

    /// Whether sending the operation again has the effect of sending it once (RFC 9110 §9.2.2:
    /// reads, cancels, deletes), so a pooled connection that failed before any answer may be
    /// tried once more. A message send or a push config creation is never sent twice: the agent
    /// may have acted on it before its connection broke.
    pub fn replayable(self) -> bool {
        matches!(
            self,
            Method::GetTask
                | Method::ListTasks
                | Method::CancelTask
                | Method::SubscribeToTask
                | Method::GetPushConfig
                | Method::ListPushConfigs
                | Method::DeletePushConfig
                | Method::GetExtendedAgentCard
        )
    }

    /// Whether the operation carries a message whose parts policy must check.
    pub fn sends_message(self) -> bool {
        matches!(self, Method::SendMessage | Method::SendStreamingMessage)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tenant segment is percent-decoded as a URL path segment (RFC 3986), not as a form: `=`,
    /// `&` and `+` are literal, so `acme=evil` is not read as tenant `acme` (found by fuzzing).
    #[test]
    fn tenant_segments_are_path_decoded_not_form_decoded() {
        for (path, tenant) in [
            ("/agents/f/acme=evil/message:send", "acme=evil"),
            ("/agents/f/a&b/tasks", "a&b"),
            ("/agents/f/a+b/tasks", "a+b"),
            ("/agents/f/.=x/tasks", ".=x"),
            ("/agents/f/t%C3%A9/tasks", "t\u{e9}"),
            ("/agents/f/a%3Db/tasks", "a=b"),
        ] {
            match route(path) {
                Route::Rest { tenant: t, .. } => assert_eq!(t.as_deref(), Some(tenant), "{path}"),
                other => panic!("{path}: {other:?}"),
            }
        }
    }

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
        assert_eq!(route("/.well-known/jwks.json"), Route::Jwks);
        assert_eq!(route("/.well-known/jwks.json/"), Route::NotFound);
        assert_eq!(route("/agents/"), Route::NotFound);
    }

    #[test]
    fn path_tricks_are_refused() {
        for ok in [
            "/agents/echo",
            "/agents/echo/",
            "/agents/echo/.well-known/agent-card.json",
            "/agents/rest/t%20one/tasks/a%3Ab:cancel",
            "/agents/rest/tasks/%C3%A9",
            "/agents/rest/tasks/a..b/pushNotificationConfigs/...",
        ] {
            assert_eq!(check_path(ok), Ok(()), "{ok}");
        }
        for (bad, why) in [
            ("/agents/rest/tasks/..", PathError::DotSegment),
            ("/agents/rest/./tasks/a", PathError::DotSegment),
            ("/agents/rest/tasks/a/../b", PathError::DotSegment),
            ("/agents/rest//tasks/a", PathError::EmptySegment),
            ("//agents/rest", PathError::EmptySegment),
            ("/agents/rest/tasks/a%2Fb", PathError::EncodedSpecial),
            ("/agents/rest/tasks/a%2fb", PathError::EncodedSpecial),
            ("/agents/rest/tasks/a%5cb", PathError::EncodedSpecial),
            ("/agents/rest/tasks/%2e%2E", PathError::EncodedSpecial),
            ("/agents/rest/tasks/a%00", PathError::EncodedSpecial),
            ("/agents/rest/tasks/a%7F", PathError::EncodedSpecial),
            ("/agents/rest/tasks/a%252e", PathError::EncodedSpecial),
            ("/agents/rest/tasks/a%2", PathError::BadEscape),
            ("/agents/rest/tasks/a%+1", PathError::BadEscape),
            ("/agents/rest/tasks/a%zz", PathError::BadEscape),
            ("/agents/rest/tasks/a\\b", PathError::Backslash),
            ("/agents/rest/tasks/a b", PathError::Character),
            ("/agents/rest/tasks/a\u{7f}", PathError::Character),
            ("/agents/rest/tasks/\u{e9}", PathError::Character),
            ("/agents/rest/tasks/a\u{0}", PathError::Character),
        ] {
            assert_eq!(check_path(bad), Err(why), "{bad:?}");
        }
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
    fn media_types_accepted_by_modes() {
        let modes = vec!["text/plain".to_string(), "image/*".to_string()];
        assert!(media_type_accepted("text/plain; charset=utf-8", &modes));
        assert!(media_type_accepted("image/png", &modes));
        assert!(!media_type_accepted("application/pdf", &modes));
        assert!(media_type_accepted("application/pdf", &["*/*".to_string()]));
    }
}
