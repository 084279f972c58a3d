//! Data class names: the labels an integration allows (`data_classes`, `[policy]
//! default_data_class`) and a request declares in `A2A-Egress-Data-Class` (pure).

/// Longest data class name, in bytes.
pub const MAX_LEN: usize = 64;

/// Whether `s` is a data class name: 1..=64 bytes of `[a-z0-9._-]`. Names are lowercase so that a
/// request's header, lowercased when read, compares equal to the configured name.
pub fn is_data_class(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= MAX_LEN
        && s.bytes().all(|c| {
            c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, b'-' | b'_' | b'.')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lowercase_tokens_only() {
        for good in ["internal", "pii", "a.b-c_1"] {
            assert!(is_data_class(good), "{good}");
        }
        for bad in ["", "Internal", "a b", "a,b", "é", &"x".repeat(65)] {
            assert!(!is_data_class(bad), "{bad}");
        }
    }
}
