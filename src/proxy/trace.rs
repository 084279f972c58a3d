//! The request id and W3C trace context of one call (pure, no I/O): taken from the caller when
//! valid, else generated, then logged on the access line and sent upstream.
//!
//! The caller's `X-Request-Id` is kept when it is 1 to [`MAX_REQUEST_ID`] bytes of
//! `[A-Za-z0-9._:-]` (so it is safe in a log line and a header); otherwise a valid `traceparent`'s
//! trace id is the request id; otherwise one is generated. `traceparent` (W3C Trace Context,
//! "traceparent Header") is passed upstream only when exactly one parses, rebuilt as version `00`
//! (a later version's extra fields are not forwarded), with every `tracestate` line joined beside
//! it when that is bounded and printable; an invalid one is dropped rather than forwarded.
//! `baggage` (W3C Baggage) is passed on when its lines, joined, are printable and at most
//! [`MAX_BAGGAGE`] bytes, with or without a `traceparent`. With `[telemetry]` on, the
//! `traceparent` sent is the gateway's own CLIENT span's ([`Trace::parent`], set per attempt),
//! so a trace starts at the gateway when none arrived.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use http::header::{HeaderMap, HeaderValue};

/// Longest caller `X-Request-Id` kept (longer ones are replaced by a generated id).
pub const MAX_REQUEST_ID: usize = 64;

/// Longest `tracestate` passed on (the W3C limit: 32 members of at most 256 bytes is more; 512
/// bytes is what the specification asks a vendor to propagate at least).
const MAX_TRACESTATE: usize = 512;

/// Longest `baggage` passed on (W3C Baggage: a platform should propagate at least 8192 bytes; a
/// longer one is dropped whole, never cut, since a cut list could mean something else).
pub const MAX_BAGGAGE: usize = 8192;

/// A request id: at most [`MAX_REQUEST_ID`] bytes of `[A-Za-z0-9._:-]`, stored inline so a request
/// allocates nothing for it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct RequestId {
    buf: [u8; MAX_REQUEST_ID],
    len: u8,
}

impl RequestId {
    /// `s` when it is a valid request id.
    pub fn parse(s: &[u8]) -> Option<RequestId> {
        if s.is_empty() || s.len() > MAX_REQUEST_ID || !s.iter().all(|b| id_byte(*b)) {
            return None;
        }
        let mut buf = [0u8; MAX_REQUEST_ID];
        buf.get_mut(..s.len())?.copy_from_slice(s);
        Some(RequestId {
            buf,
            len: u8::try_from(s.len()).ok()?,
        })
    }

    /// A new id, unique within this process and (with overwhelming likelihood) across restarts:
    /// 16 hex digits fixed at start (start time and process id), 16 of a counter.
    pub fn generate() -> RequestId {
        static SEQ: AtomicU64 = AtomicU64::new(0);
        static PREFIX: OnceLock<[u8; 16]> = OnceLock::new();
        let prefix = PREFIX.get_or_init(|| {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64);
            let mut hex = [0u8; 16];
            hex_into(&mut hex, nanos ^ (u64::from(std::process::id()) << 40));
            hex
        });
        let n = SEQ.fetch_add(1, Ordering::Relaxed);
        let mut buf = [0u8; MAX_REQUEST_ID];
        buf[..16].copy_from_slice(prefix);
        hex_into(&mut buf[16..32], n);
        RequestId { buf, len: 32 }
    }

    /// No id yet: what a request has before its headers are read ([`Trace::unset`]).
    pub const UNSET: RequestId = RequestId {
        buf: [0; MAX_REQUEST_ID],
        len: 0,
    };

    /// This id, or a new one when it is [`RequestId::UNSET`].
    pub fn or_generate(self) -> RequestId {
        if self.len == 0 {
            RequestId::generate()
        } else {
            self
        }
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        let bytes = self.buf.get(..usize::from(self.len)).unwrap_or_default();
        // Only id bytes (ASCII) are ever stored.
        std::str::from_utf8(bytes).unwrap_or_default()
    }
}

impl std::fmt::Debug for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

fn id_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-')
}

/// Writes `v` as lowercase hex into `out` (16 bytes).
fn hex_into(out: &mut [u8], v: u64) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for (i, slot) in out.iter_mut().enumerate().take(16) {
        let nibble = (v >> (60 - 4 * i)) & 0xf;
        *slot = HEX.get(nibble as usize).copied().unwrap_or(b'0');
    }
}

/// One call's trace context.
#[derive(Debug, Clone)]
pub struct Trace {
    /// The request id: logged, and sent upstream as `X-Request-Id`.
    pub id: RequestId,
    /// The caller's `traceparent`, when valid.
    pub traceparent: Option<HeaderValue>,
    /// The caller's `tracestate`, when `traceparent` is valid and it is bounded and printable.
    pub tracestate: Option<HeaderValue>,
    /// The caller's `baggage`, when bounded and printable.
    pub baggage: Option<HeaderValue>,
    /// The `traceparent` the next upstream request sends instead of the caller's: the gateway's
    /// CLIENT span for it, when tracing is on.
    pub parent: Option<HeaderValue>,
    /// The gateway made `id` (the caller sent none it could use): it is unique to this request.
    pub own_id: bool,
}

impl Trace {
    /// The context of a request whose headers are not read yet: no id, nothing to pass on.
    /// Reading them ([`Trace::of`]) gives the id; a request refused before that gets one
    /// generated when its line is logged, so no request pays for two.
    pub fn unset() -> Trace {
        Trace {
            id: RequestId::UNSET,
            traceparent: None,
            tracestate: None,
            baggage: None,
            parent: None,
            own_id: false,
        }
    }

    /// An id unique to this request: its own when the gateway made it, else a new one (a caller
    /// may send the same `X-Request-Id` twice).
    pub fn unique_id(&self) -> RequestId {
        if self.own_id {
            self.id
        } else {
            RequestId::generate()
        }
    }

    /// The trace context of a request with headers `h`.
    ///
    /// One pass over the headers finds the three names (a request carries a handful of
    /// headers, and a lookup by name hashes it); `tracestate` lines are read only beside a
    /// valid `traceparent`.
    pub fn of(h: &HeaderMap) -> Trace {
        let mut request_id = None;
        let mut parents = (None, 0usize);
        let mut has_state = false;
        let mut has_baggage = false;
        for (name, value) in h {
            match name.as_str() {
                "x-request-id" if request_id.is_none() => request_id = Some(value),
                "traceparent" => parents = (parents.0.or(Some(value)), parents.1 + 1),
                "tracestate" => has_state = true,
                "baggage" => has_baggage = true,
                _ => {}
            }
        }
        let traceparent = match parents {
            (Some(v), 1) => traceparent(v),
            _ => None,
        };
        let tracestate = (traceparent.as_ref())
            .filter(|_| has_state)
            .and_then(|_| joined(h, "tracestate", MAX_TRACESTATE));
        let baggage = has_baggage
            .then(|| joined(h, "baggage", MAX_BAGGAGE))
            .flatten();
        let theirs = request_id
            .and_then(|v| RequestId::parse(v.as_bytes()))
            .or_else(|| {
                let tp = traceparent.as_ref()?.as_bytes();
                RequestId::parse(tp.get(3..35)?)
            });
        Trace {
            own_id: theirs.is_none(),
            id: theirs.unwrap_or_else(RequestId::generate),
            traceparent,
            tracestate,
            baggage,
            parent: None,
        }
    }

    /// The `traceparent` an upstream request sends: the gateway's span for it when tracing is
    /// on, else the caller's valid one.
    pub fn upstream_traceparent(&self) -> Option<&HeaderValue> {
        self.parent.as_ref().or(self.traceparent.as_ref())
    }

    /// The `X-Request-Id` header value sent upstream (none while the id is unset).
    pub fn request_id_header(&self) -> Option<HeaderValue> {
        let id = self.id.as_str();
        (!id.is_empty()).then(|| HeaderValue::from_str(id).ok())?
    }
}

/// The caller's one `traceparent` line `v`, as the version-00 header this gateway understands:
/// a later version's first four fields are kept and its tail (which this gateway cannot check)
/// dropped, as W3C Trace Context ("Versioning of traceparent") has a vendor propagate what it
/// parsed. Two `traceparent` lines make the context invalid (the caller checks that).
fn traceparent(v: &HeaderValue) -> Option<HeaderValue> {
    let b = v.as_bytes();
    if !valid_traceparent(b) {
        return None;
    }
    if b.len() == 55 && b.starts_with(b"00") {
        return Some(v.clone());
    }
    let mut rebuilt = b"00".to_vec();
    rebuilt.extend_from_slice(b.get(2..55)?);
    HeaderValue::from_bytes(&rebuilt).ok()
}

/// Every `name` line joined by `,` (W3C Trace Context and Baggage: several lines are one list),
/// when the whole is printable and at most `max` bytes.
fn joined(h: &HeaderMap, name: &str, max: usize) -> Option<HeaderValue> {
    let mut joined: Vec<u8> = Vec::new();
    for line in h.get_all(name) {
        let b = line.as_bytes();
        if !b.iter().all(|c| (0x20..0x7f).contains(c)) {
            return None;
        }
        if !joined.is_empty() {
            joined.push(b',');
        }
        joined.extend_from_slice(b);
        if joined.len() > max {
            return None;
        }
    }
    if joined.is_empty() {
        return None;
    }
    HeaderValue::from_bytes(&joined).ok()
}

/// W3C `traceparent`: `version-traceid-parentid-flags`, lowercase hex of 2, 32, 16 and 2 digits;
/// version `ff` is invalid, and neither id may be all zeros. A later version may append fields
/// after another `-`; version `00` may not.
pub fn valid_traceparent(v: &[u8]) -> bool {
    let hex = |s: &[u8]| !s.is_empty() && s.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    let nonzero = |s: &[u8]| s.iter().any(|b| *b != b'0');
    let (Some(version), Some(trace), Some(parent), Some(flags)) =
        (v.get(0..2), v.get(3..35), v.get(36..52), v.get(53..55))
    else {
        return false;
    };
    let dashes = [2, 35, 52].iter().all(|i| v.get(*i) == Some(&b'-'));
    let tail_ok = match v.get(55) {
        None => true,
        Some(b'-') => version != b"00",
        Some(_) => false,
    };
    dashes
        && tail_ok
        && hex(version)
        && version != b"ff"
        && hex(trace)
        && nonzero(trace)
        && hex(parent)
        && nonzero(parent)
        && hex(flags)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    /// The gateway's own id is the request's unique id; a caller's (which it may send twice) is
    /// not: each request gets a fresh one.
    #[test]
    fn a_unique_id_is_never_the_callers() {
        let own = Trace::of(&HeaderMap::new());
        assert!(own.own_id);
        assert_eq!(own.unique_id(), own.id);
        let theirs = Trace::of(&headers(&[("x-request-id", b"same-id")]));
        assert!(!theirs.own_id);
        let (a, b) = (theirs.unique_id(), theirs.unique_id());
        assert!(a != theirs.id && b != theirs.id && a != b);
    }

    fn headers(pairs: &[(&str, &[u8])]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_bytes(v).unwrap(),
            );
        }
        h
    }

    #[test]
    fn a_valid_caller_request_id_is_kept() {
        let t = Trace::of(&headers(&[("x-request-id", b"req-42_a.b:c")]));
        assert_eq!(t.id.as_str(), "req-42_a.b:c");
        assert!(t.traceparent.is_none());
        let max = "a".repeat(MAX_REQUEST_ID);
        assert_eq!(
            Trace::of(&headers(&[("x-request-id", max.as_bytes())]))
                .id
                .as_str(),
            max
        );
    }

    #[test]
    fn hostile_request_ids_are_replaced_by_a_generated_one() {
        let long = "a".repeat(MAX_REQUEST_ID + 1);
        let bad: [&[u8]; 7] = [
            b"",
            long.as_bytes(),
            b"has space",
            b"new\nline",
            b"quote\"s",
            "caf\u{e9}".as_bytes(),
            b"{\"json\":1}",
        ];
        for v in bad {
            let mut h = HeaderMap::new();
            if let Ok(v) = HeaderValue::from_bytes(v) {
                h.insert("x-request-id", v);
            }
            let id = Trace::of(&h).id;
            assert_eq!(id.as_str().len(), 32, "{v:?} -> {id:?}");
            assert!(id.as_str().bytes().all(|b| b.is_ascii_hexdigit()), "{id:?}");
        }
    }

    #[test]
    fn an_unset_id_is_generated_once_asked_for_and_a_set_one_is_kept() {
        let unset = Trace::unset();
        assert_eq!(unset.id.as_str(), "");
        assert!(unset.request_id_header().is_none());
        let id = unset.id.or_generate();
        assert_eq!(id.as_str().len(), 32, "{id:?}");
        let mine = RequestId::parse(b"mine").unwrap();
        assert_eq!(mine.or_generate(), mine);
    }

    #[test]
    fn generated_ids_differ() {
        let a = RequestId::generate();
        let b = RequestId::generate();
        assert_ne!(a, b);
        assert_eq!(a.as_str().get(..16), b.as_str().get(..16));
    }

    #[test]
    fn a_valid_traceparent_is_passed_and_names_the_request() {
        let t = Trace::of(&headers(&[
            ("traceparent", TP.as_bytes()),
            ("tracestate", b"k=v"),
        ]));
        assert_eq!(t.traceparent.as_ref().unwrap(), TP);
        assert_eq!(t.tracestate.as_ref().unwrap(), "k=v");
        assert_eq!(t.id.as_str(), "4bf92f3577b34da6a3ce929d0e0e4736");
        // An explicit request id wins; the traceparent still goes upstream.
        let t = Trace::of(&headers(&[
            ("traceparent", TP.as_bytes()),
            ("x-request-id", b"mine"),
        ]));
        assert_eq!(t.id.as_str(), "mine");
        assert!(t.traceparent.is_some());
    }

    #[test]
    fn invalid_traceparents_are_dropped_with_their_tracestate() {
        for bad in [
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "garbage",
        ] {
            let t = Trace::of(&headers(&[
                ("traceparent", bad.as_bytes()),
                ("tracestate", b"k=v"),
            ]));
            assert!(t.traceparent.is_none() && t.tracestate.is_none(), "{bad}");
            assert_eq!(t.id.as_str().len(), 32, "{bad}");
        }
        // A later version may carry more fields.
        assert!(valid_traceparent(
            b"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-more"
        ));
    }

    #[test]
    fn an_oversized_or_unprintable_tracestate_is_dropped() {
        let long = "k=".to_owned() + &"v".repeat(MAX_TRACESTATE);
        for bad in [long.as_bytes(), b"k=\tv".as_slice(), b"k=\xffv".as_slice()] {
            let t = Trace::of(&headers(&[
                ("traceparent", TP.as_bytes()),
                ("tracestate", bad),
            ]));
            assert!(t.traceparent.is_some() && t.tracestate.is_none());
        }
    }

    #[test]
    fn baggage_is_kept_when_bounded_and_printable_with_or_without_a_traceparent() {
        let t = Trace::of(&headers(&[
            ("baggage", b"user=alice"),
            ("baggage", b"tier=1"),
        ]));
        assert_eq!(t.baggage.unwrap(), "user=alice,tier=1");
        assert!(t.traceparent.is_none());
        let long = "k=".to_owned() + &"v".repeat(MAX_BAGGAGE);
        for bad in [long.as_bytes(), b"k=\tv".as_slice()] {
            let t = Trace::of(&headers(&[
                ("traceparent", TP.as_bytes()),
                ("baggage", bad),
            ]));
            assert!(t.baggage.is_none() && t.traceparent.is_some());
        }
        let max = "k=".to_owned() + &"v".repeat(MAX_BAGGAGE - 2);
        assert!(
            Trace::of(&headers(&[("baggage", max.as_bytes())]))
                .baggage
                .is_some()
        );
    }

    #[test]
    fn the_gateway_s_own_parent_replaces_the_caller_s_upstream() {
        let mut t = Trace::of(&headers(&[("traceparent", TP.as_bytes())]));
        assert_eq!(t.upstream_traceparent().unwrap(), TP);
        let mine =
            HeaderValue::from_static("00-4bf92f3577b34da6a3ce929d0e0e4736-1111111111111111-01");
        t.parent = Some(mine.clone());
        assert_eq!(t.upstream_traceparent(), Some(&mine));
        assert_eq!(t.traceparent.unwrap(), TP, "the caller's stays for the log");
    }

    #[test]
    fn a_later_version_is_forwarded_as_version_00_without_its_tail() {
        let mut v = b"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-".to_vec();
        v.extend(std::iter::repeat_n(b'a', 6 * 1024));
        v.extend([b'\t', 0xff, 0xfe]);
        let t = Trace::of(&headers(&[("traceparent", &v), ("tracestate", b"k=v")]));
        let sent = t
            .traceparent
            .expect("a later version with a valid prefix is kept");
        assert_eq!(sent, TP, "forwarded as the version-00 fields only");
        assert_eq!(t.tracestate.as_ref().unwrap(), "k=v");
        // A later version without a tail: the same rebuilt header.
        let t = Trace::of(&headers(&[("traceparent", &v[..55])]));
        assert_eq!(t.traceparent.unwrap(), TP);
    }

    #[test]
    fn two_traceparent_lines_are_invalid_and_tracestate_lines_combine() {
        let other = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        let two = headers(&[
            ("traceparent", TP.as_bytes()),
            ("traceparent", other.as_bytes()),
            ("tracestate", b"k=v"),
        ]);
        let t = Trace::of(&two);
        assert!(t.traceparent.is_none() && t.tracestate.is_none(), "{t:?}");
        assert_ne!(t.id.as_str(), "4bf92f3577b34da6a3ce929d0e0e4736");
        let t = Trace::of(&headers(&[
            ("traceparent", TP.as_bytes()),
            ("tracestate", b"a=1"),
            ("tracestate", b"b=2"),
        ]));
        assert_eq!(t.tracestate.unwrap(), "a=1,b=2");
    }

    #[test]
    fn the_first_request_id_line_counts_and_header_order_does_not_matter() {
        let t = Trace::of(&headers(&[
            ("tracestate", b"a=1"),
            ("x-request-id", b"first"),
            ("traceparent", TP.as_bytes()),
            ("x-request-id", b"second"),
            ("tracestate", b"b=2"),
        ]));
        assert_eq!(t.id.as_str(), "first");
        assert_eq!(t.traceparent.unwrap(), TP);
        assert_eq!(t.tracestate.unwrap(), "a=1,b=2");
        // An invalid first request id falls back to the trace id, not to a later line.
        let t = Trace::of(&headers(&[
            ("x-request-id", b"bad id"),
            ("x-request-id", b"good"),
            ("traceparent", TP.as_bytes()),
        ]));
        assert_eq!(t.id.as_str(), "4bf92f3577b34da6a3ce929d0e0e4736");
    }
}
