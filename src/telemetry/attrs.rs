//! Span names and attributes of one call (pure, no I/O), from facts the data plane hands over as
//! plain values (this module knows none of the data plane's types). Every value is bounded: a configured
//! integration name, a member of a known set, a number, or a checked request id — never a caller's
//! header, path or body.

use opentelemetry::KeyValue;

/// The A2A operation (open-telemetry/semantic-conventions-genai PR 195).
pub const A2A_METHOD_NAME: &str = "a2a.method.name";
/// The A2A protocol version spoken with the agent (PR 195).
pub const A2A_PROTOCOL_VERSION: &str = "a2a.protocol.version";
/// The task the agent's answer names (PR 195).
pub const A2A_TASK_ID: &str = "a2a.task.id";
/// The context the agent's answer names (PR 195).
pub const A2A_CONTEXT_ID: &str = "a2a.context.id";
/// The integration (`[[integrations]] name`).
pub const INTEGRATION: &str = "a2a_egress.integration";
/// The binding: `JSONRPC` or `HTTP+JSON`.
pub const BINDING: &str = "a2a_egress.binding";
/// How the call ended (the `outcome` label of the metrics).
pub const OUTCOME: &str = "a2a_egress.outcome";
/// The refusal's reason code (`POLICY_DENIED`, …), on a refused call.
pub const DENY_REASON: &str = "a2a_egress.deny.reason";
/// Why a streaming call was answered through SendMessage.
pub const DOWNGRADE: &str = "a2a_egress.downgrade";
/// The request id of the access line.
pub const REQUEST_ID: &str = "a2a_egress.request_id";
/// The attempt's number within the call, from 1.
pub const ATTEMPT: &str = "a2a_egress.attempt";
/// The attempt is the SendMessage form of a streaming call.
pub const DOWNGRADED: &str = "a2a_egress.downgraded";
/// HTTP semantic conventions.
pub const HTTP_METHOD: &str = "http.request.method";
/// HTTP semantic conventions.
pub const HTTP_STATUS: &str = "http.response.status_code";
/// General semantic conventions.
pub const SERVER_ADDRESS: &str = "server.address";
/// General semantic conventions.
pub const SERVER_PORT: &str = "server.port";
/// General semantic conventions: the class of error a failed operation ended with.
pub const ERROR_TYPE: &str = "error.type";

/// PR 195's `a2a.method.name` of the gateway's method name (the data plane's `Method::as_str`);
/// `None` for a route that is no A2A operation (the card, the JWK Set, an unknown path).
pub fn method_name(method: &str) -> Option<&'static str> {
    Some(match method {
        "SendMessage" => "send_message",
        "SendStreamingMessage" => "send_streaming_message",
        "GetTask" => "get_task",
        "ListTasks" => "list_tasks",
        "CancelTask" => "cancel_task",
        "SubscribeToTask" => "subscribe_to_task",
        "CreateTaskPushNotificationConfig" => "create_task_push_notification_config",
        "GetTaskPushNotificationConfig" => "get_task_push_notification_config",
        "ListTaskPushNotificationConfigs" => "list_task_push_notification_configs",
        "DeleteTaskPushNotificationConfig" => "delete_task_push_notification_config",
        "GetExtendedAgentCard" => "get_extended_agent_card",
        _ => return None,
    })
}

/// A span's name: the A2A operation (PR 195: "Span name SHOULD be `{a2a.method.name}`"), else the
/// gateway's name of the route (`agent-card`, `jwks`, `unknown`).
pub fn span_name(method: &'static str) -> &'static str {
    method_name(method).unwrap_or(method)
}

/// An HTTP method as the HTTP semantic conventions record it: the standard ones as they are,
/// any other as `_OTHER` (a caller's invented method is not a value to keep).
pub fn http_method(m: &str) -> &'static str {
    match m {
        "GET" => "GET",
        "HEAD" => "HEAD",
        "POST" => "POST",
        "PUT" => "PUT",
        "DELETE" => "DELETE",
        "CONNECT" => "CONNECT",
        "OPTIONS" => "OPTIONS",
        "TRACE" => "TRACE",
        "PATCH" => "PATCH",
        _ => "_OTHER",
    }
}

/// An A2A version as an attribute value: the ones the gateway speaks are static text (no copy
/// per span), any other is copied.
pub fn version(v: &str) -> std::borrow::Cow<'static, str> {
    match v {
        "1.0" => "1.0".into(),
        "0.3" => "0.3".into(),
        other => other.to_owned().into(),
    }
}

/// What a call's SERVER span records when it ends.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    /// The data plane's method name (`Method::as_str`).
    pub method: &'static str,
    /// The integration, `""` when the route names none that is configured.
    pub integration: &'a str,
    /// The caller's binding.
    pub binding: &'static str,
    /// The A2A version spoken with the agent, when the call was planned.
    pub protocol_version: Option<&'a str>,
    /// The outcome label.
    pub outcome: &'static str,
    /// The refusal's reason, `""` unless refused.
    pub reason: &'static str,
    /// The downgrade cause, `""` unless downgraded.
    pub downgrade: &'static str,
    /// The HTTP status the caller got (0: none written).
    pub status: u16,
    /// The request id.
    pub request_id: &'a str,
}

impl Call<'_> {
    /// The SERVER span's attributes.
    pub fn attributes(&self) -> Vec<KeyValue> {
        let mut out = Vec::with_capacity(10);
        if let Some(m) = method_name(self.method) {
            out.push(KeyValue::new(A2A_METHOD_NAME, m));
        }
        if !self.integration.is_empty() {
            out.push(KeyValue::new(INTEGRATION, self.integration.to_owned()));
        }
        out.push(KeyValue::new(BINDING, self.binding));
        if let Some(v) = self.protocol_version {
            out.push(KeyValue::new(A2A_PROTOCOL_VERSION, version(v)));
        }
        out.push(KeyValue::new(OUTCOME, self.outcome));
        if !self.reason.is_empty() {
            out.push(KeyValue::new(DENY_REASON, self.reason));
        }
        if !self.downgrade.is_empty() {
            out.push(KeyValue::new(DOWNGRADE, self.downgrade));
        }
        if self.status != 0 {
            out.push(KeyValue::new(HTTP_STATUS, i64::from(self.status)));
        }
        if let Some(e) = self.error_type() {
            out.push(KeyValue::new(ERROR_TYPE, e));
        }
        out.push(KeyValue::new(REQUEST_ID, self.request_id.to_owned()));
        out
    }

    /// `error.type`: the refusal's reason, or the outcome of a call the agent's side failed.
    pub fn error_type(&self) -> Option<&'static str> {
        match self.outcome {
            "denied" if !self.reason.is_empty() => Some(self.reason),
            "upstream_failed" => Some("upstream_failed"),
            _ => None,
        }
    }

    /// Whether the span's status is Error: the gateway failed the caller (a 5xx, or the agent's
    /// side failing). A refusal with a 4xx is the caller's request refused, not a failure of the
    /// server (the HTTP semantic conventions leave a SERVER span's 4xx unset).
    pub fn is_error(&self) -> bool {
        self.outcome == "upstream_failed" || self.status >= 500
    }
}

/// What a CLIENT span (one request to the agent) records when it starts.
#[derive(Debug, Clone, Copy)]
pub struct Attempt<'a> {
    /// The gateway's method name of what is sent (`SendMessage` for a downgrade).
    pub method: &'static str,
    /// The A2A version spoken with the agent (recorded on the SERVER span).
    pub protocol_version: &'a str,
    /// Whether this is the SendMessage form of a streaming call.
    pub downgraded: bool,
    /// The HTTP method sent.
    pub http_method: &'a str,
    /// The agent's `host:port`.
    pub authority: &'a str,
}

impl Attempt<'_> {
    /// The CLIENT span's attributes at its start; `number` counts the call's attempts from 1.
    /// Only what may differ from the call's SERVER span, its parent: the integration, binding
    /// and protocol version are the call's, recorded there once (every attribute is converted
    /// and encoded again for each span exported, the largest part of tracing's cost).
    pub fn attributes(&self, number: u32) -> Vec<KeyValue> {
        let mut out = Vec::with_capacity(7);
        if let Some(m) = method_name(self.method) {
            out.push(KeyValue::new(A2A_METHOD_NAME, m));
        }
        out.push(KeyValue::new(ATTEMPT, i64::from(number)));
        if self.downgraded {
            out.push(KeyValue::new(DOWNGRADED, true));
        }
        out.push(KeyValue::new(HTTP_METHOD, http_method(self.http_method)));
        let (host, port) = split_authority(self.authority);
        out.push(KeyValue::new(SERVER_ADDRESS, host.to_owned()));
        if let Some(p) = port {
            out.push(KeyValue::new(SERVER_PORT, i64::from(p)));
        }
        out
    }
}

/// `host:port` (or `[v6]:port`, or a bare host) as host and port.
pub fn split_authority(a: &str) -> (&str, Option<u16>) {
    if let Some(rest) = a.strip_prefix('[')
        && let Some((host, tail)) = rest.split_once(']')
    {
        return (host, tail.strip_prefix(':').and_then(|p| p.parse().ok()));
    }
    match a.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') => (host, port.parse().ok()),
        _ => (a, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get<'a>(kv: &'a [KeyValue], key: &str) -> Option<&'a opentelemetry::Value> {
        kv.iter().find(|k| k.key.as_str() == key).map(|k| &k.value)
    }

    const CALL: Call<'static> = Call {
        method: "SendMessage",
        integration: "echo",
        binding: "JSONRPC",
        protocol_version: Some("1.0"),
        outcome: "ok",
        reason: "",
        downgrade: "",
        status: 200,
        request_id: "req-1",
    };

    #[test]
    fn every_a2a_method_has_a_snake_case_name_and_other_routes_none() {
        for (m, want) in [
            ("SendMessage", "send_message"),
            ("SendStreamingMessage", "send_streaming_message"),
            ("GetExtendedAgentCard", "get_extended_agent_card"),
            (
                "ListTaskPushNotificationConfigs",
                "list_task_push_notification_configs",
            ),
        ] {
            assert_eq!(method_name(m), Some(want));
        }
        assert_eq!(method_name("agent-card"), None);
        assert_eq!(span_name("jwks"), "jwks");
        assert_eq!(span_name("GetTask"), "get_task");
    }

    #[test]
    fn an_ordinary_call_names_its_facts_and_no_error() {
        let kv = CALL.attributes();
        assert_eq!(get(&kv, A2A_METHOD_NAME).unwrap().as_str(), "send_message");
        assert_eq!(get(&kv, INTEGRATION).unwrap().as_str(), "echo");
        assert_eq!(get(&kv, BINDING).unwrap().as_str(), "JSONRPC");
        assert_eq!(get(&kv, A2A_PROTOCOL_VERSION).unwrap().as_str(), "1.0");
        assert_eq!(get(&kv, OUTCOME).unwrap().as_str(), "ok");
        assert_eq!(get(&kv, HTTP_STATUS), Some(&opentelemetry::Value::I64(200)));
        assert!(get(&kv, ERROR_TYPE).is_none() && get(&kv, DENY_REASON).is_none());
        assert!(!CALL.is_error());
    }

    #[test]
    fn a_refusal_names_its_reason_and_a_5xx_is_an_error() {
        let denied = Call {
            outcome: "denied",
            reason: "POLICY_DENIED",
            ..CALL
        };
        let kv = denied.attributes();
        assert_eq!(get(&kv, DENY_REASON).unwrap().as_str(), "POLICY_DENIED");
        assert_eq!(get(&kv, ERROR_TYPE).unwrap().as_str(), "POLICY_DENIED");
        assert!(!denied.is_error());
        let failed = Call {
            outcome: "upstream_failed",
            status: 502,
            ..CALL
        };
        assert_eq!(failed.error_type(), Some("upstream_failed"));
        assert!(failed.is_error());
        let card = Call {
            method: "agent-card",
            integration: "",
            protocol_version: None,
            ..CALL
        };
        let kv = card.attributes();
        assert!(get(&kv, A2A_METHOD_NAME).is_none() && get(&kv, INTEGRATION).is_none());
    }

    #[test]
    fn an_attempt_names_the_agent_and_its_number() {
        let a = Attempt {
            method: "SendMessage",
            protocol_version: "0.3",
            downgraded: true,
            http_method: "BREW",
            authority: "[::1]:8443",
        };
        let kv = a.attributes(2);
        assert_eq!(get(&kv, ATTEMPT), Some(&opentelemetry::Value::I64(2)));
        // The call's facts are its SERVER span's, not repeated per attempt.
        assert!(get(&kv, INTEGRATION).is_none() && get(&kv, A2A_PROTOCOL_VERSION).is_none());
        assert_eq!(
            get(&kv, DOWNGRADED),
            Some(&opentelemetry::Value::Bool(true))
        );
        assert_eq!(get(&kv, HTTP_METHOD).unwrap().as_str(), "_OTHER");
        assert_eq!(get(&kv, SERVER_ADDRESS).unwrap().as_str(), "::1");
        assert_eq!(
            get(&kv, SERVER_PORT),
            Some(&opentelemetry::Value::I64(8443))
        );
        assert_eq!(split_authority("a.example:80"), ("a.example", Some(80)));
        assert_eq!(split_authority("a.example"), ("a.example", None));
    }
}
