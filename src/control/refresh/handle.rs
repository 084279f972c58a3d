//! The control plane's handle: starts the workers, forwards commands and stale marks to them,
//! and answers refresh requests through them (tokio tasks and channels; no other I/O).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;
use tokio::sync::{mpsc, oneshot};

use super::{
    CardSource, Cmd, ControlError, Inner, RefreshReport, Reply, WORKER_QUEUE, WorkerHandle, lock,
    supervise,
};
use crate::config::{Config, Integration};
use crate::control::extended::ExtendedCache;
use crate::control::metrics::ControlMetrics;
use crate::control::schedule::RefreshResult;
use crate::control::state_dir::StateDir;
use crate::profile::Profile;
use crate::state::{
    RefreshAnswer, RefreshHook, RefreshUnavailable, Snapshot, StaleReceiver, Store,
};

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
        let pending = Snapshot::pending(&config.integrations);
        handle.inner.store.rcu(|_| pending.clone());
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
        let default_interval = self.inner.config.load().refresh.default;
        self.inner.metrics.init_integration(&name, default_interval);
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

#[async_trait::async_trait]
impl RefreshHook for ControlHandle {
    async fn refresh_after_error(
        &self,
        name: &str,
        used: &Arc<Profile>,
    ) -> Result<RefreshAnswer, RefreshUnavailable> {
        match ControlHandle::refresh_after_error(self, name, used).await {
            Ok(r) if r.result == RefreshResult::Changed => Ok(RefreshAnswer::Changed {
                snapshot_version: r.snapshot_version,
            }),
            Ok(r) => Ok(RefreshAnswer::Same {
                result: r.result.as_str(),
            }),
            Err(e) => Err(RefreshUnavailable {
                reason: e.reason(),
                detail: e.to_string(),
            }),
        }
    }
}

pub(super) fn mark_stale(inner: &Inner, name: &str) {
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
pub(super) async fn dispatch_stale(inner: std::sync::Weak<Inner>, mut rx: StaleReceiver) {
    while let Some(mark) = rx.recv().await {
        let Some(inner) = inner.upgrade() else { break };
        mark_stale(&inner, &mark.integration);
    }
}

/// The configured state directory, or why it cannot be used (serving goes on without it).
pub(super) fn open_state_dir(config: &Config) -> (Option<StateDir>, Option<String>) {
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
