//! Capability lockfiles: the subset of a compiled profile one
//! workflow depends on, how every new profile is classified against it, and the file it lives in.
//!
//! - [`Lock`] is the domain value; [`wire`] is its JSON form (strict parse, stable pretty output).
//! - [`derive::pin`] builds a lock from an integration manifest and a compiled profile.
//! - [`diff`] classifies a profile against a lock, or one profile against another, as
//!   compatible / review / breaking, each finding one line.
//!
//! - [`file`](mod@file) is the lockfile on disk (`locks/<integration>.json` beside the config, written
//!   atomically): the feature's only I/O. Everything else here is pure.
//!
//! The rest of the feature sits where its layer does (see ARCHITECTURE.md "Where a feature
//! lives"): the verdict as part of an integration's state (`state::lock_state`), the refresh step
//! that re-reads the file and judges (`control::refresh::lock_check`), the data plane's
//! `blocked`/fallback routing (`proxy::policy::lock_route`) and the commands `lock`, `check`
//! and `diff` (`cli::lock`, `cli::lock::diff`).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use crate::profile::BindingVersion;

pub mod derive;
pub mod diff;
pub mod file;
pub mod wire;

pub use derive::{Manifest, PinError, Pinned, StreamingNeed, pin};
pub use diff::{
    Class, Finding, Verdict, check_against_lock, check_against_lock_for, diff_profiles,
    invalid_lock_verdict, unusable_verdict,
};
pub use file::{LockFileError, UnreadableLock};

/// What one workflow needs from one agent, and what it was verified against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lock {
    /// URL of the agent's card (documentation: which agent this lock is about).
    pub agent: String,
    /// When the lock was written.
    pub pinned_at: DateTime<Utc>,
    /// `sha256:<hex>` digest of the card the lock was verified against.
    pub card_digest: String,
    /// The card's `version` when pinned.
    pub agent_version: String,
    /// The (binding, version) the workflow was verified on.
    pub interface: BindingVersion,
    /// What the workflow needs.
    pub requires: Requires,
    /// Claim → evidence (e.g. `"streaming"` → `"probe ok 2026-10-02T08:30:00Z"`), sorted by claim.
    pub verified: BTreeMap<String, String>,
}

/// The needs of a workflow: the part of a profile a change is judged against.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Requires {
    /// The workflow streams: the integration requires streaming, or prefers it and the card
    /// offered it when pinned. Losing it is breaking when streaming is required, else review.
    pub streaming: bool,
    /// Skill id → what the workflow sends, reads back and holds for it.
    pub skills: BTreeMap<String, SkillNeed>,
    /// Extension URIs the workflow activates and relies on, sorted.
    pub extensions: Vec<String>,
}

/// What the workflow needs of one skill.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SkillNeed {
    /// Media types the workflow sends; every one must stay accepted. Sorted.
    pub input: Vec<String>,
    /// Media types the workflow can read back; at least one must stay offered. Sorted.
    pub output: Vec<String>,
    /// Scopes the integration holds that the skill's security uses; some alternative of the
    /// skill's security requirements must stay satisfiable with them. Sorted.
    pub scopes: Vec<String>,
}

/// A lockfile's text that is not a valid lockfile. Every message names where the text came from
/// and, for content problems, the JSON path of the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LockError {
    /// Not one JSON document, or a key appears twice in an object.
    #[error("{source_name}: {message}")]
    Json {
        /// Where the document came from (a path, or `-` for stdin).
        source_name: String,
        /// What is wrong, with line and column or the duplicated key's path.
        message: String,
    },
    /// JSON, but not a lockfile: each problem starts with the field's JSON path.
    #[error("{source_name}: invalid lockfile:\n  - {}", problems.join("\n  - "))]
    Invalid {
        /// Where the document came from.
        source_name: String,
        /// One line per problem, `field.path: what is wrong`.
        problems: Vec<String>,
    },
}

impl LockError {
    /// Bounded label for logs and metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            LockError::Json { .. } => "json",
            LockError::Invalid { .. } => "invalid",
        }
    }
}
