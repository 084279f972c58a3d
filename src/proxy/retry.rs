//! Refresh-and-retry for agent errors raised before the agent did any work (-32008
//! ExtensionSupportRequired, -32009 VersionNotSupported): ask the control plane
//! whether the profile the call was shaped from is outdated and, only if it is, decide and shape
//! the same request again from the new snapshot for one more attempt (I/O: waits on the control
//! plane).
//!
//! Why the retry lives on the gateway's own client ([`super::client`]): a JSON-RPC agent answers
//! these errors with HTTP 200, indistinguishable from a result until the body is read, and
//! pingora cannot re-send once it has read a response body (its body hooks are synchronous and
//! the header is already on its way to the caller). The own client holds the (small) answer
//! before the caller sees anything, so it can answer with the retry's result or the original
//! error unchanged. Message sends (unary, streamed or downgraded) take that path; every other unary
//! call stays on pingora, where these errors only mark the profile stale.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use super::call::Gateway;
use super::deny::Deny;
use super::policy::{self, Facts, Plan};
use crate::state::{IntegrationState, RefreshAnswer, Snapshot, StaleCause};

/// Longest wait for the control plane's answer: a hanging agent (card endpoint) must not hold the
/// caller for the whole fetch timeout. The refresh itself goes on; only this call stops waiting.
pub const REFRESH_WAIT: Duration = Duration::from_secs(5);

/// What is needed to decide the same request again against a refreshed profile.
pub struct Redo<'a> {
    /// The request facts policy decided the first attempt from.
    pub facts: &'a Facts<'a>,
    /// The caller's body as received (before any rewrite of the first plan).
    pub original_body: &'a Bytes,
}

/// Whether `cause` is an error raised before the agent did any work, so a retry is safe.
pub fn retries(cause: StaleCause) -> bool {
    matches!(
        cause,
        StaleCause::ExtensionSupportRequired | StaleCause::VersionNotSupported
    )
}

/// What to do after such an error.
pub enum Next {
    /// Answer the agent's original error unchanged (no newer profile, or no answer in time).
    Original,
    /// The refreshed profile refuses the call: answer that refusal.
    Refused(Deny),
    /// Send once more, shaped from the new profile.
    Retry {
        /// The snapshot the retry uses (held to the end of the request).
        snapshot: Arc<Snapshot>,
        /// The integration in it.
        state: Arc<IntegrationState>,
        /// The new plan.
        plan: Plan,
        /// The body to send.
        body: Bytes,
    },
}

/// Asks the control plane to refresh `state`'s integration after `cause` and, when the profile is
/// now different from the one the call used, re-runs policy on the new snapshot.
pub async fn after_error(
    gw: &Gateway,
    state: &IntegrationState,
    first: &Plan,
    cause: StaleCause,
    redo: &Redo<'_>,
) -> Next {
    let name = state.integration.name.as_str();
    let (Some(control), Some(used)) = (gw.control.as_ref(), state.profile()) else {
        gw.mark_stale(name, cause);
        return Next::Original;
    };
    // The hook is the stale mark's refresh (coalesced and rate-limited by the worker); a separate
    // mark on the channel would only schedule a second fetch. It is still counted and logged.
    gw.note_stale(name, cause);
    match tokio::time::timeout(REFRESH_WAIT, control.refresh_after_error(name, used)).await {
        Ok(Ok(RefreshAnswer::Changed { snapshot_version })) => {
            tracing::info!(
                integration = name,
                error = cause.as_str(),
                snapshot_version,
                "profile changed after an agent error; retrying once"
            );
        }
        Ok(Ok(RefreshAnswer::Same { result })) => {
            tracing::info!(
                integration = name,
                error = cause.as_str(),
                result,
                "refresh after an agent error changed nothing; answering the agent's error"
            );
            return Next::Original;
        }
        Ok(Err(e)) => {
            tracing::warn!(integration = name, error = %e, "refresh after an agent error failed");
            return Next::Original;
        }
        Err(_) => {
            tracing::warn!(
                integration = name,
                wait_ms = REFRESH_WAIT.as_millis() as u64,
                "no refresh answer in time; answering the agent's error"
            );
            return Next::Original;
        }
    }
    let snapshot = gw.store.load();
    let Some(next) = snapshot.get(name).cloned() else {
        // Removed by a config reload while the call waited: it no longer routes.
        return Next::Refused(Deny::UnknownIntegration);
    };
    if let Err(d) = policy::check_status(&next) {
        return Next::Refused(d);
    }
    let plan = match policy::decide(&next, redo.facts) {
        Ok(p) => p,
        Err(d) => return Next::Refused(d),
    };
    if plan.method != first.method {
        // Not the same operation any more (cannot happen from the same facts today): the caller
        // gets what the agent said rather than a call it did not make.
        return Next::Original;
    }
    let body = plan
        .rewritten_body
        .clone()
        .unwrap_or_else(|| redo.original_body.clone());
    Next::Retry {
        snapshot,
        state: next,
        plan,
        body,
    }
}
