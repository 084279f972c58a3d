//! How strictly cards are read: the input of [`crate::card::validate()`] besides the bytes (no I/O;
//! `Config::from_raw` builds it, loading the trusted keys once).

use std::path::PathBuf;
use std::sync::Arc;

use super::signature::TrustedKeys;

/// Default cap on an Agent Card's size, in bytes (256 KiB).
pub const DEFAULT_MAX_CARD_BYTES: usize = 256 * 1024;

/// Validated card-reading policy.
#[derive(Debug, Clone)]
pub struct CardPolicy {
    /// Card size cap in bytes.
    pub max_card_bytes: usize,
    /// Reject unsigned or wrongly signed cards.
    pub require_signatures: bool,
    /// Accept `http://` URLs.
    pub allow_plain_http: bool,
    /// JWKS files by origin (paths resolved against the config folder).
    pub trusted_keys: Vec<(String, PathBuf)>,
    /// The keys of `trusted_keys`, loaded once with the config so a missing or broken JWKS file
    /// is a config error and [`crate::card::validate()`] does no file I/O. `None` for a policy
    /// built by hand: `validate` then reads the files itself when a card is signed.
    pub keys: Option<Arc<TrustedKeys>>,
}

impl Default for CardPolicy {
    fn default() -> Self {
        CardPolicy {
            max_card_bytes: DEFAULT_MAX_CARD_BYTES,
            require_signatures: false,
            allow_plain_http: false,
            trusted_keys: Vec::new(),
            keys: None,
        }
    }
}
