//! The planner API of the admin listener (I/O: HTTP; the decisions are [`crate::select`] and
//! [`super::view`], both pure).
//!
//! - `GET /v1/integrations`: `{"snapshot_version", "integrations": [view…]}`, by name.
//! - `GET /v1/integrations/{name}`: one [`super::view::IntegrationView`]; `404` for a name
//!   the configuration does not have.
//! - `POST /v1/select`: a [`Need`] (`application/json`, at most [`MAX_NEED_BYTES`]) →
//!   [`crate::select::Answer`], over one snapshot. `400` for a body that is not a need, `413`
//!   over the cap, `415` for another media type, `400` `BODY_UNREADABLE` when the body could
//!   not be read. Like the views, it needs the admin token when one is configured.
//! - A path that does not decode is `400` `INVALID_PATH`; the admin router answers an unknown
//!   path `404` `UNKNOWN_ROUTE` and another method `405` `METHOD_NOT_ALLOWED`.
//!
//! Every error is a `google.rpc.Status` through [`AdminError`].

use std::sync::Arc;
use std::time::SystemTime;

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, FailedToBufferBody, PathRejection};
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{HeaderMap, header};
use axum::routing::{get, post};
use serde_json::json;

use super::error::AdminError;
use super::view::{IntegrationView, view};
use crate::select::{Answer, MAX_NEED_BYTES, Need, NeedError, candidate, select};
use crate::state::Store;

/// What the planner routes read.
#[derive(Clone)]
pub struct PlannerState {
    /// The runtime state.
    pub store: Arc<Store>,
    /// `[policy] default_data_class`: what a need naming no data class will carry.
    pub default_data_class: String,
}

/// The routes, with their state applied (merge into the admin router).
pub fn router(state: PlannerState) -> axum::Router {
    axum::Router::new()
        .route("/v1/integrations", get(list))
        .route("/v1/integrations/{name}", get(one))
        // One byte over the cap is enough to know it is too large; nothing more is buffered.
        .route(
            "/v1/select",
            post(choose).layer(DefaultBodyLimit::max(MAX_NEED_BYTES + 1)),
        )
        .with_state(state)
}

async fn list(State(s): State<PlannerState>) -> Json<serde_json::Value> {
    let snap = s.store.load();
    let now = SystemTime::now();
    let views: Vec<IntegrationView> = snap.integrations.values().map(|st| view(st, now)).collect();
    Json(json!({"snapshot_version": snap.version, "integrations": views}))
}

async fn one(
    State(s): State<PlannerState>,
    name: Result<Path<String>, PathRejection>,
) -> Result<Json<IntegrationView>, AdminError> {
    let Path(name) = name.map_err(|_| AdminError::InvalidPath)?;
    let snap = s.store.load();
    match snap.get(&name) {
        Some(st) => Ok(Json(view(st, SystemTime::now()))),
        None => Err(AdminError::UnknownIntegration(name)),
    }
}

async fn choose(
    State(s): State<PlannerState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Answer>, AdminError> {
    if !json_or_absent(&headers) {
        return Err(AdminError::NeedMediaType);
    }
    // Over the cap is a need too large; any other read failure (a broken connection, a bad
    // chunk) says nothing about the need's size.
    let bytes = body.map_err(|e| match e {
        BytesRejection::FailedToBufferBody(FailedToBufferBody::LengthLimitError(_)) => {
            AdminError::InvalidNeed(NeedError::TooLarge)
        }
        _ => AdminError::BodyUnreadable,
    })?;
    let need = Need::parse(&bytes)?;
    let snap = s.store.load();
    let candidates: Vec<_> = snap.integrations.values().map(|st| candidate(st)).collect();
    Ok(Json(select(&need, &candidates, &s.default_data_class)))
}

/// `Content-Type: application/json` (parameters and case ignored), or no header at all.
fn json_or_absent(headers: &HeaderMap) -> bool {
    let mut values = headers.get_all(header::CONTENT_TYPE).iter();
    match (values.next(), values.next()) {
        (None, _) => true,
        (Some(v), None) => v.to_str().is_ok_and(|v| {
            v.split(';')
                .next()
                .is_some_and(|e| e.trim().eq_ignore_ascii_case("application/json"))
        }),
        (Some(_), Some(_)) => false,
    }
}
