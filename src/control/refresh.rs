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

use crate::config::{Config, Integration};
use crate::control::extended::{self, ExtendedCache, ExtendedError, ExtendedOutcome};
use crate::control::fetch::{CardFetcher, FetchError, FetchOutcome, FetchPolicy, Validators};
use crate::control::metrics::ControlMetrics;
use crate::control::schedule::RefreshResult;
use crate::control::state::StateDir;
use crate::profile::snapshot::Store;
use crate::profile::{Interface, Profile};

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

/// The answer to a refresh request (`POST /v1/integrations/{name}/refresh`, the retry hook).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RefreshReport {
    /// The integration.
    pub integration: String,
    /// `changed`, `unchanged`, `not_modified` or `failed`.
    pub result: RefreshResult,
    /// Why it failed (for `failed`).
    pub reason: Option<String>,
    /// The integration's status after the refresh (`usable`, `unusable`, ...).
    pub status: &'static str,
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
