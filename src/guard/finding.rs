//! One finding of the scan: detector, data class, JSON path, action, and where it lies in the body
//! for redaction (pure).

use super::Action;

/// Where a finding lies, for redaction (never shown).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Span {
    /// Bytes `start..end` of the body, inside one string literal, on source-unit boundaries.
    Body { start: usize, end: usize },
    /// Bytes `start..end` of the decoded content of the base64 literal quoted at `open`..`close`.
    Raw {
        open: usize,
        close: usize,
        start: usize,
        end: usize,
    },
}

/// One detector's finding: which detector, its data class, the JSON path of the part (never the
/// matched text) and what the policy does with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Detector name (`url_origin` for a URL outside the allowlist, `unscanned` for a budget overrun).
    pub detector: String,
    /// The detector's data class.
    pub class: String,
    /// JSON path of the string the finding starts in, e.g. `params.message.parts[0].text`.
    pub path: String,
    /// What the policy does with it.
    pub action: Action,
    pub(super) spans: Vec<Span>,
}
