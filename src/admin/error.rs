//! Everything the admin listener refuses or fails on, and the one mapping from each to an HTTP
//! status, headers and a `google.rpc.Status` body (the shape the data plane uses too,
//! [`crate::types::status`]); no I/O.
//!
//! The `reason` of the body's ErrorInfo is also the metric label and the log field, so the
//! three cannot disagree.

use std::time::Duration;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Map;

use crate::control::refresh::ControlError;
use crate::select::NeedError;
use crate::types::status;

/// `WWW-Authenticate` realm of the admin listener.
const REALM: &str = "a2a-egress-admin";
/// ErrorInfo reason (and metric label) of a missing or wrong admin token.
pub const UNAUTHENTICATED: &str = "UNAUTHENTICATED";
/// ErrorInfo reason (and metric label) of a forced refresh refused by the rate limit.
pub const RATE_LIMITED: &str = "REFRESH_RATE_LIMITED";
/// ErrorInfo reason of a need that does not parse or breaks a rule.
pub const INVALID_NEED: &str = "INVALID_NEED";
/// ErrorInfo reason of a need body over its size cap.
pub const NEED_TOO_LARGE: &str = "NEED_TOO_LARGE";

/// An admin request the listener answers with an error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AdminError {
    /// A mutating route without `Authorization: Bearer <admin token>`; `presented` when a bearer
    /// token was sent but is not the configured one.
    #[error("this admin route needs Authorization: Bearer <admin token>")]
    Unauthenticated {
        /// A token was presented (and was wrong).
        presented: bool,
    },
    /// A forced refresh within `[admin] refresh_min_interval` of the previous one.
    #[error("this integration was refreshed less than {min_interval:?} ago; retry in {} s", retry_secs(*.wait))]
    RateLimited {
        /// The configured interval.
        min_interval: Duration,
        /// Time left until the next forced refresh may start.
        wait: Duration,
    },
    /// The control plane could not answer the refresh.
    #[error(transparent)]
    Control(#[from] ControlError),
    /// `GET /v1/integrations/{name}` for a name the configuration does not have.
    #[error("no integration named {}", crate::json::quote(.0))]
    UnknownIntegration(String),
    /// A `POST /v1/select` body that is not a need.
    #[error("invalid need: {0}")]
    InvalidNeed(#[from] NeedError),
    /// A `POST /v1/select` body that is not `application/json`.
    #[error("a need is sent as application/json")]
    NeedMediaType,
    /// A `POST /v1/select` body that could not be read (the connection broke, a bad chunk).
    #[error("the request body could not be read")]
    BodyUnreadable,
    /// No admin route has this path.
    #[error("no admin route has this path")]
    UnknownRoute,
    /// The route exists but does not take this method.
    #[error("this admin route does not take this method")]
    MethodNotAllowed,
    /// A path segment that is not valid percent-encoded UTF-8.
    #[error("the path does not decode to UTF-8")]
    InvalidPath,
}

/// Whole seconds, rounded up and at least 1: `Retry-After` cannot say less.
fn retry_secs(wait: Duration) -> u64 {
    (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1)
}

impl AdminError {
    /// Bounded reason: the ErrorInfo reason, the metric label and the log field.
    pub fn reason(&self) -> &'static str {
        match self {
            AdminError::Unauthenticated { .. } => UNAUTHENTICATED,
            AdminError::RateLimited { .. } => RATE_LIMITED,
            AdminError::Control(e) => e.reason(),
            AdminError::UnknownIntegration(_) => "UNKNOWN_INTEGRATION",
            AdminError::InvalidNeed(NeedError::TooLarge) => NEED_TOO_LARGE,
            AdminError::InvalidNeed(_) => INVALID_NEED,
            AdminError::NeedMediaType => "UNSUPPORTED_MEDIA_TYPE",
            AdminError::BodyUnreadable => "BODY_UNREADABLE",
            AdminError::UnknownRoute => "UNKNOWN_ROUTE",
            AdminError::MethodNotAllowed => "METHOD_NOT_ALLOWED",
            AdminError::InvalidPath => "INVALID_PATH",
        }
    }

    /// HTTP status and the gRPC status name of the body.
    fn status(&self) -> (StatusCode, &'static str) {
        match self {
            AdminError::Unauthenticated { .. } => (StatusCode::UNAUTHORIZED, "UNAUTHENTICATED"),
            AdminError::RateLimited { .. } => (StatusCode::TOO_MANY_REQUESTS, "RESOURCE_EXHAUSTED"),
            AdminError::Control(ControlError::UnknownIntegration(_))
            | AdminError::UnknownIntegration(_) => (StatusCode::NOT_FOUND, "NOT_FOUND"),
            AdminError::InvalidNeed(NeedError::TooLarge) => {
                (StatusCode::PAYLOAD_TOO_LARGE, "INVALID_ARGUMENT")
            }
            AdminError::InvalidNeed(_) => (StatusCode::BAD_REQUEST, "INVALID_ARGUMENT"),
            AdminError::NeedMediaType => (StatusCode::UNSUPPORTED_MEDIA_TYPE, "INVALID_ARGUMENT"),
            AdminError::BodyUnreadable | AdminError::InvalidPath => {
                (StatusCode::BAD_REQUEST, "INVALID_ARGUMENT")
            }
            AdminError::UnknownRoute => (StatusCode::NOT_FOUND, "NOT_FOUND"),
            AdminError::MethodNotAllowed => (StatusCode::METHOD_NOT_ALLOWED, "UNIMPLEMENTED"),
            // Removed while waiting, or the worker is restarting after a panic: try again later.
            AdminError::Control(_) => (StatusCode::SERVICE_UNAVAILABLE, "UNAVAILABLE"),
        }
    }

    /// `Retry-After`, in whole seconds, when the caller should wait before asking again.
    fn retry_after(&self) -> Option<u64> {
        match self {
            AdminError::RateLimited { wait, .. } => Some(retry_secs(*wait)),
            AdminError::Control(e) => e.retry_after().map(|d| d.as_secs().max(1)),
            AdminError::Unauthenticated { .. }
            | AdminError::UnknownIntegration(_)
            | AdminError::InvalidNeed(_)
            | AdminError::NeedMediaType
            | AdminError::BodyUnreadable
            | AdminError::UnknownRoute
            | AdminError::MethodNotAllowed
            | AdminError::InvalidPath => None,
        }
    }
}

impl IntoResponse for AdminError {
    fn into_response(self) -> Response {
        let (code, grpc) = self.status();
        let mut meta = Map::new();
        if let AdminError::InvalidNeed(e) = &self {
            meta.insert("kind".into(), e.kind().into());
            if let NeedError::Invalid { field, .. } = e {
                meta.insert("field".into(), (*field).into());
            }
        }
        let body = status::google_rpc_status(
            code.as_u16(),
            grpc,
            &self.to_string(),
            status::error_info(self.reason(), meta),
        );
        let mut resp = (code, axum::Json(body)).into_response();
        let headers = resp.headers_mut();
        if let Some(secs) = self.retry_after() {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        if let AdminError::Unauthenticated { presented } = self {
            let challenge = if presented {
                format!("Bearer realm=\"{REALM}\", error=\"invalid_token\"")
            } else {
                format!("Bearer realm=\"{REALM}\"")
            };
            if let Ok(h) = HeaderValue::from_str(&challenge) {
                headers.insert(header::WWW_AUTHENTICATE, h);
            }
        }
        resp
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(e: AdminError) -> (StatusCode, Option<String>, serde_json::Value) {
        let r = e.into_response();
        let code = r.status();
        let retry = r
            .headers()
            .get(header::RETRY_AFTER)
            .map(|v| v.to_str().unwrap_or_default().to_owned());
        let bytes = futures::executor::block_on(axum::body::to_bytes(r.into_body(), 1 << 16))
            .unwrap_or_default();
        (
            code,
            retry,
            serde_json::from_slice(&bytes).unwrap_or_default(),
        )
    }

    #[test]
    fn each_error_has_its_status_reason_and_retry_after() {
        let cases = [
            (
                AdminError::Unauthenticated { presented: true },
                401,
                "UNAUTHENTICATED",
                None,
            ),
            (
                AdminError::RateLimited {
                    min_interval: Duration::from_secs(10),
                    wait: Duration::from_millis(2500),
                },
                429,
                "REFRESH_RATE_LIMITED",
                Some("3"),
            ),
            (
                ControlError::UnknownIntegration("x".into()).into(),
                404,
                "UNKNOWN_INTEGRATION",
                None,
            ),
            (
                ControlError::Stopped("x".into()).into(),
                503,
                "INTEGRATION_REMOVED",
                None,
            ),
            (
                ControlError::Restarting {
                    integration: "x".into(),
                    reason: "refresh worker panicked: boom".into(),
                    retry_after: Duration::from_secs(4),
                }
                .into(),
                503,
                "REFRESH_WORKER_RESTARTING",
                Some("4"),
            ),
            (
                AdminError::UnknownIntegration("x\u{202e}".into()),
                404,
                "UNKNOWN_INTEGRATION",
                None,
            ),
            (NeedError::TooLarge.into(), 413, NEED_TOO_LARGE, None),
            (
                NeedError::Json("expected a JSON object".into()).into(),
                400,
                INVALID_NEED,
                None,
            ),
            (
                AdminError::NeedMediaType,
                415,
                "UNSUPPORTED_MEDIA_TYPE",
                None,
            ),
            (AdminError::BodyUnreadable, 400, "BODY_UNREADABLE", None),
            (AdminError::UnknownRoute, 404, "UNKNOWN_ROUTE", None),
            (
                AdminError::MethodNotAllowed,
                405,
                "METHOD_NOT_ALLOWED",
                None,
            ),
            (AdminError::InvalidPath, 400, "INVALID_PATH", None),
        ];
        for (e, code, reason, retry) in cases {
            let (got, after, b) = body(e);
            assert_eq!(got.as_u16(), code, "{b}");
            assert_eq!(after.as_deref(), retry, "{b}");
            assert_eq!(b["error"]["code"], code, "{b}");
            assert_eq!(b["error"]["details"][0]["reason"], reason, "{b}");
            assert_eq!(b["error"]["details"][0]["domain"], status::DOMAIN, "{b}");
            assert!(!b.to_string().contains('\u{202e}'), "{b}");
        }
    }
}
