//! The admin listener: health, readiness, Prometheus metrics and the planner API (I/O).
//!
//! Endpoints:
//! - `GET /healthz`: 200 while the process serves.
//! - `GET /readyz`: 200 once every integration has a verdict (usable, unusable or blocked) and the
//!   gateway is not draining, else 503; the body lists each integration's status.
//! - `GET /metrics`: Prometheus text exposition of the one [`Metrics`] registry.
//! - `POST /v1/integrations/{name}/refresh` (from [`crate::control::http`], when the control plane
//!   runs): a forced refresh, rate-limited per integration.
//!
//! Every method but `GET`/`HEAD` needs the admin bearer token when one is configured ([`auth`]).
//!
//! axum on its own small tokio runtime (not a pingora `ServeHttp`), so other components can add
//! routes to the same [`router`] and tests can drive it with real sockets on port 0.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;

use crate::metrics::Metrics;

pub mod auth;
use crate::profile::snapshot::{Status, Store};
pub use auth::Access;

/// What the admin handlers read.
#[derive(Clone)]
pub struct AdminState {
    /// The profile store.
    pub store: Arc<Store>,
    /// Metrics.
    pub metrics: Metrics,
    /// Set while shutting down.
    pub draining: Arc<AtomicBool>,
    /// The control plane (refresh route, readiness detail); `None` when only a static store runs.
    pub control: Option<crate::control::refresh::ControlHandle>,
    /// The admin token and the forced-refresh rate limit (`[admin]`).
    pub access: Access,
}

/// The admin routes (plus the control plane's `POST /v1/integrations/{name}/refresh` when it runs).
pub fn router(state: AdminState) -> Router {
    let control = state.control.clone();
    let access = state.access.clone();
    let r = Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .with_state(state);
    let r = match control {
        Some(c) => r.merge(crate::control::http::router(c, access.refresh.clone())),
        None => r,
    };
    // Last, so it wraps every route, merged ones included.
    r.layer(axum::middleware::from_fn_with_state(
        access,
        auth::require_token,
    ))
}

async fn readyz(State(s): State<AdminState>) -> Response {
    let snap = s.store.load();
    let draining = s.draining.load(Ordering::Relaxed);
    let ready = snap.ready() && !draining;
    let integrations: serde_json::Map<String, serde_json::Value> = snap
        .integrations
        .iter()
        .map(|(n, st)| {
            let reason = match &st.status {
                Status::Unusable { reason } | Status::Blocked { reason } => Some(reason.clone()),
                _ => None,
            };
            (
                n.clone(),
                json!({"status": st.status.as_str(), "reason": reason}),
            )
        })
        .collect();
    let code = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (
        code,
        axum::Json(json!({
            "ready": ready,
            "draining": draining,
            "snapshot_version": snap.version,
            "integrations": integrations,
            // Degraded, unrevalidated (served from disk) and refused-config detail.
            "control": s.control.as_ref().map(|c| c.readiness()),
        })),
    )
        .into_response()
}

async fn metrics(State(s): State<AdminState>) -> Response {
    s.metrics.observe_snapshot(&s.store.load());
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        s.metrics.render(),
    )
        .into_response()
}
