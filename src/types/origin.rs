//! Web origins (`scheme://host[:port]`, RFC 6454) as the gateway compares them: approved origins in
//! the config, the origin a card was fetched from, the origin of an interface URL (pure).

/// Normalises `scheme://host[:port]` to its ASCII serialisation (default ports dropped), or `None`
/// if the text is not a bare http(s) origin (no path, query, fragment or credentials).
pub fn normalize_origin(s: &str) -> Option<String> {
    let u = url::Url::parse(s).ok()?;
    if !matches!(u.scheme(), "http" | "https")
        || !u.username().is_empty()
        || u.password().is_some()
        || u.query().is_some()
        || u.fragment().is_some()
        || !(u.path() == "/" || u.path().is_empty())
    {
        return None;
    }
    match u.origin() {
        url::Origin::Tuple(..) => Some(u.origin().ascii_serialization()),
        url::Origin::Opaque(_) => None,
    }
}

/// The ASCII serialisation of an absolute URL's origin, or `None` when `url` does not parse.
/// A URL without a tuple origin (`data:`, `file:`) serialises as `"null"`, which no approved
/// origin equals.
pub fn origin_of_url(url: &str) -> Option<String> {
    url::Url::parse(url)
        .ok()
        .map(|u| u.origin().ascii_serialization())
}

/// [`origin_of_url`] of a URL every reader parses alike, else `None`: the WHATWG parser (the
/// `url` crate) reads `\\` as `/`, drops tabs and line breaks and trims spaces and controls, which
/// RFC 3986 readers (Python's `urlsplit`) do not, so `https://allowed.example\\@evil.example/`
/// names another host to each; and credentials in a URL that leaves are refused outright.
pub fn origin_of_plain_url(url: &str) -> Option<String> {
    if url.bytes().any(|b| b == b'\\' || b <= b' ' || b == 0x7f) {
        return None;
    }
    let u = url::Url::parse(url).ok()?;
    if !u.username().is_empty() || u.password().is_some() {
        return None;
    }
    Some(u.origin().ascii_serialization())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_two_readers_would_read_apart_have_no_origin() {
        assert_eq!(
            origin_of_plain_url("https://a.example/x?q").as_deref(),
            Some("https://a.example")
        );
        for u in [
            "https://allowed.example\\@evil.example/x",
            "https://allowed.example\\evil",
            "https://u:p@allowed.example/",
            "https://user@allowed.example/",
            " https://allowed.example/",
            "https://allo\twed.example/",
            "https://allowed.example/\n",
        ] {
            assert_eq!(origin_of_plain_url(u), None, "{u:?}");
        }
    }

    #[test]
    fn origins_normalise() {
        assert_eq!(
            normalize_origin("https://A.example:443").as_deref(),
            Some("https://a.example")
        );
        assert_eq!(
            normalize_origin("http://127.0.0.1:7400/").as_deref(),
            Some("http://127.0.0.1:7400")
        );
        assert_eq!(normalize_origin("https://a.example/path"), None);
        assert_eq!(normalize_origin("ftp://a.example"), None);
        assert_eq!(normalize_origin("https://u:p@a.example"), None);
    }

    #[test]
    fn url_origins() {
        assert_eq!(
            origin_of_url("https://A.example:443/a2a?x").as_deref(),
            Some("https://a.example")
        );
        assert_eq!(origin_of_url("data:text/plain,x").as_deref(), Some("null"));
        assert_eq!(origin_of_url("not a url"), None);
    }
}
