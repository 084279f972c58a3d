//! Content guardrails (issue 22): detectors of card numbers, IBANs, keys, tokens and custom words
//! compiled once per config, the per-integration policy that picks among them, and the scan of an
//! A2A 1.0 SendMessage request (and, record-only, of an answer) with its verdict and redaction
//! (pure, no I/O).
//!
//! The scan reads the body's JSON text, never a re-serialised value: a redaction replaces only the
//! bytes of the string literals that held a finding, so ids, numbers and the envelope leave exactly
//! as the caller wrote them. Text is matched after JSON unescaping and NFKC normalisation, with a
//! map from every normalised byte back to the source bytes it came from, so `\u0034111…` and
//! full-width `４１１１…` are card numbers and a redaction replaces the characters the caller wrote.

mod detectors;
mod finding;
mod policy;
mod redact;
mod scan;
mod text;
mod validate;

pub use detectors::{BUILTIN_NAMES, Detectors, UNSCANNED, URL_ORIGIN};
pub use finding::Finding;
pub use policy::Policy;
pub use scan::{Verdict, scan_answer, scan_request};

/// Findings of one request or answer logged line by line; the rest are counted (metrics) and
/// summed up in one more line, so a body of ten thousand small findings is not ten thousand
/// log lines.
pub const LOGGED_FINDINGS: usize = 8;

/// The matcher of `policy` alone over `text` (normalised already), for benches: the number of
/// validated hits.
#[doc(hidden)]
pub fn bench_matcher(policy: &Policy, text: &str) -> usize {
    let mut hits = Vec::new();
    policy.matcher.hits(text, &mut hits);
    hits.len()
}

/// What a finding does to the request. Ordered by strength: `Record < Redact < Refuse`, so the
/// verdict's action is the maximum over its findings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Action {
    /// Forward unchanged; the finding is counted and logged (its class joins the request's classes).
    Record,
    /// Replace the match with `[REDACTED:<detector>]`, then forward.
    Redact,
    /// Refuse the request (`DATA_DETECTED`, naming the detector and the JSON path).
    Refuse,
}

impl Action {
    /// The configuration's name of the action.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Record => "record",
            Action::Redact => "redact",
            Action::Refuse => "refuse",
        }
    }
}

/// Where a detector's matches come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// One of [`BUILTIN_NAMES`]: a pattern with its validator (Luhn, mod-97, …).
    Builtin,
    /// A custom regular expression (the `regex` crate's syntax), matched on normalised text.
    Regex(String),
    /// Literal words (customer ids, code names), matched ASCII-case-insensitively as whole words.
    Words(Vec<String>),
}

/// One detector as the configuration names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DetectorSpec {
    /// Unique name (the built-ins' names are taken); appears in findings, metrics and markers.
    pub name: String,
    /// Data class of what it finds (`types::data_class::is_data_class`), e.g. `pci`, `secret`.
    pub class: String,
    /// What it matches.
    pub source: Source,
}

/// What happens when the scan budget runs out before the whole request was scanned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnUnscanned {
    /// The unscanned rest refuses the request (detector `unscanned`, path `$`).
    Refuse,
    /// The unscanned rest is forwarded (and counted in `Verdict::unscanned_bytes`).
    Allow,
}

/// Where the request (or answer) object is in the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// `params` (request) or `result` (answer) of a JSON-RPC envelope.
    JsonRpc,
    /// The root of the body (HTTP+JSON).
    Rest,
}

/// Why detectors, a policy or a redaction could not be built; each names the detector, field or
/// rule that failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GuardError {
    /// A custom detector's `regex` does not compile (or is too large).
    #[error("detector {name:?}: regex does not compile: {reason}")]
    BadRegex { name: String, reason: String },
    /// A custom detector takes a name already taken (by a built-in or an earlier detector).
    #[error("detector {name:?}: name already taken")]
    NameClash { name: String },
    /// A custom detector is named `builtin` but no built-in has that name, or has no name.
    #[error("detector {name:?}: not a valid detector name (1..=64 of [a-z0-9_-])")]
    BadName { name: String },
    /// A custom detector's word list is empty or holds an empty word.
    #[error("detector {name:?}: word list is empty or holds an empty word")]
    EmptyWords { name: String },
    /// A detector's `class` is not a data class name.
    #[error("detector {name:?}: class {class:?} is not a data class name")]
    BadClass { name: String, class: String },
    /// A detector declared with [`Source::Builtin`] that is no built-in.
    #[error("detector {name:?}: no built-in detector has this name")]
    NotBuiltin { name: String },
    /// A policy names a detector that does not exist.
    #[error("guard.detectors: unknown detector {name:?}")]
    UnknownDetector { name: String },
    /// A policy's per-class `actions` names a class that is not a data class name.
    #[error("guard.actions: {class:?} is not a data class name")]
    BadActionClass { class: String },
    /// An allowed URL origin is not a bare http(s) origin.
    #[error("guard.url_origins: {origin:?} is not an http(s) origin")]
    BadOrigin { origin: String },
    /// Redacting would give an object two equal keys (at this JSON path).
    #[error("redaction would duplicate the key at {path}")]
    DuplicateKey { path: String },
    /// Redaction exposed a finding the policy refuses (cutting a match out joined its
    /// surroundings into a new one).
    #[error("redaction exposed a {detector} finding at {path}")]
    RedactionExposed { detector: String, path: String },
    /// Redaction kept exposing new findings for this many rounds of redact-then-rescan.
    #[error("redaction did not settle after {rounds} rounds")]
    RedactionUnstable { rounds: usize },
    /// The body is not the JSON the scan read (redaction is only defined on the scanned body).
    #[error("body is not well-formed JSON: {0}")]
    Json(#[from] crate::json::ScanError),
}

#[cfg(test)]
mod tests;
