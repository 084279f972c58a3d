//! Which headers cross the gateway, in both directions: a caller's to the agent and an agent's
//! to the caller, decided by one function, [`crosses`], from allowlists (pure, no I/O).
//!
//! Never by removing known-bad ones: a header one side may trust — `Cookie`, `Forwarded`,
//! `X-Forwarded-*` towards the agent; `Set-Cookie`, `Server`, `X-Powered-By`, `Location`,
//! `Alt-Svc`, `Strict-Transport-Security` towards the caller — must not arrive because nobody
//! thought to strip it. The integration's `forward_headers` names headers that travel between
//! its callers and its agent, both ways; names the gateway sets, frames or consumes itself never
//! do, whoever lists them.
//!
//! An agent's headers are also capped ([`MAX_ANSWER_HEADERS`], [`MAX_ANSWER_HEADER_BYTES`]): the
//! ones past the cap are dropped, not the answer, because the answer's body is what the caller
//! asked for (a task may already exist for it) and no allowlisted header is needed to read it.

use http::header::{HeaderMap, HeaderName};

use crate::config::is_reserved_header;

/// Most agent headers passed to the caller.
pub const MAX_ANSWER_HEADERS: usize = 32;

/// Most bytes of agent headers (names and values) passed to the caller.
pub const MAX_ANSWER_HEADER_BYTES: usize = 16 * 1024;

/// Names that frame one hop or manage its connection, and the coding of its bytes: the gateway
/// writes them itself for what it sends, so none is copied from either side, whoever lists it.
pub const FRAMING: [&str; 9] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "upgrade",
    "transfer-encoding",
    "content-length",
    "content-encoding",
];

/// Whether `n` is one of [`FRAMING`].
pub fn is_framing(n: &str) -> bool {
    FRAMING.contains(&n)
}

/// Whose header it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The caller's request header, on its way to the agent.
    Caller,
    /// The agent's answer header, on its way to the caller.
    Agent,
}

/// Whether header `name` of `from` may reach the other side, `listed` being the integration's
/// `forward_headers`.
///
/// To the agent: content negotiation (not `Accept-Encoding`: the gateway asks for identity so it
/// can read agent errors) and the user agent (which names the caller's software, nothing it
/// could use to steer the agent); the trace context is the gateway's own, checked, then written
/// (`shape`), so it is not copied here.
///
/// To the caller: what describes the answer (`Content-Type`, `Content-Language`), A2A's own
/// (`A2A-Version`, `A2A-Extensions`: what the agent activated), caching validators and dates
/// (`Cache-Control`, `ETag`, `Last-Modified`, `Expires`, `Date`, `Vary`), the trace context, and
/// what tells the caller how to try again (`Retry-After`, `WWW-Authenticate`). Framing
/// (`Content-Length`, `Transfer-Encoding`) and `Content-Encoding` are the gateway's: it writes
/// them for the bytes it sends.
pub fn crosses(from: Side, name: &HeaderName, listed: &[HeaderName]) -> bool {
    match from {
        Side::Caller => {
            (to_agent(name) || listed.contains(name))
                && !is_trace_header(name)
                && !is_reserved_header(name.as_str())
        }
        Side::Agent => {
            to_caller(name)
                || (listed.contains(name)
                    && !is_reserved_header(name.as_str())
                    && !is_framing(name.as_str())
                    && name != http::header::SET_COOKIE)
        }
    }
}

fn to_agent(n: &HeaderName) -> bool {
    matches!(n.as_str(), "content-type" | "accept" | "user-agent")
}

fn to_caller(n: &HeaderName) -> bool {
    matches!(
        n.as_str(),
        "content-type"
            | "content-language"
            | "a2a-version"
            | "a2a-extensions"
            | "cache-control"
            | "etag"
            | "last-modified"
            | "expires"
            | "date"
            | "vary"
            | "traceparent"
            | "tracestate"
            | "x-request-id"
            | "retry-after"
            | "www-authenticate"
    )
}

/// Headers the gateway writes from the request's checked trace context rather than copying.
pub fn is_trace_header(n: &HeaderName) -> bool {
    matches!(
        n.as_str(),
        "x-request-id" | "traceparent" | "tracestate" | "baggage"
    )
}

/// How an agent's header map becomes the caller's.
#[derive(Debug, PartialEq)]
pub enum Prune {
    /// Remove these names (every line of each); the rest is within the caps. The usual case,
    /// done in place: most answers carry one or two names that do not cross.
    Remove(Vec<HeaderName>),
    /// Over a cap: these headers instead ([`answer_headers`]), and how many allowed lines the
    /// caps dropped.
    Rebuild(HeaderMap, usize),
}

/// How to make `agent`'s headers the ones the caller gets.
pub fn prune(agent: &HeaderMap, listed: &[HeaderName]) -> Prune {
    let mut remove = Vec::new();
    let (mut lines, mut bytes) = (0usize, 0usize);
    for n in agent.keys() {
        if !crosses(Side::Agent, n, listed) {
            remove.push(n.clone());
            continue;
        }
        for v in agent.get_all(n) {
            lines += 1;
            bytes += n.as_str().len() + v.len();
        }
    }
    if lines > MAX_ANSWER_HEADERS || bytes > MAX_ANSWER_HEADER_BYTES {
        let (kept, dropped) = answer_headers(agent, listed);
        return Prune::Rebuild(kept, dropped);
    }
    Prune::Remove(remove)
}

/// Names the caps reach last: the caller cannot read the answer without its `Content-Type`, nor
/// retry or authenticate as asked without `Retry-After` and `WWW-Authenticate`, so their lines
/// are taken before any other (in this order) and only what is left goes to the rest.
pub const RESERVED_ANSWER_HEADERS: [HeaderName; 3] = [
    http::header::CONTENT_TYPE,
    http::header::RETRY_AFTER,
    http::header::WWW_AUTHENTICATE,
];

/// The agent's headers the caller gets within the caps: those of
/// [`RESERVED_ANSWER_HEADERS`] first, the others in their order; and how many allowed lines the
/// caps dropped. The first line of each reserved name is kept whatever its size (pingora's own
/// header limit bounds it), so the caller always has them; further lines of them count as any.
pub fn answer_headers(agent: &HeaderMap, listed: &[HeaderName]) -> (HeaderMap, usize) {
    let mut out = HeaderMap::with_capacity(agent.len().min(MAX_ANSWER_HEADERS));
    let (mut bytes, mut dropped) = (0usize, 0usize);
    let reserved = RESERVED_ANSWER_HEADERS
        .iter()
        .flat_map(|n| agent.get_all(n).iter().map(move |v| (n, v)));
    let others = agent
        .iter()
        .filter(|(n, _)| !RESERVED_ANSWER_HEADERS.contains(n) && crosses(Side::Agent, n, listed));
    for (n, v) in reserved.chain(others) {
        let size = n.as_str().len() + v.len();
        let first_reserved = RESERVED_ANSWER_HEADERS.contains(n) && !out.contains_key(n);
        if !first_reserved
            && (out.len() >= MAX_ANSWER_HEADERS || bytes + size > MAX_ANSWER_HEADER_BYTES)
        {
            dropped += 1;
            continue;
        }
        bytes += size;
        out.append(n.clone(), v.clone());
    }
    (out, dropped)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn n(s: &'static str) -> HeaderName {
        HeaderName::from_static(s)
    }

    #[test]
    fn one_allowlist_each_way_and_reserved_names_never_cross() {
        let listed = [n("x-listed"), n("x-request-id"), n("cookie")];
        for name in ["content-type", "accept", "user-agent", "x-listed", "cookie"] {
            assert!(crosses(Side::Caller, &n(name), &listed), "{name}");
        }
        for name in [
            "x-request-id",
            "traceparent",
            "host",
            "forwarded",
            "x-other",
            "accept-encoding",
        ] {
            assert!(!crosses(Side::Caller, &n(name), &listed), "{name}");
        }
        for name in [
            "content-type",
            "a2a-version",
            "a2a-extensions",
            "etag",
            "retry-after",
            "www-authenticate",
            "traceparent",
            "x-listed",
        ] {
            assert!(crosses(Side::Agent, &n(name), &listed), "{name}");
        }
        let listed_bad = [
            n("set-cookie"),
            n("content-encoding"),
            n("content-length"),
            n("connection"),
        ];
        for name in [
            "set-cookie",
            "server",
            "x-powered-by",
            "location",
            "alt-svc",
            "strict-transport-security",
            "content-length",
            "transfer-encoding",
            "content-encoding",
            "connection",
            "keep-alive",
            "cookie",
        ] {
            assert!(!crosses(Side::Agent, &n(name), &listed_bad), "{name}");
        }
    }

    #[test]
    fn answer_headers_keep_order_and_drop_past_the_caps() {
        let mut h = HeaderMap::new();
        h.append("content-type", HeaderValue::from_static("application/json"));
        h.append("server", HeaderValue::from_static("nginx"));
        h.append(
            "etag",
            HeaderValue::from_str(&"e".repeat(MAX_ANSWER_HEADER_BYTES)).unwrap(),
        );
        for i in 0..100 {
            h.append("vary", HeaderValue::from_str(&format!("x-{i}")).unwrap());
        }
        let (out, dropped) = answer_headers(&h, &[]);
        assert_eq!(out.len(), MAX_ANSWER_HEADERS);
        assert_eq!(out["content-type"], "application/json");
        assert!(!out.contains_key("server") && !out.contains_key("etag"));
        assert_eq!(dropped, 1 + 100 - (MAX_ANSWER_HEADERS - 1));
        let bytes: usize = out.iter().map(|(n, v)| n.as_str().len() + v.len()).sum();
        assert!(bytes <= MAX_ANSWER_HEADER_BYTES);
        assert_eq!(prune(&h, &[]), Prune::Rebuild(out, dropped));
        // The names the caller needs to read or retry the answer are never the ones dropped,
        // wherever they come.
        let mut late = HeaderMap::new();
        for i in 0..100 {
            late.append("vary", HeaderValue::from_str(&format!("x-{i}")).unwrap());
        }
        late.append("www-authenticate", HeaderValue::from_static("Bearer"));
        late.append("retry-after", HeaderValue::from_static("7"));
        late.append(
            "content-type",
            HeaderValue::from_str(&format!("application/json; x={}", "p".repeat(20_000))).unwrap(),
        );
        let (out, dropped) = answer_headers(&late, &[]);
        assert_eq!(out["retry-after"], "7");
        assert_eq!(out["www-authenticate"], "Bearer");
        assert!(out["content-type"].len() > 20_000);
        assert_eq!(out.get_all("vary").iter().count(), 0, "no bytes left");
        assert_eq!(dropped, 100);
        let mut small = HeaderMap::new();
        small.append("content-type", HeaderValue::from_static("application/json"));
        small.append("server", HeaderValue::from_static("nginx"));
        small.append("set-cookie", HeaderValue::from_static("a=1"));
        small.append("set-cookie", HeaderValue::from_static("b=2"));
        assert_eq!(
            prune(&small, &[]),
            Prune::Remove(vec![n("server"), n("set-cookie")])
        );
    }
}
