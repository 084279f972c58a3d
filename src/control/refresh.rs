//! The refresh scheduler: one task per integration that fetches, validates, compiles and installs
//! its card, on a period from `Cache-Control: max-age` (bounded by `[refresh]`), with backoff on
//! failure, debounced stale marks from the data plane, forced refreshes from the admin API, and the
//! re-shape-and-retry hook for -32008/-32009 (I/O).
//!
//! Invariants:
//! - **At most one fetch in flight per integration**: each integration's worker is a single task
//!   that handles its timers and commands one at a time; concurrent refresh requests that queue up
//!   while a fetch runs are answered together by the next fetch.
//! - **Whole snapshots**: every change builds a complete new `IntegrationState` and stores a new
//!   `Snapshot` through [`Store::rcu`]; a reader sees the old state or the new one, never a mix.
//! - **Last good wins**: a failed fetch, validation or compilation never replaces a usable profile;
//!   it records `Freshness::degraded` (reason, since, count) beside it.
//! - **A change is a change of the compiled profile** ([`crate::control::schedule::profile_changed`]), not of bytes.
//!   A 304 recompiles nothing.
//! - **A stale mark is deferred, never dropped**: a mark (from the stale channel or the retry hook)
//!   that the rate limit holds back fires at [`crate::control::schedule::stale_deadline`]; only a fetch clears it.
//! - **A panic does not end the integration**: each worker runs under a supervisor
//!   (`supervise`) that catches the panic, logs and counts it, marks the integration degraded
//!   with the reason and restarts the worker after an exponential backoff; refresh requests are
//!   answered with an error while it waits.
//!
//! Parts: [`ControlHandle`] (`handle`: starts workers, routes commands and stale marks), the worker
//! loop (`worker`: timers and commands, one at a time), one refresh step (`step`: fetch, build,
//! install, record), the extended card (`extended_card`), last-known-good on disk (`last_good`)
//! and the supervisor (`supervise`). This file holds what they share: the commands, the replies,
//! the errors and the shared state.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arc_swap::ArcSwap;
use bytes::Bytes;
use http::HeaderValue;
use serde::Serialize;
use tokio::sync::{mpsc, oneshot};

use crate::card::CardErrors;
use crate::config::{Config, Integration};
use crate::control::extended::{self, ExtendedCache, ExtendedError, ExtendedOutcome};
use crate::control::fetch::{CardFetcher, FetchError, FetchOutcome, FetchPolicy, Validators};
use crate::control::metrics::ControlMetrics;
use crate::control::schedule::RefreshResult;
use crate::control::state_dir::StateDir;
use crate::profile::{Interface, Profile};
use crate::state::UpstreamError;
use crate::state::{Status, Store};

mod compile;
mod extended_card;
mod handle;
mod last_good;
mod lock_check;
mod step;
mod supervise;
mod worker;

pub use handle::ControlHandle;
use step::record_degraded;
use worker::Worker;

/// Queue depth of one worker's command channel. A full queue means a refresh is already pending,
/// so a stale mark that does not fit is counted as debounced, never waited for.
const WORKER_QUEUE: usize = 64;

/// Where cards come from: the real [`CardFetcher`], or a scripted source in scheduler tests that
/// run on paused time (where real sockets and timeouts do not mix).
#[async_trait::async_trait]
pub trait CardSource: Send + Sync + 'static {
    /// A conditional GET of a card under `policy`.
    async fn fetch(
        &self,
        url: &str,
        policy: &FetchPolicy,
        validators: Option<&Validators>,
    ) -> Result<FetchOutcome, FetchError>;

    /// `GetExtendedAgentCard` with a credential.
    async fn extended(
        &self,
        iface: &Interface,
        tenant: Option<&str>,
        authorization: &HeaderValue,
        policy: &FetchPolicy,
    ) -> Result<ExtendedOutcome, ExtendedError>;
}

#[async_trait::async_trait]
impl CardSource for CardFetcher {
    async fn fetch(
        &self,
        url: &str,
        policy: &FetchPolicy,
        validators: Option<&Validators>,
    ) -> Result<FetchOutcome, FetchError> {
        CardFetcher::fetch(self, url, policy, validators).await
    }

    async fn extended(
        &self,
        iface: &Interface,
        tenant: Option<&str>,
        authorization: &HeaderValue,
        policy: &FetchPolicy,
    ) -> Result<ExtendedOutcome, ExtendedError> {
        extended::fetch_extended(self, iface, tenant, authorization, policy).await
    }
}

/// Errors of the control handle's API.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ControlError {
    /// No integration of that name is configured.
    #[error("no integration named {0:?}")]
    UnknownIntegration(String),
    /// The integration's worker stopped (it was removed by a reload while the call waited).
    #[error("integration {0:?} was removed while the refresh waited")]
    Stopped(String),
    /// The integration's refresh worker panicked while it handled this request; it is restarted
    /// after a backoff.
    #[error(
        "the refresh worker of integration {0:?} panicked during this refresh and is restarting; see /readyz for the reason"
    )]
    Panicked(String),
    /// The integration's refresh worker panicked earlier and waits out its restart backoff.
    #[error(
        "the refresh worker of integration {integration:?} is restarting after a panic ({reason}); retry in {}s",
        retry_after.as_secs().max(1)
    )]
    Restarting {
        /// The integration.
        integration: String,
        /// `refresh worker panicked: <message>`.
        reason: String,
        /// Time left until the restart.
        retry_after: Duration,
    },
}

impl ControlError {
    /// Bounded reason for the `ErrorInfo` of the admin API's answer and for logs.
    pub fn reason(&self) -> &'static str {
        match self {
            ControlError::UnknownIntegration(_) => "UNKNOWN_INTEGRATION",
            ControlError::Stopped(_) => "INTEGRATION_REMOVED",
            ControlError::Panicked(_) | ControlError::Restarting { .. } => {
                "REFRESH_WORKER_RESTARTING"
            }
        }
    }

    /// How long a caller should wait before asking again, when that is known.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ControlError::Restarting { retry_after, .. } => Some(*retry_after),
            _ => None,
        }
    }
}

/// Why a refresh failed: the reason shown beside the last good profile, with a bounded kind.
#[derive(Debug, thiserror::Error)]
pub enum RefreshError {
    /// The integration's approved origins do not form a fetch policy.
    #[error("integration origins: {0}")]
    Origins(FetchError),
    /// The card could not be fetched.
    #[error("card fetch: {0}")]
    Fetch(FetchError),
    /// The card (fetched, cached or saved) failed validation.
    #[error("card failed validation: {}", .0.to_string().replace('\n', "; "))]
    InvalidCard(CardErrors),
    /// The integration's worker panicked (`refresh worker panicked: <message>`).
    #[error("{0}")]
    WorkerPanicked(String),
}

impl RefreshError {
    /// Bounded label of `a2a_egress_refresh_failures_total{kind}` and of logs.
    pub fn kind(&self) -> &'static str {
        match self {
            RefreshError::Origins(e) | RefreshError::Fetch(e) => e.kind(),
            RefreshError::InvalidCard(_) => crate::control::metrics::INVALID_CARD,
            RefreshError::WorkerPanicked(_) => crate::control::metrics::WORKER_PANIC,
        }
    }
}

/// Why a usable profile got no upstream (the integration is then unusable, with this as reason).
#[derive(Debug, thiserror::Error)]
pub enum InterfaceError {
    /// The profile has no usable interface.
    #[error("no usable interface")]
    NoUsableInterface,
    /// The interface URL or its address breaks the integration's fetch rules.
    #[error("interface refused: {0}")]
    Refused(FetchError),
    /// The upstream could not be prepared (DNS, CA file, credential).
    #[error("{0}")]
    Prepare(UpstreamError),
    /// The preparation task panicked.
    #[error("upstream preparation panicked: {0}")]
    Panicked(String),
}

impl InterfaceError {
    /// Bounded label for logs.
    pub fn kind(&self) -> &'static str {
        match self {
            InterfaceError::NoUsableInterface => "no_usable_interface",
            InterfaceError::Refused(e) => e.kind(),
            InterfaceError::Prepare(_) => "upstream_prepare",
            InterfaceError::Panicked(_) => "upstream_prepare_panicked",
        }
    }
}

/// An integration's status as a refresh report states it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReportedStatus {
    /// No verdict yet.
    Pending,
    /// A usable profile is installed.
    Usable,
    /// No usable profile.
    Unusable,
    /// Traffic stopped on purpose.
    Blocked,
    /// The integration left the config while the refresh ran.
    Removed,
}

impl ReportedStatus {
    /// The status of an integration's state, `Removed` when it has none.
    pub fn of(status: Option<&Status>) -> ReportedStatus {
        match status {
            None => ReportedStatus::Removed,
            Some(Status::Pending) => ReportedStatus::Pending,
            Some(Status::Usable { .. }) => ReportedStatus::Usable,
            Some(Status::Unusable { .. }) => ReportedStatus::Unusable,
            Some(Status::Blocked { .. }) => ReportedStatus::Blocked,
        }
    }

    /// Bounded label.
    pub fn as_str(self) -> &'static str {
        match self {
            ReportedStatus::Pending => "pending",
            ReportedStatus::Usable => "usable",
            ReportedStatus::Unusable => "unusable",
            ReportedStatus::Blocked => "blocked",
            ReportedStatus::Removed => "removed",
        }
    }
}

/// The answer to a refresh request (`POST /v1/integrations/{name}/refresh`, the retry hook).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RefreshReport {
    /// The integration.
    pub integration: String,
    /// `changed`, `unchanged`, `not_modified` or `failed`.
    pub result: RefreshResult,
    /// Why it failed (for `failed`).
    pub reason: Option<String>,
    /// The integration's status after the refresh.
    pub status: ReportedStatus,
    /// The snapshot version after the refresh.
    pub snapshot_version: u64,
    /// True when no fetch was made because a recent one already answered (retry hook rate limit).
    pub coalesced: bool,
}

/// Where a refresh request's answer goes. Dropped unanswered, it still answers, so a caller never
/// waits on a worker that is gone: [`ControlError::Panicked`] while the worker unwinds from a panic,
/// [`ControlError::Stopped`] when the worker was stopped.
struct Reply {
    integration: String,
    tx: Option<oneshot::Sender<Result<RefreshReport, ControlError>>>,
}

impl Reply {
    fn send(mut self, answer: Result<RefreshReport, ControlError>) {
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(answer);
        }
    }
}

impl Drop for Reply {
    fn drop(&mut self) {
        if let Some(tx) = self.tx.take() {
            let name = std::mem::take(&mut self.integration);
            let _ = tx.send(Err(if std::thread::panicking() {
                ControlError::Panicked(name)
            } else {
                ControlError::Stopped(name)
            }));
        }
    }
}

enum Cmd {
    /// Fetch now; `after_error` carries the profile a failed call used (the retry hook).
    Refresh {
        reply: Reply,
        after_error: Option<Arc<Profile>>,
    },
    /// A stale mark from the data plane.
    Stale,
    /// The integration's config changed; `refetch` when card, origins, trust or credential did.
    Reconfigure {
        integration: Arc<Integration>,
        refetch: bool,
    },
    /// Global settings (client caps, card policy) changed: rebuild from the cached card, no fetch.
    Recompile,
}

struct WorkerHandle {
    tx: mpsc::Sender<Cmd>,
    task: tokio::task::JoinHandle<()>,
    integration: Arc<Integration>,
}

pub(crate) struct Inner {
    pub(crate) store: Arc<Store>,
    source: Arc<dyn CardSource>,
    pub(crate) metrics: ControlMetrics,
    pub(crate) config: ArcSwap<Config>,
    state_dir: Mutex<Option<StateDir>>,
    /// Why last-known-good cards are not being saved (the directory cannot be opened, or the last
    /// save failed), for `/readyz` detail; cleared by the next successful save.
    pub(crate) state_problem: Mutex<Option<String>>,
    workers: Mutex<HashMap<String, WorkerHandle>>,
    extended: ExtendedCache<Bytes>,
    /// The last refused config reload, for `/readyz` detail.
    pub(crate) reload_refused: Mutex<Option<String>>,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The fetch policy of an integration under the current config.
pub fn fetch_policy(integration: &Integration, config: &Config) -> Result<FetchPolicy, FetchError> {
    let mut p = FetchPolicy::from_origin_strs(
        &integration.origins,
        config.card_policy.max_card_bytes,
        config.card_policy.allow_plain_http,
    )?;
    p.ca_file = integration.ca_file.clone();
    Ok(p)
}

/// Whether a config change of one integration needs a new fetch (pure): anything that decides
/// where the card comes from, how it is trusted, or which credential sees it.
pub fn needs_refetch(old: &Integration, new: &Integration) -> bool {
    old.card != new.card
        || old.origins != new.origins
        || old.ca_file != new.ca_file
        || old.credential != new.credential
        || old.tenant != new.tenant
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::card::CardPolicy;

    #[test]
    fn refresh_errors_have_bounded_kinds_and_one_line_reasons() {
        let invalid = crate::card::validate(b"{\"name\": 1}", &CardPolicy::default(), None)
            .expect_err("not a card");
        let e = RefreshError::InvalidCard(invalid);
        assert_eq!(e.kind(), "invalid_card");
        let text = e.to_string();
        assert!(text.starts_with("card failed validation: "), "{text}");
        assert!(
            !text.contains('\n'),
            "one line for /readyz and logs: {text}"
        );
        let panicked = RefreshError::WorkerPanicked("refresh worker panicked: boom".into());
        assert_eq!(panicked.kind(), "worker_panic");
        assert_eq!(panicked.to_string(), "refresh worker panicked: boom");
    }

    #[test]
    fn reported_statuses_name_every_state() {
        let profile = std::sync::Arc::new(crate::lock::diff::tests::pricing_profile());
        let upstream = std::sync::Arc::new(crate::state::Upstream::for_tests("https://a.example/"));
        let cases = [
            (None, "removed"),
            (Some(Status::Pending), "pending"),
            (
                Some(Status::Usable {
                    profile: profile.clone(),
                    upstream: upstream.clone(),
                }),
                "usable",
            ),
            (
                Some(Status::Unusable {
                    reason: "x".into(),
                    profile: None,
                    code: None,
                }),
                "unusable",
            ),
            (
                Some(Status::Blocked {
                    reason: "x".into(),
                    profile,
                    upstream,
                }),
                "blocked",
            ),
        ];
        for (status, label) in cases {
            let r = ReportedStatus::of(status.as_ref());
            assert_eq!(r.as_str(), label);
            assert_eq!(serde_json::to_value(r).ok(), Some(label.into()));
        }
    }
}
