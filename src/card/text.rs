//! Character-level rules for card strings (pure): identifiers, media types, tenants, and the
//! literal form of URLs. Every function here takes provider-written text and must answer for any
//! `&str` without panicking, so none slices at a computed byte offset.

use super::sanitize::is_hidden;

/// Whether `s` is acceptable as an identifier: no control character at all (CR, LF and TAB
/// included: identifiers end up in headers, URL paths and log lines, where they would split or
/// forge lines), no invisible format character, and no whitespace — except, when `inner_spaces`,
/// single U+0020 spaces between other characters (skill ids are display-ish keys; they never reach
/// a header or path).
pub(crate) fn id_chars_ok(s: &str, inner_spaces: bool) -> bool {
    let ok_char = |c: char| !(c.is_control() || c.is_whitespace() || is_hidden(c));
    if !inner_spaces {
        return s.chars().all(ok_char);
    }
    !s.starts_with(' ')
        && !s.ends_with(' ')
        && !s.contains("  ")
        && s.chars().all(|c| c == ' ' || ok_char(c))
}

/// Checks that an `http(s)` URL means literally what its WHATWG parse means, since the raw text
/// is what the profile stores and what other parsers (proxies, SDKs, logs) will read: it must
/// start with `scheme://` (any case; no `https:host` or `https:\\host` forms, no `\` anywhere),
/// carry no `@` in its authority (not even empty userinfo), and its host text must equal the
/// parsed host ignoring ASCII case — so no percent-encoded host, no IPv4 in hex/octal/short
/// form, no Unicode host (write it in its `xn--` form).
pub(crate) fn literal_matches_parsed(s: &str, u: &url::Url) -> Result<(), &'static str> {
    let prefix = format!("{}://", u.scheme());
    // `split_at_checked`, not `&s[..n]`: the card is outside data, and a multi-byte character
    // may straddle the byte offset where `scheme://` would end (`https:xé.example`).
    let rest = match s.split_at_checked(prefix.len()) {
        Some((head, rest)) if head.eq_ignore_ascii_case(&prefix) => rest,
        _ => return Err("URL must start with the literal scheme:// prefix"),
    };
    if s.contains('\\') {
        return Err("URL must not contain a backslash");
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.contains('@') {
        return Err("URL must not carry credentials (user:password@)");
    }
    let host = if authority.starts_with('[') {
        authority
            .find(']')
            .and_then(|i| authority.get(..=i))
            .unwrap_or(authority)
    } else {
        authority.split(':').next().unwrap_or_default()
    };
    if host.is_empty() {
        return Err("URL has no host");
    }
    match u.host_str() {
        Some(parsed) if parsed.eq_ignore_ascii_case(host) => Ok(()),
        _ => Err(
            "host must be written in its canonical form (ASCII, no percent-encoding, dotted-decimal IPv4)",
        ),
    }
}

/// Whether a media type has only the characters RFC 9110 §8.3.1 allows where we accept them:
/// no control, invisible or whitespace character, except spaces (OWS) around the `;` that
/// separate parameters (`text/plain; charset=utf-8`). Whitespace around `=` is refused, as
/// RFC 9110 §5.6.6 forbids it.
pub(crate) fn media_type_chars_ok(s: &str) -> bool {
    let n = s.split(';').count();
    s.split(';').enumerate().all(|(i, seg)| {
        let seg = if i > 0 {
            seg.trim_start_matches(' ')
        } else {
            seg
        };
        let seg = if i + 1 < n {
            seg.trim_end_matches(' ')
        } else {
            seg
        };
        !seg.chars()
            .any(|c| c.is_control() || c.is_whitespace() || is_hidden(c))
    })
}

/// Why a non-empty `tenant` is not safe as one URL path segment, or `None` when it is.
///
/// The tenant is copied into every call: as the first path segment of HTTP+JSON routes
/// (`/{tenant}/message:send`) and as `params.tenant` of JSON-RPC. A value that a path parser,
/// a proxy or the agent's router would read as more or less than one segment changes which
/// resource is called, so the card may not declare one: no dot segment (`.` or `..`, RFC 3986
/// §5.2.4), no `/` or `\` (a segment separator to WHATWG parsers), no `%` (percent-encoded
/// separators and dots, `%2f`, `%2e%2e`), no `?` or `#` (they end the path), and no whitespace,
/// control, bidi or zero-width character (headers, log lines, display). The length bound is the
/// identifier one, checked by the caller.
pub(crate) fn tenant_problem(s: &str) -> Option<&'static str> {
    if s == "." || s == ".." {
        return Some("\".\" and \"..\" are dot segments");
    }
    if s.contains(['/', '\\', '%', '?', '#']) {
        return Some("'/', '\\', '%', '?' and '#' are not allowed");
    }
    if !id_chars_ok(s, false) {
        return Some("whitespace, control, bidi or zero-width characters are not allowed");
    }
    None
}

#[cfg(test)]
pub(crate) mod tests {
    use super::{id_chars_ok, literal_matches_parsed, tenant_problem};

    /// URLs whose scheme, separator or authority boundary falls inside a multi-byte character:
    /// each parses as a WHATWG URL, so the literal-form check sees it.
    pub(crate) const MULTIBYTE_BOUNDARY_URLS: &[&str] = &[
        "https:xé.example/a2a",
        "https:/é.example/a2a",
        "http:é",
        "https:ééééé",
        "https:\\é.example/",
        "HTTPS:中.example",
        "https:😀.example/",
    ];

    #[test]
    fn multibyte_at_the_scheme_boundary_is_refused_not_a_panic() {
        for s in MULTIBYTE_BOUNDARY_URLS {
            let Ok(u) = url::Url::parse(s) else { continue };
            assert_eq!(
                literal_matches_parsed(s, &u),
                Err("URL must start with the literal scheme:// prefix"),
                "{s:?}"
            );
        }
        // A multi-byte character right after a correct prefix, in the authority or the host.
        for s in [
            "https://é.example/",
            "https://xé:1/",
            "https://[é]/",
            "https://a.example:é/",
        ] {
            if let Ok(u) = url::Url::parse(s) {
                assert!(literal_matches_parsed(s, &u).is_err(), "{s:?}");
            }
        }
    }

    #[test]
    fn identifiers_refuse_every_control_and_whitespace_character() {
        for bad in [
            "acme\r\nX-Evil: 1",
            "echo\nfake",
            "a\tb",
            "a b",
            "a\u{0b}b",
            "a\u{85}b",
            "a\u{a0}b",
            "a\u{2028}b",
            "a\u{200b}b",
            "a\u{7f}",
        ] {
            assert!(!id_chars_ok(bad, false), "{bad:?}");
        }
        assert!(id_chars_ok("acme-1.0_x", false));
    }

    #[test]
    fn media_types_allow_spaces_around_semicolons_only() {
        use super::media_type_chars_ok as ok;
        for good in [
            "text/plain",
            "text/plain;charset=utf-8",
            "text/plain; charset=utf-8",
            "text/plain ; charset=utf-8;  format=flowed",
        ] {
            assert!(ok(good), "{good:?}");
        }
        for bad in [
            " text/plain",
            "text/plain ",
            "text/ plain",
            "text/plain; charset = utf-8",
            "text/plain;\tcharset=utf-8",
            "text/plain;\ncharset=utf-8",
            "text/\u{7}plain",
        ] {
            assert!(!ok(bad), "{bad:?}");
        }
    }

    #[test]
    fn skill_ids_allow_single_inner_spaces_only() {
        assert!(id_chars_ok("currency conversion", true));
        for bad in [" echo", "echo ", "a  b", "a\tb", "a\nb", "a\u{a0}b"] {
            assert!(!id_chars_ok(bad, true), "{bad:?}");
        }
    }

    #[test]
    fn tenants_must_be_one_safe_path_segment() {
        for good in [
            "acme",
            "acme-corp",
            "acme.corp",
            "a..b",
            "t_1",
            "ténant",
            "x:y",
            "~u",
        ] {
            assert_eq!(tenant_problem(good), None, "{good:?}");
        }
        for bad in [
            ".",
            "..",
            "a/b",
            "../x",
            "a\\b",
            "%2e%2e",
            "a%2Fb",
            "%",
            "a?b",
            "a#b",
            "a b",
            " a",
            "a\n",
            "a\r\nX-Evil: 1",
            "\u{0}",
            "acme\u{202e}",
            "t\u{200b}",
            "a\u{a0}b",
            "\u{7f}",
        ] {
            assert!(tenant_problem(bad).is_some(), "{bad:?}");
        }
    }
}
