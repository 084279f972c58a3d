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

#[cfg(test)]
mod tests {
    use super::*;

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
