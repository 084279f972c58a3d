//! The control plane's admin routes, merged into the admin listener's router (I/O: HTTP).
//!
//! - `POST /v1/integrations/{name}/refresh`: forces one refresh and answers with its outcome
//!   (`200` with a [`RefreshReport`] whatever the result, `404` for an unknown integration, `503`
//!   with a `Retry-After` while the integration's refresh worker restarts after a panic).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;

use crate::control::refresh::{ControlError, ControlHandle};

/// The routes, with their state applied (merge into the admin router).
pub fn router(handle: ControlHandle) -> axum::Router {
    axum::Router::new()
        .route("/v1/integrations/{name}/refresh", post(refresh))
        .with_state(handle)
}

async fn refresh(State(handle): State<ControlHandle>, Path(name): Path<String>) -> Response {
    match handle.refresh_now(&name).await {
        Ok(report) => (StatusCode::OK, Json(report)).into_response(),
        Err(e @ ControlError::UnknownIntegration(_)) => (
            StatusCode::NOT_FOUND,
            Json(serde_json::json!({
                "error": {"code": 404, "status": "NOT_FOUND", "message": e.to_string(),
                          "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                                       "reason": "UNKNOWN_INTEGRATION", "domain": "a2a-egress"}]}
            })),
        )
            .into_response(),
        // Removed while waiting, or the worker is restarting after a panic: try again later.
        Err(e) => {
            let mut r = (
                StatusCode::SERVICE_UNAVAILABLE,
                Json(serde_json::json!({
                    "error": {"code": 503, "status": "UNAVAILABLE", "message": e.to_string(),
                              "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                                           "reason": e.reason(), "domain": "a2a-egress"}]}
                })),
            )
                .into_response();
            if let Some(after) = e.retry_after() {
                r.headers_mut().insert(
                    axum::http::header::RETRY_AFTER,
                    axum::http::HeaderValue::from(after.as_secs().max(1)),
                );
            }
            r
        }
    }
}
