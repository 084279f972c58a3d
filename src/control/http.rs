//! The control plane's admin routes, merged into the admin listener's router (I/O: HTTP).
//!
//! - `POST /v1/integrations/{name}/refresh`: forces one refresh and answers with its outcome
//!   (`200` with a [`RefreshReport`] whatever the result, `404` for an unknown integration).

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
        Err(e @ ControlError::Stopped(_)) => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(serde_json::json!({
                "error": {"code": 503, "status": "UNAVAILABLE", "message": e.to_string(),
                          "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                                       "reason": "UNKNOWN_INTEGRATION", "domain": "a2a-egress"}]}
            })),
        )
            .into_response(),
    }
}
