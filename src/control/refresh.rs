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
//! - **A change is a change of the compiled profile** ([`schedule::profile_changed`]), not of bytes.
//!   A 304 recompiles nothing.
//! - **A stale mark is deferred, never dropped**: a mark (from the stale channel or the retry hook)
//!   that the rate limit holds back fires at [`schedule::stale_deadline`]; only a fetch clears it.
//! - **A panic does not end the integration**: each worker runs under a supervisor
//!   ([`supervise`]) that catches the panic, logs and counts it, marks the integration degraded
//!   with the reason and restarts the worker after an exponential backoff; refresh requests are
//!   answered with an error while it waits.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use arc_swap::ArcSwap;
use bytes::Bytes;
use http::HeaderValue;
use serde::Serialize;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use crate::config::{Config, Integration};
use crate::control::extended::{
    self, CredentialIdentity, ExtendedCache, ExtendedError, ExtendedOutcome,
};
use crate::control::fetch::{
    CardFetcher, FetchError, FetchOutcome, FetchPolicy, Validators, check_url,
};
use crate::control::metrics::ControlMetrics;
use crate::control::schedule::{self, Last, RefreshResult};
use crate::control::state::StateDir;
use crate::profile::snapshot::{
    Degraded, Freshness, IntegrationState, Snapshot, StaleReceiver, Status, Store,
};
use crate::profile::{Interface, Profile};
use crate::proxy::upstream::Upstream;

mod extended_card;
mod last_good;
mod supervise;

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

/// The control plane's handle: cheap to clone, shared with the data plane and the admin API.
#[derive(Clone)]
pub struct ControlHandle {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for ControlHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControlHandle").finish_non_exhaustive()
    }
}

impl ControlHandle {
    /// Starts the control plane inside the current tokio runtime: every configured integration is
    /// put in the snapshot as pending, then its worker loads the last-known-good card (if any) and
    /// fetches at once. `stale` is the data plane's stale-mark channel.
    pub fn start(
        config: Config,
        store: Arc<Store>,
        metrics: ControlMetrics,
        source: Arc<dyn CardSource>,
        stale: Option<StaleReceiver>,
    ) -> ControlHandle {
        let (state_dir, state_problem) = open_state_dir(&config);
        let inner = Arc::new(Inner {
            store,
            source,
            metrics,
            config: ArcSwap::from_pointee(config),
            state_dir: Mutex::new(state_dir),
            state_problem: Mutex::new(state_problem),
            workers: Mutex::new(HashMap::new()),
            extended: ExtendedCache::new(),
            reload_refused: Mutex::new(None),
        });
        let handle = ControlHandle { inner };
        let config = handle.inner.config.load_full();
        let pending: Vec<IntegrationState> = config
            .integrations
            .iter()
            .map(|i| IntegrationState::pending(Arc::new(i.clone())))
            .collect();
        handle.inner.store.rcu(|cur| {
            let mut next = Snapshot {
                version: cur.version,
                integrations: Default::default(),
            };
            for s in &pending {
                next.integrations
                    .insert(s.integration.name.clone(), Arc::new(s.clone()));
            }
            next
        });
        for i in &config.integrations {
            handle.spawn_worker(Arc::new(i.clone()));
        }
        if let Some(rx) = stale {
            tokio::spawn(dispatch_stale(Arc::downgrade(&handle.inner), rx));
        }
        handle
    }

    /// The current snapshot store.
    pub fn store(&self) -> &Arc<Store> {
        &self.inner.store
    }

    /// The control-plane metrics.
    pub fn metrics(&self) -> &ControlMetrics {
        &self.inner.metrics
    }

    /// The configuration currently applied.
    pub fn config(&self) -> Arc<Config> {
        self.inner.config.load_full()
    }

    /// The last refused config reload, if the current config is not the newest file.
    pub fn reload_refused(&self) -> Option<String> {
        lock(&self.inner.reload_refused).clone()
    }

    pub(crate) fn spawn_worker(&self, integration: Arc<Integration>) {
        let (tx, rx) = mpsc::channel(WORKER_QUEUE);
        let name = integration.name.clone();
        self.inner.metrics.init_integration(&name);
        let task = tokio::spawn(supervise::supervise(
            self.inner.clone(),
            integration.clone(),
            rx,
        ));
        let old = lock(&self.inner.workers).insert(
            name,
            WorkerHandle {
                tx,
                task,
                integration,
            },
        );
        if let Some(old) = old {
            old.task.abort();
        }
    }

    /// Stops and forgets a worker (its integration left the config).
    pub(crate) fn stop_worker(&self, name: &str) {
        if let Some(w) = lock(&self.inner.workers).remove(name) {
            w.task.abort();
        }
        self.inner.extended.remove(name);
        self.inner.metrics.remove_integration(name);
    }

    pub(crate) fn worker_integration(&self, name: &str) -> Option<Arc<Integration>> {
        lock(&self.inner.workers)
            .get(name)
            .map(|w| w.integration.clone())
    }

    pub(crate) fn reconfigure(&self, integration: Arc<Integration>, refetch: bool) {
        let mut workers = lock(&self.inner.workers);
        if let Some(w) = workers.get_mut(&integration.name) {
            w.integration = integration.clone();
            // The queue only fills during a storm of commands; a reconfigure must not be lost.
            let tx = w.tx.clone();
            tokio::spawn(async move {
                let _ = tx
                    .send(Cmd::Reconfigure {
                        integration,
                        refetch,
                    })
                    .await;
            });
        }
    }

    pub(crate) fn recompile_all(&self) {
        for w in lock(&self.inner.workers).values() {
            let tx = w.tx.clone();
            tokio::spawn(async move {
                let _ = tx.send(Cmd::Recompile).await;
            });
        }
    }

    pub(crate) fn set_state_dir(&self, config: &Config) {
        let (dir, problem) = open_state_dir(config);
        *lock(&self.inner.state_dir) = dir;
        *lock(&self.inner.state_problem) = problem;
    }

    /// Forces one refresh of `name` and answers with its outcome (`POST …/refresh`). Requests that
    /// arrive while a fetch is in flight are answered together by the next fetch.
    pub async fn refresh_now(&self, name: &str) -> Result<RefreshReport, ControlError> {
        self.request(name, None).await
    }

    /// The retry hook for errors raised before the agent did any work (-32008, -32009): `used` is
    /// the profile the failed call was shaped from. Answers `changed` when the integration's profile
    /// is now different from `used` (then the caller re-shapes from the new snapshot and retries
    /// once), without fetching if another refresh already changed it; rate-limited by
    /// `[refresh] stale_min_interval`, so an error storm causes at most one fetch per interval.
    pub async fn refresh_after_error(
        &self,
        name: &str,
        used: &Arc<Profile>,
    ) -> Result<RefreshReport, ControlError> {
        self.request(name, Some(used.clone())).await
    }

    async fn request(
        &self,
        name: &str,
        after_error: Option<Arc<Profile>>,
    ) -> Result<RefreshReport, ControlError> {
        let tx = lock(&self.inner.workers)
            .get(name)
            .map(|w| w.tx.clone())
            .ok_or_else(|| ControlError::UnknownIntegration(name.to_owned()))?;
        let (reply, rx) = oneshot::channel();
        let reply = Reply {
            integration: name.to_owned(),
            tx: Some(reply),
        };
        tx.send(Cmd::Refresh { reply, after_error })
            .await
            .map_err(|_| ControlError::Stopped(name.to_owned()))?;
        rx.await
            .map_err(|_| ControlError::Stopped(name.to_owned()))?
    }

    /// Delivers a stale mark for `name` (what the stale-channel dispatcher does for each mark).
    pub fn mark_stale(&self, name: &str) {
        mark_stale(&self.inner, name);
    }

    /// Stops every worker (shutdown).
    pub fn shutdown(&self) {
        for (_, w) in lock(&self.inner.workers).drain() {
            w.task.abort();
        }
    }
}

fn mark_stale(inner: &Inner, name: &str) {
    let tx = lock(&inner.workers).get(name).map(|w| w.tx.clone());
    if let Some(tx) = tx
        && tx.try_send(Cmd::Stale).is_err()
    {
        inner
            .metrics
            .stale_debounced
            .with_label_values(&[name])
            .inc();
    }
}

/// Forwards stale marks from the data plane to the workers; ends when the channel closes or the
/// control plane is dropped.
async fn dispatch_stale(inner: std::sync::Weak<Inner>, mut rx: StaleReceiver) {
    while let Some(mark) = rx.recv().await {
        let Some(inner) = inner.upgrade() else { break };
        mark_stale(&inner, &mark.integration);
    }
}

/// The configured state directory, or why it cannot be used (serving goes on without it).
fn open_state_dir(config: &Config) -> (Option<StateDir>, Option<String>) {
    let Some(dir) = config.state_dir.as_ref() else {
        return (None, None);
    };
    match StateDir::open(dir) {
        Ok(d) => (Some(d), None),
        Err(e) => {
            tracing::warn!(error = %e, "last-known-good state directory unusable; cards will not be persisted");
            (
                None,
                Some(format!(
                    "last-known-good cards are not persisted: the state directory is unusable ({e})"
                )),
            )
        }
    }
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

/// Records a failed refresh (or a worker panic) of `integration`: counted by `kind`, the degraded
/// gauge set, and `degraded` stored beside the last good profile. An integration that never had a
/// good profile gets a definite "unusable" verdict with the reason, so readiness can settle.
fn record_degraded(
    inner: &Inner,
    integration: &Arc<Integration>,
    kind: &'static str,
    degraded: &Degraded,
) {
    let name = integration.name.as_str();
    inner
        .metrics
        .failures
        .with_label_values(&[name, kind])
        .inc();
    inner.metrics.degraded.with_label_values(&[name]).set(1);
    inner.store.rcu(|cur| match cur.get(name) {
        None => cur.clone(),
        Some(s) => {
            let mut next = if s.profile.is_none() || s.status == Status::Pending {
                IntegrationState::unusable(integration.clone(), None, degraded.reason.clone())
            } else {
                (**s).clone()
            };
            next.freshness = Freshness {
                degraded: Some(degraded.clone()),
                ..s.freshness.clone()
            };
            cur.with(next)
        }
    });
}

/// The last good card of one integration, kept in memory by its worker.
#[derive(Debug, Clone)]
struct CachedCard {
    bytes: Bytes,
    validators: Validators,
    origin: String,
    url: String,
    max_age: Option<Duration>,
    fetched_at: SystemTime,
}

struct Worker {
    inner: Arc<Inner>,
    integration: Arc<Integration>,
    card: Option<CachedCard>,
    last: Last,
    degraded: Option<Degraded>,
    last_fetch: Option<Instant>,
    /// The installed state came from disk and no fetch has confirmed it yet.
    from_disk: bool,
    /// When the periodic refresh is due (moved by every fetch).
    next: Instant,
    /// When a pending stale mark fires; cleared only by a fetch.
    stale_at: Option<Instant>,
    /// The credential identity the installed state was built with (`None`: nothing built yet).
    /// A 304 rebuilds when the credential's source now yields another one (rotated token file
    /// or variable), so no state built for one identity serves another.
    built_for: Option<Option<CredentialIdentity>>,
}

/// Refresh requests answered together, each with the profile its failed call used (retry hook).
type Waiters = Vec<(Reply, Option<Arc<Profile>>)>;

impl Worker {
    fn new(inner: Arc<Inner>, integration: Arc<Integration>) -> Self {
        Worker {
            inner,
            integration,
            card: None,
            last: Last::Ok { max_age: None },
            degraded: None,
            last_fetch: None,
            from_disk: false,
            next: Instant::now(),
            stale_at: None,
            built_for: None,
        }
    }

    fn name(&self) -> &str {
        &self.integration.name
    }

    /// The worker's loop: timers and commands one at a time, until the command channel closes.
    /// `load_disk` is false after a restart, when the snapshot already holds what the worker had.
    async fn run(mut self, rx: &mut mpsc::Receiver<Cmd>, load_disk: bool) {
        if load_disk {
            self.load_last_known_good().await;
        }
        self.next = Instant::now();
        loop {
            let (next, stale_at) = (self.next, self.stale_at);
            // Not `biased`: a sustained stream of commands must not starve the timers.
            let cmd = tokio::select! {
                cmd = rx.recv() => match cmd {
                    Some(c) => c,
                    None => break,
                },
                () = tokio::time::sleep_until(stale_at.unwrap_or(next)), if stale_at.is_some() => {
                    self.inner.metrics.stale_refreshes.with_label_values(&[self.name()]).inc();
                    self.refresh().await;
                    continue;
                }
                () = tokio::time::sleep_until(next) => {
                    self.refresh().await;
                    continue;
                }
            };
            self.handle(cmd, rx).await;
        }
    }

    async fn handle(&mut self, cmd: Cmd, rx: &mut mpsc::Receiver<Cmd>) {
        match cmd {
            Cmd::Stale => self.note_stale(1),
            Cmd::Refresh { reply, after_error } => {
                let mut waiters = vec![(reply, after_error)];
                // Everything already queued is answered by the same fetch (or waits with it).
                let mut marks = 0;
                let mut later = Vec::new();
                while let Ok(c) = rx.try_recv() {
                    match c {
                        Cmd::Refresh { reply, after_error } => waiters.push((reply, after_error)),
                        Cmd::Stale => marks += 1,
                        other => later.push(other),
                    }
                }
                self.answer(waiters, marks).await;
                for c in later {
                    self.apply(c).await;
                }
            }
            other => self.apply(other).await,
        }
    }

    async fn apply(&mut self, cmd: Cmd) {
        match cmd {
            Cmd::Reconfigure {
                integration,
                refetch,
            } => {
                self.integration = integration;
                if refetch {
                    // Validators belong to the old source: start over with an unconditional GET.
                    self.card = None;
                    self.next = Instant::now();
                } else {
                    self.rebuild_from_cache().await;
                }
            }
            Cmd::Recompile => self.rebuild_from_cache().await,
            Cmd::Stale => self.note_stale(1),
            Cmd::Refresh { reply, after_error } => self.answer(vec![(reply, after_error)], 0).await,
        }
    }

    /// Records `marks` stale marks. The first schedules a refresh at [`schedule::stale_deadline`]
    /// (debounced, and held until `stale_min_interval` after the last fetch); the rest merge into
    /// it. Only a fetch clears a pending mark, so one that the rate limit holds back still fires.
    fn note_stale(&mut self, marks: u64) {
        if marks == 0 {
            return;
        }
        let merged = if self.stale_at.is_some() {
            marks
        } else {
            let settings = &self.inner.config.load().refresh;
            self.stale_at = Some(schedule::stale_deadline(
                settings,
                Instant::now(),
                self.last_fetch,
            ));
            marks - 1
        };
        if merged > 0 {
            self.inner
                .metrics
                .stale_debounced
                .with_label_values(&[self.name()])
                .inc_by(merged);
        }
    }

    /// Answers refresh requests with one fetch, or none when every waiter is the retry hook and
    /// either the profile already moved past what it used or a fetch ran very recently. Without a
    /// fetch, the hook's error and the queued `marks` stay pending as a stale mark.
    async fn answer(&mut self, waiters: Waiters, marks: u64) {
        let current = self.current_profile();
        let forced = waiters.iter().any(|(_, used)| used.is_none());
        let all_moved_on = waiters.iter().all(|(_, used)| {
            used.as_ref()
                .is_some_and(|u| schedule::profile_changed(current.as_deref(), u))
        });
        let min = self.inner.config.load().refresh.stale_min_interval;
        let recent = self.last_fetch.is_some_and(|t| t.elapsed() < min);
        let report = if !forced && (all_moved_on || recent) {
            // A hook whose call used the current profile saw the agent refuse it: that is a stale
            // mark the rate limit defers, not one it forgets.
            self.note_stale(marks + u64::from(!all_moved_on));
            None
        } else {
            if marks > 0 {
                self.inner
                    .metrics
                    .stale_debounced
                    .with_label_values(&[self.name()])
                    .inc_by(marks);
            }
            Some(self.refresh().await)
        };
        let after = self.current_profile();
        for (reply, used) in waiters {
            let r = match (&report, used) {
                // The retry hook asks "is the profile now different from the one my call used?".
                (Some(r), Some(u)) if r.result != RefreshResult::Failed => {
                    let mut r = r.clone();
                    if schedule::profile_changed(after.as_deref(), &u) {
                        r.result = RefreshResult::Changed;
                    }
                    r
                }
                (Some(r), _) => r.clone(),
                (None, used) => {
                    let changed =
                        used.is_some_and(|u| schedule::profile_changed(after.as_deref(), &u));
                    let result = if changed {
                        RefreshResult::Changed
                    } else {
                        RefreshResult::Unchanged
                    };
                    self.report(result, None, true)
                }
            };
            reply.send(Ok(r));
        }
    }

    fn current(&self) -> Option<Arc<IntegrationState>> {
        self.inner.store.load().get(self.name()).cloned()
    }

    fn current_profile(&self) -> Option<Arc<Profile>> {
        self.current().and_then(|s| s.profile.clone())
    }

    fn next_at(&self) -> Instant {
        let delay = schedule::next_delay(
            &self.inner.config.load().refresh,
            self.last,
            schedule::jitter_unit(),
        );
        Instant::now() + delay
    }

    fn report(
        &self,
        result: RefreshResult,
        reason: Option<String>,
        coalesced: bool,
    ) -> RefreshReport {
        let snap = self.inner.store.load();
        RefreshReport {
            integration: self.name().to_owned(),
            result,
            reason,
            status: snap
                .get(self.name())
                .map_or("removed", |s| s.status.as_str()),
            snapshot_version: snap.version,
            coalesced,
        }
    }

    /// One refresh: conditional fetch, then validate, compile and install on a 200; counted by result.
    /// Every fetch answers the stale marks pending before it and restarts the periodic timer.
    async fn refresh(&mut self) -> RefreshReport {
        let report = self.refresh_inner().await;
        self.stale_at = None;
        self.next = self.next_at();
        self.inner
            .metrics
            .refreshes
            .with_label_values(&[self.name(), report.result.as_str()])
            .inc();
        report
    }

    async fn refresh_inner(&mut self) -> RefreshReport {
        self.last_fetch = Some(Instant::now());
        let config = self.inner.config.load_full();
        let policy = match fetch_policy(&self.integration, &config) {
            Ok(p) => p,
            Err(e) => return self.fail(e.kind(), format!("integration origins: {e}")),
        };
        let validators = self.card.as_ref().map(|c| c.validators.clone());
        let fetched = self
            .inner
            .source
            .fetch(&self.integration.card, &policy, validators.as_ref())
            .await;
        match fetched {
            Err(e) => self.fail(e.kind(), format!("card fetch: {e}")),
            Ok(FetchOutcome::NotModified {
                validators,
                max_age,
            }) => {
                let now = SystemTime::now();
                if let Some(c) = &mut self.card {
                    c.validators = validators;
                    c.max_age = max_age.or(c.max_age);
                    c.fetched_at = now;
                }
                let max_age = self.card.as_ref().and_then(|c| c.max_age);
                let rotated = self.built_for.as_ref() != Some(&self.credential_identity());
                if self.from_disk || rotated {
                    // The disk copy is confirmed, or the credential changed: build once more with
                    // the network available (the extended card is only fetched online, and
                    // belongs to one identity).
                    self.from_disk = false;
                    if let Some(card) = self.card.clone() {
                        match self.build(&card, &config, &policy, true).await {
                            Ok(state) => {
                                self.succeed(max_age);
                                let result = self.install(state);
                                self.persist();
                                return self.report(result, None, false);
                            }
                            Err(reason) => return self.fail("invalid_card", reason),
                        }
                    }
                }
                self.succeed(max_age);
                self.touch_freshness();
                self.persist();
                self.report(RefreshResult::NotModified, None, false)
            }
            Ok(FetchOutcome::Fetched {
                bytes,
                validators,
                max_age,
                origin,
                url,
            }) => {
                let card = CachedCard {
                    bytes,
                    validators,
                    origin,
                    url,
                    max_age,
                    fetched_at: SystemTime::now(),
                };
                match self.build(&card, &config, &policy, true).await {
                    Ok(state) => {
                        self.card = Some(card);
                        self.from_disk = false;
                        self.succeed(max_age);
                        let result = self.install(state);
                        self.persist();
                        self.report(result, None, false)
                    }
                    Err(reason) => self.fail("invalid_card", reason),
                }
            }
        }
    }

    fn succeed(&mut self, max_age: Option<Duration>) {
        self.last = Last::Ok { max_age };
        self.degraded = None;
        self.inner
            .metrics
            .degraded
            .with_label_values(&[self.name()])
            .set(0);
        self.inner.metrics.ages.set(self.name(), SystemTime::now());
    }

    /// Records a failure: the last good profile stays; without one the integration is unusable.
    fn fail(&mut self, kind: &'static str, reason: String) -> RefreshReport {
        let now = SystemTime::now();
        let failures = match self.last {
            Last::Failed { consecutive } => consecutive + 1,
            Last::Ok { .. } => 1,
        };
        self.last = Last::Failed {
            consecutive: failures,
        };
        let degraded = Degraded {
            reason: reason.clone(),
            since: self.degraded.as_ref().map_or(now, |d| d.since),
            failures,
        };
        self.degraded = Some(degraded.clone());
        tracing::warn!(integration = %self.name(), failures, %reason, "card refresh failed; keeping the last good profile");
        record_degraded(&self.inner, &self.integration, kind, &degraded);
        self.report(RefreshResult::Failed, Some(reason), false)
    }

    /// Installs a freshly built state: a new profile (or status) replaces the old one and resets
    /// runtime overrides; an identical profile only refreshes strings and freshness.
    fn install(&mut self, mut state: IntegrationState) -> RefreshResult {
        let old = self.current();
        let old_profile = old.as_ref().and_then(|s| s.profile.clone());
        let changed = state
            .profile
            .as_deref()
            .is_none_or(|p| schedule::profile_changed(old_profile.as_deref(), p))
            || old.as_ref().is_none_or(|s| s.status != state.status);
        state.freshness.validated_at = Some(SystemTime::now());
        state.freshness.unrevalidated = false;
        state.freshness.degraded = None;
        if let Some(old) = &old {
            state.evidence = old.evidence.clone();
            if !changed {
                state.overrides = old.overrides.clone();
                state.installed_at = old.installed_at;
            }
        }
        let name = self.name().to_owned();
        self.inner.store.rcu(|cur| match cur.get(&name) {
            Some(_) => cur.with(state.clone()),
            None => cur.clone(),
        });
        self.inner.metrics.swaps.with_label_values(&[&name]).inc();
        if changed {
            tracing::info!(integration = %name, status = state.status.as_str(), "profile changed");
            RefreshResult::Changed
        } else {
            RefreshResult::Unchanged
        }
    }

    /// Marks the current profile as confirmed (a 304), without touching the profile.
    fn touch_freshness(&self) {
        let name = self.name().to_owned();
        self.inner.store.rcu(|cur| match cur.get(&name) {
            Some(s) => {
                let mut next = (**s).clone();
                next.freshness.validated_at = Some(SystemTime::now());
                next.freshness.unrevalidated = false;
                next.freshness.degraded = None;
                cur.with(next)
            }
            None => cur.clone(),
        });
    }

    /// Validates and compiles a card into a complete integration state (extended card, interface
    /// address check and upstream included). `Err` means the card itself failed.
    async fn build(
        &mut self,
        card: &CachedCard,
        config: &Config,
        policy: &FetchPolicy,
        online: bool,
    ) -> Result<IntegrationState, String> {
        let validated = crate::card::validate(&card.bytes, &config.card_policy, Some(&card.origin))
            .map_err(|e| {
                format!(
                    "card failed validation: {}",
                    e.to_string().replace('\n', "; ")
                )
            })?;
        // Past the only failure: the state returned below is built for this identity.
        self.built_for = Some(self.credential_identity());
        let public = crate::profile::compile(&validated, &config.caps);
        let (profile, json, extended) = self
            .extended(public, validated.json(), config, policy, online)
            .await;
        let integration = self.integration.clone();
        let Some(iface) = profile.interface.clone().filter(|_| profile.usable) else {
            return Ok(IntegrationState::from_profile(
                integration,
                profile,
                &json,
                Err("no usable interface".into()),
            ));
        };
        // The interface is where every call goes: same SSRF rules as the card itself.
        let upstream = match check_url(&iface.url, policy).await {
            Err(e) => Err(format!("interface refused: {e}")),
            Ok(()) => {
                let url = iface.url.clone();
                let i = integration.clone();
                match tokio::task::spawn_blocking(move || Upstream::prepare(&url, &i)).await {
                    Ok(Ok(u)) => match policy.check_addr(&iface.url, u.addr.ip()) {
                        // Re-check the address the data plane will actually connect to.
                        Ok(()) => Ok(u),
                        Err(e) => Err(format!("interface refused: {e}")),
                    },
                    Ok(Err(e)) => Err(e.to_string()),
                    Err(e) => Err(format!("upstream preparation panicked: {e}")),
                }
            }
        };
        let mut state = IntegrationState::from_profile(integration, profile, &json, upstream);
        state.freshness.extended = extended;
        Ok(state)
    }

    /// Rebuilds the state from the cached card with the current config (no fetch).
    async fn rebuild_from_cache(&mut self) {
        let Some(card) = self.card.clone() else {
            return;
        };
        let config = self.inner.config.load_full();
        let Ok(policy) = fetch_policy(&self.integration, &config) else {
            return;
        };
        match self.build(&card, &config, &policy, false).await {
            Ok(state) => {
                self.install(state);
            }
            Err(reason) => {
                self.fail("invalid_card", reason);
            }
        }
    }
}
