//! The data plane's one question to the control plane, asked after an agent error raised before
//! the agent did any work (-32008, -32009): "is the profile this call used outdated?" (no I/O
//! here: the trait the control plane implements and its answer).
//!
//! The data plane owns this interface, as it owns the stale channel, so it never names the
//! control plane's types.

use std::sync::Arc;

use crate::profile::Profile;

/// What the control plane made of a refresh after an agent error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefreshAnswer {
    /// The integration's profile is now different from the one the call used; the new snapshot
    /// (this version or later) is stored.
    Changed {
        /// The snapshot version after the refresh.
        snapshot_version: u64,
    },
    /// The profile is the one the call used (refresh unchanged, not modified or failed).
    Same {
        /// The refresh's result, a bounded label (`unchanged`, `not_modified`, `failed`).
        result: &'static str,
    },
}

/// Why the control plane gave no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{detail}")]
pub struct RefreshUnavailable {
    /// Bounded reason (the control plane's error reason, e.g. `INTEGRATION_REMOVED`).
    pub reason: &'static str,
    /// Human-readable detail, for the log.
    pub detail: String,
}

impl RefreshUnavailable {
    /// Bounded label for logs and metrics.
    pub fn kind(&self) -> &'static str {
        self.reason
    }
}

/// The control plane as the data plane's retry hook sees it.
#[async_trait::async_trait]
pub trait RefreshHook: Send + Sync {
    /// Refreshes integration `name` (coalesced and rate-limited like a stale mark) and answers
    /// whether its profile is now different from `used`, the profile the failed call was shaped from.
    async fn refresh_after_error(
        &self,
        name: &str,
        used: &Arc<Profile>,
    ) -> Result<RefreshAnswer, RefreshUnavailable>;
}
