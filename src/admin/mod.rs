//! The admin listener: health, readiness, Prometheus metrics and the planner API (I/O).
//!
//! Endpoints:
//! - `GET /healthz`: 200 while the process serves.
//! - `GET /readyz`: 200 once every integration has a verdict (usable, unusable or blocked) and the
//!   gateway is not draining, else 503; the body lists each integration's status and its verdict
//!   against its lockfile (`lock`: `verdict`, `findings`, `at`, `fallback`), its runtime
//!   `evidence`, its last probe run (`probes`) and each claim of its profile with its source
//!   (`claims`: declared, verified or contradicted, see [`crate::state::claims`]), and the data
//!   plane's threads as `serve` chose them (`runtime`). With `[admin] token_file` set, a request
//!   without the token sees only `ready`, `draining` and each integration's `status`.
//! - `GET /metrics`: Prometheus text exposition of the one [`Metrics`] registry.
//! - `POST /v1/integrations/{name}/refresh` ([`refresh`], when the control plane runs): a forced
//!   refresh, rate-limited per integration.
//! - `GET /v1/integrations`, `GET /v1/integrations/{name}`, `POST /v1/select` ([`planner`]): the
//!   planner view of each integration ([`view`]) and deterministic selection.
//!
//! Every method but `GET`/`HEAD` needs the admin bearer token when one is configured ([`auth`]).
//! Every error is a `google.rpc.Status` with the gateway's ErrorInfo ([`error::AdminError`]).
//!
//! axum on its own small tokio runtime (not a pingora `ServeHttp`), so other components can add
//! routes to the same [`router`] and tests can drive it with real sockets on port 0; [`serve`]
//! bounds how long a connection may take to send a header and how many may be open.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;

use crate::metrics::Metrics;

pub mod auth;
pub mod error;
pub mod planner;
pub mod readyz;
pub mod refresh;
pub mod view;
use crate::state::Store;
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
    /// `[policy] default_data_class` (what a need naming no data class carries).
    pub default_data_class: String,
    /// The effective-card signer (`[effective_card] signing_key`), for `/readyz`.
    pub signer: Option<Arc<crate::proxy::card_signer::CardSigner>>,
    /// The data plane's threads as `serve` chose them, for `/readyz` (`None`: not run by `serve`).
    pub threads: Option<crate::config::Threads>,
}

/// The admin routes (plus the control plane's `POST /v1/integrations/{name}/refresh` when it runs).
pub fn router(state: AdminState) -> Router {
    let control = state.control.clone();
    let access = state.access.clone();
    let planner = planner::router(planner::PlannerState {
        store: state.store.clone(),
        default_data_class: state.default_data_class.clone(),
    });
    let r = Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .with_state(state)
        .merge(planner);
    let r = match control {
        Some(c) => r.merge(refresh::router(c, access.refresh.clone())),
        None => r,
    };
    // After every merge, so each route answers an unknown path or method protocol-shaped too.
    let r = r
        .fallback(|| async { error::AdminError::UnknownRoute })
        .method_not_allowed_fallback(|| async { error::AdminError::MethodNotAllowed });
    // Last, so it wraps every route, merged ones included.
    r.layer(axum::middleware::from_fn_with_state(
        access,
        auth::require_token,
    ))
}

/// Serves `app` on `listener` until the runtime stops. hyper directly rather than `axum::serve`,
/// which sets no header deadline and takes every connection: here each connection must send its
/// request header (the first, and each next one on a kept-alive connection) within
/// `header_timeout` or is closed, and beyond `max_connections` open ones a new connection is
/// closed at once (monitoring retries; the data plane is unaffected).
pub async fn serve(
    listener: tokio::net::TcpListener,
    app: Router,
    header_timeout: std::time::Duration,
    max_connections: usize,
) {
    let slots = Arc::new(tokio::sync::Semaphore::new(max_connections));
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of file descriptors, typically: give connections time to close.
                tracing::warn!(error = %e, "admin accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                continue;
            }
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            tracing::warn!(max_connections, "admin connection refused: too many open");
            continue;
        };
        let service = hyper_util::service::TowerToHyperService::new(app.clone());
        tokio::spawn(async move {
            let _slot = slot;
            let served = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(header_timeout)
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .await;
            if let Err(e) = served {
                tracing::debug!(error = %e, "admin connection ended with an error");
            }
        });
    }
}

async fn readyz(State(s): State<AdminState>, headers: HeaderMap) -> Response {
    let snap = s.store.load();
    let draining = s.draining.load(Ordering::Relaxed);
    let ready = snap.ready() && !draining;
    let code = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    // Off loopback the pod network reaches this port, and the kubelet needs only the status: a
    // reason, a lock finding, a claim or a skill name (partner-only ones from an extended card
    // included) is the token holder's to read.
    if !s.access.holds_token(&headers) {
        let integrations: serde_json::Map<String, serde_json::Value> = (snap.integrations.iter())
            .map(|(n, st)| (n.clone(), readyz::status_only(st)))
            .collect();
        let body = json!({"ready": ready, "draining": draining, "integrations": integrations,
            "detail": "send the admin bearer token for each integration's reason, lock, evidence and claims"});
        return (code, axum::Json(body)).into_response();
    }
    let integrations: serde_json::Map<String, serde_json::Value> = snap
        .integrations
        .iter()
        // Each entry bounded (reason, findings, evidence, claims): see [`readyz`].
        .map(|(n, st)| (n.clone(), readyz::entry(st)))
        .collect();
    (
        code,
        axum::Json(json!({
            "ready": ready,
            "draining": draining,
            "snapshot_version": snap.version,
            "integrations": integrations,
            // Degraded, unrevalidated (served from disk) and refused-config detail.
            "control": s.control.as_ref().map(|c| c.readiness()),
            // The gateway's card signing: key, mode, jku, cards currently served unsigned
            // because signing failed (`null` without a key).
            "card_signing": s.signer.as_ref().map(|sg| sg.readiness()),
            // The data plane's threads, where the count came from and why; read at start.
            "runtime": s.threads.as_ref().map(readyz::runtime),
        })),
    )
        .into_response()
}

async fn metrics(State(s): State<AdminState>) -> Response {
    // Gathering and rendering every series is CPU in proportion to the integrations (and their
    // label sets): on the blocking pool, so a scrape never holds up the calls a serving thread
    // carries (the admin listener shares the data plane's runtime; issue 21).
    let rendered = tokio::task::spawn_blocking(move || {
        s.metrics.observe_snapshot(&s.store.load());
        s.metrics.render()
    })
    .await;
    let text = match rendered {
        Ok(text) => text,
        Err(e) => match e.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            // Cancelled: the runtime is stopping.
            Err(_) => return StatusCode::SERVICE_UNAVAILABLE.into_response(),
        },
    };
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        text,
    )
        .into_response()
}
