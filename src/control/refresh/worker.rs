//! One integration's worker loop: its timers (periodic refresh, pending stale mark) and its
//! commands, one at a time, so at most one fetch per integration is ever in flight (tokio timers).

use std::sync::Arc;

use tokio::sync::mpsc;
use tokio::time::Instant;

use super::step::CachedCard;
use super::{Cmd, Inner, RefreshReport, Reply, ReportedStatus};
use crate::config::Integration;
use crate::control::extended::CredentialIdentity;
use crate::control::schedule::{self, Last, RefreshResult};
use crate::profile::Profile;
use crate::state::{Degraded, IntegrationState};

pub(super) struct Worker {
    pub(super) inner: Arc<Inner>,
    pub(super) integration: Arc<Integration>,
    pub(super) card: Option<CachedCard>,
    pub(super) last: Last,
    pub(super) degraded: Option<Degraded>,
    pub(super) last_fetch: Option<Instant>,
    /// The installed state came from disk and no fetch has confirmed it yet.
    pub(super) from_disk: bool,
    /// When the periodic refresh is due (moved by every fetch).
    pub(super) next: Instant,
    /// When a pending stale mark fires; cleared only by a fetch.
    pub(super) stale_at: Option<Instant>,
    /// The credential identity the installed state was built with (`None`: nothing built yet).
    /// A 304 rebuilds when the credential's source now yields another one (rotated token file
    /// or variable), so no state built for one identity serves another.
    pub(super) built_for: Option<Option<CredentialIdentity>>,
    /// The digests of the cards whose warnings the last build logged (the public card and the
    /// extended one): each card's warnings are logged once, not on every refresh or 304 rebuild.
    pub(super) warned: Vec<String>,
}

/// Refresh requests answered together, each with the profile its failed call used (retry hook).
pub(super) type Waiters = Vec<(Reply, Option<Arc<Profile>>)>;

impl Worker {
    pub(super) fn new(inner: Arc<Inner>, integration: Arc<Integration>) -> Self {
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
            warned: Vec::new(),
        }
    }

    pub(super) fn name(&self) -> &str {
        &self.integration.name
    }

    /// The worker's loop: timers and commands one at a time, until the command channel closes.
    /// `load_disk` is false after a restart, when the snapshot already holds what the worker had.
    pub(super) async fn run(mut self, rx: &mut mpsc::Receiver<Cmd>, load_disk: bool) {
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

    pub(super) async fn handle(&mut self, cmd: Cmd, rx: &mut mpsc::Receiver<Cmd>) {
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

    pub(super) async fn apply(&mut self, cmd: Cmd) {
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
    pub(super) fn note_stale(&mut self, marks: u64) {
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
    pub(super) async fn answer(&mut self, waiters: Waiters, marks: u64) {
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
                (Some(r), Some(u))
                    if !matches!(
                        r.result,
                        RefreshResult::Failed | RefreshResult::CredentialMissing
                    ) =>
                {
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

    pub(super) fn current(&self) -> Option<Arc<IntegrationState>> {
        self.inner.store.load().get(self.name()).cloned()
    }

    pub(super) fn current_profile(&self) -> Option<Arc<Profile>> {
        self.current().and_then(|s| s.profile().cloned())
    }

    pub(super) fn next_at(&self) -> Instant {
        let settings = &self.inner.config.load().refresh;
        if let Last::Ok { .. } = self.last {
            // The nominal period (no jitter); a failure's backoff leaves it as it was.
            let period = schedule::next_delay(settings, self.last, 0.0);
            self.inner
                .metrics
                .interval
                .with_label_values(&[self.name()])
                .set(period.as_secs_f64());
        }
        Instant::now() + schedule::next_delay(settings, self.last, schedule::jitter_unit())
    }

    pub(super) fn report(
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
            status: ReportedStatus::of(snap.get(self.name()).map(|s| &s.status)),
            snapshot_version: snap.version,
            coalesced,
        }
    }
}
