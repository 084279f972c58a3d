//! Entity tags: a served body with its weak ETag, and the one `If-None-Match` check every
//! listener uses (pure, no I/O).
//!
//! The comparison itself is pingora's (`weak_validate_etag`, RFC 9110 §8.8.3.2 weak comparison
//! over a comma-separated list, nginx's algorithm), so no listener parses the header by hand.

use crate::seam::weak_validate_etag;
use bytes::Bytes;
use http::HeaderMap;
use http::header::IF_NONE_MATCH;
use sha2::{Digest, Sha256};

/// A body as served, with the weak ETag over its bytes. Cloning shares the bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tagged {
    /// The bytes served.
    pub body: Bytes,
    /// Weak ETag (`W/"…"`) over the bytes.
    pub etag: String,
}

impl Tagged {
    /// `body` with a weak ETag: the first 128 bits of its SHA-256, in hex. The same bytes always
    /// get the same ETag (after a restart too), so a cache revalidates across restarts.
    pub fn weak(body: Bytes) -> Tagged {
        let digest = Sha256::digest(&body);
        let etag = format!("W/\"{}\"", hex::encode(&digest[..16]));
        Tagged { body, etag }
    }

    /// `value` serialised (compact) with its weak ETag: how every served JSON document is made.
    pub fn json(value: &serde_json::Value) -> Tagged {
        Tagged::weak(Bytes::from(value.to_string()))
    }
}

/// Whether the request's `If-None-Match` (every field line of it) matches `etag`: weak
/// comparison (`W/"x"` matches `"x"`), a list matches when one member does, `*` matches any
/// current representation. No `If-None-Match`: false.
pub fn if_none_match(headers: &HeaderMap, etag: &str) -> bool {
    headers
        .get_all(IF_NONE_MATCH)
        .iter()
        .any(|v| weak_validate_etag(v.as_bytes(), etag.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn inm(values: &[&str], etag: &str) -> bool {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(IF_NONE_MATCH, HeaderValue::from_str(v).unwrap());
        }
        if_none_match(&h, etag)
    }

    #[test]
    fn weak_comparison_lists_star_and_several_lines() {
        assert!(inm(&["W/\"abc\""], "W/\"abc\""));
        assert!(inm(&["\"abc\""], "W/\"abc\""), "weak comparison");
        assert!(inm(&["W/\"abc\""], "\"abc\""), "weak comparison");
        assert!(inm(&["\"x\", W/\"abc\""], "W/\"abc\""));
        assert!(inm(&["\"x\",W/\"abc\" , \"y\""], "W/\"abc\""));
        assert!(inm(&["*"], "W/\"abc\""));
        assert!(
            inm(&["\"x\"", "W/\"abc\""], "W/\"abc\""),
            "second field line"
        );
        assert!(!inm(&[], "W/\"abc\""), "no If-None-Match");
        assert!(!inm(&["W/\"abd\""], "W/\"abc\""));
        assert!(
            !inm(&["W/\"abcd\""], "W/\"abc\""),
            "a prefix is not a match"
        );
        assert!(!inm(&["W/\"ab\""], "W/\"abc\""));
        assert!(!inm(&["\"a,b\""], "\"b\""), "a comma inside a quoted tag");
        assert!(!inm(&[""], "W/\"abc\""));
    }

    #[test]
    fn the_same_bytes_get_the_same_weak_etag() {
        let a = Tagged::weak(Bytes::from_static(b"{}"));
        assert_eq!(a, Tagged::weak(Bytes::from_static(b"{}")));
        assert!(a.etag.starts_with("W/\"") && a.etag.ends_with('"'));
        assert_eq!(a.etag.len(), 4 + 32);
        assert_ne!(a.etag, Tagged::weak(Bytes::from_static(b"[]")).etag);
    }
}
