//! The protocol-shaped error bodies of every answer the gateway writes itself (pure): a
//! `google.rpc.Status` for the HTTP+JSON binding and the admin API, the `error` member of a
//! JSON-RPC response for the JSON-RPC binding, each carrying one `google.rpc.ErrorInfo` whose
//! domain is always `a2a-egress` (A2A specification, "Error Handling"), so a caller can tell the
//! gateway answered and not the agent behind it.

use serde_json::{Map, Value, json};

/// The ErrorInfo domain of every gateway-generated error.
pub const DOMAIN: &str = "a2a-egress";

/// The `@type` of a `google.rpc.ErrorInfo` detail.
const ERROR_INFO_TYPE: &str = "type.googleapis.com/google.rpc.ErrorInfo";

/// A `google.rpc.ErrorInfo{domain: "a2a-egress", reason, metadata}`.
pub fn error_info(reason: &str, metadata: Map<String, Value>) -> Value {
    json!({
        "@type": ERROR_INFO_TYPE,
        "reason": reason,
        "domain": DOMAIN,
        "metadata": metadata,
    })
}

/// A `google.rpc.Status` body, as the HTTP+JSON binding writes it: `{"error": {"code": <HTTP
/// status>, "status": <gRPC status name>, "message", "details": [info]}}`.
pub fn google_rpc_status(http: u16, grpc: &str, message: &str, info: Value) -> Value {
    json!({
        "error": {
            "code": http,
            "status": grpc,
            "message": message,
            "details": [info],
        }
    })
}

/// The `error` member of a JSON-RPC 2.0 response: `{"code", "message", "data": [info]}`.
pub fn jsonrpc_error(code: i64, message: &str, info: Value) -> Value {
    json!({
        "code": code,
        "message": message,
        "data": [info],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_shapes_carry_one_error_info_of_the_gateway() {
        let mut meta = Map::new();
        meta.insert("integration".into(), "echo".into());
        let info = error_info("NO_USABLE_PROFILE", meta);
        let rest = google_rpc_status(503, "UNAVAILABLE", "m", info.clone());
        assert_eq!(rest["error"]["code"], 503);
        assert_eq!(rest["error"]["status"], "UNAVAILABLE");
        assert_eq!(rest["error"]["details"][0]["domain"], DOMAIN);
        assert_eq!(
            rest["error"]["details"][0]["@type"],
            "type.googleapis.com/google.rpc.ErrorInfo"
        );
        let rpc = jsonrpc_error(-32000, "m", info);
        assert_eq!(rpc["data"][0]["reason"], "NO_USABLE_PROFILE");
        assert_eq!(rpc["data"][0]["metadata"]["integration"], "echo");
    }
}
