//! Request header shaping from the profile: the complete header set of every upstream request,
//! the one set every call sends (pure, no I/O).
//!
//! Caller headers are forwarded from an allowlist, never by removing known-bad ones: a header an
//! agent (or a proxy in front of it) may trust — `Cookie`, `Forwarded`, `X-Forwarded-*`,
//! `X-HTTP-Method-Override`, `X-Original-URL` — must not arrive because nobody thought to strip it.
//! Which ones is decided by [`crate::proxy::headers::crosses`], the one function that also decides
//! which agent headers reach the caller.

use http::header::{self, HeaderMap, HeaderName, HeaderValue};

use super::headers::{Side, crosses};
use super::policy::Plan;
use super::trace::Trace;
use crate::profile::Binding;
use crate::state::IntegrationState;
use crate::state::Upstream;

/// Prefix of the gateway's own request headers (`A2A-Egress-Data-Class`, …): consumed here.
pub const GATEWAY_HEADER_PREFIX: &str = "a2a-egress-";

/// The headers of one upstream request, in order: allowlisted caller headers (the built-in list,
/// the integration's `forward_headers`, and `Authorization` for a pass-through credential), then
/// the gateway's own — `Host`, `Content-Length` (the exact length of the body that will be sent),
/// `Accept-Encoding: identity`, `A2A-Version`, `A2A-Extensions`, the credential, `X-Request-Id`
/// and the trace context: the caller's `traceparent` (or, with tracing on, the gateway's span's),
/// `tracestate` and `baggage` when valid.
pub fn upstream_headers(
    caller: &HeaderMap,
    state: &IntegrationState,
    upstream: &Upstream,
    plan: &Plan,
    body_len: usize,
    trace: &Trace,
) -> Vec<(HeaderName, HeaderValue)> {
    let mut out: Vec<(HeaderName, HeaderValue)> = Vec::with_capacity(caller.len().min(16) + 9);
    let extra = &state.integration.forward_headers;
    // A 0.3 HTTP+JSON request is the translator's body, not the caller's: it is JSON, and says
    // so as 0.3 servers read it (JS 0.3.14's `express.json()` parses only `application/json`,
    // where a 1.0 caller may send `application/a2a+json`); a bodiless one (GET, DELETE) says
    // nothing.
    // A request moved to the other binding is the translator's too: JSON-RPC requires
    // `application/json`, which HTTP+JSON servers also read.
    let own_type =
        (plan.dialect.translates() && plan.dialect.binding == Binding::HttpJson) || plan.crosses();
    for (n, v) in caller {
        if own_type && *n == header::CONTENT_TYPE {
            continue;
        }
        // The trace headers are written from the request's checked trace context below, even
        // when `forward_headers` lists them, so a malformed one never leaves and none doubles;
        // reserved names are refused in `forward_headers` and checked again there.
        if crosses(Side::Caller, n, extra) {
            out.push((n.clone(), v.clone()));
        }
    }
    if own_type && body_len > 0 {
        out.push((
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        ));
    }
    if upstream.pass_through_auth {
        for v in caller.get_all(header::AUTHORIZATION) {
            // The caller's credential: redacted in every Debug of the header map from here on.
            let mut v = v.clone();
            v.set_sensitive(true);
            out.push((header::AUTHORIZATION, v));
        }
    }
    if let Ok(v) = HeaderValue::from_str(&upstream.authority) {
        out.push((header::HOST, v));
    }
    if body_len > 0 || caller.contains_key(header::CONTENT_LENGTH) {
        out.push((header::CONTENT_LENGTH, HeaderValue::from(body_len)));
    }
    out.push((
        header::ACCEPT_ENCODING,
        HeaderValue::from_static("identity"),
    ));
    // A 0.3 agent gets no A2A-Version and its extensions under 0.3's name, `X-A2A-Extensions`
    // (the dialect decides, for probes too).
    out.extend(plan.dialect.version_header(&plan.version));
    out.extend(
        plan.dialect
            .extensions_header(&state.activated_extensions()),
    );
    if let Some(auth) = &upstream.authorization {
        out.push((header::AUTHORIZATION, auth.clone()));
    }
    if let Some(id) = trace.request_id_header() {
        out.push((HeaderName::from_static("x-request-id"), id));
    }
    if let Some(tp) = trace.upstream_traceparent() {
        out.push((HeaderName::from_static("traceparent"), tp.clone()));
    }
    if let Some(ts) = &trace.tracestate {
        out.push((HeaderName::from_static("tracestate"), ts.clone()));
    }
    if let Some(b) = &trace.baggage {
        out.push((HeaderName::from_static("baggage"), b.clone()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Integration;
    use crate::profile::{Binding, Profile};
    use crate::proxy::policy::StreamPlan;
    use crate::proxy::route::Method;
    use crate::translate::{Dialect, Protocol};
    use std::sync::Arc;

    fn state(exts: &[&str]) -> IntegrationState {
        let i = Integration::builder("echo")
            .card("https://a.example/c")
            .skills(&["s"])
            .extensions(exts)
            .max_body_bytes(10)
            .forward_headers(&["x-listed", "x-request-id"])
            .build();
        let p = Profile::builder()
            .card_digest("x")
            .url("https://a.example:8443/a2a")
            .streaming(true)
            .extensions(&["urn:a", "urn:b"])
            .build();
        IntegrationState {
            integration: Arc::new(i),
            status: crate::state::Status::Usable {
                profile: Arc::new(p),
                upstream: Arc::new(Upstream::for_tests("https://a.example:8443/a2a")),
            },
            ..IntegrationState::pending(Arc::new(
                Integration::builder("echo")
                    .card("")
                    .origins(&[])
                    .data_classes(&[])
                    .max_body_bytes(1)
                    .build(),
            ))
        }
    }

    fn plan() -> Plan {
        Plan {
            method: Method::SendMessage,
            binding: Binding::JsonRpc,
            stream: StreamPlan::Unary,
            tenant: None,
            upstream_path: "/a2a".into(),
            send_path: "/a2a".into(),
            upstream_method: None,
            rewritten_body: None,
            rpc_id: None,
            version: "1.0".into(),
            dialect: Dialect {
                protocol: Protocol::V1_0,
                binding: Binding::JsonRpc,
            },
            findings: Vec::new(),
            unscanned_bytes: 0,
        }
    }

    fn shaped(h: &HeaderMap, up: &Upstream, body_len: usize) -> HeaderMap {
        let mut out = HeaderMap::new();
        let trace = Trace::of(h);
        for (n, v) in upstream_headers(h, &state(&["urn:b"]), up, &plan(), body_len, &trace) {
            out.append(n, v);
        }
        out
    }

    #[test]
    fn only_allowlisted_caller_headers_leave_and_the_profile_sets_the_rest() {
        let mut h = HeaderMap::new();
        for (n, v) in [
            ("connection", "keep-alive, x-secret-hop"),
            ("x-secret-hop", "1"),
            ("a2a-egress-data-class", "internal"),
            ("authorization", "Bearer caller"),
            ("a2a-extensions", "urn:caller"),
            ("a2a-version", "0.3"),
            ("host", "127.0.0.1:7411"),
            ("content-length", "99"),
            ("accept-encoding", "gzip"),
            ("cookie", "s=1"),
            ("forwarded", "for=1.2.3.4"),
            ("x-forwarded-for", "1.2.3.4"),
            ("x-http-method-override", "DELETE"),
            ("x-original-url", "/admin"),
            ("x-rewrite-url", "/admin"),
            ("content-type", "application/json"),
            ("accept", "application/json"),
            ("accept", "text/event-stream"),
            ("traceparent", TP),
            ("tracestate", "a=b"),
            ("x-request-id", "caller-7"),
            ("user-agent", "caller/1"),
            ("x-listed", "yes"),
        ] {
            h.append(n, HeaderValue::from_static(v));
        }
        let mut up = Upstream::for_tests("https://a.example:8443/a2a");
        let mut auth = HeaderValue::from_static("Bearer gw");
        auth.set_sensitive(true);
        up.authorization = Some(auth);
        let out = shaped(&h, &up, 12);
        let names: Vec<&str> = out.keys().map(HeaderName::as_str).collect();
        assert_eq!(
            names,
            [
                "content-type",
                "accept",
                "user-agent",
                "x-listed",
                "host",
                "content-length",
                "accept-encoding",
                "a2a-version",
                "a2a-extensions",
                "authorization",
                "x-request-id",
                "traceparent",
                "tracestate",
            ]
        );
        assert_eq!(out["x-request-id"], "caller-7");
        assert_eq!(
            out.get_all("x-request-id").iter().count(),
            1,
            "listed, yet written once"
        );
        assert_eq!(out["traceparent"], TP);
        assert_eq!(out.get_all("accept").iter().count(), 2);
        assert_eq!(out["authorization"], "Bearer gw");
        assert_eq!(out.get_all("authorization").iter().count(), 1);
        assert_eq!(out["a2a-extensions"], "urn:b");
        assert_eq!(out["a2a-version"], "1.0");
        assert_eq!(out["host"], "a.example:8443");
        assert_eq!(out["content-length"], "12");
        assert_eq!(out["accept-encoding"], "identity");
    }

    const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    /// A 0.3 agent: no `A2A-Version` (absent means 0.3), extensions under `X-A2A-Extensions`, and
    /// neither 1.0 name from the caller either.
    #[test]
    fn a_0_3_agent_gets_no_version_and_its_extensions_header() {
        let mut h = HeaderMap::new();
        h.append("a2a-version", HeaderValue::from_static("1.0"));
        h.append("a2a-extensions", HeaderValue::from_static("urn:caller"));
        h.append("x-a2a-extensions", HeaderValue::from_static("urn:caller"));
        let mut p = plan();
        p.version = "0.3".into();
        p.dialect.protocol = Protocol::V0_3;
        let up = Upstream::for_tests("https://a.example/a2a");
        let trace = Trace::of(&h);
        let out: Vec<(HeaderName, HeaderValue)> =
            upstream_headers(&h, &state(&["urn:b"]), &up, &p, 3, &trace);
        let get = |n: &str| -> Vec<&HeaderValue> {
            out.iter().filter(|(k, _)| k == n).map(|(_, v)| v).collect()
        };
        assert!(get("a2a-version").is_empty(), "{out:?}");
        assert!(get("a2a-extensions").is_empty(), "{out:?}");
        assert_eq!(
            get("x-a2a-extensions"),
            [&HeaderValue::from_static("urn:b")]
        );
    }

    /// A 0.3 HTTP+JSON agent gets the translator's body as `application/json` (JS 0.3.14 reads
    /// no other type), whatever type the 1.0 caller sent, and a bodiless call says no type.
    #[test]
    fn a_0_3_http_json_agent_gets_json_as_application_json() {
        let mut h = HeaderMap::new();
        h.append(
            "content-type",
            HeaderValue::from_static("application/a2a+json"),
        );
        let mut p = plan();
        p.binding = Binding::HttpJson;
        p.dialect = Dialect {
            protocol: Protocol::V0_3,
            binding: Binding::HttpJson,
        };
        let up = Upstream::for_tests("https://a.example/a2a");
        let trace = Trace::of(&h);
        for (len, want) in [(3, vec!["application/json"]), (0, vec![])] {
            let out = upstream_headers(&h, &state(&[]), &up, &p, len, &trace);
            let types: Vec<&str> = out
                .iter()
                .filter(|(k, _)| k == "content-type")
                .map(|(_, v)| v.to_str().unwrap())
                .collect();
            assert_eq!(types, want, "{out:?}");
        }
        // A 1.0 agent gets the caller's type, as before.
        let out = upstream_headers(&h, &state(&[]), &up, &plan(), 3, &trace);
        assert!(
            out.iter()
                .any(|(k, v)| k == "content-type" && v == "application/a2a+json")
        );
    }

    #[test]
    fn a_passed_through_caller_credential_is_marked_sensitive() {
        let mut h = HeaderMap::new();
        h.append("authorization", HeaderValue::from_static("Bearer caller"));
        let mut up = Upstream::for_tests("https://a.example/a2a");
        up.pass_through_auth = true;
        let out = shaped(&h, &up, 0);
        let auth = out.get("authorization").expect("passed through");
        assert_eq!(auth, "Bearer caller");
        assert!(
            auth.is_sensitive(),
            "a caller credential must never reach a log as text"
        );
    }

    #[test]
    fn an_invalid_trace_context_is_dropped_and_a_request_id_always_leaves() {
        let mut h = HeaderMap::new();
        h.insert("traceparent", HeaderValue::from_static("00-1-2-01"));
        h.insert("tracestate", HeaderValue::from_static("a=b"));
        h.insert("x-request-id", HeaderValue::from_static("two words"));
        let up = Upstream::for_tests("https://a.example/a2a");
        let out = shaped(&h, &up, 0);
        assert!(!out.contains_key("traceparent") && !out.contains_key("tracestate"));
        assert_eq!(out.get_all("x-request-id").iter().count(), 1);
        let id = out["x-request-id"].to_str().unwrap();
        assert!(
            id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()),
            "{id}"
        );
    }

    #[test]
    fn no_credential_drops_the_callers_and_pass_through_keeps_it() {
        let mut h = HeaderMap::new();
        h.insert("authorization", HeaderValue::from_static("Bearer caller"));
        let up = Upstream::for_tests("https://a.example/a2a");
        let out = upstream_headers(&h, &state(&[]), &up, &plan(), 0, &Trace::of(&h));
        assert!(!out.iter().any(|(n, _)| n == header::AUTHORIZATION));
        assert!(
            !out.iter().any(|(n, _)| n == "a2a-extensions"),
            "nothing activated"
        );
        assert!(
            !out.iter().any(|(n, _)| n == header::CONTENT_LENGTH),
            "no body"
        );
        let mut up = up;
        up.pass_through_auth = true;
        let out = shaped(&h, &up, 0);
        assert_eq!(out["authorization"], "Bearer caller");
    }

    #[test]
    fn reserved_names_never_leave_even_when_listed() {
        let mut st = state(&[]);
        let mut i = (*st.integration).clone();
        i.forward_headers = vec![
            HeaderName::from_static("a2a-egress-data-class"),
            HeaderName::from_static("accept-encoding"),
        ];
        st.integration = Arc::new(i);
        let mut h = HeaderMap::new();
        h.insert("a2a-egress-data-class", HeaderValue::from_static("secret"));
        h.insert("accept-encoding", HeaderValue::from_static("gzip"));
        let up = Upstream::for_tests("https://a.example/a2a");
        let out = upstream_headers(&h, &st, &up, &plan(), 0, &Trace::of(&h));
        assert!(
            !out.iter()
                .any(|(n, _)| n.as_str().starts_with(GATEWAY_HEADER_PREFIX))
        );
        let enc: Vec<_> = out
            .iter()
            .filter(|(n, _)| n == header::ACCEPT_ENCODING)
            .collect();
        assert_eq!(enc.len(), 1);
        assert_eq!(enc[0].1, "identity");
    }
}
