//! Media type matching for a skill's input and output modes (pure): the one rule the data plane
//! (message parts against accepted skills) and lockfile classification (pinned modes against a new
//! profile) share.

/// Whether media type `mt` is accepted by a mode list entry (`type/subtype`, `type/*`, `*/*`;
/// parameters ignored; case-insensitive).
pub fn media_type_accepted(mt: &str, modes: &[String]) -> bool {
    let essence = |s: &str| {
        s.split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase()
    };
    let mt = essence(mt);
    let (t, _) = mt.split_once('/').unwrap_or((mt.as_str(), ""));
    modes.iter().any(|m| {
        let m = essence(m);
        m == mt || m == "*/*" || m.strip_suffix("/*").is_some_and(|mt_t| mt_t == t)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_wildcards_parameters_and_case() {
        let modes = vec!["Text/Plain".to_string(), "image/*".to_string()];
        assert!(media_type_accepted("text/plain; charset=utf-8", &modes));
        assert!(media_type_accepted("image/png", &modes));
        assert!(!media_type_accepted("application/pdf", &modes));
        assert!(media_type_accepted("application/pdf", &["*/*".to_string()]));
    }
}
