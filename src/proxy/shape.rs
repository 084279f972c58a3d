//! Request header shaping from the profile: what is removed and what is set on every upstream
//! request, the same for the pingora path and the gateway's own client (pure, no I/O).

use http::header::{self, HeaderMap, HeaderName, HeaderValue};

use super::policy::Plan;
use super::upstream::Upstream;
use crate::profile::snapshot::IntegrationState;

/// Hop-by-hop headers (RFC 9110 §7.6.1) plus proxy credentials: never forwarded.
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "upgrade",
    "proxy-authorization",
    "proxy-authenticate",
    // The gateway holds the whole body before connecting: nothing upstream may wait for a 100.
    "expect",
];

/// Prefix of the gateway's own request headers (`A2A-Egress-Data-Class`, …): consumed here.
pub const GATEWAY_HEADER_PREFIX: &str = "a2a-egress-";

/// Header edits for one upstream request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HeaderPlan {
    /// Names to remove (lowercase).
    pub remove: Vec<HeaderName>,
    /// Values to set (replacing any existing).
    pub set: Vec<(HeaderName, HeaderValue)>,
}

impl HeaderPlan {
    /// Applies the plan to a header map.
    pub fn apply(&self, h: &mut HeaderMap) {
        for n in &self.remove {
            h.remove(n);
        }
        for (n, v) in &self.set {
            h.insert(n.clone(), v.clone());
        }
    }
}

/// Plans the upstream headers. `body_len` is the exact length of the body that will be sent
/// (known because the gateway holds it), or `None` for the gateway's own client, which frames
/// the body itself.
pub fn plan_headers(
    original: &HeaderMap,
    state: &IntegrationState,
    upstream: &Upstream,
    plan: &Plan,
    body_len: Option<usize>,
) -> HeaderPlan {
    let mut remove: Vec<HeaderName> = Vec::new();
    let mut push = |n: HeaderName| {
        if !remove.contains(&n) {
            remove.push(n)
        }
    };
    for h in HOP_BY_HOP {
        push(HeaderName::from_static(h));
    }
    // Headers the caller declared hop-by-hop in `Connection`.
    for v in original.get_all(header::CONNECTION) {
        for name in v.to_str().unwrap_or("").split(',') {
            if let Ok(n) = HeaderName::from_bytes(name.trim().as_bytes()) {
                push(n);
            }
        }
    }
    for n in original.keys() {
        if n.as_str().starts_with(GATEWAY_HEADER_PREFIX) {
            push(n.clone());
        }
    }
    // 0.3-era extension header: the activated set is sent once, under the 1.0 name.
    push(HeaderName::from_static("x-a2a-extensions"));
    push(HeaderName::from_static("a2a-extensions"));
    if !upstream.pass_through_auth {
        push(header::AUTHORIZATION);
    }
    push(header::TRANSFER_ENCODING);
    push(header::CONTENT_LENGTH);
    push(header::HOST);

    let mut set = Vec::new();
    // pingora forwards the caller's Host unchanged; the gateway's own client sets it from the URL.
    if body_len.is_some()
        && let Ok(v) = HeaderValue::from_str(&upstream.authority)
    {
        set.push((header::HOST, v));
    }
    if let Some(len) = body_len
        && (len > 0 || original.contains_key(header::CONTENT_LENGTH))
    {
        set.push((header::CONTENT_LENGTH, HeaderValue::from(len)));
    }
    if let Ok(v) = HeaderValue::from_str(&plan.version) {
        set.push((HeaderName::from_static("a2a-version"), v));
    }
    let ext = state.activated_extensions();
    if !ext.is_empty()
        && let Ok(v) = HeaderValue::from_str(&ext.join(","))
    {
        set.push((HeaderName::from_static("a2a-extensions"), v));
    }
    if let Some(auth) = &upstream.authorization {
        set.push((header::AUTHORIZATION, auth.clone()));
    }
    HeaderPlan { remove, set }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Credential, Integration, StreamingMode};
    use crate::profile::{Binding, Display, Interface, Profile};
    use crate::proxy::policy::StreamPlan;
    use crate::proxy::route::Method;
    use std::sync::Arc;

    fn state(exts: &[&str]) -> IntegrationState {
        let i = Integration {
            name: "echo".into(),
            card: "https://a.example/c".into(),
            origins: vec!["https://a.example".into()],
            binding: None,
            version: None,
            skills: vec!["s".into()],
            scopes: vec![],
            data_classes: vec!["internal".into()],
            streaming: StreamingMode::Preferred,
            extensions: exts.iter().map(|s| s.to_string()).collect(),
            tenant: None,
            credential: Credential::None,
            max_body_bytes: 10,
            ca_file: None,
        };
        let p = Profile {
            usable: true,
            unusable: None,
            reason: None,
            agent_version: "1".into(),
            card_digest: "x".into(),
            interface: Some(Interface {
                url: "https://a.example:8443/a2a".into(),
                binding: Binding::JsonRpc,
                version: "1.0".into(),
                tenant: None,
            }),
            streaming: true,
            push: false,
            extended_card: false,
            extensions: vec!["urn:a".into(), "urn:b".into()],
            skills: Default::default(),
            display: Display::default(),
        };
        IntegrationState {
            integration: Arc::new(i),
            profile: Some(Arc::new(p)),
            ..IntegrationState::pending(Arc::new(Integration {
                name: "echo".into(),
                card: String::new(),
                origins: vec![],
                binding: None,
                version: None,
                skills: vec![],
                scopes: vec![],
                data_classes: vec![],
                streaming: StreamingMode::Preferred,
                extensions: vec![],
                tenant: None,
                credential: Credential::None,
                max_body_bytes: 1,
                ca_file: None,
            }))
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
            rewritten_body: None,
            version: "1.0".into(),
        }
    }

    #[test]
    fn strips_hop_by_hop_gateway_and_caller_auth_and_sets_profile_headers() {
        let mut h = HeaderMap::new();
        h.insert(
            "connection",
            HeaderValue::from_static("keep-alive, x-secret-hop"),
        );
        h.insert("x-secret-hop", HeaderValue::from_static("1"));
        h.insert(
            "a2a-egress-data-class",
            HeaderValue::from_static("internal"),
        );
        h.insert("authorization", HeaderValue::from_static("Bearer caller"));
        h.insert("a2a-extensions", HeaderValue::from_static("urn:caller"));
        h.insert("host", HeaderValue::from_static("127.0.0.1:7411"));
        h.insert("content-type", HeaderValue::from_static("application/json"));
        h.insert("content-length", HeaderValue::from_static("99"));
        let mut up = Upstream::for_tests("https://a.example:8443/a2a");
        let mut auth = HeaderValue::from_static("Bearer gw");
        auth.set_sensitive(true);
        up.authorization = Some(auth);
        let p = plan_headers(&h, &state(&["urn:b"]), &up, &plan(), Some(12));
        p.apply(&mut h);
        assert!(h.get("connection").is_none());
        assert!(h.get("x-secret-hop").is_none());
        assert!(h.get("a2a-egress-data-class").is_none());
        assert_eq!(h["authorization"], "Bearer gw");
        assert_eq!(h["a2a-extensions"], "urn:b");
        assert_eq!(h["a2a-version"], "1.0");
        assert_eq!(h["host"], "a.example:8443");
        assert_eq!(h["content-length"], "12");
        assert_eq!(h["content-type"], "application/json");
    }

    #[test]
    fn no_credential_drops_the_callers_and_pass_through_keeps_it() {
        let mut h = HeaderMap::new();
        h.insert("authorization", HeaderValue::from_static("Bearer caller"));
        let up = Upstream::for_tests("https://a.example/a2a");
        let mut h1 = h.clone();
        plan_headers(&h1, &state(&[]), &up, &plan(), None).apply(&mut h1);
        assert!(h1.get("authorization").is_none());
        assert!(h1.get("a2a-extensions").is_none(), "nothing activated");
        let mut up = up;
        up.pass_through_auth = true;
        plan_headers(&h, &state(&[]), &up, &plan(), None).apply(&mut h);
        assert_eq!(h["authorization"], "Bearer caller");
    }
}
