//! The admin listener's forced refresh and its rate limit (I/O: HTTP, through the control handle).
//!
//! - `POST /v1/integrations/{name}/refresh`: forces one refresh and answers with its outcome
//!   (`200` with a [`RefreshReport`] whatever the result, `404` for an unknown integration, `503`
//!   with a `Retry-After` while the integration's refresh worker restarts after a panic). A
//!   forced refresh skips the stale-mark rate limit, so it has its own: at most one per
//!   integration per `[admin] refresh_min_interval`, else `429` with `Retry-After` (the admin
//!   listener's token check runs before this route). Errors render through [`AdminError`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Json;
use axum::extract::{Path, State};
use axum::routing::post;

use super::error::AdminError;
use crate::control::refresh::{ControlError, ControlHandle, RefreshReport};

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
        let mut last = lock(&self.last);
        refresh_allowed(last.get(name).copied(), now, self.min_interval)?;
        last.insert(name.to_owned(), now);
        Ok(())
    }

    fn forget(&self, name: &str) {
        lock(&self.last).remove(name);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
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
) -> Result<Json<RefreshReport>, AdminError> {
    if let Err(wait) = limiter.admit(&name) {
        limiter.refused.inc();
        return Err(AdminError::RateLimited {
            min_interval: limiter.min_interval,
            wait,
        });
    }
    match handle.refresh_now(&name).await {
        Ok(report) => Ok(Json(report)),
        Err(e) => {
            if let ControlError::UnknownIntegration(_) = e {
                limiter.forget(&name);
            }
            Err(e.into())
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
