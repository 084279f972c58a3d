//! The admin listener's protection: the bearer token its mutating routes require (`[admin]
//! token_file`) and the forced-refresh rate limit they share (axum middleware; no I/O besides the
//! request).
//!
//! Reading the probe and scrape routes (`GET`/`HEAD` of `/healthz`, `/readyz`, `/metrics`) stays
//! open, so a kubelet and a Prometheus without credentials keep working (without the token,
//! `/readyz` shows only readiness and each integration's status); every other request —
//! the planner views and `POST /v1/select` included, since they show what the gateway reaches
//! and why — needs `Authorization: Bearer <token>` when a token is configured, which config
//! validation requires whenever the admin listener is not on loopback. `/metrics` carries only
//! integration names and enum labels; `/readyz` the gateway's own account of each integration. The token is compared in
//! constant time (see [`AdminToken`]); a refusal is `401` with `WWW-Authenticate: Bearer` (RFC
//! 6750 section 3) and a `google.rpc.Status` body whose ErrorInfo reason is `UNAUTHENTICATED`.

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::AdminError;
use super::refresh::RefreshLimiter;
use crate::config::{Admin, AdminToken};
use crate::metrics::Metrics;

/// Who may use the admin listener's mutating routes, and how often they may force a refresh.
#[derive(Clone)]
pub struct Access {
    token: Option<AdminToken>,
    /// The forced-refresh rate limit (per integration).
    pub refresh: RefreshLimiter,
    metrics: Metrics,
}

impl Access {
    /// From the validated `[admin]` table.
    pub fn new(admin: &Admin, metrics: Metrics) -> Access {
        let refused = metrics
            .admin_refusals
            .with_label_values(&[super::error::RATE_LIMITED]);
        // At 0 from the start, like the rate-limited series, for `increase()` in alerts.
        metrics
            .admin_refusals
            .with_label_values(&[super::error::UNAUTHENTICATED]);
        Access {
            token: admin.token.clone(),
            refresh: RefreshLimiter::new(admin.refresh_min_interval, refused),
            metrics,
        }
    }

    /// No token and no rate limit (for tests that drive the admin routes directly).
    pub fn open(metrics: Metrics) -> Access {
        Access::new(
            &Admin {
                token: None,
                refresh_min_interval: std::time::Duration::ZERO,
                ..Admin::default()
            },
            metrics,
        )
    }
}

impl Access {
    /// Whether a request with `headers` may see what only the token holder may: true without a
    /// configured token, else only with the right one (pure; counts and logs nothing: a probe
    /// without a token is no refusal, and a wrong one never gets here, see `verdict_at`).
    pub fn holds_token(&self, headers: &HeaderMap) -> bool {
        verdict(self.token.as_ref(), headers) == Verdict::Allowed
    }
}

/// How a request stands against the token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Allowed,
    /// No usable `Authorization: Bearer …`.
    Missing,
    /// A bearer token that is not the configured one.
    Wrong,
}

/// The credentials of `Authorization: Bearer <token>` (RFC 6750 section 2.1; the scheme is
/// case-insensitive, RFC 9110 section 11.1), or `None` for another scheme or a malformed value.
fn bearer(value: &[u8]) -> Option<&[u8]> {
    let space = value.iter().position(|b| *b == b' ')?;
    let (scheme, rest) = value.split_at(space);
    if !scheme.eq_ignore_ascii_case(b"bearer") {
        return None;
    }
    let start = rest.iter().position(|b| *b != b' ')?;
    let token = rest.get(start..)?;
    (!token.is_empty()).then_some(token)
}

/// Decides a request for `path` against the configured token (pure): reads of the probe and
/// scrape routes pass, everything else needs the token.
fn verdict_at(
    token: Option<&AdminToken>,
    method: &Method,
    path: &str,
    headers: &HeaderMap,
) -> Verdict {
    let open = matches!(path, "/healthz" | "/readyz" | "/metrics");
    if open && matches!(*method, Method::GET | Method::HEAD) {
        // `/readyz` shows more to the token's holder, so a wrong token there is refused and
        // counted like anywhere else: answered, it would make the page an unwatched oracle for
        // guessing the token. Without a token it is the kubelet's reduced view.
        if path == "/readyz" && verdict(token, headers) == Verdict::Wrong {
            return Verdict::Wrong;
        }
        return Verdict::Allowed;
    }
    verdict(token, headers)
}

/// Decides a request against the configured token (pure), whatever its path or method.
fn verdict(token: Option<&AdminToken>, headers: &HeaderMap) -> Verdict {
    let Some(token) = token else {
        return Verdict::Allowed;
    };
    let mut values = headers.get_all(header::AUTHORIZATION).iter();
    // Two Authorization lines are ambiguous: refuse rather than pick one.
    let (Some(v), None) = (values.next(), values.next()) else {
        return Verdict::Missing;
    };
    match bearer(v.as_bytes()) {
        Some(t) if token.matches(t) => Verdict::Allowed,
        Some(_) => Verdict::Wrong,
        None => Verdict::Missing,
    }
}

/// The middleware: passes allowed requests on, answers the rest `401`.
pub async fn require_token(
    State(access): State<Access>,
    req: Request<Body>,
    next: Next,
) -> Response {
    let v = verdict_at(
        access.token.as_ref(),
        req.method(),
        req.uri().path(),
        req.headers(),
    );
    if v == Verdict::Allowed {
        return next.run(req).await;
    }
    let refusal = AdminError::Unauthenticated {
        presented: v == Verdict::Wrong,
    };
    access
        .metrics
        .admin_refusals
        .with_label_values(&[refusal.reason()])
        .inc();
    tracing::warn!(
        method = %req.method(),
        presented = v == Verdict::Wrong,
        reason = refusal.reason(),
        "admin request without a valid bearer token refused"
    );
    refusal.into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_credentials_are_parsed_strictly() {
        assert_eq!(bearer(b"Bearer abc"), Some(&b"abc"[..]));
        assert_eq!(bearer(b"bearer  abc"), Some(&b"abc"[..]));
        assert_eq!(bearer(b"BEARER abc"), Some(&b"abc"[..]));
        assert_eq!(bearer(b"Bearer "), None);
        assert_eq!(bearer(b"Bearer"), None);
        assert_eq!(bearer(b"Basic abc"), None);
        assert_eq!(bearer(b"Bearerabc"), None);
        assert_eq!(bearer(b"abc"), None);
        assert_eq!(bearer("Bearer é".as_bytes()), Some("é".as_bytes()));
    }

    #[test]
    fn probe_reads_pass_without_the_token() {
        let token = AdminToken::new("0123456789abcdef");
        let with = |v: &[&str]| {
            let mut h = HeaderMap::new();
            for x in v {
                h.append(header::AUTHORIZATION, x.parse().unwrap());
            }
            h
        };
        let none = HeaderMap::new();
        assert_eq!(
            verdict_at(Some(&token), &Method::GET, "/metrics", &none),
            Verdict::Allowed
        );
        assert_eq!(
            verdict_at(Some(&token), &Method::HEAD, "/readyz", &none),
            Verdict::Allowed
        );
        // A wrong token on /readyz is refused (its body differs for the holder); elsewhere among
        // the probe routes it is ignored, as the kubelet and Prometheus send none.
        let mut wrong = HeaderMap::new();
        wrong.insert(header::AUTHORIZATION, "Bearer nope".parse().unwrap());
        assert_eq!(
            verdict_at(Some(&token), &Method::GET, "/readyz", &wrong),
            Verdict::Wrong
        );
        assert_eq!(
            verdict_at(Some(&token), &Method::GET, "/metrics", &wrong),
            Verdict::Allowed
        );
        for m in [
            Method::POST,
            Method::PUT,
            Method::DELETE,
            Method::PATCH,
            Method::OPTIONS,
        ] {
            assert_eq!(
                verdict_at(Some(&token), &m, "/v1/select", &none),
                Verdict::Missing,
                "{m}"
            );
        }
        let good = "Bearer 0123456789abcdef";
        assert_eq!(
            verdict_at(Some(&token), &Method::POST, "/v1/select", &with(&[good])),
            Verdict::Allowed
        );
        assert_eq!(
            verdict_at(
                Some(&token),
                &Method::POST,
                "/v1/select",
                &with(&["Bearer 0123456789abcde"])
            ),
            Verdict::Wrong
        );
        assert_eq!(
            verdict_at(
                Some(&token),
                &Method::POST,
                "/v1/select",
                &with(&[good, good])
            ),
            Verdict::Missing,
            "two Authorization lines are refused"
        );
        assert_eq!(
            verdict_at(None, &Method::POST, "/v1/select", &none),
            Verdict::Allowed
        );
    }

    #[test]
    fn the_planner_reads_need_the_token_probes_and_metrics_do_not() {
        let token = AdminToken::new("0123456789abcdef");
        let none = HeaderMap::new();
        let mut good = HeaderMap::new();
        good.insert(
            header::AUTHORIZATION,
            "Bearer 0123456789abcdef".parse().unwrap(),
        );
        for path in [
            "/v1/integrations",
            "/v1/integrations/a",
            "/v1/select",
            "/v1/nope",
        ] {
            for m in [Method::GET, Method::HEAD] {
                let v = verdict_at(Some(&token), &m, path, &none);
                assert_eq!(v, Verdict::Missing, "{m} {path}");
                let v = verdict_at(Some(&token), &m, path, &good);
                assert_eq!(v, Verdict::Allowed, "{m} {path}");
            }
        }
        for path in ["/healthz", "/readyz", "/metrics"] {
            let v = verdict_at(Some(&token), &Method::GET, path, &none);
            assert_eq!(v, Verdict::Allowed, "{path}");
        }
        let v = verdict_at(None, &Method::GET, "/v1/integrations", &none);
        assert_eq!(v, Verdict::Allowed);
    }
}
