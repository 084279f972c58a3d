//! The control plane's admin routes, merged into the admin listener's router (I/O: HTTP).
//!
//! - `POST /v1/integrations/{name}/refresh`: forces one refresh and answers with its outcome
//!   (`200` with a [`RefreshReport`](crate::control::refresh::RefreshReport) whatever the result,
//!   `404` for an unknown integration, `503` with a `Retry-After` while the integration's refresh
//!   worker restarts after a panic). A forced refresh skips the stale-mark rate limit, so it
//!   has its own: at most one per integration per `[admin] refresh_min_interval`, else `429`
//!   with `Retry-After` (the admin listener's token check runs before this route).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;

use crate::control::refresh::{ControlError, ControlHandle};

/// ErrorInfo reason (and metric label) of a forced refresh refused by the rate limit.
pub const RATE_LIMITED: &str = "REFRESH_RATE_LIMITED";

/// A `google.rpc.Status` error body with one `ErrorInfo{domain: "a2a-egress", reason}`.
pub fn status_error(code: StatusCode, status: &str, reason: &str, message: &str) -> Response {
    (
        code,
        Json(serde_json::json!({
            "error": {"code": code.as_u16(), "status": status, "message": message,
                      "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                                   "reason": reason, "domain": crate::proxy::deny::DOMAIN}]}
        })),
    )
        .into_response()
}

/// Whether a forced refresh may start now, given when the last one of the same integration
/// started (pure): `Err(wait)` is how long until the next one may.
pub fn refresh_allowed(
    last: Option<Instant>,
    now: Instant,
    min_interval: Duration,
) -> Result<(), Duration> {
    match last {
        Some(t) => match (t + min_interval).checked_duration_since(now) {
            Some(wait) if !wait.is_zero() => Err(wait),
            _ => Ok(()),
        },
        None => Ok(()),
    }
}

/// The per-integration forced-refresh rate limit.
#[derive(Clone)]
pub struct RefreshLimiter {
    min_interval: Duration,
    /// When the last admitted forced refresh of each integration started. Only configured names
    /// stay (an unknown name is removed at once), so the map is bounded by the config.
    last: Arc<Mutex<HashMap<String, Instant>>>,
    refused: prometheus::IntCounter,
}

impl RefreshLimiter {
    /// At most one forced refresh per integration per `min_interval` (zero: no limit); refusals
    /// count in `refused`.
    pub fn new(min_interval: Duration, refused: prometheus::IntCounter) -> RefreshLimiter {
        RefreshLimiter {
            min_interval,
            last: Arc::new(Mutex::new(HashMap::new())),
            refused,
        }
    }

    /// Admits a forced refresh of `name` now, or says how long to wait. Check and record happen
    /// under one lock, so two concurrent requests cannot both pass.
    fn admit(&self, name: &str) -> Result<(), Duration> {
        if self.min_interval.is_zero() {
            return Ok(());
        }
        let now = Instant::now();
        let mut last = crate::control::refresh::lock(&self.last);
        refresh_allowed(last.get(name).copied(), now, self.min_interval)?;
        last.insert(name.to_owned(), now);
        Ok(())
    }

    fn forget(&self, name: &str) {
        crate::control::refresh::lock(&self.last).remove(name);
    }
}

/// The routes, with their state applied (merge into the admin router).
pub fn router(handle: ControlHandle, limiter: RefreshLimiter) -> axum::Router {
    axum::Router::new()
        .route("/v1/integrations/{name}/refresh", post(refresh))
        .with_state((handle, limiter))
}

async fn refresh(
    State((handle, limiter)): State<(ControlHandle, RefreshLimiter)>,
    Path(name): Path<String>,
) -> Response {
    if let Err(wait) = limiter.admit(&name) {
        limiter.refused.inc();
        // Whole seconds, rounded up: Retry-After cannot say less than 1.
        let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
        let mut resp = status_error(
            StatusCode::TOO_MANY_REQUESTS,
            "RESOURCE_EXHAUSTED",
            RATE_LIMITED,
            &format!(
                "this integration was refreshed less than {:?} ago; retry in {secs} s",
                limiter.min_interval
            ),
        );
        resp.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs.max(1)));
        return resp;
    }
    match handle.refresh_now(&name).await {
        Ok(report) => (StatusCode::OK, Json(report)).into_response(),
        Err(e @ ControlError::UnknownIntegration(_)) => {
            limiter.forget(&name);
            status_error(
                StatusCode::NOT_FOUND,
                "NOT_FOUND",
                "UNKNOWN_INTEGRATION",
                &e.to_string(),
            )
        }
        // Removed while waiting, or the worker is restarting after a panic: try again later.
        Err(e) => {
            let mut r = status_error(
                StatusCode::SERVICE_UNAVAILABLE,
                "UNAVAILABLE",
                e.reason(),
                &e.to_string(),
            );
            if let Some(after) = e.retry_after() {
                r.headers_mut().insert(
                    header::RETRY_AFTER,
                    HeaderValue::from(after.as_secs().max(1)),
                );
            }
            r
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forced_refresh_waits_out_the_interval() {
        let t0 = Instant::now();
        let min = Duration::from_secs(10);
        assert_eq!(refresh_allowed(None, t0, min), Ok(()));
        assert_eq!(
            refresh_allowed(Some(t0), t0 + Duration::from_secs(3), min),
            Err(Duration::from_secs(7))
        );
        assert_eq!(refresh_allowed(Some(t0), t0 + min, min), Ok(()));
        assert_eq!(refresh_allowed(Some(t0), t0 + min * 2, min), Ok(()));
        assert_eq!(refresh_allowed(Some(t0), t0, Duration::ZERO), Ok(()));
    }

    #[test]
    fn the_limiter_is_per_integration_and_forgets_unknown_names() {
        let l = RefreshLimiter::new(
            Duration::from_secs(3600),
            prometheus::IntCounter::new("x", "x").unwrap(),
        );
        assert!(l.admit("a").is_ok());
        assert!(l.admit("a").is_err());
        assert!(l.admit("b").is_ok());
        l.forget("b");
        assert!(l.admit("b").is_ok());
        let open = RefreshLimiter::new(
            Duration::ZERO,
            prometheus::IntCounter::new("y", "y").unwrap(),
        );
        assert!(open.admit("a").is_ok() && open.admit("a").is_ok());
    }
}
